/* Queue pairs: create, query, destroy, the error state and flushing. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api.h"
#include "status/publish.h"
#include "util/log.h"
#include "verbs/ops.h"
#include "verbs/sv.h"

uint64_t sv_qp_ack_timeout_ns(const struct sv_qp *qp)
{
	/* 4.096 us * 2^timeout; 0 means infinite. */
	if (!qp->attr.timeout)
		return 0;
	return 4096ull << qp->attr.timeout;
}

/* The IB spec's encoding of the RNR NAK timer, in microseconds. */
uint64_t sv_rnr_timer_ns(uint8_t t)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
		2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920,
		122880, 163840, 245760, 327680, 491520 };

	return (uint64_t)us[t & 31] * 1000;
}

void sv_qp_explain(struct sv_qp *qp, const char *fmt, ...)
{
	char why[SV_QP_ERR_LEN];
	int n = snprintf(why, sizeof(why), "QP %#x: ", qp->ibqp.qp_base.qp_num);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why + n, sizeof(why) - (size_t)n, fmt, ap);
	va_end(ap);
	/* most QPs never have one: its room is made at the first (QP lock held) */
	if (qp->last_err || (qp->last_err = calloc(1, sizeof(why))))
		memcpy(qp->last_err, why, strlen(why) + 1);
	sv_engine_status_qp(qp);
	sv_err("%s", why);
}

void sv_qp_async(struct sv_qp *qp, enum ibv_event_type type)
{
	struct ibv_async_event ev = { .element.qp = &qp->ibqp.qp_base, .event_type = type };

	sv_async_post(to_sctx(qp->ibqp.qp_base.context), &ev);
}

static void flush_rq(struct sv_qp *qp)
{
	struct ibv_wc wc = { .status = IBV_WC_WR_FLUSH_ERR, .opcode = IBV_WC_RECV,
			     .qp_num = qp->ibqp.qp_base.qp_num };

	if (qp->srq)
		return;         /* an SRQ's WQEs belong to the SRQ, not to this QP */
	while (qp->rq.head != qp->rq.tail) {
		wc.wr_id = sv_rq_at(&qp->rq, qp->rq.head)->wr_id;
		qp->rq.head++;
		sv_cq_push(qp->rcq, &wc, false);
	}
}

/* Complete every outstanding WQE with WR_FLUSH_ERR (QP in ERR). */
void sv_qp_flush(struct sv_qp *qp)
{
	for (uint32_t i = qp->sq.head; i != qp->sq.tail; i++) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, i);

		if (w->state != SV_SWQE_DONE) {
			w->state = SV_SWQE_DONE;
			w->status = IBV_WC_WR_FLUSH_ERR;
		}
	}
	qp->sq.next = qp->sq.tail;
	sv_comp_reap(qp);
	flush_rq(qp);
}

void sv_qp_to_error(struct sv_qp *qp)
{
	bool was_err = qp->attr.qp_state == IBV_QPS_ERR;

	qp->attr.qp_state = qp->attr.cur_qp_state = IBV_QPS_ERR;
	qp->ibqp.qp_base.state = IBV_QPS_ERR;
	sv_engine_qp_teardown(qp);
	sv_qp_timers_stop(qp);
	sv_qp_timer_update(qp);
	sv_qp_flush(qp);
	sv_engine_status_qp(qp);
	if (!was_err && qp->srq && !qp->xrcd)
		sv_qp_async(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

/* ---- create ---- */

/* An XRC initiator has no receive side, a target no queue of its own:
 * what their attributes say of those is ignored (in a copy), as the
 * kernel does. */
static int check_xrc(struct ibv_qp_init_attr_ex *a)
{
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd)
			return EINVAL;
		memset(&a->cap, 0, sizeof(a->cap));
		a->pd = NULL;
		a->send_cq = a->recv_cq = NULL;
		a->srq = NULL;
		return 0;
	}
	if (!a->pd || !a->send_cq)
		return EINVAL;
	a->cap.max_recv_wr = a->cap.max_recv_sge = 0;
	a->recv_cq = NULL;
	a->srq = NULL;
	return 0;
}

static bool is_xrc(enum ibv_qp_type t)
{
	return t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV;
}

