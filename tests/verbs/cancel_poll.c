/* A thread that posts and polls is cancelled, again and again, at the
 * pthread_testcancel of its loop: ibv_post_send, ibv_post_recv and
 * ibv_poll_cq are not cancellation points on a device whose doorbell and
 * CQ are memory, so a pending cancel must not act inside them, where
 * softverbs holds QP locks and its guards around system calls.  After
 * each cancel the QPs still work, and at the end they are destroyed (a
 * lock or guard left held would hang either; the alarm fails the test). */
#include <pthread.h>

#include "common.h"

#define ROUNDS 40
#define RECV_MAX 16                  /* receives outstanding at most */

struct loop {
	struct t_pair *p;
	int recvs;                       /* posted on b, not completed */
	uint64_t turns;
};

/* Poll until one completion, a cancellation point between polls. */
static struct ibv_wc poll_one(struct ibv_cq *cq)
{
	struct ibv_wc wc;

	while (ibv_poll_cq(cq, 1, &wc) == 0)
		pthread_testcancel();
	return wc;
}

static void *pingpong(void *arg)
{
	struct loop *l = arg;
	struct t_pair *p = l->p;

	for (;;) {
		if (__atomic_load_n(&l->recvs, __ATOMIC_RELAXED) < RECV_MAX) {
			CHECK_OK(t_post_recv(p->b.qp, 1, p->b.buf, 64, p->b.mr->lkey));
			__atomic_add_fetch(&l->recvs, 1, __ATOMIC_RELAXED);
		}
		CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, 2, p->a.buf, 8, p->a.mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(poll_one(p->a.cq), IBV_WC_SUCCESS);
		CHECK_STATUS(poll_one(p->b.cq), IBV_WC_SUCCESS);
		__atomic_sub_fetch(&l->recvs, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&l->turns, 1, __ATOMIC_RELAXED);
		pthread_testcancel();
	}
	return NULL;
}

/* What a cancelled turn left: its completions, taken here. */
static void drain(struct loop *l)
{
	struct ibv_wc wc;

	while (t_poll(l->p->a.cq, &wc, 1, 50) == 1)
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
	while (t_poll(l->p->b.cq, &wc, 1, 50) == 1) {
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		l->recvs--;
	}
}

/* One SEND each way, data checked. */
static void check_pair(struct loop *l)
{
	struct t_pair *p = l->p;

	t_fill(p->a.buf, 64, 7);
	if (!l->recvs)             /* (a cancelled turn's receive takes it) */
		CHECK_OK(t_post_recv(p->b.qp, 3, p->b.buf, 64, p->b.mr->lkey));
	CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, 3, p->a.buf, 64, p->a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p->b.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p->b.buf, 64, 7));
	t_fill(p->b.buf + 64, 64, 9);
	CHECK_OK(t_post_recv(p->a.qp, 4, p->a.buf + 64, 64, p->a.mr->lkey));
	CHECK_OK(t_post_send(p->b.qp, IBV_WR_SEND, 4, p->b.buf + 64, 64, p->b.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->b.cq, 5000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p->a.buf + 64, 64, 9));
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct loop l = { .p = &p };
	uint64_t before = 0;

	t_skip_cancel_asan();
	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t th;
		void *ret = NULL;

		CHECK_EQ(pthread_create(&th, NULL, pingpong, &l), 0);
		/* cancel once it turns, at a different point each round */
		while (__atomic_load_n(&l.turns, __ATOMIC_RELAXED) == before)
			t_sleep_ms(1);
		t_sleep_ms(1 + r % 7);
		CHECK_EQ(pthread_cancel(th), 0);
		CHECK_EQ(pthread_join(th, &ret), 0);
		CHECK(ret == PTHREAD_CANCELED);
		before = __atomic_load_n(&l.turns, __ATOMIC_RELAXED);
		drain(&l);
	}
	check_pair(&l);
	printf("%d cancels, %llu turns\n", ROUNDS, (unsigned long long)before);
	t_pair_close(&p);
	return 0;
}
