/* An SRQ-attached QP moved to ERR raises IBV_EVENT_QP_LAST_WQE_REACHED for
 * that QP; the event is acked with ibv_ack_async_event. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct t_ep a, b;
	struct ibv_async_event ev;

	t_alarm(30);
	t_ep_pair_srq(ctx, pd, srq, &a, &b);
	CHECK_OK(t_post_srq_recv(srq, 1, b.buf, 64, b.mr->lkey));

	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(b.qp, &qa, IBV_QP_STATE));
	t_expect_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &ev, 5000);
	CHECK(ev.element.qp == b.qp);
	ibv_ack_async_event(&ev);
	/* the SRQ's receive is not flushed: it belongs to the SRQ, not the QP */
	t_no_wc(b.cq, 100);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
