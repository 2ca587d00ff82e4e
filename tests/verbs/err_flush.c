/* After an error completion the QP is in ERR and every other outstanding WR
 * completes with IBV_WC_WR_FLUSH_ERR, in order: the 3 sends behind the
 * failing one, the posted receives, and WRs posted to the ERR QP later. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_recv(p.a.qp, 100 + i, p.a.buf + 1024 * i, 1024, p.a.mr->lkey));

	/* failing WRITE (bad rkey), then 3 more behind it */
	struct ibv_sge sge = { (uintptr_t)p.a.buf, 64, p.a.mr->lkey };
	struct ibv_send_wr w[4], *bad;
	t_send_chain(w, 4, &sge, IBV_WR_RDMA_WRITE);
	for (int i = 0; i < 4; i++) {
		w[i].wr.rdma.remote_addr = p.ib.addr;
		w[i].wr.rdma.rkey = p.ib.rkey;
	}
	w[0].wr.rdma.rkey ^= 0x00888800u;
	w[2].opcode = IBV_WR_SEND;
	CHECK_OK(ibv_post_send(p.a.qp, w, &bad));

	/* send and receive completions share the CQ: sort them out */
	int next_send = 1, next_recv = 100;
	for (int n = 0; n < 7; n++) {
		wc = t_wc(p.a.cq, 5000);
		CHECK_EQ(wc.qp_num, p.a.qp->qp_num);
		if (wc.wr_id < 100) {
			CHECK_EQ(wc.wr_id, next_send);
			CHECK_STATUS(wc, next_send == 1 ? IBV_WC_REM_ACCESS_ERR
							 : IBV_WC_WR_FLUSH_ERR);
			next_send++;
		} else {
			CHECK_EQ(wc.wr_id, next_recv);
			CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
			next_recv++;
		}
	}
	CHECK_EQ(next_send, 5);
	CHECK_EQ(next_recv, 103);
	t_no_wc(p.a.cq, 50);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);

	/* posting to an ERR QP succeeds and flushes */
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 10, p.a.buf, 8, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 2000);
	CHECK_EQ(wc.wr_id, 10);
	CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	CHECK_OK(t_post_recv(p.a.qp, 11, p.a.buf, 8, p.a.mr->lkey));
	wc = t_wc(p.a.cq, 2000);
	CHECK_EQ(wc.wr_id, 11);
	CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);

	/* modify to ERR by hand flushes the peer's receives too */
	CHECK_OK(t_post_recv(p.b.qp, 20, p.b.buf, 8, p.b.mr->lkey));
	CHECK_OK(t_post_recv(p.b.qp, 21, p.b.buf, 8, p.b.mr->lkey));
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	CHECK_OK(ibv_modify_qp(p.b.qp, &qa, IBV_QP_STATE));
	for (int i = 0; i < 2; i++) {
		wc = t_wc(p.b.cq, 2000);
		CHECK_EQ(wc.wr_id, 20 + i);
		CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	}
	t_pair_close(&p);
	return 0;
}
