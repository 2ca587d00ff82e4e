/* Only signaled WRs complete; sq_sig_all makes every WR signaled. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);

	for (int i = 0; i < 10; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, i, p.a.buf, 8, p.a.mr->lkey,
				     p.ib.addr, p.ib.rkey, i % 3 == 2 ? IBV_SEND_SIGNALED : 0));
	for (int i = 2; i < 10; i += 3) {
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
	}
	t_no_wc(p.a.cq, 200);

	/* Unsignaled SENDs still consume receives and complete there. */
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(p.b.qp, 50 + i, p.b.buf, 64, p.b.mr->lkey));
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 20 + i, p.a.buf, 8, p.a.mr->lkey, 0));
	for (int i = 0; i < 3; i++)
		CHECK_EQ(t_wc(p.b.cq, 2000).wr_id, 50 + i);
	t_no_wc(p.a.cq, 100);
	t_pair_close(&p);

	/* sq_sig_all = 1 */
	o.sq_sig_all = 1;
	t_pair_open(&p, &o);
	for (int i = 0; i < 4; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, i, p.a.buf, 8, p.a.mr->lkey,
				     p.ib.addr, p.ib.rkey, 0));
	for (int i = 0; i < 4; i++) {
		wc = t_wc(p.a.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
	}
	t_no_wc(p.a.cq, 100);
	t_pair_close(&p);
	return 0;
}
