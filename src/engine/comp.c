/*
 * The completer: consumes responses on a QP's outbound channel, completes
 * send WQEs strictly in order, and runs the requester's timers (ack timeout
 * -> RETRY_EXC_ERR, RNR back-off -> RNR_RETRY_EXC_ERR, reconnect).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"
#include "util/log.h"
#include "util/time.h"

static const enum ibv_wc_opcode wr_to_wc[] = {
	[IBV_WR_RDMA_WRITE] = IBV_WC_RDMA_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = IBV_WC_RDMA_WRITE,
	[IBV_WR_SEND] = IBV_WC_SEND,
	[IBV_WR_SEND_WITH_IMM] = IBV_WC_SEND,
	[IBV_WR_RDMA_READ] = IBV_WC_RDMA_READ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = IBV_WC_COMP_SWAP,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = IBV_WC_FETCH_ADD,
	[IBV_WR_LOCAL_INV] = IBV_WC_LOCAL_INV,
	[IBV_WR_BIND_MW] = IBV_WC_BIND_MW,
	[IBV_WR_SEND_WITH_INV] = IBV_WC_SEND,
	[IBV_WR_ATOMIC_WRITE] = IBV_WC_ATOMIC_WRITE,
};

/* cctx.status of a duplicate response on a lossy channel: ignored */
#define SV_CCTX_STALE UINT32_MAX

static const enum ibv_wc_status nak_status[] = {
	[SV_NAK_INV_REQ] = IBV_WC_REM_INV_REQ_ERR,
	[SV_NAK_REM_ACCESS] = IBV_WC_REM_ACCESS_ERR,
	[SV_NAK_REM_OP] = IBV_WC_REM_OP_ERR,
};

void sv_comp_reap(struct sv_qp *qp)
{
	while (qp->sq.head != qp->sq.next) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, qp->sq.head);

		if (w->state != SV_SWQE_DONE)
			break;
		if (w->status != IBV_WC_SUCCESS || qp->sq_sig_all ||
		    (w->send_flags & IBV_SEND_SIGNALED)) {
			struct ibv_wc *wc;

			if (w->status != IBV_WC_SUCCESS)
				qp->st->err_comps++;
			wc = sv_cq_slot(qp->scq);       /* filled in place (cq.c) */
			*wc = (struct ibv_wc){
				.wr_id = w->wr_id,
				.status = w->status,
				.opcode = wr_to_wc[w->opcode],
				.qp_num = qp->ibqp.qp_base.qp_num,
				.byte_len = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
					    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : w->length,
			};
			sv_cq_commit(qp->scq, wc, false);
		}
		qp->sq.head++;
	}
}

SV_NAME_TABLE(sv_swqe_state_name, enum sv_swqe_state, SV_SWQE_NSTATES,
	      [SV_SWQE_POSTED] = "POSTED", [SV_SWQE_SENT] = "SENT", [SV_SWQE_DONE] = "DONE")

static const char *const wr_name[] = {
	[IBV_WR_RDMA_WRITE] = "RDMA_WRITE", [IBV_WR_RDMA_WRITE_WITH_IMM] = "RDMA_WRITE_WITH_IMM",
	[IBV_WR_SEND] = "SEND", [IBV_WR_SEND_WITH_IMM] = "SEND_WITH_IMM",
	[IBV_WR_RDMA_READ] = "RDMA_READ", [IBV_WR_ATOMIC_CMP_AND_SWP] = "ATOMIC_CMP_AND_SWP",
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = "ATOMIC_FETCH_AND_ADD", [IBV_WR_LOCAL_INV] = "LOCAL_INV",
	[IBV_WR_BIND_MW] = "BIND_MW", [IBV_WR_SEND_WITH_INV] = "SEND_WITH_INV",
	[IBV_WR_ATOMIC_WRITE] = "ATOMIC_WRITE",
};

