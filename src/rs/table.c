// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: the numbers.  An rsocket's number is its epoll fd, so
 * it never collides with another descriptor of the process and rpoll can
 * tell rsockets from ordinary descriptors by looking the number up here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "rs/rs.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsock **table;
static int table_len;

static const char *const state_names[RS_STATE_COUNT] = {
	[RS_IDLE] = "idle",
	[RS_LISTENING] = "listening",
	[RS_RESOLVING_ADDR] = "resolving-addr",
	[RS_RESOLVING_ROUTE] = "resolving-route",
	[RS_CONNECTING] = "connecting",
	[RS_CONNECTED] = "connected",
	[RS_DISCONNECTED] = "disconnected",
	[RS_ERROR] = "error",
};

const char *rs_state_name(enum rs_state s)
{
	return (unsigned)s < RS_STATE_COUNT ? state_names[s] : "?";
}

static int table_put(int fd, struct rsock *rs)
{
	if (fd >= table_len) {
		int n = table_len ? table_len : 64;
		struct rsock **t;

		while (n <= fd)
			n *= 2;
		t = realloc(table, (size_t)n * sizeof(*t));
		if (!t)
			return -1;
		memset(t + table_len, 0, (size_t)(n - table_len) * sizeof(*t));
		table = t;
		table_len = n;
	}
	table[fd] = rs;
	return 0;
}

struct rsock *rs_get(int s)
{
	struct rsock *rs = NULL;

	pthread_mutex_lock(&table_lock);
	if (s >= 0 && s < table_len)
		rs = table[s];
	if (rs)
		rs->refs++;
	pthread_mutex_unlock(&table_lock);
	if (!rs)
		errno = EBADF;
	return rs;
}

void rs_hold(struct rsock *rs)
{
	pthread_mutex_lock(&table_lock);
	rs->refs++;
	pthread_mutex_unlock(&table_lock);
}

/* The last reference: nobody else can reach the rsocket any more. */
static void destroy(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM)
		rs_dgram_free(rs);
	else
		rs_conn_free(rs);
	pthread_mutex_destroy(&rs->lock);
	close(rs->evfd);
	close(rs->fd);
	free(rs);
}

void rs_put(struct rsock *rs)
{
	int e = errno;
	bool last;

	pthread_mutex_lock(&table_lock);
	last = --rs->refs == 0;
	pthread_mutex_unlock(&table_lock);
	if (last)
		destroy(rs);
	errno = e;
}

struct rsock *rs_enter(int s)
{
	struct rsock *rs = rs_get(s);

	if (!rs)
		return NULL;
	pthread_mutex_lock(&rs->lock);
	if (rs->closed) {
		rs_leave(rs);
		errno = EBADF;
		return NULL;
	}
	return rs;
}

void rs_leave(struct rsock *rs)
{
	pthread_mutex_unlock(&rs->lock);
	rs_put(rs);
}

void rs_unregister(struct rsock *rs)
{
	bool numbered;

	pthread_mutex_lock(&table_lock);
	numbered = table[rs->fd] == rs;
	if (numbered)
		table[rs->fd] = NULL;
	pthread_mutex_unlock(&table_lock);
	if (numbered)
		rs_put(rs);
}

int rs_epoll_add(struct rsock *rs, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(rs->fd, EPOLL_CTL_ADD, fd, &ev);
}

int rs_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

struct rsock *rs_alloc(int type, int domain)
{
	struct rsock *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->domain = domain;
	rs->fd = epoll_create1(EPOLL_CLOEXEC);
	rs->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (rs->fd < 0 || rs->evfd < 0 || rs_epoll_add(rs, rs->evfd))
		goto fail;
	pthread_mutex_init(&rs->lock, NULL);
	rs->refs = 1;		/* the number's */
	rs_defaults(rs);
	pthread_mutex_lock(&table_lock);
	if (table_put(rs->fd, rs)) {
		pthread_mutex_unlock(&table_lock);
		pthread_mutex_destroy(&rs->lock);
		errno = ENOMEM;
		goto fail;
	}
	pthread_mutex_unlock(&table_lock);
	return rs;
fail:
	if (rs->evfd >= 0)
		close(rs->evfd);
	if (rs->fd >= 0)
		close(rs->fd);
	free(rs);
	return NULL;
}

RS_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsock *rs;

	if ((domain != AF_INET && domain != AF_INET6 && domain != AF_IB) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) ||
	    (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return rs_errno(ENOTSUP);
	if (type == SOCK_DGRAM && domain == AF_IB)
		return rs_errno(ENOTSUP);
	rs = rs_alloc(type, domain);
	if (!rs)
		return -1;
	if (type == SOCK_DGRAM) {
		if (rs_dgram_init(rs))
			goto fail;
		return rs->fd;
	}
	rs->cm_ch = rdma_create_event_channel();
	if (!rs->cm_ch)
		goto fail;
	if (rs_nonblock(rs->cm_ch->fd) || rs_epoll_add(rs, rs->cm_ch->fd) ||
	    rdma_create_id(rs->cm_ch, &rs->id, rs, RDMA_PS_TCP))
		goto fail;
	return rs->fd;
fail:
	rs_unregister(rs);
	return -1;
}

RS_EXPORT int rclose(int s)
{
	struct rsock *rs = rs_enter(s);

	if (!rs)
		return -1;
	rs->closed = true;
	rs_unregister(rs);
	rs_wake(rs);
	/* as close(2): a nonblocking socket without SO_LINGER lingers behind us */
	if (rs->type == SOCK_STREAM && rs->state == RS_CONNECTED && rs->nonblock &&
	    !rs->linger.l_onoff && rs_close_later(rs)) {
		rs_leave(rs);
		return 0;
	}
	if (rs->type == SOCK_STREAM)
		rs_conn_close(rs);
	rs_leave(rs);
	return 0;
}

/*
 * rdma-core 44's librspreload.so (Debian 12's) looks up the functions it
 * wraps in socket(), read(), write(), poll(), close() and a few more, but
 * not in recv(), send() or setsockopt(): a program whose first such call
 * is recv() (socat is one) jumps to NULL.  We are loaded before the
 * program runs, so one close() of nothing lets the preload library
 * initialize itself; without it, the call costs one failed system call.
 */
__attribute__((constructor)) static void rs_let_preload_init(void)
{
	int e = errno;

	close(-1);
	errno = e;
}
