/*
 * Application-driven progress: an application thread polling a CQ serves
 * the channels whose completions land in that CQ itself, so it never waits
 * for the progress thread to be scheduled (on two cores, two spinning
 * processes starve it).  Ring channels are checked in memory, socket
 * channels through the CQ's own epoll set, UD through the port group's
 * datagram socket.  Channels an application thread may touch stay allocated
 * while it is inside (sv_engine_enter): the progress thread frees closed
 * channels only when no application thread is driving.
 *
 * The contract, all of it here:
 *   - poll_cq on an empty CQ drives it (sv_engine_drive); a poll stamps the
 *     CQ (sv_engine_polling), and while the stamp is fresh the progress
 *     thread leaves the CQ's rings to the poller (up->poller_active) and
 *     ring writers skip the doorbell (shm/ringchan.c reads the stamp).
 *   - A poller that finds nothing may spin: it takes the CQ's TCP channels
 *     from the progress thread (sv_engine_spin_start); a poll that finds
 *     work (unless a ping-pong is steady or all their input answers our
 *     own requests: cq_pingpong), an armed CQ or a destroyed one give
 *     them back.  While any CQ spins the progress thread ticks
 *     (up->spin_tick) and ends the spins nobody polls any more; one whose
 *     channels had input then keeps the CQ's next polls from spinning
 *     (spin_wander).
 *   - A thread asleep for an armed CQ's event takes all its TCP channels
 *     until it returns (sv_engine_sleep_take; verbs/comp_channel.c).
 *   - ACKs held for a request to carry (xmit.c) go on an empty poll (but
 *     not the first after a poll that found completions: a draining
 *     loop's), an armed CQ, or any slower verb (sv_engine_release_all_acks).
 *   - A poll looks at the CQ's first ring channels and reads the board
 *     for the others (transport/shm/board.h); an empty poll yields now
 *     and then while a link of ours is in its handshake (setup_yield).
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "engine/engine.h"
#include "util/env.h"
#include "util/sys.h"
#include "util/time.h"
#include "util/stamp.h"

#define SV_SPIN_TICK_MS 1
#define SV_SPIN_LINGER_NS (10ull * 1000 * 1000)   /* keep ticking after the last spin */

/* The CQs of the process's contexts (one node per process): the progress
 * thread ends the spins nobody polls any more, the slower verbs release
 * the ACKs their channels hold.  Lock order: drv.lock, then a CQ's
 * drive_lock. */
static struct {
	pthread_mutex_t lock;
	struct sv_list cqs;          /* every CQ (cq->spin_link) */
	int spinning;                /* CQs a poller spins on */
	uint64_t last_spin_ns;       /* when a spin last began */
	bool acks_held;              /* some channel may hold an ACK (xmit.c) */
	int links_in_setup;          /* QPs whose outbound channel is being set up */
} drv = { .lock = PTHREAD_MUTEX_INITIALIZER, .cqs = SV_LIST_INIT(drv.cqs) };

/* What wakes a thread asleep for the CQ (sv_chan_arm). */
static enum sv_wake cq_wake(const struct sv_cq *cq)
{
	if (__atomic_load_n(&cq->armed, __ATOMIC_RELAXED))
		return SV_WAKE_COMPLETES;
	return __atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED) ? SV_WAKE_SOLICITED :
									  SV_WAKE_NONE;
}

/* A CQ's lists of channels change under drive_lock; pollers read scan[]
 * without it (scan_rings).  So a list grows into a new array and the old
 * one stays, linked from its successor, until the CQ goes: a poller may
 * still be reading it.  Readers see the count change last. */
struct conns_block {
	struct conns_block *old;
	struct sv_conn *v[];
};

static struct conns_block *conns_block_of(struct sv_conn **v)
{
	return v ? (struct conns_block *)((char *)v - offsetof(struct conns_block, v)) : NULL;
}

/* One missing (no memory): false. */
static bool conns_add(struct sv_conn ***v, uint32_t *n, uint32_t *cap, struct sv_conn *c)
{
	if (*n == *cap) {
		uint32_t m = *cap ? *cap * 2 : 8;
		struct conns_block *b = malloc(sizeof(*b) + m * sizeof(b->v[0]));

		if (!b)
			return false;
		b->old = conns_block_of(*v);
		if (*n)
			memcpy(b->v, *v, *n * sizeof(b->v[0]));
		__atomic_store_n(v, b->v, __ATOMIC_RELEASE);
		*cap = m;
	}
	__atomic_store_n(&(*v)[*n], c, __ATOMIC_RELAXED);
	__atomic_store_n(n, *n + 1, __ATOMIC_RELEASE);
	return true;
}

/* A reader may meanwhile see the last one twice or miss it for one poll. */
static bool conns_del(struct sv_conn **v, uint32_t *n, struct sv_conn *c)
{
	for (uint32_t i = 0; i < *n; i++)
		if (v[i] == c) {
			__atomic_store_n(&v[i], v[*n - 1], __ATOMIC_RELAXED);
			__atomic_store_n(n, *n - 1, __ATOMIC_RELEASE);
			return true;
		}
	return false;
}

static void conns_free(struct sv_conn **v)
{
	for (struct conns_block *b = conns_block_of(v), *old; b; b = old) {
		old = b->old;
		free(b);
	}
}

/* Take all the CQ's TCP channels from the progress thread, or give them
 * back: for a spin or for the sleepers (drive_lock held; each counts). */
static void socks_spin_off(struct sv_cq *cq, bool off)
{
	for (uint32_t i = 0; i < cq->nsocks; i++)
		sv_conn_spin_off(cq->socks[i], off);
}

/* The CQ's TCP channels, which its spinning pollers take (drive_lock held).
 * One missing (no memory) is simply never taken. */
static void socks_add(struct sv_cq *cq, struct sv_conn *c)
{
	if (!conns_add(&cq->socks, &cq->nsocks, &cq->socks_cap, c))
		return;
	if (cq->spinning)
		sv_conn_spin_off(c, true);   /* a poll decides soon whether it stays taken */
	if (cq->sleepers)
		sv_conn_spin_off(c, true);
}

