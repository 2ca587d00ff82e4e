/* An atomic on an address that is not 8-byte aligned:
 * IBV_WC_REM_INV_REQ_ERR; memory unchanged. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	memset(p.b.buf, 0x3c, 64);
	CHECK_OK(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, p.a.buf, p.a.mr->lkey,
			       p.ib.addr + 4, p.ib.rkey, 1, 0));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(p.b.buf[i], 0x3c);
	t_pair_close(&p);
	return 0;
}
