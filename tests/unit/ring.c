/* The shared-memory ring (src/transport/shm/ring.c), between two processes
 * over a MAP_SHARED mapping, as the channels use it:
 *  - a byte stream: writes and reads of random sizes and iovec shapes come
 *    out in order and intact, through many laps of a small ring, with
 *    partial writes when it is full and partial reads of records (each
 *    byte is checked against where in the ring it lay);
 *  - payload bytes that look like record words (the stream position of
 *    where they lie, with a length) are never taken for records;
 *  - a record whose length goes past the ring is not input;
 *  - an empty write, a full ring and an empty ring move nothing;
 *  - a skip takes only a whole record of exactly its length, not begun.
 * Each process has a watchdog (alarm). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/shm/ring.h"

#define SIZE  4096u
/* a ring of this test: its data right after its header */
#define DATA(r) ((uint8_t *)((r) + 1))
#define TOTAL (8u << 20)      /* bytes through the ring: 2,048 laps */

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
				exit(1); } } while (0)

/* The byte the producer puts at ring position q (64 bits, never reused):
 * mostly a mix of q, but at the start of every line the word a record
 * starting there one lap later would have.  Without the zeroed word ahead
 * of each record (ring.c), the consumer would take those for records. */
static uint8_t byte_at(uint64_t q)
{
	uint64_t w = (uint64_t)40 << 32 | (uint32_t)(q + SIZE);

	if ((q & 63) < 8)
		return (uint8_t)(w >> (8 * (q & 7)));
	return (uint8_t)(q * 7 + (q >> 9));
}

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void producer(struct sv_ring *r, pid_t child)
{
	uint8_t buf[3 * SIZE];
	uint64_t sent = 0, head_seen = 0;
	uint32_t seed = 1;

	while (sent < TOTAL) {
		size_t len = 1 + rnd(&seed) % (rnd(&seed) % 4 ? 200 : 2 * SIZE), w;
		uint64_t q = __atomic_load_n(&r->tail, __ATOMIC_RELAXED) + 8;
		struct iovec iov[3];
		int n = 1 + rnd(&seed) % 3;

		if (len > TOTAL - sent)
			len = TOTAL - sent;
		for (size_t i = 0; i < len; i++)
			buf[i] = byte_at(q + i);
		/* split into n pieces (some may be empty) */
		for (int i = 0, off = 0; i < n; i++) {
			size_t k = i == n - 1 ? len - off : rnd(&seed) % (len - off + 1);

			iov[i].iov_base = buf + off;
			iov[i].iov_len = k;
			off += k;
		}
		w = sv_ring_write(r, DATA(r), SIZE, iov, n, &head_seen);
		CHECK(w <= len);
		CHECK(w <= SIZE - 72);           /* a record never fills the ring */
		sent += w;
		if (!w && waitpid(child, NULL, WNOHANG) == child) {
			fprintf(stderr, "the consumer failed\n");
			exit(1);
		}
	}
}

/* Reads of random sizes, never past the record at the head (the test
 * peeks at its word to know where each byte lay), one or two iovecs. */
static void consumer(struct sv_ring *r)
{
	uint8_t buf[2 * SIZE];
	struct sv_ring_rd rd = { 0 };
	uint64_t got_all = 0;
	uint32_t seed = 2;

	while (got_all < TOTAL) {
		uint64_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED), word, len, q;
		size_t a, b, got;

		if (!sv_ring_has_input(r, DATA(r), SIZE))
			continue;
		word = __atomic_load_n((uint64_t *)(void *)(DATA(r) + (head & (SIZE - 1))),
				       __ATOMIC_ACQUIRE);
		len = word >> 32;
		CHECK((uint32_t)word == (uint32_t)head && len > rd.off);
		q = head + 8 + rd.off;
		a = 1 + rnd(&seed) % (rnd(&seed) % 2 ? 100 : 2 * SIZE);
		if (a > len - rd.off)
			a = len - rd.off;
		b = rnd(&seed) % 2 ? rnd(&seed) % (a + 1) : 0;
		{
			struct iovec iov[2] = { { buf, a - b }, { buf + a - b, b } };

			got = sv_ring_read(r, DATA(r), SIZE, iov, 2, &rd);
		}
		CHECK(got == a);
		for (size_t i = 0; i < got; i++)
			if (buf[i] != byte_at(q + i)) {
				fprintf(stderr, "position %llu: %u, not %u\n",
					(unsigned long long)(q + i), buf[i], byte_at(q + i));
				exit(1);
			}
		got_all += got;
	}
	CHECK(!sv_ring_has_input(r, DATA(r), SIZE));
}

