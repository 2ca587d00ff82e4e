/*
 * Bounded resources: what a process that merely listens owes strangers.
 *
 * Every port group listens on all addresses and on an abstract unix
 * socket, so anyone on the host (or the network) can connect.  A
 * connection costs a descriptor and a channel with its staging buffer
 * until its first frame names a QP; here that cost is bounded in number
 * (SOFTVERBS_PENDING_MAX per port group) and in time (SV_PENDING_TTL_NS),
 * a listener that cannot accept for want of descriptors or memory is left
 * alone for a while instead of waking the progress thread again and again
 * (epoll is level-triggered), and the descriptor limit grows with the QPs
 * rather than to the hard limit at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>

#include "transport/node.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/time.h"

#define SV_ACCEPT_BACKOFF_NS (100ull * 1000 * 1000)
#define SV_REAP_BATCH 64

/* ---- logging: once per process and condition ---- */

enum sv_bound {
	SV_BOUND_FDS,        /* accept4: EMFILE / ENFILE */
	SV_BOUND_MEM,        /* accept4: ENOBUFS / ENOMEM */
	SV_BOUND_PENDING,    /* a port group's pending list is full */
	SV_BOUND_N
};

static void report_once(enum sv_bound b, const struct sv_pgroup *g, const char *what)
{
	static bool told[SV_BOUND_N];

	/* a flood would otherwise write a line per connection */
	if (!__atomic_exchange_n(&told[b], true, __ATOMIC_RELAXED))
		sv_err("port %u: %s", g->port, what);
}

/* Milliseconds from now until `at` (0: never, -1), rounded up: a deadline
 * may be served late, never early. */
static int ms_until(uint64_t at, uint64_t now)
{
	if (!at)
		return -1;
	return at <= now ? 0 : (int)((at - now + 999999) / 1000000);
}

static int sooner(int a, int b)
{
	if (a < 0)
		return b;
	return b < 0 || a < b ? a : b;
}

/* ---- connections awaiting their handshake ---- */

bool sv_node_pending_room(struct sv_pgroup *g)
{
	struct sv_node *node = g->node;
	struct sv_list *pos, *tmp;
	int n = 0;

	/* The list is the count: whoever takes a connection off it (HELLO,
	 * close) needs to know nothing about this bound. */
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->pending)
		n += sv_container_of(pos, struct sv_conn, node_link)->group == g;
	pthread_mutex_unlock(&node->lock);
	if (n < node->pending_max)
		return true;
	report_once(SV_BOUND_PENDING, g, "too many connections without a handshake "
		    "(SOFTVERBS_PENDING_MAX), refusing new ones");
	return false;
}

void sv_node_pending_add(struct sv_pgroup *g, struct sv_conn *c)
{
	struct sv_node *node = g->node;

	c->group = g;
	c->pending_since = sv_now_ns();
	pthread_mutex_lock(&node->lock);
	sv_list_add_tail(&node->pending, &c->node_link);
	pthread_mutex_unlock(&node->lock);
	if (!node->pending_due)      /* an earlier one is due first otherwise */
		node->pending_due = c->pending_since + SV_PENDING_TTL_NS;
}

/* Tell the engine about every connection whose handshake time ran out,
 * once each.  Collected under node->lock, told without it: the engine may
 * take the QP lock of a connection that named one. */
static int reap_pending(struct sv_node *node, uint64_t now)
{
	struct sv_conn *due[SV_REAP_BATCH];
	struct sv_list *pos, *tmp;
	uint64_t next = 0;
	int n = 0;

	if (!node->pending_due || now < node->pending_due)
		return ms_until(node->pending_due, now);
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->pending) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, node_link);
		uint64_t at = c->pending_since + SV_PENDING_TTL_NS;

		if (c->pending_told)
			continue;
		if (at <= now && n < SV_REAP_BATCH) {
			c->pending_told = true;
			due[n++] = c;
		} else if (!next || at < next) {
			next = at;           /* a full batch leaves some due now: look again at once */
		}
	}
	pthread_mutex_unlock(&node->lock);
	node->pending_due = next;
	/* Closed channels are freed by the progress thread only (we are it),
	 * after its batch: the pointers stay valid meanwhile. */
	for (int i = 0; i < n; i++)
		node->up->pending_expired(due[i]);
	return ms_until(next, now);
}

