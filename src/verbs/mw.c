/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)): a key of its own for
 * remote access to a range of an MR, with rights of its own.
 *
 * A window is an entry of the key table (verbs/mr.c) whose view is the range
 * it is bound to; remote accesses reach it as they reach an MR, local ones
 * never.  Type 1 is bound and unbound (length 0) with ibv_bind_mw, which
 * posts a BIND_MW work request; type 2 with a BIND_MW request whose rkey
 * keeps the window's index and picks its low byte, and it is bound to that
 * QP: only remote accesses arriving on it may use it.  It is invalidated by
 * IBV_WR_LOCAL_INV, or by its QP's peer with IBV_WR_SEND_WITH_INV.
 * Binds and invalidations run in send queue order when the requester
 * reaches them (engine/req.c), under the MR write lock, and move the MR
 * epoch, so translations the engine kept of the old view are checked again.
 * While a window is bound, its MR can be neither deregistered nor
 * re-registered (EBUSY).  Same-host peers send accesses through a window to
 * us (SV_SEG_WINDOW): only here are its QP rules checked.
 */
#include <errno.h>
#include <stdlib.h>

#include "engine/api.h"
#include "util/log.h"
#include "util/names.h"
#include "verbs/ops.h"
#include "verbs/sv.h"

SV_NAME_TABLE(sv_mw_state_name, enum sv_mw_state, SV_MW_NSTATES,
	      [SV_MW_FREE] = "FREE", [SV_MW_VALID] = "VALID")

/* Type 2 windows bound anywhere: a QP that goes looks for its own only then. */
static uint32_t type2_bound;

static struct sv_mw *to_smw(struct ibv_mw *m) { return (struct sv_mw *)m; }

bool sv_mw_serves(const struct sv_mw *mw, uint32_t qpn)
{
	return qpn && mw->state == SV_MW_VALID &&
	       (mw->ibmw.type == IBV_MW_TYPE_1 || mw->qpn == qpn);
}

struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct sv_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->ibmw.context = pd->context;
	mw->ibmw.pd = pd;
	mw->ibmw.type = type;
	mw->win.ibmr.context = pd->context;
	mw->win.ibmr.pd = pd;
	mw->win.mw = mw;
	err = sv_key_add(&mw->win);
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	mw->ibmw.rkey = mw->win.ibmr.rkey;
	mw->ibmw.handle = mw->win.index;
	sv_pd_get(pd);
	return &mw->ibmw;
}

/* With the write lock held: the window leaves its MR. */
static void unbind(struct sv_mw *mw)
{
	if (mw->state != SV_MW_VALID)
		return;
	mw->mr->windows--;
	mw->mr = NULL;
	if (mw->ibmw.type == IBV_MW_TYPE_2)
		type2_bound--;
	mw->state = SV_MW_FREE;
	sv_mr_epoch++;
}

/* With the write lock held (as rereg withdraws an MR): same-host peers
 * see the change; a window never had direct copies to wait for. */
static void publish(struct sv_mw *mw)
{
	if (mw->state == SV_MW_VALID)
		sv_engine_mr_publish(&mw->win);
	else
		sv_engine_mr_retract(to_sctx(mw->ibmw.context)->node, mw->win.index);
}

int sv_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sv_mw *mw = to_smw(ibmw);

	sv_mr_wrlock();
	unbind(mw);
	sv_mr_unlock();
	sv_key_remove(&mw->win);
	sv_pd_put(ibmw->pd);
	free(mw);
	return 0;
}

/* ibv_bind_mw(3) for type 1 (the header checked type and PD): a BIND_MW
 * request with the next key, which the window shows from now on. */
int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			     .bind_info = mw_bind->bind_info },
	}, *bad;
	int ret = sv_post_send(qp, &wr, &bad);

	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/* The IB spec's bind rules (10.6.7.2): the window, the QP and the MR share
 * one PD; a type 2 window is free and keeps its index; the MR allows
 * binding, and local write if the window gives remote write or atomics;
 * the range lies in the MR; only type 2 may be zero based. */
