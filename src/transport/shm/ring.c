#include <string.h>

#include "transport/shm/ring.h"
#include "util/tsan.h"

void sv_ring_init(struct sv_ring *r, uint32_t size)
{
	memset(r, 0, sizeof(*r));
	r->magic = SV_RING_MAGIC;
	r->size = size;
}

size_t sv_ring_readable(const struct sv_ring *r, uint32_t size)
{
	uint64_t n = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) -
		     __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	return n > size ? size : n;
}

/* Copy `len` bytes at ring offset `pos` to/from `buf`, wrapping.  `buf` is
 * often the application's buffer (payloads go straight between it and the
 * ring): DMA, hidden from TSan (util/tsan.h). */
static void ring_copy(struct sv_ring *r, uint32_t size, uint64_t pos, uint8_t *buf, size_t len,
		      int to_ring)
{
	size_t off = pos & (size - 1), first = size - off;

	if (first > len)
		first = len;
	sv_dma_begin();
	if (to_ring) {
		memcpy(r->data + off, buf, first);
		memcpy(r->data, buf + first, len - first);
	} else {
		memcpy(buf, r->data + off, first);
		memcpy(buf + first, r->data, len - first);
	}
	sv_dma_end();
}

static size_t ring_room(uint64_t head, uint64_t tail, uint32_t size)
{
	uint64_t used = tail - head;

	return used > size ? 0 : size - (size_t)used;
}

size_t sv_ring_write(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n,
		     uint64_t *head_seen)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
	size_t want = 0, room = ring_room(*head_seen, tail, size), done = 0;

	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	if (room < want) {
		*head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		room = ring_room(*head_seen, tail, size);
	}

	for (int i = 0; i < n && room; i++) {
		size_t k = iov[i].iov_len < room ? iov[i].iov_len : room;

		ring_copy(r, size, tail + done, iov[i].iov_base, k, 1);
		done += k;
		room -= k;
	}
	if (done)
		__atomic_store_n(&r->tail, tail + done, __ATOMIC_RELEASE);
	return done;
}

size_t sv_ring_read(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
	size_t avail = tail - head > size ? size : (size_t)(tail - head), done = 0;

	for (int i = 0; i < n && avail; i++) {
		size_t k = iov[i].iov_len < avail ? iov[i].iov_len : avail;

		ring_copy(r, size, head + done, iov[i].iov_base, k, 0);
		done += k;
		avail -= k;
	}
	if (done)
		__atomic_store_n(&r->head, head + done, __ATOMIC_RELEASE);
	return done;
}
