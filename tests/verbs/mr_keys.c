/* Keys carry random tag bits: the low 8 bits vary from one registration to
 * the next (never 0, never the slot's previous tag), ibv_rereg_mr gives a
 * new key when the memory moves (and keeps it for an access or PD change),
 * and a key guessed from a real one (key ^ 1, key + 1) fails with
 * IBV_WC_REM_ACCESS_ERR and leaves memory alone. */
#include "common.h"

static void tags_vary(struct ibv_pd *pd, uint8_t *buf)
{
	bool seen[256] = { false };
	uint32_t prev = 0;
	int distinct = 0;

	for (int i = 0; i < 200; i++) {
		struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(pd, buf, 4096, T_ALL_ACCESS));

		CHECK_EQ(mr->lkey, mr->rkey);
		CHECK_NE(mr->rkey & 0xff, 0);
		CHECK_NE(mr->rkey >> 8, 0);
		if (prev && (prev >> 8) == (mr->rkey >> 8))
			CHECK_NE(prev & 0xff, mr->rkey & 0xff);    /* same slot, new tag */
		if (!seen[mr->rkey & 0xff]) {
			seen[mr->rkey & 0xff] = true;
			distinct++;
		}
		prev = mr->rkey;
		CHECK_OK(ibv_dereg_mr(mr));
	}
	/* 200 draws from 255 values: a counter would give 200, a fixed tag 1 */
	CHECK(distinct > 80);
}

static void rereg_new_key(struct ibv_pd *pd, uint8_t *buf)
{
	struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(pd, buf, 4096, T_ALL_ACCESS));

	for (int i = 0; i < 20; i++) {
		uint32_t old = mr->rkey;

		CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, T_ALL_ACCESS));
		CHECK_EQ(mr->rkey, old);
		CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				      buf + (i & 1) * 2048, 2048, 0));
		CHECK_EQ(mr->lkey, mr->rkey);
		CHECK_EQ(mr->rkey >> 8, old >> 8);
		CHECK_NE(mr->rkey, old);
		CHECK_NE(mr->rkey & 0xff, 0);
	}
	CHECK_OK(ibv_dereg_mr(mr));
}

/* One guess per connection: the NAK takes both QPs to ERR. */
static void guess(enum ibv_wr_opcode op, uint32_t (*wrong)(uint32_t))
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	memset(p.a.buf, 0x5a, 4096);
	memset(p.b.buf, 0x3c, 4096);
	CHECK_OK(t_post_rdma(p.a.qp, op, 1, p.a.buf, 64, p.a.mr->lkey, p.ib.addr,
			     wrong(p.ib.rkey), IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 4096; i++) {
		CHECK_EQ(p.a.buf[i], 0x5a);
		CHECK_EQ(p.b.buf[i], 0x3c);
	}
	t_pair_close(&p);
}

static uint32_t flip(uint32_t k) { return k ^ 1; }
static uint32_t next(uint32_t k) { return k + 1; }

int main(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	static uint8_t buf[4096];

	t_alarm(30);
	ctx = t_open();
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	tags_vary(pd, buf);
	rereg_new_key(pd, buf);
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));

	guess(IBV_WR_RDMA_WRITE, flip);
	guess(IBV_WR_RDMA_WRITE, next);
	guess(IBV_WR_RDMA_READ, flip);
	guess(IBV_WR_RDMA_READ, next);
	return 0;
}