/*
 * The hot channel (hot_read) leaves the CQ's epoll set while a poller
 * spins on one of its CQs and reads it on every poll: each set a socket is
 * in costs the peer's `send` a wake-up call per message on veth, where the
 * sender's softirq runs our TCP input (docs/measurements.md, 'The hot
 * socket out of its epoll sets').  Meanwhile each poll of the CQ reads it
 * too, spinning or not.  It is back in the set before anyone could wait
 * there for it: when the CQ's spin ends, a thread goes to sleep for the
 * CQ, another channel becomes hot, or it stops bringing one message at a
 * time.  drive_lock held.
 */
static void hot_in(struct sv_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = cq->hot };

	if (!cq->hot_out)
		return;
	__atomic_store_n(&cq->hot_out, false, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->hot_steady, 0, __ATOMIC_RELAXED);
	epoll_ctl(cq->drive_fd, EPOLL_CTL_ADD, cq->hot->h.fd, &ev);
	sv_conn_spin_reads(cq->hot, false);
}

/* A ring channel: looked at by each poll while the CQ has few, on the
 * board beyond SOFTVERBS_BOARD_AFTER (drive_lock held). */
static bool rings_add(struct sv_cq *cq, struct sv_conn *c)
{
	if (!conns_add(&cq->rings, &cq->nrings, &cq->rings_cap, c))
		return false;
	/* (one that comes back from another CQ keeps its slot) */
	if (c->shm.slot || (cq->nscan >= sv_board_after() && sv_conn_board_join(c)) ||
	    conns_add(&cq->scan, &cq->nscan, &cq->scan_cap, c))
		return true;
	conns_del(cq->rings, &cq->nrings, c);
	return false;
}

/* Let application threads polling `cq` process this channel: socket
 * channels through the CQ's epoll set, ring channels by looking at the ring. */
void sv_engine_drive_register(struct sv_conn *c, struct sv_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	if (!cq) {       /* an XRC target's requests have no CQ of its own */
		sv_chan_unpolled(c);
		return;
	}
	if (c->qc->drive_cq)
		sv_engine_drive_forget(c);
	__atomic_store_n(&c->qc->drive_cq, cq, __ATOMIC_RELEASE);
	if (!(c->caps & SV_CAP_MAPPED)) {
		if (epoll_ctl(cq->drive_fd, EPOLL_CTL_ADD, c->h.fd, &ev))
			return;
		__atomic_add_fetch(&cq->drive_socks, 1, __ATOMIC_RELAXED);
		if (!(c->caps & SV_CAP_SPIN_TAKE))
			return;
		pthread_mutex_lock(&cq->drive_lock);
		socks_add(cq, c);
		pthread_mutex_unlock(&cq->drive_lock);
		return;
	}
	pthread_mutex_lock(&cq->drive_lock);
	if (!rings_add(cq, c)) {
		pthread_mutex_unlock(&cq->drive_lock);
		/* not looked at by pollers: the progress thread must serve it */
		__atomic_store_n(&c->qc->drive_cq, NULL, __ATOMIC_RELEASE);
		sv_chan_unpolled(c);
		return;
	}
	if (cq->rings_armed)
		sv_chan_arm(c, cq_wake(cq));
	pthread_mutex_unlock(&cq->drive_lock);
}

/* A TCP channel's second CQ: an inbound one is also the send CQ's (the
 * peer's requests carry ACKs of ours, which a poller waiting for a send
 * completion must read), an outbound one also the receive CQ's (the peer
 * may turn it and send its requests there, engine/req.c). */
void sv_engine_drive_register_also(struct sv_conn *c, struct sv_cq *cq)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

	if (!cq || !(c->caps & SV_CAP_TURN) || cq == c->qc->drive_cq || c->qc->drive_cq2 ||
	    epoll_ctl(cq->drive_fd, EPOLL_CTL_ADD, c->h.fd, &ev))
		return;
	__atomic_add_fetch(&cq->drive_socks, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&c->qc->drive_cq2, cq, __ATOMIC_RELEASE);
	pthread_mutex_lock(&cq->drive_lock);
	socks_add(cq, c);
	pthread_mutex_unlock(&cq->drive_lock);
}

static void forget_in(struct sv_conn *c, struct sv_cq *cq)
{
	pthread_mutex_lock(&cq->drive_lock);
	if (cq->hot == c && cq->hot_out) {       /* out of the set, still counted */
		__atomic_store_n(&cq->hot_out, false, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&cq->drive_socks, 1, __ATOMIC_RELAXED);
		sv_conn_spin_reads(c, false);
	} else if (c->h.fd >= 0 && !epoll_ctl(cq->drive_fd, EPOLL_CTL_DEL, c->h.fd, NULL)) {
		__atomic_sub_fetch(&cq->drive_socks, 1, __ATOMIC_RELAXED);
	}
	if (conns_del(cq->rings, &cq->nrings, c))
		conns_del(cq->scan, &cq->nscan, c);
	if (conns_del(cq->socks, &cq->nsocks, c)) {
		if (cq->spinning)
			sv_conn_spin_off(c, false);  /* the progress thread serves it again */
		if (cq->sleepers)
			sv_conn_spin_off(c, false);
	}
	if (cq->hot == c)
		__atomic_store_n(&cq->hot, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&cq->drive_lock);
}

void sv_engine_drive_forget(struct sv_conn *c)
{
	struct sv_cq *cq = c->qc->drive_cq, *cq2 = c->qc->drive_cq2;

	if (cq2) {
		__atomic_store_n(&c->qc->drive_cq2, NULL, __ATOMIC_RELEASE);
		forget_in(c, cq2);
	}
	if (cq) {
		__atomic_store_n(&c->qc->drive_cq, NULL, __ATOMIC_RELEASE);
		forget_in(c, cq);
	}
}