static int check_caps(struct ibv_qp_init_attr_ex *a)
{
	struct ibv_qp_cap *c = &a->cap;

	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    !is_xrc(a->qp_type))
		return EOPNOTSUPP;
	if (is_xrc(a->qp_type)) {
		if (check_xrc(a))
			return EINVAL;
	} else if (!a->send_cq || !a->recv_cq) {
		return EINVAL;
	}
	if (c->max_send_wr > SV_MAX_QP_WR || c->max_send_sge > SV_MAX_SGE ||
	    c->max_inline_data > SV_MAX_INLINE)
		return EINVAL;
	if (!a->srq && (c->max_recv_wr > SV_MAX_QP_WR || c->max_recv_sge > SV_MAX_SGE))
		return EINVAL;
	return 0;
}

#define SV_SUP_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ | \
	IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
	IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV | \
	IBV_QP_EX_WITH_ATOMIC_WRITE)

static int sq_init(struct sv_sq *sq, struct ibv_qp_cap *c, struct ibv_pd *pd)
{
	sq->max_wr = c->max_send_wr ? c->max_send_wr : 1;
	sq->max_sge = c->max_send_sge ? c->max_send_sge : 1;
	/* Inline data of at least 64 bytes is always available (tools rely on it). */
	sq->max_inline = c->max_inline_data > 64 ? c->max_inline_data : 64;
	sq->stride = (sizeof(struct sv_swqe) + sq->max_sge * sizeof(struct sv_sge) +
		      sq->max_inline + 7) & ~7u;
	sq->mask = sv_ring_slots(sq->max_wr) - 1;
	sq->buf = sv_pd_buf_alloc(pd, ((size_t)sq->mask + 1) * sq->stride, SV_RES_QP_SQ,
				  &sq->buf_pd);
	return sq->buf ? 0 : ENOMEM;
}

/* The most SGEs a receive this QP takes can have: its own queue's, its
 * SRQ's, or any an XRC target's requests name. */
static uint32_t rwqe_sges(const struct ibv_qp_init_attr_ex *a)
{
	uint32_t n = a->cap.max_recv_sge;

	if (is_xrc(a->qp_type))
		n = SV_MAX_SGE;
	else if (a->srq)
		n = to_ssrq(a->srq)->rq.max_sge;
	return n ? n : 1;
}

