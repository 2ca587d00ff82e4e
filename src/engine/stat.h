/*
 * The engine's counters for `softverbs status` (status/format.h): plain
 * stores into the QP's record, under the QP lock, from the paths that move
 * frames.  No system call, no atomic read-modify-write: a reader in
 * another process takes the words as they are.
 */
#ifndef SV_ENGINE_STAT_H
#define SV_ENGINE_STAT_H

#include "engine/engine.h"
#include "status/format.h"

/* The wire's opcodes as the status file counts them (status.c). */
extern const uint8_t sv_stat_op[SV_OP_MAX];

/* The record's queue indices and PSNs, as the QP has them now. */
static inline void sv_stat_psns(struct svst_qp *r, const struct sv_qp *qp)
{
	r->sq_psn = qp->next_psn;
	r->rq_psn = qp->epsn;
}

/* The message bytes of a frame with `payload` bytes after its header: a
 * pulled SEND carries descriptors of its rlen bytes instead, a placed one
 * nothing. */
static inline uint64_t sv_stat_bytes(uint8_t op, uint8_t flags, uint32_t rlen, uint64_t payload)
{
	return (flags & SV_WF_PULL) || (op < SV_OP_MAX && (sv_opinfo[op].flags & SV_OPF_PLACED)) ?
	       rlen : payload;
}

/*
 * Frames and direct accesses are counted in runs (struct sv_tally, in the
 * QP beside its send queue, which every request writes): a run of one
 * operation on one channel is added to the status record when it ends,
 * so a stream of small messages touches the record once per SV_TALLY_RUN
 * of them.  A run ends at that length, at another operation or channel,
 * at the QP's stat timer (armed when a run begins, so the record lags by
 * SV_STAT_LAG_NS at most) and whenever the record's descriptive part is
 * written (state, link and error changes); sv_stat_flush() then publishes
 * the queue indices and PSNs too (docs/measurements.md, 'Status counters').
 */
#define SV_TALLY_RUN    64
#define SV_TALLY_DIRECT 2        /* done in the peer's memory, without a frame */
#define SV_STAT_LAG_NS  (100ull * 1000 * 1000)
enum { SV_TALLY_TX, SV_TALLY_RX };

void sv_stat_run_end(struct sv_qp *qp, int dir);
void sv_stat_flush(struct sv_qp *qp);
void sv_stat_arm(struct sv_qp *qp);

static inline void sv_stat_add(struct sv_qp *qp, int dir, uint8_t opcode, uint8_t chan,
			       uint64_t bytes)
{
	struct sv_tally *t = &qp->tally[dir];
	uint8_t op = opcode < SV_OP_MAX ? sv_stat_op[opcode] : SVST_OP_CTRL;

	if (t->n && (t->op != op || t->chan != chan || t->n == SV_TALLY_RUN))
		sv_stat_run_end(qp, dir);
	t->op = op;
	t->chan = chan;
	t->n++;
	t->bytes += bytes;
	if (__builtin_expect(!qp->stat_deadline, 0))
		sv_stat_arm(qp);
}

/* A frame of `c` was written (its header `h` sealed, `payload` bytes after it). */
static inline void sv_stat_tx(struct sv_conn *c, const struct sv_wire_hdr *h, uint64_t payload)
{
	struct sv_qp *qp = c->qc->qp;

	if (!qp)
		return;          /* an inbound channel answered before it was bound */
	sv_stat_add(qp, SV_TALLY_TX, h->opcode, !c->outbound,
		    sv_stat_bytes(h->opcode, h->flags, SV_WIRE_GET32(h->rlen), payload));
}

/* A frame of `c` was received whole (its header in c->qc->rx_hdr). */
static inline void sv_stat_rx(struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;

	sv_stat_add(c->qc->qp, SV_TALLY_RX, h->opcode, !c->outbound,
		    sv_stat_bytes(h->opcode, h->flags, h->rlen, h->len));
}

/* A UD datagram of `qp` went out, or came in (chan[0] is its datagrams). */
static inline void sv_stat_dgram(struct sv_qp *qp, bool out, uint8_t opcode, uint64_t payload)
{
	sv_stat_add(qp, out ? SV_TALLY_TX : SV_TALLY_RX, opcode, 0, payload);
}

/* A one-sided request done in the peer's memory, without a frame. */
static inline void sv_stat_direct(struct sv_qp *qp, uint8_t opcode, uint64_t len)
{
	sv_stat_add(qp, SV_TALLY_TX, opcode, SV_TALLY_DIRECT, len);
}

#endif