/* The requester's side of the rule a failed WQE broke (the responder's
 * log names its own: engine/resp.c). */
static void explain_fail(struct sv_qp *qp, const struct sv_swqe *w, enum ibv_wc_status st)
{
	const char *op = w->opcode < sizeof(wr_name) / sizeof(wr_name[0]) && wr_name[w->opcode] ?
			 wr_name[w->opcode] : "?";
	char why[200] = "";

	switch (st) {
	case IBV_WC_LOC_PROT_ERR:       /* READ and atomic results are written into */
		sv_sges_why(qp->ibqp.qp_base.pd, w->sge, w->num_sge,
			    w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			    w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? SV_LOCAL_WRITE : SV_LOCAL_READ,
			    why, sizeof(why));
		break;
	case IBV_WC_REM_ACCESS_ERR:
		snprintf(why, sizeof(why), "QP %#x refused rkey %#x for [%#" PRIx64 ", +%u)",
			 qp->peer_qpn, w->rkey, w->remote_addr, w->length);
		break;
	case IBV_WC_REM_INV_REQ_ERR:
		snprintf(why, sizeof(why), "QP %#x found it invalid (its access flags, its receive "
			 "size or the address; its log says which)", qp->peer_qpn);
		break;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		snprintf(why, sizeof(why), "QP %#x had no receive posted: %u RNR NAKs "
			 "(rnr_retry %u)", qp->peer_qpn, qp->rnr_retries, qp->attr.rnr_retry);
		break;
	case IBV_WC_RETRY_EXC_ERR:
		snprintf(why, sizeof(why), "no answer from QP %#x in %u tries of timeout %u: "
			 "its process or host is gone, or its QP is not ready",
			 qp->peer_qpn, qp->attr.retry_cnt + 1, qp->attr.timeout);
		break;
	default:
		break;
	}
	/* flushes are no error of their own; mw.c named the rule of these */
	if (st != IBV_WC_WR_FLUSH_ERR && st != IBV_WC_MW_BIND_ERR && st != IBV_WC_LOC_QP_OP_ERR)
		sv_qp_explain(qp, "%s wr_id %llu: %s%s%s", op, (unsigned long long)w->wr_id, why,
			      why[0] ? ": " : "", ibv_wc_status_str(st));
}

void sv_comp_fail(struct sv_qp *qp, struct sv_swqe *w, enum ibv_wc_status st)
{
	explain_fail(qp, w, st);
	/* everything before it is done or flushed; make it next in line */
	for (uint32_t i = qp->sq.head; sv_sq_at(&qp->sq, i) != w; i++) {
		struct sv_swqe *p = sv_sq_at(&qp->sq, i);

		if (p->state != SV_SWQE_DONE) {
			sv_swqe_done(qp, p, IBV_WC_WR_FLUSH_ERR);
		}
	}
	sv_swqe_done(qp, w, st);
	sv_qp_to_error(qp);      /* flushes the rest and reaps in order */
}

/* Find the in-flight WQE a response names by PSN. */
static bool find_wqe(struct sv_qp *qp, uint32_t psn, uint32_t *idx)
{
	for (uint32_t i = qp->sq.head; i != qp->sq.next; i++)
		if (sv_sq_at(&qp->sq, i)->psn_set && sv_sq_at(&qp->sq, i)->psn == psn) {
			*idx = i;
			return true;
		}
	return false;
}

static void progress_made(struct sv_qp *qp)
{
	/* the peer took a request sent after any rewind: by the channel's
	 * order, whatever went before it has arrived */
	qp->req_unsettled = false;
	qp->retries = 0;
	qp->rnr_retries = 0;
	qp->ack_deadline = 0;
	sv_req_arm_ack_timer(qp);
	sv_qp_timer_update(qp);
}

