/* IBV_SEND_FENCE is accepted: a fenced WRITE after a READ of the same range
 * does not overtake it. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);

	t_fill(p.b.buf, 4096, 1);                 /* old remote contents */
	t_fill(p.a.buf + 8192, 4096, 2);          /* new contents to write */
	for (int round = 0; round < 20; round++) {
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 1, p.a.buf, 4096, p.a.mr->lkey,
				     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, p.a.buf + 8192, 4096,
				     p.a.mr->lkey, p.ib.addr, p.ib.rkey,
				     IBV_SEND_SIGNALED | IBV_SEND_FENCE));
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 1);
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 2);
		CHECK(t_check_fill(p.a.buf, 4096, 1));     /* the READ saw the old data */
		CHECK(t_check_fill(p.b.buf, 4096, 2));
		t_fill(p.b.buf, 4096, 1);                   /* reset for the next round */
	}
	t_pair_close(&p);
	return 0;
}
