/* Receive queues: the ring both QPs and SRQs use, and shared receive queues. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "status/publish.h"
#include "verbs/ops.h"
#include "verbs/sv.h"

int sv_rq_init(struct sv_rq *rq, uint32_t max_wr, uint32_t max_sge, struct ibv_pd *pd)
{
	rq->max_wr = max_wr ? max_wr : 1;
	rq->max_sge = max_sge ? max_sge : 1;
	rq->stride = sizeof(struct sv_rwqe) + rq->max_sge * sizeof(struct sv_sge);
	rq->head = rq->tail = 0;
	rq->mask = sv_ring_slots(rq->max_wr) - 1;
	rq->buf = sv_pd_buf_alloc(pd, ((size_t)rq->mask + 1) * rq->stride, SV_RES_QP_RQ,
				  &rq->buf_pd);
	return rq->buf ? 0 : ENOMEM;
}

void sv_rq_free(struct sv_rq *rq)
{
	sv_pd_buf_free(rq->buf_pd, rq->buf, SV_RES_QP_RQ);
	rq->buf = NULL;
	rq->buf_pd = NULL;
}

/* ibv_post_recv(3): stop at the first bad WR; the ones before it stay posted. */
int sv_rq_post(struct sv_rq *rq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct sv_rwqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			*bad = wr;
			return EINVAL;
		}
		if (rq->tail - rq->head >= rq->max_wr) {
			*bad = wr;
			return ENOMEM;
		}
		w = sv_rq_at(rq, rq->tail);
		w->wr_id = wr->wr_id;
		w->num_sge = wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
		}
		rq->tail++;
		rq->st->posted = rq->tail;
	}
	return 0;
}

static void rq_pop(struct sv_rq *rq, struct sv_rwqe *out)
{
	struct sv_rwqe *w = sv_rq_at(rq, rq->head);

	memcpy(out, w, sizeof(*w) + w->num_sge * sizeof(struct sv_sge));
	rq->head++;
	rq->st->done = rq->head;
}

void sv_srq_check_limit(struct sv_srq *srq)
{
	struct ibv_async_event ev;

	if (!srq->limit || srq->rq.tail - srq->rq.head >= srq->limit)
		return;
	srq->limit = 0;                 /* the limit event disarms it */
	ev.element.srq = &srq->ibsrq;
	ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
	sv_async_post(to_sctx(srq->ibsrq.context), &ev);
}

bool sv_qp_take_rwqe(struct sv_qp *qp, struct sv_rwqe *out)
{
	struct sv_srq *srq = qp->srq;
	bool ok;

	if (!srq) {
		if (qp->rq.head == qp->rq.tail)
			return false;
		rq_pop(&qp->rq, out);
		return true;
	}
	pthread_mutex_lock(&srq->lock);
	ok = srq->rq.head != srq->rq.tail;
	if (ok) {
		rq_pop(&srq->rq, out);
		sv_srq_check_limit(srq);
	}
	pthread_mutex_unlock(&srq->lock);
	return ok;
}

int sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sv_srq *srq = to_ssrq(ibsrq);
	int ret;

	pthread_mutex_lock(&srq->lock);
	ret = sv_rq_post(&srq->rq, wr, bad_wr);
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

static struct sv_srq *srq_create(struct ibv_pd *pd, struct ibv_srq_attr *attr, void *srq_context)
{
	static uint32_t next_srqn = 1;
	struct sv_srq *srq;