static void on_ack(struct sv_qp *qp, uint32_t psn)
{
	bool any = false;
	/* After a rewind, up to the tail: requests rewound (POSTED again, past
	 * sq.next) that the ACK covers were executed, and need not go again. */
	uint32_t end = qp->req_unsettled ? qp->sq.tail : qp->sq.next;

	for (uint32_t i = qp->sq.head; i != end; i++) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, i);

		if (!w->psn_set) {
			if (w->state == SV_SWQE_DONE)
				continue;  /* ran here (req.c run_local), took no PSN */
			break;             /* never sent, nor anything after it */
		}
		if (!sv_psn_le(w->psn, psn))
			break;
		if ((w->state == SV_SWQE_SENT || w->state == SV_SWQE_POSTED) &&
		    w->opcode != IBV_WR_RDMA_READ &&
		    w->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		    w->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
			sv_swqe_done(qp, w, IBV_WC_SUCCESS);
			any = true;
		}
	}
	while (qp->req_unsettled && qp->sq.next != qp->sq.tail &&
	       sv_sq_at(&qp->sq, qp->sq.next)->state == SV_SWQE_DONE)
		qp->sq.next++;
	if (any)
		progress_made(qp);
}

/* One transport retry (a timeout, a sequence NAK, a skipped response),
 * counted for softverbs status too: are the QP's retries used up? */
static bool retry_exhausted(struct sv_qp *qp)
{
	qp->st->retries++;
	return ++qp->retries > qp->attr.retry_cnt;
}

/* A PSN sequence error NAK (a lossy channel lost requests, resp.c): go
 * back to the NAKed request at once.  It counts as a transport retry, as
 * a timeout does (IB's rule as rxe keeps it), and any progress resets it. */
static void on_seq_nak(struct sv_qp *qp, uint32_t idx)
{
	sv_info("qp %u: sequence error NAK for psn %u (retry %u of %u)", qp->ibqp.qp_base.qp_num,
		sv_sq_at(&qp->sq, idx)->psn, qp->retries + 1, qp->attr.retry_cnt);
	if (retry_exhausted(qp)) {
		sv_comp_fail(qp, sv_sq_at(&qp->sq, idx), IBV_WC_RETRY_EXC_ERR);
		return;
	}
	sv_req_rewind(qp, idx);
	qp->ack_deadline = 0;
	sv_req_arm_ack_timer(qp);
}

