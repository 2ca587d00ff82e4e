/* PD alloc/dealloc; dealloc is EBUSY while an MR uses the PD. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	static uint8_t buf[4096];
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_pd *pd2 = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_mr *mr;

	CHECK(pd != pd2);
	CHECK(pd->context == ctx);
	CHECK_OK(ibv_dealloc_pd(pd2));

	mr = CHECK_PTR(ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE));
	CHECK(mr->pd == pd);
	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
