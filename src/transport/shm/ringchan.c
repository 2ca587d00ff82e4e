/*
 * Ring channels: after the handshake (shm/handshake.c) a same-host
 * channel's frames move through two SPSC rings in shared memory (shm/ring.c)
 * and its socket is closed.  A doorbell, which wakes a peer that asked for
 * one and is not polling, is a write on the peer process's bell, and its
 * broken life line is the peer's death (shm/peer.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <unistd.h>

#include "transport/shm/peer.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/sys.h"
#include "util/time.h"
#include "util/tsan.h"

/* ---- doorbells: its bell wakes the peer's progress thread ---- */

static bool peer_polling(struct sv_conn *c);

/* Must the consumer of our ring be woken though its process polls?  Its
 * process's polls say nothing about a thread of it that sleeps for the CQ
 * this ring completes to (armed: another thread's polls keep the stamp
 * fresh; docs/measurements.md, 'Doorbell for an armed CQ'), nor about a
 * ring no poller reads (unpolled: an XRC target's requests complete on
 * their SRQs' CQs, so only its progress thread takes them), nor about the
 * other end of a pair in our own process, whose thread may be this one,
 * about to wait on the other CQ (docs/measurements.md, 'One thread, both
 * ends'). */
static bool consumer_unwatched(const struct sv_conn *c)
{
	const struct sv_ring *tx = c->shm.tx;

	return c->peer_self || __atomic_load_n(&tx->consumer_armed, __ATOMIC_SEQ_CST) ||
	       __atomic_load_n(&tx->consumer_unpolled, __ATOMIC_RELAXED);
}

/* Wake the peer if it asked (flag) and is not polling: a polling peer finds
 * the work itself, and the flag stays set for its progress thread.
 * `consumer`: it consumes what we wrote (consumer_unwatched). */
static void ring_doorbell(struct sv_conn *c, uint32_t *flag, bool consumer)
{
	if (!__atomic_load_n(flag, __ATOMIC_SEQ_CST) ||
	    (peer_polling(c) && !(consumer && consumer_unwatched(c))) ||
	    !__atomic_exchange_n(flag, 0, __ATOMIC_SEQ_CST))
		return;
	sv_shm_peer_ring(c->shm_peer);
}

/* The peer's stamp moved since we last looked: it polls (no clock needed).
 * Unchanged for a while (it stamps every 16th poll, and stores a stamp
 * only once the last is 20 us old: transport/node.c), it polls if the
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

/* The peer's thread asleep for the CQ what we wrote completes to, woken by
 * it (`hint`): wake it on the descriptor it gave us, once per sleep (it
 * takes the ring itself, so neither its progress thread nor a doorbell is
 * needed).  True when woken. */
static bool wake_sleeper(struct sv_conn *c, enum sv_wake hint)
{
	struct sv_ring *tx = c->shm.tx;
	const uint64_t one = 1;
	uint32_t s;

	if (c->peer_wake_fd < 0 || hint == SV_WAKE_NONE)
		return false;
	/* Dekker with ring_arm: our record's store before this read, its
	 * store before its look at the ring.  A read-modify-write: a plain
	 * load may pass the (release) store of the record. */
	s = __atomic_fetch_or(&tx->consumer_sleeps, 0, __ATOMIC_SEQ_CST);
	if (s == SV_RING_AWAKE || (s == SV_RING_SLEEPS_SOLICITED && hint != SV_WAKE_SOLICITED))
		return false;
	if (__atomic_exchange_n(&tx->consumer_sleeps, SV_RING_AWAKE, __ATOMIC_SEQ_CST) != SV_RING_AWAKE &&
	    sv_write(c->peer_wake_fd, &one, sizeof(one)) != sizeof(one))
		return false;
	return true;
}

/* Something for the consumer of our ring: its poller (the board), its
 * sleeper or its progress thread.  A consumer in our own process gets the
 * doorbell too: the thread that armed its CQ may be this one, which then
 * waits on another CQ's channel, and a woken descriptor would wait for it. */
