/* Two processes, RC with a short local ACK timeout (timeout = 13: 34 ms,
 * retry_cnt = 2; shorter ones fail on a loaded 2-core machine, where the
 * peer may not be scheduled for ~10 ms): SENDs posted right after RTS to a live peer that has its
 * receives posted succeed.  The transport timer measures a request's time on
 * the wire; connection setup behind RTR must not turn it into
 * RETRY_EXC_ERR, and every WR completes. */
#include "common.h"

#define N 4

static void child(struct t_side *s)
{
	struct t_ep *e = &s->e;

	for (int i = 0; i < N; i++)
		CHECK_OK(t_post_recv(e->qp, i, e->buf + 256 * i, 256, e->mr->lkey));
	t_sync(s->fd);
	for (int i = 0; i < N; i++) {
		struct ibv_wc wc = t_wc(e->cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
	}
	t_sync(s->fd);
}

static void parent(struct t_side *s)
{
	struct t_ep *e = &s->e;

	t_sync(s->fd);
	for (int i = 0; i < N; i++)
		CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, i, e->buf, 64, e->mr->lkey,
				     IBV_SEND_SIGNALED));
	for (int i = 0; i < N; i++) {
		struct ibv_wc wc = t_wc(e->cq, 5000);
		CHECK_EQ(wc.wr_id, i);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
	}
	t_sync(s->fd);
}

int main(void)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 13;
	o.retry_cnt = 2;
	CHECK_EQ(t_two_procs(&o, &o, 30, 10000, parent, child, NULL), 0);
	return 0;
}
