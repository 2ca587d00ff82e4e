/* RDMA WRITE and READ with the rkey of an MR the responder has deregistered:
 * IBV_WC_REM_ACCESS_ERR, memory unchanged. */
#include "common.h"

static void run(enum ibv_wr_opcode op)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf + 8192, 4096, T_ALL_ACCESS));
	uint32_t rkey = mr->rkey;
	/* it works while registered */
	CHECK_OK(t_post_rdma(p.a.qp, op, 1, p.a.buf, 64, p.a.mr->lkey,
			     (uintptr_t)p.b.buf + 8192, rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_OK(ibv_dereg_mr(mr));

	memset(p.b.buf + 8192, 0x3c, 4096);
	memset(p.a.buf, 0x5a, 4096);
	CHECK_OK(t_post_rdma(p.a.qp, op, 2, p.a.buf, 64, p.a.mr->lkey,
			     (uintptr_t)p.b.buf + 8192, rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 4096; i++) {
		CHECK_EQ(p.b.buf[8192 + i], 0x3c);
		CHECK_EQ(p.a.buf[i], 0x5a);
	}
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(30);
	run(IBV_WR_RDMA_WRITE);
	run(IBV_WR_RDMA_READ);
	return 0;
}
