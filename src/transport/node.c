/* The per-process node: address plan, port groups, progress thread. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/sys.h"
#include "transport/node.h"
#include "transport/transport.h"
#include "transport/shm/dgring.h"
#include "transport/shm/peer.h"
#include "transport/shm/segment.h"
#include "transport/unix/mcast.h"
#include "transport/unix/sock.h"
#include "transport/fault/fault.h"
#include "util/env.h"
#include "util/log.h"
#include "util/time.h"

static pthread_mutex_t node_global_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_node *the_node;
static __thread bool on_progress_thread;

bool sv_node_on_progress_thread(struct sv_node *node)
{
	return on_progress_thread;
}

static struct in_addr pick_address(void)
{
	struct in_addr a = { htonl(INADDR_LOOPBACK) };
	const char *env = sv_env_str("SOFTVERBS_IP");
	struct ifaddrs *ifa, *i;

	if (env && inet_pton(AF_INET, env, &a) == 1)
		return a;
	if (getifaddrs(&ifa))
		return a;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
			continue;
		a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
		break;
	}
	freeifaddrs(ifa);
	return a;
}

static struct sv_addr_plan plan;
static pthread_once_t plan_once = PTHREAD_ONCE_INIT;

static void plan_init(void)
{
	uint32_t ip;

	sv_log_init();
	plan.addr = pick_address();
	ip = ntohl(plan.addr.s_addr);
	plan.lid = ip & 0xffff;
	if (!plan.lid || plan.lid == 0xffff)
		plan.lid = 1;
	plan.gid.raw[10] = 0xff;
	plan.gid.raw[11] = 0xff;
	memcpy(&plan.gid.raw[12], &plan.addr.s_addr, 4);
	/* A GUID derived from the address: stable and unique per host. */
	plan.guid = htobe64(0x0253560000000000ull | ip);
}

const struct sv_addr_plan *sv_addr_plan(void)
{
	pthread_once(&plan_once, plan_init);
	return &plan;
}

static void node_set_address(struct sv_node *node)
{
	const struct sv_addr_plan *p = sv_addr_plan();

	node->addr = p->addr;
	node->lid = p->lid;
	node->gid = p->gid;
	node->guid = p->guid;
}

static bool is_own(struct sv_node *node, struct in_addr a)
{
	return a.s_addr == node->addr.s_addr || (ntohl(a.s_addr) >> 24) == 127;
}

static void to_sockaddr(struct sv_node *node, struct in_addr a, struct sockaddr_in *out)
{
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_addr.s_addr = is_own(node, a) ? htonl(INADDR_LOOPBACK) : a.s_addr;
}

bool sv_node_resolve_lid(struct sv_node *node, uint16_t lid, struct sockaddr_in *out)
{
	struct in_addr a;

	if (!lid || lid == 0xffff)
		return false;
	if (lid == node->lid)
		a = node->addr;
	else
		a.s_addr = htonl((ntohl(node->addr.s_addr) & 0xffff0000u) | lid);
	to_sockaddr(node, a, out);
	return true;
}

bool sv_node_resolve_gid(struct sv_node *node, const union ibv_gid *gid, struct sockaddr_in *out)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct in_addr a;

	if (memcmp(gid->raw, v4mapped, sizeof(v4mapped)))
		return false;
	memcpy(&a.s_addr, &gid->raw[12], 4);
	to_sockaddr(node, a, out);
	return true;
}

/* ---- epoll registration ---- */

int sv_node_watch(struct sv_node *node, struct sv_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (node->forked)
		return -EIO;

	return epoll_ctl(node->epfd, EPOLL_CTL_ADD, h->fd, &ev) ? -errno : 0;
}

int sv_node_rewatch(struct sv_node *node, struct sv_handler *h, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = h };

	if (node->forked)
		return -EIO;

	return epoll_ctl(node->epfd, EPOLL_CTL_MOD, h->fd, &ev) ? -errno : 0;
}

