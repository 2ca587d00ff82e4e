/*
 * Frame transmission on a channel.  A frame is a header plus payload
 * segments written with one sendmsg where possible; partial writes resume
 * on EPOLLOUT.  Outbound channels pull request frames from the requester;
 * inbound channels drain a FIFO of responses (ACKs coalesce).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"
#include "util/log.h"
#include "util/time.h"
#include "util/tsan.h"

void sv_frame_init(struct sv_txframe *f, enum sv_op op, uint32_t dst, uint32_t src, uint32_t psn)
{
	memset(&f->hdr, 0, sizeof(f->hdr));
	f->hdr.opcode = op;
	f->hdr.dst_qpn = dst;
	f->hdr.src_qpn = src;
	f->hdr.psn = psn;
	f->nseg = 0;
	f->total = sizeof(f->hdr);
	f->done = 0;
	f->in_use = true;
	f->fatal = false;
	f->awaited = false;
	f->mr_pd = NULL;
}

void sv_frame_add(struct sv_txframe *f, void *addr, size_t len)
{
	if (!len)
		return;
	f->seg[f->nseg].iov_base = addr;
	f->seg[f->nseg].iov_len = len;
	f->nseg++;
	f->hdr.len += len;
	f->total += len;
}

/* On a ring, a header whose last fields are zero goes short: an 8-byte
 * SEND then fits one cache line (wire/proto.h).  Decided before its first
 * byte goes. */
static void frame_shorten(const struct sv_conn *c, struct sv_txframe *f)
{
	if (f->done || !(c->caps & SV_CAP_SHORT_HDR) || (f->hdr.flags & SV_WF_SHORT) || !sv_wire_can_short(&f->hdr))
		return;
	f->hdr.flags |= SV_WF_SHORT;
	f->total -= sizeof(f->hdr) - SV_WIRE_SHORT_LEN;
}

/* Headers are kept in host order until the frame is queued. */
static void frame_seal(struct sv_txframe *f)
{
	sv_wire_encode(&f->hdr);
}

/* A READ response whose memory went away before its first byte left
 * becomes the NAK its request would get now (REM_ACCESS); the responder's
 * QP goes to ERR once it is written (sv_xmit_flush). */
static void frame_to_nak(struct sv_txframe *f)
{
	uint32_t dst = SV_WIRE_GET32(f->hdr.dst_qpn), src = SV_WIRE_GET32(f->hdr.src_qpn);

	sv_frame_init(f, SV_OP_NAK, dst, src, SV_WIRE_GET32(f->hdr.psn));
	f->hdr.imm = SV_NAK_REM_ACCESS;
	f->fatal = true;
	frame_seal(f);
}

/* A READ response's payload is our registered memory: each write of it
 * holds the MR read lock and finds its MR still there (1, lock held).
 * If not: a frame not begun becomes a NAK (-1, no lock); one begun ends
 * the channel, whose peer has its header without the payload: the
 * requester reconnects, asks again and gets the NAK (0). */
static int frame_mr_hold(struct sv_conn *c, struct sv_txframe *f)
{
	sv_mr_rdlock();
	if (__builtin_expect(f->mr_epoch == sv_mr_epoch, 1))
		return 1;
	if (sv_mr_still(f->mr_pd, f->mr_qpn, f->mr_key, f->mr_va, f->seg[0].iov_len, SV_REMOTE_READ,
			f->seg[0].iov_base)) {
		f->mr_epoch = sv_mr_epoch;
		return 1;
	}
	sv_mr_unlock();
	sv_info("qp %u: READ response psn %u lost its memory%s", c->qc->qp->ibqp.qp_base.qp_num,
		SV_WIRE_GET32(f->hdr.psn), f->done ? " mid-frame, channel closed" : ": NAK");
	if (!f->done) {
		frame_to_nak(f);
		return -1;
	}
	c->qc->mr_lost = true;
	sv_conn_lost(c);
	return 0;
}

