/* UD rings between processes of one host (dgring.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/shm/chan.h"
#include "transport/shm/dgring.h"
#include "transport/transport.h"
#include "transport/unix/sock.h"
#include "util/env.h"
#include "util/log.h"
#include "util/names.h"
#include "util/sys.h"
#include "util/time.h"

#define DG_NAME "softverbs.ud."
#define DG_MAGIC 0x53564447u            /* "SVDG" */
#define DG_RETRY_NS (1000ull * 1000 * 1000)
#define DG_POLLED_NS (200ull * 1000)  /* a poller drained within: no doorbells */
#define DG_IN_MAX 4096                /* inbound rings per process */
#define DG_BATCH 64                   /* records per ring per drain (fairness) */
#define DG_FULL_WAIT_NS (100ull * 1000 * 1000)  /* a full ring waits for room this long */
#define DG_YIELD_NS (1000ull * 1000)             /* yielding first, then sleeping */
#define DG_NAP_NS (50ull * 1000)

SV_NAME_TABLE(sv_dgring_state_name, enum sv_dgring_state, SV_DGRING_NSTATES,
	      [SV_DGRING_NONE] = "NONE", [SV_DGRING_ASKED] = "ASKED",
	      [SV_DGRING_UP] = "UP", [SV_DGRING_GONE] = "GONE")

/* The hello (sender -> receiver, with the ring's memfd) and its answer. */
struct dg_hello {
	uint32_t magic;
	uint16_t port;      /* the sender's group, or the receiver's in the answer */
	uint16_t zero;
};

/* A sender's ring.  The sender's threads own it under tx_lock; the
 * progress thread only reads the answer and sees the receiver leave, and
 * then only stores `state` (last) and unwatches the socket. */
struct dg_out {
	struct sv_list link;
	struct sv_handler h;
	struct sv_node *node;
	uint16_t src_port, dst_port;
	int state;                   /* enum sv_dgring_state (atomic) */
	uint64_t retry_ns;
	struct sv_shm_map map;
	uint64_t head_seen;
	bool stalled;                /* full for a whole wait: lost at once until room */
};

/* A receiver's ring: the progress thread's (on `accepted`), and on `in`
 * once up (rx_lock). */
struct dg_in {
	struct sv_list link;
	struct sv_list accepted_link;
	struct sv_handler h;
	struct sv_node *node;
	uint16_t peer_port;
	bool up;
	struct sv_shm_map map;
	struct sv_ring_rd rd;
};

struct sv_dgrings {
	pthread_mutex_t tx_lock;
	struct sv_list out;
	pthread_mutex_t rx_lock;     /* the one consumer of every inbound ring */
	struct sv_list in;
	int nin;                     /* rings on `in` (atomic) */
	struct sv_list accepted;     /* inbound sockets, up or not (progress thread) */
	int naccepted;
	uint64_t polled_ns;          /* a poller drained `in` then (0: it stopped) */
	uint32_t polls;              /* pollers' looks, to stamp polled_ns now and then */
};

struct sv_dgrings *sv_dgrings_new(void)
{
	struct sv_dgrings *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	pthread_mutex_init(&d->tx_lock, NULL);
	pthread_mutex_init(&d->rx_lock, NULL);
	sv_list_init(&d->out);
	sv_list_init(&d->in);
	sv_list_init(&d->accepted);
	return d;
}

static void out_set(struct dg_out *o, enum sv_dgring_state s)
{
	sv_trace("dgring %u -> %u: %s -> %s", o->src_port, o->dst_port,
		 sv_dgring_state_name(__atomic_load_n(&o->state, __ATOMIC_RELAXED)),
		 sv_dgring_state_name(s));
	__atomic_store_n(&o->state, s, __ATOMIC_RELEASE);
}

/* ---- receiver ---- */

static void in_free(struct dg_in *in)
{
	struct sv_dgrings *d = in->node->dgr;

	sv_node_unwatch(in->node, &in->h);
	if (in->up) {
		pthread_mutex_lock(&d->rx_lock);
		sv_list_del(&in->link);
		__atomic_sub_fetch(&d->nin, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&d->rx_lock);
	}
	sv_shm_rings_unmap(&in->map);
	sv_close(in->h.fd);
	sv_list_del(&in->accepted_link);
	d->naccepted--;
	free(in);
}

