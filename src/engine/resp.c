/*
 * The responder: executes requests arriving on a QP's inbound channel, in
 * PSN order, against this process's registered memory; answers RC requests.
 * Every key, right and bound is checked before a byte is placed.
 *
 * sv_resp_begin() runs when a header is complete and decides where the
 * payload goes; sv_resp_end() runs when the payload is placed and completes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"
#include "util/log.h"
#include "util/time.h"
#include "util/tsan.h"

static const char *const nak_name[] = {
	[SV_NAK_RNR] = "RNR", [SV_NAK_INV_REQ] = "invalid request",
	[SV_NAK_REM_ACCESS] = "remote access", [SV_NAK_REM_OP] = "remote operation",
	[SV_NAK_SEQ] = "PSN sequence error",
};

/* Decide a fatal error: RC answers with a NAK and both ends go to ERR;
 * UC drops the message silently.  `why` names the rule it broke. */
static __attribute__((cold)) void resp_fail(struct sv_qp *qp, enum sv_nak nak,
					     enum ibv_wc_status st, const char *why)
{
	const struct sv_conn *c = qp->rctx.conn;
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	const struct sv_opinfo *oi = sv_op_info(h->opcode);

	sv_qp_explain(qp, "%s psn %u from QP %#x: %s: %s%s%s", oi ? oi->name : "?", h->psn,
		      h->src_qpn, why, sv_qp_is_rc(qp) ? "NAK " : "dropped",
		      sv_qp_is_rc(qp) ? nak_name[nak] : "",
		      qp->rctx.have_wqe ? ", the receive completes with an error" : "");
	qp->rctx.drop = true;
	qp->rctx.ack = false;
	if (qp->rctx.have_wqe)
		qp->rctx.status = st;
	if (sv_qp_is_rc(qp))
		qp->rctx.nak = nak;
}

/* Why the responder refuses an access to [va, +len) through `rkey`. */
static __attribute__((cold)) void access_fail(struct sv_qp *qp, uint32_t rkey, uint64_t va,
					       uint64_t len, enum sv_access_dir dir)
{
	char why[200];

	sv_mr_why(qp->rctx.pd, qp->ibqp.qp_base.qp_num, rkey, va, len, dir, why, sizeof(why));
	resp_fail(qp, SV_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
		  why[0] ? why : "its memory went away meanwhile");
}

/* Why the consumed receive WQE cannot take the message. */
static __attribute__((cold)) void receive_fail(struct sv_qp *qp, uint32_t len, size_t total,
						bool prot)
{
	const struct sv_rwqe *w = qp->rctx.wqe;
	char why[200], sge[180];

	if (prot) {
		sv_sges_why(qp->rctx.pd, w->sge, w->num_sge, SV_LOCAL_WRITE, sge, sizeof(sge));
		snprintf(why, sizeof(why), "receive wr_id %llu %s", (unsigned long long)w->wr_id,
			 sge[0] ? sge : "lost its memory meanwhile");
		resp_fail(qp, SV_NAK_REM_OP, IBV_WC_LOC_PROT_ERR, why);
		return;
	}
	snprintf(why, sizeof(why), "the message is %u bytes, receive wr_id %llu holds %zu",
		 len, (unsigned long long)w->wr_id, total);
	resp_fail(qp, SV_NAK_INV_REQ, IBV_WC_LOC_LEN_ERR, why);
}

static bool access_allowed(struct sv_qp *qp, uint8_t op)
{
	unsigned int f = qp->attr.qp_access_flags;

	switch (op) {
	case SV_OP_WRITE:
	case SV_OP_WRITE_IMM:
	case SV_OP_ATOMIC_WRITE:
		return f & IBV_ACCESS_REMOTE_WRITE;
	case SV_OP_READ_REQ:
		return f & IBV_ACCESS_REMOTE_READ;
	case SV_OP_CMP_SWP:
	case SV_OP_FETCH_ADD:
		return f & IBV_ACCESS_REMOTE_ATOMIC;
	default:
		return true;
	}
}

/* Can the consumed receive WQE (translated: `st`, `total` bytes) take a
 * `len`-byte message?  If not, the request fails. */
static bool rwqe_fits(struct sv_qp *qp, enum ibv_wc_status st, size_t total, uint32_t len)
{
	if (st != IBV_WC_SUCCESS || len > total) {
		receive_fail(qp, len, total, st != IBV_WC_SUCCESS);
		return false;
	}
	return true;
}

/* Scatter a message from the channel into the consumed receive WQE. */
static void place_into_rwqe(struct sv_qp *qp, struct sv_conn *c, uint32_t len)
{
	struct sv_rwqe *w = qp->rctx.wqe;
	enum ibv_wc_status st;
	size_t total;

	st = sv_place_sges(&c->qc->place, qp->rctx.pd, w->sge, w->num_sge, SV_LOCAL_WRITE,
			   &total);
	if (!rwqe_fits(qp, st, total, len))
		c->qc->place.discard = true;
}

