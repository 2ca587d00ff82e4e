/* Two processes; the peer process is killed: the requester's outstanding
 * SEND completes with IBV_WC_RETRY_EXC_ERR within a bound (timeout = 10,
 * retry_cnt = 2), then the QP is in ERR. */
#include <signal.h>

#include "common.h"

static void child(struct t_side *s)
{
	CHECK_OK(t_post_recv(s->e.qp, 1, s->e.buf, 64, s->e.mr->lkey));
	t_sync(s->fd);
	CHECK_STATUS(t_wc(s->e.cq, 5000), IBV_WC_SUCCESS);
	t_sync(s->fd);
	pause();            /* until killed */
	_exit(3);
}

static void parent(struct t_side *s)
{
	struct t_ep *e = &s->e;

	t_sync(s->fd);
	/* let the channel come up before the first SEND: the short timeout is
	 * for the dead peer, not for connection setup (rc_short_timeout_fork
	 * covers that case) */
	t_sleep_ms(200);
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 1, e->buf, 64, e->mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	t_sync(s->fd);
	CHECK_OK(kill(s->child, SIGKILL));
	CHECK_EQ(t_side_reap(s, 5000), 128 + SIGKILL);

	uint64_t t0 = t_now_ms();
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 2, e->buf, 64, e->mr->lkey, IBV_SEND_SIGNALED));
	struct ibv_wc wc = t_wc(e->cq, 20000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	fprintf(stderr, "RETRY_EXC_ERR after %llu ms\n", (unsigned long long)(t_now_ms() - t0));
	CHECK(t_now_ms() - t0 < 10000);
	CHECK_EQ(t_qp_state(e->qp), IBV_QPS_ERR);
}

int main(void)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;
	o.retry_cnt = 2;
	CHECK_EQ(t_two_procs(&o, &o, 60, 5000, parent, child, NULL), 128 + SIGKILL);
	return 0;
}
