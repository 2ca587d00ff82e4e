/* SENDs a same-host requester places in the receives its peer published
 * (engine/placed.c), and SENDs that travel, one after the other: every
 * message lands in its own receive, in order, with its length, immediate
 * and solicited bit, and nothing else of the receiver's memory changes.
 *   1. one at a time (nothing in flight: the requester places those of
 *      SV_PLACE_MIN bytes and more), of 0 to 1000 bytes, inline or not,
 *      with and without immediate;
 *   2. a burst of 40 against 4 receives posted at a time: most wait in
 *      the ring for their receive (RNR hold) while the others are placed;
 *   3. a receive whose first SGE is too small for the message: it travels
 *      and fills both SGEs;
 *   4. small SENDs one at a time into receives from number SV_PLACE_WARM
 *      on: placed whatever their size.
 * Over TCP (verbs_tcp_placed) every SEND travels; the results are the same.
 * The requester's status record counts the placed ones (after 1: four, the
 * small ones went to receives below SV_PLACE_WARM; 4 adds all of its). */
#include <arpa/inet.h>

#include "common.h"
#include "engine/engine.h"

#define SLOT 1024               /* each receive's part of the receiver's buffer */
#define BURST 40
#define GUARD 0xee

struct msg {
	uint32_t len;
	bool imm, inl, se;
};

static struct msg msg_of(int i)
{
	static const uint32_t lens[] = { 0, 1, 300, 64, 1000, 256, 33, 512 };

	return (struct msg){ .len = lens[i % 8], .imm = i % 3 == 1, .inl = i % 4 == 2 && lens[i % 8] <= 512,
			     .se = i % 5 == 3 };
}

static void post_recv(struct t_ep *b, int i)
{
	CHECK_OK(t_post_recv(b->qp, 1000 + i, b->buf + (size_t)i * SLOT, SLOT, b->mr->lkey));
}

static void post_msg(struct t_ep *a, int i)
{
	struct msg m = msg_of(i);
	struct ibv_sge sge = { (uintptr_t)(a->buf + (size_t)i * SLOT), m.len, a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = m.len ? 1 : 0,
				  .opcode = m.imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (m.imm)
		wr.imm_data = htonl(0x1000 + i);
	if (m.inl)
		wr.send_flags |= IBV_SEND_INLINE;
	if (m.se)
		wr.send_flags |= IBV_SEND_SOLICITED;
	t_fill(a->buf + (size_t)i * SLOT, m.len, i);
	CHECK_OK(ibv_post_send(a->qp, &wr, &bad));
}

/* Receive i's completion, its bytes and the untouched rest of its slot. */
static void check_recv(struct t_ep *b, int i)
{
	struct msg m = msg_of(i);
	struct ibv_wc wc = t_wc(b->cq, 5000);
	const uint8_t *slot = b->buf + (size_t)i * SLOT;

	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1000 + i);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, m.len);
	CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), m.imm);
	if (m.imm)
		CHECK_EQ(ntohl(wc.imm_data), 0x1000 + i);
	CHECK(t_check_fill(slot, m.len, i));
	for (uint32_t k = m.len; k < SLOT; k++)
		if (slot[k] != GUARD)
			T_FAIL("receive %d: byte %u of its slot changed", i, k);
}

static void check_sent(struct t_ep *a, int i)
{
	struct ibv_wc wc = t_wc(a->cq, 5000);

	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, i);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_sge two[2];
	struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = two, .num_sge = 2 }, *rbad;
	int next;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = (size_t)(BURST + 8) * SLOT;
	o.max_send_wr = o.max_recv_wr = BURST + 8;
	o.cqe = 2 * (BURST + 8);
	o.max_inline = 512;
	t_pair_open(&p, &o);
	memset(p.b.buf, GUARD, o.buf_len);

	/* 1: one at a time */
	for (int i = 0; i < 8; i++) {
		post_recv(&p.b, i);
		post_msg(&p.a, i);
		check_sent(&p.a, i);
		check_recv(&p.b, i);
	}

	/* ... of which those of 256 bytes and more were placed on the rings
	 * (four), none over TCP: as the requester's status record counts them */
	CHECK_EQ(t_placed(p.a.qp), t_transport_tcp() ? 0 : 4);

	/* 2: a burst against receives posted 4 at a time as they complete */
	memset(p.b.buf, GUARD, o.buf_len);
	for (next = 0; next < 4; next++)
		post_recv(&p.b, next);
	for (int i = 0; i < BURST; i++)
		post_msg(&p.a, i);
	for (int i = 0; i < BURST; i++) {
		check_recv(&p.b, i);
		if (i % 4 == 3)
			for (int k = 0; k < 4 && next < BURST; k++)
				post_recv(&p.b, next++);
	}
	for (int i = 0; i < BURST; i++)
		check_sent(&p.a, i);

	/* 3: a first SGE too small for the message */
	memset(p.b.buf, GUARD, o.buf_len);
	two[0] = (struct ibv_sge){ (uintptr_t)p.b.buf, 10, p.b.mr->lkey };
	two[1] = (struct ibv_sge){ (uintptr_t)p.b.buf + SLOT, SLOT, p.b.mr->lkey };
	CHECK_OK(ibv_post_recv(p.b.qp, &rwr, &rbad));
	t_fill(p.a.buf, 100, 9);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 5, p.a.buf, 100, p.a.mr->lkey, IBV_SEND_SIGNALED));
	{
		struct ibv_wc wc = t_wc(p.b.cq, 5000);
		uint8_t got[100];

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 77);
		CHECK_EQ(wc.byte_len, 100);
		memcpy(got, p.b.buf, 10);
		memcpy(got + 10, p.b.buf + SLOT, 90);
		CHECK(t_check_fill(got, 100, 9));
		CHECK_EQ(p.b.buf[10], GUARD);
	}
	check_sent(&p.a, 5);

	/* 4: receive 49 on, past SV_PLACE_WARM: small ones are placed too */
	{
		/* msg_of: 1 byte with immediate, 33 inline, 64 solicited, none */
		static const int small[] = { 1, 6, 3, 0 };
		uint64_t before = t_placed(p.a.qp);

		CHECK(BURST + 9 > SV_PLACE_WARM);
		memset(p.b.buf, GUARD, o.buf_len);
		for (int k = 0; k < 4; k++) {
			post_recv(&p.b, small[k]);
			post_msg(&p.a, small[k]);
			check_sent(&p.a, small[k]);
			check_recv(&p.b, small[k]);
		}
		CHECK_EQ(t_placed(p.a.qp) - before, t_transport_tcp() ? 0 : 4);
	}
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_RTS);
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_RTS);
	t_pair_close(&p);
	return 0;
}
