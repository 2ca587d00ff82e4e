#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm/mrmap.h"
#include "util/env.h"
#include "util/list.h"
#include "util/log.h"
#include "util/sys.h"
#include "util/tsan.h"

#define SV_MRMAP_CHUNK (64ul << 20)   /* copied per step: bounds the extra memory */

/* ---- owner side ---- */

struct sv_mrmap {
	struct sv_list link;
	uintptr_t base;
	size_t len;
	int fd;                      /* -1 once private again (forked child) */
	uint64_t ino;
	int refs;                    /* MRs whose interior lies in it */
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_list maps = SV_LIST_INIT(maps);

static bool share_enabled(void)
{
	return sv_env_int("SOFTVERBS_MR_SHARE", 1) && !sv_cma_disabled() && !sv_force_tcp();
}

/* Moving memory costs about a millisecond per MiB of pages that hold data
 * (allocating and clearing the memfd's pages, freeing the old ones), at
 * registration and again at deregistration, where a NIC pins pages in
 * microseconds.  Larger MRs stay where they are: peers reach them by
 * cross-memory attach (a quarter of memcpy's bandwidth, no setup). */
static size_t share_max(void)
{
	int mib = sv_env_int("SOFTVERBS_MR_SHARE_MAX_MIB", 8);

	return mib > 0 ? (size_t)mib << 20 : 0;
}

/*
 * /proc/self/maps is read through one descriptor, opened by the first
 * registration (an application thread) and kept.  Deregistration may run
 * on rsockets' closing thread, and a descriptor opened there could be
 * closed under it by a single-threaded application that closes one of its
 * own twice (iperf3 3.12 does), which is harmless to it without our thread.
 */
static pthread_mutex_t maps_file_lock = PTHREAD_MUTEX_INITIALIZER;
static int maps_file = -1;
static dev_t maps_dev;
static ino_t maps_ino;

/* The kept descriptor, (re)opened if the application closed it: a program
 * that closes every descriptor it did not open may have reused its number
 * for a file of its own, which we must not read.  Under maps_file_lock. */
static int maps_fd(void)
{
	struct stat st;

	if (maps_file >= 0 &&
	    (fstat(maps_file, &st) || st.st_dev != maps_dev || st.st_ino != maps_ino))
		maps_file = -1;          /* no longer ours: not to be closed either */
	if (maps_file < 0) {
		maps_file = sv_open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		if (maps_file >= 0 && fstat(maps_file, &st)) {
			sv_close(maps_file);
			maps_file = -1;
		}
		if (maps_file >= 0) {
			maps_dev = st.st_dev;
			maps_ino = st.st_ino;
		}
	}
	return maps_file;
}

struct maps_reader {
	char buf[8192];
	size_t at, len;
	bool eof;
	int fd;
};

/* The next line of the file without its newline, or NULL at its end (a
 * line longer than the buffer, which a path cannot make, ends it too). */
static char *maps_line(struct maps_reader *r)
{
	for (;;) {
		char *nl = memchr(r->buf + r->at, '\n', r->len - r->at);
		ssize_t n;

		if (nl) {
			char *line = r->buf + r->at;

			*nl = 0;
			r->at = (size_t)(nl + 1 - r->buf);
			return line;
		}
		if (r->eof || (r->at == 0 && r->len == sizeof(r->buf)))
			return NULL;
		memmove(r->buf, r->buf + r->at, r->len - r->at);
		r->len -= r->at;
		r->at = 0;
		n = sv_read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
		if (n <= 0)
			r->eof = true;
		else
			r->len += (size_t)n;
	}
}

/* Does every page of [a0, a1) belong to a VMA for which `ok` holds? */
static bool range_all(uintptr_t a0, uintptr_t a1,
		      bool (*ok)(const char *perms, uint64_t off, uint64_t ino, const char *path,
				 uintptr_t start, const void *arg),
		      const void *arg)
{
	static struct maps_reader r;	/* under maps_file_lock */
	uintptr_t cur = a0;
	char *line;

	pthread_mutex_lock(&maps_file_lock);
	r.fd = maps_fd();
	r.at = r.len = 0;
	r.eof = false;
	if (r.fd < 0 || lseek(r.fd, 0, SEEK_SET)) {
		pthread_mutex_unlock(&maps_file_lock);
		return false;
	}
	while (cur < a1 && (line = maps_line(&r))) {
		unsigned long s, e, off, ino;
		unsigned int maj, min;
		char perms[5], *path;
		int n = 0;

		if (sscanf(line, "%lx-%lx %4s %lx %x:%x %lu %n", &s, &e, perms, &off, &maj, &min,
			   &ino, &n) < 7 || !n)
			break;
		path = line + n;
		if (e <= cur)
			continue;
		if (s > cur || !ok(perms, off, ino, path, s, arg))
			break;
		cur = e;
	}
	pthread_mutex_unlock(&maps_file_lock);
	return cur >= a1;
}

static bool is_private_anon(const char *perms, uint64_t off, uint64_t ino, const char *path,
			    uintptr_t start, const void *arg)
{
	(void)off; (void)start; (void)arg;
	return !strcmp(perms, "rw-p") && !ino && (!path[0] || !strcmp(path, "[heap]"));
}

static bool is_ours(const char *perms, uint64_t off, uint64_t ino, const char *path,
		    uintptr_t start, const void *arg)
{
	const struct sv_mrmap *m = arg;

	(void)path;
	return !strcmp(perms, "rw-s") && ino == m->ino && off == start - m->base;
}

/*
 * Moving memory between private pages and a memfd copies only what holds
 * data: a private anonymous page never touched (neither present nor
 * swapped, /proc/self/pagemap) reads as zeros, as does a hole of the
 * memfd (SEEK_DATA), and the destination is zeros already.  Applications
 * register fresh pools: rxm's 16 MiB ones took 19 ms to register and 16 ms
 * to deregister when every byte was copied.
 */
#define SV_PM_PRESENT (1ull << 63)
#define SV_PM_SWAPPED (1ull << 62)

/* Copy the pages of [src, src+len) that hold data to dst. */
static void copy_touched(void *dst, uintptr_t src, size_t len, int pagemap)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = len / page, i = 0;
	uint64_t ent[512];

