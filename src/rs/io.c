// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: the read and write calls.  Every one of them becomes
 * an iovec and goes to the stream or the datagram path.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "rs/rs.h"

/* The rsocket s, locked, for a call with an iovec. */
static struct rsock *lock_with_iov(int s, const struct iovec *iov, int iovcnt)
{
	struct rsock *rs = rs_enter(s);

	if (!rs)
		return NULL;
	if (iovcnt < 0 || (iovcnt && !iov)) {
		rs_leave(rs);
		errno = EINVAL;
		return NULL;
	}
	return rs;
}

static ssize_t do_recv(int s, const struct iovec *iov, int iovcnt, int flags,
		       struct sockaddr *from, socklen_t *fromlen)
{
	struct rsock *rs = lock_with_iov(s, iov, iovcnt);
	ssize_t ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM) {
		ret = rs_dgram_recv(rs, iov, iovcnt, flags, from, fromlen);
	} else {
		ret = rs_stream_recv(rs, iov, iovcnt, flags);
		if (ret >= 0 && from && fromlen)
			rs_copy_addr(rdma_get_peer_addr(rs->id), from, fromlen);
	}
	rs_leave(rs);
	return ret;
}

static ssize_t do_send(int s, const struct iovec *iov, int iovcnt, int flags,
		       const struct sockaddr *to, socklen_t tolen)
{
	struct rsock *rs = lock_with_iov(s, iov, iovcnt);
	ssize_t ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		ret = rs_dgram_send(rs, iov, iovcnt, flags, to, tolen);
	else
		ret = rs_stream_send(rs, iov, iovcnt, flags);	/* as TCP: `to` ignored */
	rs_leave(rs);
	return ret;
}

RS_EXPORT ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return do_recv(s, &iov, 1, flags, NULL, NULL);
}

RS_EXPORT ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *from,
			    socklen_t *fromlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return do_recv(s, &iov, 1, flags, from, fromlen);
}

RS_EXPORT ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	if (!msg)
		return rs_errno(EINVAL);
	msg->msg_flags = 0;
	msg->msg_controllen = 0;
	return do_recv(s, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
		       msg->msg_name ? &msg->msg_namelen : NULL);
}

RS_EXPORT ssize_t rread(int s, void *buf, size_t len)
{
	return rrecv(s, buf, len, 0);
}

RS_EXPORT ssize_t rreadv(int s, const struct iovec *iov, int iovcnt)
{
	return do_recv(s, iov, iovcnt, 0, NULL, NULL);
}

RS_EXPORT ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return do_send(s, &iov, 1, flags, NULL, 0);
}

RS_EXPORT ssize_t rsendto(int s, const void *buf, size_t len, int flags,
			  const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return do_send(s, &iov, 1, flags, to, tolen);
}

RS_EXPORT ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	if (!msg)
		return rs_errno(EINVAL);
	return do_send(s, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
		       msg->msg_namelen);
}

RS_EXPORT ssize_t rwrite(int s, const void *buf, size_t len)
{
	return rsend(s, buf, len, 0);
}

RS_EXPORT ssize_t rwritev(int s, const struct iovec *iov, int iovcnt)
{
	return do_send(s, iov, iovcnt, 0, NULL, 0);
}
