/*
 * What the engine needs from a transport, and nothing more.
 *
 * A channel (struct sv_conn) is an ordered, reliable, bidirectional byte
 * stream between one local QP and its peer QP; frames (wire/proto.h) travel
 * on it.  Each RC/UC QP has an outbound channel (it connected: its requests
 * go out, responses come back) and an inbound one (the peer connected:
 * requests come in, responses go out).  Datagrams (UD) go through the port
 * group's UDP socket.  Readiness is reported by the node's progress thread.
 */
#ifndef SV_TRANSPORT_H
#define SV_TRANSPORT_H

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>

#include "transport/node.h"
#include "transport/shm/board.h"
#include "transport/shm/chan.h"
#include "transport/shm/mrmap.h"
#include "transport/shm/segment.h"
#include "util/env.h"
#include "wire/proto.h"

#define SV_PLACE_MAX_SEG 34     /* max_sge + GRH area + inline */
/* the largest datagram: a header, an MTU, a fault trailer (transport/fault/) */
#define SV_UDP_BUF (sizeof(struct sv_wire_hdr) + SV_WIRE_MTU + 4)

struct sv_qp;

/* What a channel can do beyond carrying frames in order.  The transport
 * sets them when it makes a channel or switches it to rings; the engine
 * asks for what it needs, never which transport it has. */
enum sv_chan_cap {
	/* input sits in memory we map: reading is a copy, pollers look at it
	 * directly, a dead peer's last frames stay readable there */
	SV_CAP_MAPPED    = 1u << 0,
	SV_CAP_ACK_WORD  = 1u << 1,  /* ACKs are a word the requester reads, not frames */
	SV_CAP_HOLD      = 1u << 2,  /* input may stay unread at no cost (a SEND held for a receive) */
	SV_CAP_SHORT_HDR = 1u << 3,  /* a header may leave out its zero tail */
	/* may carry requests both ways, and ACKs on requests: watched from
	 * both of its QP's CQs (engine/req.c, xmit.c) */
	SV_CAP_TURN      = 1u << 4,
	/* a spinning poller may take its input from the progress thread, and
	 * a read that comes back short has emptied it (engine/drive.c) */
	SV_CAP_SPIN_TAKE = 1u << 5,
	/* frames may be lost or duplicated (SOFTVERBS_FAULT, transport/fault/):
	 * RC retransmits on timeout and NAKs a gap (engine/comp.c, resp.c) */
	SV_CAP_LOSSY     = 1u << 6,
	/* a read of more than a segment makes the transport acknowledge at
	 * once (TCP with segments far smaller than a large message): pollers
	 * read a stream of large requests in batches (engine/drive.c) */
	SV_CAP_READ_ACKS = 1u << 7,
};

/* What the engine says of the input a channel holds, for the transport's
 * readiness tests (sv_conn_shm_has_input): pollers read it unlocked. */
enum sv_chan_input {
	SV_INPUT_OPEN,    /* input is what the channel holds */
	SV_INPUT_HELD,    /* nothing is input until the engine says so */
	SV_INPUT_STAGED,  /* a frame the engine already took waits: that is input */
};

/* How a channel's bytes move: one table per transport (tcp/stream.c,
 * unix/stream.c, shm/ringchan.c).  writev returns the bytes taken, 0 when
 * there is no room; readv the bytes read, -EAGAIN when there is nothing,
 * else the channel is dead (c->dead). */
struct sv_direct;
struct sv_recv_pub;
#define SV_CONN_MAX_FDS 6   /* the most a handshake frame carries */

/* What a frame means to a peer thread asleep on its completion channel. */
enum sv_wake {
	SV_WAKE_NONE,        /* nothing completes there (an ACK, a WRITE, a READ request) */
	SV_WAKE_COMPLETES,   /* a completion: a SEND or WRITE with immediate */
	SV_WAKE_SOLICITED,   /* a completion with the solicited event bit */
};

/* A datagram lane (tcp/lane.h) offered in a LANE or LANE_ACK frame: the
 * sender's UDP port (0: none) and the secret datagrams to it carry. */
struct sv_lane_offer {
	uint16_t port;
	uint64_t secret;
};

