/* RDMA WRITE_WITH_IMM: data placed, a receive consumed with
 * IBV_WC_RECV_RDMA_WITH_IMM, the immediate and byte_len. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 9, p.b.buf + 60000, 16, p.b.mr->lkey));

	t_fill(p.a.buf, 5000, 8);
	struct ibv_sge sge = { (uintptr_t)p.a.buf, 5000, p.a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(0x1234abcd),
				  .wr.rdma = { p.ib.addr + 128, p.ib.rkey } }, *bad;
	CHECK_OK(ibv_post_send(p.a.qp, &wr, &bad));

	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 9);
	CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 0x1234abcd);
	CHECK_EQ(wc.byte_len, 5000);
	CHECK(t_check_fill(p.b.buf + 128, 5000, 8));
	/* the receive buffer itself is not written */
	for (int i = 0; i < 16; i++)
		CHECK_EQ(p.b.buf[60000 + i], 0);
	t_pair_close(&p);
	return 0;
}
