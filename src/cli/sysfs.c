/*
 * The sysfs-like tree that consumers look for next to the device: what
 * rdma-core's sysfs shows for an IB HCA, with the values the device reports
 * (ibv_query_device/port/gid), so the tree and the verbs never disagree.
 * Open MPI's openib needs class/infiniband to exist; UCX and libfabric read
 * the port files; the infiniband_verbs entry ties dev_name to the device;
 * device/net names the interface that carries the device's address, which
 * is how rdma-core's tests find an IP for rdma_cm.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *const port_states[] = {
	"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER",
};
static const char *const phys_states[] = {
	"NOP", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
	"LinkUp", "LinkErrorRecovery", "Phy Test",
};

static const char *name_of(const char *const *t, size_t n, unsigned v)
{
	return v < n ? t[v] : "UNKNOWN";
}

/* Gb/s per lane as sysfs rounds it, and the name of an active_speed code (IBTA encoding). */
static void speed_of(uint8_t speed, double *gbps, const char **name)
{
	static const struct { uint8_t code; double gbps; const char *name; } t[] = {
		{ 1, 2.5, "SDR" }, { 2, 5, "DDR" }, { 4, 10, "QDR" }, { 8, 10, "FDR10" },
		{ 16, 14, "FDR" }, { 32, 25, "EDR" }, { 64, 50, "HDR" },
		{ 128, 100, "NDR" },
	};

	*gbps = 2.5;
	*name = "SDR";
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].code == speed) {
			*gbps = t[i].gbps;
			*name = t[i].name;
		}
}

static unsigned lanes_of(uint8_t width)
{
	switch (width) {
	case 2: return 4;
	case 4: return 8;
	case 8: return 12;
	case 16: return 2;
	default: return 1;
	}
}

static int write_rate(const char *dir, const struct ibv_port_attr *pa)
{
	unsigned lanes = lanes_of(pa->active_width);
	const char *name;
	double gbps;

	speed_of(pa->active_speed, &gbps, &name);
	return sv_write_file(dir, "rate", "%g Gb/sec (%uX %s)\n", gbps * lanes, lanes, name);
}

static void format_guid(char *buf, size_t size, __be64 be)
{
	uint64_t g = be64toh(be);

	snprintf(buf, size, "%04x:%04x:%04x:%04x", (unsigned)(g >> 48) & 0xffff,
		 (unsigned)(g >> 32) & 0xffff, (unsigned)(g >> 16) & 0xffff,
		 (unsigned)g & 0xffff);
}

static int write_gid(const char *dir, const union ibv_gid *gid)
{
	char s[64];
	int n = 0;

	for (int i = 0; i < 16; i += 2)
		n += snprintf(s + n, sizeof(s) - n, "%s%02x%02x", i ? ":" : "",
			      gid->raw[i], gid->raw[i + 1]);
	return sv_write_file(dir, "0", "%s\n", s);
}

