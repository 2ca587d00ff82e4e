/* A NAK for one request acknowledges every request before it (the
 * responder executes in order): a SEND followed at once by an RDMA WRITE
 * with a bad rkey completes SUCCESS for the SEND, with its data delivered,
 * then REM_ACCESS_ERR for the WRITE. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	t_fill(p.a.buf, 256, 5);
	CHECK_OK(t_post_recv(p.b.qp, 10, p.b.buf, 256, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 256, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, p.a.buf, 64, p.a.mr->lkey,
			     (uintptr_t)p.b.buf + 1024, p.b.mr->rkey ^ 0x5500, IBV_SEND_SIGNALED));
	struct ibv_wc wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	wc = t_wc(p.b.cq, 5000);
	CHECK_EQ(wc.wr_id, 10);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf, 256, 5));
	t_pair_close(&p);
	return 0;
}
