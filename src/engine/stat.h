/*
 * The engine's counters for `softverbs status` (status/format.h): plain
 * stores into the QP's record, under the QP lock, on the paths that move
 * frames.  No system call, no atomic read-modify-write: a reader in
 * another process takes the words as they are.
 */
#ifndef SV_ENGINE_STAT_H
#define SV_ENGINE_STAT_H

#include "engine/engine.h"
#include "status/format.h"

/* The wire's opcodes as the status file counts them (status.c). */
extern const uint8_t sv_stat_op[SV_OP_MAX];

static inline struct svst_ctr *sv_stat_ctr(struct svst_ctr *tab, uint8_t opcode)
{
	return &tab[opcode < SV_OP_MAX ? sv_stat_op[opcode] : SVST_OP_CTRL];
}

/* The QP's PSNs, as of this frame. */
static inline void sv_stat_psns(struct svst_qp *r, const struct sv_qp *qp)
{
	r->sq_psn = qp->next_psn;
	r->rq_psn = qp->epsn;
}

static inline void sv_stat_count(struct svst_ctr *k, uint64_t bytes)
{
	k->msgs++;
	k->bytes += bytes;
}

/* The message bytes of a frame with `payload` bytes after its header: a
 * pulled SEND carries descriptors of its rlen bytes instead. */
static inline uint64_t sv_stat_bytes(uint8_t flags, uint32_t rlen, uint64_t payload)
{
	return (flags & SV_WF_PULL) ? rlen : payload;
}

/* A frame of `c` was written (its header `h` sealed, `payload` bytes after it). */
static inline void sv_stat_tx(struct sv_conn *c, const struct sv_wire_hdr *h, uint64_t payload)
{
	struct sv_qp *qp = c->qc->qp;
	uint64_t bytes = sv_stat_bytes(h->flags, SV_WIRE_GET32(h->rlen), payload);

	if (!qp)
		return;          /* an inbound channel answered before it was bound */
	sv_stat_count(sv_stat_ctr(qp->st->tx, h->opcode), bytes);
	qp->st->chan_tx[!c->outbound]++;
	sv_stat_psns(qp->st, qp);
}

/* A frame of `c` was received whole (its header in c->qc->rx_hdr). */
static inline void sv_stat_rx(struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	struct sv_qp *qp = c->qc->qp;
	uint64_t bytes = sv_stat_bytes(h->flags, h->rlen, h->len);

	sv_stat_count(sv_stat_ctr(qp->st->rx, h->opcode), bytes);
	qp->st->chan_rx[!c->outbound]++;
	sv_stat_psns(qp->st, qp);
}

/* A UD datagram of `qp` went out, or came in (chan[0] is its datagrams). */
static inline void sv_stat_dgram(struct sv_qp *qp, bool out, uint8_t opcode, uint64_t payload)
{
	sv_stat_count(sv_stat_ctr(out ? qp->st->tx : qp->st->rx, opcode), payload);
	if (out)
		qp->st->chan_tx[0]++;
	else
		qp->st->chan_rx[0]++;
}

/* A one-sided request done in the peer's memory, without a frame. */
static inline void sv_stat_direct(struct sv_qp *qp, uint8_t opcode, uint64_t len)
{
	sv_stat_count(sv_stat_ctr(qp->st->tx, opcode), len);
	qp->st->direct++;
}

/* The send queue's head moved (completions). */
static inline void sv_stat_sq_done(struct sv_qp *qp)
{
	qp->st->sq.done = qp->sq.head;
}

#endif
