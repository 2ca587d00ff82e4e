/* SEND with no receive posted, rnr_retry = 1, a small min_rnr_timer:
 * IBV_WC_RNR_RETRY_EXC_ERR in bounded time, QP in ERR. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.rnr_retry = 1;
	o.min_rnr_timer = 1;           /* 0.01 ms */
	t_pair_open(&p, &o);
	uint64_t t0 = t_now_ms();
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 64, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK(t_now_ms() - t0 < 2000);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	/* the responder is not harmed: it never consumed anything */
	t_no_wc(p.b.cq, 50);
	t_pair_close(&p);
	return 0;
}
