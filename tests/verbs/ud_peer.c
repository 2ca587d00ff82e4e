/* UD between two processes of one host, which goes through a ring in shared
 * memory (transport/shm/dgring.c; over UDP with SOFTVERBS_TRANSPORT=tcp):
 *   - a polling ping-pong of every size up to the MTU delivers each
 *     datagram whole, with its source QP and LID, both ways, and the ring
 *     is what carried them (it is mapped: /proc/self/maps);
 *   - a receiver asleep on its completion channel is woken for each one;
 *   - a flood at a receiver without receives loses datagrams, as a fabric
 *     would, never blocks the sender, and the pair still talks after it;
 *   - datagrams sent right before the sender exits all arrive, as they
 *     would from a socket buffer (the ring outlives its writer). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUNDS 2000
#define SLEEPS 200
#define FLOOD 20000

static uint32_t size_of(int i)
{
	static const uint32_t sizes[] = { 1, 8, 63, 64, 65, 500, 1024, 4000, 4096 };

	return sizes[i % (int)(sizeof(sizes) / sizeof(sizes[0]))];
}

static struct ibv_ah *peer_ah(struct t_side *s)
{
	return CHECK_PTR(t_ah(s->e.pd, &s->theirs, false));
}

static void send_to(struct t_side *s, struct ibv_ah *ah, uint32_t len, uint8_t seed)
{
	struct t_ep *e = &s->e;

	t_fill(e->buf + 8192, len, seed);
	CHECK_OK(t_post_ud(e->qp, seed, e->buf + 8192, len, e->mr->lkey, ah, s->theirs.qpn,
			   0x11111111, IBV_SEND_SIGNALED));
}

static void expect_recv(struct t_side *s, struct ibv_wc *wc, uint32_t len, uint8_t seed)
{
	CHECK_STATUS(*wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc->opcode, IBV_WC_RECV);
	CHECK_EQ(wc->byte_len, len + 40);
	CHECK_EQ(wc->src_qp, s->theirs.qpn);
	CHECK_EQ(wc->slid, s->theirs.lid);
	CHECK(t_check_fill(s->e.buf + 40, len, seed));
}

/* Poll until one receive and every send so far completed. */
static void take_recv(struct t_side *s, uint32_t len, uint8_t seed, int *sends_left)
{
	bool got = false;
	uint64_t end = t_now_ms() + 5000;

	while (!got || *sends_left) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(s->e.cq, 1, &wc);

		CHECK(n >= 0);
		CHECK(t_now_ms() < end);
		if (!n)
			continue;
		if (wc.opcode == IBV_WC_SEND) {
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			(*sends_left)--;
			continue;
		}
		expect_recv(s, &wc, len, seed);
		got = true;
	}
}

/* The starter posts each datagram only once the other's receive is there. */
static void parent_pp(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);
	int sends = 0;
	FILE *maps;
	char line[512];
	bool ring = false;

	t_sync(s->fd);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(t_post_recv(s->e.qp, 0, s->e.buf, 40 + 4096, s->e.mr->lkey));
		t_sync(s->fd);                       /* the child's receive is posted */
		send_to(s, ah, size_of(i), (uint8_t)i);
		sends++;
		take_recv(s, size_of(i), (uint8_t)(i + 1), &sends);
	}
	CHECK_OK(ibv_destroy_ah(ah));
	/* the child's datagrams came through the ring it gave us */
	maps = fopen("/proc/self/maps", "r");
	CHECK(maps != NULL);
	while (fgets(line, sizeof(line), maps))
		ring |= strstr(line, "softverbs-ud") != NULL;
	fclose(maps);
	CHECK_EQ(ring, !t_transport_tcp());
}