/*
 * Spinning.  While an application thread spins on a CQ (its last poll found
 * nothing), the progress thread is not woken for input on the CQ's TCP
 * channels: the poller reads them itself, and a woken progress thread would
 * only take a core from it (two spinning processes on two cores) and race
 * it for the QP lock.  The spin ends, and the progress thread watches them
 * again, when a poll returns completions (the application may go and do
 * something else: its peer's requests must not wait for a stale spin),
 * when the CQ is armed for an event, or when the CQ has not been polled
 * for SV_SPIN_STALE_NS (the progress thread checks every millisecond while
 * any CQ spins): input that arrived meanwhile then wakes it at once (epoll
 * is level-triggered).  In a steady ping-pong (engine/xmit.c), or while all
 * the channels' input answers one request of ours at a time (only_ours), a
 * poll that returns completions keeps the spin while the poller still takes
 * every channel: the application comes back at once, and ending and
 * starting the spin cost two epoll_ctl per channel per message (veth
 * ib_send_lat, ib_read_lat).  Unless the poller went elsewhere while input
 * waited (a stale spin's channels had some): an application that waits by
 * watching memory for its peer's RDMA WRITE (riostream) never polls for
 * it, and each WRITE waited for the tick (docs/measurements.md, 'A
 * poller that went elsewhere').  For its next SV_SPIN_WANDER polls, none
 * starts a spin and one that finds completions ends it; then spinning is
 * tried again, at the cost of one late message.
 */
#define SV_SPIN_STALE_NS (200 * 1000ull)
#define SV_SPIN_WANDER 1024

/* The poller takes the channels whose input it waits for, one message at a
 * time: responses to a single request in flight (outbound), and requests
 * while they complete receives or answer ours in a steady ping-pong (their
 * ACKs are held for our requests to carry: RDMA WRITEs of ib_write_lat
 * then arrive while we poll for the completion they carry).  Other
 * requests (a stream of RDMA WRITEs, READs) and the responses of a stream
 * the progress thread serves in parallel with it: a poller that took those
 * too slowed the stream (docs/measurements.md, 'CQ spin'). */
static bool one_at_a_time(const struct sv_conn *c)
{
	if (c->outbound)
		return __atomic_load_n(&c->qc->tx_since_rx, __ATOMIC_RELAXED) <= 1;
	return __atomic_load_n(&c->qc->ack_streak, __ATOMIC_RELAXED) >= SV_ACK_STREAK;
}

/* ... and an inbound channel no request has come on yet (the requester's
 * own, while it READs from a passive peer): there is nothing for the
 * progress thread to serve, and a first request finds the poller. */
static bool spin_takes(const struct sv_conn *c)
{
	return one_at_a_time(c) ||
	       (!c->outbound && (__atomic_load_n(&c->qc->rx_completes, __ATOMIC_RELAXED) ||
				 !__atomic_load_n(&c->qc->rx_requested, __ATOMIC_RELAXED)));
}

/* May a spinning poller take every one of these channels?  Read with
 * drive_lock (cq_spin) or without it, inside a guard (spin_stays). */
static bool all_spin_take(struct sv_conn *const *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!spin_takes(__atomic_load_n(&v[i], __ATOMIC_RELAXED)))
			return false;
	return true;
}

/* Take the CQ's channels (on) or give them back.  All or none: while the
 * progress thread must serve one of them anyway (RDMA WRITEs arriving),
 * keeping it off the others only makes its wake-ups for that one slower
 * (docs/measurements.md, 'CQ spin'), so the spin is not taken. */
static bool cq_spin(struct sv_node *node, struct sv_cq *cq, bool on)
{
	pthread_mutex_lock(&cq->drive_lock);
	on = on && all_spin_take(cq->socks, cq->nsocks);
	if (cq->spinning != on) {
		if (!on) {                       /* a spin's 256 polls begin again */
			hot_in(cq);
			__atomic_store_n(&cq->hot_steady, 0, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&cq->spinning, on, __ATOMIC_RELAXED);
		socks_spin_off(cq, on);
		__atomic_add_fetch(&drv.spinning, on ? 1 : -1, __ATOMIC_SEQ_CST);
		if (on)
			__atomic_store_n(&drv.last_spin_ns, sv_now_ns(), __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&cq->drive_lock);
	return on;
}

/* Channel handshakes are the progress threads' work (ours and the
 * peers'); a poller that spins through them on a busy machine takes the
 * core they need: while any link of ours is being set up, an empty poll
 * yields, at most every SV_SETUP_YIELD_NS (a link that keeps failing to
 * connect costs other QPs' pollers little; docs/measurements.md, 'Empty
 * polls yield during handshakes'). */
#define SV_SETUP_YIELD_NS (20 * 1000)

/* A forked child's QPs are its parent's: none of their links will end a
 * handshake in the child. */
static void links_forget(void)
{
	drv.links_in_setup = 0;
}

static void links_atfork(void)
{
	pthread_atfork(NULL, NULL, links_forget);
}

void sv_engine_link_setup(bool on)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, links_atfork);
	__atomic_add_fetch(&drv.links_in_setup, on ? 1 : -1, __ATOMIC_RELAXED);
}

static void setup_yield(void)
{
	static __thread uint64_t last;
	uint64_t now;

	if (__atomic_load_n(&drv.links_in_setup, __ATOMIC_RELAXED) <= 0)
		return;          /* (below 0: a forked child ended its parent's) */
	now = sv_now_ns();
	if (now - last < SV_SETUP_YIELD_NS)
		return;
	last = now;
	sched_yield();
}

/* Did the poller go elsewhere lately while input waited?  Counts one of
 * the SV_SPIN_WANDER polls that neither start nor keep a spin.  (Racing
 * pollers may lose counts.) */
static bool wandered(struct sv_cq *cq)
{
	uint32_t w = __atomic_load_n(&cq->spin_wander, __ATOMIC_RELAXED);

	if (!w)
		return false;
	__atomic_store_n(&cq->spin_wander, w - 1, __ATOMIC_RELAXED);
	return true;
}

void sv_engine_spin_start(struct sv_node *node, struct sv_cq *cq)
{
	setup_yield();
	/* (sv_engine_polling stamps last_poll_ns, which ends stale spins) */
	if (__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&cq->nsocks, __ATOMIC_ACQUIRE) || wandered(cq))
		return;
	if (cq_spin(node, cq, true))
		sv_node_spin_watch(node);
}