	if (!attr->max_wr || attr->max_wr > SV_MAX_QP_WR || attr->max_sge > SV_MAX_SGE ||
	    attr->srq_limit > attr->max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq || sv_rq_init(&srq->rq, attr->max_wr, attr->max_sge, NULL)) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&srq->lock, NULL);
	srq->limit = attr->srq_limit;
	srq->srq_num = __atomic_fetch_add(&next_srqn, 1, __ATOMIC_RELAXED);
	srq->ibsrq.context = pd->context;
	srq->ibsrq.srq_context = srq_context;
	srq->ibsrq.pd = pd;
	srq->ibsrq.handle = srq->srq_num;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	srq->st = svst_alloc(SVST_SRQ);
	srq->rq.st = &srq->st->rq;
	sv_status_srq(srq);
	sv_pd_get(pd);
	return srq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *init)
{
	struct sv_srq *srq = srq_create(pd, &init->attr, init->srq_context);

	return srq ? &srq->ibsrq : NULL;
}

/* An XRC SRQ names its domain and the CQ its receives complete on. */
static int xrc_attach(struct sv_srq *srq, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;

	if ((a->comp_mask & need) != need || !a->xrcd || !a->cq)
		return EINVAL;
	srq->xrcd = (struct sv_xrcd *)a->xrcd;
	srq->cq = to_scq(a->cq);
	srq->ibsrq.srq_context = a->srq_context;
	sv_xrcd_get(srq->xrcd);
	__atomic_add_fetch(&srq->cq->refcnt, 1, __ATOMIC_RELEASE);
	sv_xrc_srq_add(srq);
	sv_status_srq(srq);
	return 0;
}

struct ibv_srq *sv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *a)
{
	enum ibv_srq_type type = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? a->srq_type :
				 IBV_SRQT_BASIC;
	struct sv_srq *srq;
	int err;

	if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd) {
		errno = EINVAL;
		return NULL;
	}
	srq = srq_create(a->pd, &a->attr, a->srq_context);
	if (!srq || type != IBV_SRQT_XRC)
		return srq ? &srq->ibsrq : NULL;
	err = xrc_attach(srq, a);
	if (err) {
		ibv_destroy_srq(&srq->ibsrq);
		errno = err;
		return NULL;
	}
	return &srq->ibsrq;
}

int sv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	*srq_num = to_ssrq(srq)->srq_num;
	return 0;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct sv_srq *srq = to_ssrq(ibsrq);
	int ret = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	pthread_mutex_lock(&srq->lock);
	if (mask & IBV_SRQ_MAX_WR) {
		struct sv_rq nrq;
		uint32_t n = srq->rq.tail - srq->rq.head;

		if (!attr->max_wr || attr->max_wr > SV_MAX_QP_WR || attr->max_wr < n) {
			ret = EINVAL;
			goto out;
		}
		if (sv_rq_init(&nrq, attr->max_wr, srq->rq.max_sge, NULL)) {
			ret = ENOMEM;
			goto out;
		}
		for (uint32_t i = 0; i < n; i++)
			rq_pop(&srq->rq, sv_rq_at(&nrq, i));
		nrq.tail = n;
		nrq.st = srq->rq.st;
		sv_rq_free(&srq->rq);
		srq->rq = nrq;
	}
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->rq.max_wr) {
			ret = EINVAL;
			goto out;
		}
		srq->limit = attr->srq_limit;
	}
	sv_status_srq(srq);
out:
	pthread_mutex_unlock(&srq->lock);
	return ret;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sv_srq *srq = to_ssrq(ibsrq);

	pthread_mutex_lock(&srq->lock);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->lock);
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sv_srq *srq = to_ssrq(ibsrq);

	if (__atomic_load_n(&srq->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (srq->xrcd) {
		if (sv_xrc_srq_del(srq))
			return EBUSY;            /* a target's request is using it */
		sv_xrcd_put(srq->xrcd);
		__atomic_sub_fetch(&srq->cq->refcnt, 1, __ATOMIC_RELEASE);
	}
	sv_async_purge(ibsrq->context, ibsrq);
	sv_wait_acked(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
		      &srq->async_reported);
	sv_pd_put(ibsrq->pd);
	sv_rq_free(&srq->rq);
	svst_free(srq->st);
	pthread_mutex_destroy(&srq->lock);
	free(srq);
	return 0;
}