static struct sv_qp *qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr_ex in = *attr, *a = &in;    /* check_xrc drops parts */
	struct sv_node *node = to_sctx(context)->node;
	struct sv_qp *qp;
	uint32_t qpn = 0;
	int err = check_caps(a);

	if (err) {
		errno = err;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp) + sizeof(struct sv_rwqe) + rwqe_sges(a) * sizeof(struct sv_sge));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->rctx.wqe = (struct sv_rwqe *)(qp + 1);
	qp->st = svst_alloc(SVST_QP);
	qp->rq.st = &qp->st->rq;
	err = sq_init(&qp->sq, &a->cap, a->pd);
	if (!err && !a->srq && !is_xrc(a->qp_type))
		err = sv_rq_init(&qp->rq, a->cap.max_recv_wr, a->cap.max_recv_sge, a->pd);
	if (!err && (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && a->send_ops_flags &&
	    !(qp->ex = calloc(1, sizeof(*qp->ex))))
		err = ENOMEM;
	if (!err)
		err = sv_engine_qpn_alloc(node, &qpn);
	if (err) {
		free(qp->ex);
		sv_pd_buf_free(qp->sq.buf_pd, qp->sq.buf, SV_RES_QP_SQ);
		sv_rq_free(&qp->rq);
		svst_free(qp->st);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->lock = (struct sv_qlock)SV_QLOCK_INIT;
	sv_list_init(&qp->timer.link);
	qp->timer.owner = qp;
	sv_list_init(&qp->mcast);
	/* an XRC initiator's responses and a target's requests complete
	 * nowhere of their own (the target's: its requests' SRQs' CQs) */
	qp->scq = a->send_cq ? to_scq(a->send_cq) : NULL;
	qp->rcq = a->recv_cq ? to_scq(a->recv_cq) : qp->scq;
	qp->srq = a->srq ? to_ssrq(a->srq) : NULL;
	qp->xrcd = a->qp_type == IBV_QPT_XRC_RECV ? (struct sv_xrcd *)a->xrcd : NULL;
	qp->sq_sig_all = a->sq_sig_all;
	qp->cap.max_send_wr = qp->sq.max_wr;
	qp->cap.max_send_sge = qp->sq.max_sge;
	qp->cap.max_inline_data = qp->sq.max_inline;
	qp->cap.max_recv_wr = qp->srq ? 0 : qp->rq.max_wr;
	qp->cap.max_recv_sge = qp->srq ? 0 : qp->rq.max_sge;
	attr->cap = qp->cap;

	struct ibv_qp *q = &qp->ibqp.qp_base;
	q->context = context;
	q->qp_context = a->qp_context;
	q->pd = a->pd;
	q->send_cq = a->send_cq;
	q->recv_cq = a->recv_cq;
	q->srq = a->srq;
	q->handle = qpn;
	q->qp_num = qpn;
	q->qp_type = a->qp_type;
	q->state = IBV_QPS_RESET;
	pthread_mutex_init(&q->mutex, NULL);
	pthread_cond_init(&q->cond, NULL);
	qp->attr.qp_state = qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_4096;
	qp->attr.port_num = 1;
	qp->attr.cap = qp->cap;
	qp->send_ops_flags = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ?
			     a->send_ops_flags : 0;
	sv_qp_init_ex_ops(qp);

	if (qp->scq)
		__atomic_add_fetch(&qp->scq->refcnt, 1, __ATOMIC_RELEASE);
	if (qp->rcq)
		__atomic_add_fetch(&qp->rcq->refcnt, 1, __ATOMIC_RELEASE);
	if (qp->srq)
		__atomic_add_fetch(&qp->srq->refcnt, 1, __ATOMIC_RELEASE);
	if (qp->xrcd)
		sv_xrcd_get(qp->xrcd);
	if (a->pd)
		sv_pd_get(a->pd);
	sv_engine_status_qp(qp);
	sv_engine_qp_publish(node, qpn, qp);     /* only now can frames find it */
	sv_info("created qp %u type %d", qpn, a->qp_type);
	return qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr_ex a;
	struct sv_qp *qp;

	memset(&a, 0, sizeof(a));
	memcpy(&a, init, sizeof(*init));
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = qp_create(pd->context, &a);
	if (!qp)
		return NULL;
	init->cap = a.cap;
	return &qp->ibqp.qp_base;
}

/* Creation flags and TSO are valid fields that ask for nothing when zero
 * (pyverbs sets the masks with zero values); the device has none of them. */
static bool no_extras(const struct ibv_qp_init_attr_ex *a)
{
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return false;
	return !(a->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) || !a->max_tso_header;
}

struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
			       IBV_QP_INIT_ATTR_XRCD;
	bool tgt = a->qp_type == IBV_QPT_XRC_RECV;
	struct sv_qp *qp;

	sv_engine_release_all_acks(to_sctx(context)->node);
	if (a->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & (tgt ? IBV_QP_INIT_ATTR_XRCD : IBV_QP_INIT_ATTR_PD))) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~(uint64_t)SV_SUP_SEND_OPS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!no_extras(a)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	qp = qp_create(context, a);
	return qp ? &qp->ibqp.qp_base : NULL;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct sv_qp *sqp = to_sqp(qp);

	if (!sqp->send_ops_flags) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return &sqp->ibqp;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init)
{
	struct sv_qp *qp = to_sqp(ibqp);

	sv_qlock_lock(&qp->lock);
	*attr = qp->attr;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	sv_qp_unlock(qp);
	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	/* Payload is placed in order, before the completion that reports it. */
	return flags ? 0 : 1;
}

/* ---- destroy ---- */

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct sv_qp *qp = to_sqp(ibqp);
	struct sv_node *node = to_sctx(ibqp->context)->node;

	sv_engine_release_all_acks(node);
	sv_batch_forget(qp);
	sv_engine_qp_unlink(node, qp);
	sv_engine_wait_drivers(node);
	sv_mw_qp_gone(ibqp->qp_num);
	sv_cq_clean_qp(qp);
	sv_async_purge(ibqp->context, ibqp);
	sv_wait_acked(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed, &qp->async_reported);
	if (qp->xrcd) {
		sv_xrcd_put(qp->xrcd);       /* a target holds no SRQ or CQ between requests */
	} else {
		__atomic_sub_fetch(&qp->scq->refcnt, 1, __ATOMIC_RELEASE);
		__atomic_sub_fetch(&qp->rcq->refcnt, 1, __ATOMIC_RELEASE);
	}
	if (qp->srq && !qp->xrcd)
		__atomic_sub_fetch(&qp->srq->refcnt, 1, __ATOMIC_RELEASE);
	if (ibqp->pd)
		sv_pd_put(ibqp->pd);
	sv_pd_buf_free(qp->sq.buf_pd, qp->sq.buf, SV_RES_QP_SQ);
	sv_rq_free(&qp->rq);
	svst_free(qp->st);
	free(qp->ex);
	free(qp->last_err);
	free(qp->atomic_seen);
	free(qp);
	return 0;
}
