/* ibv_query_port / ibv_query_gid / ibv_query_pkey of port 1. */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_port_attr pa;
	union ibv_gid gid, zero;
	uint16_t pkey = 0;

	memset(&pa, 0, sizeof(pa));
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);
	CHECK_NE(pa.lid, 0);
	CHECK_EQ(pa.active_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.max_mtu, IBV_MTU_4096);
	CHECK_EQ(pa.link_layer, IBV_LINK_LAYER_INFINIBAND);
	CHECK(pa.gid_tbl_len >= 1);
	CHECK(pa.pkey_tbl_len >= 1);

	memset(&zero, 0, sizeof(zero));
	CHECK_OK(ibv_query_gid(ctx, 1, 0, &gid));
	CHECK(memcmp(&gid, &zero, sizeof(gid)) != 0);
	/* ::ffff:a.b.c.d, and the LID is the low 16 bits of the address. */
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	CHECK(memcmp(gid.raw, v4mapped, 12) == 0);
	CHECK_EQ(pa.lid, (uint16_t)(gid.raw[14] << 8 | gid.raw[15]));

	CHECK_OK(ibv_query_pkey(ctx, 1, 0, &pkey));
	CHECK_EQ(be16toh(pkey), 0xffff);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
