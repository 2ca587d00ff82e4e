#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/chan.h"
#include "util/env.h"
#include "util/sys.h"

uint32_t sv_shm_ring_bytes(void)
{
	uint32_t kb = (uint32_t)sv_env_int("SOFTVERBS_RING_KB", 256), sz = 4096;

	while (sz < kb * 1024u && sz < (64u << 20))
		sz <<= 1;
	return sz;
}

/*
 * Where a memfd's rings lie.  One ring (UD): its header, then its data.
 * Two (a channel): a line, ring 1's data, the two headers, the receive
 * mirror of ring 0's consumer (shm/mirror.h), ring 0's data; ring 0 begins
 * at its first line and ring 1 at its last, so that the headers, the
 * mirror and both directions' first records share one page, the only one
 * an idle channel touches.
 */
#define PAGE 4096u

static size_t hdr_off(unsigned n, uint32_t size)
{
	return n == 2 ? SV_RING_LINE + (size_t)size : 0;
}

static size_t mirror_off(unsigned n, uint32_t size)
{
	return hdr_off(n, size) + n * sizeof(struct sv_ring);
}

static size_t data_off(unsigned n, uint32_t size, unsigned i)
{
	if (n == 2 && i == 1)
		return SV_RING_LINE;
	return mirror_off(n, size) + (n == 2 ? sizeof(struct sv_mirror) : 0);
}

static uint64_t start_pos(unsigned n, uint32_t size, unsigned i)
{
	return n == 2 && i == 1 ? size - SV_RING_LINE : 0;
}

static size_t rings_len(unsigned n, uint32_t size)
{
	return (data_off(n, size, 0) + size + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* The ring size a memfd of `len` bytes has, if any (checked by the caller
 * against the headers). */
static uint32_t size_of_len(unsigned n, size_t len)
{
	for (uint32_t size = PAGE; size <= (64u << 20); size <<= 1)
		if (rings_len(n, size) == len)
			return size;
	return 0;
}

struct sv_ring *sv_shm_ring_at(const struct sv_shm_map *m, unsigned i)
{
	return (struct sv_ring *)((uint8_t *)m->base + hdr_off(m->n, m->size)) + i;
}

uint8_t *sv_shm_ring_data(const struct sv_shm_map *m, unsigned i)
{
	return (uint8_t *)m->base + data_off(m->n, m->size, i);
}

int sv_shm_rings_create(struct sv_shm_map *m, unsigned n, const char *name)
{
	int fd;

	m->base = NULL;
	if (n < 1 || n > 2)
		return -EINVAL;
	fd = memfd_create(name, MFD_CLOEXEC);
	m->size = sv_shm_ring_bytes();
	m->n = n;
	m->len = rings_len(n, m->size);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, m->len)) {
		sv_close(fd);
		return -errno;
	}
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		sv_close(fd);
		return -errno;
	}
	for (unsigned i = 0; i < n; i++)
		sv_ring_init(sv_shm_ring_at(m, i), m->size, start_pos(n, m->size, i));
	return fd;
}

int sv_shm_rings_attach(struct sv_shm_map *m, int fd, unsigned n)
{
	struct stat st;

	m->base = NULL;
	m->n = n;
	if (n < 1 || n > 2 || fstat(fd, &st) || st.st_size < 0 ||
	    !(m->size = size_of_len(n, (size_t)st.st_size)))
		return -EINVAL;
	m->len = st.st_size;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return -errno;
	}
	/* Validate what the peer wrote before trusting it. */
	for (unsigned i = 0; i < n; i++) {
		struct sv_ring *r = sv_shm_ring_at(m, i);

		if (r->magic != SV_RING_MAGIC || r->size != m->size)
			goto bad;
	}
	return 0;
bad:
	sv_shm_rings_unmap(m);
	return -EINVAL;
}

void sv_shm_rings_unmap(struct sv_shm_map *m)
{
	if (m->base)
		munmap(m->base, m->len);
	m->base = NULL;
}

static void chan_layout(struct sv_shm_chan *ch, bool connector)
{
	ch->mirror = (struct sv_mirror *)((uint8_t *)ch->map.base + mirror_off(2, ch->map.size));
	ch->tx = sv_shm_ring_at(&ch->map, connector ? 0 : 1);
	ch->rx = sv_shm_ring_at(&ch->map, connector ? 1 : 0);
	ch->tx_data = sv_shm_ring_data(&ch->map, connector ? 0 : 1);
	ch->rx_data = sv_shm_ring_data(&ch->map, connector ? 1 : 0);
	ch->size = ch->map.size;
}

int sv_shm_chan_create(struct sv_shm_chan *ch)
{
	int fd = sv_shm_rings_create(&ch->map, 2, "softverbs-channel");

	if (fd >= 0)
		chan_layout(ch, true);
	return fd;
}

int sv_shm_chan_attach(struct sv_shm_chan *ch, int fd)
{
	int ret = sv_shm_rings_attach(&ch->map, fd, 2);

	if (!ret)
		chan_layout(ch, false);
	return ret;
}

void sv_shm_chan_destroy(struct sv_shm_chan *ch)
{
	sv_shm_rings_unmap(&ch->map);
}
