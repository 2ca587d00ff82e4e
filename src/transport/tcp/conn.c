/* TCP channels: a non-blocking stream socket per direction of a QP pair. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/transport.h"
#include "transport/unix/sock.h"
#include "util/log.h"
#include "util/time.h"

#define SV_RBUF_LEN (256 * 1024)

static void tune_socket(int fd)
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

/* A same-host socket: it names its peer and carries descriptors, and it
 * becomes a ring channel (or stays another user's socket). */
static void conn_set_unix(struct sv_conn *c)
{
	c->is_unix = true;
	c->caps = 0;
}

static void on_events(struct sv_handler *h, uint32_t events)
{
	struct sv_conn *c = sv_container_of(h, struct sv_conn, h);

	c->node->up->chan_ready(c, events);
}

struct sv_conn *sv_conn_new(struct sv_node *node, int fd, bool outbound, bool connected)
{
	struct sv_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rbuf = malloc(SV_RBUF_LEN);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->watch_lock, NULL);
	c->h.fd = fd;
	c->h.fn = on_events;
	c->node = node;
	c->outbound = outbound;
	c->connected = connected;
	c->caps = SV_CAP_TURN | SV_CAP_SPIN_TAKE;     /* TCP, until said otherwise */
	sv_list_init(&c->pending_link);
	sv_list_init(&c->shm_link);
	tune_socket(fd);
	c->want_out = !connected;
	return c;
}

int sv_conn_start(struct sv_conn *c)
{
	return sv_node_watch(c->node, &c->h, EPOLLIN | (c->connected ? 0 : EPOLLOUT));
}

void sv_conn_free_unstarted(struct sv_conn *c)
{
	close(c->h.fd);
	pthread_mutex_destroy(&c->watch_lock);
	free(c->rbuf);
	free(c);
}

#define SV_CONN_DEFERRED (1u << 31)     /* a deferral, even of no events */

static uint32_t conn_events(struct sv_conn *c)
{
	if (__atomic_load_n(&c->deferred, __ATOMIC_RELAXED))
		return 0;
	/* A ring channel always listens for doorbells; it never waits for
	 * socket room (ring room is signalled by a doorbell too). */
	if (c->shm_on)
		return EPOLLIN;
	/* Input of a paused channel waits; that of a channel whose CQ a poller
	 * spins on is the poller's (waking us would only compete with it). */
	return (__atomic_load_n(&c->paused, __ATOMIC_RELAXED) ||
		__atomic_load_n(&c->spin_off, __ATOMIC_RELAXED) ? 0 : EPOLLIN) |
	       (__atomic_load_n(&c->want_out, __ATOMIC_RELAXED) ? EPOLLOUT : 0);
}

/* The one place a started channel's events change.  Its owner (under
 * qp->lock) and a spinning poller (under the CQ's drive_lock) both change
 * them: under watch_lock the last writer sees every flag as it is now. */
void sv_conn_rewatch(struct sv_conn *c)
{
	pthread_mutex_lock(&c->watch_lock);
	if (!__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
		sv_node_rewatch(c->node, &c->h, conn_events(c));
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
	/* a resumed ring may hold frames no doorbell announces any more */
	if (!paused && c->shm_on && !sv_node_on_progress_thread(c->node))
		sv_node_kick(c->node);
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
	if (!__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) && c->spin_off == (off ? 1 : 0))
		sv_node_rewatch(c->node, &c->h, conn_events(c));
	pthread_mutex_unlock(&c->watch_lock);
}

void sv_conn_close(struct sv_conn *c)
{
	struct sv_node *node;

	if (!c || c->closed)
		return;
	node = c->node;
	__atomic_store_n(&c->closed, true, __ATOMIC_RELEASE);
	c->dead = true;
	if (c->shm_on) {
		/* Before the QP's state change returns: the peer must stop
		 * touching our memory directly from now on (no socket EOF yet). */
		__atomic_store_n(&c->shm.tx->closed, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->shm.rx->closed, 1, __ATOMIC_SEQ_CST);
	}
	c->node->up->drive_forget(c);   /* while the fd still names it */
	pthread_mutex_lock(&c->watch_lock);     /* no rewatch of a reused fd */
	sv_node_unwatch(node, &c->h);
	close(c->h.fd);
	c->h.fd = -1;
	pthread_mutex_unlock(&c->watch_lock);
	for (int i = 0; i < c->n_rx_fds; i++)
		close(c->rx_fds[i]);
	for (int i = 0; i < c->n_tx_fds; i++)
		close(c->tx_fds[i]);
	c->n_rx_fds = c->n_tx_fds = 0;
	pthread_mutex_lock(&node->lock);
	sv_list_del(&c->shm_link);
	sv_list_del(&c->pending_link);
	sv_list_add_tail(&node->graveyard, &c->pending_link);
	pthread_mutex_unlock(&node->lock);
}

