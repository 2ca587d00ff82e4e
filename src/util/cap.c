/* CAP_NET_RAW as the kernel's verbs see it, without libcap. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/cap.h"
#include "util/sys.h"

static bool effective_net_raw(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { { 0 } };

	if (syscall(SYS_capget, &hdr, data))
		return false;
	return data[CAP_TO_INDEX(CAP_NET_RAW)].effective & CAP_TO_MASK(CAP_NET_RAW);
}

/* A capability counts only in the user namespace that owns the network
 * namespace or an ancestor of it: `unshare -U` alone must not be enough. */
static bool userns_governs_netns(void)
{
	struct stat self, st;
	int net = sv_open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), owner, up;
	bool ok = false;

	if (net < 0)
		return false;
	owner = stat("/proc/self/ns/user", &self) ? -1 : ioctl(net, NS_GET_USERNS);
	sv_close(net);
	while (owner >= 0 && !ok) {
		ok = !fstat(owner, &st) && st.st_dev == self.st_dev && st.st_ino == self.st_ino;
		up = ok ? -1 : ioctl(owner, NS_GET_PARENT);
		sv_close(owner);
		owner = up;
	}
	return ok;
}

bool sv_cap_net_raw(void)
{
	return effective_net_raw() && userns_governs_netns();
}
