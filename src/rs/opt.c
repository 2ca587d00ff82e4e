// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: options, flags and names.  Defaults come from the
 * administrator's files under /etc/rdma/rsocket (rsocket(7)), read once.
 * Buffer and queue sizes take effect when the connection is set up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <infiniband/ib.h>

#include "rs/rs.h"

static struct {
	int mem, wmem, sqsize, rqsize, inline_size, iomap, polling_us;
} defaults = {
	.mem = 256 << 10, .wmem = 256 << 10, .sqsize = 128, .rqsize = 128,
	.inline_size = 64, .iomap = 0, .polling_us = 10,
};
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

static void read_default(const char *name, int *value)
{
	char path[128];
	FILE *f;
	int v;

	snprintf(path, sizeof(path), "/etc/rdma/rsocket/%s", name);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fscanf(f, "%d", &v) == 1 && v >= 0)
		*value = v;
	fclose(f);
}

static void load_defaults(void)
{
	read_default("mem_default", &defaults.mem);
	read_default("wmem_default", &defaults.wmem);
	read_default("sqsize_default", &defaults.sqsize);
	read_default("rqsize_default", &defaults.rqsize);
	read_default("inline_default", &defaults.inline_size);
	read_default("iomap_size", &defaults.iomap);
	read_default("polling_time", &defaults.polling_us);
}

void rs_defaults(struct rsock *rs)
{
	pthread_once(&defaults_once, load_defaults);
	rs->rcvbuf = defaults.mem;
	rs->sndbuf = defaults.wmem;
	rs->sqsize = defaults.sqsize;
	rs->rqsize = defaults.rqsize;
	rs->inline_size = defaults.inline_size;
	rs->iomap_size = defaults.iomap;
}

int rs_polling_us(void)
{
	pthread_once(&defaults_once, load_defaults);
	return defaults.polling_us;
}

static int int_arg(const void *val, socklen_t len, int *out)
{
	if (!val || len < sizeof(int))
		return rs_errno(EINVAL);
	memcpy(out, val, sizeof(int));
	return 0;
}

/* Sizes and counts a peer can see: only before the connection exists. */
static int set_size(struct rsock *rs, int *field, int v, int min)
{
	if (rs->state != RS_IDLE && rs->state != RS_LISTENING)
		return 0;	/* as a socket: accepted, applies to nothing */
	*field = v < min ? min : v;
	return 0;
}

static int id_option(struct rsock *rs, int level, int name, int v)
{
	if (!rs->id)
		return 0;
	if (rdma_set_option(rs->id, level, name, &v, sizeof(v)) && errno != ENOSYS &&
	    errno != EOPNOTSUPP)
		return -1;
	return 0;
}

static int socket_opt(struct rsock *rs, int name, int v, const void *val, socklen_t len)
{
	switch (name) {
	case SO_REUSEADDR:
		rs->reuseaddr = !!v;
		return id_option(rs, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, !!v);
	case SO_RCVBUF:
		return set_size(rs, &rs->rcvbuf, v, 4096);
	case SO_SNDBUF:
		return set_size(rs, &rs->sndbuf, v, 4096);
	case SO_KEEPALIVE:
		rs->keepalive = !!v;
		return 0;
	case SO_OOBINLINE:
		rs->oobinline = !!v;
		return 0;
	case SO_LINGER:
		if (!val || len < sizeof(struct linger))
			return rs_errno(EINVAL);
		memcpy(&rs->linger, val, sizeof(rs->linger));
		return 0;
	}
	return rs_errno(ENOTSUP);
}

static int rdma_opt(struct rsock *rs, int name, int v, const void *val, socklen_t len)
{
	switch (name) {
	case RDMA_SQSIZE:
		return set_size(rs, &rs->sqsize, v, 4);
	case RDMA_RQSIZE:
		return set_size(rs, &rs->rqsize, v, 4);
	case RDMA_INLINE:
		return set_size(rs, &rs->inline_size, v, 0);
	case RDMA_IOMAPSIZE:
		return set_size(rs, &rs->iomap_size, v, 0);
	case RDMA_ROUTE:
		/* Our CM finds its own route; a path record changes nothing. */
		(void)val;
		(void)len;
		return 0;
	}
	return rs_errno(ENOTSUP);
}

RS_EXPORT int rsetsockopt(int s, int level, int name, const void *val, socklen_t len)
{
	struct rsock *rs = rs_enter(s);
	int v = 0, ret;

	if (!rs)
		return -1;
	if (!(level == SOL_SOCKET && name == SO_LINGER) &&
	    !(level == SOL_RDMA && name == RDMA_ROUTE) && int_arg(val, len, &v)) {
		rs_leave(rs);
		return -1;
	}
	switch (level) {
	case SOL_SOCKET:
		ret = socket_opt(rs, name, v, val, len);
		break;
	case IPPROTO_TCP:
		if (name == TCP_NODELAY) {
			rs->nodelay = !!v;
			ret = 0;
		} else if (name == TCP_KEEPIDLE) {
			rs->keepidle = v;
			ret = 0;
		} else if (name == TCP_MAXSEG) {
			ret = 0;
		} else {
			ret = rs_errno(ENOTSUP);
		}
		break;
	case IPPROTO_IPV6:
		ret = name == IPV6_V6ONLY ?
			id_option(rs, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, !!v) :
			rs_errno(ENOTSUP);
		break;
	case SOL_RDMA:
		ret = rdma_opt(rs, name, v, val, len);
		break;
	default:
		ret = rs_errno(ENOTSUP);
	}
	rs_leave(rs);
	return ret;
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < sizeof(int))
		return rs_errno(EINVAL);
	memcpy(val, &v, sizeof(int));
	*len = sizeof(int);
	return 0;
}

