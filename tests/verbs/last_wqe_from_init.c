/* IBV_EVENT_QP_LAST_WQE_REACHED is raised for an SRQ-attached QP that enters
 * the error state from any state, including one that never reached RTR
 * (INIT -> ERR): the IB spec's Last WQE Reached event is tied to the QP
 * entering Error, not to it having connected. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = CHECK_PTR(ibv_create_cq(ctx, 8, NULL, NULL, 0));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct ibv_async_event ev;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};

	t_alarm(30);
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &ia));
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS));
	a.qp_state = IBV_QPS_ERR;
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE));
	t_expect_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &ev, 2000);
	CHECK(ev.element.qp == qp);
	ibv_ack_async_event(&ev);

	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