struct sv_chan_ops {
	const char *name;            /* for logs */
	uint32_t caps;               /* enum sv_chan_cap */
	bool same_host;              /* names its peer (SO_PEERCRED), carries descriptors */
	ssize_t (*writev)(struct sv_conn *c, const struct iovec *iov, int n);
	ssize_t (*readv)(struct sv_conn *c, const struct iovec *iov, int n);
	void (*close)(struct sv_conn *c);    /* optional: tell the peer first, let go of the rest */
	/* optional: the next `len` bytes of input, left there (false: not all
	 * in yet); a reader that takes them reads them */
	bool (*peek)(struct sv_conn *c, void *buf, size_t len);
	/* take the next frame, exactly `len` bytes and peeked whole, uncopied */
	bool (*skip)(struct sv_conn *c, size_t len);
	/* optional: report input (epoll, wake-ups) only once `bytes` wait;
	 * 1 again: any byte.  The engine asks only for bytes on their way. */
	void (*rx_lowat)(struct sv_conn *c, uint32_t bytes);

	/* The rest is optional: NULL where the transport cannot, and the
	 * sv_chan_* calls below answer for it (nothing, or -EOPNOTSUPP). */
	/* SV_CAP_MAPPED: input waiting in memory; a sleeper's writer must ring */
	bool (*has_input)(const struct sv_conn *c);
	void (*arm)(struct sv_conn *c, enum sv_wake how);
	/* no application thread polls for its input: its writer wakes our
	 * progress thread even while another thread of ours polls */
	void (*unpolled)(struct sv_conn *c);
	/* SV_CAP_ACK_WORD: the responder publishes, the requester takes a new value */
	void (*ack_publish)(struct sv_conn *c, uint32_t psn);
	bool (*ack_take)(struct sv_conn *c, uint32_t *psn);
	/* the peer's memory, directly (cma_ok: one-sided ops; pull_ok: SENDs) */
	int (*direct)(struct sv_conn *c, const struct sv_direct *d);
	ssize_t (*pull)(struct sv_conn *c, const struct sv_wire_pull *pd, int n,
			const struct iovec *dst, int ndst, size_t len);
	/* SENDs the requester places (cma_ok; shm/mirror.h): the responder
	 * publishes its receives, the requester copies into them */
	void (*recv_publish)(struct sv_conn *c, uint32_t idx, const struct sv_recv_pub *r);
	int (*place)(struct sv_conn *c, uint32_t idx, const struct iovec *src, int n, size_t len);
	/* the same-host handshake (shm/handshake.c) */
	uint64_t (*offer)(struct sv_conn *c);
	uint64_t (*take)(struct sv_conn *c, const struct sv_wire_hdr *hello);
	bool (*answered)(struct sv_conn *c, const struct sv_wire_hdr *ack, bool pull_wanted);
	/* the datagram lane's handshake (tcp/lane.h) */
	bool (*lane_offer)(struct sv_conn *c, struct sv_lane_offer *ours);
	bool (*lane_take)(struct sv_conn *c, const struct sv_lane_offer *theirs,
			  struct sv_lane_offer *ours);
	void (*lane_answered)(struct sv_conn *c, const struct sv_lane_offer *theirs);
	void (*lane_counters)(struct sv_conn *c, uint64_t *tx, uint64_t *rx);
	bool (*lane_up)(const struct sv_conn *c);
};
extern const struct sv_chan_ops sv_tcp_ops, sv_unix_ops, sv_ring_ops;

struct sv_qpchan;
struct sv_fault_stream;
struct sv_conn {
	struct sv_handler h;
	const struct sv_chan_ops *ops;
	struct sv_node *node;
	struct sv_qpchan *qc;        /* the engine's state for it (up->chan_size bytes) */
	struct sv_list node_link;    /* on one node list at a time (node lock): pending (an
	                              * inbound conn awaiting HELLO), shm_scan (a ring
	                              * channel off the board) or graveyard */
	struct sv_pgroup *group;     /* inbound: the port group that accepted it */
	uint64_t pending_since;      /* inbound: accepted at (ns; transport/bounds.c) */
	bool pending_told;           /* its handshake time ran out: the engine was told */
	bool outbound;
	bool connected;              /* TCP connect finished */
	bool want_out;               /* EPOLLOUT armed */
	bool paused;                 /* EPOLLIN disarmed until the QP is ready */
	bool dead;                   /* EOF or error seen */
	bool closed;                 /* on the node's graveyard, freed after the batch */
	uint32_t caps;               /* enum sv_chan_cap: ops->caps */
	uint8_t input;               /* enum sv_chan_input: what the engine says its input is worth */
	uint32_t rx_lowat;           /* what rx_lowat last set (0: never, as 1) */
	uint32_t rx_lowat_max;       /* its ceiling for this socket (tcp/stream.c; 0: not yet known) */