/* Input only for requests of ours, one at a time: responses, and no
 * request of the peer's has come (READs from a passive peer). */
static bool only_ours(const struct sv_conn *c)
{
	return c->outbound ? one_at_a_time(c) : !__atomic_load_n(&c->qc->rx_requested, __ATOMIC_RELAXED);
}

/* Does the spin stay when a poll finds completions?  While a ping-pong is
 * steady on one of the CQ's channels (engine/xmit.c), or all their input
 * answers our own requests: what comes while the application is away is
 * what it will poll for; and only while the poller may take every channel
 * (cq_spin).  Asked on every poll that finds completions, so the list is
 * read without drive_lock, as scan_rings reads its own (inside a guard);
 * the lock is taken only to end the spin. */
static bool spin_stays(struct sv_cq *cq)
{
	uint32_t n = __atomic_load_n(&cq->nsocks, __ATOMIC_ACQUIRE);
	struct sv_conn **v = __atomic_load_n(&cq->socks, __ATOMIC_ACQUIRE);
	bool steady = false, ours = true;

	if (!all_spin_take(v, n))
		return false;
	for (uint32_t i = 0; i < n; i++) {
		struct sv_conn *c = __atomic_load_n(&v[i], __ATOMIC_RELAXED);

		steady = steady || __atomic_load_n(&c->qc->ack_streak, __ATOMIC_RELAXED) >= SV_ACK_STREAK;
		ours = ours && only_ours(c);
	}
	return steady || ours;
}

void sv_engine_spin_found(struct sv_node *node, struct sv_cq *cq)
{
	bool stays;

	if (!__atomic_load_n(&cq->found, __ATOMIC_RELAXED))   /* (sv_engine_drive) */
		__atomic_store_n(&cq->found, true, __ATOMIC_RELAXED);
	if (!__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED))
		return;
	if (wandered(cq)) {
		stays = false;
	} else {
		sv_engine_enter(node);
		stays = spin_stays(cq);
		sv_engine_leave(node);
	}
	if (!stays)
		cq_spin(node, cq, false);
}

void sv_engine_spin_end(struct sv_node *node, struct sv_cq *cq)
{
	if (__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED))
		cq_spin(node, cq, false);
}

/* Has any of the CQ's channels input?  (Its epoll set is level-triggered:
 * looking takes nothing.) */
static bool input_waits(struct sv_cq *cq)
{
	struct epoll_event ev;

	return sv_epoll_wait(cq->drive_fd, &ev, 1, 0) > 0;
}

/* Progress thread, while CQs spin: end the spins nobody polls any more
 * (their channels' input would wait for a poll).  -1 once none spins and
 * none did lately: the ticks may stop (node.c pairs this with
 * sv_node_spin_watch). */
int sv_engine_spin_tick(struct sv_node *node, uint64_t now)
{
	struct sv_list *pos, *tmp;

	sv_engine_batch_flush(node);         /* the program went elsewhere */
	if (!__atomic_load_n(&drv.spinning, __ATOMIC_SEQ_CST) &&
	    now - __atomic_load_n(&drv.last_spin_ns, __ATOMIC_RELAXED) > SV_SPIN_LINGER_NS &&
	    !__atomic_load_n(&sv_batch_waiting, __ATOMIC_SEQ_CST))
		return -1;
	pthread_mutex_lock(&drv.lock);
	sv_list_for_each_safe(pos, tmp, &drv.cqs) {
		struct sv_cq *cq = sv_container_of(pos, struct sv_cq, spin_link);

		if (__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED) &&
		    now - __atomic_load_n(&cq->last_poll_ns, __ATOMIC_RELAXED) > SV_SPIN_STALE_NS) {
			cq_spin(node, cq, false);    /* (its hot socket back in the set) */
			if (input_waits(cq))
				__atomic_store_n(&cq->spin_wander, SV_SPIN_WANDER, __ATOMIC_RELAXED);
		}
	}
	pthread_mutex_unlock(&drv.lock);
	return SV_SPIN_TICK_MS;
}

void sv_engine_cq_add(struct sv_node *node, struct sv_cq *cq)
{
	pthread_mutex_lock(&drv.lock);
	sv_list_add_tail(&drv.cqs, &cq->spin_link);
	pthread_mutex_unlock(&drv.lock);
}

void sv_engine_cq_del(struct sv_node *node, struct sv_cq *cq)
{
	sv_engine_spin_end(node, cq);
	pthread_mutex_lock(&drv.lock);
	sv_list_del(&cq->spin_link);
	pthread_mutex_unlock(&drv.lock);
	conns_free(cq->rings);
	conns_free(cq->scan);
	conns_free(cq->socks);
}

/* False if its QP's lock was taken: the holder (or the progress thread,
 * which defers to it) serves the channel. */
static bool drive_one(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) || !qp)
		return true;
	if (!sv_qlock_trylock(&qp->lock))
		return false;
	sv_stamp(SV_ST_SERVE);
	if (!c->closed && c->connected)
		sv_rx_serve(c);
	sv_stamp(SV_ST_SERVED);
	sv_qp_unlock(qp);
	sv_stamp(SV_ST_UNLOCKED);
	return true;
}


/* Tell ring writers we poll (they skip the doorbell).  Every poll counts,
 * also one that finds completions (the progress thread may have pushed
 * them): a stale stamp brings doorbells, which wake the progress thread,
 * which then takes the work, so that the stamp goes staler still.  The
 * clock costs more than the rest of an empty poll, so it is read once per
 * 16 units of work: a poll is one, each completion it returns one more
 * (a poller that takes 16 completions at a time polls 16 times less
 * often).  A heuristic: concurrent pollers may lose counts. */
static void poll_stamp(struct sv_cq *cq);

void sv_engine_polling(struct sv_cq *cq, uint32_t work)
{
	uint32_t polls = __atomic_load_n(&cq->polls, __ATOMIC_RELAXED);

	__atomic_store_n(&cq->polls, polls + work, __ATOMIC_RELAXED);
	if (((polls + work) ^ polls) & ~15u)
		poll_stamp(cq);
}

