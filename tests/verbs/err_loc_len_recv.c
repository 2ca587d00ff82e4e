/* RC SEND into a receive buffer too small: the receiver's completion is
 * IBV_WC_LOC_LEN_ERR, the sender's IBV_WC_REM_INV_REQ_ERR; both QPs end in
 * the error state. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 16, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 100, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(wc.qp_num, p.b.qp->qp_num);
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	t_wait_qp_state(p.b.qp, IBV_QPS_ERR, 2000);
	t_pair_close(&p);
	return 0;
}