/* Frees what was closed, unless an application thread drives channels:
 * it may hold pointers to them.  The graveyard is taken first, the drivers
 * counted after: a driver that found a channel before it was closed (and
 * buried) is counted by then. */
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
	if (__atomic_load_n(&node->drivers, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&node->lock);
		sv_list_for_each_safe(pos, tmp, &dead) {
			sv_list_del(pos);
			sv_list_add_tail(&node->graveyard, pos);
		}
		pthread_mutex_unlock(&node->lock);
		return;
	}
	sv_list_for_each_safe(pos, tmp, &dead) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, pending_link);

		sv_shm_chan_destroy(&c->shm);
		sv_peer_maps_clear(&c->peer_maps);
		sv_seg_unmap(c->peer_seg);
		pthread_mutex_destroy(&c->watch_lock);
		free(c->rbuf);
		free(c);
	}
}

/* ---- doorbells: one byte on the socket wakes the peer's progress thread ---- */

static bool peer_polling(struct sv_conn *c);

/* Wake the peer if it asked (flag) and is not polling: a polling peer finds
 * the work itself, and the flag stays set for its progress thread.  Its
 * polling says nothing about a thread of it that sleeps for the CQ this
 * ring completes to (armed): another thread's polls keep the stamp fresh
 * (a thread sleeping on a completion channel waited for the progress
 * thread's next look at the rings while another polled a different CQ;
 * docs/measurements.md, 'Doorbell for an armed CQ'). */
static void ring_doorbell(struct sv_conn *c, uint32_t *flag, const uint32_t *armed)
{
	const char b = 1;

	if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST) ||
	    (peer_polling(c) && !(armed && __atomic_load_n(armed, __ATOMIC_SEQ_CST))) ||
	    !__atomic_exchange_n(flag, 0, __ATOMIC_SEQ_CST))
		return;
	/* MSG_NOSIGNAL: a peer that has gone must not kill the application */
	if (send(c->h.fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
		c->dead = true;
}

bool sv_conn_doorbell_drain(struct sv_conn *c)
{
	char buf[64];
	ssize_t r;

	while ((r = read(c->h.fd, buf, sizeof(buf))) > 0)
		;
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* The peer's stamp moved since we last looked: it polls (no clock needed).
 * Unchanged for a while (it stamps every 16th poll; a receiver that takes
 * many frames per poll stamps less often than we write), it polls if the
 * stamp is recent.  A stamp of 0: it went to sleep (ibv_req_notify_cq). */
#define SV_PEER_POLL_CHECK 32     /* writes between clock checks of an unchanged stamp */

static bool peer_polling(struct sv_conn *c)
{
	uint64_t last = c->peer_seg ? __atomic_load_n(&c->peer_seg->last_poll_ns, __ATOMIC_RELAXED) : 0;

	if (!last)
		return false;
	if (last != c->peer_poll_seen) {
		c->peer_poll_seen = last;
		c->peer_poll_same = 0;
		return true;
	}
	if (++c->peer_poll_same < SV_PEER_POLL_CHECK)
		return true;
	c->peer_poll_same = 0;
	return sv_now_ns() - last < SV_POLLER_ACTIVE_NS;
}

static ssize_t shm_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_ring *tx = c->shm.tx;
	size_t want = 0, r;

	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	r = sv_ring_write(tx, c->shm.size, iov, n, &c->shm.tx_head_seen);
	if (r < want) {
		/* Full: ask the reader to ring back, then look once more. */
		__atomic_store_n(&tx->producer_wants_wake, 1, __ATOMIC_SEQ_CST);
		if (sv_ring_writable(tx, c->shm.size)) {
			struct iovec rest[SV_PLACE_MAX_SEG + 1];
			size_t skip = r;
			int k = 0;

			for (int i = 0; i < n; i++) {
				if (skip >= iov[i].iov_len) {
					skip -= iov[i].iov_len;
					continue;
				}
				rest[k].iov_base = (uint8_t *)iov[i].iov_base + skip;
				rest[k++].iov_len = iov[i].iov_len - skip;
				skip = 0;
			}
			r += sv_ring_write(tx, c->shm.size, rest, k, &c->shm.tx_head_seen);
		}
	}
	if (r)
		ring_doorbell(c, &tx->consumer_wants_wake, &tx->consumer_armed);
	return r;
}

static ssize_t shm_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_ring *rx = c->shm.rx;
	size_t r = sv_ring_read(rx, c->shm.size, iov, n, &c->shm.rx_rd);

	if (r)
		ring_doorbell(c, &rx->producer_wants_wake, NULL);
	return r ? (ssize_t)r : -EAGAIN;
}

