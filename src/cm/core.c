// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: process-wide state and the progress thread.
 *
 * One thread per process (started on first use) waits in epoll on every CM
 * socket (listeners and per-connection TCP streams) plus a wake eventfd, and
 * runs id timers.  It handles everything under cm.lock and never blocks
 * except in epoll_wait, whose timeout is the nearest id deadline, so every
 * protocol step has a bounded time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "cm/cm.h"

struct cm_global cm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ids = SV_LIST_INIT(cm.ids),
	.next_serial = 1,
	.epfd = -1,
	.wakefd = -1,
};

#define WAKE_TOKEN UINT64_MAX
#define DEVICE_TOKEN (1ULL << 63)	/* | device index */

int cm_debug;

void cm_trace(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "softverbs-cm[%d]: ", (int)getpid());
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static pthread_once_t cm_once = PTHREAD_ONCE_INIT;

int cm_set_errno(int err)
{
	errno = err;
	return -1;
}

uint64_t cm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t env_ms(const char *name, uint32_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long x;

	if (!v || !*v)
		return def;
	x = strtoul(v, &end, 10);
	if (*end || x == 0 || x > 3600000)
		return def;
	return (uint32_t)x;
}

struct cm_id *cm_id_lookup(uint64_t serial)
{
	struct sv_list *pos, *tmp;

	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);

		if (p->serial == serial)
			return p;
	}
	return NULL;
}

void cm_sock_watch(struct cm_id *p, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = p->serial };

	if (p->sock < 0 || p->sock_events == events)
		return;
	if (!events)
		epoll_ctl(cm.epfd, EPOLL_CTL_DEL, p->sock, NULL);
	else if (!p->sock_events)
		epoll_ctl(cm.epfd, EPOLL_CTL_ADD, p->sock, &ev);
	else
		epoll_ctl(cm.epfd, EPOLL_CTL_MOD, p->sock, &ev);
	p->sock_events = events;
}

void cm_sock_close(struct cm_id *p)
{
	if (p->sock < 0)
		return;
	cm_sock_watch(p, 0);
	close(p->sock);
	p->sock = -1;
	p->rlen = 0;
}

void cm_device_watch(struct cm_device *dev)
{
	int idx = cm_device_index(dev), fd;
	struct epoll_event ev = { .events = EPOLLIN };

	if (!dev || dev->monitored || cm.epfd < 0)
		return;
	fd = cm_device_monitor_fd(idx);
	if (fd < 0)
		return;
	ev.data.u64 = DEVICE_TOKEN | (uint64_t)idx;
	if (!epoll_ctl(cm.epfd, EPOLL_CTL_ADD, fd, &ev))
		dev->monitored = true;
}

/* The device went away: every id bound to it gets DEVICE_REMOVAL. */
static void device_event(int idx)
{
	struct sv_list *pos, *tmp;

	if (!cm_device_monitor_fatal(idx))
		return;
	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);

		if (p->dev && cm_device_index(p->dev) == idx &&
		    p->state != CM_REQ_WAIT && p->state != CM_DESTROYING)
			cm_event_post(p, RDMA_CM_EVENT_DEVICE_REMOVAL, 0);
	}
}

static void wake_progress(void)
{
	uint64_t one = 1;
	ssize_t r;

	if (cm.wakefd >= 0) {
		r = write(cm.wakefd, &one, sizeof(one));
		(void)r;
	}
}

void cm_timer_set(struct cm_id *p, enum cm_timer t, uint32_t ms)
{
	p->timer = t;
	p->deadline_ms = cm_now_ms() + ms;
	wake_progress();
}

void cm_timer_clear(struct cm_id *p)
{
	p->timer = CM_TIMER_NONE;
}

static int next_timeout_locked(void)
{
	struct sv_list *pos, *tmp;
	uint64_t now = cm_now_ms(), best = UINT64_MAX;

	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);

		if (p->timer != CM_TIMER_NONE && p->deadline_ms < best)
			best = p->deadline_ms;
	}
	if (best == UINT64_MAX)
		return -1;
	if (best <= now)
		return 0;
	return best - now > 60000 ? 60000 : (int)(best - now);
}

