/*
 * The one dispatch point for incoming bytes: accepts channels, runs each
 * channel's resumable receive machine (RX_HDR -> RX_PAYLOAD -> RX_HDR) and
 * hands complete headers to the responder (requests) or completer
 * (responses); datagrams go to the UD responder.  Every header is validated
 * (wire/proto.c) before any field is used.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"
#include "util/tsan.h"
#include "util/stamp.h"

#define SV_DIRECT_MIN   (64 * 1024)   /* payloads this large skip the staging buffer */
#define SV_RX_READS     16            /* reads from the channel per wake-up, for fairness */
#define SV_RING_STAGE   2048          /* least a ring read stages (small frames) */

static void rx_frames(struct sv_conn *c);
static void rbuf_release(struct sv_conn *c);

/* ---- the receive machine ---- */

static size_t rbuf_avail(const struct sv_conn *c) { return c->qc->rb_end - c->qc->rb_start; }

/* May this wake-up read the channel once more?  Fairness limits reads; and
 * for an application thread polling, a TCP read that came back short
 * emptied the socket (the kernel copies until its queue is empty), so
 * another would only say EAGAIN: the poller comes back at once, and epoll
 * (level-triggered) reports whatever arrived meanwhile.  The progress
 * thread reads on: for it, stopping means sleeping and being woken again
 * while a stream is still arriving (docs/measurements.md, 'TCP short read
 * ends a poller's reads').  So does a short read of a ring into the
 * staging buffer: the ring was empty, and a ping-pong's responder would
 * look once more before its completion is pushed.  A payload read
 * straight into memory reads on: a large message's next record follows. */
static bool rx_may_read(struct sv_conn *c)
{
	if (!c->qc->rx_reads_left || c->qc->rx_drained)
		return __builtin_expect(c->caps & SV_CAP_LOSSY, 0) && sv_conn_input_pending(c);
	c->qc->rx_reads_left--;
	return true;
}

static ssize_t rx_read_done(struct sv_conn *c, ssize_t r, size_t asked, uint32_t drains)
{
	if (r >= 0 && (size_t)r < asked && (c->caps & drains) &&
	    !sv_node_on_progress_thread(c->node))
		c->qc->rx_drained = true;
	return r;
}

/* A new wake-up of the receive machine. */
static void rx_wakeup(struct sv_conn *c)
{
	c->qc->rx_reads_left = SV_RX_READS;
	c->qc->rx_drained = false;
}

/* Refill the staging buffer with up to `want` bytes (sockets: as much as
 * is there, to save system calls; rings: what is asked but at least
 * SV_RING_STAGE, so that a run of small frames takes one ring read while a
 * large payload still goes mostly straight to its destination).  Returns
 * false on EAGAIN, EOF or error. */
static bool rbuf_fill(struct sv_conn *c, size_t want)
{
	size_t room;
	ssize_t r;

	/* Fairness limits reads, never frames already staged: those would
	 * sit unseen, as the socket they came from reports nothing more. */
	if (!rx_may_read(c))
		return false;
	if (!c->qc->rbuf && !(c->qc->rbuf = sv_stage_take()))
		return false;        /* no memory: the input waits */
	if (c->qc->rb_start == c->qc->rb_end)
		c->qc->rb_start = c->qc->rb_end = 0;
	if (c->qc->rb_end == SV_RBUF_LEN) {
		memmove(c->qc->rbuf, c->qc->rbuf + c->qc->rb_start, rbuf_avail(c));
		c->qc->rb_end -= c->qc->rb_start;
		c->qc->rb_start = 0;
	}
	room = SV_RBUF_LEN - c->qc->rb_end;
	if (want < SV_RING_STAGE)
		want = SV_RING_STAGE;
	if ((c->caps & SV_CAP_MAPPED) && want < room)
		room = want;
	r = rx_read_done(c, sv_conn_read(c, c->qc->rbuf + c->qc->rb_end, room), room,
			 SV_CAP_SPIN_TAKE | SV_CAP_MAPPED);
	sv_stamp(SV_ST_STAGED);
	if (r <= 0)
		return false;
	c->qc->rb_end += r;
	return true;
}

/* A header is 64 bytes, or SV_WIRE_SHORT_LEN when its flags say so (its
 * zero tail was not sent): read that much first, then the flags tell. */
static size_t rx_hdr_want(const struct sv_conn *c)
{
	return c->qc->rx_got < SV_WIRE_SHORT_LEN ? SV_WIRE_SHORT_LEN : sv_wire_hdr_len(&c->qc->rx_hdr);
}

