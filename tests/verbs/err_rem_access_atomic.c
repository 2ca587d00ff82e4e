/* An atomic on an MR registered without REMOTE_ATOMIC: IBV_WC_REM_ACCESS_ERR;
 * the target is unchanged. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	struct ibv_mr *na = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf + 8192, 4096,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ));
	volatile uint64_t *target = (uint64_t *)(p.b.buf + 8192);
	*target = 42;
	CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, p.a.buf, p.a.mr->lkey,
			       (uintptr_t)target, na->rkey, 1, 0));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	CHECK_EQ(*target, 42);
	CHECK_OK(ibv_dereg_mr(na));
	t_pair_close(&p);
	return 0;
}
