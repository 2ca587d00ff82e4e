/* RDMA WRITE to an MR registered without REMOTE_WRITE: IBV_WC_REM_ACCESS_ERR. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	struct ibv_mr *ro = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf + 8192, 4096,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_ATOMIC));
	memset(p.b.buf + 8192, 0x3c, 4096);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, p.a.buf, 64, p.a.mr->lkey,
			     (uintptr_t)p.b.buf + 8192, ro->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(p.b.buf[8192 + i], 0x3c);
	CHECK_OK(ibv_dereg_mr(ro));
	t_pair_close(&p);
	return 0;
}
