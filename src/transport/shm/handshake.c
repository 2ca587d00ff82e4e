/*
 * The same-host part of a channel's handshake: shared-memory rings, the
 * segments of registered memory and the process's bell and life line
 * (shm/peer.h), offered by the opener in its HELLO, taken by the acceptor
 * in its HELLO_ACK, and switched on at both ends.  Only a same-host peer of our
 * own user (SO_PEERCRED on the unix socket) gets them; any other keeps the
 * socket (docs/security.md).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <unistd.h>

#include "transport/shm/cma.h"
#include "transport/shm/peer.h"
#include "transport/transport.h"
#include "transport/unix/sock.h"
#include "util/env.h"

bool sv_conn_same_user(struct sv_conn *c)
{
	if (!c->ops->same_host || sv_unix_peer(c->h.fd, &c->peer_pid, &c->peer_uid))
		return false;
	return c->peer_uid == getuid();
}

/* Our sleeper's descriptor goes last in the handshake frame's (if any). */
static void offer_wake(struct sv_conn *c)
{
	if (c->wake_fd >= 0 && c->n_tx_fds < SV_CONN_MAX_FDS &&
	    (c->tx_fds[c->n_tx_fds] = fcntl(c->wake_fd, F_DUPFD_CLOEXEC, 0)) >= 0)
		c->n_tx_fds++;
}

/* The peer's sleeper's descriptor, fds[at] if it sent one, named `id` in
 * its frame: kept once per peer process and id (shm/peer.h). */
static void take_wake(struct sv_conn *c, int at, uint64_t id)
{
	if (c->n_rx_fds > at) {
		c->peer_wake_fd = sv_shm_peer_wake_get(c->shm_peer, id, c->rx_fds[at]);
		c->n_rx_fds = at;
	}
}

/* Our segment, our board, our bell and our life line, after whatever the
 * frame carries already. */
static bool offer_shared(struct sv_conn *c)
{
	int seg = sv_seg_fd(), board = sv_board_fd(), n = c->n_tx_fds;

	if (seg < 0 || board < 0 || n + 2 + SV_SHM_PEER_FDS > SV_CONN_MAX_FDS)
		return false;
	if ((c->tx_fds[n] = fcntl(seg, F_DUPFD_CLOEXEC, 0)) < 0)
		return false;
	c->n_tx_fds++;
	if ((c->tx_fds[n + 1] = fcntl(board, F_DUPFD_CLOEXEC, 0)) < 0)
		return false;
	c->n_tx_fds++;
	if (sv_shm_peer_offer(c->node, &c->tx_fds[n + 2]))
		return false;
	c->n_tx_fds += SV_SHM_PEER_FDS;
	return true;
}

/* The peer's segment, board, bell and life line, fds[at] to fds[at + 3].
 * The peer's count is the channel's until it is freed (conn.c), whatever
 * comes of the handshake. */
static bool take_shared(struct sv_conn *c, int at)
{
	c->peer_seg = sv_seg_map(c->rx_fds[at]);
	c->peer_board = c->peer_seg ? sv_board_map(c->rx_fds[at + 1]) : NULL;
	if (c->peer_board) {
		c->shm_peer = sv_shm_peer_get(c->node, &c->rx_fds[at + 2], c->peer_pid);
		for (int i = 0; i < SV_SHM_PEER_FDS; i++)
			c->rx_fds[at + 2 + i] = -1;    /* taken */
		if (c->shm_peer) {
			c->peer_self = c->peer_pid == getpid();
			c->peer_maps.pid = c->peer_pid;
			c->peer_maps.pidfd = c->shm_peer->pidfd;
			return true;
		}
	}
	sv_board_unmap(c->peer_board);
	sv_seg_unmap(c->peer_seg);
	c->peer_board = NULL;
	c->peer_seg = NULL;
	return false;
}

uint64_t sv_conn_rings_offer(struct sv_conn *c)
{
	int fd;

	/* a channel with faults keeps its socket: frames only (transport/fault/) */
	if (sv_force_tcp() || c->fault || !sv_conn_same_user(c))
		return 0;
	fd = sv_shm_chan_create(&c->shm);
	if (fd < 0)
		return 0;
	c->tx_fds[0] = fd;
	c->n_tx_fds = 1;
	if (!offer_shared(c))
		return 0;
	offer_wake(c);
	return (uintptr_t)sv_seg_self();
}

/* Were rings offered, by a peer of our own user, and do they map? */
static bool rings_acceptable(struct sv_conn *c, const struct sv_wire_hdr *h)
{
	if (!(h->flags & SV_WF_SHM) || c->n_rx_fds < 3 + SV_SHM_PEER_FDS || sv_force_tcp() ||
	    c->fault || !sv_conn_same_user(c))
		return false;
	/* the rings first: their magic says the peer's layout is ours */
	if (sv_shm_chan_attach(&c->shm, c->rx_fds[0]))
		return false;
	if (!take_shared(c, 1)) {
		sv_shm_chan_destroy(&c->shm);
		return false;
	}
	take_wake(c, 3 + SV_SHM_PEER_FDS, h->data1);
	return true;
}

uint64_t sv_conn_rings_take(struct sv_conn *c, const struct sv_wire_hdr *hello)
{
	bool ok = rings_acceptable(c, hello);

	sv_conn_drop_rx_fds(c);
	if (!ok)
		return 0;
	/* Can we read the requester?  Then it may send large SENDs as
	 * addresses for us to pull. */
	c->cma_ok = !sv_cma_disabled() && hello->va && sv_cma_probe(c->peer_pid, hello->va);
	c->n_tx_fds = 0;
	if (!offer_shared(c)) {
		/* (no descriptor left): the opener, without ours, keeps the
		 * socket, so must we */
		sv_conn_drop_tx_fds(c);
		sv_seg_unmap(c->peer_seg);
		sv_board_unmap(c->peer_board);
		c->peer_seg = NULL;
		c->peer_board = NULL;
		sv_shm_chan_destroy(&c->shm);
		return 0;
	}
	offer_wake(c);
	return (uintptr_t)sv_seg_self();
}

bool sv_conn_rings_answered(struct sv_conn *c, const struct sv_wire_hdr *ack, bool pull_wanted)
{
	if ((ack->flags & SV_WF_SHM) && c->shm.map.base && c->n_rx_fds >= 2 + SV_SHM_PEER_FDS &&
	    sv_conn_same_user(c) && take_shared(c, 0)) {
		take_wake(c, 2 + SV_SHM_PEER_FDS, ack->data1);
		c->peer_pd = ack->rkey;
		c->peer_access = ack->qkey;
		c->cma_ok = !sv_cma_disabled() && sv_cma_probe(c->peer_pid, ack->va);
		c->pull_ok = c->cma_ok && (ack->flags & SV_WF_PULL) && pull_wanted;
		sv_conn_shm_start(c);
	}
	sv_conn_drop_rx_fds(c);
	if (!(c->caps & SV_CAP_MAPPED)) {
		/* The peer switched to its rings and closed the socket: a
		 * channel we cannot switch too is lost (it connects again). */
		if (ack->flags & SV_WF_SHM)
			c->dead = true;
		sv_shm_chan_destroy(&c->shm);   /* refused: the socket carries frames */
		return false;
	}
	return true;
}

/* Our receive ring's mark is enough: whoever marks the rings marks it
 * (first, when it is the peer's transmit ring). */
bool sv_conn_peer_left(const struct sv_conn *c)
{
	return (c->caps & SV_CAP_MAPPED) && __atomic_load_n(&c->shm.rx->closed, __ATOMIC_SEQ_CST);
}