void sv_node_unwatch(struct sv_node *node, struct sv_handler *h)
{
	if (!node->forked)
		epoll_ctl(node->epfd, EPOLL_CTL_DEL, h->fd, NULL);
}

void sv_node_kick(struct sv_node *node)
{
	uint64_t one = 1;

	if (!on_progress_thread && sv_write(node->wake_h.fd, &one, sizeof(one)) < 0)
		sv_err("wake: %s", strerror(errno));
}

static void on_wake(struct sv_handler *h, uint32_t events)
{
	uint64_t v;

	if (sv_read(h->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		sv_err("wake read: %s", strerror(errno));
}

/* ---- commands and timers ---- */

void sv_node_sync(struct sv_node *node, void (*fn)(void *), void *arg)
{
	struct sv_cmd cmd = { .fn = fn, .arg = arg };
	int old;

	if (on_progress_thread || node->forked) {
		fn(arg);
		return;
	}
	/* the caller may hold QP locks, and `cmd` is listed until done: not a
	 * cancellation point (util/sys.h) */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&node->lock);
	sv_list_add_tail(&node->cmds, &cmd.link);
	pthread_mutex_unlock(&node->lock);
	sv_node_kick(node);
	pthread_mutex_lock(&node->lock);
	while (!cmd.done)
		pthread_cond_wait(&node->cond, &node->lock);    /* cancellation off */
	pthread_mutex_unlock(&node->lock);
	pthread_setcancelstate(old, NULL);
}

static void run_cmds(struct sv_node *node)
{
	struct sv_list *pos, *tmp;

	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->cmds) {
		struct sv_cmd *cmd = sv_container_of(pos, struct sv_cmd, link);

		sv_list_del(&cmd->link);
		pthread_mutex_unlock(&node->lock);
		cmd->fn(cmd->arg);
		pthread_mutex_lock(&node->lock);
		cmd->done = true;
	}
	pthread_cond_broadcast(&node->cond);
	pthread_mutex_unlock(&node->lock);
}

/*
 * The earliest deadline (timers_next), so that the progress thread looks at
 * the list of timers only when one may be due: every pass of its loop did,
 * thousands of QPs each (qp_scale).  A deadline set earlier than it lowers
 * it; one moved later or cleared leaves it early, which costs a look
 * for nothing.  While the progress thread looks, it is 0: a deadline set
 * then is recorded as is and kept, as the look may have missed it.
 */
#define SV_TIMERS_NONE (~0ull)