/* What the frame means to a peer thread asleep on its completion channel:
 * a receive (or WRITE with immediate) it takes, or a response to one of its
 * requests, completes there.  A NAK may be an RNR NAK, which does not: the
 * sleeper wakes for nothing and sleeps again. */
static enum sv_wake frame_wake(const struct sv_wire_hdr *h)
{
	const struct sv_opinfo *oi = sv_op_info(h->opcode);

	if (!oi || h->opcode == SV_OP_ACK || (oi->flags & SV_OPF_CTRL))
		return SV_WAKE_NONE;
	if (oi->flags & SV_OPF_RESP)
		return SV_WAKE_COMPLETES;
	if (!(oi->flags & (SV_OPF_RECV | SV_OPF_IMM)))
		return SV_WAKE_NONE;
	return (h->flags & SV_WF_SOLICITED) ? SV_WAKE_SOLICITED : SV_WAKE_COMPLETES;
}

/* The frame's bytes from f->done on, as an iovec (header, then segments). */
static int frame_iov(const struct sv_txframe *f, struct iovec *iov)
{
	size_t hlen = sv_wire_hdr_len(&f->hdr), skip = f->done;
	int n = 0;

	if (skip < hlen) {
		iov[n].iov_base = (uint8_t *)&f->hdr + skip;
		iov[n].iov_len = hlen - skip;
		n++;
		skip = 0;
	} else {
		skip -= hlen;
	}
	for (int i = 0; i < f->nseg; i++) {
		if (skip >= f->seg[i].iov_len) {
			skip -= f->seg[i].iov_len;
			continue;
		}
		iov[n].iov_base = (uint8_t *)f->seg[i].iov_base + skip;
		iov[n].iov_len = f->seg[i].iov_len - skip;
		skip = 0;
		n++;
	}
	return n;
}

/*
 * The stage.  A socket channel copies each small frame into its stage and
 * writes the stage when the flush ends (or the stage is full): a batch of
 * frames costs one system call, where each frame cost one, which on a
 * network is the whole cost of a small message.  The stage is a buffer
 * lent (stage.c) while it holds bytes.  Ring channels write records in
 * place and never stage.
 */
static bool stage_empty(const struct sv_conn *c)
{
	return c->qc->stage_off == c->qc->stage_len;
}

/* Write what the stage holds; true once it is all gone. */
static bool stage_drain(struct sv_conn *c)
{
	while (!stage_empty(c)) {
		struct iovec iov = { c->qc->stage + c->qc->stage_off,
				     c->qc->stage_len - c->qc->stage_off };
		ssize_t r = sv_conn_writev(c, &iov, 1);

		if (r <= 0)
			return false;
		c->qc->stage_off += (size_t)r;
	}
	c->qc->stage_off = c->qc->stage_len = 0;
	sv_stage_give(c->qc->stage);         /* NULL: none was lent */
	c->qc->stage = NULL;
	return true;
}

/* Not a fatal NAK: its QP goes to ERR once it is written, which closes
 * the channel, and it must be on the socket by then.  Without a buffer
 * (no memory) frames go one by one. */
static bool stage_takes(struct sv_conn *c, const struct sv_txframe *f)
{
	if ((c->caps & SV_CAP_MAPPED) || f->done || f->fatal || f->total > SV_STAGE_FRAME)
		return false;
	if (!c->qc->stage)
		c->qc->stage = sv_stage_take();
	return c->qc->stage != NULL;
}

static bool frame_write(struct sv_conn *c, struct sv_txframe *f);

/* Copy `f` whole into the stage, draining it first if there is no room.
 * False if the socket would not take the stage. */
