/* One-sided operations towards a peer QP in the error state: the responder
 * drops every request (IB spec: a QP in Error processes no packets), so the
 * requester ends with IBV_WC_RETRY_EXC_ERR and the target memory is not
 * written (WRITE) or read (READ), even though its MR is still registered. */
#include "common.h"

static void run(enum ibv_wr_opcode op)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;
	o.retry_cnt = 2;
	t_pair_open(&p, &o);
	memset(p.b.buf, 0x3c, 4096);
	t_fill(p.a.buf, 4096, 1);
	memset(p.a.buf + 8192, 0x5a, 4096);

	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(p.b.qp, &qa, IBV_QP_STATE));
	uint8_t *local = op == IBV_WR_RDMA_WRITE ? p.a.buf : p.a.buf + 8192;
	CHECK_OK(t_post_rdma(p.a.qp, op, 1, local, 4096, p.a.mr->lkey, p.ib.addr, p.ib.rkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 10000);
	if (wc.status == IBV_WC_SUCCESS)
		T_FAIL("%s to a QP in ERR completed successfully",
		       op == IBV_WR_RDMA_WRITE ? "RDMA WRITE" : "RDMA READ");
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	for (int i = 0; i < 4096; i++) {
		CHECK_EQ(p.b.buf[i], 0x3c);
		CHECK_EQ(p.a.buf[8192 + i], 0x5a);
	}
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(40);
	run(IBV_WR_RDMA_WRITE);
	run(IBV_WR_RDMA_READ);
	return 0;
}
