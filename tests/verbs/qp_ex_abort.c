/* ibv_wr_abort discards the WRs built since ibv_wr_start: nothing is sent;
 * the QP keeps working afterwards. */
#include "common.h"

int main(void)
{
	const struct ibv_qp_cap cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
					.max_recv_sge = 1 };
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	struct ibv_qp_ex *qx = t_pair_open_qp_ex(&p, &o, &cap,
						 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);

	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 256, p.b.mr->lkey));
	memset(p.b.buf + 4096, 0x3c, 64);
	t_fill(p.a.buf, 64, 3);
	ibv_wr_start(qx);
	qx->wr_id = 10;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 64);
	qx->wr_id = 11;
	ibv_wr_rdma_write(qx, p.ib.rkey, p.ib.addr + 4096);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 64);
	ibv_wr_abort(qx);
	t_no_wc(p.a.cq, 200);
	t_no_wc(p.b.cq, 10);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p.b.buf[4096 + i], 0x3c);

	/* a full 8-WR batch still fits: the aborted ones took no slots */
	ibv_wr_start(qx);
	for (int i = 0; i < 8; i++) {
		qx->wr_id = 20 + i;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, p.ib.rkey, p.ib.addr + 4096);
		ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 64);
	}
	CHECK_OK(ibv_wr_complete(qx));
	for (int i = 0; i < 8; i++) {
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 20 + i);
	}
	CHECK(t_check_fill(p.b.buf + 4096, 64, 3));
	/* and the receive aborted SEND would have used is still there */
	ibv_wr_start(qx);
	qx->wr_id = 30;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, p.a.mr->lkey, (uintptr_t)p.a.buf, 64);
	CHECK_OK(ibv_wr_complete(qx));
	CHECK_EQ(t_wc(p.a.cq, 2000).wr_id, 30);
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.byte_len, 64);

	t_pair_close(&p);
	return 0;
}