static bool stage_put(struct sv_conn *c, struct sv_txframe *f)
{
	struct iovec iov[SV_PLACE_MAX_SEG + 1];
	uint8_t *to;
	int n;

	if (SV_STAGE_LEN - c->qc->stage_len < f->total) {
		if (!stage_drain(c))
			return false;
		if (!stage_takes(c, f))              /* given back: take one again */
			return frame_write(c, f);
	}
	if (f->mr_pd) {
		int held = frame_mr_hold(c, f);

		if (held < 0)
			return frame_write(c, f);   /* it became a fatal NAK */
		if (!held)
			return false;
	}
	n = frame_iov(f, iov);
	to = c->qc->stage + c->qc->stage_len;
	sv_dma_begin();
	for (int i = 0; i < n; i++) {
		memcpy(to, iov[i].iov_base, iov[i].iov_len);
		to += iov[i].iov_len;
	}
	sv_dma_end();
	if (f->mr_pd)
		sv_mr_unlock();
	SV_CAPTURE(sv_capture_tx(c, f, (ssize_t)f->total));
	c->qc->stage_len += f->total;
	f->done = f->total;
	return true;
}

void sv_xmit_drain(struct sv_conn *c)
{
	if (c->connected && !c->dead && !stage_empty(c))
		stage_drain(c);
}

/* Write as much of `f` as the channel takes.  Returns true when complete. */
static bool frame_write(struct sv_conn *c, struct sv_txframe *f)
{
	struct iovec iov[SV_PLACE_MAX_SEG + 1];

	frame_shorten(c, f);
	c->wake_hint = frame_wake(&f->hdr);
	if (f->awaited && !(c->caps & SV_CAP_MAPPED)) {
		c->tx_awaited = true;        /* a datagram lane copies the write (tcp/lane.h) */
		if (c->qc->lane == SV_LANE_MAY)
			c->qc->lane_due = true;
	}
	if (stage_takes(c, f))
		return stage_put(c, f);
	if (!stage_drain(c))                 /* the stage's frames go first */
		return false;
	while (f->done < f->total) {
		int n = frame_iov(f, iov);
		ssize_t r;

		if (f->mr_pd) {
			int held = frame_mr_hold(c, f);

			if (held < 0)
				return frame_write(c, f);   /* it became a NAK: write that */
			if (!held)
				return false;
		}
		sv_dma_begin();    /* payloads are often application memory (util/tsan.h) */
		r = sv_conn_writev(c, iov, n);
		sv_dma_end();
		SV_CAPTURE(sv_capture_tx(c, f, r));
		if (f->mr_pd)
			sv_mr_unlock();
		if (r <= 0)
			return false;
		f->done += r;
	}
	return true;
}

/* The queue is made at the first response: most ring channels answer
 * with the ACK word only. */
static struct sv_txframe *resp_slot(struct sv_conn *c)
{
	if (c->qc->resp_tail - c->qc->resp_head >= SV_RESPQ_LEN)
		return NULL;
	if (!c->qc->resp && !(c->qc->resp = malloc(SV_RESPQ_LEN * sizeof(*c->qc->resp))))
		return NULL;
	return &c->qc->resp[c->qc->resp_tail % SV_RESPQ_LEN];
}

/* Any other response goes after the ACK held before it. */
struct sv_txframe *sv_xmit_resp_slot(struct sv_conn *c)
{
	sv_xmit_ack_release(c);
	return resp_slot(c);
}

static struct sv_txframe *last_unsent_resp(struct sv_conn *c)
{
	struct sv_txframe *f;

	if (c->qc->resp_tail == c->qc->resp_head)
		return NULL;
	f = &c->qc->resp[(c->qc->resp_tail - 1) % SV_RESPQ_LEN];
	return f->done ? NULL : f;
}

/* A READ or atomic response to request `psn` acknowledges every request
 * before it (comp.c): it takes the place of an ACK of those not yet on
 * the wire.  So the queue holds at most the READ and atomic responses the
 * peer may have in flight (max_rd_atomic) and one ACK and NAK, and never
 * pauses a turned channel (recv.c). */
struct sv_txframe *sv_xmit_rd_resp_slot(struct sv_conn *c, uint32_t psn)
{
	struct sv_txframe *f;

	sv_xmit_ack_release(c);
	f = last_unsent_resp(c);
	if (f && f->hdr.opcode == SV_OP_ACK &&
	    sv_psn_le(SV_WIRE_GET32(f->hdr.psn), (psn - 1) & 0xffffff)) {
		c->qc->resp_tail--;
		return f;
	}
	return resp_slot(c);
}

