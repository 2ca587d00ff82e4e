/*
 * SENDs a same-host requester places itself (transport/shm/mirror.h).
 *
 * Requester: a SEND or SEND with immediate on an RC QP, of SV_PLACE_MIN
 * bytes (of any size from the peer's receive SV_PLACE_WARM on), with
 * nothing in flight before it and never sent before, is copied into the
 * peer's receive it takes (peer_rq_next) if the channel can place it
 * there; one of SV_PULL_MIN bytes and more only while the QP streams
 * (else the responder pulls it, req.c).  Its frame (SV_OP_PLACED) then
 * only tells the responder, and its WQE completes once that frame is
 * written, as a NIC's completes on the ACK of a SEND the responder has.
 * Otherwise it travels as any SEND.
 *
 * Responder: the receives posted to the QP are published, up to
 * SV_MIRROR_N from the next one, for the channel its requests come on; a
 * placed SEND names the receive it took, which must be the next one
 * (resp.c completes it).
 */
#include <errno.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "engine/stat.h"

/* May a SEND of `len` bytes be placed in receive number `idx`?  Both
 * ends ask: the responder publishes a receive for the SENDs its first SGE
 * could take, the requester places into a published one. */
static bool place_sized(uint32_t idx, uint32_t len)
{
	return len >= SV_PLACE_MIN || idx >= SV_PLACE_WARM;
}

/* ---- requester ---- */

static bool is_send(const struct sv_swqe *w)
{
	return w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM;
}

/* How much the peer has sent us: its requests we took, and the receives
 * its SENDs took (placed ones take no PSN). */
static uint32_t heard(const struct sv_qp *qp)
{
	return qp->epsn + qp->rq.head;
}

/* Does the QP stream SENDs: nothing heard from the peer since our last
 * one?  A large SEND is pulled by the responder in a ping-pong, where the
 * core that reads the message next copies it (measured faster), and
 * placed in a stream, where the sender's core holds the data
 * (docs/measurements.md, 'Large SENDs: placed in a stream'). */
static bool streams(const struct sv_qp *qp)
{
	return !qp->sent_send || qp->send_heard == heard(qp);
}

/* All but "nothing in flight before it". */
static bool placeable_busy(const struct sv_qp *qp, const struct sv_swqe *w)
{
	const struct sv_conn *c = qp->out;

	return is_send(w) && !w->psn_set && place_sized(qp->peer_rq_next, w->length) &&
	       (w->length < SV_PULL_MIN || streams(qp)) &&
	       qp->ibqp.qp_base.qp_type == IBV_QPT_RC && c && c->cma_ok &&
	       !(c->caps & SV_CAP_LOSSY) && !sv_conn_peer_left(c);
}

static bool placeable(const struct sv_qp *qp, const struct sv_swqe *w)
{
	return qp->sq.head == qp->sq.next && placeable_busy(qp, w);
}

/* A large SEND of a stream waits for the ACK of the SEND in flight before
 * it (pulled: the first after a ping-pong, or one whose receive was not
 * published yet), which kicks the requester (comp.c), rather than be
 * pulled too: each pulled one would keep the next in flight, and the
 * stream would stay pulled.  Not where placing is refused (the peer's
 * memory is not mapped: every SEND is pulled). */
bool sv_req_place_waits(struct sv_qp *qp, const struct sv_swqe *w)
{
	return w->length >= SV_PULL_MIN && !qp->place_refused && qp->sq.head != qp->sq.next &&
	       is_send(sv_sq_at(&qp->sq, qp->sq.next - 1)) && placeable_busy(qp, w);
}

/* Copy it into the peer's receive (its payload: iov[0..*n)); false: it
 * travels as a SEND. */
static bool place(struct sv_qp *qp, struct sv_swqe *w, struct iovec *iov, int *n)
{
	size_t total;
	int r;

	if (w->is_inline) {
		iov[0].iov_base = (uint8_t *)&w->sge[qp->sq.max_sge];
		iov[0].iov_len = w->length;
		*n = w->length ? 1 : 0;
	} else if (sv_sges_to_place(qp->ibqp.qp_base.pd, w->sge, w->num_sge, SV_LOCAL_READ, iov, n,
				    &total) != IBV_WC_SUCCESS) {
		return false;           /* its frame's fill fails it, and says why */
	}
	r = sv_chan_place(qp->out, qp->peer_rq_next, iov, *n, w->length);
	qp->place_refused = r && r != -EAGAIN;
	if (r)
		return false;
	w->placed = true;
	w->psn = qp->peer_rq_next++;
	qp->st->placed++;
	return true;
}

