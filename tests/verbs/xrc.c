/* XRC: domains (file sharing and its open flags), XRC SRQs and their
 * numbers, initiator and target QPs, SENDs delivered to the SRQ each names
 * (completed on that SRQ's CQ, in its PD), one-sided operations checked in
 * that SRQ's PD, and the errors: an unknown SRQ number, an SRQ of another
 * domain, receives posted to XRC QPs, objects still in use.  And a target
 * served while the only thread polls the initiator's CQ: no poller reads
 * the target's input, so its writer wakes the progress thread though the
 * process polls (before, each SEND waited for the progress thread's next
 * look at the rings: docs/measurements.md, 'XRC targets ring'). */
#include <fcntl.h>

#include "common.h"

struct xside {
	struct ibv_pd *pd;
	struct ibv_cq *cq;           /* initiator's sends; the SRQs' receives */
	struct ibv_qp *ini, *tgt;
	struct ibv_mr *mr;
	uint8_t *buf;
};

struct xrc {
	struct ibv_context *ctx;
	struct ibv_xrcd *xrcd, *other;
	struct ibv_srq *srq[2];      /* srq[1] is in `other`'s domain */
	struct ibv_cq *srq_cq;
	struct xside a;              /* a's initiator -> b's target */
	struct xside b;
};

#define BUF 8192

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &attr);
}

static struct ibv_srq *xsrq(struct xrc *x, struct ibv_xrcd *xrcd, struct ibv_pd *pd)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC, .xrcd = xrcd, .cq = x->srq_cq, .pd = pd,
	};

	return ibv_create_srq_ex(x->ctx, &a);
}

static void side_create(struct xrc *x, struct xside *s)
{
	struct ibv_qp_init_attr_ex ini = {
		.qp_type = IBV_QPT_XRC_SEND, .comp_mask = IBV_QP_INIT_ATTR_PD,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	struct ibv_qp_init_attr_ex tgt = {
		.qp_type = IBV_QPT_XRC_RECV, .comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x->xrcd,
	};

	s->pd = CHECK_PTR(ibv_alloc_pd(x->ctx));
	s->cq = CHECK_PTR(ibv_create_cq(x->ctx, 32, NULL, NULL, 0));
	s->buf = CHECK_PTR(aligned_alloc(4096, BUF));
	memset(s->buf, 0, BUF);
	s->mr = CHECK_PTR(ibv_reg_mr(s->pd, s->buf, BUF, T_ALL_ACCESS));
	ini.pd = s->pd;
	ini.send_cq = s->cq;
	s->ini = CHECK_PTR(ibv_create_qp_ex(x->ctx, &ini));
	s->tgt = CHECK_PTR(ibv_create_qp_ex(x->ctx, &tgt));
	CHECK(s->tgt->pd == NULL);
}

/* `from`'s initiator to `to`'s target and back (the target answers it). */
static void connect_pair(struct xside *from, struct xside *to)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = T_ALL_REMOTE };

	CHECK_OK(ibv_query_port(from->ini->context, 1, &pa));
	CHECK_OK(ibv_modify_qp(from->ini, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS));
	CHECK_OK(ibv_modify_qp(to->tgt, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS));
	/* the initiator's RTR takes no responder attributes */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096,
				  .dest_qp_num = to->tgt->qp_num, .rq_psn = 9,
				  .ah_attr = { .dlid = pa.lid, .port_num = 1 },
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 12 };
	CHECK_ERR(ibv_modify_qp(from->ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MIN_RNR_TIMER), EINVAL);
	CHECK_OK(ibv_modify_qp(from->ini, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN));
	a.dest_qp_num = from->ini->qp_num;
	a.rq_psn = 7;                       /* the initiator's sq_psn */
	CHECK_OK(ibv_modify_qp(to->tgt, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			       IBV_QP_MIN_RNR_TIMER));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 7, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	CHECK_OK(ibv_modify_qp(from->ini, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
	a.sq_psn = 9;
	CHECK_OK(ibv_modify_qp(to->tgt, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT));
}

static int post(struct xside *s, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t srqn,
		void *buf, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, s->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
		.qp_type.xrc.remote_srqn = srqn,
	}, *bad;

	return ibv_post_send(s->ini, &wr, &bad);
}

