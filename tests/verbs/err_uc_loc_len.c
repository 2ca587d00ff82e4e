/* UC SEND into a receive buffer too small: the receiver's completion is
 * IBV_WC_LOC_LEN_ERR; UC has no acknowledgement, so the sender's completes
 * successfully. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_UC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 16, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 100, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_LOC_LEN_ERR);
	t_pair_close(&p);
	return 0;
}
