/* ibv_post_send(3): RDMA_READ on a UC QP in the middle of a list: EINVAL,
 * *bad_wr = that WR; the one before it is sent, the one after is not. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_UC);
	t_pair_open(&p, &o);
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(p.b.qp, 100 + i, p.b.buf + 256 * i, 256, p.b.mr->lkey));

	struct ibv_sge sge = { (uintptr_t)p.a.buf, 16, p.a.mr->lkey };
	struct ibv_send_wr w[3], *bad = NULL;
	t_send_chain(w, 3, &sge, IBV_WR_SEND);
	w[1].opcode = IBV_WR_RDMA_READ;
	w[1].wr.rdma.remote_addr = p.ib.addr;
	w[1].wr.rdma.rkey = p.ib.rkey;
	CHECK_ERR(ibv_post_send(p.a.qp, w, &bad), EINVAL);
	CHECK(bad == &w[1]);

	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 100);
	t_no_wc(p.a.cq, 200);
	t_no_wc(p.b.cq, 10);

	/* Atomics are RC-only too. */
	CHECK_ERR(t_post_atomic(p.a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, p.a.buf, p.a.mr->lkey,
				p.ib.addr, p.ib.rkey, 1, 0), EINVAL);
	/* The QP is still usable. */
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 6, p.a.buf, 16, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_EQ(t_wc(p.a.cq, 2000).wr_id, 6);
	CHECK_EQ(t_wc(p.b.cq, 2000).wr_id, 101);
	t_pair_close(&p);
	return 0;
}