void sv_xmit_resp_commit(struct sv_conn *c, struct sv_txframe *f)
{
	frame_seal(f);
	c->qc->resp_tail++;
}

static void queue_ack(struct sv_conn *c, struct sv_qp *qp, uint32_t psn)
{
	struct sv_txframe *f = last_unsent_resp(c);

	/* Coalesce: a cumulative ACK not yet on the wire simply moves forward. */
	if (f && f->hdr.opcode == SV_OP_ACK) {
		f->hdr.psn = SV_WIRE_PUT32(psn);
		return;
	}
	f = resp_slot(c);
	if (!f)
		return;        /* the receive loop keeps two slots free; cannot happen */
	sv_frame_init(f, SV_OP_ACK, qp->peer_qpn, qp->ibqp.qp_base.qp_num, psn);
	sv_xmit_resp_commit(c, f);
}

void sv_xmit_ack(struct sv_conn *c, struct sv_qp *qp, uint32_t psn)
{
	/* Ring channels acknowledge in the ring, published by the next flush
	 * (before the frames queued after it). */
	if (c->caps & SV_CAP_ACK_WORD) {
		c->qc->ack_word_pending = true;
		c->qc->ack_word_psn = psn;
		return;
	}
	sv_xmit_ack_release(c);
	queue_ack(c, qp, psn);
}

/*
 * Held ACKs (TCP).  Over a socket an ACK costs a sendmsg on the critical
 * path of a ping-pong: the peer waits for it and for our answer, which
 * follows on the other channel.  So an ACK may wait for the QP's next
 * request, which carries it (SV_WF_ACK).  Only for requesters whose ack
 * timeout leaves room for that (resp.c), and only once the QP has shown a
 * steady ping-pong: SV_ACK_STREAK times in a row a request of ours
 * followed a request of the peer before the poller went idle.  A short
 * exchange never holds: the peer's completion would wait for our timer,
 * and a program that goes on elsewhere (perftest -R's handshake: its
 * server listens for the test connection only once its last SEND
 * completed) would be slowed or lose a race.  docs/wire-format.md lists
 * what releases a held ACK.
 */

/* Tell pollers of the channel's CQs and the slower verbs to look. */
static void mark_held(struct sv_conn *c)
{
	if (c->qc->drive_cq)
		__atomic_store_n(&c->qc->drive_cq->acks_held, true, __ATOMIC_SEQ_CST);
	if (c->qc->drive_cq2)
		__atomic_store_n(&c->qc->drive_cq2->acks_held, true, __ATOMIC_SEQ_CST);
	sv_engine_acks_held_mark();
}

/* Could this ACK wait?  (resp.c decided the peer allows it.)  Held once
 * the ping-pong is steady, whichever thread took the request (the
 * application answers soon); else sent now, and marked: if our next
 * request comes before the poller goes idle, the streak grows. */
void sv_xmit_ack_maybe_hold(struct sv_conn *c, struct sv_qp *qp, uint32_t psn)
{
	if (c->qc->ack_held || c->qc->ack_streak >= SV_ACK_STREAK) {
		sv_xmit_ack_hold(c, qp, psn);
		return;
	}
	sv_xmit_ack(c, qp, psn);
	__atomic_store_n(&c->qc->ack_carriable, true, __ATOMIC_SEQ_CST);   /* pollers read it */
	mark_held(c);        /* an empty poll ends the chance (drive.c looks) */
}

/* Our requester builds a request: it carries the ACK held, if any. */
bool sv_xmit_ack_carry(struct sv_conn *c, uint32_t *psn)
{
	if (c->qc->ack_carriable || c->qc->ack_held) {
		__atomic_store_n(&c->qc->ack_carriable, false, __ATOMIC_SEQ_CST);
		if (c->qc->ack_streak < SV_ACK_STREAK)     /* pollers read it (drive.c) */
			__atomic_store_n(&c->qc->ack_streak, c->qc->ack_streak + 1, __ATOMIC_RELAXED);
	}
	if (!sv_xmit_ack_take(c, psn))
		return false;
	c->qc->ack_carried = true;
	return true;
}