static bool rx_header(struct sv_conn *c)
{
	size_t want;

	while (c->qc->rx_got < (want = rx_hdr_want(c))) {
		size_t k = want - c->qc->rx_got;

		if (!rbuf_avail(c) && !rbuf_fill(c, k))
			return false;
		if (k > rbuf_avail(c))
			k = rbuf_avail(c);
		memcpy((uint8_t *)&c->qc->rx_hdr + c->qc->rx_got, c->qc->rbuf + c->qc->rb_start, k);
		c->qc->rb_start += k;
		c->qc->rx_got += k;
	}
	if (want < sizeof(c->qc->rx_hdr))
		memset((uint8_t *)&c->qc->rx_hdr + want, 0, sizeof(c->qc->rx_hdr) - want);
	return true;
}

/* A channel gives its staging buffer back once it holds no bytes. */
static void rbuf_release(struct sv_conn *c)
{
	if (c->qc->rbuf && c->qc->rb_start == c->qc->rb_end) {
		sv_stage_give(c->qc->rbuf);
		c->qc->rbuf = NULL;
		c->qc->rb_start = c->qc->rb_end = 0;
	}
}

/* A payload read straight into memory whose rest is still on its way:
 * while more than SV_RX_LOWAT_MIN bytes of it are to come, its reader is
 * woken only once SV_RX_LOWAT of them (or all) wait.  Read piece by piece
 * as they arrived, a busy poller's many reads cost the TCP sender more
 * than the bytes (docs/measurements.md, 'A large payload read in large
 * pieces'). */
#define SV_RX_LOWAT (256 * 1024)
#define SV_RX_LOWAT_MIN (64 * 1024)

static void rx_direct_lowat(struct sv_conn *c, bool short_read)
{
	size_t left = c->qc->rx_remain;

	sv_chan_rx_lowat(c, !short_read || left <= SV_RX_LOWAT_MIN ? 1
			    : left < SV_RX_LOWAT ? (uint32_t)left : SV_RX_LOWAT);
}

/* Read payload straight into the destination, bypassing the staging buffer. */
static bool rx_direct(struct sv_conn *c)
{
	struct iovec iov[SV_PLACE_MAX_SEG];
	struct sv_place *p = &c->qc->place;
	/* the message's last byte comes through sv_place_copy, written last */
	size_t want = c->qc->rx_remain - 1;
	int n = 0;
	ssize_t r;

	for (int i = p->cur; i < p->nseg && want; i++) {
		size_t off = i == p->cur ? p->cur_off : 0;
		size_t k = p->seg[i].iov_len - off;

		if (k > want)
			k = want;
		iov[n].iov_base = (uint8_t *)p->seg[i].iov_base + off;
		iov[n].iov_len = k;
		want -= k;
		n++;
	}
	if (!rx_may_read(c))
		return false;
	if (!sv_place_hold(p))
		return true;    /* revoked: the rest goes through the staging buffer, discarded */
	sv_dma_begin();         /* straight into registered memory (util/tsan.h) */
	r = sv_conn_readv(c, iov, n);
	sv_dma_end();
	sv_mr_unlock();
	r = rx_read_done(c, r, c->qc->rx_remain - want, SV_CAP_SPIN_TAKE);
	if (r == -EAGAIN)
		rx_direct_lowat(c, true);
	if (r <= 0)
		return false;
	sv_place_advance(p, r);
	c->qc->rx_remain -= r;
	rx_direct_lowat(c, c->qc->rx_remain > 1 + want);
	return true;
}

static bool rx_payload(struct sv_conn *c)
{
	while (c->qc->rx_remain) {
		size_t k = rbuf_avail(c);

		if (k) {
			if (k > c->qc->rx_remain)
				k = c->qc->rx_remain;
			sv_place_copy(&c->qc->place, c->qc->rbuf + c->qc->rb_start, k);
			c->qc->rb_start += k;
			c->qc->rx_remain -= k;
			continue;
		}
		if (!c->qc->place.discard && c->qc->rx_remain > 1 &&
		    (c->qc->rx_remain >= SV_DIRECT_MIN || (c->caps & SV_CAP_MAPPED)) &&
		    sv_place_left(&c->qc->place) >= c->qc->rx_remain) {
			if (!rx_direct(c))
				return false;
			continue;
		}
		if (!rbuf_fill(c, c->qc->rx_remain))
			return false;
	}
	sv_chan_rx_lowat(c, 1);
	return true;
}

/* Is the channel one of its QP's two (not a candidate, engine/verify.c)? */
static bool conn_bound(const struct sv_conn *c)
{
	return c->qc->qp && (c == c->qc->qp->in || c == c->qc->qp->out);
}

