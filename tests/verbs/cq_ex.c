/* ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP (and other
 * fields): ibv_start_poll / ibv_next_poll / ibv_end_poll and the read_*
 * accessors. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_poll_cq_attr pa = { 0 };

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&a, ctx, &o);
	t_ep_create(&b, ctx, &o);
	CHECK_OK(ibv_destroy_qp(b.qp));
	CHECK_OK(ibv_destroy_cq(b.cq));
	struct ibv_cq_init_attr_ex cx = {
		.cqe = 16,
		.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_BYTE_LEN |
			    IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
	};
	struct ibv_cq_ex *cq = CHECK_PTR(ibv_create_cq_ex(ctx, &cx));
	b.cq = ibv_cq_ex_to_cq(cq);
	struct ibv_qp_init_attr qi = {
		.send_cq = b.cq, .recv_cq = b.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	b.qp = CHECK_PTR(ibv_create_qp(b.pd, &qi));
	t_ep_info(&a, &ia);
	t_ep_info(&b, &ib);
	t_ep_connect(&a, &o, &ib);
	t_ep_connect(&b, &o, &ia);

	CHECK_ERR(ibv_start_poll(cq, &pa), ENOENT);     /* empty: nothing to end */

	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(b.qp, 10 + i, b.buf + 1024 * i, 1024, b.mr->lkey));
	for (int i = 0; i < 3; i++) {
		struct ibv_sge sge = { (uintptr_t)a.buf, 100 + i, a.mr->lkey };
		struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_IMM,
					  .send_flags = IBV_SEND_SIGNALED,
					  .imm_data = htobe32(1000 + i) }, *bad;
		CHECK_OK(ibv_post_send(a.qp, &wr, &bad));
		CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	}
	t_sleep_ms(100);

	int r, n = 0;
	uint64_t last_ts = 0;
	uint64_t end = t_now_ms() + 2000;
	while ((r = ibv_start_poll(cq, &pa)) == ENOENT && t_now_ms() < end)
		t_sleep_ms(1);
	CHECK_OK(r);
	do {
		CHECK_EQ(cq->status, IBV_WC_SUCCESS);
		CHECK_EQ(cq->wr_id, 10 + n);
		CHECK_EQ(ibv_wc_read_opcode(cq), IBV_WC_RECV);
		CHECK_EQ(ibv_wc_read_byte_len(cq), 100 + n);
		CHECK(ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_IMM);
		CHECK_EQ(be32toh(ibv_wc_read_imm_data(cq)), 1000 + n);
		CHECK_EQ(ibv_wc_read_qp_num(cq), b.qp->qp_num);
		CHECK_EQ(ibv_wc_read_src_qp(cq), a.qp->qp_num);
		uint64_t ts = ibv_wc_read_completion_ts(cq);
		CHECK_NE(ts, 0);
		CHECK(ts >= last_ts);
		last_ts = ts;
		n++;
	} while ((r = ibv_next_poll(cq)) == 0);
	CHECK_EQ(r, ENOENT);
	ibv_end_poll(cq);
	CHECK_EQ(n, 3);
	/* the plain poll sees nothing left */
	t_no_wc(b.cq, 10);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
