/* The extended post API: ibv_create_qp_ex with send_ops_flags,
 * ibv_qp_to_qp_ex, ibv_wr_start / ibv_wr_* / ibv_wr_set_sge(_list) /
 * ibv_wr_set_inline_data / ibv_wr_complete. */
#include "common.h"

int main(void)
{
	const struct ibv_qp_cap cap = { .max_send_wr = 32, .max_recv_wr = 32, .max_send_sge = 4,
					.max_recv_sge = 4, .max_inline_data = 64 };
	const uint64_t send_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				  IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	struct ibv_qp_ex *qx = t_pair_open_qp_ex(&p, &o, &cap, send_ops);

	/* SEND with one SGE, SEND_WITH_IMM with an SGE list, inline SEND,
	 * WRITE, READ, CAS and FAA: one batch. */
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(p.b.qp, 100 + i, p.b.buf + 1024 * i, 1024, p.b.mr->lkey));
	t_fill(p.a.buf, 4096, 1);
	uint64_t *cas_res = (uint64_t *)(p.a.buf + 8192), *faa_res = cas_res + 1;
	volatile uint64_t *cas_tgt = (uint64_t *)(p.b.buf + 16384), *faa_tgt = cas_tgt + 1;
	*cas_tgt = 5;
	*faa_tgt = 10;
	t_fill(p.b.buf + 20000, 256, 9);
	struct ibv_sge list[2] = { { (uintptr_t)p.a.buf, 10, p.a.mr->lkey },
				   { (uintptr_t)p.a.buf + 100, 20, p.a.mr->lkey } };
	uint8_t inl[32];
	t_fill(inl, sizeof(inl), 7);

	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 50);
	qx->wr_id = 2;
	ibv_wr_send_imm(qx, htobe32(0xabcd));
	ibv_wr_set_sge_list(qx, 2, list);
	qx->wr_id = 3;
	qx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, inl, sizeof(inl));
	qx->wr_id = 4;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, p.ib.rkey, p.ib.addr + 12288);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 300);
	qx->wr_id = 5;
	ibv_wr_rdma_read(qx, p.ib.rkey, p.ib.addr + 20000);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf + 4096, 256);
	qx->wr_id = 6;
	ibv_wr_atomic_cmp_swp(qx, p.ib.rkey, (uintptr_t)cas_tgt, 5, 55);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)cas_res, 8);
	qx->wr_id = 7;
	ibv_wr_atomic_fetch_add(qx, p.ib.rkey, (uintptr_t)faa_tgt, 3);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)faa_res, 8);
	inl[0] ^= 0xff;           /* inline data was copied at set time */
	CHECK_OK(ibv_wr_complete(qx));
	inl[0] ^= 0xff;

	const enum ibv_wc_opcode ops[] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_SEND,
					   IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ,
					   IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD };
	for (int i = 0; i < 7; i++) {
		wc = t_wc(p.a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 1 + i);
		CHECK_EQ(wc.opcode, ops[i]);
	}
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 100);
	CHECK_EQ(wc.byte_len, 50);
	CHECK(t_check_fill(p.b.buf, 50, 1));
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 101);
	CHECK_EQ(wc.byte_len, 30);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 0xabcd);
	CHECK(memcmp(p.b.buf + 1024, p.a.buf, 10) == 0);
	CHECK(memcmp(p.b.buf + 1034, p.a.buf + 100, 20) == 0);
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 102);
	CHECK_EQ(wc.byte_len, 32);
	CHECK(t_check_fill(p.b.buf + 2048, 32, 7));
	CHECK(t_check_fill(p.b.buf + 12288, 300, 1));
	CHECK(t_check_fill(p.a.buf + 4096, 256, 9));
	CHECK_EQ(*cas_res, 5);
	CHECK_EQ(*cas_tgt, 55);
	CHECK_EQ(*faa_res, 10);
	CHECK_EQ(*faa_tgt, 13);

	t_pair_close(&p);
	return 0;
}
