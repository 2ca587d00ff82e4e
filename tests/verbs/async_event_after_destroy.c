/* An async event raised for a QP but not yet gotten when the QP is destroyed
 * is discarded with it: ibv_get_async_event never hands out a pointer to a
 * destroyed QP (which the application could neither use nor ack; the kernel
 * uverbs layer drops such events on destroy). */
#include "common.h"

int main(void)
{
	struct t_srq_pair s;
	struct ibv_async_event ev;

	t_alarm(10);
	t_srq_pair_open(&s, 8);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(s.b.qp, &qa, IBV_QP_STATE));   /* raises LAST_WQE_REACHED */
	t_sleep_ms(100);

	struct ibv_qp *gone = s.b.qp;
	CHECK_OK(ibv_destroy_qp(s.b.qp));
	s.b.qp = NULL;
	while (t_async_event(s.ctx, &ev, 200)) {
		if (ev.element.qp == gone)
			T_FAIL("event %s delivered for a destroyed QP",
			       ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}

	t_srq_pair_close(&s);
	return 0;
}