bool sv_req_place(struct sv_qp *qp, struct sv_swqe *w, struct sv_txframe *f)
{
	struct iovec iov[SV_PLACE_MAX_SEG];
	bool again = w->placed;       /* placed before, and a rewind dropped its frame */
	int n = 0;

	if (!again) {
		bool ok = placeable(qp, w);

		if (is_send(w)) {
			qp->send_heard = heard(qp);
			qp->sent_send = true;
		}
		if (!ok || !place(qp, w, iov, &n))
			return false;
	}
	sv_frame_init(f, w->opcode == IBV_WR_SEND ? SV_OP_PLACED : SV_OP_PLACED_IMM, qp->peer_qpn,
		      qp->ibqp.qp_base.qp_num, w->psn);
	f->hdr.rlen = w->length;
	if (w->opcode == IBV_WR_SEND_WITH_IMM)
		f->hdr.imm = w->imm;
	if (w->send_flags & IBV_SEND_SOLICITED)
		f->hdr.flags |= SV_WF_SOLICITED;
	if (!again)
		SV_CAPTURE(sv_capture_placed(qp, &f->hdr, iov, n));
	f->wqe_idx = qp->sq.next++;
	return true;
}

/* A request of this opcode takes the peer's next receive: counted when it
 * gets its PSN, so a retried one counts once. */
void sv_req_count_recv(struct sv_qp *qp, uint8_t op)
{
	if (sv_opinfo[op].flags & SV_OPF_RECV)
		qp->peer_rq_next++;
}

/* ---- responder ---- */

static bool publishes(const struct sv_qp *qp)
{
	return qp->in && qp->in->ops->recv_publish && !qp->srq &&
	       qp->ibqp.qp_base.qp_type == IBV_QPT_RC;
}

/* QP lock held: the posted receives from `from` on that lie within
 * SV_MIRROR_N of the next one.  After a post (from: the first posted),
 * after a receive is taken (from: the one that entered the window), and
 * for a new channel (from: the next one).  A receive whose first SGE is
 * too small for any placed SEND is left out: its entry still names an
 * older receive, which no requester expects there (the first
 * SV_PLACE_WARM small messages then write no entries). */
void sv_resp_publish(struct sv_qp *qp, uint32_t from)
{
	uint32_t posted = qp->rq.tail - qp->rq.head;
	uint32_t end = posted < SV_MIRROR_N ? posted : SV_MIRROR_N;

	if (!publishes(qp))
		return;
	for (uint32_t k = from - qp->rq.head; k < end; k++) {
		uint32_t idx = qp->rq.head + k;
		const struct sv_rwqe *r = sv_rq_at(&qp->rq, idx);
		struct sv_recv_pub p;

		if (!r->num_sge || !place_sized(idx, r->sge[0].length))
			continue;
		p.nsge = r->num_sge;
		p.addr = r->sge[0].addr;
		p.len = r->sge[0].length;
		p.lkey = r->sge[0].lkey;
		sv_chan_recv_publish(qp->in, idx, &p);
		qp->in->qc->recv_published = true;
	}
}

/*
 * The receive a take let into the window is published later: at the
 * QP's next ibv_post_send, once its requests are written, or at the next
 * take.  The requester read that entry's line when it placed the SEND
 * just taken, so the store waits for the line to come back, and the next
 * locked instruction waits for the store: on the answer's way, between
 * the SEND's arrival and the reply (docs/measurements.md, 'The receive
 * mirror: published after the answer').  The requester needs the entry
 * only SV_MIRROR_N SENDs later.
 */
void sv_resp_publish_due(struct sv_qp *qp)
{
	if (!qp->publish_due)
		return;
	qp->publish_due = false;
	sv_resp_publish(qp, qp->publish_from);
}

void sv_resp_publish_later(struct sv_qp *qp, uint32_t from)
{
	/* a receiver that posts no sends: the one before goes now, with this
	 * one (a publish covers the window from its start on) */
	if (qp->publish_due) {
		sv_resp_publish_due(qp);
		return;
	}
	qp->publish_from = from;
	qp->publish_due = true;
}

/* Is the receive a placed SEND names the next one, and did its first
 * SGE take the message?  (Not if its requester counted otherwise: a QP
 * reset on one side only.) */
bool sv_resp_placed_ok(struct sv_qp *qp, const struct sv_wire_hdr *h)
{
	const struct sv_rwqe *r;

	if (!publishes(qp) || h->psn != qp->rq.head || qp->rq.head == qp->rq.tail)
		return false;
	r = sv_rq_at(&qp->rq, qp->rq.head);
	return !h->rlen || (r->num_sge && h->rlen <= r->sge[0].length);
}
