/* ATOMIC_CMP_AND_SWP: returns the original value; swaps only on a match. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	volatile uint64_t *target = (uint64_t *)(p.b.buf + 64);
	uint64_t *result = (uint64_t *)p.a.buf;
	*target = 0x1111222233334444ull;

	/* match: swapped */
	*result = 0;
	CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 1, result, p.a.mr->lkey,
			       p.ib.addr + 64, p.ib.rkey, 0x1111222233334444ull,
			       0xaaaabbbbccccddddull));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(*result, 0x1111222233334444ull);
	CHECK_EQ(*target, 0xaaaabbbbccccddddull);

	/* mismatch: unchanged, original returned */
	*result = 0;
	CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 2, result, p.a.mr->lkey,
			       p.ib.addr + 64, p.ib.rkey, 5, 6));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(*result, 0xaaaabbbbccccddddull);
	CHECK_EQ(*target, 0xaaaabbbbccccddddull);
	t_no_wc(p.b.cq, 20);
	t_pair_close(&p);
	return 0;
}
