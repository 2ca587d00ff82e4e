/* A send SGE reaching outside its MR, and a READ into an MR without local
 * write: IBV_WC_LOC_PROT_ERR. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	/* an MR over [buf+4096, buf+8192) */
	struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(p.a.pd, p.a.buf + 4096, 4096,
						 IBV_ACCESS_LOCAL_WRITE));
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 8192, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf + 8192 - 100, 101, mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	t_no_wc(p.b.cq, 100);
	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_close(&p);

	/* starting before the MR */
	t_pair_open(&p, &o);
	mr = CHECK_PTR(ibv_reg_mr(p.a.pd, p.a.buf + 4096, 4096, IBV_ACCESS_LOCAL_WRITE));
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 3, p.a.buf + 4095, 10, mr->lkey,
			     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_close(&p);

	/* READ into memory registered without LOCAL_WRITE */
	t_pair_open(&p, &o);
	mr = CHECK_PTR(ibv_reg_mr(p.a.pd, p.a.buf + 4096, 4096, IBV_ACCESS_REMOTE_READ));
	memset(p.a.buf + 4096, 0x5c, 64);
	t_fill(p.b.buf, 64, 1);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 4, p.a.buf + 4096, 64, mr->lkey,
			     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p.a.buf[4096 + i], 0x5c);
	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_close(&p);
	return 0;
}
