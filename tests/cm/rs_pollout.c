// SPDX-License-Identifier: MIT
/*
 * rpoll's POLLOUT on a connected stream rsocket says whether rsend would
 * go on without blocking: not while the peer's receive credits are used
 * up (rsend: EAGAIN), again once the peer has read, and at once after
 * rshutdown(SHUT_WR), where rsend fails with EPIPE without waiting (as
 * tcp_poll reports a socket shut for writing).
 *
 * usage: rs_pollout PORT (tests/cm/CMakeLists.txt takes it from sv_test_port).
 */
#include "rstest.h"

#define WAIT_MS 2000

/* Sends on the nonblocking c until EAGAIN: what went. */
static size_t fill(int c)
{
	static char buf[1 << 16];
	size_t sent = 0;

	for (;;) {
		ssize_t n = rsend(c, buf, sizeof(buf), 0);

		if (n < 0 && errno == EAGAIN)
			return sent;
		CHECK(n > 0);
		sent += (size_t)n;
		CHECK(sent < (256u << 20));
	}
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27690;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char b = 'x';
	size_t sent;
	int l, c, s;

	cmt_init("rs_pollout", 60);
	signal(SIGPIPE, SIG_IGN);
	l = rst_listener(port);
	CHECK_OK(rfcntl(l, F_SETFL, O_NONBLOCK));
	rst_connect_pair(l, port, &c, &s);
	CHECK_OK(rfcntl(c, F_SETFL, O_NONBLOCK));
	CHECK(rst_revents(c, POLLOUT, 0) & POLLOUT);

	sent = fill(c);
	if (rst_revents(c, POLLOUT, 100) & POLLOUT)
		CHECK_ERR(rsend(c, &b, 1, 0), EAGAIN);	/* reported, yet it would block */
	CHECK_ERR(rsend(c, &b, 1, 0), EAGAIN);

	rst_read_all(s, sent);
	if (!(rst_revents(c, POLLOUT, WAIT_MS) & POLLOUT))
		FAIL("no POLLOUT within %d ms of the peer reading everything", WAIT_MS);
	CHECK_EQ(rsend(c, &b, 1, 0), 1);

	sent = fill(c) + 1;
	CHECK_OK(rshutdown(c, SHUT_WR));
	if (!(rst_revents(c, POLLOUT, 0) & POLLOUT))
		FAIL("no POLLOUT after rshutdown(SHUT_WR), where rsend does not block");
	CHECK_ERR(rsend(c, &b, 1, 0), EPIPE);

	rst_read_all(s, sent);
	CHECK_OK(rsetsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	CHECK_OK(rclose(c));
	CHECK_OK(rclose(s));
	CHECK_OK(rclose(l));
	MSG("POLLOUT follows what rsend would do: credits out, back, shut for writing");
	return 0;
}