static void timers_lower(struct sv_node *node, uint64_t d)
{
	uint64_t cur = __atomic_load_n(&node->timers_next, __ATOMIC_SEQ_CST);

	while ((!cur || d < cur) &&
	       !__atomic_compare_exchange_n(&node->timers_next, &cur, d, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* After a look that found `next` (0: none): publish it, unless deadlines
 * were set meanwhile (then the earlier of the two). */
static void timers_publish(struct sv_node *node, uint64_t next)
{
	uint64_t want = next ? next : SV_TIMERS_NONE, cur = 0;

	while (!__atomic_compare_exchange_n(&node->timers_next, &cur, cur && cur < want ? cur : want,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

void sv_node_timer_set(struct sv_node *node, struct sv_timer *t, uint64_t d)
{
	uint64_t sleep;

	/* The progress thread stores sleep_until, then reads timers_next (and
	 * t->at if one may be due); we store t->at and lower timers_next, then
	 * read sleep_until (all seq_cst): one of us sees the other's store, so
	 * a deadline is never slept through.  0: it is awake and will look at
	 * the deadlines before it sleeps: no kick. */
	if (!d) {
		/* stays listed, run_timers skips it; waking for nothing is harmless */
		__atomic_store_n(&t->at, 0, __ATOMIC_RELAXED);
		return;
	}
	/* An unchanged deadline was seen by the progress thread already (or
	 * will be): it may sleep up to a millisecond past it (its timeouts
	 * are whole milliseconds), which must not bring a kick per update. */
	if (__atomic_exchange_n(&t->at, d, __ATOMIC_SEQ_CST) == d &&
	    __atomic_load_n(&t->listed, __ATOMIC_ACQUIRE))
		return;
	if (!__atomic_load_n(&t->listed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&node->lock);
		if (!t->listed) {
			sv_list_add_tail(&node->timers, &t->link);
			__atomic_store_n(&t->listed, true, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&node->lock);
	}
	timers_lower(node, d);
	sleep = __atomic_load_n(&node->sleep_until, __ATOMIC_SEQ_CST);
	if (sleep && d < sleep)
		sv_node_kick(node);
}

void sv_node_timer_forget(struct sv_node *node, struct sv_timer *t)
{
	__atomic_store_n(&t->at, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&node->lock);
	if (t->listed) {
		sv_list_del(&t->link);
		__atomic_store_n(&t->listed, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&node->lock);
}

/* Returns the epoll timeout in ms until the earliest deadline (-1: none);
 * runs the timers whose deadline has passed. */
static int run_timers(struct sv_node *node)
{
	void *due[64];
	uint64_t now = sv_now_ns(), next = __atomic_load_n(&node->timers_next, __ATOMIC_SEQ_CST);
	struct sv_list *pos, *tmp;
	int n = 0;

	if (next == SV_TIMERS_NONE)
		return -1;
	if (next && now < next)
		return (int)((next - now + 999999) / 1000000);
	__atomic_store_n(&node->timers_next, 0, __ATOMIC_SEQ_CST);
	next = 0;
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->timers) {
		struct sv_timer *t = sv_container_of(pos, struct sv_timer, link);
		uint64_t at = __atomic_load_n(&t->at, __ATOMIC_RELAXED);

		if (at && at <= now && n < 64)
			due[n++] = t->owner;
		else if (at && (!next || at < next))
			next = at;
	}
	pthread_mutex_unlock(&node->lock);
	/* the due ones are run next: their next deadlines lower it again */
	timers_publish(node, n ? now : next);

	for (int i = 0; i < n; i++)
		node->up->timer(due[i], now);
	if (n)
		return 0;
	if (!next)
		return -1;
	return (int)((next - now + 999999) / 1000000);
}

/* Before sleeping, ask every ring writer for a doorbell and serve the rings
 * that already hold data.  Writers skip the doorbell while an application
 * thread of ours is polling (by its stamp, which they look at by the clock
 * only now and then), so the sleep is bounded while rings exist:
 * SV_SHM_MAX_SLEEP_MS.  Once no application thread has polled for
 * SV_SHM_IDLE_MS, the stamp is cleared first (0: "asleep", writers ring
 * without looking further), and the bound, left for a doorbell lost to a
 * writer that read the stamp just before, is the longer
 * SV_SHM_IDLE_SLEEP_MS (docs/measurements.md, 'Ring sleep bound').  A
 * wake-up looks at the rings off the board and at those the board names;
 * at every ring only each SOFTVERBS_RING_LOOK_MS, in case a bit went missing
 * (docs/measurements.md, 'Progress thread: the board').  Idle for longer
 * still, it sleeps deep, SV_SHM_DEEP_SLEEP_MS (rings_quiet, below). */
#define SV_SHM_MAX_SLEEP_MS 5
#define SV_SHM_IDLE_MS 20
#define SV_SHM_IDLE_SLEEP_MS 50
#define SV_SHM_DEEP_SLEEP_MS 1000

/* A live stamp is refreshed at most this often.  Peers read it at every
 * write into one of our rings (ringchan.c, peer_polling), so each store
 * takes its line back from their cores, and theirs from ours: with one
 * every 16 polls, a stream's writer missed on it every few messages.
 * Readers judge it by SV_POLLER_ACTIVE_NS, ten times longer
 * (docs/measurements.md, 'Poll stamp: refreshed'). */
#define SV_POLL_STAMP_REFRESH_NS 20000

/* (node.h) */
void sv_node_poll_stamp(struct sv_node *node, uint64_t now)
{
	struct sv_seg *self = sv_seg_self();
	uint64_t cur;

	if (!self)
		return;
	cur = __atomic_load_n(&self->last_poll_ns, __ATOMIC_RELAXED);
	if (cur) {
		if (now - cur >= SV_POLL_STAMP_REFRESH_NS)
			__atomic_store_n(&self->last_poll_ns, now, __ATOMIC_RELAXED);
		return;
	}
	/* Dekker with deep_sleep_bound: our stamp before our look at its flag */
	__atomic_exchange_n(&self->last_poll_ns, now, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&node->deep_sleep, __ATOMIC_SEQ_CST))
		sv_node_kick(node);
}

/* Has no application thread polled for SV_SHM_IDLE_MS?  Then the stamp
 * says so (unless a poll stamped it meanwhile).  *was_asleep: it said so
 * already. */
static bool rings_idle(bool *was_asleep)
{
	struct sv_seg *self = sv_seg_self();
	uint64_t last = self ? __atomic_load_n(&self->last_poll_ns, __ATOMIC_RELAXED) : 0;

	*was_asleep = !last;
	if (!last)
		return true;
	if (sv_now_ns() - last < SV_SHM_IDLE_MS * 1000000ull)
		return false;
	return __atomic_compare_exchange_n(&self->last_poll_ns, &last, 0, false, __ATOMIC_SEQ_CST,
					   __ATOMIC_RELAXED);
}

/*
 * A wake-up that only its sleep's bound brought, while the stamp has been 0
 * since the last look (it was 0 then and is now, and no thread cleared it
 * in between, which it would have had to after a poll), looks at no ring:
 * every writer since saw the 0 and rang, and a doorbell would have been an
 * event.  The thread then sleeps deep (deep_sleep_bound): each wake-up
 * costs this VM far more than its look (docs/measurements.md, 'Idle: a
 * deep sleep, kicked by the first poll').  The look at every ring each
 * SOFTVERBS_RING_LOOK_MS stays.
 */
static bool rings_quiet(struct sv_node *node, bool idle, bool was_asleep, uint32_t clears,
			bool full)
{
	return idle && was_asleep && node->woke_by_bound && node->rings_looked_asleep &&
	       clears == node->rings_clears && !full;
}

/* Quiet: nothing can come without a doorbell until an application thread
 * polls again, and its first stamp kicks us (sv_node_poll_stamp).  Either
 * it sees the flag or we see its stamp. */
static int deep_sleep_bound(struct sv_node *node)
{
	struct sv_seg *self = sv_seg_self();

	__atomic_store_n(&node->deep_sleep, true, __ATOMIC_SEQ_CST);
	if (self && __atomic_load_n(&self->last_poll_ns, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&node->deep_sleep, false, __ATOMIC_RELAXED);
		return SV_SHM_MAX_SLEEP_MS;
	}
	return SV_SHM_DEEP_SLEEP_MS;
}

static int serve_rings(struct sv_node *node, int timeout)
{
	struct sv_conn *ready[64];
	bool was_asleep, idle = rings_idle(&was_asleep);       /* before the writers are asked */
	uint32_t clears = sv_seg_stamp_clears();              /* after the stamp */
	uint64_t now = sv_now_ns();
	uint32_t every = sv_ring_look_ms();
	struct sv_ring_look look = {
		.full = every && now - node->rings_full_ns >= every * 1000000ull
	};
	int n = 0, served = 0;
	bool quiet;

	if (look.full)
		node->rings_full_ns = now;
	quiet = rings_quiet(node, idle, was_asleep, clears, look.full);
	if (quiet) {
		look.any = node->rings_any;
	} else {
		n = sv_conn_shm_arm_all(node, ready, 64, &look);
		node->rings_any = look.any;
		node->rings_looked_asleep = idle;
		node->rings_clears = clears;
	}
	now = sv_now_ns();

	for (int i = 0; i < n; i++) {
		/* (a ring's end is ours to serve: pollers do not look for it) */
		if (!sv_conn_peer_left(ready[i]) && node->up->poller_active(ready[i], now)) {
			node->rings_left = true;
			sv_conn_board_remind(ready[i]);   /* in case no bit told the poller */
			continue;
		}
		node->up->chan_ready(ready[i], 0);
		served++;
	}
	if (served)
		return 0;
	/* Rings left to a poller: look again soon, in case it stops. */
	if (node->rings_left) {
		node->rings_left = false;
		if (timeout < 0 || timeout > 1)
			return 1;
	}
	if (look.any) {
		int bound = quiet ? deep_sleep_bound(node) :
			    idle ? SV_SHM_IDLE_SLEEP_MS : SV_SHM_MAX_SLEEP_MS;

		if (timeout < 0 || timeout > bound)
			return bound;
	}
	return timeout;
}

static void set_sleep(struct sv_node *node, int timeout_ms)
{
	__atomic_store_n(&node->sleep_until,
			 timeout_ms < 0 ? ~0ull : sv_now_ns() + (uint64_t)timeout_ms * 1000000,
			 __ATOMIC_SEQ_CST);
}

/* ---- spinning pollers (engine/drive.c) ---- */

void sv_node_busy_poll(struct sv_node *node, uint64_t ns)
{
	if (ns)
		node->busy_until = sv_now_ns() + ns;
}

void sv_node_spin_watch(struct sv_node *node)
{
	/* Pairs with spin_tick: it clears `ticking`, then counts spins. */
	if (!__atomic_load_n(&node->ticking, __ATOMIC_SEQ_CST))
		sv_node_kick(node);
}

/* While pollers spin, tick as often as the engine asks (it ends the spins
 * nobody polls any more, drive.c). */
static int spin_tick(struct sv_node *node, int timeout)
{
	uint64_t now = sv_now_ns();
	int t = node->up->spin_tick(node, now);

	if (t < 0) {
		/* clear `ticking`, then look again: a spin that began
		 * meanwhile either is seen here or sees the flag clear */
		__atomic_store_n(&node->ticking, false, __ATOMIC_SEQ_CST);
		t = node->up->spin_tick(node, now);
		if (t < 0)
			return timeout;
	}
	__atomic_store_n(&node->ticking, true, __ATOMIC_SEQ_CST);
	return timeout < 0 || timeout > t ? t : timeout;
}

static void *progress_main(void *arg)
{
	struct sv_node *node = arg;
	struct epoll_event evs[64];

	on_progress_thread = true;
	for (;;) {
		int timeout = sv_node_bounds_tick(node, run_timers(node)), again, n;

		timeout = spin_tick(node, serve_rings(node, timeout));
		timeout = sv_dgring_before_sleep(node, timeout);

		/* Say until when we sleep, then look at the deadlines once more:
		 * one published before that store is seen now, one published
		 * after it kicks us if it is earlier (sv_node_timer_set). */
		if (timeout && node->busy_until && sv_now_ns() < node->busy_until)
			timeout = 0;
		set_sleep(node, timeout);
		again = run_timers(node);
		if (again >= 0 && (timeout < 0 || again < timeout)) {
			timeout = again;
			set_sleep(node, timeout);
		}
		n = sv_epoll_wait(node->epfd, evs, 64, timeout);
		__atomic_store_n(&node->sleep_until, 0, __ATOMIC_SEQ_CST);   /* awake */
		node->woke_by_bound = n == 0 && timeout > 0;
		__atomic_store_n(&node->deep_sleep, false, __ATOMIC_RELAXED);

		for (int i = 0; i < n; i++) {
			struct sv_handler *h = evs[i].data.ptr;

			h->fn(h, evs[i].events);
		}
		run_cmds(node);
		sv_conn_reap(node);      /* what no application thread can hold */
		if (__atomic_load_n(&node->stop, __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

/* ---- port groups and QPNs ---- */

static void close_group(struct sv_node *node, struct sv_pgroup *g)
{
	if (g->listen_h.fd >= 0) {
		sv_node_unwatch(node, &g->listen_h);
		sv_close(g->listen_h.fd);
	}
	if (g->udp_h.fd >= 0) {
		sv_node_unwatch(node, &g->udp_h);
		sv_close(g->udp_h.fd);
	}
	if (g->unix_h.fd >= 0) {
		sv_node_unwatch(node, &g->unix_h);
		sv_close(g->unix_h.fd);
	}
	if (g->ud_h.fd >= 0) {
		sv_node_unwatch(node, &g->ud_h);
		sv_close(g->ud_h.fd);
	}
	if (g->mcast_fd >= 0)
		sv_close(g->mcast_fd);
	free(g);
}

static int bind_in(int fd, struct in_addr a, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = a };

	return bind(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* The group's UDP socket holds port P on the device address only: its
 * datagrams then leave from the address their frames claim (udp/dgram.c
 * checks that), and while it holds A:P nobody else binds A:P or *:P. */
static int open_udp(struct sv_node *node, uint16_t port)
{
	int fd = sv_socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), sz = 4 << 20;

	if (fd < 0)
		return -errno;
	if (bind_in(fd, node->addr, port)) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	return fd;
}

static bool watch_group(struct sv_node *node, struct sv_pgroup *g)
{
	g->listen_h.fn = sv_conn_on_accept;
	g->unix_h.fn = sv_conn_on_accept_unix;
	g->udp_h.fn = sv_dgram_on_ready;
	return !sv_node_watch(node, &g->listen_h, EPOLLIN) &&
	       !sv_node_watch(node, &g->unix_h, EPOLLIN) &&
	       !sv_node_watch(node, &g->ud_h, EPOLLIN) &&
	       !sv_node_watch(node, &g->udp_h, EPOLLIN);
}

/* Bind a TCP listener (every address), a UDP socket (the device address)
 * and the unix names of the same ephemeral port. */
static struct sv_pgroup *open_group(struct sv_node *node)
{
	for (int attempt = 0; attempt < 64; attempt++) {
		struct sv_pgroup *g = calloc(1, sizeof(*g));
		struct in_addr any = { htonl(INADDR_ANY) };
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		int one = 1;

		if (!g)
			return NULL;
		g->udp_h.fd = g->unix_h.fd = g->ud_h.fd = g->mcast_fd = -1;
		g->node = node;
		g->listen_h.fd = sv_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (g->listen_h.fd < 0 || bind_in(g->listen_h.fd, any, 0) ||
		    getsockname(g->listen_h.fd, (struct sockaddr *)&sa, &sl) ||
		    listen(g->listen_h.fd, 1024)) {
			close_group(node, g);
			return NULL;
		}
		setsockopt(g->listen_h.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		g->port = ntohs(sa.sin_port);
		g->udp_h.fd = open_udp(node, g->port);
		if (g->udp_h.fd == -EADDRNOTAVAIL) {
			char a[INET_ADDRSTRLEN];

			sv_err("device address %s is not an address of this host (SOFTVERBS_IP?)",
			       inet_ntop(AF_INET, &node->addr, a, sizeof(a)));
			close_group(node, g);
			return NULL;
		}
		g->unix_h.fd = sv_unix_listen(g->port);
		g->mcast_fd = sv_mcast_source(g->port);
		if (g->udp_h.fd >= 0 && g->unix_h.fd >= 0 && g->mcast_fd >= 0 &&
		    sv_dgring_listen(g) >= 0) {
			if (watch_group(node, g))
				return g;
			close_group(node, g);
			return NULL;
		}
		close_group(node, g);       /* UDP port or a unix name taken: try another */
	}
	return NULL;
}

#define SV_QP_RESERVED ((struct sv_qp *)(uintptr_t)1)

int sv_node_alloc_qpn(struct sv_node *node, uint32_t *qpn)
{
	struct sv_pgroup *g = NULL, **ng;
	int ret = 0;

	pthread_mutex_lock(&node->lock);
	for (uint32_t i = 0; i < node->ngroups; i++)
		if (node->groups[i]->used < SV_QP_PER_GROUP) {
			g = node->groups[i];
			break;
		}
	if (!g) {
		g = open_group(node);
		ng = g ? realloc(node->groups, (node->ngroups + 1) * sizeof(*ng)) : NULL;
		if (!ng) {
			if (g)
				close_group(node, g);
			ret = ENOMEM;
			goto out;
		}
		node->groups = ng;
		node->groups[node->ngroups++] = g;
	}
	for (uint32_t s = 0; s < SV_QP_PER_GROUP; s++)
		if (!g->slot[s]) {
			g->slot[s] = SV_QP_RESERVED;
			g->used++;
			*qpn = ((uint32_t)g->port << 8) | s;
			break;
		}
	sv_node_fd_budget(node);
out:
	pthread_mutex_unlock(&node->lock);
	return ret;
}

static struct sv_pgroup *find_group(struct sv_node *node, uint16_t port)
{
	for (uint32_t i = 0; i < node->ngroups; i++)
		if (node->groups[i]->port == port)
			return node->groups[i];
	return NULL;
}

void sv_node_publish_qp(struct sv_node *node, uint32_t qpn, struct sv_qp *qp)
{
	struct sv_pgroup *g;

	pthread_mutex_lock(&node->lock);
	g = find_group(node, qpn >> 8);
	if (g && g->slot[qpn & 0xff] == SV_QP_RESERVED)
		g->slot[qpn & 0xff] = qp;
	pthread_mutex_unlock(&node->lock);
}

struct sv_pgroup *sv_node_group_of(struct sv_node *node, uint32_t qpn)
{
	struct sv_pgroup *g;

	pthread_mutex_lock(&node->lock);
	g = find_group(node, qpn >> 8);
	pthread_mutex_unlock(&node->lock);
	return g;
}

void sv_node_free_qpn(struct sv_node *node, uint32_t qpn)
{
	struct sv_pgroup *g;

	pthread_mutex_lock(&node->lock);
	g = find_group(node, qpn >> 8);
	if (g && g->slot[qpn & 0xff]) {
		g->slot[qpn & 0xff] = NULL;
		g->used--;
	}
	pthread_mutex_unlock(&node->lock);
}

struct sv_qp *sv_node_lookup_qp(struct sv_node *node, uint32_t qpn)
{
	struct sv_pgroup *g;
	struct sv_qp *qp = NULL;

	pthread_mutex_lock(&node->lock);
	g = find_group(node, qpn >> 8);
	if (g)
		qp = g->slot[qpn & 0xff];
	pthread_mutex_unlock(&node->lock);
	return qp == SV_QP_RESERVED ? NULL : qp;
}

/* ---- lifetime ---- */

static struct sv_node *node_create(const struct sv_upcalls *up)
{
	struct sv_node *node;

	if (!sv_fault_env())
		return NULL;         /* a malformed SOFTVERBS_FAULT (said on stderr) */
	node = calloc(1, sizeof(*node));
	if (!node)
		return NULL;
	if (sv_fault_dgram_attach(node)) {
		free(node);
		return NULL;
	}
	node->up = up;
	pthread_mutex_init(&node->lock, NULL);
	pthread_cond_init(&node->cond, NULL);
	sv_list_init(&node->timers);
	node->timers_next = SV_TIMERS_NONE;
	sv_list_init(&node->pending);
	sv_list_init(&node->lingering);
	sv_list_init(&node->cmds);
	sv_list_init(&node->graveyard);
	sv_list_init(&node->shm_conns);
	sv_list_init(&node->shm_scan);
	sv_list_init(&node->shm_peers);
	node->life_r = node->life_w = -1;
	node_set_address(node);
	node->pending_max = sv_pending_max();
	node->udp_buf = malloc(SV_UDP_BUF);
	node->dgr = sv_dgrings_new();
	node->epfd = epoll_create1(EPOLL_CLOEXEC);
	node->wake_h.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	node->wake_h.fn = on_wake;
	if (!node->udp_buf || !node->dgr || node->epfd < 0 || node->wake_h.fd < 0 ||
	    sv_node_watch(node, &node->wake_h, EPOLLIN) || sv_shm_life_open(node) ||
	    pthread_create(&node->thread, NULL, progress_main, node)) {
		sv_shm_life_close(node);
		if (node->epfd >= 0)
			sv_close(node->epfd);
		if (node->wake_h.fd >= 0)
			sv_close(node->wake_h.fd);
		free(node->udp_buf);
		sv_dgrings_free(node);
		sv_fault_dgram_free(node);
		free(node);
		return NULL;
	}
	return node;
}

static void node_destroy(struct sv_node *node)
{
	struct sv_list *pos, *tmp;

	__atomic_store_n(&node->stop, true, __ATOMIC_RELEASE);
	if (!node->forked) {
		int old;

		sv_node_kick(node);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		pthread_join(node->thread, NULL);    /* cancellation off */
		pthread_setcancelstate(old, NULL);
	}
	sv_list_for_each_safe(pos, tmp, &node->pending)
		sv_conn_close(sv_container_of(pos, struct sv_conn, node_link));
	sv_node_linger_reap(node, 0, true);
	sv_conn_reap(node);
	sv_dgrings_free(node);
	for (uint32_t i = 0; i < node->ngroups; i++)
		close_group(node, node->groups[i]);
	free(node->groups);
	sv_shm_life_close(node);
	sv_close(node->wake_h.fd);
	sv_close(node->epfd);
	free(node->udp_buf);
	sv_fault_dgram_free(node);
	pthread_mutex_destroy(&node->lock);
	pthread_cond_destroy(&node->cond);
	free(node);
}

/*
 * fork(): the child has no progress thread, and the node's epoll instance,
 * sockets and rings are shared with the parent.  The child's node is cut
 * loose: it never touches the shared epoll set again (a child pointer in
 * the parent's set would crash the parent), and a device the child opens
 * gets a new node.  Using the parent's QPs in the child is undefined, as
 * with any RDMA device without ibv_fork_init(); it must not harm the parent.
 */
static void atfork_child(void)
{
	pthread_mutex_init(&node_global_lock, NULL);
	if (the_node) {
		the_node->forked = true;
		pthread_mutex_init(&the_node->lock, NULL);
		sv_shm_life_forget_after_fork(the_node);
		the_node->refcnt++;          /* never destroyed in the child */
		the_node = NULL;
	}
	sv_seg_forget_after_fork();
	sv_board_forget_after_fork();
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

struct sv_node *sv_node_get(const struct sv_upcalls *up)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct sv_node *node;

	pthread_once(&once, install_atfork);
	pthread_mutex_lock(&node_global_lock);
	if (!the_node)
		the_node = node_create(up);
	node = the_node;
	if (node)
		node->refcnt++;
	pthread_mutex_unlock(&node_global_lock);
	return node;
}

void sv_node_put(struct sv_node *node)
{
	pthread_mutex_lock(&node_global_lock);
	if (--node->refcnt == 0) {
		the_node = NULL;
		node_destroy(node);
	}
	pthread_mutex_unlock(&node_global_lock);
}
