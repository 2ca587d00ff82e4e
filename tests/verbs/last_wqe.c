/* An SRQ-attached QP moved to ERR raises IBV_EVENT_QP_LAST_WQE_REACHED for
 * that QP; the event is acked with ibv_ack_async_event. */
#include "common.h"

int main(void)
{
	struct t_srq_pair s;
	struct ibv_async_event ev;

	t_alarm(30);
	t_srq_pair_open(&s, 8);
	CHECK_OK(t_post_srq_recv(s.srq, 1, s.b.buf, 64, s.b.mr->lkey));

	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(s.b.qp, &qa, IBV_QP_STATE));
	t_expect_async(s.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &ev, 5000);
	CHECK(ev.element.qp == s.b.qp);
	ibv_ack_async_event(&ev);
	/* the SRQ's receive is not flushed: it belongs to the SRQ, not the QP */
	t_no_wc(s.b.cq, 100);

	t_srq_pair_close(&s);
	return 0;
}
