/* The progress thread does not wait for a QP lock an application thread
 * holds: it leaves the channel's events to that thread, which serves them
 * when it unlocks (engine/recv.c, sv_qp_unlock).  Nothing may be left
 * behind.  The sender posts 64 KiB SENDs in bursts (each post holds the
 * lock while it writes) and then sleeps on a completion channel, so the
 * ACKs that came in during its posts are served by its unlocks or by the
 * progress thread, never by a later poll; a third thread queries both QPs
 * all the while (holders that only read).  Every SEND completes, and every
 * message arrives whole.  (Events left with nobody to serve them delay each
 * round until the ACK timer looks: this test then outlasts its watchdog.) */
#include <pthread.h>

#include "common.h"

#define MSG (64 * 1024)
#define BURST 16
#define ROUNDS 64

static struct t_pair p;
static int stop;

static void post_slot(int slot)
{
	CHECK_OK(t_post_recv(p.b.qp, (uint64_t)slot, p.b.buf + (size_t)slot * MSG, MSG,
			     p.b.mr->lkey));
}

/* Takes every message, checks it, gives its receive back. */
static void *receiver(void *arg)
{
	uint32_t want = BURST * ROUNDS, got = 0;

	(void)arg;
	while (got < want) {
		struct ibv_wc wc = t_wc(p.b.cq, 10000);
		uint32_t slot = (uint32_t)wc.wr_id;

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, MSG);
		CHECK(t_check_fill(p.b.buf + (size_t)slot * MSG, MSG, (uint8_t)got));
		got++;
		post_slot((int)slot);
	}
	return NULL;
}

static void *querier(void *arg)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CHECK_OK(ibv_query_qp(p.a.qp, &attr, IBV_QP_STATE, &init));
		CHECK_EQ(attr.qp_state, IBV_QPS_RTS);
		CHECK_OK(ibv_query_qp(p.b.qp, &attr, IBV_QP_STATE, &init));
	}
	return NULL;
}

/* Waits for `n` send completions, sleeping on the channel when there are none. */
static void wait_sends(struct ibv_comp_channel *ch, int n)
{
	while (n > 0) {
		struct ibv_wc wc[BURST];
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int k = ibv_poll_cq(p.a.cq, BURST, wc);

		CHECK(k >= 0);
		for (int i = 0; i < k; i++)
			CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
		n -= k;
		if (k || !n)
			continue;
		CHECK_OK(ibv_req_notify_cq(p.a.cq, 0));
		k = ibv_poll_cq(p.a.cq, BURST, wc);
		CHECK(k >= 0);
		for (int i = 0; i < k; i++)
			CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
		n -= k;
		if (k)
			continue;
		CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));   /* the watchdog bounds it */
		CHECK(ev_cq == p.a.cq);
		ibv_ack_cq_events(ev_cq, 1);
	}
}

int main(void)
{
	struct t_opts oa, ob;
	struct ibv_comp_channel *ch;
	pthread_t rt, qt;
	uint32_t seq = 0;

	t_alarm(60);
	memset(&p, 0, sizeof(p));
	p.ctx = t_open();
	ch = CHECK_PTR(ibv_create_comp_channel(p.ctx));
	t_opts_default(&oa, IBV_QPT_RC);
	oa.max_send_wr = BURST;
	oa.max_recv_wr = 2 * BURST;
	oa.cqe = 4 * BURST;
	oa.buf_len = 2 * BURST * MSG;
	/* 4.3 s: an ACK left unread must not be rescued by the ACK timer's
	 * look at the channel (64 rounds of that outlast the watchdog) */
	oa.timeout = 20;
	ob = oa;
	oa.channel = ch;
	t_ep_pair(p.ctx, &oa, &ob, &p.a, &p.b, &p.ia, &p.ib);
	for (int i = 0; i < 2 * BURST; i++)
		post_slot(i);
	CHECK(!pthread_create(&rt, NULL, receiver, NULL));
	CHECK(!pthread_create(&qt, NULL, querier, NULL));
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BURST; i++, seq++) {
			uint8_t *src = p.a.buf + (size_t)i * MSG;

			t_fill(src, MSG, (uint8_t)seq);
			CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, seq, src, MSG, p.a.mr->lkey,
					     IBV_SEND_SIGNALED));
		}
		wait_sends(ch, BURST);
	}
	CHECK(!pthread_join(rt, NULL));
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	CHECK(!pthread_join(qt, NULL));
	t_ep_destroy(&p.a);
	t_ep_destroy(&p.b);
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_close_device(p.ctx));
	return 0;
}