/* A pulled SEND: the frame carries (addr, len) descriptors; the data is read
 * from the requester at the end, straight into the receive buffer.  Only
 * on an inbound channel: an outbound one's descriptor array is its own
 * requests' (engine.h). */
static bool pull_valid(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	return c->cma_ok && !c->outbound && qp->ibqp.qp_base.qp_type == IBV_QPT_RC && h->len &&
	       h->len % sizeof(struct sv_wire_pull) == 0 &&
	       h->len / sizeof(struct sv_wire_pull) <= SV_WIRE_MAX_SGE && h->rlen;
}

struct sv_pulled *sv_pulled_get(struct sv_conn *c)
{
	if (!c->qc->pull)
		c->qc->pull = malloc(sizeof(*c->qc->pull));
	return c->qc->pull;
}

/* The receive WQE's segments, translated with the MR lock held by the caller. */
static enum ibv_wc_status pull_dst(struct sv_qp *qp, struct sv_pulled *p, size_t *total)
{
	struct sv_rwqe *w = qp->rctx.wqe;

	return sv_sges_translate(qp->rctx.pd, w->sge, w->num_sge, SV_LOCAL_WRITE,
				 p->dst, &p->ndst, total);
}

static void pull_begin(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	struct sv_pulled *p = sv_pulled_get(c);
	enum ibv_wc_status st;
	size_t total;

	if (!p) {
		resp_fail(qp, SV_NAK_REM_OP, IBV_WC_LOC_QP_OP_ERR,
			  "no memory for a pulled SEND's descriptors");
		return;
	}
	sv_mr_rdlock();
	st = pull_dst(qp, p, &total);
	sv_mr_unlock();
	if (!rwqe_fits(qp, st, total, h->rlen))
		return;
	qp->rctx.pull = true;
	c->qc->place.seg[0].iov_base = p->desc;
	c->qc->place.seg[0].iov_len = h->len;
	c->qc->place.nseg = 1;
	c->qc->place.discard = false;
}

/* Copy the pulled message into the receive buffer, translated again with
 * the MR lock held for the copy (one memcpy or process_vm_readv, neither
 * blocks): its MR may have gone since the header. */
static ssize_t pull_copy(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h,
			 int n)
{
	struct sv_pulled *p = c->qc->pull;
	size_t total;
	ssize_t r;

	sv_mr_rdlock();
	if (pull_dst(qp, p, &total) != IBV_WC_SUCCESS || total < h->rlen) {
		sv_mr_unlock();
		receive_fail(qp, h->rlen, total, true);
		return 0;
	}
	r = sv_chan_pull(c, p->desc, n, p->dst, p->ndst, h->rlen);
	if (r >= 0)
		SV_CAPTURE(sv_capture_pulled(qp, p->dst, p->ndst));
	sv_mr_unlock();
	return r;
}

static void pull_end(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	int n = h->len / sizeof(struct sv_wire_pull);
	uint64_t sum = 0;
	ssize_t r;

	for (int i = 0; i < n; i++)
		sum += c->qc->pull->desc[i].len;
	r = sum == h->rlen ? pull_copy(qp, c, h, n) : -EINVAL;
	if (r < 0) {
		/* the requester's own memory failed: its request was invalid */
		qp->rctx.nak = SV_NAK_REM_OP;
		qp->rctx.status = IBV_WC_LOC_PROT_ERR;
		qp->rctx.ack = false;
	}
}

static bool take_rwqe(struct sv_qp *qp)
{
	if (!sv_qp_take_rwqe(qp, qp->rctx.wqe))
		return false;
	sv_resp_publish_later(qp, qp->rq.head + SV_MIRROR_N - 1);   /* the one the window reached */
	qp->rctx.have_wqe = true;
	return true;
}

/* A placed SEND's receive: the next one, which it must name
 * (engine/placed.c). */
static bool take_placed(struct sv_qp *qp, const struct sv_wire_hdr *h)
{
	if (!sv_resp_placed_ok(qp, h) || !take_rwqe(qp))
		return false;
	SV_CAPTURE(sv_capture_placed_rx(qp, h));
	return true;
}

/* The READ response carries our memory: it is sent later, maybe in pieces,
 * and each piece checks the translation again (xmit.c). */
static void exec_read(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	struct ibv_pd *pd = qp->rctx.pd;
	struct sv_txframe *f;
	uint32_t epoch;
	void *src;

	sv_mr_rdlock();
	src = sv_mr_translate(pd, qp->ibqp.qp_base.qp_num, h->rkey, h->va, h->rlen, SV_REMOTE_READ);
	epoch = sv_mr_epoch;
	sv_mr_unlock();
	if (!src) {
		access_fail(qp, h->rkey, h->va, h->rlen, SV_REMOTE_READ);
		return;
	}
	f = sv_xmit_rd_resp_slot(c, h->psn);
	if (!f)
		return;         /* resp_room() kept one free: cannot happen */
	sv_frame_init(f, SV_OP_READ_RESP, qp->peer_qpn, qp->ibqp.qp_base.qp_num, h->psn);
	f->awaited = h->flags & SV_WF_LONE;
	sv_frame_add(f, src, h->rlen);
	if (h->rlen) {
		f->mr_pd = pd;
		f->mr_qpn = qp->ibqp.qp_base.qp_num;
		f->mr_key = h->rkey;
		f->mr_va = h->va;
		f->mr_epoch = epoch;
	}
	sv_xmit_resp_commit(c, f);
}

