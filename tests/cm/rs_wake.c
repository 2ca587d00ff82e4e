// SPDX-License-Identifier: MIT
/*
 * Several threads asleep on the same rsocket must all see an event that
 * concerns them: one byte from the peer wakes every thread in rpoll for
 * POLLIN, and rshutdown(SHUT_RD) from another thread returns every thread
 * in rrecv.  The first woken must not consume the others' wake-up.
 *
 * usage: rs_wake PORT [ROUNDS] (tests/cm/CMakeLists.txt takes PORT from
 * sv_test_port).
 */
#include "rstest.h"

#include <stdatomic.h>

#define SLEEPERS 4	/* more than the cores, so some wake late */
#define WAIT_MS 2000	/* a sleeper not back by then missed its event */
#define ASLEEP_US 20000	/* long enough for every sleeper to be in poll(2) */

struct sleeper {
	pthread_t t;
	int fd;
	bool poll;	/* rpoll for POLLIN, else rrecv of one byte */
	atomic_int entering;
	long ret;
	int err;
	short revents;
};

static void *sleep_in_call(void *arg)
{
	struct sleeper *z = arg;
	struct pollfd p = { .fd = z->fd, .events = POLLIN };
	char c;

	atomic_store(&z->entering, 1);
	errno = 0;
	if (z->poll) {
		z->ret = rpoll(&p, 1, WAIT_MS);
		z->revents = p.revents;
	} else {
		z->ret = rrecv(z->fd, &c, 1, 0);
	}
	z->err = errno;
	return NULL;
}

static void start_all(struct sleeper *z, int fd, bool poll)
{
	for (int i = 0; i < SLEEPERS; i++) {
		z[i] = (struct sleeper){ .fd = fd, .poll = poll };
		CHECK_EQ(pthread_create(&z[i].t, NULL, sleep_in_call, &z[i]), 0);
	}
	for (int i = 0; i < SLEEPERS; i++)
		while (!atomic_load(&z[i].entering))
			sched_yield();
	usleep(ASLEEP_US);
}

/* Every rpoll must report the byte that came: none may time out. */
static int poll_round(int c, int s)
{
	struct sleeper z[SLEEPERS];
	int missed = 0;
	char b = 'x';

	start_all(z, s, true);
	CHECK_EQ(rsend(c, &b, 1, 0), 1);
	for (int i = 0; i < SLEEPERS; i++) {
		if (!rst_join_within(z[i].t, WAIT_MS + 3000))
			FAIL("rpoll %d did not return within its own timeout", i);
		missed += !(z[i].ret == 1 && (z[i].revents & POLLIN));
	}
	CHECK_EQ(rrecv(s, &b, 1, 0), 1);
	return missed;
}

/* Every rrecv must come back with 0 (end of stream) after SHUT_RD. */
static int shutdown_round(int s)
{
	struct sleeper z[SLEEPERS];
	int missed = 0;

	start_all(z, s, false);
	CHECK_OK(rshutdown(s, SHUT_RD));
	for (int i = 0; i < SLEEPERS; i++) {
		if (!rst_join_within(z[i].t, WAIT_MS))
			FAIL("rrecv %d still asleep %d ms after rshutdown(SHUT_RD)", i, WAIT_MS);
		missed += z[i].ret != 0;
	}
	return missed;
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27630;
	int rounds = argc > 2 ? atoi(argv[2]) : 10, l, missed = 0;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	cmt_init("rs_wake", 150);
	l = rst_listener(port);
	CHECK_OK(rfcntl(l, F_SETFL, O_NONBLOCK));
	for (int i = 0; i < rounds; i++) {
		int c, s;

		rst_connect_pair(l, port, &c, &s);
		missed += poll_round(c, s);
		missed += shutdown_round(s);
		/* no lingering for a FIN c will not send before its own close */
		CHECK_OK(rsetsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
		CHECK_OK(rclose(s));
		CHECK_OK(rclose(c));
	}
	CHECK_OK(rclose(l));
	if (missed)
		FAIL("%d of %d sleepers missed the event that concerned them", missed,
		     rounds * 2 * SLEEPERS);
	MSG("%d rounds of %d sleepers in rpoll, then in rrecv: every one woken", rounds,
	    SLEEPERS);
	return 0;
}
