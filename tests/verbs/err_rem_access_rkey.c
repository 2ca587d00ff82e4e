/* RDMA WRITE with an invalid rkey: IBV_WC_REM_ACCESS_ERR; the QP goes to
 * ERR; the target memory is unchanged. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	memset(p.b.buf, 0x3c, 256);
	t_fill(p.a.buf, 256, 1);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, p.a.buf, 256, p.a.mr->lkey,
			     p.ib.addr, p.ib.rkey ^ 0x00777700u, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	for (int i = 0; i < 256; i++)
		CHECK_EQ(p.b.buf[i], 0x3c);
	t_pair_close(&p);
	return 0;
}
