/* UD: a message with no receive posted, or with the wrong Q_Key, is dropped
 * silently; the next one with a receive arrives fine. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ib;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_UD);
	t_ep_create(&a, ctx, &o);
	t_ep_create(&b, ctx, &o);
	t_ep_connect(&a, &o, NULL);
	t_ep_connect(&b, &o, NULL);
	t_ep_info(&b, &ib);
	struct ibv_ah *ah = t_ah(a.pd, &ib, false);

	/* no receive: the sender still completes successfully */
	t_fill(a.buf, 64, 1);
	CHECK_OK(t_post_ud(a.qp, 1, a.buf, 64, a.mr->lkey, ah, ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	t_sleep_ms(100);
	t_no_wc(b.cq, 50);

	/* wrong Q_Key: dropped even though a receive is posted */
	CHECK_OK(t_post_recv(b.qp, 7, b.buf, 40 + 256, b.mr->lkey));
	CHECK_OK(t_post_ud(a.qp, 2, a.buf, 64, a.mr->lkey, ah, ib.qpn, o.qkey + 1,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	t_no_wc(b.cq, 150);

	/* the next good one takes the receive */
	t_fill(a.buf, 64, 2);
	CHECK_OK(t_post_ud(a.qp, 3, a.buf, 64, a.mr->lkey, ah, ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.byte_len, 64 + 40);
	CHECK(t_check_fill(b.buf + 40, 64, 2));
	CHECK_EQ(t_qp_state(b.qp), IBV_QPS_RTS);

	CHECK_OK(ibv_destroy_ah(ah));
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
