/*
 * The requester: turns send WQEs into request frames, owns the QP's outbound
 * channel (connect, HELLO, reconnect with backoff) and its timers' arming.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"
#include "util/tsan.h"
#include "util/stamp.h"

#define SV_RECONNECT_NS (20ull * 1000 * 1000)

static bool is_rd_atomic(uint32_t op)
{
	return op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static const uint8_t wr_to_op[] = {
	[IBV_WR_RDMA_WRITE] = SV_OP_WRITE,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = SV_OP_WRITE_IMM,
	[IBV_WR_SEND] = SV_OP_SEND,
	[IBV_WR_SEND_WITH_IMM] = SV_OP_SEND_IMM,
	[IBV_WR_RDMA_READ] = SV_OP_READ_REQ,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = SV_OP_CMP_SWP,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = SV_OP_FETCH_ADD,
	[IBV_WR_SEND_WITH_INV] = SV_OP_SEND_INV,
	[IBV_WR_ATOMIC_WRITE] = SV_OP_ATOMIC_WRITE,
};

/* Attach a WQE's payload to a frame.  Returns the local error, if any. */
static enum ibv_wc_status add_pull(struct sv_qp *qp, struct sv_swqe *w, struct sv_txframe *f)
{
	struct sv_wire_pull *desc = qp->out->qc->pull->desc;
	struct iovec iov[SV_PLACE_MAX_SEG];
	enum ibv_wc_status st;
	size_t total;
	int n;

	st = sv_sges_to_place(qp->ibqp.qp_base.pd, w->sge, w->num_sge, SV_LOCAL_READ, iov, &n,
			      &total);
	if (st != IBV_WC_SUCCESS)
		return st;
	/* iov[] holds the non-empty SGEs in order */
	for (uint32_t i = 0, k = 0; i < w->num_sge && k < (uint32_t)n; i++) {
		if (!w->sge[i].length)
			continue;
		desc[k].addr = (uintptr_t)iov[k].iov_base;
		desc[k].len = (uint32_t)iov[k].iov_len;
		desc[k].key = w->sge[i].lkey;
		k++;
	}
	f->hdr.flags |= SV_WF_PULL;
	f->hdr.rlen = total;
	sv_frame_add(f, desc, n * sizeof(desc[0]));
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_status add_payload(struct sv_qp *qp, struct sv_swqe *w, struct sv_txframe *f)
{
	enum ibv_wc_status st;
	size_t total;

	if (w->is_inline) {
		sv_frame_add(f, (uint8_t *)&w->sge[qp->sq.max_sge], w->length);
		return IBV_WC_SUCCESS;
	}
	/* (without memory for the descriptors the data goes in the frame) */
	if (qp->out && qp->out->pull_ok && w->length >= SV_PULL_MIN &&
	    qp->ibqp.qp_base.qp_type == IBV_QPT_RC &&
	    (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM) &&
	    sv_pulled_get(qp->out))
		return add_pull(qp, w, f);
	st = sv_sges_to_place(qp->ibqp.qp_base.pd, w->sge, w->num_sge, SV_LOCAL_READ,
			      f->seg, &f->nseg, &total);
	if (st == IBV_WC_SUCCESS) {
		f->hdr.len = total;
		f->total += total;
	}
	return st;
}

static void build_header(struct sv_qp *qp, struct sv_swqe *w, struct sv_txframe *f,
			 uint32_t dst_qpn)
{
	uint8_t op = wr_to_op[w->opcode];

	sv_frame_init(f, op, dst_qpn, qp->ibqp.qp_base.qp_num, w->psn);
	if (sv_qp_is_rc(qp)) {
		f->hdr.ack_tmo = qp->attr.timeout;
		/* (an XRC initiator takes no requests, and its qkey is the SRQ's) */
		if (qp->ibqp.qp_base.qp_type == IBV_QPT_RC &&
		    sv_xmit_ack_carry_any(qp, &f->hdr.ack_psn))
			f->hdr.flags |= SV_WF_ACK;       /* carries the ACK it held */
	}
	if (w->send_flags & IBV_SEND_SOLICITED)
		f->hdr.flags |= SV_WF_SOLICITED;
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_XRC_SEND)
		f->hdr.qkey = w->xrc_srqn;       /* the SRQ at the target (verbs/xrc.c) */
	if (sv_opinfo[op].flags & (SV_OPF_IMM | SV_OPF_INV))
		f->hdr.imm = w->imm;             /* or the rkey to invalidate */
	if (sv_opinfo[op].flags & SV_OPF_RKEY) {
		f->hdr.va = w->remote_addr;
		f->hdr.rkey = w->rkey;
	}
	if (op == SV_OP_READ_REQ)
		f->hdr.rlen = w->length;
	if (op == SV_OP_CMP_SWP) {
		f->hdr.data0 = w->swap;
		f->hdr.data1 = w->compare_add;
	} else if (op == SV_OP_FETCH_ADD) {
		f->hdr.data0 = w->compare_add;
	} else if (op == SV_OP_ATOMIC_WRITE) {
		memcpy(&f->hdr.data0, &w->sge[qp->sq.max_sge], 8);   /* inline (post.c) */
	}
}

