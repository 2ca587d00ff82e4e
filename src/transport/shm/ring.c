#include <string.h>

#include "transport/shm/ring.h"
#include "util/tsan.h"
#include "util/stamp.h"

/*
 * A record at stream position P (a multiple of SV_RING_LINE) is the word
 * `len << 32 | (uint32_t)P`, then `len` bytes, wrapping at the end of the
 * data.  The producer stores the word last (release).  Before that, the
 * word where its next record will start must be 0: so the word at the
 * consumer's position is 0 or the record it waits for, never bytes left
 * there by an earlier lap, which could read as a record.  The producer
 * zeroes the first word of free lines ahead of it, SV_RING_CLEAR bytes at
 * a time (`cleared`): zeroing just the next record's word would move the
 * very line a caught-up consumer spins on twice per record.  Free space
 * ends one line short of the consumer, for that next word.  The position
 * in the word is a second check, and a length is never trusted beyond the
 * ring.
 */
#define LINE_MASK ((uint64_t)SV_RING_LINE - 1)
#define SV_RING_CLEAR 2048u

static uint64_t rec_span(uint64_t len) { return (8 + len + LINE_MASK) & ~LINE_MASK; }
static uint64_t max_len(uint32_t size) { return size - SV_RING_LINE - 8; }

static uint64_t *word_at(const uint8_t *data, uint32_t size, uint64_t pos)
{
	return (uint64_t *)(void *)(data + (pos & (size - 1)));
}

void sv_ring_init(struct sv_ring *r, uint32_t size, uint64_t start)
{
	/* the data is a new memfd's: zeros, so no record anywhere */
	memset(r, 0, sizeof(*r));
	r->magic = SV_RING_MAGIC;
	r->size = size;
	r->head = r->tail = start;
	r->cleared = start + size;
}

/* The length of the record at `pos`, or 0 if it is not there (yet). */
static uint64_t record_at(const uint8_t *data, uint32_t size, uint64_t pos)
{
	uint64_t w = __atomic_load_n(word_at(data, size, pos), __ATOMIC_ACQUIRE);
	uint64_t len = w >> 32;

	if ((uint32_t)w != (uint32_t)pos || len > max_len(size))
		return 0;
	return len;
}

bool sv_ring_has_input(const struct sv_ring *r, const uint8_t *data, uint32_t size)
{
	return record_at(data, size, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE)) != 0;
}

uint32_t sv_ring_record_len(const struct sv_ring *r, const uint8_t *data, uint32_t size)
{
	return (uint32_t)record_at(data, size, __atomic_load_n(&r->head, __ATOMIC_ACQUIRE));
}

/* Record space from the producer's point of view, given the consumer's
 * position `head`: the line past the last record stays free (above). */
static uint64_t space(uint64_t head, uint64_t tail, uint32_t size)
{
	uint64_t used = tail - head;

	return used + SV_RING_LINE > size ? 0 : size - SV_RING_LINE - used;
}

bool sv_ring_writable(const struct sv_ring *r, uint32_t size)
{
	return space(__atomic_load_n(&r->head, __ATOMIC_ACQUIRE),
		     __atomic_load_n(&r->tail, __ATOMIC_RELAXED), size) >= SV_RING_LINE;
}

/* Copy `len` bytes at ring offset `pos` to/from `buf`, wrapping.  `buf` is
 * often the application's buffer (payloads go straight between it and the
 * ring): DMA, hidden from TSan (util/tsan.h). */
static void ring_copy(uint8_t *data, uint32_t size, uint64_t pos, uint8_t *buf, size_t len,
		      int to_ring)
{
	size_t off = pos & (size - 1), first = size - off;

	if (first > len)
		first = len;
	sv_dma_begin();
	if (to_ring) {
		memcpy(data + off, buf, first);
		memcpy(data, buf + first, len - first);
	} else {
		memcpy(buf, data + off, first);
		memcpy(buf + first, data, len - first);
	}
	sv_dma_end();
}

/* Make the word at `next` 0 if it is not known to be: zero the first word
 * of the free lines from `next` on, up to SV_RING_CLEAR past it or the
 * consumer's lap. */
