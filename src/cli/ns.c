/*
 * A private mount namespace in which /dev/infiniband holds the device's node
 * (a bind mount of /dev/null: consumers only check that it is a character
 * device they may open) and /sys/class shows the device's sysfs-like tree
 * (rdma-core's own test suite lists /sys/class/infiniband/<dev>/device/net
 * by that fixed path), so nothing outside the process changes.
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

/* An empty file to bind a file over. */
static int touch(const char *path, unsigned mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* One entry of the directory `to` had, reached through dfd, recreated in
 * the tmpfs now over `to`. */
static int carry_entry(int dfd, const char *to, const char *name)
{
	char src[PATH_MAX], dst[PATH_MAX], link[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", dfd, name);
	snprintf(dst, sizeof(dst), "%s/%s", to, name);
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
	return touch(dst, 0600) ?: bind_at(src, dst, 0);
}

/* Neither /dev nor sysfs takes a new directory, and making one would change
 * the host's: put a tmpfs over `dir` that carries every old entry by bind
 * mount, then make `sub` in it. */
static int overlay_dir(const char *dir, const char *sub)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (dfd < 0)
		return -errno;
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID, "mode=0755")) {
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
			err = carry_entry(dfd, dir, de->d_name);
	closedir(d);
	close(dfd);
	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	return err ?: (mkdir(path, 0755) ? -errno : 0);
}

/* `path` (parent/name) as a directory of our own, whatever was there. */
static int own_dir(const char *parent, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	int err;

	snprintf(path, sizeof(path), "%s/%s", parent, name);
	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		if ((err = overlay_dir(parent, name)))
			return err;
	return mount("tmpfs", path, "tmpfs", MS_NOSUID, "mode=0755") ? -errno : 0;
}

int sv_ns_dev_infiniband(const char *dev_name)
{
	char node[PATH_MAX];
	int err;

	if ((err = own_dir("/dev", "infiniband")))
		return err;
	snprintf(node, sizeof(node), "%s/%s", SV_CLI_DEV_DIR, dev_name);
	return touch(node, 0666) ?: bind_at("/dev/null", node, 0);
}

/* /sys/class/<cls> made to hold exactly the entries of root/class/<cls>:
 * only the softverbs device is listed there, as on a host whose one HCA it is. */
static int show_class(const char *root, const char *cls)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int err;

	snprintf(src, sizeof(src), "%s/class/%s", root, cls);
	d = opendir(src);
	if (!d)
		return -errno;
	err = own_dir("/sys/class", cls);
	while (!err && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(src, sizeof(src), "%s/class/%s/%s", root, cls, de->d_name);
		snprintf(dst, sizeof(dst), "/sys/class/%s/%s", cls, de->d_name);
		if (de->d_type == DT_DIR)
			err = mkdir(dst, 0755) ? -errno : 0;
		else
			err = touch(dst, 0644);
		err = err ?: bind_at(src, dst, MS_REC);
	}
	closedir(d);
	return err;
}

int sv_ns_sys_class(const char *root)
{
	return show_class(root, "infiniband") ?: show_class(root, "infiniband_verbs");
}