	/* same-host fast path (transport/shm): frames move through rings, and
	 * the socket is closed: the peer process's bell rings it and its life
	 * line says when it has gone (shm/peer.h); on from the switch
	 * (SV_CAP_MAPPED, ops sv_ring_ops) */
	struct sv_shm_chan shm;
	struct sv_list shm_link;     /* node's list of ring channels */
	struct sv_shm_peer *shm_peer;    /* the peer process (counted), from the handshake */
	const struct sv_seg *peer_seg;   /* the peer's published MR table (read-only) */
	struct sv_board *peer_board;     /* where we tell the peer to look (shm/board.h) */
	uint64_t peer_poll_seen;     /* its last_poll_ns when we last looked */
	uint32_t peer_poll_same;     /* writes since it last changed */
	pid_t peer_pid;
	uid_t peer_uid;
	bool cma_ok;                 /* cross-memory attach into the peer works */
	bool peer_self;              /* the peer is this process (a loopback QP pair) */
	struct sv_peer_maps peer_maps;   /* the peer's registered memory we mapped */
	uint32_t peer_pd, peer_access;   /* the peer QP's PD and access flags */
	bool pull_ok;                /* outbound: the responder may pull large SENDs */
	int rx_fds[SV_CONN_MAX_FDS], n_rx_fds;  /* descriptors received with the last bytes */
	int tx_fds[SV_CONN_MAX_FDS], n_tx_fds;  /* descriptors to send with the next write */
	/* Direct wake-ups (shm/ringchan.c): the descriptor our thread sleeping
	 * for this channel's CQ waits on, offered in the handshake (not ours
	 * to close); the peer's, taken from its handshake (shared with the
	 * peer process's other channels that name the same one, shm/peer.h;
	 * -1: none);
	 * and what the engine says the frame being written means to the
	 * peer's sleeper (enum sv_wake). */
	int wake_fd, peer_wake_fd;
	uint64_t wake_id;            /* ours: which completion channel wake_fd is (0: none) */
	uint8_t wake_hint;

	/* Spinning pollers (engine/drive.c).  Read by other threads without
	 * the QP lock: kept apart from the flags above, which the compiler
	 * may load together. */
	pthread_mutex_t watch_lock;  /* orders changes of the progress thread's events */
	uint8_t spin_off;            /* input left to pollers spinning on its CQs (count) */
	uint8_t spin_reads;          /* ... of which CQs read it on every poll (count) */
	bool unwatched;              /* out of the progress thread's set meanwhile */
	uint32_t deferred;           /* events left to the QP lock's holder (engine/recv.c) */

	/* SOFTVERBS_FAULT's filter (transport/fault/), with SV_CAP_LOSSY; else NULL */
	struct sv_fault_stream *fault;

	/* TCP: its datagram lane (tcp/lane.h), or NULL.  Last: the same-host
	 * fields above keep their cache lines. */
	struct sv_lane *lane;
	uint64_t tx_bytes, rx_bytes; /* the stream's bytes written, and read (lane.h) */
	bool tx_awaited;             /* the next write holds a frame its peer waits for
				      * alone (engine/xmit.c): a lane copies it */
};

/* A channel's capabilities, for threads that may not hold its QP's lock
 * (pollers): a same-host channel gains the rings' when it switches to them. */
static inline uint32_t sv_conn_caps(const struct sv_conn *c)
{
	return __atomic_load_n(&c->caps, __ATOMIC_RELAXED);
}

/* conn.c (what every channel has), tcp/stream.c, unix/stream.c */
/* A channel is set up (owner, kind) before sv_conn_start() lets the
 * progress thread see it. */
struct sv_conn *sv_conn_new(struct sv_node *node, int fd, bool outbound, bool connected,
			    const struct sv_chan_ops *ops);
void sv_conn_tune_socket(int fd);
/* For socket ops: a system call's result (-errno) as writev/readv report it. */
ssize_t sv_conn_sock_wrote(struct sv_conn *c, ssize_t r);
ssize_t sv_conn_sock_read(struct sv_conn *c, ssize_t r);
int sv_conn_start(struct sv_conn *c);
void sv_conn_free_unstarted(struct sv_conn *c);
/* Close now, free later: an event for it may still sit in the progress
 * thread's current batch, so the memory lives until the batch ends. */
