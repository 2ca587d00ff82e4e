/* RDMA READ: the remote data lands in the local buffer. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);

	t_fill(p.b.buf + 300, 12345, 10);
	memset(p.a.buf, 0x22, p.a.len);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 1, p.a.buf + 8, 12345, p.a.mr->lkey,
			     p.ib.addr + 300, p.ib.rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, 12345);
	CHECK(t_check_fill(p.a.buf + 8, 12345, 10));
	for (int i = 0; i < 8; i++)
		CHECK_EQ(p.a.buf[i], 0x22);
	CHECK_EQ(p.a.buf[8 + 12345], 0x22);
	t_no_wc(p.b.cq, 50);

	/* Several READs in flight complete in order. */
	for (int i = 0; i < 8; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 10 + i, p.a.buf + 4096 * i, 4096,
				     p.a.mr->lkey, p.ib.addr + 300, p.ib.rkey,
				     IBV_SEND_SIGNALED));
	for (int i = 0; i < 8; i++) {
		wc = t_wc(p.a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 10 + i);
		CHECK(t_check_fill(p.a.buf + 4096 * i, 4096, 10));
	}
	t_pair_close(&p);
	return 0;
}
