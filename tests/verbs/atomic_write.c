/* RDMA atomic write (IBV_WR_ATOMIC_WRITE, ibv_wr_atomic_write): 8 bytes
 * stored at the target in one access, completed as IBV_WC_ATOMIC_WRITE;
 * the MR needs remote write; a misaligned address is an invalid request. */
#include "common.h"

static void wr_atomic_write(struct ibv_qp_ex *qx, uint64_t wr_id, uint32_t rkey, uint64_t addr,
			    uint64_t value)
{
	ibv_wr_start(qx);
	qx->wr_id = wr_id;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, rkey, addr, &value);
	value = 0;                           /* taken at the call */
	CHECK_OK(ibv_wr_complete(qx));
}

static void check_ok(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct t_opts o;
	struct t_pair p;
	struct ibv_qp_ex *qx;
	struct ibv_wc wc;
	uint64_t v;

	t_opts_default(&o, IBV_QPT_RC);
	qx = t_pair_open_qp_ex(&p, &o, &cap, IBV_QP_EX_WITH_ATOMIC_WRITE);
	wr_atomic_write(qx, 1, p.ib.rkey, p.ib.addr + 64, 0x1122334455667788ull);
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_ATOMIC_WRITE);
	memcpy(&v, p.b.buf + 64, 8);
	CHECK_EQ(v, 0x1122334455667788ull);
	CHECK_EQ(p.b.buf[72], 0);

	/* ibv_post_send takes it too: one 8-byte SGE */
	v = 0xa5a5a5a5a5a5a5a5ull;
	memcpy(p.a.buf, &v, 8);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_ATOMIC_WRITE, 2, p.a.buf, 8, p.a.mr->lkey,
			     p.ib.addr + 128, p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(!memcmp(p.b.buf + 128, &v, 8));
	CHECK_ERR(t_post_rdma(p.a.qp, IBV_WR_ATOMIC_WRITE, 3, p.a.buf, 4, p.a.mr->lkey,
			      p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED), EINVAL);

	wr_atomic_write(qx, 4, p.ib.rkey, p.ib.addr + 4, 1);
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_REM_INV_REQ_ERR);
	t_pair_close(&p);
}

static void check_no_write_right(void)
{
	struct ibv_qp_cap cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
				  .max_recv_sge = 1 };
	struct t_opts o;
	struct t_pair p;
	struct ibv_qp_ex *qx;

	t_opts_default(&o, IBV_QPT_RC);
	o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	qx = t_pair_open_qp_ex(&p, &o, &cap, IBV_QP_EX_WITH_ATOMIC_WRITE);
	wr_atomic_write(qx, 5, p.ib.rkey, p.ib.addr, 1);
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(p.b.buf[0], 0);
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(30);
	check_ok();
	check_no_write_right();
	return 0;
}
