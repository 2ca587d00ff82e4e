/* Helpers for the security tests; see sec.h. */
#define _GNU_SOURCE
#include "sec.h"
#include "common.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static const char *setpriv_path(void)
{
	static const char *const paths[] = { "/usr/bin/setpriv", "/bin/setpriv" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], X_OK))
			return paths[i];
	return NULL;
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