void sv_conn_close(struct sv_conn *c);
/* The same, but a socket channel's last bytes reach the peer first: its
 * socket drains until the peer's EOF, for a bounded time (linger.c). */
void sv_conn_close_linger(struct sv_conn *c);
/* Close the channel's socket and stop watching it (a ring channel's, once
 * switched: shm/peer.h). */
void sv_conn_drop_socket(struct sv_conn *c);
/* Close the descriptors the last read brought (handshake: once used). */
void sv_conn_drop_rx_fds(struct sv_conn *c);
/* ... and those to send (sent: the message holds its own; or not wanted). */
void sv_conn_drop_tx_fds(struct sv_conn *c);
void sv_conn_reap(struct sv_node *node);     /* progress thread: free closed conns */
void sv_conn_want_out(struct sv_conn *c, bool on);
void sv_conn_pause(struct sv_conn *c, bool paused);
/* A poller spinning on one of the channel's CQs takes its input (TCP
 * channels), or gives it back: calls pair up. */
void sv_conn_spin_off(struct sv_conn *c, bool off);
/* ... and reads it on every poll, out of its own epoll set, or no longer:
 * calls pair up.  While any does and the progress thread wants none of
 * its events, the socket is out of the progress thread's set too. */
void sv_conn_spin_reads(struct sv_conn *c, bool on);
/* Leave events to the application thread holding the QP lock (no events
 * for the progress thread meanwhile); it takes them, serves them, and
 * gives the channel back (sv_conn_rewatch). */
void sv_conn_defer(struct sv_conn *c, uint32_t events);
bool sv_conn_take_deferred(struct sv_conn *c, uint32_t *events);
void sv_conn_rewatch(struct sv_conn *c);
ssize_t sv_conn_writev(struct sv_conn *c, const struct iovec *iov, int n);
ssize_t sv_conn_read(struct sv_conn *c, void *buf, size_t len);
ssize_t sv_conn_readv(struct sv_conn *c, const struct iovec *iov, int n);
void sv_tcp_accepted(struct sv_conn *c);
/* Bytes already read wait in the channel (a fault filter's checked frames):
 * read on, the socket will not say so. */
bool sv_conn_input_pending(const struct sv_conn *c);
int sv_conn_connect(struct sv_node *node, const struct sockaddr_in *dst, struct sv_conn **out);
int sv_conn_connect_local(struct sv_node *node, uint16_t port, struct sv_conn **out);
/* Switch a channel to its rings (both ends, after HELLO/HELLO_ACK): its
 * socket is closed. */
void sv_conn_shm_start(struct sv_conn *c);
/* The peer process went (its life line broke; node lock held): its rings
 * are closed for us. */
struct sv_shm_peer;
void sv_conn_shm_peer_gone(struct sv_node *node, struct sv_shm_peer *p);
/* Progress thread, before sleeping: ask writers for a doorbell; returns the
 * ring channels that already hold data (up to max).  It looks at the rings
 * off the board and at those the board names, or (`full`) at every ring. */
struct sv_ring_look {
	bool full;                   /* in: every ring */
	bool any;                    /* out: ring channels exist */
};
int sv_conn_shm_arm_all(struct sv_node *node, struct sv_conn **ready, int max, struct sv_ring_look *look);
/* A ring channel taken from the board: writers ring its doorbell again. */
void sv_conn_shm_rearm(struct sv_conn *c);
/* One served in part, or left to another thread: on the board and with work
 * still, its bit again (no writer will set it). */
void sv_conn_shm_keep(struct sv_conn *c);
/* ibv_dereg_mr, once the MR left the segment: wait for same-host peers'
 * announced cross-memory-attach copies of MR `slot` (shm/cma.h) to end, at
 * most SV_DIRECT_WAIT_NS; a peer still at it then loses its channel. */
#define SV_DIRECT_WAIT_NS (1000ull * 1000 * 1000)
void sv_conn_shm_wait_direct(struct sv_node *node, uint32_t slot);

/* What the transport tells the engine: its one way up, given to the node
 * when it starts (sv_node_get).  On the progress thread, unless said. */
