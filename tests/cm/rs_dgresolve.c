// SPDX-License-Identifier: MIT
/*
 * A nonblocking datagram rsocket never waits for the lookup of a
 * destination: rsendto starts it and says EAGAIN, POLLOUT comes back when
 * it is done and rsendto then goes; a failed lookup is told once
 * (EHOSTUNREACH), the next rsendto starts over.  rconnect returns 0 at once
 * and rsend says EAGAIN until the lookup is done.  The peer is in this
 * thread, so it answers the lookup only when rpoll drives it: a send that
 * waited for the lookup would wait in vain.
 *
 * usage: rs_dgresolve PORT (tests/cm/CMakeLists.txt takes it from
 * sv_test_port; PORT+1 is left without a listener).
 */
#include "rstest.h"

#define WAIT_MS 3000

static int dgram(bool nonblock)
{
	int s = rsocket(AF_INET, SOCK_DGRAM, 0);

	CHECK(s >= 0);
	if (nonblock)
		CHECK_OK(rfcntl(s, F_SETFL, O_NONBLOCK));
	return s;
}

/* rsendto (to NULL: rsend) on c until it stops saying EAGAIN, driving c and
 * the peer srv (-1: none) with rpoll meanwhile: the last return. */
static ssize_t send_until_done(int c, int srv, const struct sockaddr_in *to, int *err)
{
	long long end = now_ms() + WAIT_MS;
	ssize_t n;

	for (;;) {
		struct pollfd p[2] = { { .fd = c, .events = POLLOUT }, { .fd = srv, .events = POLLIN } };

		errno = 0;
		n = to ? rsendto(c, "b", 1, 0, (const struct sockaddr *)to, sizeof(*to)) :
			 rsend(c, "b", 1, 0);
		*err = errno;
		if (n >= 0 || errno != EAGAIN)
			return n;
		if (now_ms() >= end)
			FAIL("rsendto still says EAGAIN after %d ms", WAIT_MS);
		CHECK(rpoll(p, srv >= 0 ? 2 : 1, 50) >= 0);
	}
}

static void expect_datagram(int srv)
{
	struct pollfd p = { .fd = srv, .events = POLLIN };
	char b = 0;

	CHECK(rpoll(&p, 1, WAIT_MS) == 1);
	CHECK_EQ(rrecv(srv, &b, 1, 0), 1);
	CHECK_EQ(b, 'b');
}

static void send_to_peer(int srv, const struct sockaddr_in *a)
{
	int c = dgram(true), err;

	CHECK_ERR(rsendto(c, "b", 1, 0, (const struct sockaddr *)a, sizeof(*a)), EAGAIN);
	CHECK_EQ(send_until_done(c, srv, a, &err), 1);
	expect_datagram(srv);
	CHECK_OK(rclose(c));
}

static void send_to_nobody(const struct sockaddr_in *a)
{
	int c = dgram(true), err;

	CHECK_ERR(rsendto(c, "b", 1, 0, (const struct sockaddr *)a, sizeof(*a)), EAGAIN);
	CHECK_EQ(send_until_done(c, -1, a, &err), -1);
	if (err != EHOSTUNREACH)
		FAIL("a failed lookup says errno %d (%s), expected EHOSTUNREACH", err,
		     strerror(err));
	CHECK_ERR(rsendto(c, "b", 1, 0, (const struct sockaddr *)a, sizeof(*a)), EAGAIN);
	CHECK_OK(rclose(c));
}

static void connect_to_peer(int srv, const struct sockaddr_in *a)
{
	int c = dgram(true), err;
	long long t0 = now_ms();

	CHECK_OK(rconnect(c, (const struct sockaddr *)a, sizeof(*a)));
	if (now_ms() - t0 > 500)
		FAIL("a nonblocking rconnect took %lld ms", now_ms() - t0);
	CHECK_ERR(rsend(c, "b", 1, 0), EAGAIN);
	CHECK_EQ(send_until_done(c, srv, NULL, &err), 1);
	expect_datagram(srv);
	CHECK_OK(rclose(c));
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27730;
	struct sockaddr_in a = loop_addr(port), nobody = loop_addr((uint16_t)(port + 1));
	int srv;

	cmt_init("rs_dgresolve", 60);
	srv = dgram(false);
	CHECK_OK(rbind(srv, (struct sockaddr *)&a, sizeof(a)));
	send_to_peer(srv, &a);
	send_to_nobody(&nobody);
	connect_to_peer(srv, &a);
	CHECK_OK(rclose(srv));
	MSG("nonblocking datagram lookups: EAGAIN, then sent; failure told once; rconnect at once");
	return 0;
}
