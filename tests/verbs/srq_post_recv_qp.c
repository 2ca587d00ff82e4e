/* ibv_post_recv on a QP attached to an SRQ: EINVAL, *bad_wr = the first WR;
 * receives go to the SRQ, and a SEND consumes one from there. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct t_ep a, b;

	t_alarm(30);
	t_ep_pair_srq(ctx, pd, srq, &a, &b);

	struct ibv_sge sge = { (uintptr_t)b.buf, 64, b.mr->lkey };
	struct ibv_recv_wr w2 = { .wr_id = 2, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr w1 = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .next = &w2 };
	struct ibv_recv_wr *bad = NULL;
	CHECK_ERR(ibv_post_recv(b.qp, &w1, &bad), EINVAL);
	CHECK(bad == &w1);

	CHECK_OK(t_post_srq_recv(srq, 33, b.buf, 64, b.mr->lkey));
	t_fill(a.buf, 20, 9);
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 1, a.buf, 20, a.mr->lkey, IBV_SEND_SIGNALED));
	struct ibv_wc wc = t_wc(b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 33);
	CHECK_EQ(wc.qp_num, b.qp->qp_num);
	CHECK_EQ(wc.byte_len, 20);
	CHECK(t_check_fill(b.buf, 20, 9));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