/* ---- one-sided operations by cross-memory attach ---- */

static unsigned int needed_access(uint32_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:           return IBV_ACCESS_REMOTE_WRITE;
	case IBV_WR_RDMA_READ:            return IBV_ACCESS_REMOTE_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return IBV_ACCESS_REMOTE_ATOMIC;
	default:                          return 0;
	}
}

/* Execute a WRITE/READ/atomic in the peer's memory ourselves, so the target's
 * CPU is not involved.  Only when nothing is in flight before it, so the
 * responder's in-order execution is preserved.  Returns false to let the
 * request travel as a frame instead. */
static bool try_direct(struct sv_qp *qp, struct sv_swqe *w)
{
	struct sv_conn *c = qp->out;
	struct iovec iov[SV_PLACE_MAX_SEG];
	struct sv_direct d = {
		.need = needed_access(w->opcode), .rkey = w->rkey, .raddr = w->remote_addr,
		.len = w->length, .iov = iov, .to_remote = w->opcode == IBV_WR_RDMA_WRITE,
		.cmp_swp = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP,
		.compare_add = w->compare_add, .swap = w->swap,
	};
	enum ibv_wc_status st;
	size_t total;

	/* The peer QP's access flags were read at connection time and may have
	 * changed since: if they say no, the responder decides, with its own. */
	/* an XRC target has no PD of its own to check direct accesses in */
	if (!c || !c->cma_ok || !d.need || qp->sq.head != qp->sq.next ||
	    !(c->peer_access & d.need) || qp->ibqp.qp_base.qp_type == IBV_QPT_XRC_SEND)
		return false;
	/* The peer's QP left the connected states (it marked the rings): a
	 * QP in ERR processes nothing, so neither may we on its behalf. */
	if (sv_conn_peer_left(c))
		return false;
	if (w->is_inline) {
		iov[0].iov_base = (uint8_t *)&w->sge[qp->sq.max_sge];
		iov[0].iov_len = w->length;
		d.n = w->length ? 1 : 0;
		st = IBV_WC_SUCCESS;
	} else {
		st = sv_sges_to_place(qp->ibqp.qp_base.pd, w->sge, w->num_sge,
				      d.to_remote ? SV_LOCAL_READ : SV_LOCAL_WRITE, iov, &d.n, &total);
	}
	if (st != IBV_WC_SUCCESS) {
		sv_comp_fail(qp, w, st);
		return true;
	}
	/* Refused (-EACCES, -EINVAL for a misaligned atomic), or not ours to
	 * do: the request travels, and the responder decides, names the rule
	 * it breaks and goes to ERR with the requester, as on the wire. */
	if (sv_chan_direct(c, &d))
		return false;
	SV_CAPTURE(sv_capture_direct(qp, &d));
	sv_stat_direct(qp, wr_to_op[w->opcode], w->length);
	sv_swqe_done(qp, w, IBV_WC_SUCCESS);
	qp->sq.next++;
	sv_comp_reap(qp);
	return true;
}

/* ---- work requests that never leave this device ---- */

static bool is_local_op(uint32_t op)
{
	return op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV;
}

/* Bind or invalidate a memory window (verbs/mw.c) when the send queue
 * reaches it: requests before it were sent first, requests after it see
 * its effect.  It takes no PSN, so acknowledgements pass it by (comp.c),
 * and a rewind that goes back over it leaves it done. */
