/* A thread asleep in ibv_get_cq_event holds the channel's armed CQs (over
 * TCP it also sleeps on their sockets: verbs/comp_channel.c).  Another
 * thread destroys one of those CQs meanwhile, as a server tearing down one
 * connection while its event thread waits: that must neither hang nor
 * touch the freed CQ (the ASan build), and the sleeper goes on to the
 * event of another CQ of the channel. */
#include <pthread.h>

#include "common.h"

struct sleeper {
	struct ibv_comp_channel *ch;
	struct ibv_cq *got;
	int rc;
};

static void *sleep_for_event(void *arg)
{
	struct sleeper *s = arg;
	void *ctx;

	s->rc = ibv_get_cq_event(s->ch, &s->got, &ctx);
	return NULL;
}

/* One SEND each way's first half: the pair's channels are up. */
static void exchange(struct t_ep *a, struct t_ep *b)
{
	CHECK_OK(t_post_recv(b->qp, 1, b->buf, 64, b->mr->lkey));
	CHECK_OK(t_post_send(a->qp, IBV_WR_SEND, 2, a->buf, 64, a->mr->lkey, IBV_SEND_SIGNALED));
	t_wc(a->cq, 5000);
	t_wc(b->cq, 5000);
}

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_comp_channel *ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	struct sleeper s = { .ch = ch, .got = NULL, .rc = -2 };
	struct t_ep a1, b1, a2, b2;
	struct t_info i1, j1, i2, j2;
	struct t_opts o;
	pthread_t th;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.channel = ch;
	t_ep_pair(ctx, &o, &o, &a1, &b1, &i1, &j1);
	t_ep_pair(ctx, &o, &o, &a2, &b2, &i2, &j2);
	exchange(&a1, &b1);
	exchange(&a2, &b2);

	CHECK_EQ(ibv_req_notify_cq(a1.cq, 0), 0);
	CHECK_EQ(ibv_req_notify_cq(a2.cq, 0), 0);
	CHECK_EQ(pthread_create(&th, NULL, sleep_for_event, &s), 0);
	t_sleep_ms(100);

	/* The sleeper holds a1's CQ: its destroy waits for it to let go. */
	t_ep_destroy(&a1);
	t_ep_destroy(&b1);
	t_sleep_ms(50);
	CHECK(s.rc == -2);                       /* still asleep */

	CHECK_OK(t_post_recv(b2.qp, 3, b2.buf, 64, b2.mr->lkey));
	CHECK_OK(t_post_send(a2.qp, IBV_WR_SEND, 4, a2.buf, 64, a2.mr->lkey, IBV_SEND_SIGNALED));
	pthread_join(th, NULL);
	CHECK_EQ(s.rc, 0);
	CHECK(s.got == a2.cq);
	ibv_ack_cq_events(s.got, 1);
	t_wc(a2.cq, 5000);
	t_wc(b2.cq, 5000);

	t_ep_destroy(&a2);
	t_ep_destroy(&b2);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	printf("a CQ destroyed under a sleeper: no hang, the sleeper gets the next event\n");
	return 0;
}
