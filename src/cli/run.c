/*
 * softverbs run: executes a program on softverbs.  Our library directory goes
 * first in an exported LD_LIBRARY_PATH (so mpirun -x carries it on), and the
 * device is made visible to consumers that look for kernel artefacts: the
 * ones `softverbs setup` left, else a private namespace with its own.
 * --pcap DIR sets SOFTVERBS_PCAP: each process writes a packet capture
 * there (docs/observability.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

static int prepend_lib_path(void)
{
	char lib[PATH_MAX], *val;
	const char *old = getenv("LD_LIBRARY_PATH");
	int err = sv_lib_dir(lib, sizeof(lib));

	if (err) {
		fprintf(stderr, "%s run: no libibverbs.so.1 beside this executable (lib/softverbs or lib)\n",
			sv_cli_prog);
		return err;
	}
	if (asprintf(&val, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "") < 0)
		return -ENOMEM;
	setenv("LD_LIBRARY_PATH", val, 1);
	free(val);
	return 0;
}

static bool setup_done(const char *dev_name)
{
	char node[PATH_MAX], cls[PATH_MAX];

	snprintf(node, sizeof(node), "%s/%s", SV_CLI_DEV_DIR, dev_name);
	snprintf(cls, sizeof(cls), "%s/class/infiniband", SV_CLI_SYSFS);
	return sv_is_chardev(node) && !access(cls, R_OK);
}

/* Returns the sysfs root to export, or NULL when the device stays hidden. */
static const char *make_visible(const char *dev_name)
{
	int err;

	if (setup_done(dev_name))
		return SV_CLI_SYSFS;
	err = sv_ns_enter();
	if (err) {
		fprintf(stderr,
			"%s run: cannot make %s/%s visible (no root, and no user namespace: %s);\n"
			"  run `%s setup` once as root.  Running without it.\n",
			sv_cli_prog, SV_CLI_DEV_DIR, dev_name, strerror(-err), sv_cli_prog);
		return NULL;
	}
	err = sv_ns_dev_infiniband(dev_name);
	err = err ?: sv_sysfs_write(SV_CLI_NS_SYSFS);
	if (err) {
		fprintf(stderr, "%s run: preparing %s in the private namespace failed: %s\n",
			sv_cli_prog, SV_CLI_DEV_DIR, strerror(-err));
		exit(1);
	}
	/* Only programs that read /sys/class by its fixed path need this. */
	err = sv_ns_sys_class(SV_CLI_NS_SYSFS);
	if (err)
		fprintf(stderr, "%s run: /sys/class/infiniband not shown in the private namespace: %s\n",
			sv_cli_prog, strerror(-err));
	return SV_CLI_NS_SYSFS;
}

/* --pcap DIR: the captures go there (made if missing), named absolutely so
 * that a program that changes directory still finds it. */
static int set_pcap_dir(const char *dir)
{
	char abs[PATH_MAX];

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "%s run: --pcap %s: %s\n", sv_cli_prog, dir, strerror(errno));
		return -errno;
	}
	if (!realpath(dir, abs)) {
		fprintf(stderr, "%s run: --pcap %s: %s\n", sv_cli_prog, dir, strerror(errno));
		return -errno;
	}
	setenv("SOFTVERBS_PCAP", abs, 1);
	return 0;
}

int sv_cli_run(int argc, char **argv)
{
	const char *dev_name, *sysfs;
	int i = 1;

	if (i + 1 < argc && !strcmp(argv[i], "--pcap")) {
		if (set_pcap_dir(argv[i + 1]))
			return 1;
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc) {
		fprintf(stderr, "Usage: %s run [--pcap DIR] [--] PROGRAM [ARGS...]\n", sv_cli_prog);
		return 2;
	}
	if (prepend_lib_path())
		return 1;
	dev_name = sv_dev_name();
	if (!dev_name) {
		fprintf(stderr, "%s run: the library lists no device\n", sv_cli_prog);
		return 1;
	}
	sysfs = make_visible(dev_name);
	if (sysfs)
		setenv("SYSFS_PATH", sysfs, 1);
	execvp(argv[i], argv + i);
	fprintf(stderr, "%s run: %s: %s\n", sv_cli_prog, argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
