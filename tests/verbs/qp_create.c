/* ibv_create_qp for RC, UC and UD: number, type, state RESET, capabilities. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *scq = CHECK_PTR(ibv_create_cq(ctx, 64, NULL, NULL, 0));
	struct ibv_cq *rcq = CHECK_PTR(ibv_create_cq(ctx, 64, NULL, NULL, 0));
	const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct ibv_qp *qps[3];
	struct ibv_device_attr da;

	CHECK_OK(ibv_query_device(ctx, &da));
	for (int i = 0; i < 3; i++) {
		struct ibv_qp_init_attr ia = {
			.qp_context = &qps[i], .send_cq = scq, .recv_cq = rcq,
			.qp_type = types[i], .sq_sig_all = 1,
			.cap = { .max_send_wr = 10, .max_recv_wr = 20, .max_send_sge = 2,
				 .max_recv_sge = 3, .max_inline_data = 64 },
		};
		struct ibv_qp_init_attr qi;
		struct ibv_qp_attr qa;
		struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &ia));

		qps[i] = qp;
		/* create_qp updates cap with the actual values */
		CHECK(ia.cap.max_send_wr >= 10);
		CHECK(ia.cap.max_recv_wr >= 20);
		CHECK(ia.cap.max_send_sge >= 2);
		CHECK(ia.cap.max_recv_sge >= 3);
		CHECK(ia.cap.max_inline_data >= 64);
		CHECK_NE(qp->qp_num, 0);
		CHECK_EQ(qp->qp_num & ~0xffffffu, 0);
		CHECK_EQ(qp->qp_type, types[i]);
		CHECK_EQ(qp->state, IBV_QPS_RESET);
		CHECK(qp->pd == pd);
		CHECK(qp->send_cq == scq && qp->recv_cq == rcq);
		CHECK(qp->qp_context == &qps[i]);
		for (int j = 0; j < i; j++)
			CHECK_NE(qp->qp_num, qps[j]->qp_num);

		memset(&qi, 0, sizeof(qi));
		memset(&qa, 0xff, sizeof(qa));
		CHECK_OK(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qi));
		CHECK_EQ(qa.qp_state, IBV_QPS_RESET);
		CHECK_EQ(qi.qp_type, types[i]);
		CHECK_EQ(qi.sq_sig_all, 1);
		CHECK(qi.send_cq == scq && qi.recv_cq == rcq);
		CHECK_EQ(qi.cap.max_send_wr, ia.cap.max_send_wr);
		CHECK_EQ(qi.cap.max_recv_wr, ia.cap.max_recv_wr);
		CHECK_EQ(qi.cap.max_send_sge, ia.cap.max_send_sge);
		CHECK_EQ(qi.cap.max_recv_sge, ia.cap.max_recv_sge);
		CHECK_EQ(qa.cap.max_send_wr, ia.cap.max_send_wr);
		CHECK_EQ(qa.cap.max_inline_data, ia.cap.max_inline_data);
	}

	/* Over the device limits: EINVAL. */
	struct ibv_qp_init_attr big = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = da.max_qp_wr + 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	CHECK_NULL_ERRNO(ibv_create_qp(pd, &big), EINVAL);
	big.cap.max_send_wr = 1;
	big.cap.max_send_sge = da.max_sge + 1;
	CHECK_NULL_ERRNO(ibv_create_qp(pd, &big), EINVAL);

	for (int i = 0; i < 3; i++)
		CHECK_OK(ibv_destroy_qp(qps[i]));
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
