#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/procmap.h"
#include "transport/shm/segment.h"
#include "util/log.h"
#include "util/sys.h"

static struct sv_seg *self;
static int self_fd = -1;
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;

static void seg_create(void)
{
	int fd = memfd_create("softverbs-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct sv_seg *s;

	if (fd < 0 || ftruncate(fd, sizeof(*s))) {
		sv_err("segment: %s", strerror(errno));
		if (fd >= 0)
			sv_close(fd);
		return;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		sv_close(fd);
		return;
	}
	s->magic = SV_SEG_MAGIC;
	s->version = SV_SEG_VERSION;
	s->pid = getpid();
	s->uid = getuid();
	/* Our mapping stays writable; nobody else's can be, whatever it does
	 * with the descriptor we hand out. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE))
		sv_err("segment: cannot seal it against writers: %s", strerror(errno));
	self_fd = fd;
	__atomic_store_n(&self, s, __ATOMIC_RELEASE);
}

static uint32_t stamp_clears;

void sv_seg_stamp_clearing(void)
{
	__atomic_add_fetch(&stamp_clears, 1, __ATOMIC_SEQ_CST);
}

uint32_t sv_seg_stamp_clears(void)
{
	return __atomic_load_n(&stamp_clears, __ATOMIC_ACQUIRE);
}

struct sv_seg *sv_seg_self(void)
{
	struct sv_seg *s = __atomic_load_n(&self, __ATOMIC_ACQUIRE);

	if (s)
		return s;
	pthread_mutex_lock(&self_lock);
	if (!self)
		seg_create();
	s = self;
	pthread_mutex_unlock(&self_lock);
	return s;
}

void sv_seg_forget_after_fork(void)
{
	pthread_mutex_init(&self_lock, NULL);
	sv_procmap_forget_after_fork();
	if (self_fd >= 0)
		sv_close(self_fd);
	self = NULL;       /* the mapping stays (it is the parent's); never written */
	self_fd = -1;
}

int sv_seg_fd(void)
{
	sv_seg_self();
	return self_fd;
}

static bool seg_valid(const void *base)
{
	const struct sv_seg *s = base;

	return s->magic == SV_SEG_MAGIC && s->version == SV_SEG_VERSION;
}

const struct sv_seg *sv_seg_map(int fd)
{
	return sv_procmap_get(fd, sizeof(struct sv_seg), PROT_READ, seg_valid);   /* only read */
}

void sv_seg_unmap(const struct sv_seg *seg)
{
	sv_procmap_put(seg);
}

void sv_seg_mr_publish(uint32_t slot, uint32_t key, uint32_t access, uint32_t pd,
		       uint64_t addr, uint64_t len, uint64_t iova, const struct sv_seg_mr_map *map)
{
	struct sv_seg *s = sv_seg_self();
	struct sv_seg_mr *m;

	if (!s || slot >= SV_SEG_MR_MAX)
		return;
	m = &s->mr[slot];
	__atomic_add_fetch(&m->seq, 1, __ATOMIC_SEQ_CST);    /* odd: changing */
	m->key = key;
	m->access = access;
	m->pd = pd;
	m->addr = addr;
	m->len = len;
	m->iova = iova;
	m->map_fd = map->fd;
	m->map_addr = map->addr;
	m->map_len = map->len;
	m->map_ino = map->ino;
	__atomic_add_fetch(&m->seq, 1, __ATOMIC_SEQ_CST);    /* even: stable */
}

void sv_seg_mr_retract(uint32_t slot)
{
	struct sv_seg *s = sv_seg_self();
	struct sv_seg_mr *m;

	if (!s || slot >= SV_SEG_MR_MAX)
		return;
	m = &s->mr[slot];
	__atomic_add_fetch(&m->seq, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&m->key, 0, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&m->seq, 1, __ATOMIC_SEQ_CST);
}