static void poll_stamp(struct sv_cq *cq)
{
	uint64_t now = sv_now_ns();

	__atomic_store_n(&cq->last_poll_ns, now, __ATOMIC_RELAXED);
	sv_node_poll_stamp(to_sctx(cq->ibcq.context)->node, now);
}

/* A poller in a long receive batch (a run of large pulled SENDs can keep
 * one poll busy for hundreds of microseconds) is polling all the while:
 * its stamps stay fresh, or ring writers ring its progress thread awake
 * on its core (docs/measurements.md, 'A long batch keeps its poll stamp').
 * A ring channel is read by pollers of its drive_cq only. */
void sv_engine_still_polling(struct sv_conn *c)
{
	struct sv_cq *cq = __atomic_load_n(&c->qc->drive_cq, __ATOMIC_ACQUIRE);

	if (cq && !sv_node_on_progress_thread(c->node))
		poll_stamp(cq);
}

/* Posting counts as polling for same-host writers: a thread that posts a
 * stream of sends polls its CQ only when the queue is full (perftest: every
 * 100 sends), far less often than writers look at the process's stamp,
 * which then woke the progress thread for every batch of ACKs
 * (docs/measurements.md, 'Posting counts as polling').  Only the
 * process's stamp (seg), not the CQ's: that one says a poller will read
 * the CQ's channels (spins, sv_engine_poller_active), which posting does
 * not.  Not while the CQ is armed: that thread is about to sleep in
 * ibv_get_cq_event. */
void sv_engine_posting(struct sv_cq *cq)
{
	uint32_t posts;

	if (__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED))
		return;
	posts = __atomic_load_n(&cq->posts, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->posts, posts + 1, __ATOMIC_RELAXED);
	if (!(posts & 15))
		sv_node_poll_stamp(to_sctx(cq->ibcq.context)->node, sv_now_ns());
}

/* Is an application thread polling the CQ this ring channel completes to?
 * Then the progress thread leaves the ring to it: serving it too would only
 * make the two fight over the QP's lock.  Not if the CQ is armed (its
 * thread is about to sleep, and a poll right after ibv_req_notify_cq
 * stamps it), nor for a channel whose peer is in this process: one thread
 * may drive both ends, polling the CQ of one while what it waits for needs
 * the other served (docs/measurements.md, 'One thread, both ends'). */
bool sv_engine_poller_active(struct sv_conn *c, uint64_t now)
{
	struct sv_cq *cq = __atomic_load_n(&c->qc->drive_cq, __ATOMIC_ACQUIRE);
	uint64_t last = cq ? __atomic_load_n(&cq->last_poll_ns, __ATOMIC_RELAXED) : 0;

	return last && now - last < SV_POLLER_ACTIVE_NS && !c->peer_self &&
	       cq_wake(cq) == SV_WAKE_NONE;
}

/* ACKs held for a request to carry (engine/xmit.c) go now: the
 * application waits (an empty poll, an armed CQ) or does something else.
 * Collected under the CQ's lock, served without it (sv_engine_enter keeps
 * the channels allocated meanwhile). */
static int collect_held(struct sv_cq *cq, struct sv_conn **held, int k, int max)
{
	uint32_t i;

	__atomic_store_n(&cq->acks_held, false, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&cq->drive_lock);
	for (i = 0; i < cq->nsocks && k < max; i++)
		if (__atomic_load_n(&cq->socks[i]->qc->ack_held, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(&cq->socks[i]->qc->ack_carriable, __ATOMIC_SEQ_CST))
			held[k++] = cq->socks[i];
	if (i < cq->nsocks)              /* full: the rest at the next look */
		__atomic_store_n(&cq->acks_held, true, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&cq->drive_lock);
	return k;
}

static void serve_held(struct sv_cq *cq, struct sv_conn **held, int k)
{
	for (int i = 0; i < k; i++) {
		struct sv_conn *c = held[i];
		struct sv_qp *qp = c->qc->qp;

		if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) || !qp)
			continue;
		if (!sv_qlock_trylock(&qp->lock)) {
			__atomic_store_n(&cq->acks_held, true, __ATOMIC_RELAXED);   /* next poll */
			continue;
		}
		if (!c->closed && (c->qc->ack_held || c->qc->ack_carriable)) {
			sv_xmit_ack_release(c);
			sv_xmit_flush(c);
			if (c->dead)
				sv_conn_lost(c);
		}
		sv_qp_unlock(qp);
	}
}

static void release_held_acks(struct sv_cq *cq)
{
	struct sv_conn *held[16];

	serve_held(cq, held, collect_held(cq, held, 0, 16));
}

/* Serve the CQ's ready ring channels, at most 64 per poll, round-robin so
 * that none waits for ever.  The scanned list is read without drive_lock,
 * which every poll would otherwise take (conns_add keeps the arrays; a
 * channel that leaves meanwhile is still allocated: sv_engine_enter); the
 * board names the others with work. */
#define SV_DRIVE_MAX 64

static int scan_rings(struct sv_cq *cq, struct sv_conn **ready)
{
	uint32_t total = __atomic_load_n(&cq->nscan, __ATOMIC_ACQUIRE);
	struct sv_conn **v = __atomic_load_n(&cq->scan, __ATOMIC_ACQUIRE);
	uint32_t at = __atomic_load_n(&cq->drive_next, __ATOMIC_RELAXED);
	int k = 0;

	if (at >= total)                   /* wrapped, or the list shrank */
		at = 0;
	for (uint32_t seen = 0; seen < total && k < SV_DRIVE_MAX; seen++) {
		struct sv_conn *c = __atomic_load_n(&v[at], __ATOMIC_RELAXED);

		if (++at == total)
			at = 0;
		if (sv_conn_shm_ready(c)) {
			ready[k++] = c;
			if (k == SV_DRIVE_MAX)
				__atomic_store_n(&cq->drive_next, at, __ATOMIC_RELAXED);
		}
	}
	return k;
}

