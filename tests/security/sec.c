/* Helpers for the security tests; see sec.h. */
#define _GNU_SOURCE
#include "sec.h"
#include "common.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

static const char *setpriv_path(void)
{
	static const char *const paths[] = { "/usr/bin/setpriv", "/bin/setpriv" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], X_OK))
			return paths[i];
	return NULL;
}

/* Can uid SEC_UID run `path`, and load the libibverbs we loaded?  (A build
 * tree under a private home directory is out of its reach.) */
static bool stranger_can_run(const char *path)
{
	Dl_info lib = { 0 };
	pid_t pid;
	int st;

	if (!dladdr((void *)ibv_get_device_list, &lib))
		lib.dli_fname = NULL;
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(SEC_UID, SEC_UID, SEC_UID) ||
		    setresuid(SEC_UID, SEC_UID, SEC_UID))
			_exit(1);
		_exit(access(path, R_OK | X_OK) || (lib.dli_fname && access(lib.dli_fname, R_OK)));
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

pid_t sec_spawn(const char *prog, char *const argv[], int *out_fd)
{
	char self[PATH_MAX], path[PATH_MAX + 64], *slash;
	const char *setpriv = setpriv_path();
	char *args[32];
	int n = 0, pfd[2] = { -1, -1 };
	ssize_t len;
	pid_t pid;

	T_SKIP_IF(geteuid() != 0, "needs root to run an attacker as uid %d", SEC_UID);
	T_SKIP_IF(!setpriv, "setpriv(1) not installed");
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	self[len] = 0;
	slash = strrchr(self, '/');
	CHECK(slash);
	*slash = 0;
	snprintf(path, sizeof(path), "%s/%s", self, prog);
	T_SKIP_IF(access(path, R_OK | X_OK), "%s not found", path);
	T_SKIP_IF(!stranger_can_run(path), "uid %d cannot reach %s or the library: "
		  "the build tree is not readable by other users", SEC_UID, path);
	/* Another test host (tests/net): the stranger runs in its network
	 * namespace and reaches us at SEC_TARGET_IP. */
	if (getenv("SEC_ATTACKER_NS")) {
		args[n++] = "ip";
		args[n++] = "netns";
		args[n++] = "exec";
		args[n++] = getenv("SEC_ATTACKER_NS");
	}
	args[n++] = (char *)setpriv;
	args[n++] = "--reuid=65534";
	args[n++] = "--regid=65534";
	args[n++] = "--clear-groups";
	args[n++] = "--no-new-privs";
	args[n++] = path;
	for (int i = 0; argv && argv[i] && n < 31; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	if (out_fd)
		CHECK_OK(pipe2(pfd, O_CLOEXEC));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (out_fd)
			dup2(pfd[1], 1);
		execvp(args[0], args);
		_exit(127);
	}
	if (out_fd) {
		close(pfd[1]);
		*out_fd = pfd[0];
	}
	return pid;
}
