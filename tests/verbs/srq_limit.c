/* IBV_EVENT_SRQ_LIMIT_REACHED fires once the posted count drops below the
 * armed limit, and only once per arming. */
#include "common.h"

int main(void)
{
	struct ibv_srq_attr sa = { .srq_limit = 4 };
	struct ibv_async_event ev;
	struct t_srq_pair s;

	t_alarm(30);
	t_srq_pair_open(&s, 16);

	for (int i = 0; i < 8; i++)
		CHECK_OK(t_post_srq_recv(s.srq, i, s.b.buf + 64 * i, 64, s.b.mr->lkey));
	CHECK_OK(ibv_modify_srq(s.srq, &sa, IBV_SRQ_LIMIT));

	/* 8 -> 4 posted: not below the limit yet. */
	for (int i = 0; i < 4; i++) {
		CHECK_OK(t_post_send(s.a.qp, IBV_WR_SEND, i, s.a.buf, 8, s.a.mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(s.a.cq, 2000), IBV_WC_SUCCESS);
		struct ibv_wc wc = t_wc(s.b.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
	}
	CHECK(!t_async_event(s.ctx, &ev, 200));

	/* 4 -> 3: the event, naming the SRQ. */
	CHECK_OK(t_post_send(s.a.qp, IBV_WR_SEND, 4, s.a.buf, 8, s.a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(s.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_EQ(t_wc(s.b.cq, 2000).wr_id, 4);
	CHECK(t_async_event(s.ctx, &ev, 2000));
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == s.srq);
	ibv_ack_async_event(&ev);

	/* The limit disarmed itself: 3 -> 2 raises nothing more. */
	CHECK_OK(t_post_send(s.a.qp, IBV_WR_SEND, 5, s.a.buf, 8, s.a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(s.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_EQ(t_wc(s.b.cq, 2000).wr_id, 5);
	CHECK(!t_async_event(s.ctx, &ev, 200));
	memset(&sa, 0xff, sizeof(sa));
	CHECK_OK(ibv_query_srq(s.srq, &sa));
	CHECK_EQ(sa.srq_limit, 0);

	t_srq_pair_close(&s);
	return 0;
}
