/* Wire helpers of the security tests, for victims and attackers alike (no
 * libibverbs here); see sec.h. */
#define _GNU_SOURCE
#include "sec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool sec_tcp(void)
{
	const char *t = getenv("SOFTVERBS_TRANSPORT");

	return t && !strcmp(t, "tcp");
}

int sec_connect_port(uint16_t port, bool tcp)
{
	int fd;

	const char *target = getenv("SEC_TARGET_IP");

	if (tcp || target) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (target && inet_pton(AF_INET, target, &a.sin_addr) != 1)
			return -1;
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			close(fd);
			fd = -1;
		}
	} else {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int l = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "softverbs.%u", port);

		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a,
				       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l))) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

int sec_send_frame(int fd, struct sv_wire_hdr *h, const void *payload, size_t len)
{
	h->magic = SV_WIRE_MAGIC;
	h->version = SV_WIRE_VERSION;
	h->len = (uint32_t)len;
	sv_wire_encode(h);
	if (send(fd, h, sizeof(*h), MSG_NOSIGNAL) != (ssize_t)sizeof(*h))
		return -1;
	if (len && send(fd, payload, len, MSG_NOSIGNAL) != (ssize_t)len)
		return -1;
	return 0;
}

static int read_full(int fd, void *buf, size_t n, int timeout_ms)
{
	uint8_t *b = buf;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		r = recv(fd, b, n, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return -1;
		if (r > 0) {
			b += r;
			n -= (size_t)r;
		}
	}
	return 0;
}

int sec_recv_frame(int fd, struct sv_wire_hdr *h, void *payload, size_t cap, int timeout_ms)
{
	static uint8_t sink[4096];

	if (read_full(fd, h, sizeof(*h), timeout_ms) || !sv_wire_decode(h))
		return -1;
	for (size_t left = h->len; left;) {
		size_t k = left < sizeof(sink) ? left : sizeof(sink);
		size_t off = h->len - left;
		void *dst = off < cap ? (uint8_t *)payload + off : sink;

		if (off < cap && k > cap - off)
			k = cap - off;
		if (read_full(fd, dst, k, timeout_ms))
			return -1;
		left -= k;
	}
	return 0;
}

bool sec_closed_within(int fd, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	uint8_t b[256];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - now_ms());
		ssize_t r;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		r = recv(fd, b, sizeof(b), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
	}
}