static void clear_ahead(struct sv_ring *r, uint8_t *data, uint32_t size, uint64_t next,
			uint64_t head)
{
	uint64_t to;

	if (next < __atomic_load_n(&r->cleared, __ATOMIC_RELAXED))
		return;
	/* from `next`: the lines before it hold the record just written */
	to = next + SV_RING_CLEAR < head + size ? next + SV_RING_CLEAR : head + size;
	for (uint64_t pos = next; pos < to; pos += SV_RING_LINE)
		__atomic_store_n(word_at(data, size, pos), 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->cleared, to, __ATOMIC_RELAXED);
}

bool sv_ring_fits(struct sv_ring *r, uint32_t size, size_t len, uint64_t *head_seen)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);

	if (len > max_len(size))
		return false;
	if (space(*head_seen, tail, size) >= rec_span(len))
		return true;
	*head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
	return space(*head_seen, tail, size) >= rec_span(len);
}

size_t sv_ring_write(struct sv_ring *r, uint8_t *data, uint32_t size, const struct iovec *iov,
		     int n, uint64_t *head_seen)
{
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED), room, next;
	size_t want = 0, done = 0;

	sv_stamp(SV_ST_RING_WRITE);
	for (int i = 0; i < n; i++)
		want += iov[i].iov_len;
	if (!want)
		return 0;
	room = space(*head_seen, tail, size);
	if (room < rec_span(want)) {
		*head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		room = space(*head_seen, tail, size);
	}
	if (room < SV_RING_LINE)
		return 0;
	room = (room & ~LINE_MASK) - 8;          /* the most one record takes */
	if (want > room)
		want = room;
	for (int i = 0; i < n && done < want; i++) {
		size_t k = iov[i].iov_len < want - done ? iov[i].iov_len : want - done;

		ring_copy(data, size, tail + 8 + done, iov[i].iov_base, k, 1);
		done += k;
	}
	next = tail + rec_span(done);
	clear_ahead(r, data, size, next, *head_seen);
	__atomic_store_n(word_at(data, size, tail), (uint64_t)done << 32 | (uint32_t)tail,
			 __ATOMIC_RELEASE);
	__atomic_store_n(&r->tail, next, __ATOMIC_RELAXED);
	sv_stamp(SV_ST_RING_WRITTEN);
	return done;
}

bool sv_ring_peek(const struct sv_ring *r, const uint8_t *data, uint32_t size, void *buf,
		  size_t len, const struct sv_ring_rd *rd)
{
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	if (record_at(data, size, head) < rd->off + len)
		return false;
	ring_copy((uint8_t *)data, size, head + 8 + rd->off, buf, len, 0);
	return true;
}

bool sv_ring_skip(struct sv_ring *r, const uint8_t *data, uint32_t size, size_t len,
		  const struct sv_ring_rd *rd)
{
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);

	if (rd->off || !len || record_at(data, size, head) != len)
		return false;
	__atomic_store_n(&r->head, head + rec_span(len), __ATOMIC_RELEASE);
	return true;
}

/* Where the next record is depends on the word of this one: a run of
 * small records would take one cache miss after the other.  Asking for the
 * lines ahead at once lets their transfers overlap. */
#define SV_RING_PREFETCH 4

size_t sv_ring_read(struct sv_ring *r, const uint8_t *data, uint32_t size, const struct iovec *iov,
		    int n, struct sv_ring_rd *rd)
{
	uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), start = head;
	size_t done = 0;

	for (uint64_t k = 1; k <= SV_RING_PREFETCH; k++)
		__builtin_prefetch(data + ((head + k * SV_RING_LINE) & (size - 1)));

	for (int i = 0; i < n; i++) {
		size_t got = 0;

		while (got < iov[i].iov_len) {
			uint64_t len = record_at(data, size, head);
			size_t k;

			if (len <= rd->off)
				goto out;
			k = len - rd->off < iov[i].iov_len - got ? len - rd->off : iov[i].iov_len - got;
			ring_copy((uint8_t *)data, size, head + 8 + rd->off, (uint8_t *)iov[i].iov_base + got,
				  k, 0);
			got += k;
			done += k;
			rd->off += (uint32_t)k;
			if (rd->off == len) {
				head += rec_span(len);
				rd->off = 0;
			}
		}
	}
out:
	if (head != start)
		__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
	return done;
}