/* ---- listeners out of descriptors or memory ---- */

static void watch_listeners(struct sv_pgroup *g, bool on)
{
	if (on) {
		sv_node_watch(g->node, &g->listen_h, EPOLLIN);
		sv_node_watch(g->node, &g->unix_h, EPOLLIN);
	} else {
		sv_node_unwatch(g->node, &g->listen_h);
		sv_node_unwatch(g->node, &g->unix_h);
	}
}

void sv_node_accept_failed(struct sv_pgroup *g, int err)
{
	struct sv_node *node = g->node;

	if (err == EMFILE || err == ENFILE)
		report_once(SV_BOUND_FDS, g, "out of descriptors, not accepting "
			    "connections for a while");
	else if (err == ENOBUFS || err == ENOMEM)
		report_once(SV_BOUND_MEM, g, "out of memory, not accepting "
			    "connections for a while");
	else
		return;          /* aborted by the peer, interrupted, drained: as before */
	/* Both listeners: the descriptor or memory one lacks, the other lacks too. */
	watch_listeners(g, false);
	g->accept_resume_ns = sv_now_ns() + SV_ACCEPT_BACKOFF_NS;
	if (!node->accept_due || g->accept_resume_ns < node->accept_due)
		node->accept_due = g->accept_resume_ns;
}

static int resume_listeners(struct sv_node *node, uint64_t now)
{
	uint64_t next = 0;

	if (!node->accept_due || now < node->accept_due)
		return ms_until(node->accept_due, now);
	pthread_mutex_lock(&node->lock);             /* node->groups may grow */
	for (uint32_t i = 0; i < node->ngroups; i++) {
		struct sv_pgroup *g = node->groups[i];

		if (!g->accept_resume_ns)
			continue;
		if (g->accept_resume_ns <= now) {
			g->accept_resume_ns = 0;
			watch_listeners(g, true);
		} else if (!next || g->accept_resume_ns < next) {
			next = g->accept_resume_ns;
		}
	}
	pthread_mutex_unlock(&node->lock);
	node->accept_due = next;
	return ms_until(next, now);
}

int sv_node_bounds_tick(struct sv_node *node, int timeout)
{
	uint64_t now;

	uint64_t linger_due = __atomic_load_n(&node->linger_due, __ATOMIC_RELAXED);

	if (!node->pending_due && !node->accept_due && !linger_due)
		return timeout;      /* every wake-up passes here: no clock read for nothing */
	now = sv_now_ns();
	if (linger_due && now >= linger_due)
		linger_due = sv_node_linger_reap(node, now, false);
	timeout = sooner(timeout, ms_until(linger_due, now));
	timeout = sooner(timeout, reap_pending(node, now));
	return sooner(timeout, resume_listeners(node, now));
}

/* ---- the descriptor limit ---- */

/* Per QP its two channels, their datagram lanes (TCP, a ping-pong's:
 * tcp/lane.h) and one for a peer's memory or a channel being replaced; a
 * full pending list per port group; room for the application's own. */
#define SV_FD_PER_QP 5
#define SV_FD_MARGIN 256
#define SV_FD_STEP 256      /* raise in steps: not a system call per QP */

void sv_node_fd_budget(struct sv_node *node)
{
	uint64_t qps = 0, want;
	struct rlimit rl;

	for (uint32_t i = 0; i < node->ngroups; i++)
		qps += node->groups[i]->used;
	want = qps * SV_FD_PER_QP + (uint64_t)node->ngroups * (uint64_t)node->pending_max +
	       SV_FD_MARGIN;
	if (want <= node->fd_budget)
		return;
	want = (want + SV_FD_STEP - 1) / SV_FD_STEP * SV_FD_STEP;
	node->fd_budget = want;
	/* Never lowered: the application may have raised it for itself. */
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		sv_err("descriptor limit: %s", strerror(errno));
}
