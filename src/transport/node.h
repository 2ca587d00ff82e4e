/*
 * The node: this process's attachment to the softverbs fabric.
 *
 * Address plan.  The device has one IPv4 address A (SOFTVERBS_IP, else the
 * first up non-loopback interface, else 127.0.0.1).  Its LID is the low 16
 * bits of A and its GID[0] is ::ffff:A.  A QPN is (P << 8) | slot, where P is
 * a TCP port this process has bound on every address and a UDP port it has
 * bound on A: the kernel's port allocation makes QPNs unique on the host
 * without any shared registry, and (LID or GID, QPN) names a host and a
 * port, so it reaches the QP from this host and from others.  LID L
 * resolves to (A & 0xffff0000) | L; our own address (and any loopback one)
 * resolves to 127.0.0.1, which channels take for "same host"; UD sends
 * there go to A, where the UDP sockets are (udp/dgram.c).
 *
 * Progress.  One thread per process waits on every socket with epoll and runs
 * timers; application threads never depend on it for their own calls, and
 * the responder side of every QP runs on it, so a target blocked in read()
 * still serves RDMA READs.
 */
#ifndef SV_TRANSPORT_NODE_H
#define SV_TRANSPORT_NODE_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/list.h"
#include "util/time.h"
#include "wire/addr.h"

#define SV_QP_PER_GROUP 256

struct sv_qp;
struct sv_handler;
typedef void (*sv_handler_fn)(struct sv_handler *h, uint32_t events);

/* Something the progress thread waits on. */
struct sv_handler {
	int fd;
	sv_handler_fn fn;
};

/* A port group: one TCP listener (every address) and one UDP socket (the
 * device address) on the same port P, and P's unix names; it names QPNs
 * (P << 8) .. (P << 8) + 255. */
struct sv_pgroup {
	struct sv_node *node;
	uint16_t port;
	struct sv_handler listen_h;
	struct sv_handler udp_h;
	struct sv_handler unix_h;    /* same-host channels */
	struct sv_handler ud_h;      /* same-host UD rings (shm/dgring.h) */
	int mcast_fd;                /* sends multicast, named after P (unix/mcast.h) */
	struct sv_qp *slot[SV_QP_PER_GROUP];
	uint32_t used;
	uint64_t accept_resume_ns;   /* listeners unwatched until then (0: watched; bounds.c) */
};

/* Work the progress thread runs for another thread (teardown). */
struct sv_cmd {
	struct sv_list link;
	void (*fn)(void *arg);
	void *arg;
	bool done;
};

struct sv_upcalls;
struct sv_dgrings;
struct sv_node {
	const struct sv_upcalls *up; /* the engine (transport.h) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refcnt;

	struct in_addr addr;         /* device address, network order */
	uint16_t lid;
	union ibv_gid gid;
	uint64_t guid;

	int epfd;
	struct sv_handler wake_h;    /* eventfd */
	pthread_t thread;
	bool stop;
	bool forked;                 /* inherited by fork(): no thread, shares fds with the parent */

	struct sv_pgroup **groups;
	uint32_t ngroups;
	struct sv_list timers;       /* QPs that have had deadlines (left on it until destroyed) */
	uint64_t timers_next;        /* no deadline before it (ns; ~0: none; 0: being looked for) */
	uint64_t sleep_until;        /* progress thread sleeps until (ns; 0: awake, ~0: no timer) */
	struct sv_list pending;      /* inbound conns awaiting HELLO (bounds.c) */
	int pending_max;             /* per port group (SOFTVERBS_PENDING_MAX) */
	uint64_t pending_due;        /* progress thread: look for expired ones then (ns) */
	uint64_t accept_due;         /* progress thread: resume a listener then (ns) */
	struct sv_list lingering;    /* sockets of closed channels, draining (linger.c; node lock) */
	uint64_t linger_due;         /* the first of them ends then (ns; node lock) */
	uint64_t fd_budget;          /* descriptors asked for so far (node lock) */
	struct sv_list cmds;
	struct sv_list graveyard;    /* closed conns (node lock) */
	struct sv_list shm_conns;    /* ring channels (node lock) */
	struct sv_list shm_scan;     /* those of them not known to be on the board (node lock) */
	uint32_t board_cursor;       /* progress thread: where its next look at the board starts */
	uint64_t rings_full_ns;      /* progress thread: its last look at every ring */
	int life_r, life_w;          /* our life line's pipe, handed to same-host peers (shm/peer.h) */
	struct sv_list shm_peers;    /* theirs, with their bells, one per process (node lock) */
	bool rings_left;             /* progress thread left ready rings to a poller */
	/* progress thread: its last look at the rings came with our poll stamp
	 * 0, the count of its clears then (shm/segment.h), whether any ring
	 * was there, and whether this wake-up is only its sleep's bound */
	bool rings_looked_asleep, rings_any, woke_by_bound;
	uint32_t rings_clears;
	bool deep_sleep;             /* progress thread sleeps past the idle bound: a poll stamp kicks it */
	bool ticking;                /* the progress thread ticks for spinning pollers */
	uint64_t busy_until;         /* progress thread: polls, not sleeps, until (ns) */
	uint8_t *udp_buf;            /* progress thread's datagram buffer */
	struct sv_dgrings *dgr;      /* same-host UD rings (shm/dgring.c) */
	struct sv_fault_dgram *fault_dgram;   /* SOFTVERBS_FAULT's for datagrams, else NULL */
};

