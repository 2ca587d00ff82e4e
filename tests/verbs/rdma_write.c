/* RDMA WRITE: data lands at the remote address, no receive is consumed,
 * nothing outside the range changes. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 77, p.b.buf, 64, p.b.mr->lkey));

	memset(p.b.buf, 0x11, p.b.len);
	t_fill(p.a.buf, 20000, 6);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 1, p.a.buf, 20000, p.a.mr->lkey,
			     p.ib.addr + 1000, p.ib.rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
	CHECK(t_check_fill(p.b.buf + 1000, 20000, 6));
	for (size_t i = 0; i < 1000; i++)
		CHECK_EQ(p.b.buf[i], 0x11);
	for (size_t i = 21000; i < p.b.len; i++)
		CHECK_EQ(p.b.buf[i], 0x11);
	/* The responder's receive queue is untouched. */
	t_no_wc(p.b.cq, 100);

	/* Zero-length WRITE completes too. */
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, p.a.buf, 0, p.a.mr->lkey,
			     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_pair_close(&p);
	return 0;
}
