/* The peer QP is destroyed: with timeout = 10 and retry_cnt = 2 the
 * outstanding SEND completes with IBV_WC_RETRY_EXC_ERR within a bound, and
 * the QP is in ERR. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;             /* 4.2 ms */
	o.retry_cnt = 2;
	t_pair_open(&p, &o);

	/* the connection works (give it time to come up: the short timeout is
	 * for the dead peer; rc_short_timeout_fork covers connection setup) */
	t_sleep_ms(200);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 64, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p.b.cq, 2000), IBV_WC_SUCCESS);

	CHECK_OK(ibv_destroy_qp(p.b.qp));
	p.b.qp = NULL;
	uint64_t t0 = t_now_ms();
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 64, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 20000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	fprintf(stderr, "RETRY_EXC_ERR after %llu ms\n", (unsigned long long)(t_now_ms() - t0));
	CHECK(t_now_ms() - t0 < 10000);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	t_pair_close(&p);
	return 0;
}