static void run_timers_locked(void)
{
	struct sv_list *pos, *tmp;
	uint64_t now = cm_now_ms();
	bool again = true;

	/* A timer handler may free ids (internal ones), so restart the scan
	 * after every fired timer. */
	while (again) {
		again = false;
		sv_list_for_each_safe(pos, tmp, &cm.ids) {
			struct cm_id *p = sv_container_of(pos, struct cm_id, node);

			if (p->timer == CM_TIMER_NONE || p->deadline_ms > now)
				continue;
			cm_timer_fired(p);
			again = true;
			break;
		}
	}
}

static void *progress_main(void *arg)
{
	struct epoll_event evs[32];
	int n, i, timeout;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&cm.lock);
		timeout = next_timeout_locked();
		pthread_mutex_unlock(&cm.lock);

		n = epoll_wait(cm.epfd, evs, 32, timeout);
		if (n < 0 && errno != EINTR)
			n = 0;

		pthread_mutex_lock(&cm.lock);
		for (i = 0; i < n; i++) {
			struct cm_id *p;

			if (evs[i].data.u64 != WAKE_TOKEN &&
			    (evs[i].data.u64 & DEVICE_TOKEN)) {
				device_event((int)(evs[i].data.u64 & ~DEVICE_TOKEN));
				continue;
			}
			if (evs[i].data.u64 == WAKE_TOKEN) {
				uint64_t v;
				ssize_t r = read(cm.wakefd, &v, sizeof(v));
				(void)r;
				continue;
			}
			/* The id may have been destroyed since epoll_wait. */
			p = cm_id_lookup(evs[i].data.u64);
			if (p && p->sock >= 0 && p->sock_events)
				cm_sock_event(p, evs[i].events);
		}
		run_timers_locked();
		pthread_mutex_unlock(&cm.lock);
	}
	return NULL;
}

static int open_poll_fds(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_TOKEN };

	cm.epfd = epoll_create1(EPOLL_CLOEXEC);
	cm.wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cm.epfd < 0 || cm.wakefd < 0)
		return -1;
	return epoll_ctl(cm.epfd, EPOLL_CTL_ADD, cm.wakefd, &ev);
}

static void start_thread_locked(void)
{
	pthread_attr_t attr;
	pthread_t tid;
	sigset_t all, old;

	if (cm.thread_running)
		return;
	if (cm.epfd < 0 && open_poll_fds())
		return;
	/* The progress thread takes no signals: alarm() in a test, SIGINT in
	 * a tool ... must reach the application's own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&tid, &attr, progress_main, NULL))
		cm.thread_running = true;
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* fork(): keep the lock consistent.  In the child the progress thread does
 * not exist and the epoll instance would be shared with the parent, so the
 * child gets fresh ones.  Sockets of ids inherited from the parent stay the
 * parent's: the child closes its copies (a listener must not accept the
 * parent's connections), and the device table is looked up again so the
 * child opens its own contexts. */
static void atfork_prepare(void) { pthread_mutex_lock(&cm.lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&cm.lock); }
static void atfork_child(void)
{
	struct sv_list *pos, *tmp;

	if (cm.epfd >= 0)
		close(cm.epfd);
	if (cm.wakefd >= 0)
		close(cm.wakefd);
	cm.epfd = cm.wakefd = -1;
	cm.thread_running = false;
	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);

		if (p->sock >= 0)
			close(p->sock);
		p->sock = -1;
		p->sock_events = 0;
		p->timer = CM_TIMER_NONE;
	}
	cm_devices_forget();
	pthread_mutex_unlock(&cm.lock);
}

static void cm_init_once(void)
{
	cm.resp_timeout_ms = env_ms("SOFTVERBS_CM_TIMEOUT_MS", 5000);
	cm.service_timeout_ms = env_ms("SOFTVERBS_CM_SERVICE_TIMEOUT_MS", 60000);
	cm.timewait_ms = env_ms("SOFTVERBS_CM_TIMEWAIT_MS", 500);
	cm_debug = getenv("SOFTVERBS_CM_DEBUG") != NULL;
	/* as util/env.c reads it for the device: a level, 0 or unset is off */
	cm_explain_on = getenv("SOFTVERBS_DEBUG") && atoi(getenv("SOFTVERBS_DEBUG")) > 0;
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void cm_lock(void)
{
	pthread_once(&cm_once, cm_init_once);
	pthread_mutex_lock(&cm.lock);
	start_thread_locked();
}

void cm_unlock(void)
{
	pthread_mutex_unlock(&cm.lock);
}
