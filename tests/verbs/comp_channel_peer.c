/* Completion channels between two processes: a thread asleep on its channel
 * is woken by the peer itself on one host (the peer writes the channel's
 * descriptor; engine/drive.c, transport/shm/ringchan.c), and the API still
 * behaves as the man pages say:
 *   - a ping-pong where both sides sleep in ibv_get_cq_event delivers every
 *     message, one event per arming;
 *   - with a non-blocking channel fd and poll(), ibv_get_cq_event never
 *     blocks; RDMA WRITEs (no completion at the target) raise no event;
 *   - a CQ armed for solicited events only sleeps through an unsolicited
 *     SEND and wakes for the solicited one, whose event brings both. */
#include "common.h"

#include <fcntl.h>
#include <poll.h>

#define ROUNDS 300
#define MSG 64

/* Sleep until the armed CQ's event, arm it again (`solicited`), then take
 * its completions (at most max, the most that can be there). */
static int wait_event(struct t_ep *e, struct ibv_wc *wc, int max, int solicited)
{
	struct ibv_cq *cq;
	void *ctx;
	int n = 0, k;

	CHECK_OK(ibv_get_cq_event(e->ch, &cq, &ctx));
	CHECK(cq == e->cq);
	ibv_ack_cq_events(cq, 1);
	if (solicited >= 0)
		CHECK_OK(ibv_req_notify_cq(e->cq, solicited));
	while (n < max && (k = ibv_poll_cq(e->cq, max - n, wc + n)) > 0)
		n += k;
	CHECK(n <= max);
	return n;
}

/* Both sides asleep: the starter sends 0, 2, 4, ..., the other answers
 * each value plus one; each side takes ROUNDS receives and ROUNDS sends. */
static void pingpong(struct t_side *s, bool starts)
{
	struct t_ep *e = &s->e;
	uint32_t *rx = (uint32_t *)e->buf, *tx = (uint32_t *)(e->buf + 4096);
	int sends = 0, recvs = 0, events = 0;

	CHECK_OK(t_post_recv(e->qp, 0, rx, MSG, e->mr->lkey));
	CHECK_OK(ibv_req_notify_cq(e->cq, 0));
	t_sync(s->fd);
	if (starts) {
		*tx = 0;
		CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 0, tx, MSG, e->mr->lkey, IBV_SEND_SIGNALED));
	}
	while (recvs < ROUNDS || sends < ROUNDS) {
		struct ibv_wc wc[4];
		int n = wait_event(e, wc, 4, 0);

		events++;
		for (int i = 0; i < n; i++) {
			CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
			if (wc[i].opcode == IBV_WC_SEND) {
				sends++;
				continue;
			}
			CHECK_EQ(wc[i].opcode, IBV_WC_RECV);
			CHECK_EQ(*rx, (uint32_t)(2 * recvs + starts));
			recvs++;
			if (recvs < ROUNDS)
				CHECK_OK(t_post_recv(e->qp, 0, rx, MSG, e->mr->lkey));
			if (starts && recvs == ROUNDS)
				continue;
			*tx = (uint32_t)(starts ? 2 * recvs : 2 * recvs - 1);
			CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 0, tx, MSG, e->mr->lkey,
					     IBV_SEND_SIGNALED));
		}
	}
	CHECK(events <= 2 * ROUNDS);       /* at most one per completion */
	t_sync(s->fd);
}

static void parent_pp(struct t_side *s) { pingpong(s, true); }
static void child_pp(struct t_side *s) { pingpong(s, false); }

