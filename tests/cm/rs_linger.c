// SPDX-License-Identifier: MIT
/*
 * rclose of a nonblocking rsocket returns at once, as close(2) does without
 * SO_LINGER, and what it had queued still reaches the peer, followed by the
 * end of stream; with SO_LINGER on and a timeout, rclose lingers for the
 * peer as before.  The peer reads only after the close has returned.
 *
 * usage: rs_linger PORT (tests/cm/CMakeLists.txt takes it from sv_test_port).
 */
#include "rstest.h"

#define BYTES (256 << 10)
#define PROMPT_MS 300	/* a close that waits for the peer takes 2000 */
#define READ_MS 5000

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + (i >> 10));
}

/* Queues what the nonblocking s takes of BYTES without waiting. */
static size_t fill(int s)
{
	static unsigned char buf[BYTES];
	size_t sent = 0;

	for (size_t i = 0; i < BYTES; i++)
		buf[i] = pattern(i);
	while (sent < BYTES) {
		ssize_t n = rsend(s, buf + sent, BYTES - sent, 0);

		if (n < 0 && errno == EAGAIN)
			break;
		CHECK(n > 0);
		sent += (size_t)n;
	}
	CHECK(sent > 0);
	return sent;
}

/* Reads c to its end of stream within READ_MS: the bytes, all as sent. */
static size_t drain_peer(int c)
{
	unsigned char buf[4096];
	size_t got = 0;
	long long end = now_ms() + READ_MS;

	CHECK_OK(rfcntl(c, F_SETFL, O_NONBLOCK));
	while (now_ms() < end) {
		struct pollfd p = { .fd = c, .events = POLLIN };
		ssize_t n;

		CHECK(rpoll(&p, 1, 100) >= 0);
		n = rrecv(c, buf, sizeof(buf), 0);
		if (n == 0)
			return got;
		if (n < 0 && errno == EAGAIN)
			continue;
		CHECK(n > 0);
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(got + (size_t)i))
				FAIL("byte %zu is %#x, sent %#x", got + (size_t)i, buf[i],
				     pattern(got + (size_t)i));
		got += (size_t)n;
	}
	FAIL("no end of stream within %d ms (%zu bytes read)", READ_MS, got);
}

/* Closes a nonblocking s with data queued: how long rclose took. */
static long long close_queued(int l, uint16_t port, const struct linger *lg)
{
	int c, s;
	size_t sent, got;
	long long t0, took;

	rst_connect_pair(l, port, &c, &s);
	CHECK_OK(rfcntl(s, F_SETFL, O_NONBLOCK));
	if (lg)
		CHECK_OK(rsetsockopt(s, SOL_SOCKET, SO_LINGER, lg, sizeof(*lg)));
	sent = fill(s);
	t0 = now_ms();
	CHECK_OK(rclose(s));
	took = now_ms() - t0;
	got = drain_peer(c);
	if (got != sent)
		FAIL("the peer read %zu bytes of the %zu queued before rclose", got, sent);
	CHECK_OK(rclose(c));
	return took;
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27660;
	struct linger lg = { .l_onoff = 1, .l_linger = 1 };
	long long took;
	int l;

	cmt_init("rs_linger", 60);
	l = rst_listener(port);
	CHECK_OK(rfcntl(l, F_SETFL, O_NONBLOCK));
	for (int i = 0; i < 3; i++) {
		took = close_queued(l, port, NULL);
		if (took > PROMPT_MS)
			FAIL("rclose of a nonblocking rsocket took %lld ms (at most %d)", took,
			     PROMPT_MS);
	}
	took = close_queued(l, port, &lg);
	if (took < 500)
		FAIL("rclose with SO_LINGER 1 s took only %lld ms: it did not wait for the peer",
		     took);
	CHECK_OK(rclose(l));
	MSG("a nonblocking rclose returns at once and its data arrives; SO_LINGER lingers");
	return 0;
}