static void run_local(struct sv_qp *qp, struct sv_swqe *w)
{
	enum ibv_wc_status st = w->opcode == IBV_WR_BIND_MW ? sv_mw_bind(qp, w) :
				sv_mw_local_inv(qp, w->inv_rkey);

	qp->sq.next++;
	if (st != IBV_WC_SUCCESS) {
		sv_comp_fail(qp, w, st);
		return;
	}
	sv_swqe_done(qp, w, IBV_WC_SUCCESS);
	sv_comp_reap(qp);
}

/* On a lossy channel a READ or atomic may be asked for again, and the
 * responder keeps only the last SV_MAX_RD_ATOM atomics' results (resp.c):
 * so one goes only while fewer than rd_max READs and atomics stand from
 * the oldest one not done, as IB counts outstanding requests (the count
 * of responses, rd_outstanding, forgets lost ones at a rewind). */
static bool rd_window_full(struct sv_qp *qp, uint32_t rd_max)
{
	uint32_t n = 0;
	bool counting = false;

	for (uint32_t i = qp->sq.head; i != qp->sq.next; i++) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, i);

		if (!is_rd_atomic(w->opcode))
			continue;
		counting |= w->state != SV_SWQE_DONE;
		n += counting;
	}
	return n >= rd_max;
}

/* A request that had nothing else in flight or queued, and whose
 * predecessor had not either (the first of a burst has none in flight),
 * says so: its requester waits for one answer at a time, and a passive
 * target may poll for the next (engine/recv.c). */
static void mark_lone(struct sv_qp *qp, struct sv_txframe *f)
{
	if (!sv_qp_is_rc(qp))
		return;          /* UC completes at the post: nothing waits */
	if (qp->sq.head != qp->sq.next || qp->sq.next + 1 != qp->sq.tail) {
		qp->lone_run = 0;
		return;
	}
	if (qp->lone_run < 2)
		qp->lone_run++;
	if (qp->lone_run == 2) {
		f->hdr.flags |= SV_WF_LONE;
		f->awaited = true;
	}
}

/*
 * May READ or atomic `w` go?  Up to rd_max stand (the responder's
 * resources, max_rd_atomic), but beyond SV_RD_FREE of them only while the
 * READs in flight ask for less than SV_RD_BYTES: many small READs keep a
 * long path busy (4 KiB across veth), many large ones only cut what each
 * read of a spinning poller brings (docs/measurements.md, 'More READs in
 * flight, if small').
 */
#define SV_RD_FREE 16
#define SV_RD_BYTES (1u << 20)

static bool rd_room(struct sv_qp *qp, const struct sv_swqe *w, uint32_t rd_max)
{
	if (qp->rd_outstanding >= rd_max)
		return false;
	if (qp->rd_outstanding >= SV_RD_FREE && w->opcode == IBV_WR_RDMA_READ &&
	    qp->rd_bytes + (uint64_t)w->length > SV_RD_BYTES)
		return false;
	return !(sv_req_conn(qp)->caps & SV_CAP_LOSSY) || !rd_window_full(qp, rd_max);
}

static bool req_fill(struct sv_qp *qp, struct sv_txframe *f)
{
	uint32_t rd_max = qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;

	if (qp->attr.qp_state != IBV_QPS_RTS || qp->rnr_wait || qp->link != SV_LINK_UP)
		return false;
	while (qp->sq.next != qp->sq.tail && qp->attr.qp_state == IBV_QPS_RTS) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, qp->sq.next);
		enum ibv_wc_status st;

		/* A fenced request waits until earlier READs and atomics are done. */
		if ((w->send_flags & IBV_SEND_FENCE) && qp->rd_outstanding)
			return false;
		if (w->state == SV_SWQE_DONE) {      /* a local one, before a rewind */
			qp->sq.next++;
			continue;
		}
		if (is_local_op(w->opcode)) {
			run_local(qp, w);
			continue;
		}
		if (sv_req_place_waits(qp, w))
			return false;
		if (sv_req_place(qp, w, f))
			return true;
		if (try_direct(qp, w))
			continue;
		if (is_rd_atomic(w->opcode) && !rd_room(qp, w, rd_max))
			return false;
		if (!w->psn_set) {
			w->psn = qp->next_psn;
			qp->next_psn = (qp->next_psn + 1) & 0xffffff;
			w->psn_set = true;
			sv_req_count_recv(qp, wr_to_op[w->opcode]);
		}
		sv_stamp(SV_ST_FILL);
		build_header(qp, w, f, qp->peer_qpn);
		mark_lone(qp, f);
		st = IBV_WC_SUCCESS;
		if (sv_opinfo[f->hdr.opcode].flags & SV_OPF_PAYLOAD)
			st = add_payload(qp, w, f);
		if (st != IBV_WC_SUCCESS) {
			f->in_use = false;
			sv_xmit_ack_recover(qp);     /* the ACK it carried goes alone */
			sv_comp_fail(qp, w, st);
			return false;
		}
		sv_stamp(SV_ST_FILLED);
		f->wqe_idx = qp->sq.next++;
		if (is_rd_atomic(w->opcode)) {
			qp->rd_outstanding++;
			if (w->opcode == IBV_WR_RDMA_READ)
				qp->rd_bytes += w->length;
		}
		return true;
	}
	return false;
}

