/*
 * An ACK a request carries (held ACKs, docs/wire-format.md) completes the
 * requester's work only once that request's data is in place.  Two threads
 * play ib_write_lat with large WRITEs: each posts its WRITE of round r,
 * polls its CQ until that WRITE completes, then spins on memory, calling no
 * verb, until the peer's WRITE of round r has landed.  In a steady
 * ping-pong over TCP the completion arrives with the peer's WRITE; had it
 * been applied when that WRITE's header was read, the program would spin
 * on memory nobody fills (its poller no longer reads the rest).  So over
 * TCP the peer's data must already be there when the completion is seen,
 * in most steady rounds: a hold released by an empty poll or the progress
 * thread's timer sends a plain ACK instead, and the streak starts over, so
 * a loaded machine gets a few runs.  Sanitizers slow a round past the
 * hold's timer: there, as over shared memory (where a WRITE completes by
 * itself), only the data is checked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED true
#else
#define SANITIZED false
#endif

#define MSG    (4 << 20)      /* a frame many reads long */
#define ROUNDS 200
#define STEADY 50             /* the rounds before this one are warm-up */

struct side {
	struct t_ep *e;
	const struct t_info *peer;
	bool first;               /* writes first in each round */
	int early;                /* steady rounds whose completion came first */
	pthread_barrier_t *bar;
};

/* The last 8 bytes of the peer's WRITE in our buffer (ib_write_lat polls
 * the last byte). */
static uint64_t *landing(const struct side *s)
{
	return (uint64_t *)(s->e->buf + MSG - 8);
}

static void post_write(struct side *s, uint64_t r)
{
	uint8_t *src = s->e->buf + MSG;

	memset(src, (int)(r & 0xff), MSG - 8);
	memcpy(src + MSG - 8, &r, 8);
	CHECK_OK(t_post_rdma(s->e->qp, IBV_WR_RDMA_WRITE, r, src, MSG, s->e->mr->lkey,
			     s->peer->addr, s->peer->rkey, IBV_SEND_SIGNALED));
}

static void wait_landed(struct side *s, uint64_t r)
{
	uint64_t deadline = t_now_ms() + 10000;

	while (__atomic_load_n(landing(s), __ATOMIC_ACQUIRE) != r)
		CHECK(t_now_ms() < deadline);
	CHECK_EQ(s->e->buf[0], r & 0xff);
}

static void *side_run(void *arg)
{
	struct side *s = arg;

	pthread_barrier_wait(s->bar);
	s->early = 0;
	for (uint64_t r = 1; r <= ROUNDS; r++) {
		struct ibv_wc wc;

		if (!s->first)
			wait_landed(s, r);
		post_write(s, r);
		wc = t_wc(s->e->cq, 10000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, r);
		/* the first side's completion comes with the peer's WRITE r,
		 * the other's with the peer's WRITE r + 1 */
		if (r >= STEADY && r < ROUNDS &&
		    __atomic_load_n(landing(s), __ATOMIC_ACQUIRE) != (s->first ? r : r + 1))
			s->early++;
		if (s->first)
			wait_landed(s, r);
	}
	return NULL;
}

int main(void)
{
	bool timed = t_transport_tcp() && !SANITIZED, in_order = false;
	struct t_opts o;
	struct t_pair p;
	pthread_barrier_t bar;
	struct side sa, sb;
	pthread_t ta, tb;
	int steady = ROUNDS - STEADY;

	t_alarm(120);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = 2 * MSG;
	t_pair_open(&p, &o);
	CHECK_OK(pthread_barrier_init(&bar, NULL, 2));
	sa = (struct side){ .e = &p.a, .peer = &p.ib, .first = true, .bar = &bar };
	sb = (struct side){ .e = &p.b, .peer = &p.ia, .first = false, .bar = &bar };
	for (int run = 0; run < 3 && !in_order; run++) {
		memset(p.a.buf, 0, MSG);
		memset(p.b.buf, 0, MSG);
		CHECK_OK(pthread_create(&ta, NULL, side_run, &sa));
		CHECK_OK(pthread_create(&tb, NULL, side_run, &sb));
		CHECK_OK(pthread_join(ta, NULL));
		CHECK_OK(pthread_join(tb, NULL));
		fprintf(stderr, "run %d: completions before the carrying WRITE's data: %d and %d of %d\n",
			run, sa.early, sb.early, steady);
		in_order = !timed || (sa.early * 2 <= steady && sb.early * 2 <= steady);
	}
	CHECK(in_order);
	t_pair_close(&p);
	pthread_barrier_destroy(&bar);
	return 0;
}