static void check_domains(struct ibv_context *ctx)
{
	char path[] = "/tmp/sv_xrc_XXXXXX";
	int fd = mkstemp(path);
	struct ibv_xrcd *x1, *x2;

	CHECK(fd >= 0);
	unlink(path);
	/* without O_CREAT, the file must already name a domain */
	CHECK_NULL_ERRNO(open_xrcd(ctx, fd, 0), EINVAL);
	x1 = CHECK_PTR(open_xrcd(ctx, fd, O_CREAT));
	CHECK_NULL_ERRNO(open_xrcd(ctx, fd, O_CREAT | O_EXCL), EEXIST);
	x2 = CHECK_PTR(open_xrcd(ctx, fd, 0));
	CHECK_OK(ibv_close_xrcd(x2));
	CHECK_OK(ibv_close_xrcd(x1));
	CHECK_NULL_ERRNO(open_xrcd(ctx, fd, 0), EINVAL);     /* the domain went with them */
	close(fd);
	CHECK_NULL_ERRNO(open_xrcd(ctx, -1, 0), EINVAL);
	x1 = CHECK_PTR(open_xrcd(ctx, -1, O_CREAT));
	CHECK_OK(ibv_close_xrcd(x1));
}

static void setup(struct xrc *x)
{
	struct ibv_device_attr attr;
	uint32_t n0, n1;

	memset(x, 0, sizeof(*x));
	x->ctx = t_open();
	CHECK_OK(ibv_query_device(x->ctx, &attr));
	CHECK(attr.device_cap_flags & IBV_DEVICE_XRC);
	check_domains(x->ctx);
	x->xrcd = CHECK_PTR(open_xrcd(x->ctx, -1, O_CREAT));
	x->other = CHECK_PTR(open_xrcd(x->ctx, -1, O_CREAT));
	x->srq_cq = CHECK_PTR(ibv_create_cq(x->ctx, 32, NULL, NULL, 0));
	side_create(x, &x->a);
	side_create(x, &x->b);
	x->srq[0] = CHECK_PTR(xsrq(x, x->xrcd, x->b.pd));
	x->srq[1] = CHECK_PTR(xsrq(x, x->other, x->b.pd));
	CHECK_OK(ibv_get_srq_num(x->srq[0], &n0));
	CHECK_OK(ibv_get_srq_num(x->srq[1], &n1));
	CHECK_NE(n0, n1);
	connect_pair(&x->a, &x->b);
}

static void side_destroy(struct xside *s)
{
	CHECK_OK(ibv_destroy_qp(s->ini));
	CHECK_OK(ibv_destroy_qp(s->tgt));
	CHECK_OK(ibv_dereg_mr(s->mr));
	CHECK_OK(ibv_destroy_cq(s->cq));
	free(s->buf);
}

static void teardown(struct xrc *x)
{
	side_destroy(&x->a);
	side_destroy(&x->b);
	CHECK_OK(ibv_destroy_srq(x->srq[0]));
	CHECK_OK(ibv_destroy_srq(x->srq[1]));
	CHECK_OK(ibv_destroy_cq(x->srq_cq));
	CHECK_OK(ibv_dealloc_pd(x->a.pd));
	CHECK_OK(ibv_dealloc_pd(x->b.pd));
	CHECK_OK(ibv_close_xrcd(x->xrcd));
	CHECK_OK(ibv_close_xrcd(x->other));
	CHECK_OK(ibv_close_device(x->ctx));
}