/* An inbound channel carries requests only when turned (TCP), so the
 * frame is made when a channel first carries one and kept until it goes. */
struct sv_txframe *sv_req_frame(struct sv_conn *c)
{
	if (!c->qc->req)
		c->qc->req = calloc(1, sizeof(*c->qc->req));
	return c->qc->req;
}

static bool req_busy(const struct sv_conn *c)
{
	return c->qc->req && c->qc->req->in_use;
}

/* Next request frame.  A failed WQE may recover a carried ACK on the
 * very channel being filled (xmit.c): it is queued, not flushed, then. */
bool sv_req_fill(struct sv_qp *qp, struct sv_txframe *f)
{
	bool got;

	qp->req_filling = true;
	got = req_fill(qp, f);
	qp->req_filling = false;
	return got;
}

void sv_req_arm_ack_timer(struct sv_qp *qp)
{
	uint64_t t = sv_qp_ack_timeout_ns(qp);

	if (!qp->ack_deadline && t && qp->sq.head != qp->sq.tail &&
	    sv_qp_is_rc(qp)) {
		qp->ack_deadline = sv_now_ns_upper() + t;   /* once per burst: keep it cheap */
		sv_qp_timer_update(qp);
	}
}

void sv_req_sent(struct sv_qp *qp, uint32_t idx)
{
	struct sv_swqe *w;

	if (idx - qp->sq.head >= qp->sq.next - qp->sq.head)
		return;         /* rewound while it was on the wire: it goes again */
	w = sv_sq_at(&qp->sq, idx);
	if (w->state != SV_SWQE_POSTED)
		return;
	/* nothing waits for UC, nor for a placed SEND (placed.c) */
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UC || w->placed) {
		sv_swqe_done(qp, w, IBV_WC_SUCCESS);
		sv_comp_reap(qp);
		return;
	}
	sv_swqe_to(qp, w, SV_SWQE_SENT);
	sv_req_arm_ack_timer(qp);
}

void sv_req_rewind(struct sv_qp *qp, uint32_t idx)
{
	for (uint32_t i = idx; i != qp->sq.next; i++) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, i);

		if (w->state == SV_SWQE_SENT)
			sv_swqe_to(qp, w, SV_SWQE_POSTED);
	}
	qp->sq.next = idx;
	qp->rd_outstanding = qp->rd_bytes = 0;
	/* A frame not yet started is dropped; one half on the wire completes
	 * (the responder discards it) and sv_req_sent ignores it. */
	for (int i = 0; i < 2; i++) {
		struct sv_conn *c = i ? qp->in : qp->out;

		if (c && req_busy(c) && !c->qc->req->done)
			c->qc->req->in_use = false;
	}
	/* Frames already written may still reach the peer: no change of
	 * channel until it acknowledges one sent from now on (comp.c). */
	qp->req_unsettled = true;
	sv_xmit_ack_recover(qp);        /* dropped frames may have carried our ACK */
}

/* ---- UD: one datagram per WQE, completed when handed to the network ---- */

