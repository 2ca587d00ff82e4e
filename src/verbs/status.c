/*
 * Records of CQs, SRQs and MRs in this process's status file
 * (status/format.h; QPs: engine/status.c): made with the object, their
 * descriptive part rewritten under the record's seqlock when it changes,
 * freed with the object.
 */
#include "status/publish.h"
#include "verbs/sv.h"

void sv_status_cq(struct sv_cq *cq)
{
	struct svst_cq *r = cq->st;

	svst_write_begin(&r->h);
	r->cqe = (uint32_t)cq->ibcq.cqe;
	r->has_channel = cq->ibcq.channel != NULL;
	r->pushed = cq->tail;
	r->polled = cq->head;
	svst_write_end(&r->h);
}

void sv_status_srq(struct sv_srq *srq)
{
	struct svst_srq *r = srq->st;

	svst_write_begin(&r->h);
	r->srqn = srq->srq_num;
	r->max_wr = srq->rq.max_wr;
	r->limit = srq->limit;
	r->xrc = srq->xrcd != NULL;
	r->rq.posted = srq->rq.tail;
	r->rq.done = srq->rq.head;
	svst_write_end(&r->h);
}

void sv_status_mr(struct sv_mr *mr)
{
	struct svst_mr *r = mr->st;

	svst_write_begin(&r->h);
	r->addr = (uint64_t)(uintptr_t)mr->ibmr.addr;
	r->length = mr->ibmr.length;
	r->access = mr->access;
	r->lkey = mr->ibmr.lkey;
	r->rkey = mr->ibmr.rkey;
	r->pd = mr->ibmr.pd ? to_spd(mr->ibmr.pd)->id : 0;
	svst_write_end(&r->h);
}
