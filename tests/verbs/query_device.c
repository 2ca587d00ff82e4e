/* ibv_query_device and ibv_query_device_ex agree and report sane limits. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_device_attr a;
	struct ibv_device_attr_ex ax;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_device(ctx, &a));
	CHECK_EQ(a.phys_port_cnt, 1);
	CHECK_NE(a.node_guid, 0);
	CHECK_EQ(a.node_guid, ibv_get_device_guid(ctx->device));
	CHECK(a.max_qp > 0);
	CHECK(a.max_qp_wr >= 1024);
	CHECK(a.max_sge >= 2);
	CHECK(a.max_cq > 0);
	CHECK(a.max_cqe >= 1024);
	CHECK(a.max_mr > 0);
	CHECK(a.max_pd > 0);
	CHECK(a.max_qp_rd_atom >= 1);
	CHECK(a.max_srq > 0);
	CHECK(a.max_srq_wr > 0);
	CHECK(a.max_srq_sge > 0);
	CHECK(a.atomic_cap == IBV_ATOMIC_HCA || a.atomic_cap == IBV_ATOMIC_GLOB);
	CHECK_NE(a.vendor_id, 0);

	memset(&ax, 0, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(ctx, NULL, &ax));
	CHECK_EQ(ax.orig_attr.max_qp_wr, a.max_qp_wr);
	CHECK_EQ(ax.orig_attr.max_sge, a.max_sge);
	CHECK_EQ(ax.orig_attr.max_cqe, a.max_cqe);
	CHECK_EQ(ax.orig_attr.node_guid, a.node_guid);
	CHECK_EQ(ax.orig_attr.phys_port_cnt, 1);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
