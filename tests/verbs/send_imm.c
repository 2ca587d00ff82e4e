/* SEND_WITH_IMM: the receiver sees imm_data and IBV_WC_WITH_IMM. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);

	CHECK_OK(t_post_recv(p.b.qp, 5, p.b.buf, 128, p.b.mr->lkey));
	t_fill(p.a.buf, 48, 4);
	struct ibv_sge sge = { (uintptr_t)p.a.buf, 48, p.a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(0xdeadbeef) }, *bad;
	CHECK_OK(ibv_post_send(p.a.qp, &wr, &bad));

	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 0xdeadbeef);
	CHECK_EQ(wc.byte_len, 48);
	CHECK(t_check_fill(p.b.buf, 48, 4));

	/* A plain SEND after it carries no immediate. */
	CHECK_OK(t_post_recv(p.b.qp, 6, p.b.buf, 128, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 8, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 6);
	CHECK_EQ(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_pair_close(&p);
	return 0;
}
