/* ibv_post_recv on a QP attached to an SRQ: EINVAL, *bad_wr = the first WR;
 * receives go to the SRQ, and a SEND consumes one from there, scattering
 * into as many SGEs as the SRQ's receives have. */
#include "common.h"

int main(void)
{
	struct t_srq_pair s;

	t_alarm(30);
	t_srq_pair_open(&s, 8);

	struct ibv_sge sge = { (uintptr_t)s.b.buf, 64, s.b.mr->lkey };
	struct ibv_recv_wr w2 = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr w1 = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .next = &w2 };
	struct ibv_recv_wr *bad = NULL;
	CHECK_ERR(ibv_post_recv(s.b.qp, &w1, &bad), EINVAL);
	CHECK(bad == &w1);

	CHECK_OK(t_post_srq_recv(s.srq, 33, s.b.buf, 64, s.b.mr->lkey));
	t_fill(s.a.buf, 20, 9);
	CHECK_OK(t_post_send(s.a.qp, IBV_WR_SEND, 1, s.a.buf, 20, s.a.mr->lkey, IBV_SEND_SIGNALED));
	struct ibv_wc wc = t_wc(s.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 33);
	CHECK_EQ(wc.qp_num, s.b.qp->qp_num);
	CHECK_EQ(wc.byte_len, 20);
	CHECK(t_check_fill(s.b.buf, 20, 9));
	CHECK_STATUS(t_wc(s.a.cq, 2000), IBV_WC_SUCCESS);

	/* A receive of the SRQ's every SGE, 3 bytes each 16 apart, taken by a
	 * QP made with one receive SGE: the SEND scatters into all of them. */
	struct ibv_srq_attr sa;
	CHECK_OK(ibv_query_srq(s.srq, &sa));
	CHECK(sa.max_sge > 1 && sa.max_sge <= 64);
	struct ibv_sge sges[64];
	for (uint32_t i = 0; i < sa.max_sge; i++)
		sges[i] = (struct ibv_sge){ (uintptr_t)s.b.buf + 256 + 16 * i, 3, s.b.mr->lkey };
	struct ibv_recv_wr w3 = { .wr_id = 34, .sg_list = sges, .num_sge = (int)sa.max_sge };
	CHECK_OK(ibv_post_srq_recv(s.srq, &w3, &bad));
	t_fill(s.a.buf, 3 * sa.max_sge, 5);
	CHECK_OK(t_post_send(s.a.qp, IBV_WR_SEND, 2, s.a.buf, 3 * sa.max_sge, s.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(s.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 34);
	CHECK_EQ(wc.byte_len, 3 * sa.max_sge);
	for (uint32_t i = 0; i < sa.max_sge; i++)
		CHECK(memcmp(s.b.buf + 256 + 16 * i, s.a.buf + 3 * i, 3) == 0);
	CHECK_STATUS(t_wc(s.a.cq, 2000), IBV_WC_SUCCESS);

	t_srq_pair_close(&s);
	return 0;
}
