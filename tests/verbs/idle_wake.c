/*
 * An idle process's progress thread sleeps past the idle bound (its deep
 * sleep, transport/node.c): with no thread polling, every ring writer
 * rings its doorbell.  The first poll stamp after that wakes it
 * (sv_node_poll_stamp), because from then on writers skip the doorbell
 * for a process that polls, and the rings of CQs nobody polls are the
 * progress thread's to look at.
 *
 * Two processes, two RC QPs between them.  The target posts a receive on
 * QP b, idles (no verb) well past the idle bounds, then busy-polls the CQ
 * of QP a only.  The initiator then SENDs 8 bytes through QP b, its first
 * (too small to be placed: the target's engine must take it and
 * acknowledge), and b's CQ nobody polls: the progress thread must serve
 * it.  Woken by the first stamp, it does within its active bound
 * (milliseconds); left in its deep sleep, not before that sleep's bound
 * (a second).  The limit, 400 ms, lies between the two.  (Over TCP the
 * socket wakes the progress thread: the same program checks that too.)
 */
#include <string.h>

#include "common.h"

#define IDLE_MS  400
#define LIMIT_MS 400

struct two {
	struct t_opts o;
	struct t_ep b;
	struct t_info mine, theirs;
};

static void target(struct t_side *s)
{
	struct two *t = s->arg;
	uint64_t deadline;
	struct ibv_wc wc;
	uint64_t took;

	t_ep_peer(&t->b, s->ctx, &t->o, s->fd, &t->mine, &t->theirs);
	CHECK_OK(t_post_recv(t->b.qp, 2, t->b.buf, 64, t->b.mr->lkey));
	t_sync(s->fd);
	t_sleep_ms(IDLE_MS);                 /* idle: the progress thread sleeps deep */
	t_sync(s->fd);
	deadline = t_now_ms() + 5000;
	while (!t_fd_ready(s->fd, 0)) {      /* polls a's CQ only, until the SEND is done */
		CHECK(ibv_poll_cq(s->e.cq, 1, &wc) == 0);
		CHECK(t_now_ms() < deadline);
	}
	t_read_all(s->fd, &took, sizeof(took));
	wc = t_wc(t->b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK(((uint8_t *)t->b.buf)[7] == 0x5a);
	t_ep_destroy(&t->b);
}

static void initiator(struct t_side *s)
{
	struct two *t = s->arg;
	uint64_t start, took;
	struct ibv_wc wc;

	t_ep_peer(&t->b, s->ctx, &t->o, s->fd, &t->mine, &t->theirs);
	t_sync(s->fd);
	t_sync(s->fd);
	t_sleep_ms(50);                      /* the target polls by now */
	start = t_now_ms();
	memset(t->b.buf, 0x5a, 8);
	CHECK_OK(t_post_send(t->b.qp, IBV_WR_SEND, 1, t->b.buf, 8, t->b.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(t->b.cq, 5000);
	took = t_now_ms() - start;
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	fprintf(stderr, "a SEND through the unpolled QP completed in %llu ms\n",
		(unsigned long long)took);
	t_write_all(s->fd, &took, sizeof(took));
	CHECK(took < LIMIT_MS);
	t_ep_destroy(&t->b);
}

int main(void)
{
	struct two t = { 0 };

	t_opts_default(&t.o, IBV_QPT_RC);
	return t_two_procs(&t.o, &t.o, 30, 20000, target, initiator, &t) ? 1 : 0;
}
