/* A UD SEND larger than the path MTU (4096): the sender's completion is
 * IBV_WC_LOC_LEN_ERR, and nothing arrives. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	struct ibv_ah *ah = t_pair_open_ud(&p, &o, false);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 40 + 8192, p.b.mr->lkey));

	CHECK_OK(t_post_ud(p.a.qp, 5, p.a.buf, 4097, p.a.mr->lkey, ah, p.ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_STATUS(wc, IBV_WC_LOC_LEN_ERR);
	t_no_wc(p.b.cq, 200);

	CHECK_OK(ibv_destroy_ah(ah));
	t_pair_close(&p);
	return 0;
}