/* One record, checked as a UDP datagram is, and its claimed source is the
 * group that proved itself when it gave us the ring. */
static void deliver(struct dg_in *in, uint8_t *buf, uint32_t len)
{
	struct sv_node *node = in->node;
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = htons(in->peer_port),
				    .sin_addr = node->addr };
	struct sv_wire_hdr hdr;

	if (!sv_dgram_frame_ok(buf, len, &hdr) || hdr.src_qpn >> 8 != in->peer_port ||
	    hdr.data1 != node->addr.s_addr)
		return;
	node->up->dgram(node, &from, &hdr, buf + sizeof(hdr));
}

static void drain_one(struct dg_in *in, uint8_t *buf)
{
	struct sv_ring *r = sv_shm_ring_at(&in->map, 0);
	const uint8_t *data = sv_shm_ring_data(&in->map, 0);

	for (int k = 0; k < DG_BATCH; k++) {
		uint32_t len = sv_ring_record_len(r, data, in->map.size);
		struct iovec iov = { buf, len };

		if (!len)
			return;
		if (len > SV_UDP_BUF) {             /* not a datagram: skip it */
			for (uint32_t left = len; left; left -= (uint32_t)iov.iov_len) {
				iov.iov_len = left < SV_UDP_BUF ? left : SV_UDP_BUF;
				sv_ring_read(r, data, in->map.size, &iov, 1, &in->rd);
			}
			continue;
		}
		if (sv_ring_read(r, data, in->map.size, &iov, 1, &in->rd) == len)
			deliver(in, buf, len);
	}
}

/* rx_lock held: every record of a ring whose writer is gone. */
static void drain_left(struct dg_in *in, uint8_t *buf)
{
	while (sv_ring_record_len(sv_shm_ring_at(&in->map, 0), sv_shm_ring_data(&in->map, 0),
				  in->map.size))
		drain_one(in, buf);
}

/* rx_lock held */
static void drain_all(struct sv_dgrings *d, uint8_t *buf)
{
	struct sv_list *pos;

	sv_list_for_each(pos, &d->in)
		drain_one(sv_container_of(pos, struct dg_in, link), buf);
}

bool sv_dgram_poll(struct sv_node *node, uint8_t *buf, bool polling)
{
	struct sv_dgrings *d = node->dgr;
	uint32_t k;

	if (!d || !__atomic_load_n(&d->nin, __ATOMIC_RELAXED))
		return false;
	/* the clock costs more than a look at the rings: stamp now and then */
	k = __atomic_load_n(&d->polls, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&d->polls, k, __ATOMIC_RELAXED);
	if (polling && !(k % 16))
		__atomic_store_n(&d->polled_ns, sv_now_ns(), __ATOMIC_RELAXED);
	if (pthread_mutex_trylock(&d->rx_lock))
		return true;                        /* someone drains them now */
	drain_all(d, buf);
	pthread_mutex_unlock(&d->rx_lock);
	return true;
}

/* rx_lock held: writers ring from now on; what they wrote before is read
 * by the caller's drain (seq_cst store, then the records' loads). */
static void arm_all(struct sv_dgrings *d)
{
	struct sv_list *pos;

	sv_list_for_each(pos, &d->in) {
		struct sv_ring *r = sv_shm_ring_at(&sv_container_of(pos, struct dg_in, link)->map, 0);

		if (!__atomic_load_n(&r->consumer_wants_wake, __ATOMIC_RELAXED))
			__atomic_store_n(&r->consumer_wants_wake, 1, __ATOMIC_SEQ_CST);
	}
}