/* A peer that breaks the protocol (malformed or hostile frame) moves the QP
 * to ERR: outstanding work flushes, nothing more is read from it.  A HELLO_NAK
 * is not a protocol error: the requester retries until its timeout.  A
 * channel whose peer is not verified is only closed: a stranger's frame
 * never changes the QP. */
void sv_engine_protocol_error(struct sv_conn *c, const char *why)
{
	sv_err("qp %u: protocol error on a%s channel: %s", c->qc->qp ? c->qc->qp->ibqp.qp_base.qp_num : 0,
	       conn_bound(c) ? "" : "n unverified", why);
	c->dead = true;
	if (conn_bound(c) && c->qc->rx_hdr.opcode != SV_OP_HELLO_NAK)
		sv_qp_to_error(c->qc->qp);
}

/* Requests come in on the inbound channel, responses on the outbound one;
 * on a turned channel (engine/req.c) both, either way. */
static bool frame_allowed(struct sv_conn *c, const struct sv_opinfo *oi)
{
	if (oi->flags & SV_OPF_CTRL)
		return true;
	if (c->outbound == !!(oi->flags & SV_OPF_RESP))
		return true;
	return c->qc->turn_ok;
}

static bool is_response(const struct sv_wire_hdr *h)
{
	return sv_op_info(h->opcode)->flags & SV_OPF_RESP;
}

static void rx_begin(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	sv_place_reset(&c->qc->place);
	c->qc->rx_remain = c->qc->rx_hdr.len;
	switch (c->qc->rx_hdr.opcode) {
	case SV_OP_HELLO:
		sv_engine_protocol_error(c, "HELLO in the middle of a stream");
		break;
	case SV_OP_HELLO_ACK:
		if (c->outbound && qp->link == SV_LINK_HELLO)
			sv_req_on_hello_ack(qp, c);
		else
			sv_engine_protocol_error(c, "unexpected HELLO_ACK");
		break;
	case SV_OP_HELLO_NAK:
		sv_engine_protocol_error(c, "peer QP does not exist");
		break;
	case SV_OP_LANE:
	case SV_OP_LANE_ACK:
		sv_engine_lane_on_frame(c, &c->qc->rx_hdr);
		break;
	case SV_OP_VERIFY:
		if (c->outbound || c->qc->rx_hdr.dst_qpn != qp->ibqp.qp_base.qp_num)
			sv_engine_protocol_error(c, "unexpected VERIFY");
		else
			sv_verify_on_question(qp, c);
		break;
	case SV_OP_VERIFY_ACK:
		if (c != qp->out || c->qc->rx_hdr.src_qpn != qp->peer_qpn)
			sv_engine_protocol_error(c, "unexpected VERIFY_ACK");
		else
			sv_verify_on_answer(qp, c);
		break;
	default:
		/* every frame is checked against the channel's proven peer */
		if (c->qc->peer_state != SV_PEER_VERIFIED) {
			sv_engine_protocol_error(c, "frame before its peer was verified");
			break;
		}
		if (c->qc->rx_hdr.dst_qpn != qp->ibqp.qp_base.qp_num ||
		    c->qc->rx_hdr.src_qpn != qp->peer_qpn) {
			sv_engine_protocol_error(c, "frame for another QP or from another peer");
			break;
		}
		if (is_response(&c->qc->rx_hdr))
			sv_comp_begin(qp, c);
		else
			sv_resp_begin(qp, c);
	}
}

/* An ACK a request carries is applied once that request is read whole (or
 * held for a receive): a poller that finds its send completed returns to
 * its program, which may then wait, without a verb, for the data of the
 * very request that carried the ACK (ib_write_lat spins on memory). */
static void rx_ack_carried(struct sv_conn *c)
{
	if (!is_response(&c->qc->rx_hdr) && (c->qc->rx_hdr.flags & SV_WF_ACK))
		sv_comp_ack_carried(c->qc->qp, c->qc->rx_hdr.ack_psn);
}

static void rx_end(struct sv_conn *c)
{
	const struct sv_opinfo *oi = sv_op_info(c->qc->rx_hdr.opcode);

	sv_stat_rx(c);
	if ((c->qc->rx_hdr.flags & SV_WF_LONE) && (oi->flags & SV_OPF_RKEY) &&
	    !(oi->flags & (SV_OPF_RECV | SV_OPF_RESP)))
		c->qc->rx_lone = true;
	if (oi->flags & SV_OPF_CTRL) {
		if (c->qc->rx_hdr.opcode == SV_OP_HELLO_ACK)
			sv_req_kick(c->qc->qp);     /* requests waited for the channel */
		return;
	}
	if (is_response(&c->qc->rx_hdr)) {
		if (c->qc->tx_since_rx)
			__atomic_store_n(&c->qc->tx_since_rx, 0, __ATOMIC_RELAXED);
		sv_comp_end(c->qc->qp, c);
	} else {
		rx_ack_carried(c);
		sv_resp_end(c->qc->qp, c);
	}
}

