/* Memory windows, type 1 and type 2: allocation, binding, remote access
 * through a window's key (its range and rights, not the MR's), the MR held
 * while a window is bound, invalidation (unbind, LOCAL_INV, SEND_WITH_INV,
 * dealloc, destroying its QP) and the bind errors of the IB spec. */
#include "common.h"

#define WIN_OFF 64
#define WIN_LEN 128

/* b's buffer: no remote rights of its own, only binding. */
static void open_pair(struct t_pair *p)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	t_pair_open(p, &o);
	memset(p->b.buf, 0x11, o.buf_len);
	t_fill(p->a.buf, WIN_LEN, 7);
}

static int post_bind(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey, struct ibv_mr *mr,
		     uint64_t addr, uint64_t len, unsigned int access)
{
	struct ibv_send_wr wr = {
		.wr_id = 50, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED,
		.bind_mw = { .mw = mw, .rkey = rkey,
			     .bind_info = { .mr = mr, .addr = addr, .length = len,
					    .mw_access_flags = access } },
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static int post_inv(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t rkey, void *buf,
		    uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = 60, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.sg_list = &sge, .num_sge = len ? 1 : 0, .invalidate_rkey = rkey,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static struct ibv_wc expect_wc(struct ibv_cq *cq, enum ibv_wc_opcode op, enum ibv_wc_status st)
{
	struct ibv_wc wc = t_wc(cq, 5000);

	CHECK_STATUS(wc, st);
	if (st == IBV_WC_SUCCESS)
		CHECK_EQ(wc.opcode, op);
	return wc;
}

/* A type 2 window of b's, bound by b's QP to the first WIN_LEN bytes of
 * its buffer with remote write: its rkey. */
static uint32_t bind_type2(struct t_pair *p, struct ibv_mw **mw)
{
	uint32_t rkey;

	*mw = CHECK_PTR(ibv_alloc_mw(p->b.pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey((*mw)->rkey);
	CHECK_OK(post_bind(p->b.qp, *mw, rkey, p->b.mr, p->ib.addr, WIN_LEN,
			   IBV_ACCESS_REMOTE_WRITE));
	expect_wc(p->b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	return rkey;
}

/* a writes its pattern at b's `addr` through `rkey`: the expected status. */
static void write_via(struct t_pair *p, uint32_t rkey, uint64_t addr, uint32_t len,
		      enum ibv_wc_status st)
{
	CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, 1, p->a.buf, len, p->a.mr->lkey, addr,
			     rkey, IBV_SEND_SIGNALED));
	expect_wc(p->a.cq, IBV_WC_RDMA_WRITE, st);
}

static void check_alloc(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_device_attr attr;
	struct ibv_mw *mw;

	CHECK_OK(ibv_query_device(ctx, &attr));
	CHECK(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	CHECK(attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CHECK(attr.device_cap_flags & IBV_DEVICE_MEM_MGT_EXTENSIONS);
	CHECK(attr.max_mw > 0);
	CHECK_NULL_ERRNO(ibv_alloc_mw(pd, (enum ibv_mw_type)3), EINVAL);
	mw = CHECK_PTR(ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	CHECK_EQ(mw->type, IBV_MW_TYPE_2);
	CHECK_EQ(mw->pd, pd);
	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
	CHECK_OK(ibv_dealloc_mw(mw));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
}

/* Type 1: ibv_bind_mw, access inside and outside, MR pinned, unbind. */
static void check_type1(void)
{
	struct t_pair p;
	struct ibv_mw *mw;
	struct ibv_mw_bind bind = { .wr_id = 9, .send_flags = IBV_SEND_SIGNALED };
	uint64_t win;
	uint32_t old;

	open_pair(&p);
	win = p.ib.addr + WIN_OFF;
	mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1));
	old = mw->rkey;
	bind.bind_info = (struct ibv_mw_bind_info){ p.b.mr, win, WIN_LEN,
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	CHECK_OK(ibv_bind_mw(p.b.qp, mw, &bind));
	CHECK_NE(mw->rkey, old);
	CHECK_EQ(mw->rkey >> 8, old >> 8);
	CHECK_EQ(expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS).wr_id, 9);
	/* the MR is held while a window is bound to it */
	CHECK_ERR(ibv_dereg_mr(p.b.mr), EBUSY);
	write_via(&p, mw->rkey, win, WIN_LEN, IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf + WIN_OFF, WIN_LEN, 7));
	CHECK_EQ(p.b.buf[WIN_OFF - 1], 0x11);
	CHECK_EQ(p.b.buf[WIN_OFF + WIN_LEN], 0x11);
	/* READ back through the window */
	memset(p.a.buf, 0, WIN_LEN);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 2, p.a.buf, WIN_LEN, p.a.mr->lkey, win,
			     mw->rkey, IBV_SEND_SIGNALED));
	expect_wc(p.a.cq, IBV_WC_RDMA_READ, IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.a.buf, WIN_LEN, 7));
	/* unbind: length 0 */
	old = mw->rkey;
	bind.bind_info = (struct ibv_mw_bind_info){ p.b.mr, 0, 0, 0 };
	CHECK_OK(ibv_bind_mw(p.b.qp, mw, &bind));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	CHECK_OK(ibv_dealloc_mw(mw));
	/* the old key reaches nothing */
	t_fill(p.a.buf, WIN_LEN, 9);
	write_via(&p, old, win, WIN_LEN, IBV_WC_REM_ACCESS_ERR);
	t_fill(p.a.buf, WIN_LEN, 7);
	CHECK(!memcmp(p.b.buf + WIN_OFF, p.a.buf, WIN_LEN));    /* what the first WRITE left */
	t_pair_close(&p);
}

/* Beyond the window, or the MR's own key (no remote rights): refused. */
static void check_type1_bounds(void)
{
	struct t_pair p;
	struct ibv_mw *mw;
	struct ibv_mw_bind bind = { .wr_id = 9, .send_flags = IBV_SEND_SIGNALED };

	open_pair(&p);
	mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1));
	bind.bind_info = (struct ibv_mw_bind_info){ p.b.mr, p.ib.addr + WIN_OFF, WIN_LEN,
		IBV_ACCESS_REMOTE_READ };
	CHECK_OK(ibv_bind_mw(p.b.qp, mw, &bind));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	/* read-only window: a WRITE through it fails */
	write_via(&p, mw->rkey, p.ib.addr + WIN_OFF, 8, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(p.b.buf[WIN_OFF], 0x11);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);

	open_pair(&p);
	mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_1));
	bind.bind_info = (struct ibv_mw_bind_info){ p.b.mr, p.ib.addr + WIN_OFF, WIN_LEN,
		IBV_ACCESS_REMOTE_WRITE };
	CHECK_OK(ibv_bind_mw(p.b.qp, mw, &bind));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	write_via(&p, mw->rkey, p.ib.addr + WIN_OFF + 8, WIN_LEN, IBV_WC_REM_ACCESS_ERR);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);

	open_pair(&p);
	write_via(&p, p.b.mr->rkey, p.ib.addr, 8, IBV_WC_REM_ACCESS_ERR);
	t_pair_close(&p);
}

