/*
 * Channels, whatever carries them: creation, the progress thread's events,
 * pausing and deferring, closing and freeing, accepting.  How bytes move is
 * the channel's ops (struct sv_chan_ops): tcp/stream.c, unix/stream.c,
 * shm/ringchan.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/fault/fault.h"
#include "transport/shm/peer.h"
#include "transport/tcp/lane.h"
#include "transport/transport.h"
#include "util/guard.h"
#include "util/log.h"
#include "util/sys.h"

/* Socket options for a stream channel (TCP or unix: the TCP ones fail
 * harmlessly on a unix socket). */
void sv_conn_tune_socket(int fd)
{
	int one = 1, sz = 4 << 20, idle = 1, intvl = 1, cnt = 3, user_ms = 4000;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0) {
		/* A TCP peer whose host vanished (link down) sends no FIN: probe,
		 * so the channel fails within seconds and the QP's retry budget
		 * decides what follows.  (A unix socket reports death at once.) */
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof(user_ms));
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

__thread bool sv_conn_blind __attribute__((tls_model("initial-exec")));

static void on_events(struct sv_handler *h, uint32_t events)
{
	struct sv_conn *c = sv_container_of(h, struct sv_conn, h);

	c->node->up->chan_ready(c, events);
}

struct sv_conn *sv_conn_new(struct sv_node *node, int fd, bool outbound, bool connected,
			    const struct sv_chan_ops *ops)
{
	/* The engine's state follows on cache lines of its own, so that where
	 * its hot fields fall does not move with this struct's size (32 more
	 * bytes here made a same-host ping-pong slower: docs/measurements.md,
	 * 'Across veth: the kernel's TCP is most of a one-way trip'). */
	size_t at = (sizeof(struct sv_conn) + 63) & ~(size_t)63;
	size_t size = (at + node->up->chan_size + 63) & ~(size_t)63;
	struct sv_conn *c = aligned_alloc(64, size);

	if (!c)
		return NULL;
	memset(c, 0, size);
	c->qc = (struct sv_qpchan *)((char *)c + at);
	pthread_mutex_init(&c->watch_lock, NULL);
	c->h.fd = fd;
	c->h.fn = on_events;
	c->node = node;
	c->outbound = outbound;
	c->connected = connected;
	c->ops = ops;
	c->caps = ops->caps;
	sv_list_init(&c->node_link);
	sv_list_init(&c->shm_link);
	sv_conn_tune_socket(fd);
	c->want_out = !connected;
	c->wake_fd = c->peer_wake_fd = -1;
	c->peer_maps.pidfd = -1;
	if (sv_fault_stream_attach(c, ops == &sv_tcp_ops ? SV_FAULT_TCP : SV_FAULT_UNIX)) {
		free(c);
		return NULL;
	}
	return c;
}

int sv_conn_start(struct sv_conn *c)
{
	return sv_node_watch(c->node, &c->h, EPOLLIN | (c->connected ? 0 : EPOLLOUT));
}

void sv_conn_free_unstarted(struct sv_conn *c)
{
	c->node->up->chan_free(c);
	sv_fault_stream_free(c);
	sv_lane_free(c);
	sv_close(c->h.fd);
	pthread_mutex_destroy(&c->watch_lock);
	free(c);
}

#define SV_CONN_DEFERRED (1u << 31)     /* a deferral, even of no events */

static uint32_t conn_events(struct sv_conn *c)
{
	if (__atomic_load_n(&c->deferred, __ATOMIC_RELAXED))
		return 0;
	/* Input of a paused channel waits; that of a channel whose CQ a poller
	 * spins on is the poller's (waking us would only compete with it). */
	return (__atomic_load_n(&c->paused, __ATOMIC_RELAXED) ||
		__atomic_load_n(&c->spin_off, __ATOMIC_RELAXED) ? 0 : EPOLLIN) |
	       (__atomic_load_n(&c->want_out, __ATOMIC_RELAXED) ? EPOLLOUT : 0);
}

/* The progress thread's events for the channel, as they are now
 * (watch_lock held).  A socket a spinning poller reads on every poll
 * leaves the set while those events are none: an entry, even one that
 * masks every event, costs the peer's `send` a wake-up call per message
 * on veth (docs/measurements.md, 'The hot socket out of its epoll sets').
 * It is back in with its events as soon as it has any. */
static void watch_apply(struct sv_conn *c)
{
	uint32_t events = conn_events(c);
	bool out = !events && c->spin_reads;

	if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) || c->h.fd < 0)
		return;
	if (out == c->unwatched) {
		if (!out)
			sv_node_rewatch(c->node, &c->h, events);
		return;
	}
	c->unwatched = out;
	if (out)
		sv_node_unwatch(c->node, &c->h);
	else
		sv_node_watch(c->node, &c->h, events);
}

