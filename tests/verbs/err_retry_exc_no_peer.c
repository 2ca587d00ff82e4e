/* An RC QP whose destination QP does not exist (destroyed before the
 * connection was ever made): with timeout = 10 and retry_cnt = 2 its SENDs
 * complete with IBV_WC_RETRY_EXC_ERR (the first) and IBV_WC_WR_FLUSH_ERR (the
 * rest) within a bound; no posted WR is left without a completion. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ib;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;
	o.retry_cnt = 2;
	t_ep_create(&a, ctx, &o);
	t_ep_create(&b, ctx, &o);
	t_ep_info(&b, &ib);
	CHECK_OK(ibv_destroy_qp(b.qp));
	b.qp = NULL;
	t_ep_connect(&a, &o, &ib);

	uint64_t t0 = t_now_ms();
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 1 + i, a.buf, 64, a.mr->lkey,
				     IBV_SEND_SIGNALED));
	wc = t_wc(a.cq, 10000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	for (int i = 1; i < 3; i++) {
		wc = t_wc(a.cq, 2000);
		CHECK_EQ(wc.wr_id, 1 + i);
		CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	}
	fprintf(stderr, "completed after %llu ms\n", (unsigned long long)(t_now_ms() - t0));
	CHECK_EQ(t_qp_state(a.qp), IBV_QPS_ERR);
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