struct sv_cq;
struct sv_upcalls {
	size_t chan_size;            /* the engine's state of a channel (c->qc) */
	/* a channel has events (0: a ring channel has input) */
	void (*chan_ready)(struct sv_conn *c, uint32_t events);
	/* a channel is about to be freed: the engine's part lets go of what it holds */
	void (*chan_free)(struct sv_conn *c);
	/* an inbound channel's handshake time ran out (bounds.c): it must go */
	void (*pending_expired)(struct sv_conn *c);
	/* a well-formed datagram for h->dst_qpn, its source checked */
	void (*dgram)(struct sv_node *node, const struct sockaddr_in *from,
		      const struct sv_wire_hdr *h, const uint8_t *payload);
	/* a timer's deadline came (sv_node_timer_set) */
	void (*timer)(void *owner, uint64_t now);
	/* does an application thread poll this ring channel's CQ right now? */
	bool (*poller_active)(struct sv_conn *c, uint64_t now);
	/* while pollers spin: end the spins nobody polls any more; returns
	 * the ms to the next tick, or -1 when the ticks may stop */
	int (*spin_tick)(struct sv_node *node, uint64_t now);
	/* a channel goes: application pollers must stop looking at it */
	void (*drive_forget)(struct sv_conn *c);
	/* a checked multicast copy for a member's owner (sv_mcast_join) */
	void (*mcast_dgram)(void *owner, const struct sv_wire_hdr *h, const uint8_t *payload,
			    struct in_addr self);
};

/* unix/member.c: a UD QP's membership of a multicast group on this host.
 * Its copies reach the engine through up->mcast_dgram with `owner`.  NULL
 * with errno on failure.  Leave on the progress thread (no handler runs). */
struct sv_mcast_member;
struct sv_mcast_member *sv_mcast_join(struct sv_node *node, const union ibv_gid *mgid,
				      uint32_t qpn, void *owner);
void sv_mcast_leave(struct sv_mcast_member *m);

/* shm/handshake.c: the same-host part of the HELLO / HELLO_ACK exchange.
 * Opener: offer rings and our segment to a peer of our own user (returns
 * the segment's address for the HELLO, 0: nothing offered).  Acceptor:
 * take the offer if the peer may have it (returns our segment's address
 * for the HELLO_ACK, 0: refused).  Opener again: switch to the rings if
 * the answer took them (peer_pd, peer_access from the answer; large SENDs
 * pulled if the answer allows and pull_wanted). */
bool sv_conn_same_user(struct sv_conn *c);
uint64_t sv_conn_rings_offer(struct sv_conn *c);
uint64_t sv_conn_rings_take(struct sv_conn *c, const struct sv_wire_hdr *hello);
bool sv_conn_rings_answered(struct sv_conn *c, const struct sv_wire_hdr *ack, bool pull_wanted);
/* ring channels (shm/ringchan.c): their ops' functions */
bool sv_conn_shm_has_input(const struct sv_conn *c);
/* Does the ring channel need serving: input for us, or room for a write
 * of ours that waited?  (A poll's look; the progress thread's also looks
 * for the end, sv_conn_peer_left.) */
bool sv_conn_shm_ready(const struct sv_conn *c);
/* The peer's QP left the connected states (it marked the rings), or the
 * peer process has gone (we did). */
bool sv_conn_peer_left(const struct sv_conn *c);
/* "shared memory", "unix socket" or "tcp", for logs. */
const char *sv_conn_kind_name(const struct sv_conn *c);

/* shm/direct.c: a one-sided operation on a same-host peer's registered
 * memory, done here (the channel has cma_ok).  iov: the local data (WRITE
 * source, READ destination, an atomic's 8-byte result).  0: done; -EACCES:
 * the key, rights or bounds refuse it; -EINVAL: an unaligned atomic;
 * -EAGAIN: it goes as a frame instead. */
struct sv_direct {
	unsigned int need;           /* IBV_ACCESS_REMOTE_WRITE, _READ or _ATOMIC */
	uint32_t rkey;
	uint64_t raddr, len;
	const struct iovec *iov;
	int n;
	bool to_remote;              /* WRITE */
	bool cmp_swp;                /* atomic: compare-and-swap, else fetch-and-add */
	uint64_t compare_add, swap;
};
int sv_conn_direct(struct sv_conn *c, const struct sv_direct *d);
/* A pulled SEND's `len` bytes, described by pd[0..n) (the request's pull
 * descriptors), read from the requester into dst; bytes or -errno. */
