/*
 * Who may talk to a QP: an inbound channel carries a QP's traffic only once
 * its peer is proven to be the QP's configured one (docs/security.md).
 *
 * A HELLO says which QP it comes from, but anyone who can reach our port can
 * write one.  Our own outbound channel, though, reaches the address and port
 * the QP was given at RTR: what comes back on it comes from the real peer.
 * So a channel's opener puts a random nonce in its HELLO, and we ask the
 * claimed peer on our outbound channel whether it opened a channel to us
 * with that nonce (VERIFY); it answers on the same channel (VERIFY_ACK).  A
 * stranger never sees the nonce (it travelled to our port only), and asking
 * us about one teaches it nothing but a yes or no about its own guess.
 * Questions travel before either side says HELLO_ACK, so no data ever waits
 * behind one.  A peer on this host of our own user (SO_PEERCRED of a unix
 * socket) is trusted as it is: it could ptrace us anyway.
 *
 * Until then the channel is a candidate: it stays on node->pending (whose
 * reaper closes it after a while), takes only control frames, and the QP
 * does not know it.  A failed candidate is closed; the QP never sees it.
 */
#include <sys/random.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/log.h"

#define SV_CANDS_MAX 64     /* candidates handled per look (node->pending is capped) */

SV_NAME_TABLE(sv_peer_state_name, enum sv_peer_state, SV_PEER_NSTATES,
	      [SV_PEER_UNKNOWN] = "unknown", [SV_PEER_CLAIMED] = "claimed",
	      [SV_PEER_ASKED] = "asked", [SV_PEER_VERIFIED] = "verified")

uint64_t sv_verify_nonce(void)
{
	uint64_t n = 0;

	while (!n)
		if (getrandom(&n, sizeof(n), 0) != sizeof(n))
			n = 0;
	return n;
}

static void set_state(struct sv_conn *c, enum sv_peer_state s)
{
	sv_info("qp %u: inbound channel from qp %u: %s -> %s", c->qc->qp->ibqp.qp_base.qp_num,
		c->qc->hello.src_qpn, sv_peer_state_name(c->qc->peer_state), sv_peer_state_name(s));
	__atomic_store_n(&c->qc->peer_state, s, __ATOMIC_RELEASE);   /* on_conn reads it unlocked */
}

/* The candidates of `qp`, oldest first. */
static int candidates(struct sv_qp *qp, struct sv_conn **out)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	struct sv_list *pos, *tmp;
	int n = 0;

	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->pending) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, node_link);

		if (c->qc->qp == qp && !__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) &&
		    n < SV_CANDS_MAX)
			out[n++] = c;
	}
	pthread_mutex_unlock(&node->lock);
	return n;
}


static void drop(struct sv_conn *c, const char *why)
{
	sv_info("qp %u: inbound channel claiming qp %u closed: %s", c->qc->qp->ibqp.qp_base.qp_num,
		c->qc->hello.src_qpn, why);
	sv_conn_close(c);
}

/* The peer is proven: the channel becomes the QP's inbound one. */
static void bind_channel(struct sv_qp *qp, struct sv_conn *c)
{
	struct sv_node *node = c->node;

	pthread_mutex_lock(&node->lock);
	sv_list_del(&c->node_link);
	pthread_mutex_unlock(&node->lock);
	set_state(c, SV_PEER_VERIFIED);
	if (qp->in) {
		sv_conn_close(qp->in);
		sv_req_turned_lost(qp);
	}
	qp->in = c;
	c->qc->turn_ok = (c->qc->hello.flags & SV_WF_TURN) && (c->caps & SV_CAP_TURN);
	c->qc->resp_head = c->qc->resp_tail = 0;
	if (!sv_rx_answer_hello(c, qp)) {
		sv_conn_lost(c);
		return;
	}
	sv_resp_publish(qp, qp->rq.head);    /* receives posted before it came */
	/* (an XRC target's requests go to their SRQs' CQs: none of its own) */
	sv_engine_drive_register(c, sv_qp_is_xrc_tgt(qp) ? NULL : qp->rcq);
	sv_engine_drive_register_also(c, qp->scq);
	sv_conn_pause(c, false);
	sv_engine_status_qp(qp);
}

