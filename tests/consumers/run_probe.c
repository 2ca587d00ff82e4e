/* Under softverbs run: checks what the program sees (library path, device
 * node, sysfs tree, /sys/class/infiniband); prints the failing check and
 * exits 1. */
#include <dirent.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *ibv_get_sysfs_path(void);

static int check(int ok, const char *what, const char *detail)
{
	printf("%s: %s (%s)\n", ok ? "ok" : "FAIL", what, detail);
	return ok ? 0 : 1;
}

/* The one interface that /sys/class/infiniband/<dev>/device/net names must
 * exist on this host (rdma-core's tests take the rdma_cm address from it). */
static int check_netdev(const char *ibdev)
{
	char dir[PATH_MAX], name[NAME_MAX + 1] = "";
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/device/net", ibdev);
	d = opendir(dir);
	if (!d)
		return check(0, "/sys/class/infiniband/<dev>/device/net exists", dir);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			snprintf(name, sizeof(name), "%s", de->d_name);
	closedir(d);
	return check(name[0] && if_nametoindex(name) > 0,
		     "device/net names an interface of this host", name[0] ? name : "none");
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "";
	const char *llp = getenv("LD_LIBRARY_PATH");
	const char *sysfs = ibv_get_sysfs_path();
	char node[PATH_MAX], cls[PATH_MAX];
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct stat st;
	int bad = 0;

	if (!list || !list[0])
		return check(0, "device list", "empty");
	snprintf(node, sizeof(node), "/dev/infiniband/%s", list[0]->dev_name);
	snprintf(cls, sizeof(cls), "%s/class/infiniband/%s", sysfs, ibv_get_device_name(list[0]));
	bad |= check(llp && !strncmp(llp, lib, strlen(lib)) &&
		     (llp[strlen(lib)] == ':' || !llp[strlen(lib)]),
		     "LD_LIBRARY_PATH starts with our lib", llp ? llp : "unset");
	bad |= check(!stat(node, &st) && S_ISCHR(st.st_mode) && !access(node, R_OK | W_OK),
		     "device node is a character device we may open", node);
	bad |= check(!stat(cls, &st) && S_ISDIR(st.st_mode), "sysfs tree has the device", cls);
	snprintf(cls, sizeof(cls), "/sys/class/infiniband/%s", ibv_get_device_name(list[0]));
	bad |= check(!stat(cls, &st) && S_ISDIR(st.st_mode), "/sys/class shows the device", cls);
	bad |= check_netdev(ibv_get_device_name(list[0]));
	bad |= check(!strncmp(list[0]->ibdev_path, sysfs, strlen(sysfs)),
		     "ibdev_path is under ibv_get_sysfs_path()", list[0]->ibdev_path);
	ibv_free_device_list(list);
	return bad;
}
