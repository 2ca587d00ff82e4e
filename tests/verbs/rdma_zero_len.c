/* Zero-length RDMA READ and WRITE need no valid R_Key or address (IB spec
 * C9-88): with rkey 0 and address 0 they complete with SUCCESS, with one
 * empty SGE or none (UCX flushes that way), and touch no memory. */
#include "common.h"

static void post_empty(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = 0, .rkey = 0 },
	};
	struct ibv_send_wr *bad;

	CHECK_OK(ibv_post_send(qp, &wr, &bad));
}

static void expect_ok(struct ibv_cq *cq, uint64_t wr_id, enum ibv_wc_opcode op)
{
	struct ibv_wc wc = t_wc(cq, 5000);

	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, wr_id);
	CHECK_EQ(wc.opcode, op);
	CHECK_EQ(wc.byte_len, 0);
}

int main(void)
{
	static const struct { enum ibv_wr_opcode op; enum ibv_wc_opcode wc; } ops[] = {
		{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE },
		{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ },
	};
	struct t_opts o;
	struct t_pair p;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	memset(p.a.buf, 0x5a, p.a.len);
	memset(p.b.buf, 0x3c, p.b.len);
	for (int i = 0; i < 2; i++) {
		uint64_t id = 10 * (i + 1);

		CHECK_OK(t_post_rdma(p.a.qp, ops[i].op, id, p.a.buf, 0, p.a.mr->lkey, 0, 0,
				     IBV_SEND_SIGNALED));
		expect_ok(p.a.cq, id, ops[i].wc);
		post_empty(p.a.qp, ops[i].op, id + 1);
		expect_ok(p.a.cq, id + 1, ops[i].wc);
		/* a key that names nothing, an address nowhere */
		CHECK_OK(t_post_rdma(p.a.qp, ops[i].op, id + 2, p.a.buf, 0, p.a.mr->lkey,
				     0xdead0000, p.ib.rkey ^ 0x55, IBV_SEND_SIGNALED));
		expect_ok(p.a.cq, id + 2, ops[i].wc);
	}
	/* the QP is still usable, nothing was touched */
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 99, p.a.buf, 64, p.a.mr->lkey,
			     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	for (size_t i = 0; i < p.a.len; i++)
		CHECK_EQ(p.a.buf[i], 0x5a);
	for (size_t i = 64; i < p.b.len; i++)
		CHECK_EQ(p.b.buf[i], 0x3c);
	t_no_wc(p.b.cq, 50);
	t_pair_close(&p);
	return 0;
}