ssize_t sv_conn_pull(struct sv_conn *c, const struct sv_wire_pull *pd, int n,
		     const struct iovec *dst, int ndst, size_t len);

/* shm/mirror.c: a responder's receive `idx` (counted from its QP's RESET)
 * for the requester to place a SEND into, and the placement: 0, the SEND
 * is in receive `idx`; else it travels as a frame: -EAGAIN, that receive
 * is not published (yet); -EFAULT, its memory is not ours to reach. */
struct sv_recv_pub {
	uint64_t addr;               /* the receive's first SGE */
	uint32_t len, lkey;
	uint32_t nsge;
};
void sv_conn_recv_publish(struct sv_conn *c, uint32_t idx, const struct sv_recv_pub *r);
int sv_conn_place(struct sv_conn *c, uint32_t idx, const struct iovec *src, int n, size_t len);

/* The engine's calls of a channel's optional ops (struct sv_chan_ops). */
/* Frames to read, or an acknowledgement not yet taken (pollers, unlocked). */
static inline bool sv_chan_has_input(const struct sv_conn *c)
{
	return c->ops->has_input && c->ops->has_input(c);
}

/* A thread sleeps for the CQ this channel completes to, woken by the
 * frames `how` says (SV_WAKE_NONE: nobody sleeps): its writer rings the
 * doorbell even while another thread of ours polls, and wakes the sleeper
 * itself where it can.  Called again each time the thread goes to sleep. */
static inline void sv_chan_arm(struct sv_conn *c, enum sv_wake how)
{
	if (c->ops->arm)
		c->ops->arm(c, how);
}

/* Only the progress thread serves this channel's input (no CQ's pollers
 * look at it): a writer that skipped our doorbell because some thread of
 * ours polls would leave it waiting for the progress thread's next tick. */
static inline void sv_chan_unpolled(struct sv_conn *c)
{
	if (c->ops->unpolled)
		c->ops->unpolled(c);
}

static inline void sv_chan_ack_publish(struct sv_conn *c, uint32_t psn)
{
	if (c->ops->ack_publish)
		c->ops->ack_publish(c, psn);
}

/* A new value of the peer's ACK word (false: none). */
static inline bool sv_chan_ack_take(struct sv_conn *c, uint32_t *psn)
{
	return c->ops->ack_take && c->ops->ack_take(c, psn);
}

static inline int sv_chan_direct(struct sv_conn *c, const struct sv_direct *d)
{
	return c->ops->direct ? c->ops->direct(c, d) : -EOPNOTSUPP;
}

static inline bool sv_chan_peek(struct sv_conn *c, void *buf, size_t len)
{
	return c->ops->peek && c->ops->peek(c, buf, len);
}

/* Take the `len` bytes just peeked, a whole frame (false: not taken). */
static inline bool sv_chan_skip(struct sv_conn *c, size_t len)
{
	return c->ops->skip && !(c->caps & SV_CAP_LOSSY) && c->ops->skip(c, len);
}

/* Wake the channel's readers only once `bytes` of input wait (1: any).
 * Not on a lossy channel: its filter reads whole frames ahead of us. */
static inline void sv_chan_rx_lowat(struct sv_conn *c, uint32_t bytes)
{
	if ((c->rx_lowat ? c->rx_lowat : 1) != bytes && c->ops->rx_lowat &&
	    !(c->caps & SV_CAP_LOSSY))
		c->ops->rx_lowat(c, bytes);
}

static inline void sv_chan_recv_publish(struct sv_conn *c, uint32_t idx,
					const struct sv_recv_pub *r)
{
	if (c->ops->recv_publish)
		c->ops->recv_publish(c, idx, r);
}

static inline int sv_chan_place(struct sv_conn *c, uint32_t idx, const struct iovec *src, int n,
				size_t len)
{
	return c->ops->place ? c->ops->place(c, idx, src, n, len) : -EOPNOTSUPP;
}

static inline ssize_t sv_chan_pull(struct sv_conn *c, const struct sv_wire_pull *pd, int n,
				   const struct iovec *dst, int ndst, size_t len)
{
	return c->ops->pull ? c->ops->pull(c, pd, n, dst, ndst, len) : -EOPNOTSUPP;
}

/* Handshake: what we offer in our HELLO (0: nothing), take of the peer's
 * offer for our HELLO_ACK (0: nothing), and whether its answer switched
 * the channel to rings. */