static void notify_consumer(struct sv_conn *c, enum sv_wake hint)
{
	sv_conn_board_post(c);
	if (!wake_sleeper(c, hint) || c->peer_self)
		ring_doorbell(c, &c->shm.tx->consumer_wants_wake, true);
}

static ssize_t shm_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_ring *tx = c->shm.tx;
	size_t want = 0, r;

	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	r = sv_ring_write(tx, c->shm.tx_data, c->shm.size, iov, n, &c->shm.tx_head_seen);
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
			r += sv_ring_write(tx, c->shm.tx_data, c->shm.size, rest, k,
					   &c->shm.tx_head_seen);
		}
	}
	if (r)
		notify_consumer(c, c->wake_hint);
	return r;
}

/* Does the writer wait for the room we just made?  Dekker with
 * shm_writev: our head's (release) store before our look at its flag, its
 * flag's store before its look at our head. */
static bool writer_waits(struct sv_ring *rx)
{
#ifdef SV_TSAN
	return __atomic_fetch_or(&rx->producer_wants_wake, 0, __ATOMIC_SEQ_CST);  /* TSan has no fences */
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&rx->producer_wants_wake, __ATOMIC_SEQ_CST);
#endif
}

/* Records taken: room for a writer that waits for it? */
static void room_made(struct sv_conn *c)
{
	if (writer_waits(c->shm.rx)) {
		sv_conn_board_post(c);   /* room for the writer's waiting bytes */
		ring_doorbell(c, &c->shm.rx->producer_wants_wake, false);
	}
}

/* A closed ring is the socket's EOF: after the last record (the peer's
 * records come before its mark, so one more look after seeing the mark
 * finds them all). */
static ssize_t shm_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_ring *rx = c->shm.rx;
	size_t r = sv_ring_read(rx, c->shm.rx_data, c->shm.size, iov, n, &c->shm.rx_rd);

	if (!r && sv_conn_peer_left(c) &&
	    !(r = sv_ring_read(rx, c->shm.rx_data, c->shm.size, iov, n, &c->shm.rx_rd))) {
		c->dead = true;
		return -EPIPE;
	}
	if (r)
		room_made(c);
	return r ? (ssize_t)r : -EAGAIN;
}

static bool shm_skip(struct sv_conn *c, size_t len)
{
	if (!sv_ring_skip(c->shm.rx, c->shm.rx_data, c->shm.size, len, &c->shm.rx_rd))
		return false;
	room_made(c);
	return true;
}

static bool shm_peek(struct sv_conn *c, void *buf, size_t len)
{
	return sv_ring_peek(c->shm.rx, c->shm.rx_data, c->shm.size, buf, len, &c->shm.rx_rd);
}

/* Before the QP's state change returns: the peer must stop touching our
 * memory directly from now on.  The mark is its EOF: tell it, whether it
 * asked or not (it may poll a CQ, which looks at the board, or sleep). */
static void ring_close(struct sv_conn *c)
{
	__atomic_store_n(&c->shm.tx->closed, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&c->shm.rx->closed, 1, __ATOMIC_SEQ_CST);
	sv_conn_board_post(c);
	sv_shm_peer_ring(c->shm_peer);
}

static void ring_ack_publish(struct sv_conn *c, uint32_t psn)
{
	sv_ring_ack_publish(c->shm.tx, psn);
	notify_consumer(c, SV_WAKE_COMPLETES);   /* it completes the requester's signaled sends */
}

static void ring_arm(struct sv_conn *c, enum sv_wake how)
{
	uint32_t on = how != SV_WAKE_NONE;
	uint32_t sleeps = how == SV_WAKE_SOLICITED ? SV_RING_SLEEPS_SOLICITED :
			  on ? SV_RING_SLEEPS_ANY : SV_RING_AWAKE;

	if (__atomic_load_n(&c->shm.rx->consumer_armed, __ATOMIC_RELAXED) != on)
		__atomic_store_n(&c->shm.rx->consumer_armed, on, __ATOMIC_SEQ_CST);
	/* only a peer that has our descriptor looks (wake_sleeper) */
	if (c->wake_fd >= 0 &&
	    __atomic_load_n(&c->shm.rx->consumer_sleeps, __ATOMIC_RELAXED) != sleeps)
		__atomic_store_n(&c->shm.rx->consumer_sleeps, sleeps, __ATOMIC_SEQ_CST);
}