static bool ring_of(const struct sv_conn *c, const void *cq)
{
	return __atomic_load_n(&c->qc->drive_cq, __ATOMIC_ACQUIRE) == cq;
}

/* The board's channels of this CQ with work (their bits cleared). */
static int board_rings(struct sv_cq *cq, struct sv_conn **ready, int max)
{
	struct sv_conn *got[SV_DRIVE_MAX];
	int n, k = 0;

	if (__atomic_load_n(&cq->nscan, __ATOMIC_RELAXED) == __atomic_load_n(&cq->nrings, __ATOMIC_RELAXED))
		return 0;
	n = sv_board_take(ring_of, cq, got, max, &cq->board_cursor);
	for (int i = 0; i < n; i++) {
		/* a writer that rang for it cleared its flag: the progress
		 * thread, which no longer looks at it, does not set it again */
		sv_conn_shm_rearm(got[i]);
		if (sv_conn_shm_ready(got[i]))
			ready[k++] = got[i];
	}
	return k;
}

/* Returns how many ready rings it left to others (drive_one). */
static int drive_rings(struct sv_cq *cq)
{
	struct sv_conn *ready[SV_DRIVE_MAX];
	int k = scan_rings(cq, ready), left = 0;

	k += board_rings(cq, ready + k, SV_DRIVE_MAX - k);
	if (k)
		sv_stamp(SV_ST_RINGS_READY);
	for (int i = 0; i < k; i++) {
		left += !drive_one(ready[i]);
		/* served in part, or left to another thread: the next poll looks again */
		sv_conn_shm_keep(ready[i]);
	}
	if (k)
		sv_stamp(SV_ST_RINGS_DONE);
	return left;
}

void sv_engine_release_acks(struct sv_node *node, struct sv_cq *cq)
{
	if (!__atomic_load_n(&cq->acks_held, __ATOMIC_RELAXED))
		return;
	sv_engine_enter(node);
	release_held_acks(cq);
	sv_engine_leave(node);
}

/* The application does something else than the ping-pong's post and poll
 * (creates, modifies or destroys a QP, waits for an event): every held
 * ACK goes, or its peer would wait for our timer (perftest -R listens for
 * its test connection only after its handshake SEND completed).  A channel
 * it could not lock keeps its CQ marked: that CQ's next empty poll. */
void sv_engine_acks_held_mark(void)
{
	if (!__atomic_load_n(&drv.acks_held, __ATOMIC_RELAXED))
		__atomic_store_n(&drv.acks_held, true, __ATOMIC_SEQ_CST);
}

void sv_engine_release_all_acks(struct sv_node *node)
{
	struct sv_conn *held[64];
	struct sv_cq *cq;
	struct sv_list *pos, *tmp;
	int k = 0;

	sv_engine_batch_flush(node);         /* sends batched go too */
	if (!__atomic_load_n(&drv.acks_held, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&drv.acks_held, false, __ATOMIC_SEQ_CST);
	sv_engine_enter(node);
	pthread_mutex_lock(&drv.lock);
	sv_list_for_each_safe(pos, tmp, &drv.cqs) {
		cq = sv_container_of(pos, struct sv_cq, spin_link);
		if (k == 64) {                   /* full: the rest next time */
			__atomic_store_n(&drv.acks_held, true, __ATOMIC_SEQ_CST);
			break;
		}
		if (__atomic_load_n(&cq->acks_held, __ATOMIC_RELAXED))
			k = collect_held(cq, held, k, 64);
	}
	pthread_mutex_unlock(&drv.lock);
	for (int i = 0; i < k; i++) {
		cq = __atomic_load_n(&held[i]->qc->drive_cq, __ATOMIC_ACQUIRE);
		if (cq)                  /* else closed meanwhile */
			serve_held(cq, &held[i], 1);
	}
	sv_engine_leave(node);
}

/* A thread is about to sleep for the CQ (on; again each time it sleeps), or
 * it is no longer armed and polled again: its rings' writers ring (or wake
 * it) regardless of our stamp, or stop. */
static void rings_arm(struct sv_cq *cq, bool on)
{
	pthread_mutex_lock(&cq->drive_lock);
	if (on || cq->rings_armed) {
		enum sv_wake how = on ? cq_wake(cq) : SV_WAKE_NONE;

		__atomic_store_n(&cq->rings_armed, on, __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < cq->nrings; i++)
			sv_chan_arm(cq->rings[i], how);
	}
	pthread_mutex_unlock(&cq->drive_lock);
}

void sv_engine_cq_fired(struct sv_cq *cq)
{
	if (__atomic_load_n(&cq->nrings, __ATOMIC_ACQUIRE) &&
	    __atomic_load_n(&cq->rings_armed, __ATOMIC_RELAXED))
		rings_arm(cq, false);
}

/*
 * A thread about to sleep in ibv_get_cq_event for armed `cq` takes its TCP
 * channels as a spinning poller does, all of them: their input wakes it,
 * and it serves that itself (sv_engine_drive), where the progress thread
 * was woken first and then woke it: two wake-ups per message across hosts.
 * Unlike a spin it needs no tick (no poll goes stale): the sleeper gives
 * them back when it wakes.  Returns the descriptor to wait on (the CQ's
 * epoll set), or -1: no TCP channel.
 */
int sv_engine_sleep_take(struct sv_cq *cq)
{
	if (!__atomic_load_n(&cq->nsocks, __ATOMIC_ACQUIRE))
		return -1;
	pthread_mutex_lock(&cq->drive_lock);
	hot_in(cq);                          /* it waits on the set */
	if (cq->sleepers++ == 0)
		socks_spin_off(cq, true);
	pthread_mutex_unlock(&cq->drive_lock);
	return cq->drive_fd;
}

void sv_engine_sleep_give(struct sv_cq *cq)
{
	pthread_mutex_lock(&cq->drive_lock);
	if (--cq->sleepers == 0)
		socks_spin_off(cq, false);
	pthread_mutex_unlock(&cq->drive_lock);
}

void sv_engine_cq_sleep(struct sv_node *node, struct sv_cq *cq)
{
	if (!__atomic_load_n(&cq->nrings, __ATOMIC_ACQUIRE) || cq_wake(cq) == SV_WAKE_NONE)
		return;
	rings_arm(cq, true);
	sv_engine_enter(node);
	if (drive_rings(cq))
		sv_node_kick(node);      /* what we could not take, the progress thread does */
	sv_engine_leave(node);
}

/*
 * A spinning poller reads the CQ's busiest TCP channel (the last one epoll
 * reported) itself, without asking epoll first: one system call when the
 * message it waits for arrives instead of two (epoll_wait, then readv).
 * Epoll still looks at every SV_HOT_EVERY-th poll, for the CQ's other
 * channels.  Only while the channel brings one message at a time
 * (one_at_a_time): in a stream most blind reads find the socket empty,
 * each a system call that takes the socket's lock while the sender's
 * softirq delivers into it; epoll looks without that lock
 * (docs/measurements.md, 'Hot channel').  `hot` is changed under
 * drive_lock and only to a channel still here, and cleared when it leaves
 * (forget_in); sv_engine_enter keeps it allocated while we use it.
 */
#define SV_HOT_EVERY 8

/* Is `c` still open and one of the CQ's channels?  (drive_lock held: it
 * may have left since a poller found it.) */
static bool still_of(struct sv_conn *c, struct sv_cq *cq)
{
	return !__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE) &&
	       (__atomic_load_n(&c->qc->drive_cq, __ATOMIC_ACQUIRE) == cq ||
		__atomic_load_n(&c->qc->drive_cq2, __ATOMIC_ACQUIRE) == cq);
}