/* The one place a started channel's events change.  Its owner (under
 * qp->lock) and a spinning poller (under the CQ's drive_lock) both change
 * them: under watch_lock the last writer sees every flag as it is now. */
void sv_conn_rewatch(struct sv_conn *c)
{
	pthread_mutex_lock(&c->watch_lock);
	watch_apply(c);
	pthread_mutex_unlock(&c->watch_lock);
}

void sv_conn_drop_socket(struct sv_conn *c)
{
	/* out of the CQs' epoll sets first (whose pollers count the sockets
	 * in them); a switched channel registers again as a ring */
	c->node->up->drive_forget(c);
	pthread_mutex_lock(&c->watch_lock);     /* no rewatch of a reused fd */
	if (c->h.fd >= 0) {
		sv_node_unwatch(c->node, &c->h);
		sv_close(c->h.fd);
		c->h.fd = -1;
	}
	pthread_mutex_unlock(&c->watch_lock);
}

void sv_conn_want_out(struct sv_conn *c, bool on)
{
	if (c->want_out == on || c->closed)
		return;
	__atomic_store_n(&c->want_out, on, __ATOMIC_RELAXED);  /* pollers read it */
	sv_conn_rewatch(c);
}

void sv_conn_pause(struct sv_conn *c, bool paused)
{
	if (c->paused == paused || c->closed)
		return;
	__atomic_store_n(&c->paused, paused, __ATOMIC_RELAXED);
	sv_conn_rewatch(c);
	/* a resumed ring may hold frames no doorbell or bit announces any more */
	if (!paused && (c->caps & SV_CAP_MAPPED)) {
		sv_conn_board_remind(c);
		if (!sv_node_on_progress_thread(c->node))
			sv_node_kick(c->node);
	}
}

void sv_conn_defer(struct sv_conn *c, uint32_t events)
{
	if (!__atomic_fetch_or(&c->deferred, events | SV_CONN_DEFERRED, __ATOMIC_SEQ_CST))
		sv_conn_rewatch(c);
}

bool sv_conn_take_deferred(struct sv_conn *c, uint32_t *events)
{
	uint32_t d = __atomic_exchange_n(&c->deferred, 0, __ATOMIC_SEQ_CST);

	*events = d & ~SV_CONN_DEFERRED;
	return d != 0;
}

/* Caller holds the drive_lock of a CQ the channel completes to; an
 * inbound TCP channel belongs to two (engine/drive.c), so this counts. */
void sv_conn_spin_off(struct sv_conn *c, bool off)
{
	pthread_mutex_lock(&c->watch_lock);
	if (!off && !c->spin_off) {              /* unpaired: never below 0 */
		pthread_mutex_unlock(&c->watch_lock);
		return;
	}
	__atomic_store_n(&c->spin_off, c->spin_off + (off ? 1 : -1), __ATOMIC_RELAXED);
	if (c->spin_off == (off ? 1 : 0))
		watch_apply(c);
	pthread_mutex_unlock(&c->watch_lock);
}

void sv_conn_spin_reads(struct sv_conn *c, bool on)
{
	pthread_mutex_lock(&c->watch_lock);
	if (on || c->spin_reads) {               /* unpaired: never below 0 */
		c->spin_reads += on ? 1 : -1;
		if (c->spin_reads == (on ? 1 : 0))
			watch_apply(c);
	}
	pthread_mutex_unlock(&c->watch_lock);
}

void sv_conn_drop_rx_fds(struct sv_conn *c)
{
	for (int i = 0; i < c->n_rx_fds; i++)
		if (c->rx_fds[i] >= 0)          /* (-1: taken) */
			sv_close(c->rx_fds[i]);
	c->n_rx_fds = 0;
}

void sv_conn_drop_tx_fds(struct sv_conn *c)
{
	for (int i = 0; i < c->n_tx_fds; i++)
		sv_close(c->tx_fds[i]);
	c->n_tx_fds = 0;
}

void sv_conn_close(struct sv_conn *c)
{
	struct sv_node *node;

	if (!c || c->closed)
		return;
	node = c->node;
	sv_fault_stream_close(c);
	__atomic_store_n(&c->closed, true, __ATOMIC_RELEASE);
	c->dead = true;
	if (c->ops->close)
		c->ops->close(c);
	sv_conn_drop_socket(c);
	sv_conn_drop_rx_fds(c);
	sv_conn_drop_tx_fds(c);
	if (c->peer_wake_fd >= 0 && c->shm_peer)
		sv_shm_peer_wake_put(c->shm_peer, c->peer_wake_fd);
	else if (c->peer_wake_fd >= 0)
		sv_close(c->peer_wake_fd);
	c->peer_wake_fd = -1;
	pthread_mutex_lock(&node->lock);
	sv_list_del(&c->shm_link);
	sv_list_del(&c->node_link);
	sv_list_add_tail(&node->graveyard, &c->node_link);
	pthread_mutex_unlock(&node->lock);
}

