/* Large SENDs (SV_PULL_MIN and up) on the same host: placed by the
 * requester while it streams, pulled by the responder in a ping-pong
 * (engine/placed.c).  Every message lands in its own receive, in order and
 * whole, and completes once at each end, in order:
 *   1. one at a time with nothing heard from the peer in between (a
 *      stream, slowly): each is placed;
 *   2. a ping-pong (the peer answers each with a small SEND): pulled;
 *   3. a burst of more than the receive window (SV_MIRROR_N) with every
 *      receive posted first: one that passes the window may go pulled, and
 *      the ones after it wait for its ACK and are placed again, so at most
 *      one of the burst is pulled.
 * Over TCP (verbs_tcp_placed_large) every SEND travels, and where peers
 * do not map registered memory (verbs_cma_placed_large) every SEND is
 * pulled, none waits; the data checks are the same. */
#include "common.h"
#include "engine/engine.h"

#define SLOT (64u * 1024)
#define BURST 48
#define GUARD 0xee

static uint8_t seed_of(int i) { return (uint8_t)(7 * i + 3); }

static void post_big(struct t_ep *a, int i)
{
	t_fill(a->buf + (size_t)i * SLOT, SLOT, seed_of(i));
	CHECK_OK(t_post_send(a->qp, IBV_WR_SEND, i, a->buf + (size_t)i * SLOT, SLOT, a->mr->lkey,
			     IBV_SEND_SIGNALED));
}

static void post_slot(struct t_ep *b, int i)
{
	CHECK_OK(t_post_recv(b->qp, 1000 + i, b->buf + (size_t)i * SLOT, SLOT, b->mr->lkey));
}

static void check_recv(struct t_ep *b, int i)
{
	struct ibv_wc wc = t_wc(b->cq, 10000);

	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1000 + i);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, SLOT);
	if (!t_check_fill(b->buf + (size_t)i * SLOT, SLOT, seed_of(i)))
		T_FAIL("receive %d: its bytes are not message %d's", i, i);
}

static void check_sent(struct t_ep *a, uint64_t id)
{
	struct ibv_wc wc = t_wc(a->cq, 10000);

	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, id);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	const char *share = getenv("SOFTVERBS_MR_SHARE");
	bool none = t_transport_tcp() || (share && !strcmp(share, "0"));   /* none placed */
	uint64_t before;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = (size_t)(BURST + 1) * SLOT;
	o.max_send_wr = o.max_recv_wr = BURST + 8;
	o.cqe = 2 * (BURST + 8);
	t_pair_open(&p, &o);
	CHECK(BURST > SV_MIRROR_N && SLOT >= SV_PULL_MIN);

	/* 1: a slow stream, one at a time */
	memset(p.b.buf, GUARD, o.buf_len);
	for (int i = 0; i < 4; i++) {
		post_slot(&p.b, i);
		post_big(&p.a, i);
		check_sent(&p.a, (uint64_t)i);
		check_recv(&p.b, i);
	}
	CHECK_EQ(t_placed(p.a.qp), none ? 0 : 4);

	/* 2: a ping-pong: b answers each with 8 bytes into a's last slot */
	before = t_placed(p.a.qp);
	for (int i = 0; i < 4; i++) {
		uint8_t *ans = p.a.buf + (size_t)BURST * SLOT;

		memset(ans, 0, 8);
		CHECK_OK(t_post_recv(p.a.qp, 500 + i, ans, 8, p.a.mr->lkey));
		post_slot(&p.b, i);
		post_big(&p.a, i);
		check_sent(&p.a, (uint64_t)i);
		check_recv(&p.b, i);
		t_fill(p.b.buf + (size_t)BURST * SLOT, 8, (uint8_t)(100 + i));
		CHECK_OK(t_post_send(p.b.qp, IBV_WR_SEND, 600 + i, p.b.buf + (size_t)BURST * SLOT, 8,
				     p.b.mr->lkey, IBV_SEND_SIGNALED));
		check_sent(&p.b, 600 + (uint64_t)i);
		{
			struct ibv_wc wc = t_wc(p.a.cq, 10000);

			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			CHECK_EQ(wc.wr_id, 500 + (uint64_t)i);
			CHECK(t_check_fill(ans, 8, (uint8_t)(100 + i)));
		}
	}
	/* the first still streams (nothing heard since 1): placed; then pulled */
	CHECK_EQ(t_placed(p.a.qp) - before, none ? 0 : 1);

	/* 3: a burst past the window, every receive posted first */
	memset(p.b.buf, GUARD, o.buf_len);
	for (int i = 0; i < BURST; i++)
		post_slot(&p.b, i);
	before = t_placed(p.a.qp);
	for (int i = 0; i < BURST; i++)
		post_big(&p.a, i);
	for (int i = 0; i < BURST; i++)
		check_recv(&p.b, i);
	for (int i = 0; i < BURST; i++)
		check_sent(&p.a, (uint64_t)i);
	if (none)
		CHECK_EQ(t_placed(p.a.qp) - before, 0);
	else if (t_placed(p.a.qp) - before < BURST - 1)
		T_FAIL("the burst placed %llu of %d SENDs: the stream stayed pulled",
		       (unsigned long long)(t_placed(p.a.qp) - before), BURST);

	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_RTS);
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_RTS);
	t_pair_close(&p);
	return 0;
}