static int write_port(struct ibv_context *ctx, const char *ibdev, int port)
{
	char dir[PATH_MAX + 32], sub[PATH_MAX + 64];
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int err;

	if (ibv_query_port(ctx, port, &pa) || ibv_query_gid(ctx, port, 0, &gid))
		return -EIO;
	snprintf(dir, sizeof(dir), "%s/ports/%d", ibdev, port);
	snprintf(sub, sizeof(sub), "%s/gids", dir);
	if ((err = sv_mkdir_p(sub, 0755)) || (err = write_gid(sub, &gid)))
		return err;
	snprintf(sub, sizeof(sub), "%s/pkeys", dir);
	if ((err = sv_mkdir_p(sub, 0755)) || (err = sv_write_file(sub, "0", "0xffff\n")))
		return err;
	snprintf(sub, sizeof(sub), "%s/gid_attrs/types", dir);
	if ((err = sv_mkdir_p(sub, 0755)) || (err = sv_write_file(sub, "0", "IB/RoCE v1\n")))
		return err;
	err = sv_write_file(dir, "state", "%u: %s\n", pa.state,
			    name_of(port_states, 6, pa.state));
	err = err ?: sv_write_file(dir, "phys_state", "%u: %s\n", pa.phys_state,
				   name_of(phys_states, 8, pa.phys_state));
	err = err ?: sv_write_file(dir, "lid", "0x%x\n", pa.lid);
	err = err ?: sv_write_file(dir, "sm_lid", "0x%x\n", pa.sm_lid);
	err = err ?: sv_write_file(dir, "lid_mask_count", "%u\n", pa.lmc);
	err = err ?: sv_write_file(dir, "sm_sl", "%u\n", pa.sm_sl);
	err = err ?: sv_write_file(dir, "cap_mask", "0x%08x\n", pa.port_cap_flags);
	err = err ?: sv_write_file(dir, "link_layer", "%s\n",
				   pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
	return err ?: write_rate(dir, &pa);
}

/* The interface holding the IPv4 address a GID of the form ::ffff:a.b.c.d
 * carries (a loopback address: the loopback interface). */
static bool netdev_of(const union ibv_gid *gid, char *name, size_t size)
{
	static const uint8_t v4_prefix[12] = { [10] = 0xff, [11] = 0xff };
	struct ifaddrs *ifa, *i;
	struct in_addr a;
	bool found = false;

	if (memcmp(gid->raw, v4_prefix, sizeof(v4_prefix)) || getifaddrs(&ifa))
		return false;
	memcpy(&a.s_addr, &gid->raw[12], 4);
	for (i = ifa; i && !found; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET)
			continue;
		if (sin->sin_addr.s_addr == a.s_addr ||
		    ((ntohl(a.s_addr) >> 24) == 127 && (i->ifa_flags & IFF_LOOPBACK))) {
			snprintf(name, size, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifa);
	return found;
}

static int write_netdev(struct ibv_context *ctx, const char *ibdev)
{
	char dir[PATH_MAX + IF_NAMESIZE + 16], name[IF_NAMESIZE];
	union ibv_gid gid;

	if (ibv_query_gid(ctx, 1, 0, &gid))
		return -EIO;
	if (!netdev_of(&gid, name, sizeof(name)))
		return 0;
	snprintf(dir, sizeof(dir), "%s/device/net/%s", ibdev, name);
	return sv_mkdir_p(dir, 0755) ?: sv_write_file(dir, "ifindex", "%u\n", if_nametoindex(name));
}

static int write_device(struct ibv_context *ctx, const char *ibdev)
{
	struct ibv_device_attr a;
	char guid[32], sys_guid[32], host[64] = "localhost";
	int err;

	if (ibv_query_device(ctx, &a))
		return -EIO;
	gethostname(host, sizeof(host) - 1);
	format_guid(guid, sizeof(guid), ibv_get_device_guid(ctx->device));
	format_guid(sys_guid, sizeof(sys_guid), a.sys_image_guid);
	if ((err = sv_mkdir_p(ibdev, 0755)))
		return err;
	err = sv_write_file(ibdev, "node_type", "1: CA\n");
	err = err ?: sv_write_file(ibdev, "node_guid", "%s\n", guid);
	err = err ?: sv_write_file(ibdev, "sys_image_guid", "%s\n", sys_guid);
	err = err ?: sv_write_file(ibdev, "fw_ver", "%s\n", a.fw_ver);
	err = err ?: sv_write_file(ibdev, "hw_rev", "0x%x\n", a.hw_ver);
	err = err ?: sv_write_file(ibdev, "hca_type", "softverbs\n");
	err = err ?: sv_write_file(ibdev, "board_id", "softverbs\n");
	err = err ?: sv_write_file(ibdev, "node_desc", "%s %s\n", host,
				   ibv_get_device_name(ctx->device));
	for (int p = 1; !err && p <= a.phys_port_cnt; p++)
		err = write_port(ctx, ibdev, p);
	return err ?: write_netdev(ctx, ibdev);
}

static int write_uverbs(const char *root, struct ibv_device *dev)
{
	char dir[PATH_MAX];
	int err;

	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs/%s", root, dev->dev_name);
	if ((err = sv_mkdir_p(dir, 0755)))
		return err;
	err = sv_write_file(dir, "ibdev", "%s\n", ibv_get_device_name(dev));
	err = err ?: sv_write_file(dir, "abi_version", "1\n");
	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", root);
	return err ?: sv_write_file(dir, "abi_version", "6\n");
}

static struct ibv_device *the_device(struct ibv_device ***list)
{
	int n = 0;

	*list = ibv_get_device_list(&n);
	return *list && n > 0 ? (*list)[0] : NULL;
}

/* The device's dev_name: the node consumers open is /dev/infiniband/<it>. */
const char *sv_dev_name(void)
{
	static char name[IBV_SYSFS_NAME_MAX];
	struct ibv_device **list;
	struct ibv_device *dev;

	if (!name[0] && (dev = the_device(&list))) {
		snprintf(name, sizeof(name), "%s", dev->dev_name);
		ibv_free_device_list(list);
	}
	return name[0] ? name : NULL;
}

int sv_sysfs_write(const char *root)
{
	char ibdev[PATH_MAX];
	struct ibv_device **list;
	struct ibv_device *dev = the_device(&list);
	struct ibv_context *ctx;
	int err;

	if (!dev)
		return -ENODEV;
	ctx = ibv_open_device(dev);
	if (!ctx) {
		err = -errno;
		ibv_free_device_list(list);
		return err;
	}
	snprintf(ibdev, sizeof(ibdev), "%s/class/infiniband/%s", root, ibv_get_device_name(dev));
	err = write_device(ctx, ibdev);
	err = err ?: write_uverbs(root, dev);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return err;
}