void sv_conn_shm_ack(struct sv_conn *c, uint32_t psn)
{
	sv_ring_ack_publish(c->shm.tx, psn);
	ring_doorbell(c, &c->shm.tx->consumer_wants_wake, &c->shm.tx->consumer_armed);
}

void sv_conn_shm_arm(struct sv_conn *c, bool on)
{
	if (__atomic_load_n(&c->shm.rx->consumer_armed, __ATOMIC_RELAXED) != on)
		__atomic_store_n(&c->shm.rx->consumer_armed, on, __ATOMIC_SEQ_CST);
}

/* Has the responder's ACK word moved since we last took it?  (*w: its value) */
static bool shm_ack_moved(const struct sv_conn *c, uint32_t *w)
{
	*w = sv_ring_ack_load(c->shm.rx);
	return *w != __atomic_load_n(&c->shm.rx_ack_seen, __ATOMIC_RELAXED);
}

bool sv_conn_shm_ack_take(struct sv_conn *c, uint32_t *psn)
{
	uint32_t w;

	if (!shm_ack_moved(c, &w))
		return false;
	__atomic_store_n(&c->shm.rx_ack_seen, w, __ATOMIC_RELAXED);
	*psn = w & ~SV_RING_ACK_VALID;
	return true;
}

/* A paused channel's frames wait (they are not input until it resumes):
 * counted as input, they kept pollers and the progress thread busy with
 * channels they could not serve, and a poller's 64 slots full. */
bool sv_conn_shm_has_input(const struct sv_conn *c)
{
	uint32_t w;

	enum sv_rx_state rx = __atomic_load_n(&c->rx_state, __ATOMIC_RELAXED);

	return (!__atomic_load_n(&c->paused, __ATOMIC_RELAXED) && rx != SV_RX_HELD &&
		(rx == SV_RX_READY || sv_ring_has_input(c->shm.rx, c->shm.size))) ||
	       (c->outbound && shm_ack_moved(c, &w));
}

ssize_t sv_conn_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	ssize_t r;

	if (c->shm_on)
		return shm_writev(c, iov, n);
	if (c->is_unix) {
		r = sv_unix_send(c->h.fd, iov, n, c->tx_fds, c->n_tx_fds);
		if (r > 0) {
			/* the message holds its own references now */
			for (int i = 0; i < c->n_tx_fds; i++)
				close(c->tx_fds[i]);
			c->n_tx_fds = 0;
		}
	} else {
		struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

		r = sendmsg(c->h.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0)
			r = -errno;
	}
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return 0;
	if (r < 0)
		c->dead = true;
	return r;
}

ssize_t sv_conn_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	ssize_t r;

	if (c->shm_on)
		return shm_readv(c, iov, n);
	if (c->is_unix) {
		r = sv_unix_recv(c->h.fd, iov, n, c->rx_fds, &c->n_rx_fds);
	} else {
		/* one buffer: read(2) spares the kernel importing an iovec,
		 * which a spinning poller pays on every empty look */
		r = n == 1 ? read(c->h.fd, iov[0].iov_base, iov[0].iov_len) : readv(c->h.fd, iov, n);
		if (r < 0)
			r = -errno;
	}
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return -EAGAIN;
	if (r <= 0)
		c->dead = true;
	return r;
}

void sv_conn_shm_start(struct sv_conn *c)
{
	struct sv_node *node = c->node;

	c->shm_on = true;
	c->caps |= SV_CAP_MAPPED | SV_CAP_ACK_WORD | SV_CAP_HOLD | SV_CAP_SHORT_HDR;
	c->rb_start = c->rb_end = 0;     /* only doorbell bytes can follow the HELLO */
	/* Until our progress thread has looked at this ring, writers must ring:
	 * it may be asleep without a timeout, and nobody may be polling. */
	__atomic_store_n(&c->shm.rx->consumer_wants_wake, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&node->lock);
	sv_list_add_tail(&node->shm_conns, &c->shm_link);
	pthread_mutex_unlock(&node->lock);
	sv_conn_rewatch(c);
	sv_node_kick(node);              /* recompute its sleep: rings exist now */
}