/* Type 2: bound by a work request, bound to that QP, zero based. */
static void check_type2(void)
{
	struct t_pair p, q;
	struct t_opts o;
	struct ibv_mw *mw;
	uint32_t rkey;

	open_pair(&p);
	mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2));
	rkey = ibv_inc_rkey(mw->rkey);
	CHECK_OK(post_bind(p.b.qp, mw, rkey, p.b.mr, p.ib.addr + WIN_OFF, WIN_LEN,
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	CHECK_EQ(mw->rkey, rkey);
	/* zero based: addresses are offsets into the window */
	write_via(&p, rkey, 0, WIN_LEN, IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf + WIN_OFF, WIN_LEN, 7));

	/* another QP of the same PD may not use it */
	t_opts_default(&o, IBV_QPT_RC);
	o.pd = p.b.pd;
	memset(&q, 0, sizeof(q));
	t_ep_pair(p.ctx, &o, &o, &q.a, &q.b, &q.ia, &q.ib);
	CHECK_OK(t_post_rdma(q.a.qp, IBV_WR_RDMA_WRITE, 3, q.a.buf, 8, q.a.mr->lkey, 0, rkey,
			     IBV_SEND_SIGNALED));
	expect_wc(q.a.cq, IBV_WC_RDMA_WRITE, IBV_WC_REM_ACCESS_ERR);
	t_ep_destroy(&q.a);
	t_ep_destroy(&q.b);

	/* bound: a second bind fails (invalidate first) */
	CHECK_OK(post_bind(p.b.qp, mw, ibv_inc_rkey(rkey), p.b.mr, p.ib.addr, 8,
			   IBV_ACCESS_REMOTE_WRITE));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR);
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_ERR);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);
}