static void hot_set(struct sv_cq *cq, struct sv_conn *c)
{
	if (__atomic_load_n(&cq->hot, __ATOMIC_RELAXED) == c || !(sv_conn_caps(c) & SV_CAP_SPIN_TAKE))
		return;
	pthread_mutex_lock(&cq->drive_lock);
	if (still_of(c, cq)) {
		hot_in(cq);
		__atomic_store_n(&cq->hot_steady, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&cq->hot, c, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cq->drive_lock);
}

/* Count a poll that could leave epoll out: false every SV_HOT_EVERY-th. */
static bool epoll_spared(uint32_t *polls)
{
	uint32_t k = __atomic_load_n(polls, __ATOMIC_RELAXED) + 1;

	__atomic_store_n(polls, k, __ATOMIC_RELAXED);
	return k % SV_HOT_EVERY != 0;
}

/*
 * A spinning poller reads a channel that streams large requests to us
 * (SV_RX_BULK) at most every SV_BULK_GAP_NS; their bytes wait in the
 * socket meanwhile.  Read as each arrived, every read made TCP acknowledge
 * at once (SV_CAP_READ_ACKS), and on veth the sender's core, a stream's
 * bottleneck, processes those ACKs (docs/measurements.md, 'Bulk requests
 * read in batches').  A ping-pong (one_at_a_time) and responses to our
 * own requests are read at once.
 */
#define SV_BULK_GAP_NS (40 * 1000)

static bool bulk_wait(struct sv_cq *cq, struct sv_conn *c)
{
	uint64_t now;

	if (!__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED) || c->outbound ||
	    !(sv_conn_caps(c) & SV_CAP_READ_ACKS) ||
	    !__atomic_load_n(&c->qc->rx_bulk, __ATOMIC_RELAXED) || one_at_a_time(c))
		return false;
	now = sv_now_ns();
	if (now - __atomic_load_n(&c->qc->rx_read_ns, __ATOMIC_RELAXED) < SV_BULK_GAP_NS)
		return true;
	__atomic_store_n(&c->qc->rx_read_ns, now, __ATOMIC_RELAXED);
	return false;
}

static void hot_back(struct sv_cq *cq)
{
	pthread_mutex_lock(&cq->drive_lock);
	hot_in(cq);
	pthread_mutex_unlock(&cq->drive_lock);
}

/* Make `c` the CQ's hot channel, out of its set (hot_in's rules), unless
 * another one is out.  (The other CQ need not spin: its polls read the
 * channel while it is out, and the one whose poller spins reads it all the
 * time, if its spin was not ended since that poller looked: `spinner`.) */
static void hot_out_of(struct sv_cq *cq, struct sv_conn *c, bool spinner)
{
	pthread_mutex_lock(&cq->drive_lock);
	if (!cq->sleepers && !cq->hot_out && still_of(c, cq) && (!spinner || cq->spinning)) {
		__atomic_store_n(&cq->hot, c, __ATOMIC_RELEASE);
		if (!epoll_ctl(cq->drive_fd, EPOLL_CTL_DEL, c->h.fd, NULL)) {
			__atomic_store_n(&cq->hot_out, true, __ATOMIC_RELAXED);
			sv_conn_spin_reads(c, true);
		}
	}
	pthread_mutex_unlock(&cq->drive_lock);
}

/* ... of both its CQs: the application may wait for its input on either
 * (a SEND's completion comes with the peer's answer), and each set the
 * socket is in costs the peer's send.  The other CQ often never spins: in
 * a ping-pong its completion is there when the application polls it. */
static void hot_out_of_both(struct sv_cq *spinner, struct sv_conn *c)
{
	struct sv_cq *a = __atomic_load_n(&c->qc->drive_cq, __ATOMIC_ACQUIRE);
	struct sv_cq *b = __atomic_load_n(&c->qc->drive_cq2, __ATOMIC_ACQUIRE);

	if (a)
		hot_out_of(a, c, a == spinner);
	if (b && b != a)
		hot_out_of(b, c, b == spinner);
}

/* Has the hot channel been the CQ's hot one for SV_HOT_STEADY polls of
 * one spin?  Only then does it leave the sets: channels of several QPs
 * that take turns as the hot one, or a spin that ends at every message,
 * would pay epoll_ctl calls at every turn. */
#define SV_HOT_STEADY 256