void sv_dgram_stop_polling(struct sv_node *node)
{
	struct sv_dgrings *d = node->dgr;

	if (!d || !__atomic_load_n(&d->nin, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&d->polled_ns, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&d->rx_lock);
	arm_all(d);
	pthread_mutex_unlock(&d->rx_lock);
}

int sv_dgring_before_sleep(struct sv_node *node, int timeout)
{
	struct sv_dgrings *d = node->dgr;
	uint64_t polled;

	if (!d || !__atomic_load_n(&d->nin, __ATOMIC_RELAXED))
		return timeout;
	polled = __atomic_load_n(&d->polled_ns, __ATOMIC_RELAXED);
	if (polled && sv_now_ns() - polled < DG_POLLED_NS)
		return timeout < 0 || timeout > 1 ? 1 : timeout;   /* look again, in case it stops */
	pthread_mutex_lock(&d->rx_lock);
	arm_all(d);
	drain_all(d, node->udp_buf);
	pthread_mutex_unlock(&d->rx_lock);
	return timeout;
}

/* The hello: take the ring, answer, and from then on serve it. */
static void in_hello(struct dg_in *in)
{
	struct sv_dgrings *d = in->node->dgr;
	struct dg_hello hi, ack = { .magic = DG_MAGIC };
	struct iovec iov = { &hi, sizeof(hi) }, aiov = { &ack, sizeof(ack) };
	int fds[4], nfds = 0;
	ssize_t r = sv_unix_recv(in->h.fd, &iov, 1, fds, &nfds, 4);
	bool ok = r == (ssize_t)sizeof(hi) && hi.magic == DG_MAGIC && nfds == 1 &&
		  !sv_shm_rings_attach(&in->map, fds[0], 1);

	for (int i = 0; i < nfds; i++)
		sv_close(fds[i]);
	if (r == -EAGAIN)
		return;
	if (!ok || sv_unix_send(in->h.fd, &aiov, 1, NULL, 0) != (ssize_t)sizeof(ack)) {
		in_free(in);
		return;
	}
	in->peer_port = hi.port;
	in->up = true;
	pthread_mutex_lock(&d->rx_lock);
	sv_list_add_tail(&d->in, &in->link);
	__atomic_add_fetch(&d->nin, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&d->rx_lock);
}

static void on_in(struct sv_handler *h, uint32_t events)
{
	struct dg_in *in = sv_container_of(h, struct dg_in, h);
	struct sv_dgrings *d = in->node->dgr;
	char bells[64];
	ssize_t r;

	if (!in->up) {
		in_hello(in);
		return;
	}
	/* doorbells: one byte each, any number of them */
	while ((r = sv_recv(h->fd, bells, sizeof(bells), MSG_DONTWAIT)) > 0)
		;
	if (r == 0 || (r < 0 && errno != EAGAIN) || (events & (EPOLLHUP | EPOLLERR))) {
		/* the sender left: what it wrote before is still in the ring,
		 * as a datagram in a socket buffer outlives its sender */
		pthread_mutex_lock(&d->rx_lock);
		drain_left(in, in->node->udp_buf);
		pthread_mutex_unlock(&d->rx_lock);
		in_free(in);
		return;
	}
	pthread_mutex_lock(&d->rx_lock);
	drain_all(d, in->node->udp_buf);
	pthread_mutex_unlock(&d->rx_lock);
}

static void on_accept(struct sv_handler *h, uint32_t events)
{
	struct sv_pgroup *g = sv_container_of(h, struct sv_pgroup, ud_h);
	struct sv_node *node = g->node;
	int fd;

	(void)events;
	while ((fd = sv_accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct dg_in *in = NULL;
		pid_t pid;
		uid_t uid = (uid_t)-1;

		/* only our own user gets shared memory: the others use UDP */
		if (node->dgr->naccepted < DG_IN_MAX && !sv_unix_peer(fd, &pid, &uid) &&
		    uid == getuid())
			in = calloc(1, sizeof(*in));
		if (!in) {
			sv_close(fd);
			continue;
		}
		in->node = node;
		in->h.fd = fd;
		in->h.fn = on_in;
		node->dgr->naccepted++;
		sv_list_add_tail(&node->dgr->accepted, &in->accepted_link);
		if (sv_node_watch(node, &in->h, EPOLLIN))
			in_free(in);
	}
}

int sv_dgring_listen(struct sv_pgroup *g)
{
	g->ud_h.fn = on_accept;
	g->ud_h.fd = sv_unix_listen_on(DG_NAME, g->port, SOCK_SEQPACKET);
	return g->ud_h.fd;
}

/* ---- sender ---- */

/* Progress thread: the answer, or the receiver's end. */
static void on_out(struct sv_handler *h, uint32_t events)
{
	struct dg_out *o = sv_container_of(h, struct dg_out, h);
	struct dg_hello ack;
	ssize_t r = sv_recv(h->fd, &ack, sizeof(ack), MSG_DONTWAIT);

	if (r < 0 && errno == EAGAIN && !(events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
		return;
	if (r == (ssize_t)sizeof(ack) && ack.magic == DG_MAGIC &&
	    __atomic_load_n(&o->state, __ATOMIC_RELAXED) == SV_DGRING_ASKED) {
		out_set(o, SV_DGRING_UP);
		return;
	}
	/* refused, or it left: the sender closes the socket when it sees this */
	sv_node_unwatch(o->node, h);
	out_set(o, SV_DGRING_GONE);
}

/* tx_lock held: what a ring the receiver no longer reads leaves behind. */
static void out_reset(struct dg_out *o, uint64_t retry_ns)
{
	if (o->h.fd >= 0)
		sv_close(o->h.fd);
	o->h.fd = -1;
	sv_shm_rings_unmap(&o->map);
	o->retry_ns = retry_ns;
}

/* tx_lock held: offer the receiver a ring; on any failure, UDP for a while. */
static void out_ask(struct dg_out *o)
{
	struct dg_hello hi = { .magic = DG_MAGIC, .port = o->src_port };
	struct iovec iov = { &hi, sizeof(hi) };
	pid_t pid;
	uid_t uid = (uid_t)-1;
	int mfd;

	o->h.fd = sv_unix_connect_to(DG_NAME, o->dst_port, SOCK_SEQPACKET);
	if (o->h.fd < 0 || sv_unix_peer(o->h.fd, &pid, &uid)) {
		out_reset(o, sv_now_ns() + DG_RETRY_NS);   /* no such group (yet) */
		out_set(o, SV_DGRING_GONE);
		return;
	}
	if (uid != getuid()) {
		out_reset(o, UINT64_MAX);            /* another user's: UDP for good */
		out_set(o, SV_DGRING_GONE);
		return;
	}
	mfd = sv_shm_rings_create(&o->map, 1, "softverbs-ud");
	o->head_seen = 0;
	o->stalled = false;
	if (mfd < 0 || sv_unix_send(o->h.fd, &iov, 1, &mfd, 1) != (ssize_t)sizeof(hi) ||
	    sv_node_watch(o->node, &o->h, EPOLLIN | EPOLLRDHUP)) {
		if (mfd >= 0)
			sv_close(mfd);
		out_reset(o, sv_now_ns() + DG_RETRY_NS);
		out_set(o, SV_DGRING_GONE);
		return;
	}
	sv_close(mfd);
	out_set(o, SV_DGRING_ASKED);
}

static struct dg_out *out_find(struct sv_node *node, uint16_t src, uint16_t dst)
{
	struct sv_dgrings *d = node->dgr;
	struct sv_list *pos;
	struct dg_out *o;

	sv_list_for_each(pos, &d->out) {
		o = sv_container_of(pos, struct dg_out, link);
		if (o->src_port == src && o->dst_port == dst)
			return o;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->node = node;
	o->src_port = src;
	o->dst_port = dst;
	o->h.fd = -1;
	o->h.fn = on_out;
	sv_list_add_tail(&d->out, &o->link);
	return o;
}

/* The doorbell, if the receiver asked for one (taking the request: it asks
 * again before it sleeps). */
static void ring_bell(struct dg_out *o, struct sv_ring *r)
{
	char bell = 0;

	if (__atomic_exchange_n(&r->consumer_wants_wake, 0, __ATOMIC_SEQ_CST) &&
	    sv_send(o->h.fd, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN)
		sv_trace("dgring %u -> %u: doorbell: %s", o->src_port, o->dst_port,
			 strerror(errno));
}

/* A full ring waits for its receiver to make room, as a fabric's
 * link-level flow control holds a packet: InfiniBand loses a UD datagram
 * at a receiver without a receive posted, not because the receiver is
 * slower than its sender (perftest -c UD waits for every one).  The bound
 * is a switch's head-of-queue lifetime, not a scheduler's time slice: a
 * receiver descheduled on a loaded machine makes no room for milliseconds
 * (docs/measurements.md, 'UD ring: a full ring waits').  One that makes
 * none for DG_FULL_WAIT_NS (stopped) loses this datagram, and the next
 * ones at once while its ring stays full (`stalled`); one that left stops
 * the wait. */
static bool wait_room(struct dg_out *o, struct sv_ring *r, size_t len)
{
	uint64_t start = sv_now_ns(), now = start;

	do {
		ring_bell(o, r);
		if (now - start < DG_YIELD_NS)
			sched_yield();
		else
			sv_nanosleep(&(struct timespec){ .tv_nsec = DG_NAP_NS });
		if (sv_ring_fits(r, o->map.size, len, &o->head_seen))
			return true;
		now = sv_now_ns();
	} while (now - start < DG_FULL_WAIT_NS &&
		 __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == SV_DGRING_UP);
	return false;
}

/* tx_lock held, state UP: the whole datagram or nothing; then the doorbell. */
static void out_write(struct dg_out *o, const struct iovec *iov, int n)
{
	struct sv_ring *r = sv_shm_ring_at(&o->map, 0);
	size_t len = 0;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (!sv_ring_fits(r, o->map.size, len, &o->head_seen)) {
		if (!o->stalled && !wait_room(o, r, len)) {
			o->stalled = true;
			/* (one that left: its next datagrams go over UDP) */
			if (__atomic_load_n(&o->state, __ATOMIC_ACQUIRE) == SV_DGRING_UP)
				sv_err("dgring %u -> %u: the receiver made no room for %llu ms: "
				       "its datagrams are lost while its ring stays full",
				       o->src_port, o->dst_port,
				       (unsigned long long)(DG_FULL_WAIT_NS / 1000000));
		}
		if (o->stalled)
			return;                      /* still full: lost */
	}
	o->stalled = false;
	sv_ring_write(r, sv_shm_ring_data(&o->map, 0), o->map.size, iov, n, &o->head_seen);
	ring_bell(o, r);
}

int sv_dgring_send(struct sv_node *node, uint16_t src_port, uint16_t dst_port,
		   const struct iovec *iov, int n)
{
	struct sv_dgrings *d = node->dgr;
	struct dg_out *o;
	int sent = 0, state;

	if (!d || sv_force_tcp())
		return 0;
	pthread_mutex_lock(&d->tx_lock);
	o = out_find(node, src_port, dst_port);
	state = o ? __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) : SV_DGRING_ASKED;
	if (state == SV_DGRING_UP) {
		out_write(o, iov, n);
		sent = 1;
	} else if (state == SV_DGRING_GONE && o->h.fd >= 0) {
		/* it just went: UDP for a while (for good if it is another user's) */
		out_reset(o, o->retry_ns == UINT64_MAX ? UINT64_MAX : sv_now_ns() + DG_RETRY_NS);
	} else if (state == SV_DGRING_NONE ||
		   (state == SV_DGRING_GONE && sv_now_ns() >= o->retry_ns)) {
		out_ask(o);
	}                                            /* ASKED: UDP until it answers */
	pthread_mutex_unlock(&d->tx_lock);
	return sent;
}

void sv_dgrings_free(struct sv_node *node)
{
	struct sv_dgrings *d = node->dgr;
	struct sv_list *pos, *tmp;

	if (!d)
		return;
	sv_list_for_each_safe(pos, tmp, &d->out) {
		struct dg_out *o = sv_container_of(pos, struct dg_out, link);

		out_reset(o, 0);
		free(o);
	}
	sv_list_for_each_safe(pos, tmp, &d->accepted)
		in_free(sv_container_of(pos, struct dg_in, accepted_link));
	pthread_mutex_destroy(&d->tx_lock);
	pthread_mutex_destroy(&d->rx_lock);
	free(d);
	node->dgr = NULL;
}
