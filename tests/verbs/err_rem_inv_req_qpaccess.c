/* RDMA WRITE to a QP whose qp_access_flags lack IBV_ACCESS_REMOTE_WRITE
 * (the MR allows it): IBV_WC_REM_INV_REQ_ERR; memory unchanged.  Likewise
 * READ without REMOTE_READ on the QP. */
#include "common.h"

static void run(enum ibv_wr_opcode op, int qp_access)
{
	struct t_opts oa, ob;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&oa, IBV_QPT_RC);
	ob = oa;
	ob.qp_access = qp_access;
	t_pair_open2(&p, &oa, &ob);
	memset(p.b.buf, 0x3c, 4096);
	memset(p.a.buf, 0x5a, 4096);
	CHECK_OK(t_post_rdma(p.a.qp, op, 1, p.a.buf, 128, p.a.mr->lkey, p.ib.addr, p.ib.rkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	for (int i = 0; i < 4096; i++) {
		CHECK_EQ(p.b.buf[i], 0x3c);
		CHECK_EQ(p.a.buf[i], 0x5a);
	}
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(30);
	run(IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	run(IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_WRITE);
	return 0;
}