/* LOCAL_INV, then the key fails; a new bind under the next key works. */
static void check_local_inv(void)
{
	struct t_pair p;
	struct ibv_mw *mw;
	uint32_t rkey;

	open_pair(&p);
	rkey = bind_type2(&p, &mw);
	CHECK_OK(post_inv(p.b.qp, IBV_WR_LOCAL_INV, rkey, NULL, 0, 0));
	expect_wc(p.b.cq, IBV_WC_LOCAL_INV, IBV_WC_SUCCESS);
	rkey = ibv_inc_rkey(rkey);
	CHECK_OK(post_bind(p.b.qp, mw, rkey, p.b.mr, p.ib.addr, WIN_LEN, IBV_ACCESS_REMOTE_WRITE));
	expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_SUCCESS);
	write_via(&p, rkey, p.ib.addr, WIN_LEN, IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf, WIN_LEN, 7));
	CHECK_OK(post_inv(p.b.qp, IBV_WR_LOCAL_INV, rkey, NULL, 0, 0));
	expect_wc(p.b.cq, IBV_WC_LOCAL_INV, IBV_WC_SUCCESS);
	CHECK_OK(ibv_dereg_mr(p.b.mr));      /* nothing bound any more */
	p.b.mr = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf, p.b.len, T_ALL_ACCESS));
	write_via(&p, rkey, p.ib.addr, 8, IBV_WC_REM_ACCESS_ERR);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);

	/* an MR's key is not invalidated: a local operation error */
	open_pair(&p);
	CHECK_OK(post_inv(p.b.qp, IBV_WR_LOCAL_INV, p.b.mr->rkey, NULL, 0, 0));
	expect_wc(p.b.cq, IBV_WC_LOCAL_INV, IBV_WC_LOC_QP_OP_ERR);
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_ERR);
	t_pair_close(&p);
}

/* SEND_WITH_INV: the receiver's completion names the key, which then
 * fails; a key that is not such a window fails the SEND at both ends. */
static void check_remote_inv(void)
{
	struct t_pair p;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t rkey;

	open_pair(&p);
	rkey = bind_type2(&p, &mw);
	CHECK_OK(t_post_recv(p.b.qp, 70, p.b.buf + 2048, 64, p.b.mr->lkey));
	CHECK_OK(post_inv(p.a.qp, IBV_WR_SEND_WITH_INV, rkey, p.a.buf, 16, p.a.mr->lkey));
	expect_wc(p.a.cq, IBV_WC_SEND, IBV_WC_SUCCESS);
	wc = expect_wc(p.b.cq, IBV_WC_RECV, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 70);
	CHECK_EQ(wc.byte_len, 16);
	CHECK(wc.wc_flags & IBV_WC_WITH_INV);
	CHECK(!(wc.wc_flags & IBV_WC_WITH_IMM));
	CHECK_EQ(wc.invalidated_rkey, rkey);
	write_via(&p, rkey, p.ib.addr, 8, IBV_WC_REM_ACCESS_ERR);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);

	open_pair(&p);
	CHECK_OK(t_post_recv(p.b.qp, 71, p.b.buf + 2048, 64, p.b.mr->lkey));
	CHECK_OK(post_inv(p.a.qp, IBV_WR_SEND_WITH_INV, p.b.mr->rkey, p.a.buf, 16,
			  p.a.mr->lkey));
	expect_wc(p.a.cq, IBV_WC_SEND, IBV_WC_REM_INV_REQ_ERR);
	expect_wc(p.b.cq, IBV_WC_RECV, IBV_WC_REM_INV_REQ_ERR);
	t_pair_close(&p);
}

