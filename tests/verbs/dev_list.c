/* ibv_get_device_list / name / guid / open / close. */
#include "common.h"

int main(void)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;
	int n = -1;

	t_alarm(20);

	list = CHECK_PTR(ibv_get_device_list(&n));
	CHECK(n >= 1);
	CHECK(list[n] == NULL);               /* NULL-terminated */
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "softverbs0"))
			dev = list[i];
	T_SKIP_IF(!dev, "softverbs0 not in the device list");
	CHECK_NE(ibv_get_device_guid(dev), 0);
	CHECK_EQ(dev->node_type, IBV_NODE_CA);
	CHECK_EQ(dev->transport_type, IBV_TRANSPORT_IB);

	ctx = CHECK_PTR(ibv_open_device(dev));
	CHECK(ctx->device == dev);
	CHECK(ctx->async_fd >= 0);
	/* A second context on the same device is independent. */
	struct ibv_context *ctx2 = CHECK_PTR(ibv_open_device(dev));
	CHECK(ctx2 != ctx);
	CHECK_OK(ibv_close_device(ctx2));
	CHECK_OK(ibv_close_device(ctx));
	ibv_free_device_list(list);
	return 0;
}
