/* ibv_create_ah by LID and by GID; ibv_destroy_ah; invalid port. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_port_attr pa;
	struct ibv_ah_attr a;
	union ibv_gid gid;

	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_OK(ibv_query_gid(ctx, 1, 0, &gid));

	memset(&a, 0, sizeof(a));
	a.dlid = pa.lid;
	a.port_num = 1;
	struct ibv_ah *ah1 = CHECK_PTR(ibv_create_ah(pd, &a));
	CHECK(ah1->pd == pd);
	CHECK(ah1->context == ctx);

	a.is_global = 1;
	a.grh.dgid = gid;
	a.grh.hop_limit = 1;
	struct ibv_ah *ah2 = CHECK_PTR(ibv_create_ah(pd, &a));
	CHECK(ah2 != ah1);

	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);

	memset(&a, 0, sizeof(a));
	a.dlid = pa.lid;
	a.port_num = 2;
	CHECK_NULL_ERRNO(ibv_create_ah(pd, &a), EINVAL);

	CHECK_OK(ibv_destroy_ah(ah1));
	CHECK_OK(ibv_destroy_ah(ah2));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