/* Atomics run on this process's memory with CPU atomics, as same-host
 * initiators' direct atomics do on the same memory (they run them only on
 * memory they map: engine/req.c), so they are atomic with respect to every
 * other atomic on this device.  False: no such memory. */
static enum sv_access_dir atomic_right(const struct sv_wire_hdr *h)
{
	/* an atomic write (IBTA 1.5) needs the write right, as a WRITE */
	return h->opcode == SV_OP_ATOMIC_WRITE ? SV_REMOTE_WRITE : SV_REMOTE_ATOMIC;
}

static bool atomic_op(struct sv_qp *qp, const struct sv_wire_hdr *h, uint64_t *orig)
{
	uint64_t *p;

	sv_mr_rdlock();
	p = sv_mr_translate(qp->rctx.pd, qp->ibqp.qp_base.qp_num, h->rkey, h->va, 8,
			    atomic_right(h));
	if (p) {
		sv_dma_begin();     /* the application's memory, as a NIC's atomic (util/tsan.h) */
		if (h->opcode == SV_OP_CMP_SWP) {
			*orig = h->data1;
			__atomic_compare_exchange_n(p, orig, h->data0, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		} else if (h->opcode == SV_OP_FETCH_ADD) {
			*orig = __atomic_fetch_add(p, h->data0, __ATOMIC_SEQ_CST);
		} else {
			__atomic_store_n(p, h->data0, __ATOMIC_SEQ_CST);   /* one 8-byte store */
		}
		sv_dma_end();
	}
	sv_mr_unlock();
	return p;
}

static void atomic_respond(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h,
			   uint64_t orig)
{
	struct sv_txframe *f = sv_xmit_rd_resp_slot(c, h->psn);

	if (!f)
		return;         /* resp_room() kept one free: cannot happen */
	sv_frame_init(f, SV_OP_ATOMIC_RESP, qp->peer_qpn, qp->ibqp.qp_base.qp_num, h->psn);
	f->awaited = h->flags & SV_WF_LONE;
	f->hdr.data0 = orig;
	sv_xmit_resp_commit(c, f);
}

static void exec_atomic(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	uint64_t orig = 0;

	if (h->va & 7) {
		resp_fail(qp, SV_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR,
			  "an atomic's address must be 8-byte aligned");
		return;
	}
	if (!atomic_op(qp, h, &orig)) {
		access_fail(qp, h->rkey, h->va, 8, atomic_right(h));
		return;
	}
	if (h->opcode == SV_OP_ATOMIC_WRITE)
		return;             /* acknowledged as a WRITE is (sv_resp_end) */
	/* (without memory a duplicate gets nothing, as one too old to be kept) */
	if (!qp->atomic_seen)
		qp->atomic_seen = calloc(SV_ATOMIC_SEEN, sizeof(*qp->atomic_seen));
	if (qp->atomic_seen) {
		qp->atomic_seen[qp->atomic_seen_next].psn = h->psn;
		qp->atomic_seen[qp->atomic_seen_next].orig = orig;
		qp->atomic_seen[qp->atomic_seen_next].valid = true;
		qp->atomic_seen_next = (qp->atomic_seen_next + 1) % SV_ATOMIC_SEEN;
	}
	atomic_respond(qp, c, h, orig);
}

/* A duplicate atomic (its response was lost): the result it had, if still
 * kept; an older one gets nothing, as its requester gave up long ago. */
static void atomic_again(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	for (int i = 0; qp->atomic_seen && i < SV_ATOMIC_SEEN; i++)
		if (qp->atomic_seen[i].valid && qp->atomic_seen[i].psn == h->psn) {
			atomic_respond(qp, c, h, qp->atomic_seen[i].orig);
			return;
		}
}

SV_NAME_TABLE(sv_resp_state_name, enum sv_resp_state, SV_RESP_NSTATES,
	      [SV_RESP_OPEN] = "OPEN", [SV_RESP_HOLDING] = "HOLDING",
	      [SV_RESP_HOLD_OVER] = "HOLD_OVER", [SV_RESP_NAKED] = "NAKED",
	      [SV_RESP_SEQ_NAKED] = "SEQ_NAKED")

/* QP lock held.  Every change is traced by name. */
void sv_resp_set(struct sv_qp *qp, enum sv_resp_state s)
{
	if (qp->resp == s)
		return;
	sv_trace("qp %u: responder %s -> %s", qp->ibqp.qp_base.qp_num,
		 sv_resp_state_name(qp->resp), sv_resp_state_name(s));
	qp->resp = s;
}

/* UC on a lossy channel: a duplicate (behind epsn) is dropped, a gap
 * accepted (UC loses messages, it does not repeat them). */
static bool uc_psn_ok(struct sv_qp *qp, const struct sv_wire_hdr *h)
{
	if (h->psn != qp->epsn && sv_psn_le(h->psn, qp->epsn))
		return false;
	qp->epsn = (h->psn + 1) & 0xffffff;
	return true;
}

/* PSN check for RC.  Returns false if the request is to be discarded. */
static bool psn_ok(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	if (!sv_qp_is_rc(qp))
		return !(c->caps & SV_CAP_LOSSY) || uc_psn_ok(qp, h);
	if (h->psn == qp->epsn) {
		if (qp->resp == SV_RESP_NAKED || qp->resp == SV_RESP_SEQ_NAKED)
			sv_resp_set(qp, SV_RESP_OPEN);
		return true;
	}
	sv_trace("qp %u: request psn %u, expected %u (%s)", qp->ibqp.qp_base.qp_num, h->psn,
		 qp->epsn, sv_resp_state_name(qp->resp));
	if (qp->resp != SV_RESP_NAKED && sv_psn_le(h->psn, qp->epsn)) {
		/* Duplicate of something already executed: answer again. */
		qp->rctx.ack = true;
		if (h->opcode == SV_OP_READ_REQ && qp->rctx.pd)
			exec_read(qp, c, h);
		else if (h->opcode == SV_OP_CMP_SWP || h->opcode == SV_OP_FETCH_ADD)
			atomic_again(qp, c, h);
		return false;
	}
	/* Ahead of epsn: requests were lost on the way (only a lossy channel
	 * loses any).  One NAK per gap (IB's class B error): then new
	 * requests are dropped until epsn comes again. */
	if ((c->caps & SV_CAP_LOSSY) && qp->resp == SV_RESP_OPEN && !sv_psn_le(h->psn, qp->epsn)) {
		sv_info("qp %u: request psn %u, expected %u: sequence error NAK",
			qp->ibqp.qp_base.qp_num, h->psn, qp->epsn);
		sv_resp_set(qp, SV_RESP_SEQ_NAKED);
		sv_xmit_nak(c, qp, qp->epsn, SV_NAK_SEQ, 0);
	}
	return false;
}

/*
 * A SEND that finds no receive on a ring channel waits for one, up to the
 * QP's RNR timer, before it is NAKed.  Kept in the ring it costs nothing,
 * while an RNR NAK costs the requester a whole RNR timer.  Benchmarks meet
 * it, not only broken programs: the progress thread can take a receive
 * queue's worth of SENDs before the application first polls (perftest's
 * ib_send_bw server, after its handshake; docs/measurements.md, 'RNR
 * hold').  A hold ends as soon as the receive is posted, not at a timer
 * boundary.  The requester sees what a NIC whose receiver posted just in
 * time would show; a receiver that does not post within the timer is
 * NAKed as before (each RNR retry then takes two timers).  Not on
 * sockets: a turned TCP channel carries our responses too, which must not
 * wait.  Not with an SRQ, whose posts are not the QP's.
 *
 * No system call on the way: the channel reports no input while the SEND
 * waits (SV_RX_HELD), a post makes it READY and the next poll takes it; a
 * receiver that does not poll has it taken by the timer.  The timer is
 * armed once per T, not per hold: a receiver that keeps its queue empty
 * (one receive posted per completion, a backlog in the ring) holds once
 * per message.
 */
static bool rnr_hold(struct sv_qp *qp, struct sv_conn *c)
{
	if (!(c->caps & SV_CAP_HOLD) || !sv_qp_is_rc(qp) || qp->srq ||
	    qp->resp == SV_RESP_HOLD_OVER)
		return false;
	if (c->qc->rx_state != SV_RX_HELD)
		qp->rnr_hold_since = sv_now_ns();
	sv_resp_set(qp, SV_RESP_HOLDING);
	sv_rx_set(c, SV_RX_HELD);
	if (!qp->rnr_hold_deadline) {
		qp->rnr_hold_deadline = qp->rnr_hold_since +
					 sv_rnr_timer_ns(qp->attr.min_rnr_timer);
		sv_qp_timer_update(qp);
	}
	return true;
}

/* A receive was posted: the held SEND, if any, is input again. */
void sv_resp_rnr_resume(struct sv_qp *qp)
{
	if (qp->in && qp->in->qc->rx_state == SV_RX_HELD)
		sv_rx_set(qp->in, SV_RX_READY);
}

/* Progress thread, QP lock held.  A SEND held for the whole RNR timer gets
 * its NAK; one posted for but not taken yet (no poller) is taken now. */
void sv_resp_rnr_hold_timer(struct sv_qp *qp, uint64_t now)
{
	struct sv_conn *c = qp->in;
	uint64_t t = sv_rnr_timer_ns(qp->attr.min_rnr_timer);

	qp->rnr_hold_deadline = 0;
	if (!c || (c->qc->rx_state != SV_RX_HELD && c->qc->rx_state != SV_RX_READY) ||
	    c->closed || c->dead)
		return;
	if (c->qc->rx_state == SV_RX_HELD) {
		if (now - qp->rnr_hold_since < t) {     /* a later hold: its own time */
			qp->rnr_hold_deadline = qp->rnr_hold_since + t;
			return;
		}
		sv_resp_set(qp, SV_RESP_HOLD_OVER);
		sv_rx_set(c, SV_RX_READY);
	}
	sv_rx_serve(c);      /* a held SEND is on a ring channel */
}

/* An XRC target holds the SRQ of its last request (and so its CQ) until
 * the next begins, the request ends or the QP leaves the wire. */
void sv_resp_xrc_release(struct sv_qp *qp)
{
	if (!sv_qp_is_xrc_tgt(qp))
		return;
	if (qp->srq)
		sv_xrc_srq_put(qp->srq);
	qp->srq = NULL;
	qp->rcq = NULL;
}

/* An XRC target's request goes to the SRQ it names, of the target's
 * domain (verbs/xrc.c): that SRQ's receives, PD and CQ serve it.  None:
 * no PD, and the request fails as an invalid one. */
static void xrc_target(struct sv_qp *qp, uint32_t srqn)
{
	struct sv_srq *srq;

	sv_resp_xrc_release(qp);           /* a request that ended abnormally */
	srq = sv_xrc_target_srq(qp, srqn);
	qp->srq = srq;
	qp->rcq = srq ? srq->cq : NULL;
	qp->rctx.pd = srq ? srq->ibsrq.pd : NULL;
}

/* ... and once it ends, its completion is in that CQ and the target
 * keeps no pointer to an SRQ or CQ the application may destroy. */
static void xrc_target_done(struct sv_qp *qp, struct sv_conn *c)
{
	if (!sv_qp_is_xrc_tgt(qp))
		return;
	if (c->qc->ndone)
		sv_resp_batch_end(qp, c);
	sv_resp_xrc_release(qp);
}

void sv_resp_begin(struct sv_qp *qp, struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	const struct sv_opinfo *oi = sv_op_info(h->opcode);
	uint32_t qpt = sv_qp_is_rc(qp) ? SV_QPT_RC : SV_QPT_UC;

	memset(&qp->rctx, 0, offsetof(typeof(qp->rctx), wqe));
	qp->rctx.conn = c;
	qp->rctx.drop = true;
	qp->rctx.pd = qp->ibqp.qp_base.pd;
	if (qp->attr.qp_state < IBV_QPS_RTR || qp->attr.qp_state == IBV_QPS_ERR)
		return;
	if (h->src_qpn != qp->attr.dest_qp_num) {
		sv_engine_protocol_error(c, "request from a QP that is not our peer");
		return;
	}
	if (sv_qp_is_xrc_tgt(qp))
		xrc_target(qp, h->qkey);
	if ((h->flags & SV_WF_PULL) && !pull_valid(qp, c, h)) {
		sv_engine_protocol_error(c, "invalid pulled SEND");
		return;
	}
	/* a placed SEND took no PSN and wants no ACK */
	qp->rctx.placed = oi->flags & SV_OPF_PLACED;
	if (!qp->rctx.placed && !psn_ok(qp, c, h))
		return;
	qp->rctx.drop = false;
	qp->rctx.ack = sv_qp_is_rc(qp) && !qp->rctx.placed;
	if (qp->attr.qp_state == IBV_QPS_RTR && !qp->comm_est_sent) {
		qp->comm_est_sent = true;
		sv_qp_async(qp, IBV_EVENT_COMM_EST);
	}
	if (!(oi->qpts & qpt) || !access_allowed(qp, h->opcode) || !qp->rctx.pd) {
		resp_fail(qp, SV_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR,
			  !(oi->qpts & qpt) ? "not an operation of this QP type" :
			  !qp->rctx.pd ? "the XRC SRQ number names no SRQ of the target's domain" :
			  "the QP's access flags do not allow it");
		return;
	}
	if (qp->rctx.placed) {
		if (!take_placed(qp, h))
			sv_engine_protocol_error(c, "a placed SEND names a receive that is not the next");
		return;
	}
	if ((oi->flags & SV_OPF_RECV) && !take_rwqe(qp)) {
		if (rnr_hold(qp, c))
			return;
		qp->rctx.drop = true;
		qp->rctx.ack = false;
		if (sv_qp_is_rc(qp)) {
			/* Receiver not ready: NAK and drop until this PSN comes again. */
			sv_resp_set(qp, SV_RESP_NAKED);
			sv_xmit_nak(c, qp, h->psn, SV_NAK_RNR, qp->attr.min_rnr_timer);
			qp->st->rnr_naks_sent++;
		}
		return;
	}
	if (qp->resp != SV_RESP_OPEN)
		sv_resp_set(qp, SV_RESP_OPEN);
	switch (h->opcode) {
	case SV_OP_SEND:
	case SV_OP_SEND_IMM:
	case SV_OP_SEND_INV:
		if (h->flags & SV_WF_PULL)
			pull_begin(qp, c, h);
		else
			place_into_rwqe(qp, c, h->len);
		break;
	case SV_OP_WRITE:
	case SV_OP_WRITE_IMM:
		if (!sv_place_mr(&c->qc->place, qp->rctx.pd, qp->ibqp.qp_base.qp_num,
				 h->rkey, h->va, h->len, SV_REMOTE_WRITE))
			access_fail(qp, h->rkey, h->va, h->len, SV_REMOTE_WRITE);
		break;
	case SV_OP_READ_REQ:
		exec_read(qp, c, h);
		break;
	case SV_OP_CMP_SWP:
	case SV_OP_FETCH_ADD:
	case SV_OP_ATOMIC_WRITE:
		exec_atomic(qp, c, h);
		break;
	}
}

/* Acknowledgements first, then the receive completions they cover: an
 * application that exits right after polling its last receive must not
 * leave the sender without its ACK (a NIC acknowledges on arrival). */
void sv_resp_batch_end(struct sv_qp *qp, struct sv_conn *c)
{
	sv_xmit_flush(c);
	sv_resp_push_done(qp, c);
}

static_assert(IBV_WC_RECV_RDMA_WITH_IMM <= UINT8_MAX && IBV_WC_WITH_INV <= UINT8_MAX,
	      "a waiting completion keeps its opcode and flags in a byte each");

static void push_done(struct sv_qp *qp, const struct sv_done_wc *d)
{
	struct ibv_wc *wc = sv_cq_slot(qp->rcq);

	*wc = (struct ibv_wc){
		.wr_id = d->wr_id,
		.status = d->status,
		.opcode = d->opcode,
		.byte_len = d->byte_len,
		.imm_data = d->imm,
		.qp_num = qp->ibqp.qp_base.qp_num,
		.src_qp = qp->attr.dest_qp_num,
		.wc_flags = d->wc_flags,
		.slid = qp->attr.ah_attr.dlid,
		.pkey_index = 0,
	};
	sv_cq_commit(qp->rcq, wc, d->solicited);
}

void sv_resp_push_done(struct sv_qp *qp, struct sv_conn *c)
{
	for (int i = 0; i < c->qc->ndone; i++)
		push_done(qp, &c->qc->done->wc[i]);
	c->qc->ndone = 0;
}

/* (in the batch's array: see sv_cq_slot) */
static void recv_done_fill(struct sv_done_wc *d, const struct sv_qp *qp,
			   const struct sv_wire_hdr *h)
{
	d->wr_id = qp->rctx.wqe->wr_id;
	d->status = qp->rctx.status;
	d->opcode = h->opcode == SV_OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	d->byte_len = qp->rctx.pull || qp->rctx.placed ? h->rlen : h->len;
	d->solicited = h->flags & SV_WF_SOLICITED;
	d->wc_flags = qp->attr.ah_attr.is_global ? IBV_WC_GRH : 0;
	d->imm = 0;
	if (sv_opinfo[h->opcode].flags & SV_OPF_IMM) {
		d->wc_flags |= IBV_WC_WITH_IMM;
		d->imm = h->imm;
	}
	if (h->opcode == SV_OP_SEND_INV && d->status == IBV_WC_SUCCESS) {
		d->wc_flags |= IBV_WC_WITH_INV;
		d->imm = h->imm;
	}
}

static void complete_recv(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	struct sv_done_wc one;

	if (c->qc->ndone == SV_DONE_MAX)
		sv_resp_batch_end(qp, c);
	if (!c->qc->done && !(c->qc->done = malloc(sizeof(*c->qc->done)))) {
		/* no memory: this one completes at once, after the ACKs so far */
		recv_done_fill(&one, qp, h);
		sv_resp_batch_end(qp, c);
		push_done(qp, &one);
		return;
	}
	recv_done_fill(&c->qc->done->wc[c->qc->ndone++], qp, h);
}

/* Its memory was deregistered while the payload arrived: the rest was
 * discarded and the request fails as if the key had been bad from the
 * start (a receive buffer's: a local protection error). */
static void place_revoked(struct sv_qp *qp, const struct sv_wire_hdr *h)
{
	sv_info("qp %u: request psn %u lost its memory mid-payload", qp->ibqp.qp_base.qp_num,
		h->psn);
	if (h->opcode == SV_OP_WRITE || h->opcode == SV_OP_WRITE_IMM)
		resp_fail(qp, SV_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			  "its target memory was deregistered mid-payload");
	else
		resp_fail(qp, SV_NAK_REM_OP, IBV_WC_LOC_PROT_ERR,
			  "the receive's memory was deregistered mid-payload");
}

/* May the ACK of this request wait for one of ours to carry it (xmit.c)?
 * Over TCP, with our requester connected, and only for a requester whose
 * ack timeout is long (or infinite) next to the longest wait. */
static bool ack_may_wait(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	return (c->caps & SV_CAP_TURN) && qp->out && qp->out->connected &&
	       (!h->ack_tmo || h->ack_tmo >= SV_ACK_HOLD_MIN_TMO) &&
	       c->qc->ack_held_n < SV_ACK_HOLD_MAX;
}

/* Spinning pollers wait for requests that complete receives only, and
 * read a channel of large ones in batches (drive.c, bulk_wait).  A request
 * on our outbound channel: the peer turned it (req.c, turn_wanted), so its
 * requests no longer come on the inbound one, which pollers may then take
 * as a quiet channel (drive.c, spin_takes) until they come there again. */
static void took_request(struct sv_conn *c, bool completes, uint32_t len)
{
	bool bulk = len >= SV_RX_BULK;
	struct sv_conn *in = c->outbound && c->qc->qp ? c->qc->qp->in : NULL;

	if (in && in->qc->rx_requested)
		__atomic_store_n(&in->qc->rx_requested, false, __ATOMIC_RELAXED);

	if (!c->qc->rx_requested)
		__atomic_store_n(&c->qc->rx_requested, true, __ATOMIC_RELAXED);
	if (c->qc->rx_completes != completes)
		__atomic_store_n(&c->qc->rx_completes, completes, __ATOMIC_RELAXED);
	if (c->qc->rx_bulk != bulk)
		__atomic_store_n(&c->qc->rx_bulk, bulk, __ATOMIC_RELAXED);
}

/* A placed SEND taken without the receive machine (engine/recv.c): its
 * receive and completion, if the QP takes it as sv_resp_begin would; else
 * its queues are as they were and the frame goes the whole way, which says
 * what is wrong. */
bool sv_resp_placed(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h)
{
	if (qp->attr.qp_state != IBV_QPS_RTS || h->src_qpn != qp->attr.dest_qp_num)
		return false;
	memset(&qp->rctx, 0, offsetof(typeof(qp->rctx), wqe));
	qp->rctx.conn = c;
	qp->rctx.pd = qp->ibqp.qp_base.pd;
	qp->rctx.placed = true;
	if (!take_placed(qp, h))
		return false;
	took_request(c, true, 0);
	complete_recv(qp, c, h);
	return true;
}

void sv_resp_end(struct sv_qp *qp, struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;

	/* One request at a time: requests change channel only when none is
	 * in flight (req.c).  A frame that ends after another began on the
	 * other channel is a stale copy: the state is the other one's. */
	if (qp->rctx.conn != c) {
		sv_info("qp %u: request psn %u ended after another began, dropped",
			qp->ibqp.qp_base.qp_num, h->psn);
		return;
	}

	if (qp->rctx.pull && !qp->rctx.drop && !qp->rctx.nak)
		pull_end(qp, c, h);
	if (c->qc->place.revoked && !qp->rctx.nak)
		place_revoked(qp, h);
	/* the window goes once the message is in (IB class J error if not) */
	if (h->opcode == SV_OP_SEND_INV && !qp->rctx.drop && !qp->rctx.nak &&
	    qp->rctx.status == IBV_WC_SUCCESS && !sv_mw_remote_inv(qp, h->imm))
		resp_fail(qp, SV_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR,
			  "the rkey to invalidate is no type 2 window bound to this QP");
	if (qp->rctx.nak) {
		enum sv_nak nak = qp->rctx.nak;

		if (qp->rctx.have_wqe)
			complete_recv(qp, c, h);
		sv_resp_batch_end(qp, c);
		xrc_target_done(qp, c);
		/* Last: its requester may destroy the XRC SRQ as soon as it has
		 * the error, which the target must have let go of by then. */
		sv_xmit_nak(c, qp, h->psn, nak, 0);
		sv_xmit_flush(c);              /* before the channel goes down */
		sv_info("qp %u: responder error, NAK %u", qp->ibqp.qp_base.qp_num, nak);
		/* A READ response before it lost its memory mid-frame and took
		 * the channel, and the NAK, with it (xmit.c): the requester asks
		 * again and gets the NAK then. */
		if (!c->qc->mr_lost)
			sv_qp_to_error(qp);
		return;
	}
	if (!qp->rctx.drop && sv_qp_is_rc(qp) && !qp->rctx.placed)
		qp->epsn = (qp->epsn + 1) & 0xffffff;
	took_request(c, qp->rctx.have_wqe, h->len);
	if (qp->rctx.ack && !(sv_opinfo[h->opcode].flags & (SV_OPF_ATOMIC)) &&
	    h->opcode != SV_OP_READ_REQ) {
		if (ack_may_wait(qp, c, h))
			sv_xmit_ack_maybe_hold(c, qp, h->psn);
		else
			sv_xmit_ack(c, qp, h->psn);
	}
	if (qp->rctx.have_wqe)
		complete_recv(qp, c, h);
	xrc_target_done(qp, c);
}

/* ---- UD: a whole datagram at once ---- */

static void write_grh(struct sv_qp *qp, const struct sv_wire_hdr *h, struct in_addr src,
		      struct ibv_grh *g)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;

	memset(g, 0, sizeof(*g));
	g->version_tclass_flow = htobe32(6u << 28);
	g->paylen = htobe16((uint16_t)(h->len + 8));
	g->next_hdr = 0x1b;
	g->hop_limit = 64;
	g->sgid.raw[10] = g->sgid.raw[11] = 0xff;
	memcpy(&g->sgid.raw[12], &src.s_addr, 4);
	g->dgid = node->gid;
}