static int get_socket_opt(struct rsock *rs, int name, void *val, socklen_t *len)
{
	int v;

	switch (name) {
	case SO_ERROR:
		v = rs->err;
		rs->err = 0;
		return put_int(val, len, v);
	case SO_TYPE:
		return put_int(val, len, rs->type);
	case SO_REUSEADDR:
		return put_int(val, len, rs->reuseaddr);
	case SO_RCVBUF:
		return put_int(val, len, rs->rcvbuf);
	case SO_SNDBUF:
		return put_int(val, len, rs->sndbuf);
	case SO_KEEPALIVE:
		return put_int(val, len, rs->keepalive);
	case SO_OOBINLINE:
		return put_int(val, len, rs->oobinline);
	case SO_LINGER:
		if (!val || !len || *len < sizeof(struct linger))
			return rs_errno(EINVAL);
		memcpy(val, &rs->linger, sizeof(rs->linger));
		*len = sizeof(struct linger);
		return 0;
	}
	return rs_errno(ENOTSUP);
}

RS_EXPORT int rgetsockopt(int s, int level, int name, void *val, socklen_t *len)
{
	struct rsock *rs = rs_enter(s);
	int ret;

	if (!rs)
		return -1;
	switch (level) {
	case SOL_SOCKET:
		ret = get_socket_opt(rs, name, val, len);
		break;
	case IPPROTO_TCP:
		if (name == TCP_NODELAY)
			ret = put_int(val, len, rs->nodelay);
		else if (name == TCP_KEEPIDLE)
			ret = put_int(val, len, rs->keepidle);
		else if (name == TCP_MAXSEG)
			ret = put_int(val, len, rs->sslot_size ? (int)rs->sslot_size : 2048);
		else
			ret = rs_errno(ENOTSUP);
		break;
	case SOL_RDMA:
		if (name == RDMA_SQSIZE)
			ret = put_int(val, len, rs->sqsize);
		else if (name == RDMA_RQSIZE)
			ret = put_int(val, len, rs->rqsize);
		else if (name == RDMA_INLINE)
			ret = put_int(val, len, rs->inline_size);
		else if (name == RDMA_IOMAPSIZE)
			ret = put_int(val, len, rs->iomap_size);
		else
			ret = rs_errno(ENOTSUP);
		break;
	default:
		ret = rs_errno(ENOTSUP);
	}
	rs_leave(rs);
	return ret;
}

RS_EXPORT int rfcntl(int s, int cmd, ...)
{
	struct rsock *rs = rs_enter(s);
	va_list ap;
	long arg;
	int ret;

	if (!rs)
		return -1;
	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	switch (cmd) {
	case F_GETFL:
		ret = O_RDWR | (rs->nonblock ? O_NONBLOCK : 0);
		break;
	case F_SETFL:
		rs->nonblock = !!(arg & O_NONBLOCK);
		ret = 0;
		break;
	case F_GETFD:
	case F_SETFD:
		ret = fcntl(rs->fd, cmd, (int)arg);
		break;
	default:
		ret = rs_errno(ENOTSUP);
	}
	rs_leave(rs);
	return ret;
}

int rs_copy_addr(const struct sockaddr *sa, struct sockaddr *addr, socklen_t *len)
{
	socklen_t n;

	if (!addr || !len)
		return rs_errno(EFAULT);
	n = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sa->sa_family == AF_IB ? sizeof(struct sockaddr_ib) :
				     sizeof(struct sockaddr_in);
	memcpy(addr, sa, *len < n ? *len : n);
	*len = n;
	return 0;
}

static int name_of(int s, struct sockaddr *addr, socklen_t *len, bool peer)
{
	struct rsock *rs = rs_enter(s);
	int ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		ret = rs_dgram_name(rs, addr, len, peer);
	else if (peer && rs->state != RS_CONNECTED && rs->state != RS_DISCONNECTED)
		ret = rs_errno(ENOTCONN);
	else
		ret = rs_copy_addr(peer ? rdma_get_peer_addr(rs->id) : rdma_get_local_addr(rs->id),
				addr, len);
	rs_leave(rs);
	return ret;
}

RS_EXPORT int rgetpeername(int s, struct sockaddr *addr, socklen_t *len)
{
	return name_of(s, addr, len, true);
}

RS_EXPORT int rgetsockname(int s, struct sockaddr *addr, socklen_t *len)
{
	return name_of(s, addr, len, false);
}
