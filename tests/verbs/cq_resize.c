/* ibv_resize_cq keeps the completions already in the CQ, in order. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc[32];

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.cqe = 8;
	t_pair_open(&p, &o);

	for (int i = 0; i < 5; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 100 + i, p.a.buf, 16,
				     p.a.mr->lkey, p.ib.addr + 16 * i, p.ib.rkey,
				     IBV_SEND_SIGNALED));
	/* Let all five complete into the CQ without polling them. */
	t_sleep_ms(300);

	CHECK_OK(ibv_resize_cq(p.a.cq, 64));
	CHECK(p.a.cq->cqe >= 64);
	CHECK_EQ(t_poll(p.a.cq, wc, 5, 1000), 5);
	t_no_wc(p.a.cq, 50);
	for (int i = 0; i < 5; i++) {
		CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, 100 + i);
		CHECK_EQ(wc[i].opcode, IBV_WC_RDMA_WRITE);
	}

	/* The resized CQ takes more than the old size without overrunning. */
	CHECK(p.a.cq->cqe >= 20);
	for (int i = 0; i < 20; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 200 + i, p.a.buf, 16,
				     p.a.mr->lkey, p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_EQ(t_poll(p.a.cq, wc, 20, 2000), 20);
	for (int i = 0; i < 20; i++) {
		CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, 200 + i);
	}
	t_pair_close(&p);
	return 0;
}
