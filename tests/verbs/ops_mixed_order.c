/* One posted list mixing every RC opcode (WRITE, SEND, READ, atomics,
 * WRITE_WITH_IMM, SEND_WITH_IMM) executes in order: every WR completes
 * successfully, in posting order, and each result reflects the ones before. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(p.b.qp, 100 + i, p.b.buf + 32768 + 1024 * i, 1024,
				     p.b.mr->lkey));
	uint8_t *a = p.a.buf;
	volatile uint64_t *ctr = (uint64_t *)(p.b.buf + 8192);
	*ctr = 0;
	t_fill(a, 256, 1);

	struct ibv_sge s_w1 = { (uintptr_t)a, 256, p.a.mr->lkey };          /* WRITE b[0..256) */
	struct ibv_sge s_snd = { (uintptr_t)a + 10, 20, p.a.mr->lkey };     /* SEND */
	struct ibv_sge s_rd = { (uintptr_t)a + 4096, 256, p.a.mr->lkey };   /* READ b[0..256) back */
	struct ibv_sge s_faa = { (uintptr_t)a + 6000, 8, p.a.mr->lkey };
	struct ibv_sge s_cas = { (uintptr_t)a + 6008, 8, p.a.mr->lkey };
	struct ibv_sge s_wi = { (uintptr_t)a, 16, p.a.mr->lkey };           /* WRITE_IMM b[512..) */
	struct ibv_send_wr w[7];
	memset(w, 0, sizeof(w));
	w[0] = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &s_w1, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE,
				     .wr.rdma = { p.ib.addr, p.ib.rkey } };
	w[1] = (struct ibv_send_wr){ .wr_id = 2, .sg_list = &s_snd, .num_sge = 1,
				     .opcode = IBV_WR_SEND };
	w[2] = (struct ibv_send_wr){ .wr_id = 3, .sg_list = &s_rd, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_READ,
				     .wr.rdma = { p.ib.addr, p.ib.rkey } };
	w[3] = (struct ibv_send_wr){ .wr_id = 4, .sg_list = &s_faa, .num_sge = 1,
				     .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				     .wr.atomic = { (uintptr_t)ctr, 5, 0, p.ib.rkey } };
	w[4] = (struct ibv_send_wr){ .wr_id = 5, .sg_list = &s_cas, .num_sge = 1,
				     .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
				     .wr.atomic = { (uintptr_t)ctr, 5, 9, p.ib.rkey } };
	w[5] = (struct ibv_send_wr){ .wr_id = 6, .sg_list = &s_wi, .num_sge = 1,
				     .opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .imm_data = htobe32(6),
				     .wr.rdma = { p.ib.addr + 512, p.ib.rkey } };
	w[6] = (struct ibv_send_wr){ .wr_id = 7, .sg_list = &s_snd, .num_sge = 1,
				     .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(7) };
	for (int i = 0; i < 7; i++) {
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].next = i < 6 ? &w[i + 1] : NULL;
	}
	struct ibv_send_wr *bad;
	CHECK_OK(ibv_post_send(p.a.qp, w, &bad));

	for (int i = 0; i < 7; i++) {
		wc = t_wc(p.a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 1 + i);
	}
	CHECK(t_check_fill(a + 4096, 256, 1));          /* READ saw the WRITE */
	CHECK_EQ(*(uint64_t *)(a + 6000), 0);           /* FAA saw 0 */
	CHECK_EQ(*(uint64_t *)(a + 6008), 5);           /* CAS saw the FAA */
	CHECK_EQ(*ctr, 9);
	const int exp_id[3] = { 100, 101, 102 };
	const uint32_t exp_len[3] = { 20, 16, 20 };
	for (int i = 0; i < 3; i++) {
		wc = t_wc(p.b.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, exp_id[i]);
		CHECK_EQ(wc.byte_len, exp_len[i]);
	}
	t_pair_close(&p);
	return 0;
}