static inline uint64_t sv_chan_offer(struct sv_conn *c)
{
	return c->ops->offer ? c->ops->offer(c) : 0;
}

static inline uint64_t sv_chan_take(struct sv_conn *c, const struct sv_wire_hdr *hello)
{
	return c->ops->take ? c->ops->take(c, hello) : 0;
}

static inline bool sv_chan_answered(struct sv_conn *c, const struct sv_wire_hdr *ack,
				    bool pull_wanted)
{
	return c->ops->answered && c->ops->answered(c, ack, pull_wanted);
}

/* Can the channel have a lane (and does SOFTVERBS_LANE allow it)? */
static inline bool sv_chan_lanes(const struct sv_conn *c)
{
	return c->ops->lane_offer && !(c->caps & SV_CAP_LOSSY) && sv_lane_enabled();
}

/* Is its lane up (connected to the peer's)? */
static inline bool sv_chan_lane_up(const struct sv_conn *c)
{
	return c->ops->lane_up && c->ops->lane_up(c);
}

static inline bool sv_chan_lane_offer(struct sv_conn *c, struct sv_lane_offer *ours)
{
	return c->ops->lane_offer && c->ops->lane_offer(c, ours);
}

static inline bool sv_chan_lane_take(struct sv_conn *c, const struct sv_lane_offer *theirs,
				     struct sv_lane_offer *ours)
{
	return c->ops->lane_take && c->ops->lane_take(c, theirs, ours);
}

static inline void sv_chan_lane_answered(struct sv_conn *c, const struct sv_lane_offer *theirs)
{
	if (c->ops->lane_answered)
		c->ops->lane_answered(c, theirs);
}

/* The lane counts the datagrams it sends and takes at tx and rx. */
static inline void sv_chan_lane_counters(struct sv_conn *c, uint64_t *tx, uint64_t *rx)
{
	if (c->ops->lane_counters)
		c->ops->lane_counters(c, tx, rx);
}

/* conn.c: this thread reads a channel without being told it has input
 * (a spinning poller's look at its hot channel, engine/drive.c), not
 * because its socket said so. */
extern __thread bool sv_conn_blind;

/* conn.c: the listeners' handlers (TCP and unix). */
void sv_conn_on_accept(struct sv_handler *h, uint32_t events);
void sv_conn_on_accept_unix(struct sv_handler *h, uint32_t events);

/* udp/dgram.c: every datagram queued on a port group's UDP socket, read
 * into buf (SV_UDP_BUF), checked and handed up; the handler does the same. */
void sv_dgram_drain(struct sv_node *node, int fd, uint8_t *buf);
/* Is the datagram buf[0..r) one well-formed SEND frame?  *hdr: its header,
 * decoded.  (Its source is the caller's to check.) */
bool sv_dgram_frame_ok(const uint8_t *buf, ssize_t r, struct sv_wire_hdr *hdr);
void sv_dgram_on_ready(struct sv_handler *h, uint32_t events);
/* shm/dgring.c: datagrams from processes of this host wait in rings; a
 * poller of a CQ with UD QPs drains them (buf: SV_UDP_BUF), and says when
 * it stops polling, so that their writers ring for the progress thread.
 * A look from a poller about to sleep (its CQ armed) is not polling: it
 * does not tell the progress thread to leave the rings to pollers. */
bool sv_dgram_poll(struct sv_node *node, uint8_t *buf, bool polling);   /* false: no rings */
void sv_dgram_stop_polling(struct sv_node *node);

/* udp/dgram.c: datagrams leave from the port group of src_qpn; to a port
 * group of this host through its ring once it has one (shm/dgring.h). */
int sv_dgram_send(struct sv_node *node, uint32_t src_qpn, const struct sockaddr_in *dst,
		  const struct iovec *iov, int n);
/* To every member of `mgid` on this host; members reached, or -errno. */
int sv_dgram_send_mcast(struct sv_node *node, uint32_t src_qpn, const union ibv_gid *mgid,
			const struct iovec *iov, int n);
/* Is a datagram's claimed source (src_qpn's port, data1) the UDP source it
 * came from?  Otherwise it is dropped (docs/wire-format.md). */
bool sv_dgram_source_ok(const struct sv_node *node, const struct sockaddr_in *from,
			const struct sv_wire_hdr *h);

#endif