static const char *bind_fault(struct sv_qp *qp, struct sv_mw *mw, const struct sv_mr *mr,
			      const struct sv_swqe *w)
{
	unsigned int need_lw = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	bool type2 = mw->ibmw.type == IBV_MW_TYPE_2;

	if (!sv_same_pd(mw->ibmw.pd, qp->ibqp.qp_base.pd))
		return "the window's PD is not the QP's";
	if (type2 && mw->state != SV_MW_FREE)
		return "a type 2 window is bound: invalidate it first";
	if (type2 && (w->rkey >> 8) != mw->win.index)
		return "the new rkey's upper 24 bits are not the window's (ibv_inc_rkey)";
	if (!type2 && !w->bind_len)
		return NULL;                   /* type 1, length 0: unbind */
	if (!mr || mr->mw)
		return "the MR is not registered (any more)";
	if (!sv_same_pd(mr->ibmr.pd, mw->ibmw.pd))
		return "the MR's PD is not the window's";
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return "the MR lacks IBV_ACCESS_MW_BIND";
	if ((w->bind_access & need_lw) && !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return "remote write or atomic rights need the MR's IBV_ACCESS_LOCAL_WRITE";
	if ((w->bind_access & IBV_ACCESS_ZERO_BASED) && !type2)
		return "only a type 2 window may be zero based";
	if (w->remote_addr < mr->iova || w->bind_len > mr->ibmr.length ||
	    w->remote_addr - mr->iova > mr->ibmr.length - w->bind_len)
		return "the range leaves the MR";
	return NULL;
}

/* With the write lock held: the window shows [remote_addr, +bind_len) of
 * `mr` with the request's rights. */
static void bind_to(struct sv_qp *qp, struct sv_mw *mw, struct sv_mr *mr,
		    const struct sv_swqe *w)
{
	unbind(mw);
	mw->win.base = mr->base + (w->remote_addr - mr->iova);
	mw->win.ibmr.addr = (void *)(uintptr_t)w->remote_addr;
	mw->win.ibmr.length = w->bind_len;
	mw->win.iova = (w->bind_access & IBV_ACCESS_ZERO_BASED) ? 0 : w->remote_addr;
	mw->win.access = w->bind_access & (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_ATOMIC);
	mw->win.share = mr->share;
	mw->mr = mr;
	mr->windows++;
	mw->qpn = qp->ibqp.qp_base.qp_num;
	if (mw->ibmw.type == IBV_MW_TYPE_2)
		type2_bound++;
	mw->state = SV_MW_VALID;
	sv_mr_epoch++;
}

enum ibv_wc_status sv_mw_bind(struct sv_qp *qp, const struct sv_swqe *w)
{
	struct sv_mw *mw = to_smw(w->bind_mw);
	enum sv_mw_state was;
	const char *fault;
	struct sv_mr *mr;

	sv_mr_wrlock();
	was = mw->state;
	mr = w->bind_lkey ? sv_key_find(w->bind_lkey) : NULL;
	fault = bind_fault(qp, mw, mr, w);
	if (!fault) {
		if (w->bind_len || mw->ibmw.type == IBV_MW_TYPE_2)
			bind_to(qp, mw, mr, w);
		else
			unbind(mw);
		sv_key_retag(&mw->win, w->rkey & 0xff);
		/* a type 1 window showed its key when the bind was posted
		 * (sv_bind_mw): a later one may be queued already */
		if (mw->ibmw.type == IBV_MW_TYPE_2)
			mw->ibmw.rkey = mw->win.ibmr.rkey;
		publish(mw);
	}
	sv_mr_unlock();
	if (fault) {
		sv_qp_explain(qp, "BIND_MW wr_id %llu: %s: IBV_WC_MW_BIND_ERR",
			      (unsigned long long)w->wr_id, fault);
		return IBV_WC_MW_BIND_ERR;
	}
	sv_info("mw %#x: %s -> %s", mw->ibmw.rkey, sv_mw_state_name(was),
		sv_mw_state_name(mw->state));
	return IBV_WC_SUCCESS;
}

/* Invalidate the window `rkey` names if it is a type 2 one of `qp`'s PD
 * (and, from the peer, bound to `qp`).  Our MRs are not fast-registered
 * ones: nothing else invalidates. */
static bool invalidate(struct sv_qp *qp, uint32_t rkey, bool remote)
{
	struct sv_mr *e;
	struct sv_mw *mw;

	sv_mr_wrlock();
	e = sv_key_find(rkey);
	mw = e ? e->mw : NULL;
	/* from the peer, the request's PD: an XRC target's is its SRQ's */
	if (!mw || mw->ibmw.type != IBV_MW_TYPE_2 || (remote && !qp->rctx.pd) ||
	    !sv_same_pd(mw->ibmw.pd, remote ? qp->rctx.pd : qp->ibqp.qp_base.pd) ||
	    (remote && !sv_mw_serves(mw, qp->ibqp.qp_base.qp_num)))
		mw = NULL;
	if (mw) {
		unbind(mw);
		publish(mw);
	}
	sv_mr_unlock();
	return mw;
}

enum ibv_wc_status sv_mw_local_inv(struct sv_qp *qp, uint32_t rkey)
{
	if (invalidate(qp, rkey, false))
		return IBV_WC_SUCCESS;
	sv_qp_explain(qp, "LOCAL_INV of rkey %#x: only a type 2 window of the QP's PD is "
		      "invalidated (no MR is fast-registered here): IBV_WC_LOC_QP_OP_ERR", rkey);
	return IBV_WC_LOC_QP_OP_ERR;
}

bool sv_mw_remote_inv(struct sv_qp *qp, uint32_t rkey)
{
	return invalidate(qp, rkey, true);
}

/* A QP is destroyed: the type 2 windows bound to it become free (its
 * number may come back on another QP). */
void sv_mw_qp_gone(uint32_t qpn)
{
	sv_mr_wrlock();
	for (uint32_t slot = 1; type2_bound && slot < sv_key_slots(); slot++) {
		struct sv_mr *e = sv_key_at(slot);
		struct sv_mw *mw = e ? e->mw : NULL;

		if (mw && mw->ibmw.type == IBV_MW_TYPE_2 && mw->state == SV_MW_VALID &&
		    mw->qpn == qpn) {
			unbind(mw);
			publish(mw);
		}
	}
	sv_mr_unlock();
}
