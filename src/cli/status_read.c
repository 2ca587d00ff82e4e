/*
 * Reading what processes publish (status/format.h) without ever slowing
 * them: a file is mapped read-only, each record copied under its seqlock
 * (retried, never waited for), and nothing is written but the removal of a
 * dead process's file.  Whether its owner lives is its flock: the owner
 * holds it shared for its whole life, so an exclusive try succeeds only
 * once it is gone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/status.h"

#define READ_TRIES 1000

/* Is `name` all digits (a pid)?  Others (".123.new" being created) are
 * not published files. */
static bool is_pid_name(const char *name)
{
	if (!*name)
		return false;
	for (; *name; name++)
		if (*name < '0' || *name > '9')
			return false;
	return true;
}

/* The owner is gone: remove its file, unless the name meanwhile belongs
 * to a new process (the same pid, renamed over it). */
static void remove_stale(int dirfd, const char *name, int fd)
{
	struct stat a, b;

	if (!fstat(fd, &a) && !fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		unlinkat(dirfd, name, 0);
}

static bool header_ok(const struct svst_file *h, off_t size, const char *path)
{
	if (h->magic != SVST_MAGIC)
		return false;                /* not ready yet, or not ours */
	if (h->version != SVST_VERSION) {
		fprintf(stderr, "%s: %s: status format version %u, this softverbs reads %u: "
			"left out\n", sv_cli_prog, path, h->version, SVST_VERSION);
		return false;
	}
	if (h->hdr_size != SVST_HDR_SIZE || h->slot_size != SVST_SLOT_SIZE ||
	    h->max_slots > SVST_MAX_SLOTS || h->hwm > h->max_slots ||
	    (off_t)svst_slot_off(h->hwm) > size) {
		fprintf(stderr, "%s: %s: a malformed status file: left out\n", sv_cli_prog, path);
		return false;
	}
	return true;
}

/* Copy every record; one the writer keeps changing is left out. */
static int copy_slots(struct st_proc *p, const uint8_t *map)
{
	p->slots = calloc(p->hdr.hwm ? p->hdr.hwm : 1, SVST_SLOT_SIZE);
	if (!p->slots)
		return -1;
	for (uint32_t i = 0; i < p->hdr.hwm; i++) {
		uint8_t *dst = p->slots + (size_t)i * SVST_SLOT_SIZE;

		if (!svst_read_slot(map + svst_slot_off(i), dst, SVST_SLOT_SIZE, READ_TRIES)) {
			memset(dst, 0, SVST_SLOT_SIZE);
			p->busy++;
			continue;
		}
		if (((struct svst_rec *)dst)->kind >= SVST_NKINDS)
			((struct svst_rec *)dst)->kind = SVST_FREE;
	}
	return 0;
}

/* Read one file into *p: 1 read, 0 left out, -1 out of memory. */
static int read_one(int dirfd, const char *dir, const char *name, struct st_proc *p)
{
	char path[512];
	struct stat st;
	uint8_t *map;
	size_t len;
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)SVST_HDR_SIZE)
		goto out;
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		remove_stale(dirfd, name, fd);
		goto out;
	}
	map = mmap(NULL, SVST_HDR_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	memcpy(&p->hdr, map, sizeof(p->hdr));
	p->hdr.hwm = __atomic_load_n(&((const struct svst_file *)map)->hwm, __ATOMIC_ACQUIRE);
	munmap(map, SVST_HDR_SIZE);
	if (!header_ok(&p->hdr, st.st_size, path))
		goto out;
	len = svst_slot_off(p->hdr.hwm);
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	ret = copy_slots(p, map) ? -1 : 1;
	munmap(map, len);
	p->keys = geteuid() == p->hdr.uid;
out:
	close(fd);
	return ret;
}

static int add_dir(struct st_snap *s, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return errno == ENOENT || errno == EACCES ? 0 : -1;
	while ((e = readdir(d))) {
		struct st_proc *np;
		int r;

		if (!is_pid_name(e->d_name))
			continue;
		np = realloc(s->procs, (s->n + 1) * sizeof(*np));
		if (!np)
			break;
		s->procs = np;
		memset(&np[s->n], 0, sizeof(np[s->n]));
		r = read_one(dirfd(d), dir, e->d_name, &np[s->n]);
		if (r > 0)
			s->n++;
		else if (r < 0)
			break;
	}
	closedir(d);
	return 0;
}

/* Root reads every uid's directory; anyone else its own. */
static int add_all(struct st_snap *s)
{
	char path[300];
	struct dirent *e;
	DIR *d;

	if (geteuid()) {
		snprintf(path, sizeof(path), SVST_DIR_FMT, (unsigned)geteuid());
		return add_dir(s, path);
	}
	d = opendir("/dev/shm");
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t n = strlen(SVST_DIR_PREFIX);

		if (strncmp(e->d_name, SVST_DIR_PREFIX, n) || !is_pid_name(e->d_name + n))
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		add_dir(s, path);
	}
	closedir(d);
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	const struct st_proc *x = a, *y = b;

	return x->hdr.pid < y->hdr.pid ? -1 : x->hdr.pid > y->hdr.pid;
}

int st_snap_take(struct st_snap *s, const char *dir)
{
	struct timespec ts;
	int r;

	memset(s, 0, sizeof(*s));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->when_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r = dir ? add_dir(s, dir) : add_all(s);
	if (r) {
		fprintf(stderr, "%s: %s: %s\n", sv_cli_prog, dir ? dir : "/dev/shm", strerror(errno));
		st_snap_free(s);
		return -1;
	}
	if (s->n)
		qsort(s->procs, s->n, sizeof(*s->procs), by_pid);
	return 0;
}

void st_snap_free(struct st_snap *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->procs[i].slots);
	free(s->procs);
	memset(s, 0, sizeof(*s));
}
