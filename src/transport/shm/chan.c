#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transport/shm/chan.h"
#include "util/env.h"

static uint32_t ring_bytes(void)
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

static void chan_layout(struct sv_shm_chan *ch, uint32_t size, bool connector)
{
	struct sv_ring *r0 = ch->base, *r1 = (void *)((char *)ch->base + ring_span(size));

	ch->tx = connector ? r0 : r1;
	ch->rx = connector ? r1 : r0;
	ch->size = size;
}

int sv_shm_chan_create(struct sv_shm_chan *ch)
{
	uint32_t size = ring_bytes();
	int fd = memfd_create("softverbs-channel", MFD_CLOEXEC);

	ch->len = 2 * ring_span(size);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, ch->len)) {
		close(fd);
		return -errno;
	}
	ch->base = mmap(NULL, ch->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ch->base == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	sv_ring_init(ch->base, size);
	sv_ring_init((void *)((char *)ch->base + ring_span(size)), size);
	chan_layout(ch, size, true);
	return fd;
}

int sv_shm_chan_attach(struct sv_shm_chan *ch, int fd)
{
	struct stat st;
	struct sv_ring *r0;
	uint32_t size;

	if (fstat(fd, &st) || st.st_size < (off_t)(2 * sizeof(struct sv_ring)))
		return -EINVAL;
	ch->len = st.st_size;
	ch->base = mmap(NULL, ch->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ch->base == MAP_FAILED)
		return -errno;
	r0 = ch->base;
	size = r0->size;
	/* Validate what the peer wrote before trusting it. */
	if (r0->magic != SV_RING_MAGIC || !size || (size & (size - 1)) ||
	    2 * ring_span(size) != ch->len) {
		munmap(ch->base, ch->len);
		return -EINVAL;
	}
	chan_layout(ch, size, false);
	if (ch->tx->magic != SV_RING_MAGIC || ch->tx->size != size) {
		munmap(ch->base, ch->len);
		return -EINVAL;
	}
	return 0;
}

void sv_shm_chan_destroy(struct sv_shm_chan *ch)
{
	if (ch->base)
		munmap(ch->base, ch->len);
	ch->base = NULL;
}