static void ring_unpolled(struct sv_conn *c)
{
	__atomic_store_n(&c->shm.rx->consumer_unpolled, 1, __ATOMIC_SEQ_CST);
}

/* Has the responder's ACK word moved since we last took it?  (*w: its value) */
static bool shm_ack_moved(const struct sv_conn *c, uint32_t *w)
{
	*w = sv_ring_ack_load(c->shm.rx);
	return *w != __atomic_load_n(&c->shm.rx_ack_seen, __ATOMIC_RELAXED);
}

static bool ring_ack_take(struct sv_conn *c, uint32_t *psn)
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
 * channels they could not serve, and a poller's 64 slots full.  (A closed
 * ring's end is the progress thread's to find: sv_conn_shm_arm_all.) */
bool sv_conn_shm_has_input(const struct sv_conn *c)
{
	uint32_t w;

	uint8_t in = __atomic_load_n(&c->input, __ATOMIC_RELAXED);

	return (!__atomic_load_n(&c->paused, __ATOMIC_RELAXED) && in != SV_INPUT_HELD &&
		(in == SV_INPUT_STAGED || sv_ring_has_input(c->shm.rx, c->shm.rx_data, c->shm.size))) ||
	       (c->outbound && shm_ack_moved(c, &w));
}

bool sv_conn_shm_ready(const struct sv_conn *c)
{
	return sv_conn_shm_has_input(c) ||
	       (__atomic_load_n(&c->want_out, __ATOMIC_RELAXED) &&
		sv_ring_writable(c->shm.tx, c->shm.size));
}

const struct sv_chan_ops sv_ring_ops = {
	.name = "shared memory",
	.caps = SV_CAP_MAPPED | SV_CAP_ACK_WORD | SV_CAP_HOLD | SV_CAP_SHORT_HDR,
	.same_host = true,
	.writev = shm_writev,
	.readv = shm_readv,
	.close = ring_close,
	.has_input = sv_conn_shm_has_input,
	.arm = ring_arm,
	.unpolled = ring_unpolled,
	.ack_publish = ring_ack_publish,
	.ack_take = ring_ack_take,
	.direct = sv_conn_direct,
	.pull = sv_conn_pull,
	.peek = shm_peek,
	.skip = shm_skip,
	.recv_publish = sv_conn_recv_publish,
	.place = sv_conn_place,
};

void sv_conn_shm_start(struct sv_conn *c)
{
	struct sv_node *node = c->node;

	c->ops = &sv_ring_ops;
	__atomic_store_n(&c->caps, sv_ring_ops.caps, __ATOMIC_RELAXED);  /* pollers read it */
	/* Until our progress thread has looked at this ring, writers must ring:
	 * it may be asleep without a timeout, and nobody may be polling. */
	__atomic_store_n(&c->shm.rx->consumer_wants_wake, 1, __ATOMIC_SEQ_CST);
	/* The peer's last frame on the socket was its handshake's: from now
	 * on its bell and its life line do the socket's work. */
	sv_conn_drop_socket(c);
	pthread_mutex_lock(&node->lock);
	sv_list_add_tail(&node->shm_conns, &c->shm_link);
	sv_list_del(&c->node_link);      /* (a candidate was bound first: verify.c) */
	sv_list_add_tail(&node->shm_scan, &c->node_link);
	if (c->shm_peer->gone)           /* gone before the channel was listed */
		__atomic_store_n(&c->shm.rx->closed, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&node->lock);
	sv_node_kick(node);              /* recompute its sleep: rings exist now */
}

