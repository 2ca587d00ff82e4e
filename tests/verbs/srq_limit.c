/* IBV_EVENT_SRQ_LIMIT_REACHED fires once the posted count drops below the
 * armed limit, and only once per arming. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct ibv_srq_attr sa = { .srq_limit = 4 };
	struct ibv_async_event ev;
	struct t_ep a, b;

	t_alarm(30);
	t_ep_pair_srq(ctx, pd, srq, &a, &b);

	for (int i = 0; i < 8; i++)
		CHECK_OK(t_post_srq_recv(srq, i, b.buf + 64 * i, 64, b.mr->lkey));
	CHECK_OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));

	/* 8 -> 4 posted: not below the limit yet. */
	for (int i = 0; i < 4; i++) {
		CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, i, a.buf, 8, a.mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
		struct ibv_wc wc = t_wc(b.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
	}
	CHECK(!t_async_event(ctx, &ev, 200));

	/* 4 -> 3: the event, naming the SRQ. */
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 4, a.buf, 8, a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_EQ(t_wc(b.cq, 2000).wr_id, 4);
	CHECK(t_async_event(ctx, &ev, 2000));
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == srq);
	ibv_ack_async_event(&ev);

	/* The limit disarmed itself: 3 -> 2 raises nothing more. */
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 5, a.buf, 8, a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_EQ(t_wc(b.cq, 2000).wr_id, 5);
	CHECK(!t_async_event(ctx, &ev, 200));
	memset(&sa, 0xff, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK_EQ(sa.srq_limit, 0);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