/* A request of the QP carries what either channel holds (the peer's
 * requests come in on `out` when it turned that channel, req.c). */
bool sv_xmit_ack_carry_any(struct sv_qp *qp, uint32_t *psn)
{
	bool any = false;

	for (int i = 0; i < 2; i++) {
		struct sv_conn *c = i ? qp->out : qp->in;
		uint32_t p;

		if (c && sv_xmit_ack_carry(c, &p)) {
			if (!any || sv_psn_le(*psn, p))
				*psn = p;
			any = true;
		}
	}
	return any;
}

/* Requests of ours were dropped before they reached the peer (a payload
 * error, a rewind after RNR or a lost channel): an ACK one of them carried
 * is lost with it, and the peer's requester, whose channel is fine, would
 * never resend.  A cumulative ACK of everything executed goes by itself
 * (harmless if the carried one did arrive). */
void sv_xmit_ack_recover(struct sv_qp *qp)
{
	for (int i = 0; i < 2; i++) {
		struct sv_conn *c = i ? qp->out : qp->in;

		if (!c || !c->qc->ack_carried || (c->caps & SV_CAP_ACK_WORD))
			continue;
		c->qc->ack_carried = false;
		sv_xmit_ack_release(c);
		queue_ack(c, qp, (qp->epsn - 1) & 0xffffff);
		/* not from inside the fill of this channel's next request:
		 * its flush loop writes the ACK (next_frame) */
		if (!qp->req_filling || c != sv_req_conn(qp))
			sv_xmit_flush(c);
	}
}

void sv_xmit_ack_hold(struct sv_conn *c, struct sv_qp *qp, uint32_t psn)
{
	c->qc->ack_held_psn = psn;
	c->qc->ack_held_n++;
	if (c->qc->ack_held)
		return;
	__atomic_store_n(&c->qc->ack_held, true, __ATOMIC_SEQ_CST);   /* before mark_held */
	mark_held(c);
	if (!qp->ack_held_deadline) {
		qp->ack_held_deadline = sv_now_ns_upper() + SV_ACK_HOLD_NS;
		sv_qp_timer_update(qp);
	}
}

bool sv_xmit_ack_take(struct sv_conn *c, uint32_t *psn)
{
	if (!c->qc->ack_held)
		return false;
	*psn = c->qc->ack_held_psn;
	c->qc->ack_held_n = 0;
	c->qc->ack_takes++;
	__atomic_store_n(&c->qc->ack_held, false, __ATOMIC_RELAXED);
	return true;
}

/* The ACK goes by itself: the ping-pong, if any, is over. */
void sv_xmit_ack_release(struct sv_conn *c)
{
	uint32_t psn;

	if (c->qc->ack_carriable)
		__atomic_store_n(&c->qc->ack_carriable, false, __ATOMIC_SEQ_CST);
	if (c->qc->qp && sv_xmit_ack_take(c, &psn)) {
		__atomic_store_n(&c->qc->ack_streak, 0, __ATOMIC_RELAXED);
		queue_ack(c, c->qc->qp, psn);
	}
}

void sv_xmit_nak(struct sv_conn *c, struct sv_qp *qp, uint32_t psn, enum sv_nak code,
		 uint64_t data0)
{
	struct sv_txframe *f = sv_xmit_resp_slot(c);

	if (!f)
		return;
	sv_frame_init(f, SV_OP_NAK, qp->peer_qpn, qp->ibqp.qp_base.qp_num, psn);
	f->hdr.imm = code;
	f->hdr.data0 = data0;
	sv_xmit_resp_commit(c, f);
}

static struct sv_txframe *first_resp(struct sv_conn *c)
{
	return c->qc->resp_head != c->qc->resp_tail ? &c->qc->resp[c->qc->resp_head % SV_RESPQ_LEN] : NULL;
}

