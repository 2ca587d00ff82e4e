/* ATOMIC_FETCH_AND_ADD: returns the original value; memory updated (and
 * wraps modulo 2^64). */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	volatile uint64_t *target = (uint64_t *)(p.b.buf + 8);
	uint64_t *result = (uint64_t *)(p.a.buf + 16);
	*target = 100;

	for (int i = 0; i < 10; i++) {
		*result = 0;
		CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, i, result,
				       p.a.mr->lkey, p.ib.addr + 8, p.ib.rkey, 7, 0));
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_FETCH_ADD);
		CHECK_EQ(wc.wr_id, i);
		CHECK_EQ(*result, 100 + 7 * (uint64_t)i);
	}
	CHECK_EQ(*target, 170);

	*target = UINT64_MAX;
	CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 99, result, p.a.mr->lkey,
			       p.ib.addr + 8, p.ib.rkey, 2, 0));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_EQ(*result, UINT64_MAX);
	CHECK_EQ(*target, 1);
	t_pair_close(&p);
	return 0;
}