static void child_pp(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);
	int sends = 0;

	t_sync(s->fd);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(t_post_recv(s->e.qp, 0, s->e.buf, 40 + 4096, s->e.mr->lkey));
		t_sync(s->fd);
		take_recv(s, size_of(i), (uint8_t)i, &sends);
		send_to(s, ah, size_of(i), (uint8_t)(i + 1));
		sends++;
	}
	while (sends) {                              /* the last send's completion */
		struct ibv_wc wc;

		if (ibv_poll_cq(s->e.cq, 1, &wc) == 1) {
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			sends--;
		}
	}
	CHECK_OK(ibv_destroy_ah(ah));
}

/* The child sleeps on its channel for each datagram; the parent waits for
 * the answer by polling. */
static void child_sleeps(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);

	for (int i = 0; i < SLEEPS; i++) {
		bool got = false;

		CHECK_OK(t_post_recv(s->e.qp, 0, s->e.buf, 40 + 4096, s->e.mr->lkey));
		CHECK_OK(ibv_req_notify_cq(s->e.cq, 0));
		t_sync(s->fd);
		while (!got) {                        /* armed: poll, then sleep */
			struct ibv_cq *cq;
			void *ctx;
			struct ibv_wc wc;
			int n = ibv_poll_cq(s->e.cq, 1, &wc);

			CHECK(n >= 0);
			if (n && wc.opcode == IBV_WC_SEND) {
				CHECK_STATUS(wc, IBV_WC_SUCCESS);
			} else if (n) {
				expect_recv(s, &wc, 32, (uint8_t)i);
				got = true;
			} else {
				CHECK_OK(ibv_get_cq_event(s->e.ch, &cq, &ctx));
				ibv_ack_cq_events(cq, 1);
				CHECK_OK(ibv_req_notify_cq(s->e.cq, 0));
			}
		}
		send_to(s, ah, 32, (uint8_t)(i + 1));
	}
	t_sync(s->fd);
	CHECK_OK(ibv_destroy_ah(ah));
}

static void parent_wakes(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);
	int sends = 0;

	for (int i = 0; i < SLEEPS; i++) {
		CHECK_OK(t_post_recv(s->e.qp, 0, s->e.buf, 40 + 4096, s->e.mr->lkey));
		t_sync(s->fd);
		if (i % 2)
			t_sleep_ms(1);                   /* let it fall asleep now and then */
		send_to(s, ah, 32, (uint8_t)i);
		sends++;
		take_recv(s, 32, (uint8_t)(i + 1), &sends);
	}
	t_sync(s->fd);
	CHECK_OK(ibv_destroy_ah(ah));
}

/* FLOOD datagrams at 16 receives: the rest are lost, the sends all succeed. */
static void child_flooded(struct t_side *s)
{
	int got = 0;
	uint64_t quiet;

	for (int i = 0; i < 16; i++)
		CHECK_OK(t_post_recv(s->e.qp, (uint64_t)i, s->e.buf + 40 + (size_t)i * 1100, 40 + 1024,
				     s->e.mr->lkey));
	t_sync(s->fd);
	t_sync(s->fd);                               /* the flood was sent */
	quiet = t_now_ms() + 300;
	while (t_now_ms() < quiet) {
		struct ibv_wc wc;

		if (ibv_poll_cq(s->e.cq, 1, &wc) == 1) {
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			CHECK_EQ(wc.byte_len, 1024 + 40);
			got++;
		}
	}
	CHECK_EQ(got, 16);
	child_pp(s);                                 /* and it still talks */
}

static void parent_floods(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);
	int done = 0, posted = 0;

	t_sync(s->fd);
	while (done < FLOOD) {
		struct ibv_wc wc[32];
		int n;

		while (posted < FLOOD && posted - done < 64) {
			send_to(s, ah, 1024, (uint8_t)posted);
			posted++;
		}
		n = ibv_poll_cq(s->e.cq, 32, wc);
		CHECK(n >= 0);
		for (int i = 0; i < n; i++)
			CHECK_STATUS(wc[i], IBV_WC_SUCCESS);
		done += n;
	}
	t_sync(s->fd);
	CHECK_OK(ibv_destroy_ah(ah));
	parent_pp(s);
}