static void ud_send_one(struct sv_qp *qp, struct sv_swqe *w)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	struct sv_txframe f;
	struct iovec iov[SV_PLACE_MAX_SEG + 1];
	struct sockaddr_in dst = w->ud_dst;
	enum ibv_wc_status st;

	dst.sin_port = htons(w->ud_qpn >> 8);      /* the address plan: QPN -> port */

	build_header(qp, w, &f, w->ud_qpn);
	f.hdr.qkey = (w->ud_qkey & SV_QKEY_CONTROLLED) ? qp->attr.qkey : w->ud_qkey;
	f.hdr.data1 = node->addr.s_addr;
	if (w->ud_grh)
		f.hdr.flags |= SV_WF_GRH;
	st = w->length > SV_MTU ? IBV_WC_LOC_LEN_ERR : add_payload(qp, w, &f);
	if (st == IBV_WC_SUCCESS) {
		iov[0].iov_base = &f.hdr;
		iov[0].iov_len = sizeof(f.hdr);
		memcpy(&iov[1], f.seg, f.nseg * sizeof(struct iovec));
		sv_wire_encode(&f.hdr);
		if (w->ud_mcast)
			sv_dgram_send_mcast(node, qp->ibqp.qp_base.qp_num, &w->ud_mgid, iov,
					    f.nseg + 1);
		else if (sv_dgram_send(node, qp->ibqp.qp_base.qp_num, &dst, iov, f.nseg + 1))
			st = IBV_WC_GENERAL_ERR;
		SV_CAPTURE(sv_capture_ud_tx(qp, &f.hdr, f.seg, st == IBV_WC_SUCCESS ? f.nseg : -1, dst.sin_addr));
		if (st == IBV_WC_SUCCESS)
			sv_stat_dgram(qp, true, f.hdr.opcode, w->length);
	}
	sv_swqe_done(qp, w, st);
}

static void ud_send_all(struct sv_qp *qp)
{
	if (qp->attr.qp_state != IBV_QPS_RTS)
		return;
	while (qp->sq.next != qp->sq.tail) {
		struct sv_swqe *w = sv_sq_at(&qp->sq, qp->sq.next++);

		ud_send_one(qp, w);
		if (w->status != IBV_WC_SUCCESS) {
			/* A UD send error moves the QP to SQE (send queue error). */
			qp->attr.qp_state = qp->attr.cur_qp_state = IBV_QPS_SQE;
			qp->ibqp.qp_base.state = IBV_QPS_SQE;
			break;
		}
	}
	sv_comp_reap(qp);
	if (qp->attr.qp_state == IBV_QPS_SQE) {
		for (uint32_t i = qp->sq.next; i != qp->sq.tail; i++) {
			struct sv_swqe *w = sv_sq_at(&qp->sq, i);

			sv_swqe_done(qp, w, IBV_WC_WR_FLUSH_ERR);
		}
		qp->sq.next = qp->sq.tail;
		sv_comp_reap(qp);
	}
}

/* ---- the outbound channel ---- */

/*
 * One connection for a ping-pong (TCP).  A QP's requests go on the channel
 * it opened, so a ping-pong runs on two TCP connections, one per
 * direction, and for every message the kernel also sends a TCP ACK that
 * no data of ours can carry, which makes each one-way trip slower
 * (docs/measurements.md, 'Turned channel').  So in a steady ping-pong
 * (held ACKs, xmit.c) one QP of the pair sends its requests on the channel
 * its peer opened, where its peer's requests arrive and its responses go:
 * it "turns" its inbound channel.  Only one of the two, the lesser by (QPN,
 * address), or they would each turn onto the other's.  The peer agreed in
 * its HELLO (SV_WF_TURN).  Requests change channel only when none is in
 * flight (all acknowledged, none half-written, none rewound whose older
 * copies may still be on the wire), so the responder still takes them in
 * PSN order from one channel: it keeps one request's state at a time.
 */
static bool turn_wanted(struct sv_qp *qp)
{
	const struct sv_conn *in = qp->in;
	uint32_t me = qp->ibqp.qp_base.qp_num;
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;

	if (!in || !in->qc->turn_ok || in->dead || in->closed || in->paused ||
	    qp->ibqp.qp_base.qp_type != IBV_QPT_RC ||
	    __atomic_load_n(&in->qc->ack_streak, __ATOMIC_RELAXED) < SV_ACK_STREAK)
		return false;
	if (me != qp->peer_qpn)
		return me < qp->peer_qpn;
	return ntohl(node->addr.s_addr) < ntohl(qp->peer.sin_addr.s_addr);
}