int sv_conn_shm_arm_all(struct sv_node *node, struct sv_conn **ready, int max, bool *any)
{
	struct sv_list *pos, *tmp;
	int n = 0;

	pthread_mutex_lock(&node->lock);
	*any = !sv_list_empty(&node->shm_conns);
	sv_list_for_each_safe(pos, tmp, &node->shm_conns) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, shm_link);

		/* still set from the last sleep unless a writer rang since */
		if (!__atomic_load_n(&c->shm.rx->consumer_wants_wake, __ATOMIC_SEQ_CST))
			__atomic_store_n(&c->shm.rx->consumer_wants_wake, 1, __ATOMIC_SEQ_CST);
		/* (a deferred channel is its QP lock holder's to serve) */
		if ((sv_conn_shm_has_input(c) ||
		     __atomic_load_n(&c->shm.tx->producer_wants_wake, __ATOMIC_RELAXED)) &&
		    !__atomic_load_n(&c->deferred, __ATOMIC_RELAXED) && n < max)
			ready[n++] = c;
	}
	pthread_mutex_unlock(&node->lock);
	return n;
}

/* Any ring channel whose peer announces a copy of `slot`?  With `cut`,
 * such channels are cut: the rings marked closed (the peer's checks fail
 * from now on) and the socket shut (the progress thread sees it go). */
static bool direct_busy(struct sv_node *node, uint32_t slot, bool cut)
{
	struct sv_list *pos, *tmp;
	bool busy = false;

	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->shm_conns) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, shm_link);

		if (__atomic_load_n(&c->shm.rx->direct_slot, __ATOMIC_SEQ_CST) != slot + 1)
			continue;
		busy = true;
		if (!cut)
			break;
		sv_err("the same-host peer (pid %d) kept copying MR slot %u by cross-memory "
		       "attach for over %llu ms: its channel is cut", (int)c->peer_pid,
		       slot, SV_DIRECT_WAIT_NS / 1000000);
		__atomic_store_n(&c->shm.tx->closed, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->shm.rx->closed, 1, __ATOMIC_SEQ_CST);
		shutdown(c->h.fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&node->lock);
	return busy;
}

void sv_conn_shm_wait_direct(struct sv_node *node, uint32_t slot)
{
	uint64_t deadline = 0;

	/* the longest announced copy is one process_vm_writev */
	for (unsigned int i = 0; direct_busy(node, slot, false); i++) {
		if ((i & 63) == 0) {
			uint64_t now = sv_now_ns();

			if (!deadline) {
				deadline = now + SV_DIRECT_WAIT_NS;
			} else if (now > deadline) {
				direct_busy(node, slot, true);
				return;
			}
		}
		sched_yield();
	}
}

ssize_t sv_conn_read(struct sv_conn *c, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return sv_conn_readv(c, &iov, 1);
}

int sv_conn_connect_local(struct sv_node *node, uint16_t port, struct sv_conn **out)
{
	int fd = sv_unix_connect(port);

	if (fd < 0)
		return fd;
	*out = sv_conn_new(node, fd, true, false);
	if (!*out) {
		close(fd);
		return -ENOMEM;
	}
	conn_set_unix(*out);
	return 0;
}

int sv_conn_connect(struct sv_node *node, const struct sockaddr_in *dst, struct sv_conn **out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	tune_socket(fd);
	if (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) && errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* Completion is always reported by EPOLLOUT, immediate or not. */
	*out = sv_conn_new(node, fd, true, false);
	if (!*out) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}

/* Accepts per wake-up: the HELLOs of those accepted are read before more
 * come in, or a burst of connection setups would fill the pending list. */
#define SV_ACCEPT_BATCH 16

/* Accept queued connections; each waits for its HELLO on the node's
 * pending list, which bounds how many and for how long. */
static void accept_all(struct sv_pgroup *g, int lfd, bool is_unix)
{
	for (int i = 0; i < SV_ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sv_conn *c;

		if (fd < 0) {
			sv_node_accept_failed(g, errno);
			return;
		}
		if (!sv_node_pending_room(g)) {
			close(fd);       /* left queued, it would keep the listener ready */
			continue;
		}
		c = sv_conn_new(g->node, fd, false, true);
		if (!c) {
			close(fd);
			continue;
		}
		if (is_unix)
			conn_set_unix(c);
		sv_node_pending_add(g, c);
		if (sv_conn_start(c))
			sv_conn_close(c);
	}
}

void sv_conn_on_accept(struct sv_handler *h, uint32_t events)
{
	accept_all(sv_container_of(h, struct sv_pgroup, listen_h), h->fd, false);
}

void sv_conn_on_accept_unix(struct sv_handler *h, uint32_t events)
{
	accept_all(sv_container_of(h, struct sv_pgroup, unix_h), h->fd, true);
}
