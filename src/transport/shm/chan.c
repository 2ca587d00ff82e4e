#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/chan.h"
#include "util/env.h"

uint32_t sv_shm_ring_bytes(void)
{
	uint32_t kb = (uint32_t)sv_env_int("SOFTVERBS_RING_KB", 256), sz = 4096;

	while (sz < kb * 1024u && sz < (64u << 20))
		sz <<= 1;
	return sz;
}

static size_t ring_span(uint32_t size)
{
	return (sizeof(struct sv_ring) + size + 4095) & ~(size_t)4095;
}

struct sv_ring *sv_shm_ring_at(const struct sv_shm_map *m, unsigned i)
{
	return (void *)((char *)m->base + i * ring_span(m->size));
}

int sv_shm_rings_create(struct sv_shm_map *m, unsigned n, const char *name)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	m->size = sv_shm_ring_bytes();
	m->len = n * ring_span(m->size);
	m->base = NULL;
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, m->len)) {
		close(fd);
		return -errno;
	}
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		close(fd);
		return -errno;
	}
	for (unsigned i = 0; i < n; i++)
		sv_ring_init(sv_shm_ring_at(m, i), m->size);
	return fd;
}

int sv_shm_rings_attach(struct sv_shm_map *m, int fd, unsigned n)
{
	struct stat st;
	struct sv_ring *r0;

	m->base = NULL;
	if (fstat(fd, &st) || st.st_size < (off_t)(n * sizeof(struct sv_ring)))
		return -EINVAL;
	m->len = st.st_size;
	m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m->base == MAP_FAILED) {
		m->base = NULL;
		return -errno;
	}
	r0 = m->base;
	m->size = r0->size;
	/* Validate what the peer wrote before trusting it. */
	if (r0->magic != SV_RING_MAGIC || !m->size || (m->size & (m->size - 1)) ||
	    n * ring_span(m->size) != m->len)
		goto bad;
	for (unsigned i = 1; i < n; i++) {
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
	ch->tx = sv_shm_ring_at(&ch->map, connector ? 0 : 1);
	ch->rx = sv_shm_ring_at(&ch->map, connector ? 1 : 0);
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