/* Pick the frame to write next, or NULL if there is none: control frames,
 * then responses, then requests, but a frame half-written goes on first
 * (a turned channel carries both, req.c). */
static struct sv_txframe *next_frame(struct sv_conn *c)
{
	struct sv_txframe *f = first_resp(c), *r = c->qc->req;

	/* a control frame goes between frames, never inside one */
	if (r && r->in_use && r->done)
		return r;
	if (f && f->done)
		return f;
	if (sv_ctrl_pending(c))
		return c->qc->ctrl;
	if (!c->qc->qp)
		return NULL;
	if (f)
		return f;
	if (!r || !r->in_use) {
		if (c != sv_req_conn(c->qc->qp) || !(r = sv_req_frame(c)) ||
		    !sv_req_fill(c->qc->qp, r))
			return first_resp(c);    /* a failed fill may queue an ACK (recover) */
		frame_seal(r);
	}
	return r;
}

static void frame_done(struct sv_conn *c, struct sv_txframe *f)
{
	sv_stat_tx(c, &f->hdr, f->total - sv_wire_hdr_len(&f->hdr));
	f->in_use = false;
	if (f == c->qc->req) {
		__atomic_store_n(&c->qc->tx_since_rx, c->qc->tx_since_rx + 1, __ATOMIC_RELAXED);
		sv_req_sent(c->qc->qp, f->wqe_idx);
	}
	else if (f != c->qc->ctrl) {
		c->qc->resp_head++;
		if (c->paused && c->qc->qp && c->qc->resp_tail - c->qc->resp_head <= SV_RESPQ_LEN / 2)
			sv_conn_pause(c, false);    /* responder may take requests again */
	}
}

/* Was `f`, just staged, the flush's last frame?  Then the stage goes now
 * and the frame's bookkeeping (its WQE's ACK timer, counters) after: a
 * ping-pong's answer does not wait for it.  A request frame with no WQE
 * behind it, no response and no control frame waiting. */
static bool staged_last(struct sv_conn *c, const struct sv_txframe *f)
{
	const struct sv_qp *qp = c->qc->qp;

	return f == c->qc->req && !stage_empty(c) && c->qc->resp_head == c->qc->resp_tail &&
	       qp->sq.next == qp->sq.tail && !sv_ctrl_pending(c);
}

void sv_xmit_flush(struct sv_conn *c)
{
	struct sv_txframe *f;

	if (!c || !c->connected || c->dead)
		return;
	if (c->qc->ack_word_pending) {
		c->qc->ack_word_pending = false;
		sv_chan_ack_publish(c, c->qc->ack_word_psn);
		SV_CAPTURE(sv_capture_ack_word(c->qc->qp, c->qc->ack_word_psn, true));
	}
	/* Building a frame can fail a WQE and take the QP to ERR, which closes
	 * this channel: stop as soon as it is closed. */
	while ((f = next_frame(c)) && !c->closed) {
		if (!frame_write(c, f))
			goto full;
		if (staged_last(c, f))
			stage_drain(c);
		frame_done(c, f);
		if (f->fatal) {                  /* a NAK of frame_mr_hold's */
			f->fatal = false;
			sv_qp_to_error(c->qc->qp);
		}
		if (c->closed)
			return;
	}
	if (c->closed)
		return;
	if (stage_drain(c)) {
		sv_conn_want_out(c, false);
		if (c->qc->lane_due)
			sv_engine_lane_flushed(c);
		return;
	}
full:
	if (!c->dead)
		sv_conn_want_out(c, true);
}

void sv_xmit_ctrl(struct sv_conn *c, enum sv_op op, uint32_t dst, uint32_t src,
		  uint64_t data0, uint32_t imm)
{
	struct sv_txframe *f = sv_ctrl_frame(c);

	if (!f)
		return;             /* no memory: as if lost, the peer asks again */
	sv_frame_init(f, op, dst, src, 0);
	f->hdr.data0 = data0;
	f->hdr.imm = imm;
	frame_seal(f);
	sv_xmit_flush(c);
}
