/* The MR table of the shared segment (src/transport/shm/segment.c):
 * withdrawing an MR waits for peers' accesses in flight, but a peer that
 * never ends one (it maps the segment and can write its count) holds
 * ibv_dereg_mr for SV_SEG_RETRACT_NS at most, not forever. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "transport/shm/segment.h"
#include "util/time.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
				exit(1); } } while (0)

int main(void)
{
	struct sv_seg *s = sv_seg_self();
	struct sv_seg_mr_map none = { .fd = -1 };
	uint64_t t0;

	alarm(20);
	CHECK(s);
	sv_seg_mr_publish(3, 0x3a7, 0, 1, 0x10000, 4096, 0x10000, &none);
	CHECK(s->mr[3].key == 0x3a7);

	/* nothing in flight: at once */
	t0 = sv_now_ns();
	CHECK(sv_seg_mr_retract(3));
	CHECK(s->mr[3].key == 0);
	CHECK(sv_now_ns() - t0 < SV_SEG_RETRACT_NS / 10);

	/* an access that never ends: given up after the bound */
	sv_seg_mr_publish(3, 0x3a8, 0, 1, 0x10000, 4096, 0x10000, &none);
	__atomic_add_fetch(&s->mr[3].inflight, 1, __ATOMIC_SEQ_CST);
	t0 = sv_now_ns();
	CHECK(!sv_seg_mr_retract(3));
	CHECK(s->mr[3].key == 0);
	CHECK(sv_now_ns() - t0 >= SV_SEG_RETRACT_NS);
	CHECK(sv_now_ns() - t0 < 3 * SV_SEG_RETRACT_NS);
	return 0;
}
