/*
 * This process's status file (status/format.h): created in its uid's
 * directory under a hidden name, locked, then renamed into place, so a
 * reader never finds it unlocked while its owner lives.  Slots are handed
 * out lowest-first from a free list; their pages are allocated a chunk at
 * a time, so that a full /dev/shm refuses a slot (ENOSPC) instead of
 * killing the process with SIGBUS on its first store.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "status/publish.h"
#include "util/log.h"
#include "util/sys.h"

#define MAP_BYTES ((size_t)SVST_HDR_SIZE + (size_t)SVST_MAX_SLOTS * SVST_SLOT_SIZE)

static struct {
	pthread_mutex_t lock;
	bool opened;                 /* svst_open ran (successfully or not) */
	pid_t pid;                   /* the publisher; a forked child is not */
	int dirfd;
	int fd;                      /* the file's: holds its lock */
	char name[16];               /* the file's name in dirfd */
	struct svst_file *file;      /* NULL: nothing published */
	uint32_t hwm;                /* slots handed out at least once */
	uint32_t chunks;             /* SVST_CHUNK_SLOTS slots each, allocated */
	uint32_t *free_slots;        /* a stack */
	uint32_t nfree, free_cap;
} pub = { .lock = PTHREAD_MUTEX_INITIALIZER, .dirfd = -1, .fd = -1 };

/* The last resort when even private memory is gone: objects share it, and
 * what they store there is lost. */
static _Alignas(64) uint8_t sink[SVST_SLOT_SIZE];

static bool in_file(const void *rec)
{
	const uint8_t *p = rec, *base = (const uint8_t *)pub.file;

	return base && p >= base && p < base + MAP_BYTES;
}

/* The uid's directory, made if missing, and refused unless it is a real
 * directory of ours that nobody else may enter. */
static int open_dir(uid_t uid)
{
	char path[64];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), SVST_DIR_FMT, (unsigned)uid);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -1;
	fd = sv_open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_uid != uid || (st.st_mode & 077)) {
		sv_info("status: %s is not a private directory of uid %u: not published",
			path, (unsigned)uid);
		sv_close(fd);
		return -1;
	}
	return fd;
}

static void read_comm(char *buf, size_t size)
{
	FILE *f = fopen("/proc/self/comm", "re");

	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

static void fill_header(struct svst_file *h, const char *device, uint32_t addr)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	h->version = SVST_VERSION;
	h->hdr_size = SVST_HDR_SIZE;
	h->slot_size = SVST_SLOT_SIZE;
	h->max_slots = SVST_MAX_SLOTS;
	h->pid = (uint32_t)pub.pid;
	h->uid = (uint32_t)geteuid();
	h->start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	read_comm(h->comm, sizeof(h->comm));
	snprintf(h->device, sizeof(h->device), "%s", device);
	h->addr = addr;
	__atomic_store_n(&h->magic, SVST_MAGIC, __ATOMIC_RELEASE);
}

static void unpublish(void)
{
	if (pub.file && getpid() == pub.pid)
		unlinkat(pub.dirfd, pub.name, 0);
}

/* Create, lock, map and name the file; false leaves nothing behind. */
static bool create_file(const char *device, uint32_t addr)
{
	char tmp[32];
	void *map;
	int fd;

	snprintf(tmp, sizeof(tmp), ".%d.new", (int)pub.pid);
	snprintf(pub.name, sizeof(pub.name), "%d", (int)pub.pid);
	unlinkat(pub.dirfd, tmp, 0);        /* a dead process of the same pid left it */
	fd = sv_openat(pub.dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return false;
	map = MAP_FAILED;
	if (!flock(fd, LOCK_SH) && !ftruncate(fd, (off_t)MAP_BYTES) &&
	    !fallocate(fd, 0, 0, SVST_HDR_SIZE))
		map = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		sv_info("status: cannot create its file: %s", strerror(errno));
		unlinkat(pub.dirfd, tmp, 0);
		sv_close(fd);
		return false;
	}
	fill_header(map, device, addr);
	if (renameat(pub.dirfd, tmp, pub.dirfd, pub.name)) {
		munmap(map, MAP_BYTES);
		unlinkat(pub.dirfd, tmp, 0);
		sv_close(fd);
		return false;
	}
	/* The descriptor stays open: it holds the lock that says we live. */
	pub.file = map;
	pub.fd = fd;
	return true;
}

