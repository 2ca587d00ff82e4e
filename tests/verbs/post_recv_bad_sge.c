/* ibv_post_recv(3): a list whose 2nd WR has too many SGEs returns EINVAL with
 * *bad_wr = the 2nd; the 1st stays posted and the 3rd is not. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.max_recv_sge = 2;
	t_pair_open(&p, &o);
	CHECK_OK(ibv_query_qp(p.b.qp, &qa, IBV_QP_CAP, &qi));
	int nsge = (int)qi.cap.max_recv_sge + 1;
	CHECK(nsge <= 64);

	struct ibv_sge one = { (uintptr_t)p.b.buf, 256, p.b.mr->lkey };
	struct ibv_sge many[64];
	for (int i = 0; i < nsge; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)p.b.buf + 1024 + 16 * i, 16, p.b.mr->lkey };
	struct ibv_recv_wr w[3] = {
		{ .wr_id = 1, .sg_list = &one, .num_sge = 1, .next = &w[1] },
		{ .wr_id = 2, .sg_list = many, .num_sge = nsge, .next = &w[2] },
		{ .wr_id = 3, .sg_list = &one, .num_sge = 1, .next = NULL },
	};
	struct ibv_recv_wr *bad = NULL;
	CHECK_ERR(ibv_post_recv(p.b.qp, w, &bad), EINVAL);
	CHECK(bad == &w[1]);

	/* The 1st is posted: a SEND lands in it. */
	t_fill(p.a.buf, 100, 3);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 10, p.a.buf, 100, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.byte_len, 100);
	CHECK(t_check_fill(p.b.buf, 100, 3));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);

	/* The 3rd is not: the next SEND takes a receive posted now. */
	CHECK_OK(t_post_recv(p.b.qp, 99, p.b.buf, 256, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 11, p.a.buf, 10, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 99);
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_no_wc(p.b.cq, 50);
	t_pair_close(&p);
	return 0;
}