/* Bind errors: each fails the request with MW_BIND_ERR. */
static void check_bind_errors(void)
{
	struct {
		const char *what;
		int mr_access;
		uint64_t off, len;
		unsigned int access;
		enum ibv_mw_type type;
	} cases[] = {
		{ "MR without MW_BIND", IBV_ACCESS_LOCAL_WRITE, 0, 64, IBV_ACCESS_REMOTE_READ,
		  IBV_MW_TYPE_2 },
		{ "remote write without local write", IBV_ACCESS_MW_BIND, 0, 64,
		  IBV_ACCESS_REMOTE_WRITE, IBV_MW_TYPE_2 },
		{ "beyond the MR", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, 64, 1 << 20,
		  IBV_ACCESS_REMOTE_READ, IBV_MW_TYPE_2 },
		{ "type 1 zero based", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, 0, 64,
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED, IBV_MW_TYPE_1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct t_pair p;
		struct t_opts o;
		struct ibv_mw *mw;

		t_opts_default(&o, IBV_QPT_RC);
		o.mr_access = cases[i].mr_access;
		t_pair_open(&p, &o);
		mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, cases[i].type));
		CHECK_OK(post_bind(p.b.qp, mw, ibv_inc_rkey(mw->rkey), p.b.mr,
				   p.ib.addr + cases[i].off, cases[i].len, cases[i].access));
		fprintf(stderr, "bind error: %s\n", cases[i].what);
		expect_wc(p.b.cq, IBV_WC_BIND_MW, IBV_WC_MW_BIND_ERR);
		CHECK_OK(ibv_dealloc_mw(mw));
		t_pair_close(&p);
	}
}

/* Deallocating, or destroying the QP it is bound to, ends a window. */
static void check_teardown(void)
{
	struct t_pair p;
	struct ibv_mw *mw;
	struct t_opts o;
	uint32_t rkey;

	open_pair(&p);
	rkey = bind_type2(&p, &mw);
	CHECK_OK(ibv_dealloc_mw(mw));
	CHECK_OK(ibv_dereg_mr(p.b.mr));
	p.b.mr = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf, p.b.len,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND));
	write_via(&p, rkey, p.ib.addr, 8, IBV_WC_REM_ACCESS_ERR);
	t_pair_close(&p);

	/* destroying its QP frees a type 2 window: the MR may go */
	open_pair(&p);
	bind_type2(&p, &mw);
	CHECK_ERR(ibv_dereg_mr(p.b.mr), EBUSY);
	CHECK_OK(ibv_destroy_qp(p.b.qp));
	p.b.qp = NULL;
	CHECK_OK(ibv_dereg_mr(p.b.mr));
	p.b.mr = NULL;
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);

	/* a UD QP binds nothing */
	t_opts_default(&o, IBV_QPT_UD);
	o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
	t_pair_open(&p, &o);
	mw = CHECK_PTR(ibv_alloc_mw(p.b.pd, IBV_MW_TYPE_2));
	CHECK_ERR(post_bind(p.b.qp, mw, ibv_inc_rkey(mw->rkey), p.b.mr, p.ib.addr, 8,
			    IBV_ACCESS_REMOTE_READ), EINVAL);
	CHECK_OK(ibv_dealloc_mw(mw));
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(40);
	check_alloc();
	check_type1();
	check_type1_bounds();
	check_type2();
	check_local_inv();
	check_remote_inv();
	check_bind_errors();
	check_teardown();
	return 0;
}
