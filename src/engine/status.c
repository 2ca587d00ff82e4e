/*
 * A QP's record in this process's status file (status/format.h): its
 * descriptive part, rewritten under the record's seqlock whenever the QP's
 * state, link, channels or last error change (all under the QP lock), and
 * the counters' runs (stat.h) added into it.
 */
#include <stdio.h>
#include <string.h>

#include "engine/stat.h"
#include "status/publish.h"

/* Every opcode has its entry (a missing one would count as SEND). */
static_assert(SV_OP_MAX == SV_OP_LANE_ACK + 1, "a new opcode needs its entry in sv_stat_op");
const uint8_t sv_stat_op[SV_OP_MAX] = {
	[SV_OP_SEND] = SVST_OP_SEND, [SV_OP_SEND_IMM] = SVST_OP_SEND_IMM,
	[SV_OP_SEND_INV] = SVST_OP_SEND_INV, [SV_OP_WRITE] = SVST_OP_WRITE,
	[SV_OP_WRITE_IMM] = SVST_OP_WRITE_IMM, [SV_OP_READ_REQ] = SVST_OP_READ_REQ,
	[SV_OP_READ_RESP] = SVST_OP_READ_RESP, [SV_OP_CMP_SWP] = SVST_OP_CMP_SWP,
	[SV_OP_FETCH_ADD] = SVST_OP_FETCH_ADD, [SV_OP_ATOMIC_RESP] = SVST_OP_ATOMIC_RESP,
	[SV_OP_ATOMIC_WRITE] = SVST_OP_ATOMIC_WRITE, [SV_OP_ACK] = SVST_OP_ACK,
	[SV_OP_NAK] = SVST_OP_NAK, [0] = SVST_OP_CTRL, [SV_OP_HELLO] = SVST_OP_CTRL,
	[SV_OP_HELLO_ACK] = SVST_OP_CTRL, [SV_OP_HELLO_NAK] = SVST_OP_CTRL,
	[SV_OP_VERIFY] = SVST_OP_CTRL, [SV_OP_VERIFY_ACK] = SVST_OP_CTRL,
	[SV_OP_LANE] = SVST_OP_CTRL, [SV_OP_LANE_ACK] = SVST_OP_CTRL,
	[SV_OP_PLACED] = SVST_OP_SEND, [SV_OP_PLACED_IMM] = SVST_OP_SEND_IMM,
};

static_assert(SVST_ERR_LEN == SV_QP_ERR_LEN, "a QP's explanation fits its record whole");

/* A channel's kind, short, from its transport's name. */
static const struct { const char *name, *kind; } kinds[] = {
	{ "shared memory", "shm" }, { "unix socket", "unix" }, { "tcp", "tcp" },
};

static const char *chan_kind(const struct sv_conn *c)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(c->ops->name, kinds[i].name))
			return kinds[i].kind;
	return c->ops->name;
}

static const uint32_t link_state[SV_LINK_NSTATES] = {
	[SV_LINK_IDLE] = SVST_CHAN_IDLE, [SV_LINK_CONNECTING] = SVST_CHAN_CONNECTING,
	[SV_LINK_HELLO] = SVST_CHAN_HELLO, [SV_LINK_UP] = SVST_CHAN_UP,
	[SV_LINK_BACKOFF] = SVST_CHAN_BACKOFF,
};

static void chan_fill(struct svst_chan *s, const struct sv_conn *c, uint32_t state,
		      uint32_t peer_addr)
{
	memset(s->kind, 0, sizeof(s->kind));
	if (c)
		snprintf(s->kind, sizeof(s->kind), "%s", chan_kind(c));
	s->state = c ? state : SVST_CHAN_NONE;
	s->peer_addr = c ? peer_addr : 0;
	s->peer_pid = c ? (uint32_t)c->peer_pid : 0;
}

void sv_engine_status_qp(struct sv_qp *qp)
{
	struct svst_qp *r = qp->st;
	const struct ibv_qp *q = &qp->ibqp.qp_base;
	bool connected = q->qp_type != IBV_QPT_UD;

	svst_write_begin(&r->h);
	r->qpn = q->qp_num;
	r->type = q->qp_type;
	r->state = qp->attr.qp_state;
	r->peer_qpn = connected ? qp->peer_qpn : 0;
	r->pd = q->pd ? to_spd(q->pd)->id : 0;
	r->srqn = qp->srq ? qp->srq->srq_num : 0;
	r->max_send_wr = qp->cap.max_send_wr;
	r->max_recv_wr = qp->cap.max_recv_wr;
	if (connected) {
		chan_fill(&r->chan[0], qp->out, link_state[qp->link], qp->peer.sin_addr.s_addr);
		chan_fill(&r->chan[1], qp->in, SVST_CHAN_UP, qp->peer.sin_addr.s_addr);
	} else {
		memset(r->chan[0].kind, 0, sizeof(r->chan[0].kind));
		strcpy(r->chan[0].kind, "udp");
		r->chan[0].state = SVST_CHAN_UP;
	}
	if (qp->last_err)
		memcpy(r->last_err, qp->last_err, sizeof(r->last_err));
	else
		r->last_err[0] = 0;
	r->last_err[sizeof(r->last_err) - 1] = 0;
	svst_write_end(&r->h);
	sv_stat_flush(qp);
}

void sv_stat_run_end(struct sv_qp *qp, int dir)
{
	struct sv_tally *t = &qp->tally[dir];
	struct svst_ctr *k = &(dir == SV_TALLY_TX ? qp->st->tx : qp->st->rx)[t->op];

	k->msgs += t->n;
	k->bytes += t->bytes;
	if (t->chan == SV_TALLY_DIRECT)
		qp->st->direct += t->n;
	else if (dir == SV_TALLY_TX)
		qp->st->chan_tx[t->chan] += t->n;
	else
		qp->st->chan_rx[t->chan] += t->n;
	t->n = 0;
	t->bytes = 0;
}

/* A run began: the QP's timer ends it within SV_STAT_LAG_NS (comp.c). */
void sv_stat_arm(struct sv_qp *qp)
{
	qp->stat_deadline = sv_now_ns() + SV_STAT_LAG_NS;
	sv_qp_timer_update(qp);
}

void sv_stat_flush(struct sv_qp *qp)
{
	struct svst_qp *r = qp->st;

	for (int dir = SV_TALLY_TX; dir <= SV_TALLY_RX; dir++)
		if (qp->tally[dir].n)
			sv_stat_run_end(qp, dir);
	sv_stat_psns(r, qp);
	r->sq.posted = qp->sq.tail;
	r->sq.done = qp->sq.head;
	r->rq.posted = qp->rq.tail;
	r->rq.done = qp->rq.head;
}

void sv_engine_status_open(void)
{
	const struct sv_addr_plan *p = sv_addr_plan();

	svst_open(SV_DEVICE_NAME, p->addr.s_addr);
}
