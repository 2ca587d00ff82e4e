/* UC: SEND, SEND_WITH_IMM, RDMA WRITE and WRITE_WITH_IMM work. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_UC);
	t_pair_open(&p, &o);

	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 1024, p.b.mr->lkey));
	t_fill(p.a.buf, 1000, 5);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 10, p.a.buf, 1000, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_EQ(wc.src_qp, p.a.qp->qp_num);
	CHECK(t_check_fill(p.b.buf, 1000, 5));

	t_fill(p.a.buf, 3000, 6);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 11, p.a.buf, 3000, p.a.mr->lkey,
			     p.ib.addr + 4096, p.ib.rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	/* UC has no ack: the data may land just after the local completion */
	for (int i = 0; i < 200 && p.b.buf[4096 + 2999] != p.a.buf[2999]; i++)
		t_sleep_ms(5);
	CHECK(t_check_fill(p.b.buf + 4096, 3000, 6));

	CHECK_OK(t_post_recv(p.b.qp, 2, p.b.buf, 1024, p.b.mr->lkey));
	struct ibv_sge sge = { (uintptr_t)p.a.buf, 64, p.a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 12, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(77),
				  .wr.rdma = { p.ib.addr + 8192, p.ib.rkey } }, *bad;
	CHECK_OK(ibv_post_send(p.a.qp, &wr, &bad));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 77);
	CHECK_EQ(wc.byte_len, 64);
	CHECK(t_check_fill(p.b.buf + 8192, 64, 6));
	t_pair_close(&p);
	return 0;
}