#define LAST 64
#define WARM 50

/* The child sends LAST datagrams and exits at once; the parent, which was
 * polling (so the child's writes ring no doorbell) and then waits for the
 * exit without polling, takes them all afterwards.  A warm-up exchange
 * first, so that they go through the ring, not UDP while it is set up. */
static void child_sends_last(struct t_side *s)
{
	struct ibv_ah *ah = peer_ah(s);

	for (int i = 0; i < WARM; i++) {
		t_sync(s->fd);
		send_to(s, ah, 100, 200);
		CHECK_STATUS(t_wc(s->e.cq, 5000), IBV_WC_SUCCESS);
		t_sync(s->fd);
	}
	t_sync(s->fd);
	for (int i = 0; i < LAST; i++) {
		send_to(s, ah, 100, (uint8_t)i);
		CHECK_STATUS(t_wc(s->e.cq, 5000), IBV_WC_SUCCESS);
	}
	CHECK_OK(ibv_destroy_ah(ah));
}

static void parent_takes_last(struct t_side *s)
{
	uint64_t until;
	uint64_t seen = 0;
	int got = 0;

	for (int i = 0; i < WARM; i++) {
		CHECK_OK(t_post_recv(s->e.qp, 0, s->e.buf, 40 + 100, s->e.mr->lkey));
		t_sync(s->fd);
		CHECK_STATUS(t_wc(s->e.cq, 5000), IBV_WC_SUCCESS);
		t_sleep_ms(1);
		t_sync(s->fd);
	}
	for (int i = 0; i < LAST; i++)
		CHECK_OK(t_post_recv(s->e.qp, (uint64_t)i, s->e.buf + (size_t)i * 256, 40 + 100,
				     s->e.mr->lkey));
	until = t_now_ms() + 20;
	while (t_now_ms() < until) {                 /* a poller, as fi_pingpong's */
		struct ibv_wc wc;

		CHECK_EQ(ibv_poll_cq(s->e.cq, 1, &wc), 0);
	}
	t_sync(s->fd);
	CHECK_EQ(t_side_reap(s, 10000), 0);          /* gone before we look */
	until = t_now_ms() + 5000;
	while (got < LAST && t_now_ms() < until) {
		struct ibv_wc wc;
		uint8_t *p;

		if (ibv_poll_cq(s->e.cq, 1, &wc) != 1)
			continue;
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		p = s->e.buf + wc.wr_id * 256 + 40;
		CHECK(p[0] < LAST && !(seen & (1ull << p[0])));   /* each once (any order: UD) */
		CHECK(t_check_fill(p, 100, p[0]));
		seen |= 1ull << p[0];
		got++;
	}
	CHECK_EQ(got, LAST);
}

int main(int argc, char **argv)
{
	struct t_opts o, oc;
	int only = argc > 1 ? atoi(argv[1]) : 0;

	t_opts_default(&o, IBV_QPT_UD);
	o.qkey = 0x11111111;
	o.buf_len = 64 * 1024;
	o.max_send_wr = 128;
	o.max_recv_wr = 128;
	oc = o;
	if (!only || only == 1)
		CHECK_EQ(t_two_procs(&o, &o, 40, 30000, parent_pp, child_pp, NULL), 0);
	oc.own_channel = true;
	if (!only || only == 2)
		CHECK_EQ(t_two_procs(&o, &oc, 40, 30000, parent_wakes, child_sleeps, NULL), 0);
	if (!only || only == 3)
		CHECK_EQ(t_two_procs(&o, &o, 40, 30000, parent_floods, child_flooded, NULL), 0);
	if (!only || only == 4)
		CHECK_EQ(t_two_procs(&o, &o, 40, 30000, parent_takes_last, child_sends_last, NULL), 0);
	return 0;
}