static void on_nak(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	uint32_t idx;

	if (!find_wqe(qp, h->psn, &idx))
		return;
	/* the responder executes in order: everything before the NAKed PSN
	 * was carried out, and completes successfully */
	on_ack(qp, (h->psn - 1) & 0xffffff);
	/* a lossy channel's duplicate NAK, or one for a request sent again
	 * since: the rewind it asks for was made */
	if ((c->caps & SV_CAP_LOSSY) && (h->imm == SV_NAK_RNR || h->imm == SV_NAK_SEQ) &&
	    sv_sq_at(&qp->sq, idx)->state != SV_SWQE_SENT)
		return;
	if (h->imm == SV_NAK_SEQ) {
		on_seq_nak(qp, idx);
		return;
	}
	if (h->imm == SV_NAK_RNR) {
		qp->st->rnr_naks_rcvd++;
		if (qp->attr.rnr_retry != 7 && ++qp->rnr_retries > qp->attr.rnr_retry) {
			sv_comp_fail(qp, sv_sq_at(&qp->sq, idx), IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		/* Go back to the NAKed request once the peer's RNR timer expires
		 * (waiting first: the rewind may flush the request channel). */
		qp->rnr_wait = true;
		sv_req_rewind(qp, idx);
		qp->rnr_deadline = sv_now_ns() + sv_rnr_timer_ns((uint8_t)h->data0);
		qp->ack_deadline = 0;
		sv_qp_timer_update(qp);
		return;
	}
	sv_comp_fail(qp, sv_sq_at(&qp->sq, idx),
		     h->imm < sizeof(nak_status) / sizeof(nak_status[0]) && nak_status[h->imm] ?
		     nak_status[h->imm] : IBV_WC_REM_OP_ERR);
}

void sv_comp_begin(struct sv_qp *qp, struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	struct sv_swqe *w;
	size_t total;

	/* (an ACK or NAK leaves cctx alone: on a turned channel one may come
	 * in while a READ response is being read on the other) */
	if (h->opcode != SV_OP_READ_RESP && h->opcode != SV_OP_ATOMIC_RESP)
		return;
	qp->cctx.status = IBV_WC_SUCCESS;
	if (!find_wqe(qp, h->psn, &qp->cctx.idx) ||
	    ((c->caps & SV_CAP_LOSSY) && sv_sq_at(&qp->sq, qp->cctx.idx)->state != SV_SWQE_SENT)) {
		/* a lossy channel duplicates responses: its payload is discarded */
		if (c->caps & SV_CAP_LOSSY)
			qp->cctx.status = SV_CCTX_STALE;
		else
			sv_engine_protocol_error(c, "response to no request");
		return;
	}
	w = sv_sq_at(&qp->sq, qp->cctx.idx);
	if (h->opcode == SV_OP_READ_RESP) {
		if (w->opcode != IBV_WR_RDMA_READ || h->len != w->length) {
			sv_engine_protocol_error(c, "READ response does not match its request");
			return;
		}
		qp->cctx.status = sv_place_sges(&c->qc->place, qp->ibqp.qp_base.pd, w->sge,
						w->num_sge, SV_LOCAL_WRITE, &total);
	} else if (w->opcode != IBV_WR_ATOMIC_CMP_AND_SWP &&
		   w->opcode != IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sv_engine_protocol_error(c, "atomic response to another request");
	}
}

/* Responses come in PSN order: a READ or atomic before this one still
 * waiting lost its response on a lossy channel (an implied NAK).  Back to
 * it at once, counted as a retry (rxe does so): waiting for the timeout
 * would let the window of max_rd_atomic slide past it, beyond what the
 * responder keeps to answer its duplicate (resp.c). */
static void response_skipped(struct sv_qp *qp, uint32_t idx)
{
	for (uint32_t i = qp->sq.head; i != idx; i++) {
		if (sv_sq_at(&qp->sq, i)->state != SV_SWQE_SENT)
			continue;
		sv_info("qp %u: response to psn %u skipped: sent again (retry %u of %u)",
			qp->ibqp.qp_base.qp_num, sv_sq_at(&qp->sq, i)->psn, qp->retries + 1,
			qp->attr.retry_cnt);
		if (retry_exhausted(qp)) {
			sv_comp_fail(qp, sv_sq_at(&qp->sq, i), IBV_WC_RETRY_EXC_ERR);
			return;
		}
		sv_req_rewind(qp, i);
		return;
	}
}

static void finish_rd_atomic(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	struct sv_swqe *w = sv_sq_at(&qp->sq, qp->cctx.idx);
	enum ibv_wc_status st = qp->cctx.status;

	if (qp->cctx.status == SV_CCTX_STALE || w->state != SV_SWQE_SENT)
		return;                         /* a duplicate response */
	if (h->opcode == SV_OP_ATOMIC_RESP && st == IBV_WC_SUCCESS) {
		uint64_t *dst;

		sv_mr_rdlock();
		dst = sv_mr_translate(qp->ibqp.qp_base.pd, 0, w->sge[0].lkey, w->sge[0].addr, 8,
				      SV_LOCAL_WRITE);
		if (dst)
			memcpy(dst, &h->data0, 8);
		else
			st = IBV_WC_LOC_PROT_ERR;
		sv_mr_unlock();
	}
	if (qp->rd_outstanding)
		qp->rd_outstanding--;
	if (w->opcode == IBV_WR_RDMA_READ)
		qp->rd_bytes -= w->length < qp->rd_bytes ? w->length : qp->rd_bytes;
	/* a read/atomic response also acknowledges everything before it */
	on_ack(qp, (h->psn - 1) & 0xffffff);
	if (st != IBV_WC_SUCCESS) {
		sv_comp_fail(qp, w, st);
		return;
	}
	sv_swqe_done(qp, w, IBV_WC_SUCCESS);
	progress_made(qp);
	if (__builtin_expect(c->caps & SV_CAP_LOSSY, 0))
		response_skipped(qp, qp->cctx.idx);
}

static void after_response(struct sv_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	sv_comp_reap(qp);
	if (qp->kick_held)
		qp->kick_due = true;
	else
		sv_req_kick(qp);    /* room for more reads; rewound frames */
}

void sv_comp_end(struct sv_qp *qp, struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;

	switch (h->opcode) {
	case SV_OP_ACK:
		on_ack(qp, h->psn);
		break;
	case SV_OP_NAK:
		on_nak(qp, c, h);
		break;
	case SV_OP_READ_RESP:
		/* its buffer was deregistered while the data arrived */
		if (c->qc->place.revoked && qp->cctx.status == IBV_WC_SUCCESS)
			qp->cctx.status = IBV_WC_LOC_PROT_ERR;
		finish_rd_atomic(qp, c, h);
		break;
	case SV_OP_ATOMIC_RESP:
		finish_rd_atomic(qp, c, h);
		break;
	}
	after_response(qp);
}

/* A ring channel's ACK word (transport/shm/ring.h): a cumulative ACK that
 * came without a frame.  Taken after the frames before it, though order
 * does not matter: READs and atomics wait for their response frames, and a
 * NAK acknowledges what precedes it anyway. */
void sv_comp_ack_word(struct sv_qp *qp, struct sv_conn *c)
{
	uint32_t psn;

	if (!sv_chan_ack_take(c, &psn) || qp->attr.qp_state == IBV_QPS_ERR)
		return;
	SV_CAPTURE(sv_capture_ack_word(qp, psn, false));
	on_ack(qp, psn);
	after_response(qp);
}

void sv_comp_ack_carried(struct sv_qp *qp, uint32_t psn)
{
	struct sv_conn *rc;

	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	rc = sv_req_conn(qp);
	if (rc && rc->qc->tx_since_rx)                /* a response, for spinning pollers */
		__atomic_store_n(&rc->qc->tx_since_rx, 0, __ATOMIC_RELAXED);
	on_ack(qp, psn);
	/* Not sv_req_kick: an ACK frees no READ slot, and we are inside the
	 * inbound channel's receive loop (a kick may fail a WQE and close it). */
	sv_comp_reap(qp);
}

/* A connected peer that stays unreachable for the transport's whole retry
 * budget (timeout x (retry_cnt + 1)) is gone: the QP goes to ERR even with
 * nothing to send, so a survivor waiting only on receives learns of it
 * (they flush) instead of waiting forever.  timeout 0 waits forever. */
static void arm_gone_deadline(struct sv_qp *qp)
{
	uint64_t t = sv_qp_ack_timeout_ns(qp);

	if (t && !qp->gone_deadline && sv_qp_is_rc(qp))
		qp->gone_deadline = sv_now_ns() + t * (qp->attr.retry_cnt + 1);
}

/* Our HELLO went on a socket that is still connected: the peer's process
 * is alive (it holds the other end) but has not answered yet, busy with
 * thousands of channel handshakes at once (docs/measurements.md, 'HELLO
 * patience').  An HCA would have answered at once, so that is no reason
 * to fail; the peer gets SV_HELLO_WAITS budgets more, a bound in case what
 * holds the socket is not the process we wanted (a forked child). */
#define SV_HELLO_WAITS 8

static bool hello_busy(struct sv_qp *qp)
{
	const struct sv_conn *c = qp->out;

	if (qp->link != SV_LINK_HELLO || !c || !c->connected || c->dead || c->closed ||
	    qp->hello_waits >= SV_HELLO_WAITS)
		return false;
	qp->hello_waits++;
	sv_info("qp %u: no answer to our HELLO within the retry budget; its process is alive: "
		"waiting once more (%u of %u)", qp->ibqp.qp_base.qp_num, qp->hello_waits,
		SV_HELLO_WAITS);
	return true;
}

void sv_comp_link_lost(struct sv_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_ERR || qp->attr.qp_state == IBV_QPS_RESET)
		return;
	sv_info("qp %u: link to peer lost", qp->ibqp.qp_base.qp_num);
	/* Only a peer we were connected to can be gone; one not ready yet
	 * (HELLO_NAK: its QP is still in RESET) is retried until it is. */
	if (qp->link == SV_LINK_UP)
		arm_gone_deadline(qp);
	/* UC: what was sent is done.  Requests that went on a turned inbound
	 * channel, still up, are not lost: the peer answers them there. */
	if (sv_qp_is_rc(qp) &&
	    !(qp->req_turned && qp->in && !qp->in->dead && !qp->in->closed))
		sv_req_rewind(qp, qp->sq.head);
	sv_req_link_failed(qp);
}

static void ack_timeout(struct sv_qp *qp, uint64_t now)
{
	qp->ack_deadline = 0;
	if (qp->sq.head == qp->sq.tail)
		return;
	/* Nothing went on the wire yet: the channel is still being set up,
	 * or set up again after a handshake the busy peer dropped (a NIC has
	 * no such step; 1,000 QPs posting at once wait for 2,000 channel
	 * handshakes, qp_scale).  Not a transport retry; the setup gets the
	 * whole retry budget once more, then the QP fails as one whose peer
	 * is gone. */
	if (qp->link != SV_LINK_UP && qp->sq.next == qp->sq.head) {
		arm_gone_deadline(qp);
		sv_req_arm_ack_timer(qp);
		return;
	}
	sv_info("qp %u: ack timeout (retry %u of %u), head %u next %u tail %u link %s",
		qp->ibqp.qp_base.qp_num, qp->retries + 1, qp->attr.retry_cnt, qp->sq.head,
		qp->sq.next, qp->sq.tail, sv_link_state_name(qp->link));
	if (retry_exhausted(qp)) {
		sv_comp_fail(qp, sv_sq_at(&qp->sq, qp->sq.head), IBV_WC_RETRY_EXC_ERR);
		return;
	}
	sv_req_arm_ack_timer(qp);
	/* Our channels do not lose frames, so only the link's loss asks
	 * for them again (sv_comp_link_lost); a lossy one's may be gone:
	 * go back to the oldest unacknowledged request (go-back-N). */
	if (__builtin_expect(qp->link == SV_LINK_UP && sv_req_conn(qp) &&
			     (sv_req_conn(qp)->caps & SV_CAP_LOSSY), 0)) {
		sv_req_rewind(qp, qp->sq.head);
		sv_req_kick(qp);
		/* the next timeout counts from the retransmission */
		qp->ack_deadline = 0;
		sv_req_arm_ack_timer(qp);
	}
}


/* The backstop of held ACKs (xmit.c): one held since the last look goes
 * (the application went elsewhere); while the ping-pong goes on, holds
 * come and go between two looks and the timer only looks again. */
static void held_ack_timer(struct sv_qp *qp)
{
	uint32_t takes = (qp->in ? qp->in->qc->ack_takes : 0) + (qp->out ? qp->out->qc->ack_takes : 0);
	bool again = false;

	qp->ack_held_deadline = 0;
	/* the peer's requests come in on `in`, or on `out` if it turned it */
	for (int i = 0; i < 2; i++) {
		struct sv_conn *c = i ? qp->out : qp->in;

		if (!c || (!c->qc->ack_held && !c->qc->ack_carriable))
			continue;
		if (takes == qp->ack_held_takes || !c->qc->ack_held) {
			sv_xmit_ack_release(c);
			sv_xmit_flush(c);
			continue;
		}
		again = true;
	}
	if (!again)
		return;
	qp->ack_held_takes = takes;
	qp->ack_held_deadline = sv_now_ns() + SV_ACK_HOLD_NS;
}

/* The QP's deadlines, listed in this one place. */
static uint64_t qp_next_deadline(const struct sv_qp *qp)
{
	uint64_t d = 0;
	const uint64_t c[] = { qp->ack_deadline, qp->rnr_deadline, qp->link_deadline,
			       qp->gone_deadline, qp->ack_held_deadline, qp->rnr_hold_deadline,
			       qp->stat_deadline };

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i] && (!d || c[i] < d))
			d = c[i];
	return d;
}

