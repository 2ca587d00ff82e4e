/* Small file-system helpers of the CLI. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

int sv_mkdir_p(const char *path, unsigned mode)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int sv_write_file(const char *dir, const char *name, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	err = ferror(f);
	if (fclose(f) || err)
		return -EIO;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path) && errno != ENOENT ? -1 : 0;
}

int sv_rm_rf(const char *path)
{
	if (access(path, F_OK))
		return 0;
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -errno : 0;
}

/* The installed tree keeps the libraries in PREFIX/lib/softverbs (never
 * shadowing the system's), the build tree in build/lib: both beside bin/. */
int sv_lib_dir(char *buf, size_t size)
{
	static const char *const rel[] = { "lib/softverbs", "lib" };
	char exe[PATH_MAX], probe[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *top;

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	top = dirname(dirname(exe));
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(probe, sizeof(probe), "%s/%s/libibverbs.so.1", top, rel[i]);
		if (!access(probe, R_OK)) {
			snprintf(buf, size, "%s/%s", strcmp(top, "/") ? top : "", rel[i]);
			return 0;
		}
	}
	return -ENOENT;
}

bool sv_is_chardev(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISCHR(st.st_mode);
}
