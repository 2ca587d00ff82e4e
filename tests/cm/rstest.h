/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the rsocket tests of one process: a listener, a connected
 * pair through it, and bounded joins of threads sleeping in calls.
 */
#ifndef RSTEST_H
#define RSTEST_H

#include "cmtest.h"

#include <pthread.h>
#include <sys/socket.h>
#include <rdma/rsocket.h>

static inline int rst_listener(uint16_t port)
{
	struct sockaddr_in a = loop_addr(port);
	int l = rsocket(AF_INET, SOCK_STREAM, 0), one = 1;

	CHECK(l >= 0);
	CHECK_OK(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	CHECK_OK(rbind(l, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(rlisten(l, 8));
	return l;
}

/* A connected pair through the nonblocking listener l: nothing runs in the
 * background, so rpoll drives both ends until the client is connected.
 * Both ends come back blocking. */
static inline void rst_connect_pair(int l, uint16_t port, int *cp, int *sp)
{
	struct sockaddr_in a = loop_addr(port);
	int c = rsocket(AF_INET, SOCK_STREAM, 0), s = -1, err = 0;
	socklen_t el = sizeof(err);
	short cev = 0;

	CHECK(c >= 0);
	CHECK_OK(rfcntl(c, F_SETFL, O_NONBLOCK));
	CHECK_ERR(rconnect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
	for (long long end = now_ms() + 5000; (s < 0 || !(cev & POLLOUT)) && now_ms() < end;) {
		struct pollfd p[2] = { { .fd = l, .events = POLLIN }, { .fd = c, .events = POLLOUT } };

		CHECK(rpoll(p, 2, 10) >= 0);
		if (s < 0 && (p[0].revents & POLLIN))
			s = raccept(l, NULL, NULL);
		cev = p[1].revents;
	}
	CHECK(s >= 0 && (cev & POLLOUT));
	CHECK_OK(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el));
	CHECK_EQ(err, 0);
	CHECK_OK(rfcntl(c, F_SETFL, 0));
	*cp = c;
	*sp = s;
}

/* rpoll of one rsocket for `events`, up to ms: its revents. */
static inline short rst_revents(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	CHECK(rpoll(&p, 1, ms) >= 0);
	return p.revents;
}

/* Reads exactly `bytes` from rsocket s (blocking), discarding them. */
static inline void rst_read_all(int s, size_t bytes)
{
	static char buf[1 << 16];

	while (bytes) {
		ssize_t n = rrecv(s, buf, bytes < sizeof(buf) ? bytes : sizeof(buf), 0);

		CHECK(n > 0);
		bytes -= (size_t)n;
	}
}

/* Joins t within ms: false if it is still in its call by then. */
static inline bool rst_join_within(pthread_t t, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

#endif