static struct sv_ring *new_ring(void)
{
	struct sv_ring *r = mmap(NULL, sizeof(*r) + SIZE, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	CHECK(r != MAP_FAILED);
	sv_ring_init(r, SIZE, 0);
	return r;
}

/* One process: the edges. */
static void edges(void)
{
	struct sv_ring *r = new_ring();
	struct sv_ring_rd rd = { 0 };
	uint8_t big[2 * SIZE], out[2 * SIZE];
	uint64_t head_seen = 0;
	struct iovec in = { big, sizeof(big) }, none = { big, 0 }, o = { out, sizeof(out) };
	size_t w, total = 0;

	memset(big, 0xab, sizeof(big));
	CHECK(!sv_ring_has_input(r, DATA(r), SIZE));
	CHECK(sv_ring_read(r, DATA(r), SIZE, &o, 1, &rd) == 0);
	CHECK(sv_ring_write(r, DATA(r), SIZE, &none, 1, &head_seen) == 0);
	CHECK(!sv_ring_has_input(r, DATA(r), SIZE));
	/* fill: the first write takes what fits, then nothing more */
	w = sv_ring_write(r, DATA(r), SIZE, &in, 1, &head_seen);
	CHECK(w == SIZE - 64 - 8);
	CHECK(!sv_ring_writable(r, SIZE));
	CHECK(sv_ring_write(r, DATA(r), SIZE, &in, 1, &head_seen) == 0);
	CHECK(sv_ring_has_input(r, DATA(r), SIZE));
	/* read part of the record: it stays, and the ring stays full */
	o.iov_len = 100;
	CHECK(sv_ring_read(r, DATA(r), SIZE, &o, 1, &rd) == 100);
	CHECK(sv_ring_has_input(r, DATA(r), SIZE));
	CHECK(!sv_ring_writable(r, SIZE));
	o.iov_len = sizeof(out);
	CHECK(sv_ring_read(r, DATA(r), SIZE, &o, 1, &rd) == w - 100);
	CHECK(!sv_ring_has_input(r, DATA(r), SIZE));
	CHECK(sv_ring_writable(r, SIZE));
	for (size_t i = 0; i < w - 100; i++)
		CHECK(out[i] == 0xab);
	/* small records: one line each, 63 of them fill the ring */
	in.iov_len = 1;
	while ((w = sv_ring_write(r, DATA(r), SIZE, &in, 1, &head_seen)))
		total += w;
	CHECK(total == SIZE / 64 - 1);
	/* a ring that begins at its last line (a channel's ring 1): the
	 * first record wraps */
	{
		struct sv_ring *q = new_ring();
		struct sv_ring_rd qrd = { 0 };
		uint64_t qseen = 0;

		sv_ring_init(q, SIZE, SIZE - 64);
		in.iov_len = 100;
		o.iov_len = sizeof(out);
		CHECK(sv_ring_write(q, DATA(q), SIZE, &in, 1, &qseen) == 100);
		CHECK(sv_ring_has_input(q, DATA(q), SIZE));
		CHECK(sv_ring_read(q, DATA(q), SIZE, &o, 1, &qrd) == 100);
		CHECK(!memcmp(out, big, 100) && !sv_ring_has_input(q, DATA(q), SIZE));
	}
	/* skip: only a whole record of exactly that length, not begun */
	{
		struct sv_ring *q = new_ring();
		struct sv_ring_rd qrd = { 0 };
		uint64_t qseen = 0;
		uint8_t hdr[24];

		CHECK(!sv_ring_skip(q, DATA(q), SIZE, 24, &qrd));        /* empty */
		in.iov_len = 24;
		CHECK(sv_ring_write(q, DATA(q), SIZE, &in, 1, &qseen) == 24);
		in.iov_len = 40;
		CHECK(sv_ring_write(q, DATA(q), SIZE, &in, 1, &qseen) == 40);
		CHECK(!sv_ring_skip(q, DATA(q), SIZE, 16, &qrd));        /* shorter */
		CHECK(!sv_ring_skip(q, DATA(q), SIZE, 40, &qrd));        /* longer */
		CHECK(sv_ring_peek(q, DATA(q), SIZE, hdr, 24, &qrd));
		CHECK(sv_ring_skip(q, DATA(q), SIZE, 24, &qrd));
		o.iov_len = 8;                                            /* the next, begun */
		CHECK(sv_ring_read(q, DATA(q), SIZE, &o, 1, &qrd) == 8);
		CHECK(!sv_ring_skip(q, DATA(q), SIZE, 32, &qrd));
		o.iov_len = sizeof(out);
		CHECK(sv_ring_read(q, DATA(q), SIZE, &o, 1, &qrd) == 32);
		CHECK(!sv_ring_has_input(q, DATA(q), SIZE));
	}
	/* a length past the ring is not a record */
	{
		struct sv_ring *q = new_ring();
		uint64_t word = (uint64_t)SIZE << 32;    /* position 0, length SIZE */

		memcpy(DATA(q), &word, 8);
		CHECK(!sv_ring_has_input(q, DATA(q), SIZE));
		CHECK(sv_ring_read(q, DATA(q), SIZE, &o, 1, &rd) == 0);
		word = (uint64_t)8 << 32 | 64;            /* the wrong position */
		memcpy(DATA(q), &word, 8);
		CHECK(!sv_ring_has_input(q, DATA(q), SIZE));
	}
}

int main(void)
{
	struct sv_ring *r;
	pid_t pid;
	int st;

	alarm(50);
	edges();
	r = new_ring();
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		alarm(50);
		consumer(r);
		exit(0);
	}
	producer(r, pid);
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("ok: %u bytes through a %u-byte ring\n", TOTAL, SIZE);
	return 0;
}
