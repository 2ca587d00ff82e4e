/* A stream of small messages with many in flight (what ib_write_bw -s 8
 * does): 20,000 8-byte RDMA WRITEs, then SENDs, 128 outstanding, one in 16
 * signaled.  Every one must be acknowledged and the last data must land:
 * frames that arrive together and sit in the receiver's staging buffer must
 * not be forgotten when it stops to be fair to other channels. */
#include "common.h"

#define TOTAL 20000
#define DEPTH 128
#define EVERY 16

static void stream(struct t_pair *p, enum ibv_wr_opcode op)
{
	uint64_t posted = 0, done = 0;
	uint8_t *src = p->a.buf, *dst = p->b.buf;

	while (done < TOTAL) {
		while (posted < TOTAL && posted - done < DEPTH) {
			int sig = (posted + 1) % EVERY == 0 || posted + 1 == TOTAL ?
				  IBV_SEND_SIGNALED : 0;

			memcpy(src + (posted % 64) * 8, &posted, 8);
			if (op == IBV_WR_SEND)
				CHECK_OK(t_post_recv(p->b.qp, posted, dst + 4096 + (posted % 64) * 8, 8,
						     p->b.mr->lkey));
			CHECK_OK(t_post_rdma(p->a.qp, op, posted, src + (posted % 64) * 8, 8,
					     p->a.mr->lkey, (uintptr_t)dst + (posted % 64) * 8,
					     p->b.mr->rkey, sig | IBV_SEND_INLINE));
			posted++;
		}
		struct ibv_wc wc = t_wc(p->a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		done = wc.wr_id + 1;
		if (op == IBV_WR_SEND) {
			/* drain the receiver's completions as we go */
			struct ibv_wc rw[64];

			while (ibv_poll_cq(p->b.cq, 64, rw) > 0)
				;
		}
	}
	if (op == IBV_WR_RDMA_WRITE) {
		uint64_t last;

		memcpy(&last, dst + ((TOTAL - 1) % 64) * 8, 8);
		CHECK_EQ(last, TOTAL - 1);
	}
}

/* The burst case: 200 WRITEs sent to a peer QP still in INIT wait in its
 * paused channel; when it reaches RTR they are read in one go, so most of
 * them are staged at once, and every one must still be executed and acked. */
static void burst_before_rtr(const struct t_opts *o)
{
	struct ibv_context *ctx = t_open();
	struct t_ep a, b;
	struct t_info ia, ib;
	uint8_t *dst;

	t_ep_create(&a, ctx, o);
	t_ep_create(&b, ctx, o);
	t_ep_info(&a, &ia);
	t_ep_info(&b, &ib);
	CHECK_OK(t_to_init(b.qp, o));                   /* b stays in INIT for now */
	t_ep_connect(&a, o, &ib);
	for (uint64_t i = 0; i < 200; i++) {
		memcpy(a.buf + i * 8, &i, 8);
		CHECK_OK(t_post_rdma(a.qp, IBV_WR_RDMA_WRITE, i, a.buf + i * 8, 8, a.mr->lkey,
				     (uintptr_t)b.buf + i * 8, b.mr->rkey,
				     IBV_SEND_INLINE | (i == 199 ? IBV_SEND_SIGNALED : 0)));
	}
	t_sleep_ms(50);                                  /* the frames pile up */
	CHECK_OK(t_to_rtr(b.qp, o, &ia));
	CHECK_OK(t_to_rts(b.qp, o, ib.psn));
	CHECK_STATUS(t_wc(a.cq, 5000), IBV_WC_SUCCESS);
	dst = b.buf;
	for (uint64_t i = 0; i < 200; i++) {
		uint64_t v;

		memcpy(&v, dst + i * 8, 8);
		CHECK_EQ(v, i);
	}
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.max_send_wr = DEPTH;
	o.max_recv_wr = DEPTH * 2;
	o.cqe = 4 * DEPTH;
	o.max_inline = 64;
	t_pair_open(&p, &o);
	stream(&p, IBV_WR_RDMA_WRITE);
	stream(&p, IBV_WR_SEND);
	t_pair_close(&p);
	o.max_send_wr = 256;
	burst_before_rtr(&o);
	return 0;
}