/* The child polls its non-blocking channel fd; the parent WRITEs, then SENDs. */
static void child_nb(struct t_side *s)
{
	struct t_ep *e = &s->e;
	int got = 0, events = 0;

	CHECK_OK(fcntl(e->ch->fd, F_SETFL, fcntl(e->ch->fd, F_GETFL) | O_NONBLOCK));
	for (int i = 0; i < 8; i++)
		CHECK_OK(t_post_recv(e->qp, (uint64_t)i, e->buf, MSG, e->mr->lkey));
	CHECK_OK(ibv_req_notify_cq(e->cq, 0));
	t_sync(s->fd);
	while (got < 8) {
		struct pollfd p = { .fd = e->ch->fd, .events = POLLIN };
		struct ibv_cq *cq;
		void *ctx;
		struct ibv_wc wc[8];
		int n;

		CHECK_EQ(poll(&p, 1, 5000), 1);
		if (ibv_get_cq_event(e->ch, &cq, &ctx)) {
			CHECK_EQ(errno, EAGAIN);     /* woken for nothing: never blocks */
			continue;
		}
		events++;
		ibv_ack_cq_events(cq, 1);
		CHECK_OK(ibv_req_notify_cq(e->cq, 0));
		while ((n = ibv_poll_cq(e->cq, 8, wc)) > 0)
			for (int i = 0; i < n; i++) {
				CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
				CHECK_EQ(wc[i].opcode, IBV_WC_RECV);
				CHECK_EQ(wc[i].wr_id, (uint64_t)got);
				got++;
			}
		CHECK(n == 0);
	}
	CHECK(events >= 1 && events <= 8);
	/* all WRITEs landed before the last SEND (RC order) */
	for (int i = 0; i < 64; i++)
		CHECK_EQ(e->buf[8192 + i], (uint8_t)(0x40 + i % 16));
	t_sync(s->fd);
}

static void parent_nb(struct t_side *s)
{
	struct t_ep *e = &s->e;

	t_sync(s->fd);
	for (int i = 0; i < 64; i++) {
		e->buf[i] = (uint8_t)(0x40 + i % 16);
		CHECK_OK(t_post_rdma(e->qp, IBV_WR_RDMA_WRITE, 100 + (uint64_t)i, e->buf + i, 1,
				     e->mr->lkey, s->theirs.addr + 8192 + (uint64_t)i, s->theirs.rkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	}
	for (int i = 0; i < 8; i++) {
		CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, (uint64_t)i, e->buf + 4096, MSG, e->mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	}
	t_sync(s->fd);
}

/* Solicited only: the unsolicited SEND waits for the solicited one. */
static void child_sol(struct t_side *s)
{
	struct t_ep *e = &s->e;
	struct pollfd p = { .fd = e->ch->fd, .events = POLLIN };
	struct ibv_wc wc[2];
	int n;

	CHECK_OK(t_post_recv(e->qp, 1, e->buf, MSG, e->mr->lkey));
	CHECK_OK(t_post_recv(e->qp, 2, e->buf + 64, MSG, e->mr->lkey));
	CHECK_OK(ibv_req_notify_cq(e->cq, 1));
	t_sync(s->fd);
	t_sync(s->fd);                    /* the unsolicited SEND completed at the parent */
	CHECK_EQ(poll(&p, 1, 200), 0);
	t_sync(s->fd);
	n = wait_event(e, wc, 2, -1);
	CHECK_EQ(n, 2);
	CHECK_EQ(wc[0].wr_id, 1);
	CHECK_EQ(wc[1].wr_id, 2);
	t_sync(s->fd);
}

static void parent_sol(struct t_side *s)
{
	struct t_ep *e = &s->e;

	t_sync(s->fd);
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 1, e->buf, MSG, e->mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	t_sync(s->fd);
	t_sync(s->fd);
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 2, e->buf, MSG, e->mr->lkey,
			     IBV_SEND_SIGNALED | IBV_SEND_SOLICITED));
	CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	t_sync(s->fd);
}

int main(int argc, char **argv)
{
	struct t_opts o;
	int only = argc > 1 ? atoi(argv[1]) : 0;

	t_opts_default(&o, IBV_QPT_RC);
	o.own_channel = true;
	if (!only || only == 1)
		CHECK_EQ(t_two_procs(&o, &o, 30, 20000, parent_pp, child_pp, NULL), 0);
	o.own_channel = false;
	{
		struct t_opts oc = o;

		oc.own_channel = true;
		if (!only || only == 2)
			CHECK_EQ(t_two_procs(&o, &oc, 30, 20000, parent_nb, child_nb, NULL), 0);
		if (!only || only == 3)
			CHECK_EQ(t_two_procs(&o, &oc, 30, 20000, parent_sol, child_sol, NULL), 0);
	}
	return 0;
}