	while (i < n) {
		size_t k = n - i < 512 ? n - i : 512, run;
		ssize_t r = pagemap < 0 ? -1 :
			    sv_pread(pagemap, ent, k * sizeof(ent[0]), (off_t)((src / page + i) * 8));

		if (r != (ssize_t)(k * sizeof(ent[0]))) {     /* cannot tell: copy it all */
			memcpy((char *)dst + i * page, (void *)(src + i * page), (n - i) * page);
			return;
		}
		for (size_t j = 0; j < k; j += run) {
			bool data = ent[j] & (SV_PM_PRESENT | SV_PM_SWAPPED);

			for (run = 1; j + run < k &&
			     !!(ent[j + run] & (SV_PM_PRESENT | SV_PM_SWAPPED)) == data; run++)
				;
			if (data)
				memcpy((char *)dst + (i + j) * page, (void *)(src + (i + j) * page),
				       run * page);
		}
		i += k;
	}
}

/* Replace [base, base+len) by `fd`'s pages [0, len), same contents. */
static int move_to_memfd(uintptr_t base, size_t len, int fd)
{
	int pagemap = sv_open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	for (size_t off = 0; off < len; off += SV_MRMAP_CHUNK) {
		size_t k = len - off < SV_MRMAP_CHUNK ? len - off : SV_MRMAP_CHUNK;
		void *tmp = mmap(NULL, k, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);

		if (tmp == MAP_FAILED) {
			if (pagemap >= 0)
				sv_close(pagemap);
			return -errno;
		}
		copy_touched(tmp, base + off, k, pagemap);
		munmap(tmp, k);
		if (mmap((void *)(base + off), k, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
			 (off_t)off) == MAP_FAILED) {
			/* The old pages may be gone already (mmap(2)): nothing to go back to. */
			sv_err("registered memory at %#lx lost: %s", (unsigned long)(base + off),
			       strerror(errno));
			abort();
		}
	}
	if (pagemap >= 0)
		sv_close(pagemap);
	return 0;
}

/* Copy [off, off+k) of the memfd, mapped at src, to dst: its data only. */
static void copy_data(void *dst, uintptr_t src, int fd, off_t off, size_t k)
{
	off_t at = off, end = off + (off_t)k;

	while (at < end) {
		off_t d = lseek(fd, at, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			return;                  /* only a hole from here */
		if (d < 0) {
			d = at;                  /* cannot tell: copy the rest */
			h = end;
		} else {
			if (d >= end)
				return;
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0 || h > end)
				h = end;
		}
		memcpy((char *)dst + (d - off), (void *)(src + (uintptr_t)(d - off)), (size_t)(h - d));
		at = h;
	}
}

/* The reverse: private anonymous pages with the same contents. */
static void move_to_private(uintptr_t base, size_t len, int fd)
{
	for (size_t off = 0; off < len; off += SV_MRMAP_CHUNK) {
		size_t k = len - off < SV_MRMAP_CHUNK ? len - off : SV_MRMAP_CHUNK;
		void *tmp = mmap(NULL, k, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (tmp == MAP_FAILED) {
			sv_err("cannot make registered memory private again: %s", strerror(errno));
			return;           /* it stays shared: still valid memory */
		}
		copy_data(tmp, base + off, fd, (off_t)off, k);
		if (mremap(tmp, k, k, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)(base + off)) ==
		    MAP_FAILED) {
			sv_err("cannot make registered memory private again: %s", strerror(errno));
			munmap(tmp, k);
			return;
		}
	}
}

