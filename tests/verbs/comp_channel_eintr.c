/* A signal handler installed without SA_RESTART ends a blocked
 * ibv_get_cq_event and ibv_get_async_event with EINTR, as the kernel's read
 * of their fds does: qperf stops its timed tests that way. */
#include <pthread.h>
#include <signal.h>

#include "common.h"

static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
	(void)sig;
	caught = 1;
}

/* Signal the main thread 100 ms from now. */
static void *poke(void *arg)
{
	t_sleep_ms(100);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

static void expect_eintr(int rc)
{
	CHECK_EQ(rc, -1);
	CHECK_EQ(errno, EINTR);
	CHECK(caught);
	caught = 0;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };   /* no SA_RESTART */
	struct ibv_context *ctx = t_open();
	struct ibv_comp_channel *ch;
	struct ibv_async_event aev;
	struct ibv_cq *cq, *ev_cq;
	pthread_t self = pthread_self(), th;
	void *ev_ctx;

	t_alarm(30);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	cq = CHECK_PTR(ibv_create_cq(ctx, 4, NULL, ch, 0));
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);

	CHECK_EQ(pthread_create(&th, NULL, poke, &self), 0);
	expect_eintr(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	pthread_join(th, NULL);

	CHECK_EQ(pthread_create(&th, NULL, poke, &self), 0);
	expect_eintr(ibv_get_async_event(ctx, &aev));
	pthread_join(th, NULL);

	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	printf("get_cq_event and get_async_event: EINTR after a signal\n");
	return 0;
}
