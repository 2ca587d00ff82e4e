/* SRQ create / query / modify (limit) / destroy; EBUSY while a QP uses it. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_cq *cq = CHECK_PTR(ibv_create_cq(ctx, 16, NULL, NULL, 0));
	int magic;
	struct ibv_srq_init_attr si = { .srq_context = &magic,
					.attr = { .max_wr = 16, .max_sge = 2, .srq_limit = 0 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct ibv_srq_attr sa;
	struct ibv_device_attr da;

	CHECK(srq->srq_context == &magic);
	CHECK(srq->pd == pd);
	CHECK(si.attr.max_wr >= 16);
	CHECK(si.attr.max_sge >= 2);

	memset(&sa, 0xff, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK(sa.max_wr >= 16);
	CHECK(sa.max_sge >= 2);
	CHECK_EQ(sa.srq_limit, 0);

	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 5;
	CHECK_OK(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT));
	memset(&sa, 0, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK_EQ(sa.srq_limit, 5);
	/* A limit above the SRQ's size is EINVAL and changes nothing. */
	sa.srq_limit = sa.max_wr + 1;
	CHECK_ERR(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL);
	memset(&sa, 0, sizeof(sa));
	CHECK_OK(ibv_query_srq(srq, &sa));
	CHECK_EQ(sa.srq_limit, 5);

	/* Too big at creation: EINVAL. */
	CHECK_OK(ibv_query_device(ctx, &da));
	struct ibv_srq_init_attr big = { .attr = { .max_wr = da.max_srq_wr + 1, .max_sge = 1 } };
	CHECK_NULL_ERRNO(ibv_create_srq(pd, &big), EINVAL);

	/* In use by a QP: EBUSY. */
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &ia));
	CHECK(qp->srq == srq);
	CHECK_ERR(ibv_destroy_srq(srq), EBUSY);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
