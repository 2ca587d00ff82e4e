// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: the RDMA devices the CM binds ids to.
 *
 * Devices are found with the public verbs API, opened once and kept open
 * while the library is loaded (as rdma_get_devices documents).  Every local
 * IP address (loopback included) maps to the device whose GID 0 is the
 * IPv4-mapped form of that address, or else to the first device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "cm/cm.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER; /* guards below */
static struct cm_device *devs;
static int ndevs = -1;		/* -1: not looked for yet */

static void query_device(struct cm_device *d)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	uint8_t port, best = 0;

	memset(&da, 0, sizeof(da));
	if (ibv_query_device(d->ctx, &da))
		da.phys_port_cnt = 1;
	for (port = 1; port <= da.phys_port_cnt && port; port++) {
		memset(&pa, 0, sizeof(pa));
		if (ibv_query_port(d->ctx, port, &pa))
			continue;
		if (!best || pa.state == IBV_PORT_ACTIVE) {
			best = port;
			d->lid = pa.lid;
			d->mtu = pa.active_mtu ? pa.active_mtu : IBV_MTU_1024;
			if (pa.state == IBV_PORT_ACTIVE)
				break;
		}
	}
	d->port = best ? best : 1;
	if (!best)
		d->mtu = IBV_MTU_1024;
	if (ibv_query_gid(d->ctx, d->port, 0, &d->gid))
		memset(&d->gid, 0, sizeof(d->gid));
	if (ibv_query_pkey(d->ctx, d->port, 0, &d->pkey) || !d->pkey)
		d->pkey = htons(0xffff);
	d->max_resp_res = da.max_qp_rd_atom > 255 ? 255 :
			  (da.max_qp_rd_atom > 0 ? (uint8_t)da.max_qp_rd_atom : 1);
	d->max_init_depth = da.max_qp_init_rd_atom > 255 ? 255 :
			    (da.max_qp_init_rd_atom > 0 ? (uint8_t)da.max_qp_init_rd_atom : 1);
}

int cm_devices_init(void)
{
	struct ibv_device **list;
	int n = 0, i, k = 0;

	pthread_mutex_lock(&dev_lock);
	if (ndevs >= 0)
		goto out;
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		if (list)
			ibv_free_device_list(list);
		ndevs = 0;
		goto out;
	}
	devs = calloc((size_t)n, sizeof(*devs));
	if (devs) {
		for (i = 0; i < n; i++) {
			struct ibv_context *ctx = ibv_open_device(list[i]);

			if (!ctx)
				continue;
			devs[k].ctx = ctx;
			query_device(&devs[k]);
			k++;
		}
	}
	ibv_free_device_list(list);
	ndevs = k;
out:
	n = ndevs;
	pthread_mutex_unlock(&dev_lock);
	return n;
}

void cm_devices_forget(void)
{
	/* After fork: the parent's contexts are not the child's to use. */
	pthread_mutex_init(&dev_lock, NULL);
	devs = NULL;
	ndevs = -1;
}

struct cm_device *cm_device_by_ctx(struct ibv_context *ctx)
{
	int i;

	if (cm_devices_init() <= 0 || !ctx)
		return NULL;
	for (i = 0; i < ndevs; i++)
		if (devs[i].ctx == ctx)
			return &devs[i];
	return NULL;
}

struct cm_device *cm_device_for_addr(const struct sockaddr *sa)
{
	union ibv_gid want;
	int i;

	if (cm_devices_init() <= 0)
		return NULL;
	if (sa && !cm_sa_is_any(sa) && !cm_sa_is_loopback(sa)) {
		cm_gid_from_sa(&want, sa);
		for (i = 0; i < ndevs; i++)
			if (!memcmp(&devs[i].gid, &want, sizeof(want)))
				return &devs[i];
	}
	return &devs[0];
}

/* DEVICE_REMOVAL: a second context per device, only for its async events
 * (so the application's own contexts keep all of theirs); its fd sits in
 * the progress thread's epoll.  [G] */
int cm_device_monitor_fd(int idx)
{
	if (idx < 0 || idx >= ndevs)
		return -1;
	if (!devs[idx].monitor) {
		devs[idx].monitor = ibv_open_device(devs[idx].ctx->device);
		if (!devs[idx].monitor)
			return -1;
	}
	return devs[idx].monitor->async_fd;
}

int cm_device_index(struct cm_device *dev)
{
	return dev ? (int)(dev - devs) : -1;
}

/* [G] The monitor context is readable: true if the device is gone. */
bool cm_device_monitor_fatal(int idx)
{
	struct ibv_async_event ev;
	bool fatal = false;

	if (idx < 0 || idx >= ndevs || !devs[idx].monitor)
		return false;
	if (ibv_get_async_event(devs[idx].monitor, &ev))
		return false;
	fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
	ibv_ack_async_event(&ev);
	return fatal;
}

struct ibv_pd *cm_device_default_pd(struct cm_device *dev)
{
	if (!dev->default_pd)
		dev->default_pd = ibv_alloc_pd(dev->ctx);
	return dev->default_pd;
}

/* XRC target QPs and SRQs of every id on the device share one domain of
 * its own (no file), as rdma-core's librdmacm does. */
struct ibv_xrcd *cm_device_xrcd(struct cm_device *dev)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1, .oflags = O_CREAT,
	};

	if (!dev->xrcd)
		dev->xrcd = ibv_open_xrcd(dev->ctx, &attr);
	return dev->xrcd;
}

CM_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int n = cm_devices_init(), i;

	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++)
		list[i] = devs[i].ctx;
	if (num_devices)
		*num_devices = n;
	return list;
}

CM_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
