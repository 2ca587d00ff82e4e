/* A thread blocked in ibv_get_cq_event is cancelled (rping stops its CQ
 * thread so), then the CQ and the channel are used and destroyed: as with
 * the kernel's read of the channel's fd, the cancelled wait leaves nothing
 * held (a pinned CQ would keep ibv_destroy_cq waiting).  Once before the
 * QPs' channels carried a message and once after (over TCP the sleeper
 * then also sleeps on their sockets). */
#include <pthread.h>

#include "common.h"

struct waiter {
	struct ibv_comp_channel *ch;
	int started;
};

static void *wait_event(void *arg)
{
	struct waiter *w = arg;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	ibv_get_cq_event(w->ch, &ev_cq, &ev_ctx);
	return arg;                          /* (only if not cancelled) */
}

/* Cancel a thread asleep for the channel's armed, empty CQ `cq`. */
static void cancel_waiter(struct ibv_comp_channel *ch, struct ibv_cq *cq)
{
	struct waiter w = { .ch = ch };
	pthread_t th;
	void *ret = NULL;

	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(pthread_create(&th, NULL, wait_event, &w), 0);
	while (!__atomic_load_n(&w.started, __ATOMIC_ACQUIRE))
		t_sleep_ms(1);
	t_sleep_ms(100);                     /* asleep by now */
	CHECK_EQ(pthread_cancel(th), 0);
	CHECK_EQ(pthread_join(th, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
}

/* A SEND a -> b; the event of b's CQ (armed), taken and acknowledged. */
static void send_event(struct t_pair *p, uint64_t wr_id)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	CHECK_OK(t_post_recv(p->b.qp, wr_id, p->b.buf, 64, p->b.mr->lkey));
	CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, wr_id, p->a.buf, 64, p->a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_EQ(ibv_get_cq_event(p->ch, &ev_cq, &ev_ctx), 0);
	CHECK(ev_cq == p->b.cq);
	ibv_ack_cq_events(ev_cq, 1);
	CHECK_STATUS(t_wc(p->b.cq, 5000), IBV_WC_SUCCESS);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_skip_cancel_asan();
	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open_ch(&p, &o, NULL);
	cancel_waiter(p.ch, p.b.cq);
	send_event(&p, 1);                   /* (still armed from the cancelled wait) */
	cancel_waiter(p.ch, p.b.cq);
	send_event(&p, 2);
	t_pair_close(&p);                    /* destroys the CQs, then the channel */
	return 0;
}
