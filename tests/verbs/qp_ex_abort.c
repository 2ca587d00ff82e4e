/* ibv_wr_abort discards the WRs built since ibv_wr_start: nothing is sent;
 * the QP keeps working afterwards. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&b, ctx, &o);
	t_ep_create(&a, ctx, &o);
	CHECK_OK(ibv_destroy_qp(a.qp));
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = a.cq, .recv_cq = a.cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = a.pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};
	a.qp = CHECK_PTR(ibv_create_qp_ex(ctx, &ix));
	struct ibv_qp_ex *qx = CHECK_PTR(ibv_qp_to_qp_ex(a.qp));
	t_ep_info(&a, &ia);
	t_ep_info(&b, &ib);
	t_ep_connect(&a, &o, &ib);
	t_ep_connect(&b, &o, &ia);

	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 256, b.mr->lkey));
	memset(b.buf + 4096, 0x3c, 64);
	t_fill(a.buf, 64, 3);
	ibv_wr_start(qx);
	qx->wr_id = 10;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 64);
	qx->wr_id = 11;
	ibv_wr_rdma_write(qx, ib.rkey, ib.addr + 4096);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 64);
	ibv_wr_abort(qx);
	t_no_wc(a.cq, 200);
	t_no_wc(b.cq, 10);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(b.buf[4096 + i], 0x3c);

	/* a full 8-WR batch still fits: the aborted ones took no slots */
	ibv_wr_start(qx);
	for (int i = 0; i < 8; i++) {
		qx->wr_id = 20 + i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, ib.rkey, ib.addr + 4096);
		ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 64);
	}
	CHECK_OK(ibv_wr_complete(qx));
	for (int i = 0; i < 8; i++) {
		wc = t_wc(a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 20 + i);
	}
	CHECK(t_check_fill(b.buf + 4096, 64, 3));
	/* and the receive aborted SEND would have used is still there */
	ibv_wr_start(qx);
	qx->wr_id = 30;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 64);
	CHECK_OK(ibv_wr_complete(qx));
	CHECK_EQ(t_wc(a.cq, 2000).wr_id, 30);
	wc = t_wc(b.cq, 2000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.byte_len, 64);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
