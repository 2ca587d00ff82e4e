/* An rkey is only valid on a QP of the same PD: a WRITE or atomic through QP
 * b (PD b) with the rkey of an MR of another PD (here the requester's own
 * MR, so the memory is in this very process) is IBV_WC_REM_ACCESS_ERR and
 * changes nothing. */
#include "common.h"

static void run(enum ibv_wr_opcode op)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK(p.a.pd != p.b.pd);
	memset(p.a.buf + 8192, 0x3c, 64);
	t_fill(p.a.buf, 64, 1);
	if (op == IBV_WR_RDMA_WRITE)
		CHECK_OK(t_post_rdma(p.a.qp, op, 1, p.a.buf, 64, p.a.mr->lkey,
				     (uintptr_t)p.a.buf + 8192, p.a.mr->rkey, IBV_SEND_SIGNALED));
	else
		CHECK_OK(t_post_atomic(p.a.qp, op, 1, p.a.buf, p.a.mr->lkey,
				       (uintptr_t)p.a.buf + 8192, p.a.mr->rkey, 1, 0));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p.a.buf[8192 + i], 0x3c);
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(30);
	run(IBV_WR_RDMA_WRITE);
	run(IBV_WR_ATOMIC_FETCH_AND_ADD);
	return 0;
}
