/* ibv_reg_mr with each access flag; keys and fields; invalid combinations. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	static uint8_t buf[8192];
	const int ok[] = {
		0,
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
		T_ALL_ACCESS,
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(pd, buf + 100, 5000, ok[i]));

		CHECK(mr->addr == buf + 100);
		CHECK_EQ(mr->length, 5000);
		CHECK(mr->pd == pd);
		CHECK(mr->context == ctx);
		if (ok[i] & T_ALL_REMOTE)
			CHECK_NE(mr->rkey, 0);
		CHECK_OK(ibv_dereg_mr(mr));
	}

	/* Keys are unique among live MRs, even over the same memory. */
	struct ibv_mr *m1 = CHECK_PTR(ibv_reg_mr(pd, buf, 4096, T_ALL_ACCESS));
	struct ibv_mr *m2 = CHECK_PTR(ibv_reg_mr(pd, buf, 4096, T_ALL_ACCESS));
	CHECK_NE(m1->lkey, m2->lkey);
	CHECK_NE(m1->rkey, m2->rkey);
	CHECK_OK(ibv_dereg_mr(m1));
	CHECK_OK(ibv_dereg_mr(m2));

	/* ibv_reg_mr(3): REMOTE_WRITE or REMOTE_ATOMIC need LOCAL_WRITE. */
	CHECK_NULL_ERRNO(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_ATOMIC), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_mr(pd, buf, 4096,
				    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ), EINVAL);

	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