static void choose_channel(struct sv_qp *qp)
{
	bool turn;

	if (qp->sq.head != qp->sq.next || qp->rnr_wait || qp->req_unsettled ||
	    (qp->out && req_busy(qp->out)) || (qp->in && req_busy(qp->in)))
		return;
	turn = turn_wanted(qp);
	if (turn != qp->req_turned) {
		sv_trace("qp %u: requests go on the %s channel", qp->ibqp.qp_base.qp_num,
			 turn ? "inbound" : "outbound");
		qp->req_turned = turn;
	}
}

struct sv_conn *sv_req_conn(struct sv_qp *qp)
{
	return qp->req_turned && qp->in ? qp->in : qp->out;
}

/* The inbound channel is gone: if our requests went on it, they are lost
 * with it and go again on the outbound one (the responder drops what it
 * already did). */
void sv_req_turned_lost(struct sv_qp *qp)
{
	if (!qp->req_turned)
		return;
	qp->req_turned = false;
	if (sv_qp_is_rc(qp) && qp->attr.qp_state == IBV_QPS_RTS)
		sv_req_rewind(qp, qp->sq.head);
	sv_req_kick(qp);
}

void sv_req_kick(struct sv_qp *qp)
{
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UD) {
		ud_send_all(qp);
		return;
	}
	if (qp->out && qp->link == SV_LINK_UP) {
		sv_stamp(SV_ST_KICK);
		choose_channel(qp);
		sv_xmit_flush(sv_req_conn(qp));
		return;
	}
	/* Work to send and no channel: try now rather than after the backoff,
	 * so the retry budget is spent on attempts, not on waiting. */
	if (qp->link == SV_LINK_BACKOFF && qp->sq.next != qp->sq.tail &&
	    qp->attr.qp_state == IBV_QPS_RTS) {
		qp->link_deadline = 0;
		sv_req_start_link(qp);
	}
	sv_req_arm_ack_timer(qp);
}

SV_NAME_TABLE(sv_link_state_name, enum sv_link_state, SV_LINK_NSTATES,
	      [SV_LINK_IDLE] = "IDLE", [SV_LINK_CONNECTING] = "CONNECTING",
	      [SV_LINK_HELLO] = "HELLO", [SV_LINK_UP] = "UP", [SV_LINK_BACKOFF] = "BACKOFF")

static bool link_in_setup(enum sv_link_state s)
{
	return s == SV_LINK_CONNECTING || s == SV_LINK_HELLO;
}

void sv_link_set(struct sv_qp *qp, enum sv_link_state s)
{
	if (qp->link != s)
		sv_info("qp %u: link %s -> %s", qp->ibqp.qp_base.qp_num,
			sv_link_state_name(qp->link), sv_link_state_name(s));
	if (link_in_setup(qp->link) != link_in_setup(s))
		sv_engine_link_setup(link_in_setup(s));
	qp->link = s;
	sv_engine_status_qp(qp);
}

void sv_req_link_failed(struct sv_qp *qp)
{
	sv_link_set(qp, SV_LINK_BACKOFF);
	qp->link_deadline = sv_now_ns() + SV_RECONNECT_NS;
	sv_qp_timer_update(qp);
	sv_req_arm_ack_timer(qp);
}

/* Same host (the address plan resolved the peer to loopback): a unix socket
 * and shared memory.  Otherwise, or when forced, TCP. */
void sv_req_start_link(struct sv_qp *qp)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	struct sockaddr_in dst = qp->peer;
	uint16_t port = qp->peer_qpn >> 8;
	bool local = (ntohl(dst.sin_addr.s_addr) >> 24) == 127 && !sv_force_tcp();
	struct sv_conn *c = NULL;
	int err;

	if (qp->out) {
		sv_conn_close(qp->out);
		qp->out = NULL;
	}
	dst.sin_port = htons(port);
	err = local ? sv_conn_connect_local(node, port, &c) : sv_conn_connect(node, &dst, &c);
	if (err) {
		sv_req_link_failed(qp);
		return;
	}
	c->qc->qp = qp;
	c->qc->peer_state = SV_PEER_VERIFIED;     /* we reached the configured peer */
	c->qc->nonce = sv_verify_nonce();
	if (sv_conn_start(c)) {
		sv_conn_free_unstarted(c);
		sv_req_link_failed(qp);
		return;
	}
	qp->out = c;
	sv_link_set(qp, SV_LINK_CONNECTING);
}

