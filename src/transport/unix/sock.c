#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/sys.h"
#include "transport/unix/sock.h"

socklen_t sv_unix_name(struct sockaddr_un *sa, const char *prefix, uint32_t port)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%s%u", prefix, port);
	return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

int sv_unix_listen_on(const char *prefix, uint16_t port, int type)
{
	struct sockaddr_un sa;
	socklen_t len = sv_unix_name(&sa, prefix, port);
	int fd = sv_socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 1024)) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	return fd;
}

int sv_unix_connect_to(const char *prefix, uint16_t port, int type)
{
	struct sockaddr_un sa;
	socklen_t len = sv_unix_name(&sa, prefix, port);
	int fd = sv_socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (sv_connect(fd, (struct sockaddr *)&sa, len) && errno != EINPROGRESS && errno != EAGAIN) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	return fd;
}

int sv_unix_listen(uint16_t port)
{
	return sv_unix_listen_on("softverbs.", port, SOCK_STREAM);
}

int sv_unix_connect(uint16_t port)
{
	return sv_unix_connect_to("softverbs.", port, SOCK_STREAM);
}

ssize_t sv_unix_send(int fd, const struct iovec *iov, int n, const int *fds, int nfds)
{
	union { char buf[CMSG_SPACE(SV_UNIX_MAX_FDS * sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r;

	if (nfds > SV_UNIX_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	r = sv_sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	return r < 0 ? -errno : r;
}

ssize_t sv_unix_recv(int fd, const struct iovec *iov, int n, int *fds, int *nfds, int max)
{
	union { char buf[CMSG_SPACE(SV_UNIX_MAX_FDS * sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	ssize_t r = sv_recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (r < 0)
		return -errno;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int k, *p;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		p = (int *)CMSG_DATA(cm);
		for (int i = 0; i < k; i++) {
			if (*nfds < max)
				fds[(*nfds)++] = p[i];
			else
				sv_close(p[i]);     /* more than any frame carries */
		}
	}
	return r;
}

int sv_unix_peer(int fd, pid_t *pid, uid_t *uid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len))
		return -errno;
	*pid = cr.pid;
	*uid = cr.uid;
	return 0;
}
