/* ibv_rereg_mr: translation and access change; the old rkey stops working. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);

	uint8_t *x = p.b.buf, *y = p.b.buf + 16384;       /* two 4 KiB regions on b */
	struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(p.b.pd, x, 4096,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
	uint32_t rkey0 = mr->rkey;
	uint8_t *src = p.a.buf;

	/* 1: WRITE through the original registration. */
	t_fill(src, 64, 1);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, src, 64, p.a.mr->lkey,
			     (uintptr_t)x, mr->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK(t_check_fill(x, 64, 1));

	/* 2: move it to y; a WRITE with the (new) rkey lands in y, x untouched. */
	CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, y, 4096, 0));
	CHECK(mr->addr == y);
	CHECK_EQ(mr->length, 4096);
	memset(x, 0xee, 64);
	t_fill(src, 64, 2);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, src, 64, p.a.mr->lkey,
			     (uintptr_t)y, mr->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK(t_check_fill(y, 64, 2));
	for (int i = 0; i < 64; i++)
		CHECK_EQ(x[i], 0xee);

	/* 3: drop remote write, allow remote read: READ works ... */
	CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ));
	memset(src, 0, 64);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 3, src, 64, p.a.mr->lkey,
			     (uintptr_t)y, mr->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK(t_check_fill(src, 64, 2));

	/* ... and the original rkey no longer grants remote write anywhere. */
	memset(src, 0x55, 64);
	memset(y, 0x77, 64);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 4, src, 64, p.a.mr->lkey,
			     (uintptr_t)x, rkey0, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc.wr_id, 4);
	for (int i = 0; i < 64; i++) {
		CHECK_EQ(x[i], 0xee);
		CHECK_EQ(y[i], 0x77);
	}

	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_close(&p);
	return 0;
}
