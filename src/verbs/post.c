/* ibv_post_send / ibv_post_recv: validate, queue, and kick the requester. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/api.h"
#include "status/format.h"
#include "util/names.h"
#include "verbs/ops.h"
#include "verbs/sv.h"
#include "util/stamp.h"

/* Which work request opcodes each QP type may post. */
static bool opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	if (t == IBV_QPT_XRC_RECV)
		return false;           /* a target has no send queue */
	if (t == IBV_QPT_XRC_SEND)
		t = IBV_QPT_RC;         /* an initiator is an RC requester */
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_ATOMIC_WRITE:
		return t == IBV_QPT_RC;
	case IBV_WR_BIND_MW:          /* ibv_bind_mw(3): UC, RC or XRC */
	case IBV_WR_LOCAL_INV:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	default:
		return false;
	}
}

/* ibv_wc_status_str(3) has no twin for work requests: the names the
 * explanations use. */
SV_NAME_TABLE(sv_wr_opcode_name, enum ibv_wr_opcode, IBV_WR_ATOMIC_WRITE + 1,
	      [IBV_WR_RDMA_WRITE] = "RDMA_WRITE", [IBV_WR_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM",
	      [IBV_WR_SEND] = "SEND", [IBV_WR_SEND_WITH_IMM] = "SEND_WITH_IMM",
	      [IBV_WR_RDMA_READ] = "RDMA_READ", [IBV_WR_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP",
	      [IBV_WR_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD", [IBV_WR_LOCAL_INV] = "LOCAL_INV",
	      [IBV_WR_BIND_MW] = "BIND_MW", [IBV_WR_SEND_WITH_INV] = "SEND_WITH_INV",
	      [IBV_WR_TSO] = "TSO", [IBV_WR_DRIVER1] = "DRIVER1", [IBV_WR_ATOMIC_WRITE] = "ATOMIC_WRITE")

/* A work request refused at post time: the QP keeps why (SOFTVERBS_DEBUG
 * prints it), the caller gets err. */
static int __attribute__((format(printf, 4, 5)))
refuse(struct sv_qp *qp, const struct ibv_send_wr *wr, int err, const char *fmt, ...)
{
	char rule[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rule, sizeof(rule), fmt, ap);
	va_end(ap);
	sv_qp_explain(qp, "ibv_post_send wr_id %llu (%s): %s: %s", (unsigned long long)wr->wr_id,
		      sv_wr_opcode_name(wr->opcode), rule, err == ENOMEM ? "ENOMEM" : "EINVAL");
	return err;
}

static bool sq_state_ok(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_SQE || s == IBV_QPS_ERR;
}

/* Copy a validated WR into the next SQ slot.  Returns an errno. */
int sv_sq_enqueue(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
	struct sv_sq *sq = &qp->sq;
	struct sv_swqe *w;
	uint64_t len = 0;
	/* an atomic write's 8 bytes are taken now, as its builder's are */
	bool is_inline = ((wr->send_flags & IBV_SEND_INLINE) &&
			  wr->opcode != IBV_WR_RDMA_READ &&
			  wr->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
			  wr->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) ||
			 wr->opcode == IBV_WR_ATOMIC_WRITE;

	if (!opcode_ok(qp->ibqp.qp_base.qp_type, wr->opcode))
		return refuse(qp, wr, EINVAL, "not an operation of a %s QP",
			      sv_qp_type_name(qp->ibqp.qp_base.qp_type));
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > sq->max_sge)
		return refuse(qp, wr, EINVAL, "num_sge %d, the QP was created with max_send_sge %u",
			      wr->num_sge, sq->max_sge);
	if (sq->tail - sq->head >= sq->max_wr)
		return refuse(qp, wr, ENOMEM, "the send queue is full: max_send_wr %u work "
			      "requests not yet completed", sq->max_wr);
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (is_inline && len > sq->max_inline)
		return refuse(qp, wr, EINVAL, "IBV_SEND_INLINE of %llu bytes, the QP was created "
			      "with max_inline_data %u", (unsigned long long)len, sq->max_inline);
	if ((wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	     wr->opcode == IBV_WR_ATOMIC_WRITE) &&
	    (wr->num_sge != 1 || wr->sg_list[0].length != 8))
		return refuse(qp, wr, EINVAL, "an atomic takes one SGE of 8 bytes");
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return refuse(qp, wr, EINVAL, "a UD send needs wr.ud.ah");

	w = sv_sq_at(sq, sq->tail);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm = wr->imm_data;
	w->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	w->is_inline = is_inline;
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_BIND_MW:
		w->bind_mw = wr->bind_mw.mw;
		w->rkey = wr->bind_mw.rkey;
		w->remote_addr = wr->bind_mw.bind_info.addr;
		w->bind_len = wr->bind_mw.bind_info.length;
		w->bind_access = wr->bind_mw.bind_info.mw_access_flags;
		/* the MR is found by its key when the bind runs: it may be gone */
		w->bind_lkey = wr->bind_mw.bind_info.mr ? wr->bind_mw.bind_info.mr->lkey : 0;
		w->length = 0;
		break;
	case IBV_WR_LOCAL_INV:
		w->length = 0;
		break;
	default:
		break;
	}
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UD) {
		struct sv_ah *ah = to_sah(wr->wr.ud.ah);

		w->ud_dst = ah->dst;
		w->ud_qpn = wr->wr.ud.remote_qpn;
		w->ud_qkey = wr->wr.ud.remote_qkey;
		w->ud_grh = ah->attr.is_global;
		w->ud_mcast = ah->attr.is_global && sv_gid_is_mcast(&ah->attr.grh.dgid);
		if (w->ud_mcast)
			w->ud_mgid = ah->attr.grh.dgid;
	}
	if (is_inline) {
		uint8_t *dst = (uint8_t *)&w->sge[sq->max_sge];

		/* Inline data is copied now: the buffers may be reused at once. */
		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else {
		w->num_sge = wr->num_sge;
		for (int i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
		}
	}
	w->psn_set = false;         /* a PSN is taken when it first goes on the wire */
	w->placed = false;
	w->state = SV_SWQE_POSTED;
	sq->tail++;
	return 0;
}

/* After queueing: an ERR QP flushes at once, others transmit. */
void sv_sq_doorbell(struct sv_qp *qp)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;

	if (qp->attr.qp_state == IBV_QPS_ERR) {
		sv_qp_flush(qp);
		return;
	}
	sv_engine_enter(node);
	sv_engine_posting(qp->scq);
	sv_batch_post(node, qp);
	sv_engine_leave(node);
}

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct sv_qp *qp = to_sqp(ibqp);
	uint32_t peer = 0;
	bool loop = false;
	int ret = 0;

	sv_stamp(SV_ST_POST_SEND);
	sv_cq_thread_busy();

	sv_qlock_lock(&qp->lock);
	if (!sq_state_ok(qp->attr.qp_state)) {
		sv_qp_explain(qp, "ibv_post_send wr_id %llu: the QP is in %s, sends need RTS "
			      "(or SQD, SQE, ERR): EINVAL", (unsigned long long)wr->wr_id,
			      sv_qp_state_name(qp->attr.qp_state));
		*bad_wr = wr;
		ret = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = sv_sq_enqueue(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		sv_stamp(SV_ST_ENQUEUED);
	}
	sv_sq_doorbell(qp);
	sv_resp_publish_due(qp);
	loop = sv_engine_loopback_peer(qp, &peer);
out:
	sv_qp_unlock(qp);
	if (loop)
		sv_engine_loopback(to_sctx(ibqp->context)->node, peer);
	sv_stamp(SV_ST_POST_SEND_DONE);
	return ret;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sv_qp *qp = to_sqp(ibqp);
	uint32_t from;
	int ret;

	sv_stamp(SV_ST_POST_RECV);
	sv_cq_thread_busy();
	sv_qlock_lock(&qp->lock);
	/* ibv_post_recv(3): a QP attached to an SRQ takes its receives there;
	 * XRC QPs have no receive queue (their SRQs do). */
	if (qp->srq || qp->attr.qp_state == IBV_QPS_RESET ||
	    ibqp->qp_type == IBV_QPT_XRC_SEND || ibqp->qp_type == IBV_QPT_XRC_RECV) {
		sv_qp_explain(qp, "ibv_post_recv wr_id %llu: %s: EINVAL", (unsigned long long)wr->wr_id,
			      qp->srq ? "the QP takes its receives from its SRQ (ibv_post_srq_recv)" :
			      qp->attr.qp_state == IBV_QPS_RESET ?
			      "the QP is in RESET, receives need INIT or later" :
			      "an XRC QP has no receive queue (its SRQ has)");
		*bad_wr = wr;
		sv_qp_unlock(qp);
		return EINVAL;
	}
	from = qp->rq.tail;
	ret = sv_rq_post(&qp->rq, wr, bad_wr);
	sv_resp_publish(qp, from);
	if (ret == ENOMEM)
		sv_qp_explain(qp, "ibv_post_recv wr_id %llu: the receive queue is full: max_recv_wr %u "
			      "posted and not yet consumed: ENOMEM",
			      (unsigned long long)(*bad_wr)->wr_id, qp->rq.max_wr);
	else if (ret)
		sv_qp_explain(qp, "ibv_post_recv wr_id %llu: num_sge %d, the QP was created with "
			      "max_recv_sge %u: EINVAL", (unsigned long long)(*bad_wr)->wr_id,
			      (*bad_wr)->num_sge, qp->rq.max_sge);
	if (qp->attr.qp_state == IBV_QPS_ERR)
		sv_qp_flush(qp);
	else
		sv_resp_rnr_resume(qp);
	sv_qp_unlock(qp);
	sv_stamp(SV_ST_POST_RECV_DONE);
	return ret;
}
