/*
 * softverbs setup: the persistent artefacts that let `softverbs run` work for
 * every user without namespaces: /dev/infiniband/<dev_name> (a character
 * device with /dev/null's numbers) and the sysfs-like tree in /run/softverbs.
 * Markers in /run/softverbs record what it created, so --remove undoes
 * exactly that.  Both vanish at reboot, as the real ones would be recreated.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli/cli.h"

#define MADE_DIR  SV_CLI_RUN_DIR "/made-dev-dir"
#define MADE_NODE SV_CLI_RUN_DIR "/made-dev-node"

static int fail(const char *what, int err)
{
	fprintf(stderr, "%s setup: %s: %s\n", sv_cli_prog, what, strerror(err > 0 ? err : -err));
	return 1;
}

static int make_node(const char *node)
{
	struct stat null;

	if (sv_is_chardev(node))
		return 0;
	if (stat("/dev/null", &null))
		return -errno;
	if (mknod(node, S_IFCHR | 0666, null.st_rdev) || chmod(node, 0666))
		return -errno;
	return sv_write_file(SV_CLI_RUN_DIR, "made-dev-node", "%s\n", node);
}

static int do_setup(const char *node)
{
	struct stat st;
	int err;

	if ((err = sv_mkdir_p(SV_CLI_RUN_DIR, 0755)))
		return fail(SV_CLI_RUN_DIR, err);
	if (stat(SV_CLI_DEV_DIR, &st)) {
		if (mkdir(SV_CLI_DEV_DIR, 0755))
			return fail(SV_CLI_DEV_DIR, errno);
		sv_write_file(SV_CLI_RUN_DIR, "made-dev-dir", "%s\n", SV_CLI_DEV_DIR);
	}
	if ((err = make_node(node)))
		return fail(node, err);
	if ((err = sv_rm_rf(SV_CLI_SYSFS)) || (err = sv_sysfs_write(SV_CLI_SYSFS)))
		return fail(SV_CLI_SYSFS, err);
	printf("%s: %s and %s are ready; undo with `%s setup --remove`\n",
	       sv_cli_prog, node, SV_CLI_SYSFS, sv_cli_prog);
	return 0;
}

static int do_remove(const char *node)
{
	if (!access(MADE_NODE, F_OK) && unlink(node) && errno != ENOENT)
		return fail(node, errno);
	if (!access(MADE_DIR, F_OK) && rmdir(SV_CLI_DEV_DIR) && errno != ENOENT)
		fprintf(stderr, "%s setup: %s kept: %s\n", sv_cli_prog, SV_CLI_DEV_DIR, strerror(errno));
	if (sv_rm_rf(SV_CLI_RUN_DIR))
		return fail(SV_CLI_RUN_DIR, errno);
	printf("%s: removed what `%s setup` created\n", sv_cli_prog, sv_cli_prog);
	return 0;
}

int sv_cli_setup(int argc, char **argv)
{
	bool remove = argc > 1 && !strcmp(argv[1], "--remove");
	char node[PATH_MAX];
	const char *dev_name;

	if (argc > 2 || (argc == 2 && !remove)) {
		fprintf(stderr, "Usage: %s setup [--remove]\n", sv_cli_prog);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "%s setup: must be run as root\n", sv_cli_prog);
		return 1;
	}
	dev_name = sv_dev_name();
	if (!dev_name)
		return fail("device list", ENODEV);
	snprintf(node, sizeof(node), "%s/%s", SV_CLI_DEV_DIR, dev_name);
	return remove ? do_remove(node) : do_setup(node);
}
