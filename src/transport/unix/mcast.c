#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/sys.h"
#include "transport/unix/mcast.h"
#include "transport/unix/sock.h"

#define SV_MC_PREFIX "softverbs.mc."
#define SV_MC_SOURCE "softverbs.mcsrc."

static int group_prefix(char *buf, size_t len, const union ibv_gid *mgid)
{
	int n = snprintf(buf, len, SV_MC_PREFIX);

	for (int i = 0; i < 16; i++)
		n += snprintf(buf + n, len - n, "%02x", mgid->raw[i]);
	n += snprintf(buf + n, len - n, ".");
	return n;
}

int sv_mcast_bind(const union ibv_gid *mgid, uint32_t qpn)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = group_prefix(sa.sun_path + 1, sizeof(sa.sun_path) - 1, mgid);
	int fd, sz = 4 << 20;

	n += snprintf(sa.sun_path + 1 + n, sizeof(sa.sun_path) - 1 - n, "%u", qpn);
	fd = sv_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + n)) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	return fd;
}

static socklen_t source_name(struct sockaddr_un *sa, uint32_t port)
{
	return sv_unix_name(sa, SV_MC_SOURCE, port);
}

int sv_mcast_source(uint16_t port)
{
	struct sockaddr_un sa;
	socklen_t len = source_name(&sa, port);
	int fd = sv_socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Send only: a datagram sent to it fails rather than fill its queue. */
	if (bind(fd, (struct sockaddr *)&sa, len) || shutdown(fd, SHUT_RD)) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	return fd;
}

bool sv_mcast_source_ok(const struct sockaddr *from, socklen_t len,
			const struct sv_wire_hdr *h, struct in_addr self)
{
	struct sockaddr_un want;
	socklen_t wl = source_name(&want, h->src_qpn >> 8);

	/* Same host only: the sender's address is ours (one device address per host). */
	if (h->data1 != self.s_addr || h->src_qpn > 0xffffff)
		return false;
	return len == wl && !memcmp(from, &want, wl);
}

int sv_mcast_send(int fd, const union ibv_gid *mgid, const struct iovec *iov, int n)
{
	char prefix[80], line[512];
	int plen = group_prefix(prefix, sizeof(prefix), mgid), sent = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *at = strchr(line, '@');
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct msghdr mh = { .msg_name = &sa, .msg_iov = (struct iovec *)iov,
				     .msg_iovlen = n };
		size_t len;

		if (!at || strncmp(at + 1, prefix, plen))
			continue;
		len = strcspn(at + 1, " \n");
		if (len >= sizeof(sa.sun_path) - 1)
			continue;
		memcpy(sa.sun_path + 1, at + 1, len);
		mh.msg_namelen = offsetof(struct sockaddr_un, sun_path) + 1 + len;
		/* Unreliable like a fabric: a full member misses this one. */
		if (sv_sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
			sent++;
	}
	fclose(f);
	return sent;
}