/* A forked child must not share its parent's registered memory. */
static void atfork_child(void)
{
	struct sv_list *pos;

	pthread_mutex_init(&maps_lock, NULL);
	pthread_mutex_init(&maps_file_lock, NULL);
	if (maps_file >= 0)             /* it names the parent's maps */
		sv_close(maps_file);
	maps_file = -1;
	for (pos = maps.next; pos != &maps; pos = pos->next) {
		struct sv_mrmap *m = sv_container_of(pos, struct sv_mrmap, link);

		if (m->fd < 0)
			continue;
		move_to_private(m->base, m->len, m->fd);
		sv_close(m->fd);
		m->fd = -1;
	}
}

static void install_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static struct sv_mrmap *find_overlap(uintptr_t a0, uintptr_t a1)
{
	struct sv_list *pos;

	for (pos = maps.next; pos != &maps; pos = pos->next) {
		struct sv_mrmap *m = sv_container_of(pos, struct sv_mrmap, link);

		if (a0 < m->base + m->len && m->base < a1)
			return m;
	}
	return NULL;
}

static struct sv_mrmap *share_new(uintptr_t a0, uintptr_t a1)
{
	struct sv_mrmap *m = calloc(1, sizeof(*m));
	struct stat st;

	if (!m)
		return NULL;
	m->base = a0;
	m->len = a1 - a0;
	m->refs = 1;
	m->fd = memfd_create("softverbs-mr", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, (off_t)m->len) || fstat(m->fd, &st) ||
	    move_to_memfd(a0, m->len, m->fd)) {
		if (m->fd >= 0)
			sv_close(m->fd);
		free(m);
		return NULL;
	}
	m->ino = st.st_ino;
	sv_list_add_tail(&maps, &m->link);
	sv_info("registered memory %#lx+%zu: peers on this host may map it",
		(unsigned long)a0, m->len);
	return m;
}

struct sv_mrmap *sv_mrmap_share(void *addr, size_t len)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a0 = ((uintptr_t)addr + page - 1) & ~(page - 1);
	uintptr_t a1 = ((uintptr_t)addr + len) & ~(page - 1);
	struct sv_mrmap *m;

	if (!addr || (uintptr_t)addr + len < (uintptr_t)addr || a1 <= a0 || !share_enabled() ||
	    a1 - a0 > share_max())
		return NULL;
	pthread_once(&once, install_atfork);
	pthread_mutex_lock(&maps_lock);
	m = find_overlap(a0, a1);
	if (m) {
		/* Inside one we made (and it is still there): share it; a partial
		 * overlap is served by cross-memory attach. */
		if (m->fd >= 0 && a0 >= m->base && a1 <= m->base + m->len &&
		    range_all(a0, a1, is_ours, m))
			m->refs++;
		else
			m = NULL;
	} else if (range_all(a0, a1, is_private_anon, NULL)) {
		m = share_new(a0, a1);
	}
	pthread_mutex_unlock(&maps_lock);
	return m;
}

void sv_mrmap_unshare(struct sv_mrmap *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&maps_lock);
	if (--m->refs) {
		pthread_mutex_unlock(&maps_lock);
		return;
	}
	sv_list_del(&m->link);
	pthread_mutex_unlock(&maps_lock);
	/* Only if the application has not unmapped or replaced it meanwhile. */
	if (m->fd >= 0 && range_all(m->base, m->base + m->len, is_ours, m))
		move_to_private(m->base, m->len, m->fd);
	if (m->fd >= 0)
		sv_close(m->fd);
	free(m);
}

void sv_mrmap_describe(const struct sv_mrmap *m, int32_t *fd, uint64_t *addr, uint64_t *len,
		       uint64_t *ino)
{
	*fd = m && m->fd >= 0 ? m->fd : -1;
	*addr = m ? m->base : 0;
	*len = m && m->fd >= 0 ? m->len : 0;
	*ino = m ? m->ino : 0;
}

/* ---- peer side ---- */

static int peer_fd(struct sv_peer_maps *pm, int32_t remote_fd)
{
	if (pm->pidfd < 0)
		return -1;
	return (int)syscall(SYS_pidfd_getfd, pm->pidfd, remote_fd, 0);
}