void sv_req_on_connected(struct sv_qp *qp)
{
	struct sv_conn *c = qp->out;
	struct sv_txframe *f = sv_ctrl_frame(c);
	uint64_t seg_va;

	if (!f) {
		sv_req_link_failed(qp);          /* no memory: connect again later */
		return;
	}

	/* rings (and our segment) for a same-host peer of our own user only;
	 * responses come back to the send CQ */
	c->wake_fd = sv_cq_wake_fd(qp->scq);
	c->wake_id = sv_cq_wake_id(qp->scq);
	seg_va = sv_chan_offer(c);

	sv_link_set(qp, SV_LINK_HELLO);
	qp->link_deadline = 0;
	sv_qp_timer_update(qp);
	sv_frame_init(f, SV_OP_HELLO, qp->peer_qpn, qp->ibqp.qp_base.qp_num, 0);
	f->hdr.data0 = c->qc->nonce;              /* the peer asks us about it (verify.c) */
	if (seg_va) {
		f->hdr.flags |= SV_WF_SHM;
		f->hdr.va = seg_va;                   /* lets the responder probe us */
		f->hdr.data1 = c->wake_id;            /* names the wake descriptor, if any */
	}
	if ((c->caps & SV_CAP_TURN) && qp->ibqp.qp_base.qp_type == IBV_QPT_RC) {
		f->hdr.flags |= SV_WF_TURN;         /* the peer's requests may come here */
		c->qc->turn_ok = true;
	}
	sv_wire_encode(&f->hdr);
	sv_xmit_flush(c);
	sv_verify_look(qp, true);             /* a new channel: ask our candidates' peers */
}

void sv_req_on_hello_ack(struct sv_qp *qp, struct sv_conn *c)
{
	sv_engine_lane_hello_ack(c, &c->qc->rx_hdr);
	if (sv_chan_answered(c, &c->qc->rx_hdr, sv_qp_is_rc(qp))) {
		sv_rx_on_rings(c);
		sv_engine_drive_register(c, qp->scq);
	}
	sv_info("qp %u: link up (%s%s)", qp->ibqp.qp_base.qp_num, sv_conn_kind_name(c),
		c->cma_ok ? ", cross-memory attach" : "");
	sv_link_set(qp, SV_LINK_UP);
	qp->gone_deadline = 0;
	qp->hello_waits = 0;
	sv_qp_timer_update(qp);
	/* frames are sent after this response has been consumed */
}

void sv_engine_qp_ready(struct sv_qp *qp)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	sv_verify_look(qp, false);
	if (qp->in)
		sv_conn_pause(qp->in, s < IBV_QPS_RTR || s == IBV_QPS_ERR);
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UD && s == IBV_QPS_RTR)
		sv_engine_drive_register_dgram(qp);
}

void sv_engine_qp_teardown(struct sv_qp *qp)
{
	/* receives already done in the current batch complete before any
	 * flush (requests come in on the outbound channel too, if turned);
	 * the flush writes the ACK held, not requests still queued */
	sv_link_set(qp, SV_LINK_IDLE);
	sv_verify_drop_all(qp);
	for (int i = 0; i < 2; i++) {
		struct sv_conn *c = i ? qp->out : qp->in;

		if (!c)
			continue;
		if (c->qc->ack_held) {               /* the requests were carried out */
			sv_xmit_ack_release(c);
			sv_xmit_flush(c);
		}
		sv_xmit_drain(c);                    /* frames staged go before it closes */
		sv_resp_push_done(qp, c);
	}
	/* the peer reads what we wrote last: a fatal NAK says why we go */
	if (qp->out)
		sv_conn_close_linger(qp->out);
	if (qp->in)
		sv_conn_close_linger(qp->in);
	qp->out = qp->in = NULL;
	qp->req_turned = qp->req_unsettled = false;
	sv_resp_xrc_release(qp);           /* an XRC target lets go of its SRQ */
}