const struct sv_addr_plan *sv_addr_plan(void);       /* wire/addr.h */

/* The process's node, started on first use with the engine's upcalls. */
struct sv_node *sv_node_get(const struct sv_upcalls *up);
void sv_node_put(struct sv_node *node);

/* A QPN is reserved first and the QP published once it is fully built:
 * until then lookups do not see it. */
int sv_node_alloc_qpn(struct sv_node *node, uint32_t *qpn);
void sv_node_publish_qp(struct sv_node *node, uint32_t qpn, struct sv_qp *qp);
void sv_node_free_qpn(struct sv_node *node, uint32_t qpn);
struct sv_qp *sv_node_lookup_qp(struct sv_node *node, uint32_t qpn);
struct sv_pgroup *sv_node_group_of(struct sv_node *node, uint32_t qpn);

bool sv_node_resolve_lid(struct sv_node *node, uint16_t lid, struct sockaddr_in *out);
bool sv_node_resolve_gid(struct sv_node *node, const union ibv_gid *gid, struct sockaddr_in *out);

int sv_node_watch(struct sv_node *node, struct sv_handler *h, uint32_t events);
int sv_node_rewatch(struct sv_node *node, struct sv_handler *h, uint32_t events);
void sv_node_unwatch(struct sv_node *node, struct sv_handler *h);
void sv_node_kick(struct sv_node *node);
/* An application thread polled (or posted): the process's poll stamp
 * (shm/segment.h) says so; the first after it was 0 wakes a progress
 * thread in its deep sleep (node.c, serve_rings). */
void sv_node_poll_stamp(struct sv_node *node, uint64_t now);
/* Run fn(arg) on the progress thread and wait for it. */
void sv_node_sync(struct sv_node *node, void (*fn)(void *), void *arg);
/* Set a timer's deadline (ns; 0: none); its owner's lock is held.  Cheap
 * on the fast path: no node lock once the timer is listed, and no wake-up
 * unless the thread would sleep past the deadline. */
void sv_node_timer_set(struct sv_node *node, struct sv_timer *t, uint64_t at);
/* Take a timer off the list for good (its owner goes). */
void sv_node_timer_forget(struct sv_node *node, struct sv_timer *t);
bool sv_node_on_progress_thread(struct sv_node *node);
/* A poller began to spin: make sure the progress thread ticks (up->spin_tick). */
void sv_node_spin_watch(struct sv_node *node);
/* Progress thread: poll instead of sleeping for the next `ns`. */
void sv_node_busy_poll(struct sv_node *node, uint64_t ns);

/* Bounded resources (bounds.c).  An inbound connection waits on the
 * pending list for its handshake, at most SOFTVERBS_PENDING_MAX per port
 * group and for SV_PENDING_TTL_NS; then the engine is told
 * (sv_engine_pending_expired).  Progress thread only, except the budget. */
#define SV_PENDING_TTL_NS (2ull * 1000 * 1000 * 1000)
struct sv_conn;
bool sv_node_pending_room(struct sv_pgroup *g);
void sv_node_pending_add(struct sv_pgroup *g, struct sv_conn *c);
/* accept4() failed with `err`: without descriptors or memory the group's
 * listeners are left alone for a while. */
void sv_node_accept_failed(struct sv_pgroup *g, int err);
/* Expire pending connections and resume listeners that are due; returns
 * `timeout` (ms, -1: none) shortened to the next such event. */
int sv_node_bounds_tick(struct sv_node *node, int timeout);
/* linger.c: end the lingering sockets whose time ran out (all: every one);
 * returns when the next one's does (0: none left). */
uint64_t sv_node_linger_reap(struct sv_node *node, uint64_t now, bool all);
/* Raise the descriptor limit as far as the node's QPs need (node lock held). */
void sv_node_fd_budget(struct sv_node *node);

#endif
