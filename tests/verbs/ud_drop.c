/* UD: a message with no receive posted, or with the wrong Q_Key, is dropped
 * silently; the next one with a receive arrives fine. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	struct ibv_ah *ah = t_pair_open_ud(&p, &o, false);

	/* no receive: the sender still completes successfully */
	t_fill(p.a.buf, 64, 1);
	CHECK_OK(t_post_ud(p.a.qp, 1, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_sleep_ms(100);
	t_no_wc(p.b.cq, 50);

	/* wrong Q_Key: dropped even though a receive is posted */
	CHECK_OK(t_post_recv(p.b.qp, 7, p.b.buf, 40 + 256, p.b.mr->lkey));
	CHECK_OK(t_post_ud(p.a.qp, 2, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey + 1,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_no_wc(p.b.cq, 150);

	/* the next good one takes the receive */
	t_fill(p.a.buf, 64, 2);
	CHECK_OK(t_post_ud(p.a.qp, 3, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.byte_len, 64 + 40);
	CHECK(t_check_fill(p.b.buf + 40, 64, 2));
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_RTS);

	CHECK_OK(ibv_destroy_ah(ah));
	t_pair_close(&p);
	return 0;
}
