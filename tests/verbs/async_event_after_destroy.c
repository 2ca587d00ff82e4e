/* An async event raised for a QP but not yet gotten when the QP is destroyed
 * is discarded with it: ibv_get_async_event never hands out a pointer to a
 * destroyed QP (which the application could neither use nor ack; the kernel
 * uverbs layer drops such events on destroy). */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct t_ep a, b;
	struct ibv_async_event ev;

	t_alarm(10);
	t_ep_pair_srq(ctx, pd, srq, &a, &b);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(b.qp, &qa, IBV_QP_STATE));   /* raises LAST_WQE_REACHED */
	t_sleep_ms(100);

	struct ibv_qp *gone = b.qp;
	CHECK_OK(ibv_destroy_qp(b.qp));
	b.qp = NULL;
	while (t_async_event(ctx, &ev, 200)) {
		if (ev.element.qp == gone)
			T_FAIL("event %s delivered for a destroyed QP",
			       ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