/* Drop mappings of MRs the peer has deregistered or re-registered. */
static void peer_sweep(struct sv_peer_maps *pm, const struct sv_seg *seg)
{
	for (uint32_t i = 0; i < pm->n;) {
		struct sv_peer_map *p = &pm->v[i];

		if (__atomic_load_n(&seg->mr[p->slot].key, __ATOMIC_ACQUIRE) == p->key) {
			i++;
			continue;
		}
		if (p->local)
			munmap(p->local, p->len);
		*p = pm->v[--pm->n];
	}
}

/* Map the peer's memfd behind MR `slot` (NULL local: it has none, or we
 * cannot take it; remembered so that we do not try again per operation). */
static void *peer_open(struct sv_peer_maps *pm, const struct sv_seg_mr *m)
{
	int32_t rfd = m->map_fd;
	uint64_t len = m->map_len, ino = m->map_ino;
	struct stat st;
	void *local;
	int fd;

	if (rfd < 0 || !len)
		return NULL;
	/* The caller's reference keeps the MR, hence the descriptor, alive. */
	fd = peer_fd(pm, rfd);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (uint64_t)st.st_ino != ino || (uint64_t)st.st_size < len) {
		sv_close(fd);
		return NULL;
	}
	local = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	sv_close(fd);
	if (local == MAP_FAILED)
		return NULL;
	sv_info("mapped %" PRIu64 " bytes of pid %d's registered memory", len, (int)pm->pid);
	return local;
}

static struct sv_peer_map *peer_add(struct sv_peer_maps *pm, const struct sv_seg *seg, uint32_t slot,
				    uint32_t key)
{
	const struct sv_seg_mr *m = &seg->mr[slot];
	struct sv_peer_map *p;

	peer_sweep(pm, seg);
	if (pm->n == pm->cap) {
		uint32_t cap = pm->cap ? 2 * pm->cap : 8;
		struct sv_peer_map *v = realloc(pm->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		pm->v = v;
		pm->cap = cap;
	}
	p = &pm->v[pm->n++];
	p->slot = slot;
	p->key = key;
	p->raddr = m->map_addr;
	p->local = peer_open(pm, m);
	p->len = p->local ? m->map_len : 0;
	return p;
}

void *sv_peer_map(struct sv_peer_maps *pm, const struct sv_seg *seg, uint32_t slot, uint32_t key,
		  uint64_t raddr, uint64_t len)
{
	struct sv_peer_map *p = NULL;

	for (uint32_t i = 0; i < pm->n; i++)
		if (pm->v[i].slot == slot && pm->v[i].key == key) {
			p = &pm->v[i];
			break;
		}
	if (!p)
		p = peer_add(pm, seg, slot, key);
	if (!p || !p->local || raddr < p->raddr || len > p->len || raddr - p->raddr > p->len - len)
		return NULL;
	return p->local + (raddr - p->raddr);
}

void *sv_peer_map_pull(struct sv_peer_maps *pm, const struct sv_seg *seg, uint32_t key,
		       uint64_t addr, uint64_t len)
{
	uint32_t slot = key >> 8, seq;
	const struct sv_seg_mr *m;
	bool ok;

	if (!seg || slot >= SV_SEG_MR_MAX || !len)
		return NULL;
	m = &seg->mr[slot];
	seq = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
	ok = !(seq & 1) && __atomic_load_n(&m->key, __ATOMIC_ACQUIRE) == key &&
	     !(m->access & SV_SEG_WINDOW) && addr >= m->addr && len <= m->len && addr - m->addr <= m->len - len &&
	     __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) == seq;
	/* The requester keeps the MR until our ACK (deregistering it earlier
	 * is the application's error, and leaves us a stale, harmless map). */
	return ok ? sv_peer_map(pm, seg, slot, key, addr, len) : NULL;
}

void sv_iov_copy(const struct iovec *dst, int nd, const struct iovec *src, int ns)
{
	size_t doff = 0, soff = 0;
	int i = 0, j = 0;

	sv_dma_begin();         /* application buffers on both sides (util/tsan.h) */
	while (i < nd && j < ns) {
		size_t k = dst[i].iov_len - doff;

		if (src[j].iov_len - soff < k)
			k = src[j].iov_len - soff;
		memcpy((uint8_t *)dst[i].iov_base + doff, (const uint8_t *)src[j].iov_base + soff, k);
		doff += k;
		soff += k;
		if (doff == dst[i].iov_len) {
			i++;
			doff = 0;
		}
		if (soff == src[j].iov_len) {
			j++;
			soff = 0;
		}
	}
	sv_dma_end();
}

void sv_peer_maps_clear(struct sv_peer_maps *pm)
{
	for (uint32_t i = 0; i < pm->n; i++)
		if (pm->v[i].local)
			munmap(pm->v[i].local, pm->v[i].len);
	free(pm->v);
	memset(pm, 0, sizeof(*pm));
	pm->pidfd = -1;
}