/* The responder needs room for a response before it takes a request.
 * (On a turned channel the peer has at most SV_MAX_RD_ATOM READs and
 * atomics in flight, whose responses take the place of unsent ACKs
 * (xmit.c): its outbound end never pauses, which would also stop the
 * responses to its own requests.  So the queue holds them, an ACK, a NAK
 * and the two free slots asked for here.) */
_Static_assert(SV_RESPQ_LEN >= SV_MAX_RD_ATOM + 3, "a turned channel must never pause");

static bool resp_room(struct sv_conn *c)
{
	return (c->outbound && !c->qc->turn_ok) || SV_RESPQ_LEN - (c->qc->resp_tail - c->qc->resp_head) >= 2;
}

/* Did this batch take requests: responses to write, receives to complete? */
static bool batch_has_requests(const struct sv_conn *c)
{
	return !c->outbound || c->qc->ndone || c->qc->resp_tail != c->qc->resp_head;
}

/* The frames read in one go, and the ACK word after them.  Responses
 * among them kick the requester once, after the last: the requests they
 * make room for (a stream of READs: one per response) then go in one write
 * of a socket channel's stage, not in one system call each. */
static void rx_frames_acked(struct sv_conn *c, struct sv_qp *qp)
{
	qp->kick_held = true;
	rx_frames(c);
	/* (also at the ring's end: the peer's last ACK came before it) */
	if (c->outbound && (c->caps & SV_CAP_ACK_WORD) && !c->closed)
		sv_comp_ack_word(qp, c);
	qp->kick_held = false;
	if (qp->kick_due) {
		qp->kick_due = false;
		if (qp->attr.qp_state != IBV_QPS_ERR)
			sv_req_kick(qp);
	}
}

/* Process frames until the channel has nothing more this wake-up, it is
 * paused (no room for responses) or dead.  Responses are written once per
 * batch (ACKs coalesce), then the batch's receive completions appear. */
void sv_rx_process(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	rx_wakeup(c);
	for (;;) {
		bool was_paused;

		rx_frames_acked(c, qp);
		if (c->closed || !batch_has_requests(c))
			return;
		was_paused = c->paused;
		c->qc->rx_batch_bytes = 0;
		sv_resp_batch_end(qp, c);
		sv_stamp(SV_ST_BATCH_END);
		/* The flush may have made room and resumed the channel: frames
		 * already staged would not be announced again. */
		if (!was_paused || c->paused || c->dead || c->closed)
			return;
	}
}

/* Read and check the next frame's header. */
static bool rx_next_header(struct sv_conn *c)
{
	const struct sv_opinfo *oi;

	if (!rx_header(c))
		return false;
	if (!sv_wire_decode(&c->qc->rx_hdr) ||
	    !(oi = sv_op_info(c->qc->rx_hdr.opcode)) || !frame_allowed(c, oi)) {
		sv_engine_protocol_error(c, "malformed frame");
		return false;
	}
	sv_trace("qp %u rx %s psn %u len %u", c->qc->qp->ibqp.qp_base.qp_num, oi->name,
		 c->qc->rx_hdr.psn, c->qc->rx_hdr.len);
	return true;
}

void sv_rx_serve(struct sv_conn *c)
{
	sv_rx_process(c);
	/* (an inbound channel's responses went at the batch's end) */
	if ((c->caps & SV_CAP_MAPPED) && c->outbound && !c->dead)
		sv_xmit_flush(c);
	if (c->dead)
		sv_conn_lost(c);
}

SV_NAME_TABLE(sv_rx_state_name, enum sv_rx_state, SV_RX_NSTATES,
	      [SV_RX_HDR] = "HDR", [SV_RX_HELD] = "HELD", [SV_RX_READY] = "READY",
	      [SV_RX_PAYLOAD] = "PAYLOAD")

/* QP lock held; pollers read the state without it. */
void sv_rx_set(struct sv_conn *c, enum sv_rx_state s)
{
	sv_trace("qp %u: rx %s -> %s", c->qc->qp ? c->qc->qp->ibqp.qp_base.qp_num : 0,
		 sv_rx_state_name(c->qc->rx_state), sv_rx_state_name(s));
	__atomic_store_n(&c->qc->rx_state, s, __ATOMIC_RELAXED);
	__atomic_store_n(&c->input, s == SV_RX_HELD ? SV_INPUT_HELD :
			 s == SV_RX_READY ? SV_INPUT_STAGED : SV_INPUT_OPEN, __ATOMIC_RELAXED);
	if (s == SV_RX_READY)
		sv_conn_board_remind(c);     /* input its peer wrote long ago */
}

