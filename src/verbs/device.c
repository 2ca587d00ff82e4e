/* The device list: softverbs exposes exactly one software device. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/node.h"
#include "verbs/sv.h"

static struct sv_device the_device = {
	.ibdev = {
		.node_type = IBV_NODE_CA,
		.transport_type = IBV_TRANSPORT_IB,
		.name = SV_DEVICE_NAME,
		.dev_name = "uverbs_softverbs0",
		.dev_path = "/sys/class/infiniband_verbs/uverbs_softverbs0",
		.ibdev_path = "/sys/class/infiniband/softverbs0",
	},
	.provider_ops = NULL,
};

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &the_device.ibdev;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return sv_addr_plan()->guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &the_device.ibdev ? 0 : -1;
}

bool sv_is_our_device(struct ibv_device *device)
{
	return device == &the_device.ibdev;
}