/* Ask the claimed peer, on our own channel to it, about the nonce. */
static void ask(struct sv_qp *qp, struct sv_conn *c)
{
	struct sv_conn *out = qp->out;

	if (!out || !out->connected || out->dead || sv_ctrl_busy(out) ||
	    (qp->link != SV_LINK_HELLO && qp->link != SV_LINK_UP))
		return;
	set_state(c, SV_PEER_ASKED);
	sv_xmit_ctrl(out, SV_OP_VERIFY, qp->peer_qpn, qp->ibqp.qp_base.qp_num, c->qc->nonce, 0);
}

/* One candidate, after a change of the QP or of the candidate. */
static void advance(struct sv_qp *qp, struct sv_conn *c, bool ask_again)
{
	enum ibv_qp_state s = qp->attr.qp_state;

	if (s < IBV_QPS_RTR || s == IBV_QPS_ERR)
		return;                        /* nothing binds before RTR */
	if (c->qc->hello.src_qpn != qp->peer_qpn) {
		drop(c, "not the QP's peer");
		return;
	}
	if (sv_conn_same_user(c))
		bind_channel(qp, c);
	else if (c->qc->peer_state == SV_PEER_CLAIMED || ask_again)
		ask(qp, c);
}

/* QP lock held: the QP reached RTR, its outbound channel said HELLO, or a
 * question was answered; `ask_again`: a new outbound channel, where
 * earlier questions were lost. */
void sv_verify_look(struct sv_qp *qp, bool ask_again)
{
	struct sv_conn *cands[SV_CANDS_MAX];
	int n = candidates(qp, cands);

	for (int i = 0; i < n; i++)
		if (!cands[i]->closed)
			advance(qp, cands[i], ask_again);
}

/* attach_inbound (recv.c): a HELLO named `qp`, which may take it. */
void sv_verify_attach(struct sv_qp *qp, struct sv_conn *c)
{
	struct sv_node *node = c->node;

	pthread_mutex_lock(&node->lock);        /* candidates() reads it */
	c->qc->qp = qp;
	pthread_mutex_unlock(&node->lock);
	c->qc->nonce = c->qc->hello.data0;
	set_state(c, SV_PEER_CLAIMED);
	advance(qp, c, false);
}

/* On an inbound channel, verified or not: the peer asks whether our
 * outbound channel to it carried this nonce. */
void sv_verify_on_question(struct sv_qp *qp, struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	struct sv_conn *out = qp->out;
	bool yes = out && out->qc->nonce == h->data0 && qp->peer_qpn == h->src_qpn &&
		   qp->attr.qp_state >= IBV_QPS_RTR && qp->attr.qp_state != IBV_QPS_ERR;

	if (h->src_qpn != c->qc->hello.src_qpn && c->qc->peer_state != SV_PEER_VERIFIED) {
		sv_engine_protocol_error(c, "VERIFY from another QP than its HELLO's");
		return;
	}
	if (sv_ctrl_busy(c))
		return;              /* the asker's candidate expires; its peer reconnects */
	sv_xmit_ctrl(c, SV_OP_VERIFY_ACK, h->src_qpn, qp->ibqp.qp_base.qp_num, h->data0, yes);
}

/* On our outbound channel: the answer about one of our candidates. */
void sv_verify_on_answer(struct sv_qp *qp, struct sv_conn *out)
{
	const struct sv_wire_hdr *h = &out->qc->rx_hdr;
	struct sv_conn *cands[SV_CANDS_MAX];
	int n = candidates(qp, cands);

	for (int i = 0; i < n; i++) {
		struct sv_conn *c = cands[i];

		if (c->closed || c->qc->peer_state != SV_PEER_ASKED || c->qc->nonce != h->data0)
			continue;
		if (h->imm == 1)
			bind_channel(qp, c);
		else
			drop(c, "its peer did not open it");
	}
}

/* The QP is reset, fails or is destroyed: its candidates go with it. */
void sv_verify_drop_all(struct sv_qp *qp)
{
	struct sv_conn *cands[SV_CANDS_MAX];
	int n;

	while ((n = candidates(qp, cands)) > 0)
		for (int i = 0; i < n; i++)
			sv_conn_close(cands[i]);
}

/* node.c's reaper: a channel that has not proven its peer in time. */
void sv_engine_pending_expired(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
		return;
	if (!qp) {
		sv_conn_close(c);        /* it never named a QP */
		return;
	}
	sv_qlock_lock(&qp->lock);
	if (!c->closed && c->qc->peer_state != SV_PEER_VERIFIED)
		drop(c, "no proof in time");
	sv_qlock_unlock(&qp->lock);
}