/* A placed SEND first in a ring channel's input (engine/placed.c) is taken
 * without the receive machine: its header looked at where it is, its
 * receive completed, its bytes read.  Anything unusual about it goes the
 * whole way.  No look while no receive was published: none can come. */
static bool rx_placed(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;
	struct sv_wire_hdr h;

	if (!c->qc->recv_published || c->qc->rx_got || rbuf_avail(c) || c->outbound ||
	    c->qc->peer_state != SV_PEER_VERIFIED ||
	    !sv_chan_peek(c, &h, SV_WIRE_SHORT_LEN) || !(h.flags & SV_WF_SHORT) ||
	    !(sv_op_info(h.opcode) && (sv_op_info(h.opcode)->flags & SV_OPF_PLACED)))
		return false;
	memset((uint8_t *)&h + SV_WIRE_SHORT_LEN, 0, sizeof(h) - SV_WIRE_SHORT_LEN);
	if (!sv_wire_decode(&h) || h.dst_qpn != qp->ibqp.qp_base.qp_num || h.src_qpn != qp->peer_qpn ||
	    !sv_resp_placed(qp, c, &h))
		return false;
	sv_trace("qp %u rx %s (taken in place)", qp->ibqp.qp_base.qp_num, sv_op_info(h.opcode)->name);
	c->qc->rx_hdr = h;
	if (!sv_chan_skip(c, SV_WIRE_SHORT_LEN) &&
	    sv_conn_read(c, &h, SV_WIRE_SHORT_LEN) != SV_WIRE_SHORT_LEN)
		sv_engine_protocol_error(c, "a placed SEND's header went away");
	sv_stat_rx(c);
	return true;
}

/*
 * Responses (the ACK word among them) and receive completions go at a
 * batch's end, but a batch of large requests may take long: twenty pulled
 * 8 MiB SENDs under ThreadSanitizer on a loaded machine kept the ACK from
 * the requester past its retry budget (RETRY_EXC with every SEND received).
 * So after SV_RX_BATCH_BYTES of requests the batch's work goes out, as a
 * NIC acknowledges as it goes, at a frame boundary.
 */
#define SV_RX_BATCH_BYTES (1u << 20)

static void rx_batch_count(struct sv_conn *c)
{
	if (c->outbound || c->dead || c->closed)
		return;
	c->qc->rx_batch_bytes += c->qc->rx_hdr.rlen;
	if (c->qc->rx_batch_bytes < SV_RX_BATCH_BYTES)
		return;
	c->qc->rx_batch_bytes = 0;
	sv_resp_batch_end(c->qc->qp, c);
	sv_engine_still_polling(c);
}

/* HDR -> PAYLOAD -> HDR, frame after frame; a SEND with no receive to take
 * it may be held (HDR -> HELD, resp.c) until a receive makes it READY, and
 * then begins again from its kept header. */
static void rx_frames_run(struct sv_conn *c)
{
	while (!c->dead && !c->paused) {
		if (c->qc->rx_state == SV_RX_HELD)
			return;                         /* no input until it is READY */
		if (c->qc->rx_state == SV_RX_HDR && rx_placed(c)) {
			/* a ping-pong's ring holds nothing more: no empty read */
			if (!sv_chan_has_input(c))
				return;
			continue;
		}
		if (c->qc->rx_state != SV_RX_PAYLOAD) {
			if (!resp_room(c)) {
				sv_conn_pause(c, true);
				return;
			}
			if (c->qc->rx_state == SV_RX_READY)  /* the held SEND begins again */
				sv_rx_set(c, SV_RX_HDR);
			else if (!rx_next_header(c))
				return;
			sv_stamp(SV_ST_HEADER);
			rx_begin(c);
			sv_stamp(SV_ST_BEGUN);
			if (c->qc->rx_state == SV_RX_HELD)
				rx_ack_carried(c);
			if (c->qc->rx_state == SV_RX_HELD || c->dead)
				return;
			sv_rx_set(c, SV_RX_PAYLOAD);
		}
		if (!rx_payload(c))
			return;
		sv_stamp(SV_ST_PLACED);
		sv_rx_set(c, SV_RX_HDR);
		c->qc->rx_got = 0;
		SV_CAPTURE(sv_capture_rx(c));
		rx_end(c);
		sv_stamp(SV_ST_ENDED);
		rx_batch_count(c);
	}
}

