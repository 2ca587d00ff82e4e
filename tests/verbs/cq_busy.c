/* ibv_destroy_cq is EBUSY while a QP uses the CQ; a channel while a CQ uses it. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_comp_channel *ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	struct ibv_cq *scq = CHECK_PTR(ibv_create_cq(ctx, 16, NULL, ch, 0));
	struct ibv_cq *rcq = CHECK_PTR(ibv_create_cq(ctx, 16, NULL, NULL, 0));
	struct ibv_qp_init_attr ia = {
		.send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = CHECK_PTR(ibv_create_qp(pd, &ia));

	CHECK_ERR(ibv_destroy_cq(scq), EBUSY);
	CHECK_ERR(ibv_destroy_cq(rcq), EBUSY);
	CHECK_ERR(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_ERR(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_OK(ibv_destroy_cq(scq));
	CHECK_OK(ibv_destroy_cq(rcq));
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
