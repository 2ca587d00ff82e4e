/* SPDX-License-Identifier: MIT */
/*
 * System calls our libraries make for their own use, past any interposer
 * and never as cancellation points.
 *
 * rdma-core's librspreload.so replaces socket() in the whole process so
 * that an application's TCP and UDP sockets become rsockets.  Ours carry
 * the rsockets themselves (the CM's TCP connections, the transports'
 * sockets): one that became an rsocket would recurse into itself.
 *
 * libc's read, write, recv, send, epoll_wait, close and the like are
 * cancellation points.  A verb makes them with QP locks and guards held
 * (a poll reads a socket, a post rings a doorbell), and a thread cancelled
 * there would leave them held for ever; on a real device posting and
 * polling are stores and loads, never cancellation points.  So the
 * libraries make these calls here: raw system calls, which also spare the
 * two atomic operations libc wraps each in.  Under the sanitizers, which
 * follow file descriptors through libc's calls (TSan orders a write
 * before the read that sees it), they are libc's with cancellation
 * disabled around them.  The waits meant to be cancellation points
 * (ibv_get_cq_event, ibv_get_async_event) call libc themselves, marked
 * "cancellation point" for tools/nocancel.sh.
 */
#ifndef SV_UTIL_SYS_H
#define SV_UTIL_SYS_H

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "util/tsan.h"

static inline int sv_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

#if defined(SV_TSAN) || defined(__SANITIZE_ADDRESS__)
#define SV_SYS_LIBC 1
#endif

#ifdef SV_SYS_LIBC
/* libc's call `expr` with cancellation disabled: the value of `expr`. */
#define SV_NOCANCEL(type, expr) ({                                      \
		int sv_old_;                                            \
		type sv_r_;                                             \
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &sv_old_); \
		sv_r_ = (expr);                                         \
		pthread_setcancelstate(sv_old_, NULL);                  \
		sv_r_; })
#define SV_SYS(type, libc_call, nr, ...) SV_NOCANCEL(type, libc_call)
#else
#define SV_SYS(type, libc_call, nr, ...) ((type)syscall(nr, __VA_ARGS__))
#endif

static inline ssize_t sv_read(int fd, void *buf, size_t n)
{
	return SV_SYS(ssize_t, read(fd, buf, n), SYS_read, fd, buf, n);
}

static inline ssize_t sv_write(int fd, const void *buf, size_t n)
{
	return SV_SYS(ssize_t, write(fd, buf, n), SYS_write, fd, buf, n);
}

static inline ssize_t sv_recv(int fd, void *buf, size_t n, int flags)
{
	return SV_SYS(ssize_t, recv(fd, buf, n, flags), SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
}

static inline ssize_t sv_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *sa,
				  socklen_t *salen)
{
	return SV_SYS(ssize_t, recvfrom(fd, buf, n, flags, sa, salen), SYS_recvfrom, fd, buf, n,
		      flags, sa, salen);
}

static inline ssize_t sv_send(int fd, const void *buf, size_t n, int flags)
{
	return SV_SYS(ssize_t, send(fd, buf, n, flags), SYS_sendto, fd, buf, n, flags, NULL, 0);
}

static inline ssize_t sv_sendmsg(int fd, const struct msghdr *mh, int flags)
{
	return SV_SYS(ssize_t, sendmsg(fd, mh, flags), SYS_sendmsg, fd, mh, flags);
}

static inline ssize_t sv_recvmsg(int fd, struct msghdr *mh, int flags)
{
	return SV_SYS(ssize_t, recvmsg(fd, mh, flags), SYS_recvmsg, fd, mh, flags);
}

/* (epoll_pwait with no mask: the one every architecture has) */
static inline int sv_epoll_wait(int epfd, struct epoll_event *evs, int n, int timeout_ms)
{
	return SV_SYS(int, epoll_wait(epfd, evs, n, timeout_ms), SYS_epoll_pwait, epfd, evs, n,
		      timeout_ms, NULL, _NSIG / 8);
}

/* poll(2) that does not wait: which of `p` are ready now. */
static inline int sv_poll_now(struct pollfd *p, nfds_t n)
{
	struct timespec zero = { 0, 0 };

	(void)zero;              /* (libc's poll takes no time) */
	return SV_SYS(int, poll(p, n, 0), SYS_ppoll, p, n, &zero, NULL, _NSIG / 8);
}

static inline ssize_t sv_pread(int fd, void *buf, size_t n, off_t off)
{
	return SV_SYS(ssize_t, pread(fd, buf, n, off), SYS_pread64, fd, buf, n, off);
}

static inline int sv_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	return SV_SYS(int, openat(dirfd, path, flags, mode), SYS_openat, dirfd, path, flags, mode);
}

static inline int sv_open(const char *path, int flags)
{
	return sv_openat(AT_FDCWD, path, flags, 0);
}

static inline int sv_close(int fd)
{
	return SV_SYS(int, close(fd), SYS_close, fd);
}

static inline int sv_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	return SV_SYS(int, connect(fd, sa, len), SYS_connect, fd, sa, len);
}

#ifdef _GNU_SOURCE
static inline int sv_accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	return SV_SYS(int, accept4(fd, sa, len, flags), SYS_accept4, fd, sa, len, flags);
}
#endif

static inline int sv_nanosleep(const struct timespec *t)
{
	return SV_SYS(int, nanosleep(t, NULL), SYS_nanosleep, t, NULL);
}

#endif