void sv_qp_timer_update(struct sv_qp *qp)
{
	sv_node_timer_set(to_sctx(qp->ibqp.qp_base.context)->node, &qp->timer,
			  qp_next_deadline(qp));
}

/* The held ACK's look (ack_held_deadline) stays: it releases what the
 * channels still hold. */
void sv_qp_timers_stop(struct sv_qp *qp)
{
	qp->ack_deadline = qp->rnr_deadline = qp->link_deadline = qp->gone_deadline = 0;
	qp->rnr_hold_deadline = 0;
}

void sv_engine_on_timer(void *owner, uint64_t now)
{
	struct sv_qp *qp = owner;
	enum ibv_qp_state s;

	sv_qlock_lock(&qp->lock);
	s = qp->attr.qp_state;
	if (qp->rnr_deadline && now >= qp->rnr_deadline) {
		qp->rnr_deadline = 0;
		qp->rnr_wait = false;
		sv_req_kick(qp);
	}
	if (qp->link_deadline && now >= qp->link_deadline) {
		qp->link_deadline = 0;
		if (qp->link == SV_LINK_BACKOFF && s >= IBV_QPS_RTR && s != IBV_QPS_ERR)
			sv_req_start_link(qp);
	}
	if (qp->gone_deadline && now >= qp->gone_deadline) {
		qp->gone_deadline = 0;
		if (hello_busy(qp)) {
			arm_gone_deadline(qp);
		} else if (qp->link != SV_LINK_UP && s != IBV_QPS_ERR && s != IBV_QPS_RESET) {
			sv_info("qp %u: peer unreachable for the whole retry budget",
				qp->ibqp.qp_base.qp_num);
			/* work in flight fails as the transport's retries would */
			if (qp->sq.head != qp->sq.tail)
				sv_comp_fail(qp, sv_sq_at(&qp->sq, qp->sq.head), IBV_WC_RETRY_EXC_ERR);
			else
				sv_qp_to_error(qp);
		}
	}
	if (qp->ack_held_deadline && now >= qp->ack_held_deadline)
		held_ack_timer(qp);
	if (qp->rnr_hold_deadline && now >= qp->rnr_hold_deadline)
		sv_resp_rnr_hold_timer(qp, now);
	if (qp->stat_deadline && now >= qp->stat_deadline) {
		qp->stat_deadline = 0;
		sv_stat_flush(qp);
	}
	if (qp->ack_deadline && now >= qp->ack_deadline && qp->attr.qp_state != IBV_QPS_ERR) {
		/* The ACK may be waiting, unread, for a poller that spun on
		 * the channel and went away: a NIC would have taken it. */
		struct sv_conn *c = sv_req_conn(qp);

		if (c && c->connected && !c->closed && !c->dead) {
			sv_rx_process(c);
			if (c->dead && (c == qp->out || c == qp->in))
				sv_conn_lost(c);
		}
		if (qp->ack_deadline && now >= qp->ack_deadline &&
		    qp->attr.qp_state != IBV_QPS_ERR)
			ack_timeout(qp, now);
	}
	sv_qp_timer_update(qp);
	sv_qlock_unlock(&qp->lock);
}