static void rx_frames(struct sv_conn *c)
{
	rx_frames_run(c);
	rbuf_release(c);
}

/* ---- channel lifecycle ---- */

/* A socket that failed on a write may still hold the peer's last
 * responses: its fatal NAK, sent just before it closed while our requests
 * were still going out.  They are read before the channel is given up. */
static void read_last_words(struct sv_conn *c)
{
	if ((c->caps & SV_CAP_MAPPED) || c->closed || !c->connected || c->qc->qp->link != SV_LINK_UP ||
	    c->qc->qp->attr.qp_state == IBV_QPS_ERR)
		return;
	c->dead = false;
	rx_wakeup(c);
	rx_frames(c);
	c->dead = true;
}

void sv_conn_lost(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	if (!conn_bound(c)) {
		sv_conn_close(c);
		return;
	}
	if (c == qp->out)
		read_last_words(c);
	if (c == qp->out) {
		qp->out = NULL;
		sv_conn_close(c);
		sv_comp_link_lost(qp);
	} else if (c == qp->in) {
		qp->in = NULL;
		sv_conn_close(c);
		sv_req_turned_lost(qp);
	}
	sv_engine_status_qp(qp);
}

/* The channel is freed (the transport's reap): what the engine's part
 * holds goes with it. */
void sv_engine_chan_free(struct sv_conn *c)
{
	sv_stage_give(c->qc->rbuf);
	c->qc->rbuf = NULL;
	sv_stage_give(c->qc->stage);
	c->qc->stage = NULL;
	free(c->qc->resp);
	c->qc->resp = NULL;
	free(c->qc->done);
	c->qc->done = NULL;
	free(c->qc->pull);
	c->qc->pull = NULL;
	free(c->qc->req);
	c->qc->req = NULL;
	sv_ctrl_free(c);
}

/* Answer a HELLO whose peer is verified (engine/verify.c): HELLO_ACK, with
 * our segment when the rings are accepted.  The answer travels on the
 * socket; everything after it on the rings. */
bool sv_rx_answer_hello(struct sv_conn *c, struct sv_qp *qp)
{
	const struct sv_wire_hdr *h = &c->qc->hello;
	uint64_t seg_va;
	struct sv_txframe *f;

	sv_xmit_flush(c);            /* an answer to a question may still wait */
	f = sv_ctrl_frame(c);
	if (!f)
		return false;
	/* requests complete there (an XRC target's: in their SRQs' CQs) */
	c->wake_fd = sv_cq_wake_fd(sv_qp_is_xrc_tgt(qp) ? NULL : qp->rcq);
	c->wake_id = sv_cq_wake_id(sv_qp_is_xrc_tgt(qp) ? NULL : qp->rcq);
	seg_va = sv_chan_take(c, h);
	sv_frame_init(f, SV_OP_HELLO_ACK, h->src_qpn, h->dst_qpn, 0);
	if (seg_va) {
		f->hdr.flags |= SV_WF_SHM;
		/* large SENDs as addresses for us to pull: RC only (UC has no
		 * ACK to wait for) */
		if (c->cma_ok && qp->ibqp.qp_base.qp_type == IBV_QPT_RC)
			f->hdr.flags |= SV_WF_PULL;
		/* an XRC target has no PD: its initiator never accesses directly */
		f->hdr.rkey = qp->ibqp.qp_base.pd ? to_spd(qp->ibqp.qp_base.pd)->id : 0;
		f->hdr.qkey = qp->attr.qp_access_flags;
		f->hdr.va = seg_va;
		f->hdr.data1 = c->wake_id;            /* names the wake descriptor, if any */
	} else {
		sv_engine_lane_hello_answer(c, &f->hdr);
	}
	sv_wire_encode(&f->hdr);
	sv_xmit_flush(c);
	if (sv_ctrl_busy(c))
		return false;        /* a fresh socket takes 64 bytes; anything else is broken */
	if (seg_va) {
		sv_conn_shm_start(c);
		sv_rx_on_rings(c);
	}
	return true;
}

/* The channel switched to rings: the socket carries only doorbell bytes
 * after the HELLO, so the staging buffer holds nothing of use. */
void sv_rx_on_rings(struct sv_conn *c)
{
	c->qc->rb_start = c->qc->rb_end = 0;
	rbuf_release(c);
	sv_engine_status_qp(c->qc->qp);
}

/* May a HELLO for `qp` from `src_qpn` wait for its proof?  Not if the QP
 * cannot connect or has another peer. */
