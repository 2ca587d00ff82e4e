// SPDX-License-Identifier: MIT
/*
 * rclose of an rsocket while another thread of the process sleeps in a call
 * on it (rrecv, rpoll, raccept, rconnect): the sleeper must return, -1 with
 * EBADF (rpoll: POLLNVAL), and must never touch freed memory (ASan and TSan
 * builds run it too).  The race is repeated with the close coming at
 * varying moments of the sleeper's call, with and without a lingering close.
 *
 * usage: rs_close PORT [ROUNDS]; PORT, PORT+1 and PORT+2 are used
 * (tests/cm/CMakeLists.txt takes them from sv_test_port).
 */
#include "rstest.h"

#include <stdatomic.h>

#define JOIN_MS 10000	/* a sleeper not back by then was never woken */

enum op { OP_RECV, OP_POLL, OP_ACCEPT, OP_CONNECT };

struct sleeper {
	pthread_t t;
	enum op op;
	int fd;
	struct sockaddr_in to;	/* OP_CONNECT */
	atomic_int entering;	/* set just before the call */
	long ret;
	int err;
	short revents;
};

static void *sleep_in_call(void *arg)
{
	struct sleeper *z = arg;
	struct pollfd p = { .fd = z->fd, .events = POLLIN };
	char buf[64];

	atomic_store(&z->entering, 1);
	errno = 0;
	switch (z->op) {
	case OP_RECV:
		z->ret = rrecv(z->fd, buf, sizeof(buf), 0);
		break;
	case OP_POLL:
		z->ret = rpoll(&p, 1, JOIN_MS);
		z->revents = p.revents;
		break;
	case OP_ACCEPT:
		z->ret = raccept(z->fd, NULL, NULL);
		break;
	case OP_CONNECT:
		z->ret = rconnect(z->fd, (struct sockaddr *)&z->to, sizeof(z->to));
		break;
	}
	z->err = errno;
	return NULL;
}

static void start(struct sleeper *z, enum op op, int fd)
{
	z->op = op;
	z->fd = fd;
	atomic_store(&z->entering, 0);
	CHECK_EQ(pthread_create(&z->t, NULL, sleep_in_call, z), 0);
	while (!atomic_load(&z->entering))
		sched_yield();
}

/* Joins within JOIN_MS, or fails the test: a sleeper rclose left asleep. */
static void join(struct sleeper *z)
{
	struct timespec ts;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += JOIN_MS / 1000;
	rc = pthread_timedjoin_np(z->t, NULL, &ts);
	if (rc)
		FAIL("the thread in call %d on rsocket %d is still there after rclose (%s)",
		     (int)z->op, z->fd, strerror(rc));
}

static int wrong;	/* sleepers that came back with another answer */
static int late;	/* rpoll sleepers whose call began after the close */

/* What every sleeper must have seen: its rsocket closed under it.  A wrong
 * answer is counted, not fatal, so that the rounds after it still run the
 * race for the sanitizers to see.  An rpoll that a loaded machine started
 * only after rclose returned found no rsocket by that number (EBADF from
 * the lookup) and polled it as a plain descriptor, which another thread's
 * socket may have taken by then: as poll(2) after close(2), nothing to
 * promise, so counted apart. */
static void check_closed(const struct sleeper *z)
{
	bool ok = z->op == OP_POLL ? z->ret == 1 && (z->revents & POLLNVAL) :
				     z->ret == -1 && z->err == EBADF;

	if (!ok && z->op == OP_POLL && z->err == EBADF && z->ret >= 0) {
		late++;
		return;
	}
	if (ok || wrong++ >= 3)
		return;
	if (z->op == OP_POLL)
		MSG("rpoll returned %ld revents %#x errno %d, wanted 1 and POLLNVAL", z->ret,
		    (unsigned)z->revents, z->err);
	else
		MSG("call %d returned %ld errno %d (%s), wanted -1 and EBADF", (int)z->op, z->ret,
		    z->err, strerror(z->err));
}

/* The peer of the closed rsocket reads until its end of stream, then
 * closes too, answering a lingering rclose's FIN. */
static void *peer_drain(void *arg)
{
	int c = *(int *)arg;
	char buf[64];

	while (rrecv(c, buf, sizeof(buf), 0) > 0)
		;
	rclose(c);
	return NULL;
}

/* How long after the sleeper starts its call the close comes: from at
 * once (the sleeper still finding its rsocket) to surely asleep. */
static unsigned close_delay_us(int round)
{
	static const unsigned us[] = { 0, 20, 100, 500, 2000, 5000 };

	return us[round % (int)(sizeof(us) / sizeof(us[0]))];
}

/* One round: s's peer drained by a thread, a sleeper in rrecv (and every
 * other round one in rpoll too) on s, then rclose(s). */
static void close_connected(int l, uint16_t port, int round)
{
	struct sleeper rz, pz;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	bool with_poll = round % 2, linger = (round / 2) % 2;
	pthread_t peer;
	int c, s;

	rst_connect_pair(l, port, &c, &s);
	if (!linger)
		CHECK_OK(rsetsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	CHECK_EQ(pthread_create(&peer, NULL, peer_drain, &c), 0);
	start(&rz, OP_RECV, s);
	if (with_poll)
		start(&pz, OP_POLL, s);
	usleep(close_delay_us(round));
	CHECK_OK(rclose(s));
	join(&rz);
	check_closed(&rz);
	if (with_poll) {
		join(&pz);
		check_closed(&pz);
	}
	CHECK_EQ(pthread_join(peer, NULL), 0);
}

/* A listener closed under raccept, a client closed under rconnect (its
 * listener never accepts, so the connect cannot end by itself). */
static void close_unconnected(uint16_t port, int round)
{
	int l = rst_listener(port), c = rsocket(AF_INET, SOCK_STREAM, 0);
	struct sleeper az, cz;

	CHECK(c >= 0);
	cz.to = loop_addr(port);
	start(&az, OP_ACCEPT, l);
	usleep(close_delay_us(round));
	CHECK_OK(rclose(l));
	join(&az);
	check_closed(&az);

	l = rst_listener((uint16_t)(port + 1));
	cz.to = loop_addr((uint16_t)(port + 1));
	start(&cz, OP_CONNECT, c);
	usleep(close_delay_us(round) + 1000);
	CHECK_OK(rclose(c));
	join(&cz);
	check_closed(&cz);
	CHECK_OK(rclose(l));
}

int main(int argc, char **argv)
{
	uint16_t port = argc > 1 ? (uint16_t)atoi(argv[1]) : 27600;
	int rounds = argc > 2 ? atoi(argv[2]) : 48, l;

	cmt_init("rs_close", 170);
	l = rst_listener(port);
	CHECK_OK(rfcntl(l, F_SETFL, O_NONBLOCK));
	for (int i = 0; i < rounds; i++)
		close_connected(l, port, i);
	for (int i = 0; i < 6; i++)
		close_unconnected((uint16_t)(port + 1), i);
	CHECK_OK(rclose(l));
	if (wrong)
		FAIL("%d sleepers did not see their rsocket closed", wrong);
	MSG("%d rounds of rclose under a sleeper (%d rpoll calls began after it), and 6 under "
	    "raccept and rconnect", rounds, late);
	return 0;
}
