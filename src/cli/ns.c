/*
 * A private mount namespace in which /dev/infiniband holds the device's node
 * (a bind mount of /dev/null: consumers only check that it is a character
 * device they may open), so nothing outside the process changes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

static int write_proc(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EPERM;
}

/* Without root, a user namespace mapping our own ids to themselves gives the
 * capability to mount there while the program keeps seeing its own uid. */
static int enter_user_ns(void)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int err;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
		return -errno;
	snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
	if ((err = write_proc("/proc/self/uid_map", map)))
		return err;
	if ((err = write_proc("/proc/self/setgroups", "deny")))
		return err;
	snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
	return write_proc("/proc/self/gid_map", map);
}

int sv_ns_enter(void)
{
	int err = 0;

	if (geteuid() == 0)
		err = unshare(CLONE_NEWNS) ? -errno : 0;
	else
		err = enter_user_ns();
	if (err)
		return err;
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ? -errno : 0;
}

static int bind_at(const char *src, const char *dst, unsigned long extra)
{
	return mount(src, dst, NULL, MS_BIND | extra, NULL) ? -errno : 0;
}

/* One entry of the real /dev, reached through dfd, recreated in the new one. */
static int carry_entry(int dfd, const char *name)
{
	char src[PATH_MAX], dst[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", dfd, name);
	snprintf(dst, sizeof(dst), "/dev/%s", name);
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		return symlink(link, dst) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777))
			return -errno;
		return bind_at(src, dst, MS_REC);
	}
	fd = open(dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return bind_at(src, dst, 0);
}

/* /dev has no infiniband directory and making one would change the host's
 * /dev: put a tmpfs over /dev that carries every old entry by bind mount. */
static int overlay_dev(void)
{
	int dfd = open("/dev", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (dfd < 0)
		return -errno;
	if (mount("tmpfs", "/dev", "tmpfs", MS_NOSUID, "mode=0755")) {
		err = -errno;
		close(dfd);
		return err;
	}
	d = fdopendir(dup(dfd));
	if (!d) {
		err = -errno;
		close(dfd);
		return err;
	}
	while (!err && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = carry_entry(dfd, de->d_name);
	closedir(d);
	close(dfd);
	return err ?: (mkdir(SV_CLI_DEV_DIR, 0755) ? -errno : 0);
}

int sv_ns_dev_infiniband(const char *dev_name)
{
	char node[PATH_MAX];
	struct stat st;
	int fd, err;

	if (stat(SV_CLI_DEV_DIR, &st) || !S_ISDIR(st.st_mode))
		if ((err = overlay_dev()))
			return err;
	if (mount("tmpfs", SV_CLI_DEV_DIR, "tmpfs", MS_NOSUID, "mode=0755"))
		return -errno;
	snprintf(node, sizeof(node), "%s/%s", SV_CLI_DEV_DIR, dev_name);
	fd = open(node, O_CREAT | O_WRONLY | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	return bind_at("/dev/null", node, 0);
}
