/* A UD SEND larger than the path MTU (4096): the sender's completion is
 * IBV_WC_LOC_LEN_ERR, and nothing arrives. */
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
	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 40 + 8192, b.mr->lkey));

	CHECK_OK(t_post_ud(a.qp, 5, a.buf, 4097, a.mr->lkey, ah, ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	wc = t_wc(a.cq, 2000);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_STATUS(wc, IBV_WC_LOC_LEN_ERR);
	t_no_wc(b.cq, 200);

	CHECK_OK(ibv_destroy_ah(ah));
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