static bool hello_acceptable(struct sv_qp *qp, uint32_t src_qpn)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	return qp->ibqp.qp_base.qp_type != IBV_QPT_UD && s != IBV_QPS_RESET && s != IBV_QPS_ERR &&
	       (s < IBV_QPS_RTR || qp->attr.dest_qp_num == src_qpn);
}

/* A new inbound channel names its QP in its first frame (HELLO); it
 * carries the QP's traffic once its peer is verified (verify.c). */
static void attach_inbound(struct sv_conn *c)
{
	struct sv_node *node = c->node;
	struct sv_qp *qp;
	struct sv_wire_hdr *h = &c->qc->rx_hdr;

	rx_wakeup(c);
	if (!rx_header(c)) {
		rbuf_release(c);
		if (c->dead)
			sv_conn_close(c);
		return;
	}
	rbuf_release(c);
	c->qc->rx_got = 0;
	if (!sv_wire_decode(h) || h->opcode != SV_OP_HELLO || h->len) {
		sv_conn_close(c);
		return;
	}
	qp = sv_node_lookup_qp(node, h->dst_qpn);
	if (qp)
		sv_qlock_lock(&qp->lock);
	if (!qp || !hello_acceptable(qp, h->src_qpn)) {
		/* No such QP here: tell the requester, which retries until its
		 * timeout, as a fabric would drop the packets. */
		sv_conn_drop_rx_fds(c);
		sv_xmit_ctrl(c, SV_OP_HELLO_NAK, h->src_qpn, h->dst_qpn, 0, 0);
		if (qp)
			sv_qlock_unlock(&qp->lock);
		sv_conn_close(c);
		return;
	}
	c->qc->hello = *h;
	sv_verify_attach(qp, c);
	/* questions may have come with the HELLO */
	if (!c->dead && !c->closed)
		sv_rx_process(c);
	if (c->dead)
		sv_conn_lost(c);
	sv_qlock_unlock(&qp->lock);
}

static void on_connect_done(struct sv_conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(c->h.fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		c->dead = true;
		return;
	}
	c->connected = true;
	sv_engine_drive_register(c, c->qc->qp->scq);
	sv_req_on_connected(c->qc->qp);
	if (c->qc->turn_ok)          /* the peer's requests may come in here */
		sv_engine_drive_register_also(c, c->qc->qp->rcq);
}

/* Serve a channel's events; its QP's lock is held. */
static void conn_serve(struct sv_conn *c, uint32_t events)
{
	if (c->closed)                   /* closed by the application meanwhile */
		return;
	if (!c->connected)
		on_connect_done(c);
	if (c->caps & SV_CAP_MAPPED) {
		/* data in our ring, room in the peer's, or its end: a peer
		 * that has gone may have left frames in the ring, read them
		 * first (a paused channel reads none) */
		bool gone = sv_conn_peer_left(c);

		if (!gone && sv_node_on_progress_thread(c->node) &&
		    sv_engine_poller_active(c, sv_now_ns())) {
			c->node->rings_left = true;        /* look again soon */
			sv_conn_board_remind(c);           /* the bit it took is the poller's */
			return;
		}
		sv_xmit_flush(c);
		sv_rx_process(c);
		if (gone)
			c->dead = true;
		else     /* served in part (fairness, no memory)? the board must say so */
			sv_conn_shm_keep(c);
	} else {
		bool was_paused = c->paused;

		if (!c->dead && (events & EPOLLOUT))
			sv_xmit_flush(c);
		/* a flush that resumed a paused channel: its staged frames wait */
		if (!c->dead && !c->closed &&
		    ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) || (was_paused && !c->paused)))
			sv_rx_process(c);
	}
	if (c->dead)
		sv_conn_lost(c);
}

/*
 * The progress thread never sleeps on a QP lock an application thread
 * holds.  A post holds it while it writes (a large message to a TCP
 * socket takes a while); a progress thread waiting for it made every
 * unlock pay a FUTEX_WAKE, and, woken on a core where it preempted
 * someone, mostly found the lock taken again by the next post
 * (docs/measurements.md, 'Progress thread defers to a QP lock holder').
 * It leaves the events to the holder instead, which serves them when it
 * unlocks (sv_qp_unlock).  Either a later try finds the lock free, or the
 * holder's look at the flag comes after the flag: the flag is stored
 * before every running thread is fenced (util/guard.h), and a holder the
 * fence finds before its unlock's store then looks after it.
 */
