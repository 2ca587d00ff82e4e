/*
 * A TCP channel's datagram lane, agreed on in the stream (the transport
 * does the rest: transport/tcp/lane.h).  Only a channel that carries
 * frames whose peer waits for them alone (a ping-pong's) gets one, so
 * idle and streaming QPs keep one descriptor per channel.
 *
 * The answerer of a HELLO says in its HELLO_ACK that it takes LANE
 * frames.  The connecting end then offers a lane after the first such
 * frame it writes: LANE (its UDP port and the secret datagrams to it
 * carry), answered by LANE_ACK (the answerer's, or port 0: none).  Either
 * end's frames are copied from then on; the stream stays the truth.
 */
#include "engine/engine.h"
#include "status/format.h"
#include "util/log.h"

SV_NAME_TABLE(sv_lane_state_name, enum sv_lane_state, SV_LANE_NSTATES,
	      [SV_LANE_NO] = "NO", [SV_LANE_MAY] = "MAY", [SV_LANE_OFFERED] = "OFFERED",
	      [SV_LANE_UP] = "UP")

static void lane_set(struct sv_conn *c, enum sv_lane_state s)
{
	sv_trace("qp %u: lane %s -> %s", c->qc->qp ? c->qc->qp->ibqp.qp_base.qp_num : 0,
		 sv_lane_state_name(c->qc->lane), sv_lane_state_name(s));
	c->qc->lane = s;
}

/* Answerer, building a HELLO_ACK that switches to no rings. */
void sv_engine_lane_hello_answer(struct sv_conn *c, struct sv_wire_hdr *ack)
{
	if (sv_chan_lanes(c))
		ack->imm = SV_HELLO_LANES;
}

/* Connecting end, its HELLO_ACK read. */
void sv_engine_lane_hello_ack(struct sv_conn *c, const struct sv_wire_hdr *ack)
{
	bool may = !(ack->flags & SV_WF_SHM) && (ack->imm & SV_HELLO_LANES) && sv_chan_lanes(c);

	lane_set(c, may ? SV_LANE_MAY : SV_LANE_NO);
}

static void lane_up(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	sv_chan_lane_counters(c, &qp->st->lane_tx, &qp->st->lane_rx);
	lane_set(c, SV_LANE_UP);
}

/* A flush wrote everything: offer the lane its frames wanted. */
void sv_engine_lane_flushed(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;
	struct sv_lane_offer ours;

	c->qc->lane_due = false;
	if (c->qc->lane != SV_LANE_MAY || !c->outbound || !qp)
		return;
	if (!sv_chan_lane_offer(c, &ours)) {
		lane_set(c, SV_LANE_NO);
		return;
	}
	lane_set(c, SV_LANE_OFFERED);
	sv_xmit_ctrl(c, SV_OP_LANE, qp->peer_qpn, qp->ibqp.qp_base.qp_num, ours.secret, ours.port);
}

/* LANE (answerer) or LANE_ACK (connecting end), from the verified peer. */
void sv_engine_lane_on_frame(struct sv_conn *c, const struct sv_wire_hdr *h)
{
	struct sv_qp *qp = c->qc->qp;
	struct sv_lane_offer theirs = { .port = (uint16_t)h->imm, .secret = h->data0 }, ours = { 0 };

	if (c->qc->peer_state != SV_PEER_VERIFIED || h->imm > UINT16_MAX ||
	    (h->opcode == SV_OP_LANE) == c->outbound ||
	    (h->opcode == SV_OP_LANE_ACK && c->qc->lane != SV_LANE_OFFERED)) {
		sv_engine_protocol_error(c, "unexpected LANE frame");
		return;
	}
	if (h->opcode == SV_OP_LANE_ACK) {
		sv_chan_lane_answered(c, &theirs);
		if (theirs.port && sv_chan_lane_up(c))
			lane_up(c);
		else
			lane_set(c, SV_LANE_NO);
		return;
	}
	if (c->qc->lane != SV_LANE_UP && sv_chan_lane_take(c, &theirs, &ours))
		lane_up(c);
	sv_xmit_ctrl(c, SV_OP_LANE_ACK, qp->peer_qpn, qp->ibqp.qp_base.qp_num, ours.secret,
		     ours.port);
}