static bool steady(struct sv_cq *cq)
{
	uint32_t k = __atomic_load_n(&cq->hot_steady, __ATOMIC_RELAXED);

	if (k >= SV_HOT_STEADY)
		return true;
	__atomic_store_n(&cq->hot_steady, k + 1, __ATOMIC_RELAXED);
	return false;
}

/* A look no epoll asked for: what a datagram lane's copies are for
 * (transport/tcp/lane.h). */
static void drive_blind(struct sv_conn *c)
{
	sv_conn_blind = true;
	drive_one(c);
	sv_conn_blind = false;
}

/* Read the hot channel instead of asking epoll?  Then true.  Out of the
 * set it is read on every poll, spinning or not, and epoll asked every
 * SV_HOT_EVERY-th only for the CQ's other sockets, if it has any. */
static bool hot_read(struct sv_cq *cq)
{
	bool out = __atomic_load_n(&cq->hot_out, __ATOMIC_RELAXED);
	struct sv_conn *hot;

	if ((!out && !__atomic_load_n(&cq->spinning, __ATOMIC_RELAXED)) ||
	    !(hot = __atomic_load_n(&cq->hot, __ATOMIC_ACQUIRE)))
		return false;
	if (!one_at_a_time(hot)) {
		if (out)
			hot_back(cq);
		return false;
	}
	if (!out && steady(cq)) {
		hot_out_of_both(cq, hot);
		out = __atomic_load_n(&cq->hot_out, __ATOMIC_RELAXED);
	}
	if (out) {
		drive_blind(hot);
		return __atomic_load_n(&cq->drive_socks, __ATOMIC_RELAXED) == 1 ||
		       epoll_spared(&cq->hot_polls);
	}
	if (!epoll_spared(&cq->hot_polls))
		return false;
	drive_blind(hot);
	return true;
}

/* UD: read this host's rings; and when the CQ's only sockets are its
 * port groups' UDP ones (datagrams from other hosts), ask epoll only every
 * SV_HOT_EVERY-th poll, as hot_read does.  True when epoll is left out. */
static bool dgram_rings_read(struct sv_node *node, struct sv_cq *cq)
{
	uint8_t buf[SV_UDP_BUF];
	bool armed = __atomic_load_n(&cq->armed, __ATOMIC_RELAXED) ||
		     __atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED);

	return __atomic_load_n(&cq->dgram_socks, __ATOMIC_RELAXED) &&
	       sv_dgram_poll(node, buf, !armed) &&
	       __atomic_load_n(&cq->drive_socks, __ATOMIC_RELAXED) ==
	       __atomic_load_n(&cq->dgram_socks, __ATOMIC_RELAXED) &&
	       epoll_spared(&cq->dgram_polls);
}

void sv_engine_drive(struct sv_node *node, struct sv_cq *cq)
{
	struct epoll_event evs[16];
	bool draining;
	int n;

	sv_engine_enter(node);
	/* The first empty poll after one that found completions ends a
	 * draining loop (rsockets polls until the CQ is empty before it
	 * answers): the application is not idle yet, so held ACKs stay for
	 * its answer to carry.  The next empty poll releases them. */
	draining = __atomic_load_n(&cq->found, __ATOMIC_RELAXED);
	if (draining)
		__atomic_store_n(&cq->found, false, __ATOMIC_RELAXED);
	if (!draining && __atomic_load_n(&cq->acks_held, __ATOMIC_RELAXED))
		release_held_acks(cq);
	/* its event fired (or was never armed): the sleeper polls again */
	if (__atomic_load_n(&cq->rings_armed, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED))
		rings_arm(cq, false);
	if (__atomic_load_n(&cq->nrings, __ATOMIC_ACQUIRE))
		drive_rings(cq);
	n = 0;
	if (__atomic_load_n(&cq->drive_socks, __ATOMIC_RELAXED)) {
		if (!hot_read(cq) && !dgram_rings_read(node, cq))
			n = sv_epoll_wait(cq->drive_fd, evs, 16, 0);
		/* a fresher stamp than sv_engine_polling's keeps the progress
		 * thread from ending a live spin (spin_reap) whose polls read
		 * much; but the clock costs a tenth of an empty look at a
		 * socket, so every 4th poll, and after any epoll reported */
		if (n > 0 || !(__atomic_load_n(&cq->polls, __ATOMIC_RELAXED) & 3))
			poll_stamp(cq);
	}
	for (int i = 0; i < n; i++) {
		if (evs[i].data.u64 & 1) {          /* a port group's datagram socket */
			struct sv_pgroup *g = (void *)(uintptr_t)(evs[i].data.u64 & ~1ull);
			uint8_t buf[SV_UDP_BUF];

			sv_dgram_drain(node, g->udp_h.fd, buf);
		} else if (!bulk_wait(cq, evs[i].data.ptr)) {
			drive_one(evs[i].data.ptr);
			if (n == 1)
				hot_set(cq, evs[i].data.ptr);
		}
	}
	sv_engine_leave(node);
}

void sv_engine_stop_polling(struct sv_cq *cq)
{
	struct sv_seg *self = sv_seg_self();

	__atomic_store_n(&cq->last_poll_ns, 0, __ATOMIC_RELAXED);
	if (self) {
		sv_seg_stamp_clearing();
		__atomic_store_n(&self->last_poll_ns, 0, __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&cq->nrings, __ATOMIC_ACQUIRE))
		rings_arm(cq, true);
	if (__atomic_load_n(&cq->dgram_socks, __ATOMIC_RELAXED))
		sv_dgram_stop_polling(to_sctx(cq->ibcq.context)->node);
}


/* UD QPs: pollers of the receive CQ drain the port group's socket too, and
 * the rings from this host's processes. */
void sv_engine_drive_register_dgram(struct sv_qp *qp)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	struct sv_pgroup *g = sv_node_group_of(node, qp->ibqp.qp_base.qp_num);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uintptr_t)g | 1 };

	if (g && !epoll_ctl(qp->rcq->drive_fd, EPOLL_CTL_ADD, g->udp_h.fd, &ev)) {
		__atomic_add_fetch(&qp->rcq->dgram_socks, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&qp->rcq->drive_socks, 1, __ATOMIC_RELAXED);
	}
}
