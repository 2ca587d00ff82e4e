/*
 * A QP pair in one process, served at once: after a post whose frames went
 * into a ring read by a QP of this same process, the posting thread serves
 * that QP's side itself, as a NIC processes a loopback without anyone
 * polling the receiver.  One thread often drives both ends (rdma-core's
 * pyverbs traffic(), loopback tests): it posts, then polls the sender's
 * CQ, whose completion needs the receiver's side served.  Without this the
 * receiver's progress thread had to be woken for it (docs/measurements.md,
 * 'One thread, both ends').
 */
#include "engine/engine.h"

/* QP lock held: did the post write into a ring of this process?  Then
 * `*peer` is the QP to serve once the lock is released. */
bool sv_engine_loopback_peer(const struct sv_qp *qp, uint32_t *peer)
{
	const struct sv_conn *c = qp->out;

	if (!c || !c->peer_self || !(c->caps & SV_CAP_MAPPED))
		return false;
	*peer = qp->peer_qpn;
	return true;
}

/* No lock held.  The peer is looked up inside the drivers' section, which
 * ibv_destroy_qp waits for after unlinking it; a peer busy elsewhere (its
 * lock taken) is served by its holder or its progress thread. */
void sv_engine_loopback(struct sv_node *node, uint32_t peer_qpn)
{
	struct sv_qp *peer;

	sv_engine_enter(node);
	peer = sv_node_lookup_qp(node, peer_qpn);
	if (peer && sv_qlock_trylock(&peer->lock)) {
		struct sv_conn *c = peer->in;

		if (c && c->peer_self && c->connected && !c->closed && (c->caps & SV_CAP_MAPPED))
			sv_rx_serve(c);
		sv_qp_unlock(peer);
	}
	sv_engine_leave(node);
}