void svst_open(const char *device, uint32_t addr)
{
	pthread_mutex_lock(&pub.lock);
	if (!pub.opened) {
		pub.opened = true;
		pub.pid = getpid();
		pub.dirfd = open_dir(geteuid());
		if (pub.dirfd >= 0 && create_file(device, addr))
			atexit(unpublish);
	}
	pthread_mutex_unlock(&pub.lock);
}

/* A slot index, or -1: none free, or no room for its pages. */
static int64_t take_slot(void)
{
	if (pub.nfree)
		return pub.free_slots[--pub.nfree];
	if (pub.hwm == SVST_MAX_SLOTS)
		return -1;
	if (pub.hwm == pub.chunks * SVST_CHUNK_SLOTS) {
		off_t off = (off_t)svst_slot_off(pub.hwm);

		if (fallocate(pub.fd, 0, off, (off_t)SVST_CHUNK_SLOTS * SVST_SLOT_SIZE))
			return -1;
		pub.chunks++;
	}
	__atomic_store_n(&pub.file->hwm, pub.hwm + 1, __ATOMIC_RELEASE);
	return pub.hwm++;
}

static void *file_slot(enum svst_kind kind)
{
	struct svst_rec *r;
	int64_t slot;

	if (!pub.file || getpid() != pub.pid)
		return NULL;
	pthread_mutex_lock(&pub.lock);
	slot = take_slot();
	pthread_mutex_unlock(&pub.lock);
	if (slot < 0)
		return NULL;
	r = (struct svst_rec *)((uint8_t *)pub.file + svst_slot_off((uint32_t)slot));
	svst_write_begin(r);
	memset((uint8_t *)r + sizeof(*r), 0, SVST_SLOT_SIZE - sizeof(*r));
	r->kind = (uint16_t)kind;
	r->gen++;
	svst_write_end(r);
	return r;
}

void *svst_alloc(enum svst_kind kind)
{
	struct svst_rec *r = file_slot(kind);

	if (r)
		return r;
	if (pub.file && getpid() == pub.pid)
		__atomic_add_fetch(&pub.file->unshown[kind], 1, __ATOMIC_RELAXED);
	r = aligned_alloc(64, SVST_SLOT_SIZE);     /* hot lines aligned, as in the file */
	if (!r)
		return sink;
	memset(r, 0, SVST_SLOT_SIZE);
	r->kind = (uint16_t)kind;
	return r;
}

static void free_slot(struct svst_rec *r)
{
	uint32_t slot = (uint32_t)(((uint8_t *)r - (uint8_t *)pub.file - SVST_HDR_SIZE) / SVST_SLOT_SIZE);

	svst_write_begin(r);
	r->kind = SVST_FREE;
	svst_write_end(r);
	pthread_mutex_lock(&pub.lock);
	if (pub.nfree == pub.free_cap) {
		uint32_t cap = pub.free_cap ? pub.free_cap * 2 : 64;
		uint32_t *p = realloc(pub.free_slots, cap * sizeof(*p));

		if (!p) {                    /* the slot is lost, not reused */
			pthread_mutex_unlock(&pub.lock);
			return;
		}
		pub.free_slots = p;
		pub.free_cap = cap;
	}
	pub.free_slots[pub.nfree++] = slot;
	pthread_mutex_unlock(&pub.lock);
}

void svst_free(void *rec)
{
	struct svst_rec *r = rec;

	if (!r || rec == (void *)sink)
		return;
	if (in_file(r)) {
		if (getpid() == pub.pid)
			free_slot(r);
		return;
	}
	if (pub.file && getpid() == pub.pid && r->kind < SVST_NKINDS)
		__atomic_sub_fetch(&pub.file->unshown[r->kind], 1, __ATOMIC_RELAXED);
	free(r);
}
