/* CQ create / poll empty / destroy; size limits. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_device_attr da;
	struct ibv_wc wc[4];
	int magic;

	CHECK_OK(ibv_query_device(ctx, &da));
	struct ibv_cq *cq = CHECK_PTR(ibv_create_cq(ctx, 10, &magic, NULL, 0));
	CHECK(cq->cqe >= 10);
	CHECK(cq->cq_context == &magic);
	CHECK(cq->context == ctx);
	CHECK_EQ(ibv_poll_cq(cq, 4, wc), 0);
	CHECK_OK(ibv_destroy_cq(cq));

	cq = CHECK_PTR(ibv_create_cq(ctx, da.max_cqe, NULL, NULL, 0));
	CHECK(cq->cqe >= da.max_cqe);
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_NULL_ERRNO(ibv_create_cq(ctx, da.max_cqe + 1, NULL, NULL, 0), EINVAL);
	CHECK_NULL_ERRNO(ibv_create_cq(ctx, 0, NULL, NULL, 0), EINVAL);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