void sv_conn_shm_peer_gone(struct sv_node *node, struct sv_shm_peer *p)
{
	struct sv_list *pos;

	sv_list_for_each(pos, &node->shm_conns) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, shm_link);

		if (c->shm_peer != p)
			continue;
		__atomic_store_n(&c->shm.rx->closed, 1, __ATOMIC_SEQ_CST);
		sv_conn_board_remind(c);         /* for the look at the board */
	}
}

void sv_conn_shm_rearm(struct sv_conn *c)
{
	/* still set from the last sleep unless a writer rang since */
	if (!__atomic_load_n(&c->shm.rx->consumer_wants_wake, __ATOMIC_SEQ_CST))
		__atomic_store_n(&c->shm.rx->consumer_wants_wake, 1, __ATOMIC_SEQ_CST);
}

void sv_conn_shm_keep(struct sv_conn *c)
{
	if (c->shm.slot && sv_conn_shm_ready(c))
		sv_conn_board_remind(c);
}

/* Rearmed; anything for the progress thread?  (A deferred channel is its
 * QP lock holder's to serve.) */
static bool look_ready(struct sv_conn *c)
{
	sv_conn_shm_rearm(c);
	return (sv_conn_shm_ready(c) || sv_conn_peer_left(c) ||
		__atomic_load_n(&c->shm.tx->producer_wants_wake, __ATOMIC_RELAXED)) &&
	       !__atomic_load_n(&c->deferred, __ATOMIC_RELAXED);
}

static bool on_board(const struct sv_conn *c)
{
	return __atomic_load_n(&c->shm.slot, __ATOMIC_ACQUIRE) != 0;
}

/* The rings off the board (those that joined it since leave the list), or
 * every ring. */
static int look_list(struct sv_node *node, struct sv_conn **ready, int max, bool full)
{
	struct sv_list *head = full ? &node->shm_conns : &node->shm_scan, *pos, *tmp;
	int n = 0;

	sv_list_for_each_safe(pos, tmp, head) {
		struct sv_conn *c = full ? sv_container_of(pos, struct sv_conn, shm_link) :
				    sv_container_of(pos, struct sv_conn, node_link);

		if (look_ready(c) && n < max)
			ready[n++] = c;
		if (!full && on_board(c))
			sv_list_del(&c->node_link);      /* its writers set its bit from now on */
	}
	return n;
}

static bool node_takes(const struct sv_conn *c, const void *node)
{
	return c->node == node;
}

/* The rings the board names: their writers set the bits, so a look costs
 * what has work, not what is connected (docs/measurements.md, 'Progress
 * thread: the board').  Channels are freed only by this thread (sv_conn_reap). */
static int look_board(struct sv_node *node, struct sv_conn **ready, int max)
{
	int k = sv_board_take(node_takes, node, ready, max, &node->board_cursor), n = 0;

	for (int i = 0; i < k; i++) {
		struct sv_conn *c = ready[i];

		if (__atomic_load_n(&c->closed, __ATOMIC_ACQUIRE))
			continue;
		if (look_ready(c))
			ready[n++] = c;
		else if (__atomic_load_n(&c->deferred, __ATOMIC_RELAXED))
			sv_conn_board_remind(c);         /* its bit stays for the next look */
	}
	return n;
}

int sv_conn_shm_arm_all(struct sv_node *node, struct sv_conn **ready, int max, struct sv_ring_look *look)
{
	int n;

	pthread_mutex_lock(&node->lock);
	look->any = !sv_list_empty(&node->shm_conns);
	n = look_list(node, ready, max, look->full);
	pthread_mutex_unlock(&node->lock);
	if (!look->full && n < max)
		n += look_board(node, ready + n, max - n);
	return n;
}

/* Any ring channel whose peer announces a copy of `slot`?  With `cut`,
 * such channels are cut: the rings marked closed (the peer's checks fail
 * from now on, and our next look at the ring finds its end). */
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
		sv_shm_peer_ring(c->shm_peer);
		sv_node_kick(node);
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
