// SPDX-License-Identifier: MIT
/*
 * riomap on a nonblocking rsocket whose peer has granted no credits returns
 * at once: the announcement waits for a credit and goes out ahead of the
 * next data, so once the peer has read that data its riowrite lands in the
 * mapped buffer (rsocket(7): a map is available after the peer receives a
 * transfer initiated after riomap).
 *
 * usage: rs_iomap PORT (tests/cm/CMakeLists.txt takes it from sv_test_port).
 */
#include "rstest.h"

#include <sys/mman.h>

#define WAIT_MS 2000
#define MAP_LEN 4096

/* Sends on the nonblocking s until no POLLOUT comes back: what went. */
static size_t fill(int s)
{
	static char buf[1 << 16];
	size_t sent = 0;

	do {
		for (;;) {
			ssize_t n = rsend(s, buf, sizeof(buf), 0);

			if (n < 0 && errno == EAGAIN)
				break;
			CHECK(n > 0);
			sent += (size_t)n;
			CHECK(sent < (256u << 20));
		}
	} while (rst_revents(s, POLLOUT, 100) & POLLOUT);
	return sent;
}

struct map_call {
	int s;
	void *buf;
	off_t off;
	int err;
};

static void *do_riomap(void *arg)
{
	struct map_call *m = arg;

	m->off = riomap(m->s, m->buf, MAP_LEN, PROT_WRITE, 0, -1);
	m->err = errno;
	return NULL;
}

/* riomap on s in a thread: it must return within 500 ms. */
static off_t map_at_once(int s, void *buf)
{
	struct map_call m = { .s = s, .buf = buf };
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, do_riomap, &m), 0);
	if (!rst_join_within(t, 500))
		FAIL("riomap on a nonblocking rsocket without credits still waits after 500 ms");
	errno = m.err;
	CHECK(m.off >= 0);
	return m.off;
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27700;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };	/* s is not driven meanwhile */
	static char map[MAP_LEN];
	const char msg[] = "landed";
	int l, c, s, iomaps = 1;
	char b = 'x';
	size_t sent;
	off_t off;

	cmt_init("rs_iomap", 60);
	signal(SIGPIPE, SIG_IGN);
	l = rst_listener(port);
	CHECK_OK(rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &iomaps, sizeof(iomaps)));
	CHECK_OK(rfcntl(l, F_SETFL, O_NONBLOCK));
	rst_connect_pair(l, port, &c, &s);
	CHECK_OK(rfcntl(s, F_SETFL, O_NONBLOCK));

	sent = fill(s);
	off = map_at_once(s, map);
	CHECK_ERR(rsend(s, &b, 1, 0), EAGAIN);

	rst_read_all(c, sent);
	if (!(rst_revents(s, POLLOUT, WAIT_MS) & POLLOUT))
		FAIL("no POLLOUT within %d ms of the peer reading everything", WAIT_MS);
	CHECK_EQ(rsend(s, &b, 1, 0), 1);
	rst_read_all(c, 1);

	CHECK_EQ(riowrite(c, msg, sizeof(msg), off, 0), sizeof(msg));
	CHECK_EQ(rsend(c, &b, 1, 0), 1);	/* after the WRITE: once it is in, so is the WRITE */
	if (!(rst_revents(s, POLLIN, WAIT_MS) & POLLIN))
		FAIL("the byte after riowrite did not come within %d ms", WAIT_MS);
	CHECK_EQ(rrecv(s, &b, 1, 0), 1);
	if (memcmp(map, msg, sizeof(msg)))
		FAIL("riowrite did not land in the mapped buffer");

	CHECK_OK(riounmap(s, map, MAP_LEN));
	CHECK_OK(rsetsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	CHECK_OK(rclose(c));
	CHECK_OK(rclose(s));
	CHECK_OK(rclose(l));
	MSG("riomap without credits returns at once; the map reaches the peer before later data");
	return 0;
}