static void check_traffic(struct xrc *x)
{
	struct ibv_sge sge = { (uintptr_t)x->b.buf, 256, x->b.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_wc wc;
	uint32_t srqn;

	CHECK_OK(ibv_get_srq_num(x->srq[0], &srqn));
	/* XRC QPs take no receives */
	CHECK_ERR(ibv_post_recv(x->b.tgt, &rwr, &rbad), EINVAL);
	CHECK_ERR(ibv_post_recv(x->a.ini, &rwr, &rbad), EINVAL);
	CHECK_OK(ibv_post_srq_recv(x->srq[0], &rwr, &rbad));
	t_fill(x->a.buf, 200, 3);
	CHECK_OK(post(&x->a, IBV_WR_SEND, 1, srqn, x->a.buf, 200, 0, 0));
	wc = t_wc(x->a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	wc = t_wc(x->srq_cq, 5000);         /* the SRQ's CQ, not the target's */
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 77);
	CHECK_EQ(wc.byte_len, 200);
	CHECK_EQ(wc.qp_num, x->b.tgt->qp_num);
	CHECK(t_check_fill(x->b.buf, 200, 3));

	/* WRITE and READ through the target, in the SRQ's PD (b's) */
	t_fill(x->a.buf, 512, 5);
	CHECK_OK(post(&x->a, IBV_WR_RDMA_WRITE, 2, srqn, x->a.buf, 512,
		      (uintptr_t)x->b.buf + 1024, x->b.mr->rkey));
	CHECK_STATUS(t_wc(x->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(x->b.buf + 1024, 512, 5));
	memset(x->a.buf, 0, 512);
	CHECK_OK(post(&x->a, IBV_WR_RDMA_READ, 3, srqn, x->a.buf, 512,
		      (uintptr_t)x->b.buf + 1024, x->b.mr->rkey));
	CHECK_STATUS(t_wc(x->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(x->a.buf, 512, 5));
}

/* One completion from `cq`, polled without pause, within `ms`. */
static struct ibv_wc spin_wc(struct ibv_cq *cq, uint64_t ms)
{
	uint64_t end = t_now_ms() + ms;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		CHECK(t_now_ms() < end);
	CHECK_EQ(n, 1);
	return wc;
}

/* SENDs and their completions, one at a time, polling the initiator's CQ
 * first, as rdma-core's own XRC tests do. */
static void check_served_while_polling(struct xrc *x)
{
	struct ibv_sge sge = { (uintptr_t)x->b.buf, 64, x->b.mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;
	uint32_t srqn;

	CHECK_OK(ibv_get_srq_num(x->srq[0], &srqn));
	for (int i = 0; i < 64; i++) {
		struct ibv_wc wc;

		rwr.wr_id = 100 + i;
		CHECK_OK(ibv_post_srq_recv(x->srq[0], &rwr, &rbad));
		t_fill(x->a.buf, 8, (uint8_t)i);
		CHECK_OK(post(&x->a, IBV_WR_SEND, i, srqn, x->a.buf, 8, 0, 0));
		CHECK_STATUS(spin_wc(x->a.cq, 10000), IBV_WC_SUCCESS);
		wc = spin_wc(x->srq_cq, 10000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 100 + i);
		CHECK(t_check_fill(x->b.buf, 8, (uint8_t)i));
	}
}

/* b's buffer is in b's PD: through an SRQ of another PD, the key fails. */
static void check_pd_of_srq(void)
{
	struct xrc x;
	struct ibv_srq *srq_a;
	uint32_t srqn;

	setup(&x);
	srq_a = CHECK_PTR(xsrq(&x, x.xrcd, x.a.pd));
	CHECK_OK(ibv_get_srq_num(srq_a, &srqn));
	CHECK_OK(post(&x.a, IBV_WR_RDMA_WRITE, 4, srqn, x.a.buf, 64, (uintptr_t)x.b.buf,
		      x.b.mr->rkey));
	CHECK_STATUS(t_wc(x.a.cq, 5000), IBV_WC_REM_ACCESS_ERR);
	/* The target let go of the SRQ before its NAK went: no EBUSY. */
	CHECK_OK(ibv_destroy_srq(srq_a));
	teardown(&x);
}

static void check_bad_srqn(struct xrc *x, int which)
{
	uint32_t srqn = 0xfffff;

	if (which >= 0)
		CHECK_OK(ibv_get_srq_num(x->srq[which], &srqn));
	CHECK_OK(post(&x->a, IBV_WR_SEND, 5, srqn, x->a.buf, 8, 0, 0));
	CHECK_STATUS(t_wc(x->a.cq, 5000), IBV_WC_REM_INV_REQ_ERR);
}

/* SEND_WITH_INV through a target: an MR's key is no window to invalidate
 * (the request's PD is its SRQ's: the target has none of its own). */
static void check_send_inv(struct xrc *x)
{
	struct ibv_sge sge = { (uintptr_t)x->b.buf, 256, x->b.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 78, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_sge ssge = { (uintptr_t)x->a.buf, 8, x->a.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 6, .sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = x->b.mr->rkey,
	}, *bad;

	CHECK_OK(ibv_post_srq_recv(x->srq[0], &rwr, &rbad));
	CHECK_OK(ibv_get_srq_num(x->srq[0], &wr.qp_type.xrc.remote_srqn));
	CHECK_OK(ibv_post_send(x->a.ini, &wr, &bad));
	CHECK_STATUS(t_wc(x->a.cq, 5000), IBV_WC_REM_INV_REQ_ERR);
	CHECK_STATUS(t_wc(x->srq_cq, 5000), IBV_WC_REM_INV_REQ_ERR);
}

int main(void)
{
	struct xrc x;

	t_alarm(40);
	setup(&x);
	check_traffic(&x);
	check_served_while_polling(&x);
	/* objects in use */
	CHECK_ERR(ibv_close_xrcd(x.xrcd), EBUSY);
	CHECK_ERR(ibv_destroy_cq(x.srq_cq), EBUSY);
	check_bad_srqn(&x, 1);           /* an SRQ of another domain */
	teardown(&x);
	check_pd_of_srq();
	setup(&x);
	check_bad_srqn(&x, -1);          /* no such SRQ */
	teardown(&x);
	setup(&x);
	check_send_inv(&x);
	teardown(&x);
	return 0;
}