void sv_resp_ud(struct sv_qp *qp, const struct sv_wire_hdr *h, const uint8_t *payload,
		struct in_addr src)
{
	struct iovec seg[SV_PLACE_MAX_SEG];
	int nseg;
	struct ibv_grh grh;
	struct ibv_wc wc = { 0 };
	size_t total;

	sv_stat_dgram(qp, false, h->opcode, h->len);
	/* A fabric drops these silently; the QP's last error says why. */
	if (qp->attr.qp_state < IBV_QPS_RTR || qp->attr.qp_state == IBV_QPS_ERR) {
		sv_qp_explain(qp, "UD datagram from QP %#x dropped: the QP is in %s, receives "
			      "need RTR or RTS", h->src_qpn, sv_qp_state_name(qp->attr.qp_state));
		return;
	}
	SV_CAPTURE(sv_capture_ud_rx(qp, h, payload, src));
	if (h->qkey != qp->attr.qkey) {
		sv_qp_explain(qp, "UD datagram from QP %#x dropped: its Q_Key %#x is not the QP's "
			      "%#x", h->src_qpn, h->qkey, qp->attr.qkey);
		return;
	}
	if (!sv_qp_take_rwqe(qp, qp->rctx.wqe)) {
		sv_qp_explain(qp, "UD datagram of %u bytes from QP %#x dropped: no receive posted",
			      h->len, h->src_qpn);
		return;
	}
	wc.wr_id = qp->rctx.wqe->wr_id;
	write_grh(qp, h, src, &grh);
	/* translated and copied under one hold of the MR lock */
	sv_mr_rdlock();
	wc.status = sv_sges_translate(qp->ibqp.qp_base.pd, qp->rctx.wqe->sge,
				      qp->rctx.wqe->num_sge, SV_LOCAL_WRITE, seg, &nseg, &total);
	if (wc.status == IBV_WC_SUCCESS && total < SV_UD_GRH_LEN + (size_t)h->len) {
		wc.status = IBV_WC_LOC_LEN_ERR;
		sv_qp_explain(qp, "UD datagram from QP %#x: receive wr_id %llu holds %zu bytes, "
			      "the datagram needs %u (the 40-byte GRH) + %u: %s", h->src_qpn,
			      (unsigned long long)wc.wr_id, total, SV_UD_GRH_LEN, h->len,
			      ibv_wc_status_str(wc.status));
	}
	if (wc.status == IBV_WC_SUCCESS) {
		size_t off = 0;
		const uint8_t *srcs[2] = { (const uint8_t *)&grh, payload };
		size_t lens[2] = { SV_UD_GRH_LEN, h->len };

		sv_dma_begin();         /* into the application's buffer (util/tsan.h) */
		for (int s = 0, i = 0; s < 2; s++) {
			size_t done = 0;

			while (done < lens[s]) {
				size_t k = seg[i].iov_len - off;

				if (k > lens[s] - done)
					k = lens[s] - done;
				memcpy((uint8_t *)seg[i].iov_base + off, srcs[s] + done, k);
				done += k;
				off += k;
				if (off == seg[i].iov_len) {
					i++;
					off = 0;
				}
			}
		}
		sv_dma_end();
	}
	sv_mr_unlock();
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = h->len + SV_UD_GRH_LEN;
	wc.qp_num = qp->ibqp.qp_base.qp_num;
	wc.src_qp = h->src_qpn;
	wc.slid = ntohl(src.s_addr) & 0xffff;
	if (h->flags & SV_WF_GRH)
		wc.wc_flags |= IBV_WC_GRH;
	if (h->opcode == SV_OP_SEND_IMM) {
		wc.wc_flags |= IBV_WC_WITH_IMM;
		wc.imm_data = h->imm;
	}
	sv_cq_push(qp->rcq, &wc, h->flags & SV_WF_SOLICITED);
}
