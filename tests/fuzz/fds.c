/* Descriptor accounting shared by the fuzz harnesses (fuzz.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz.h"

void fz_list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[300], target[300];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n > 0 && e->d_name[0] != '.')
			fprintf(stderr, "  fd %s -> %.*s\n", e->d_name, (int)n, target);
	}
	if (d)
		closedir(d);
}

int fz_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;                        /* the directory's own */
}
