/* rnr_retry = 7 retries forever: a SEND posted before any receive succeeds
 * once the peer posts one 200 ms later. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.rnr_retry = 7;
	o.min_rnr_timer = 1;
	t_pair_open(&p, &o);
	t_fill(p.a.buf, 300, 4);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 300, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	t_no_wc(p.a.cq, 200);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_RTS);
	CHECK_OK(t_post_recv(p.b.qp, 2, p.b.buf, 4096, p.b.mr->lkey));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 300);
	CHECK(t_check_fill(p.b.buf, 300, 4));
	t_pair_close(&p);
	return 0;
}
