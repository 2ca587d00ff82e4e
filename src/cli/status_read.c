/*
 * Reading what processes publish (status/format.h) without ever slowing
 * them: each record is copied under its seqlock (retried, never waited
 * for), and nothing is written but the removal of a dead process's file.
 * Files are read with pread, not mapped: an owner that shrinks its file
 * under a reader (root reads every user's) makes a short read, not a
 * SIGBUS.  Whether the owner lives is its flock: it holds it shared for
 * its whole life, so an exclusive try succeeds only once it is gone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

static bool read_all(int fd, void *buf, size_t len, off_t off)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, off);

		if (r <= 0)
			return false;
		buf = (uint8_t *)buf + r;
		len -= (size_t)r;
		off += r;
	}
	return true;
}

static uint32_t seq_of(const uint8_t *slot)
{
	return ((const struct svst_rec *)slot)->seq;
}

/* The seqlock's reader: a copy whose sequence was even when it began (a
 * record's sequence is its first word) and is the same after it. */
static bool slot_settled(int fd, uint32_t i, const uint8_t *copy)
{
	uint32_t again;

	return !(seq_of(copy) & 1) && read_all(fd, &again, sizeof(again), (off_t)svst_slot_off(i)) &&
	       again == seq_of(copy);
}

/* Copy every record: all at once, then again one by one those that
 * changed meanwhile; one the writer keeps changing is left out. */
static int copy_slots(struct st_proc *p, int fd)
{
	p->slots = calloc(p->hdr.hwm ? p->hdr.hwm : 1, SVST_SLOT_SIZE);
	if (!p->slots)
		return -1;
	if (!read_all(fd, p->slots, (size_t)p->hdr.hwm * SVST_SLOT_SIZE, SVST_HDR_SIZE))
		return 0;                    /* shrunk: nothing to show */
	for (uint32_t i = 0; i < p->hdr.hwm; i++) {
		uint8_t *dst = p->slots + (size_t)i * SVST_SLOT_SIZE;
		int tries = READ_TRIES;

		while (!slot_settled(fd, i, dst) && --tries)
			if (!read_all(fd, dst, SVST_SLOT_SIZE, (off_t)svst_slot_off(i)))
				tries = 1;
		if (!tries) {
			memset(dst, 0, SVST_SLOT_SIZE);
			p->busy++;
		} else if (((struct svst_rec *)dst)->kind >= SVST_NKINDS) {
			((struct svst_rec *)dst)->kind = SVST_FREE;
		}
	}
	return 0;
}

/* Read one file into *p: 1 read, 0 left out, -1 out of memory. */
static int read_one(int dirfd, const char *dir, const char *name, struct st_proc *p)
{
	char path[512];
	struct stat st;
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
	if (!read_all(fd, &p->hdr, sizeof(p->hdr), 0) || !header_ok(&p->hdr, st.st_size, path))
		goto out;
	ret = copy_slots(p, fd) ? -1 : 1;
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
