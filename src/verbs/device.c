/* The device list: softverbs exposes exactly one software device. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api.h"
#include "verbs/sv.h"

static struct sv_device the_device = {
	.ibdev = {
		.node_type = IBV_NODE_CA,
		.transport_type = IBV_TRANSPORT_IB,
		.name = SV_DEVICE_NAME,
		.dev_name = SV_DEVICE_DEV_NAME,
	},
	.provider_ops = NULL,
};

/* Not in the installed headers (rdma-core declares it for providers). */
const char *ibv_get_sysfs_path(void);

static pthread_once_t paths_once = PTHREAD_ONCE_INIT;

/* As rdma-core: both paths live under ibv_get_sysfs_path(), so that a tree
 * given by $SYSFS_PATH (softverbs run, softverbs setup) is the one consumers
 * read through dev_path and ibdev_path. */
static void paths_init(void)
{
	struct ibv_device *d = &the_device.ibdev;
	const char *root = ibv_get_sysfs_path();

	snprintf(d->dev_path, sizeof(d->dev_path), "%s/class/infiniband_verbs/%s",
		 root, d->dev_name);
	snprintf(d->ibdev_path, sizeof(d->ibdev_path), "%s/class/infiniband/%s",
		 root, d->name);
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_once(&paths_once, paths_init);
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
	return sv_engine_addr_plan()->guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return device == &the_device.ibdev ? 0 : -1;
}

bool sv_is_our_device(struct ibv_device *device)
{
	return device == &the_device.ibdev;
}
