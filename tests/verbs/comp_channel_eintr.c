/* A signal handler installed without SA_RESTART ends a blocked
 * ibv_get_cq_event and ibv_get_async_event with EINTR, as the kernel's read
 * of their fds does: qperf stops its timed tests that way.  With
 * SA_RESTART the wait goes on to the event, as the kernel restarts it.
 * Both again once the QPs' channels are up (channels_up). */
#include <pthread.h>
#include <signal.h>

#include "common.h"

static volatile sig_atomic_t caught;

static void on_usr1(int sig)
{
	(void)sig;
	caught = 1;
}

/* With SA_RESTART: the signal at 100 ms, then a completion at 300 ms. */
struct later {
	pthread_t target;
	struct t_ep *a, *b;
};

static void *poke_then_send(void *arg)
{
	struct later *l = arg;

	t_sleep_ms(100);
	pthread_kill(l->target, SIGUSR1);
	t_sleep_ms(200);
	CHECK_OK(t_post_recv(l->b->qp, 1, l->b->buf, 64, l->b->mr->lkey));
	CHECK_OK(t_post_send(l->a->qp, IBV_WR_SEND, 2, l->a->buf, 64, l->a->mr->lkey,
			     IBV_SEND_SIGNALED));
	return NULL;
}

static void restarted(struct ibv_context *ctx, struct ibv_comp_channel *ch)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct later l = { .target = pthread_self() };
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	pthread_t th;

	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	t_opts_default(&o, IBV_QPT_RC);
	o.channel = ch;
	t_ep_pair(ctx, &o, &o, &a, &b, &ia, &ib);
	l.a = &a;
	l.b = &b;
	CHECK_EQ(ibv_req_notify_cq(a.cq, 0), 0);
	CHECK_EQ(pthread_create(&th, NULL, poke_then_send, &l), 0);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(caught);
	CHECK(ev_cq == a.cq);
	pthread_join(th, NULL);
	ibv_ack_cq_events(ev_cq, 1);
	t_ep_destroy(&a);
	t_ep_destroy(&b);
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

/* The same once the QPs' channels carried a message: over TCP a sleeper
 * then also sleeps on their sockets (verbs/comp_channel.c), in a poll,
 * which the kernel never restarts; it must still end with EINTR, or wait
 * on to the event with SA_RESTART. */
static void channels_up(struct ibv_context *ctx, struct ibv_comp_channel *ch)
{
	struct sigaction plain = { .sa_handler = on_usr1 };
	struct sigaction restart = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct later l = { .target = pthread_self() };
	pthread_t self = pthread_self(), th;
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	t_opts_default(&o, IBV_QPT_RC);
	o.channel = ch;
	t_ep_pair(ctx, &o, &o, &a, &b, &ia, &ib);
	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 64, b.mr->lkey));
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 2, a.buf, 64, a.mr->lkey, IBV_SEND_SIGNALED));
	t_wc(a.cq, 5000);
	t_wc(b.cq, 5000);

	CHECK(sigaction(SIGUSR1, &plain, NULL) == 0);
	CHECK_EQ(ibv_req_notify_cq(a.cq, 0), 0);
	CHECK_EQ(pthread_create(&th, NULL, poke, &self), 0);
	expect_eintr(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	pthread_join(th, NULL);

	CHECK(sigaction(SIGUSR1, &restart, NULL) == 0);
	l.a = &a;
	l.b = &b;
	CHECK_EQ(pthread_create(&th, NULL, poke_then_send, &l), 0);
	CHECK_EQ(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	CHECK(caught);
	caught = 0;
	CHECK(ev_cq == a.cq);
	pthread_join(th, NULL);
	ibv_ack_cq_events(ev_cq, 1);
	t_ep_destroy(&a);
	t_ep_destroy(&b);
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
	restarted(ctx, ch);
	caught = 0;
	channels_up(ctx, ch);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	printf("get_cq_event and get_async_event: EINTR after a signal; SA_RESTART waits on\n");
	return 0;
}