static bool lock_or_defer(struct sv_conn *c, struct sv_qp *qp, uint32_t *events)
{
	uint32_t more;

	if (sv_qlock_trylock(&qp->lock))
		return true;
	sv_conn_defer(c, *events);
	__atomic_store_n(&qp->deferred, true, __ATOMIC_SEQ_CST);
	if (!sv_qlock_trylock(&qp->lock)) {
		/* The holder's unlock is a plain store, its look at the flag
		 * a load that may pass it: fence it, then look once more. */
		sv_guard_fence_all();
		if (!sv_qlock_trylock(&qp->lock))
			return false;
	}
	if (sv_conn_take_deferred(c, &more)) {       /* not taken meanwhile */
		*events |= more;
		sv_conn_rewatch(c);
	}
	return true;
}

/*
 * RDMA READs, WRITEs and atomics at a passive target, where no application
 * thread polls, are served by the progress thread, and each one woke it: a
 * wake-up costs several round trips on a VM.  So a request whose requester
 * has nothing else in flight (SV_WF_LONE: it waits for this one) makes the
 * progress thread poll for a while (SOFTVERBS_BUSY_POLL_US) before it
 * sleeps again, if the previous one came recently enough for that poll to
 * have caught it.  Not for a stream, whose frames a busy target would take
 * one by one and answer each with an ACK (that halved a WRITE stream), nor
 * for SENDs, whose receiver's application is woken anyway
 * (docs/measurements.md, 'Busy poll').
 */
#define SV_BUSY_GAP_MAX_NS (200 * 1000ull)

/* (QP lock held: the CQ poller_active reads is the QP's) */
static void maybe_busy_poll(struct sv_conn *c)
{
	uint64_t now = sv_now_ns(), gap = now - c->qc->rx_lone_ns;

	c->qc->rx_lone_ns = now;
	if (gap <= SV_BUSY_GAP_MAX_NS && !(c->caps & SV_CAP_MAPPED) && !sv_engine_poller_active(c, now))
		sv_node_busy_poll(c->node, sv_busy_poll_ns());
}

void sv_engine_on_conn(struct sv_conn *c, uint32_t events)
{
	struct sv_qp *qp = c->qc->qp;

	if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
		return;
	if (!qp) {
		attach_inbound(c);
		return;
	}
	/* connecting, or not verified: rare, wait for the lock (only the
	 * QP's two channels are left to its holder) */
	if (!c->connected || __atomic_load_n(&c->qc->peer_state, __ATOMIC_ACQUIRE) != SV_PEER_VERIFIED)
		sv_qlock_lock(&qp->lock);
	else if (!lock_or_defer(c, qp, &events))
		return;
	c->qc->rx_lone = false;
	conn_serve(c, events);
	if (c->qc->rx_lone)
		maybe_busy_poll(c);
	sv_qlock_unlock(&qp->lock);
}

/* Serve what the progress thread left to the holder of the QP's lock.
 * Its channels stay allocated while we count as a driver (node.c). */
void sv_engine_serve_deferred(struct sv_qp *qp)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;

	sv_engine_enter(node);
	for (bool more = __atomic_load_n(&qp->deferred, __ATOMIC_SEQ_CST);
	     more && sv_qlock_trylock(&qp->lock); ) {
		struct sv_conn *chans[2] = { qp->out, qp->in };
		uint32_t events;

		__atomic_store_n(&qp->deferred, false, __ATOMIC_SEQ_CST);
		for (int i = 0; i < 2; i++) {
			if (chans[i] && sv_conn_take_deferred(chans[i], &events)) {
				conn_serve(chans[i], events);
				sv_conn_rewatch(chans[i]);
			}
		}
		more = sv_qp_release(qp);
	}
	sv_engine_leave(node);
}


/* ---- datagrams ---- */

/* A multicast copy the transport checked (unix/member.c): to its member. */
void sv_engine_on_mcast(void *owner, const struct sv_wire_hdr *h, const uint8_t *payload,
			struct in_addr self)
{
	struct sv_qp *qp = owner;

	sv_qlock_lock(&qp->lock);
	sv_resp_ud(qp, h, payload, self);
	sv_qlock_unlock(&qp->lock);
}

/* A datagram the transport checked (udp/dgram.c): to its UD QP. */
void sv_engine_on_dgram(struct sv_node *node, const struct sockaddr_in *from,
			const struct sv_wire_hdr *h, const uint8_t *payload)
{
	struct sv_qp *qp = sv_node_lookup_qp(node, h->dst_qpn);

	if (!qp)
		return;
	sv_qlock_lock(&qp->lock);
	if (qp->ibqp.qp_base.qp_type == IBV_QPT_UD)
		sv_resp_ud(qp, h, payload, from->sin_addr);
	sv_qlock_unlock(&qp->lock);
}
