/*
 * Completions a poll's own progress makes go straight into that poll's
 * array while the CQ's ring is empty (src/verbs/cq.c, direct_slot); the
 * rest of a burst waits in the ring.  Two processes, so that the
 * receiver's completions are made by its polls (one process would make
 * them in the sender's post).  Whatever way each took, the poller sees
 * them all, once each, in order, whatever array size it polls with, in
 * bursts and in a ping-pong; and a CQ armed for an event still raises it
 * when the completion that satisfies the arm went straight to a poller.
 */
#include <string.h>

#include "common.h"

#define BURST 48
#define SLOT  64
#define PINGS 2000

static int sends_done;               /* the receiver's signaled answers */

/* Poll `room` entries at a time until `count` receives are in, wr_id
 * 0, 1, ... and each buffer holding round << 32 | its index (send
 * completions among them counted). */
static void reap_in_order(struct t_ep *e, uint64_t round, int count, int room)
{
	struct ibv_wc wc[16];
	uint64_t next = 0, deadline = t_now_ms() + 5000;

	while (next < (uint64_t)count) {
		int n = ibv_poll_cq(e->cq, room, wc);

		CHECK(n >= 0 && n <= room);
		for (int k = 0; k < n; k++, next++) {
			uint64_t v;

			CHECK_STATUS(wc[k], IBV_WC_SUCCESS);
			if (wc[k].opcode == IBV_WC_SEND) {
				sends_done++;
				next--;
				continue;
			}
			CHECK_EQ(wc[k].opcode, IBV_WC_RECV);
			CHECK_EQ(wc[k].wr_id, next);
			CHECK_EQ(wc[k].byte_len, 8);
			memcpy(&v, e->buf + SLOT * next, 8);
			CHECK_EQ(v, round << 32 | next);
		}
		CHECK(t_now_ms() < deadline);
	}
}

static void send_one(struct t_ep *e, uint64_t i, uint64_t v, int flags)
{
	memcpy(e->buf + SLOT * i, &v, 8);
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, i, e->buf + SLOT * i, 8, e->mr->lkey, flags));
}

static void receiver(struct t_side *s)
{
	static const int rooms[] = { 1, 3, 16 };
	struct t_ep *e = &s->e;
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ev_ctx;

	for (uint64_t round = 1; round <= 6; round++) {
		for (uint64_t i = 0; i < BURST; i++)
			CHECK_OK(t_post_recv(e->qp, i, e->buf + SLOT * i, SLOT, e->mr->lkey));
		t_sync(s->fd);
		reap_in_order(e, round, BURST, rooms[round % 3]);
	}
	/* a ping-pong: each receive answered, so each is made by a poll */
	CHECK_OK(t_post_recv(e->qp, 0, e->buf, SLOT, e->mr->lkey));
	t_sync(s->fd);
	for (uint64_t i = 0; i < PINGS; i++) {
		reap_in_order(e, 1000 + i, 1, 1 + (int)(i % 2));
		if (i + 1 < PINGS)
			CHECK_OK(t_post_recv(e->qp, 0, e->buf, SLOT, e->mr->lkey));
		send_one(e, 1, i, i % 16 == 15 ? IBV_SEND_SIGNALED : 0);
	}
	for (; sends_done < PINGS / 16; sends_done++) {
		wc = t_wc(e->cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_SEND);
	}
	/* armed, then busy-polled: the event still comes */
	CHECK_OK(ibv_req_notify_cq(e->cq, 0));
	CHECK_OK(t_post_recv(e->qp, 7, e->buf, SLOT, e->mr->lkey));
	t_sync(s->fd);
	wc = t_wc(e->cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK(t_fd_ready(e->ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(e->ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == e->cq);
	ibv_ack_cq_events(ev_cq, 1);
	t_sync(s->fd);
}

static void sender(struct t_side *s)
{
	struct t_ep *e = &s->e;
	struct ibv_wc wc;

	for (uint64_t round = 1; round <= 6; round++) {
		t_sync(s->fd);
		for (uint64_t i = 0; i < BURST; i++)
			send_one(e, i, round << 32 | i, IBV_SEND_SIGNALED);
		for (int i = 0; i < BURST; i++)
			CHECK_STATUS(t_wc(e->cq, 2000), IBV_WC_SUCCESS);
	}
	t_sync(s->fd);
	for (uint64_t i = 0; i < PINGS; i++) {
		CHECK_OK(t_post_recv(e->qp, 1, e->buf + SLOT, SLOT, e->mr->lkey));
		send_one(e, 0, (1000 + i) << 32, IBV_SEND_SIGNALED);
		for (int got = 0; got < 2; got++) {
			wc = t_wc(e->cq, 2000);
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
		}
	}
	t_sync(s->fd);
	send_one(e, 0, 0, IBV_SEND_SIGNALED);
	CHECK_STATUS(t_wc(e->cq, 2000), IBV_WC_SUCCESS);
	t_sync(s->fd);
}

int main(void)
{
	struct t_opts o, or;

	t_opts_default(&o, IBV_QPT_RC);
	o.max_send_wr = BURST;
	o.max_recv_wr = BURST;
	o.cqe = 2 * BURST;
	o.buf_len = SLOT * BURST;
	or = o;
	or.own_channel = true;
	CHECK_EQ(t_two_procs(&or, &o, 60, 30000, receiver, sender, NULL), 0);
	return 0;
}
