/* More completions than the CQ holds: IBV_EVENT_CQ_ERR on the async fd. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_async_event ev;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.cqe = 4;
	o.max_send_wr = 64;
	t_pair_open(&p, &o);
	int n = p.a.cq->cqe + 4;
	CHECK(n <= 64);

	for (int i = 0; i < n; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, i, p.a.buf, 8, p.a.mr->lkey,
				     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	t_expect_async(p.ctx, IBV_EVENT_CQ_ERR, &ev, 5000);
	CHECK(ev.element.cq == p.a.cq);
	ibv_ack_async_event(&ev);
	t_pair_close(&p);
	return 0;
}