/* Frees what was closed, unless an application thread is inside a guard
 * (util/guard.h): it may hold pointers to them.  The graveyard is taken
 * first, the guards looked at after: a thread that found a channel before
 * it was closed (and buried) is seen inside by then. */
void sv_conn_reap(struct sv_node *node)
{
	struct sv_list dead, *pos, *tmp;

	sv_list_init(&dead);
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->graveyard) {
		sv_list_del(pos);
		sv_list_add_tail(&dead, pos);
	}
	pthread_mutex_unlock(&node->lock);
	if (sv_list_empty(&dead))
		return;
	if (!sv_guard_quiet()) {
		pthread_mutex_lock(&node->lock);
		sv_list_for_each_safe(pos, tmp, &dead) {
			sv_list_del(pos);
			sv_list_add_tail(&node->graveyard, pos);
		}
		pthread_mutex_unlock(&node->lock);
		return;
	}
	sv_list_for_each_safe(pos, tmp, &dead) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, node_link);

		c->node->up->chan_free(c);
		sv_conn_board_leave(c);
		sv_shm_chan_destroy(&c->shm);
		sv_peer_maps_clear(&c->peer_maps);
		sv_seg_unmap(c->peer_seg);
		sv_board_unmap(c->peer_board);
		sv_shm_peer_put(c->shm_peer);   /* (after the batch: see peer.c) */
		sv_fault_stream_free(c);
		sv_lane_free(c);
		pthread_mutex_destroy(&c->watch_lock);
		free(c);
	}
}

ssize_t sv_conn_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	if (__builtin_expect(c->caps & SV_CAP_LOSSY, 0))     /* (a flag in a hot line) */
		return sv_fault_stream_writev(c, iov, n);
	return c->ops->writev(c, iov, n);
}

ssize_t sv_conn_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	if (__builtin_expect(c->caps & SV_CAP_LOSSY, 0))
		return sv_fault_stream_readv(c, iov, n);
	return c->ops->readv(c, iov, n);
}

bool sv_conn_input_pending(const struct sv_conn *c)
{
	return sv_fault_stream_pending(c);
}

/* A socket's answer, as the ops report it: written bytes, 0 when full
 * (EAGAIN); and for reads -EAGAIN when empty.  Anything else kills it. */
ssize_t sv_conn_sock_wrote(struct sv_conn *c, ssize_t r)
{
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return 0;
	if (r < 0)
		c->dead = true;
	return r;
}

ssize_t sv_conn_sock_read(struct sv_conn *c, ssize_t r)
{
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return -EAGAIN;
	if (r <= 0)
		c->dead = true;
	return r;
}

const char *sv_conn_kind_name(const struct sv_conn *c)
{
	return c->ops->name;
}

ssize_t sv_conn_read(struct sv_conn *c, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return sv_conn_readv(c, &iov, 1);
}

/* Accepts per wake-up: the HELLOs of those accepted are read before more
 * come in, or a burst of connection setups would fill the pending list. */
#define SV_ACCEPT_BATCH 16

/* Accept queued connections (a TCP or unix listener: ops); each waits for its HELLO on the node's
 * pending list, which bounds how many and for how long. */
static void accept_all(struct sv_pgroup *g, int lfd, const struct sv_chan_ops *ops)
{
	for (int i = 0; i < SV_ACCEPT_BATCH; i++) {
		int fd = sv_accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sv_conn *c;

		if (fd < 0) {
			sv_node_accept_failed(g, errno);
			return;
		}
		if (!sv_node_pending_room(g)) {
			sv_close(fd);       /* left queued, it would keep the listener ready */
			continue;
		}
		c = sv_conn_new(g->node, fd, false, true, ops);
		if (!c) {
			sv_close(fd);
			continue;
		}
		if (ops == &sv_tcp_ops)
			sv_tcp_accepted(c);
		sv_node_pending_add(g, c);
		if (sv_conn_start(c))
			sv_conn_close(c);
	}
}

void sv_conn_on_accept(struct sv_handler *h, uint32_t events)
{
	accept_all(sv_container_of(h, struct sv_pgroup, listen_h), h->fd, &sv_tcp_ops);
}

void sv_conn_on_accept_unix(struct sv_handler *h, uint32_t events)
{
	accept_all(sv_container_of(h, struct sv_pgroup, unix_h), h->fd, &sv_unix_ops);
}
