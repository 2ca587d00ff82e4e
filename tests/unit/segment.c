/* The shared segment (src/transport/shm/segment.c) and the checks an
 * initiator makes in it (cma.c): peers can only read it, whatever they do
 * with its descriptor, and a cross-memory-attach copy is announced in the
 * initiator's own word before the check that the owner's dereg makes fail. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "transport/shm/cma.h"
#include "transport/shm/segment.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); \
				exit(1); } } while (0)

int main(void)
{
	struct sv_seg *s = sv_seg_self();
	struct sv_seg_mr_map none = { .fd = -1 };
	const struct sv_seg *peer;
	struct sv_cma_ref ref;
	uint32_t announce = 0;
	void *w;

	alarm(20);
	CHECK(s);
	/* a peer's view: read-only, and the descriptor cannot make it writable */
	w = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, sv_seg_fd(), 0);
	CHECK(w == MAP_FAILED && errno == EPERM);
	CHECK(write(sv_seg_fd(), "x", 1) < 0);
	peer = sv_seg_map(sv_seg_fd());
	CHECK(peer);

	sv_seg_mr_publish(3, 0x3a7, IBV_ACCESS_REMOTE_WRITE, 1, 0x10000, 4096, 0x10000, &none);
	CHECK(peer->mr[3].key == 0x3a7);

	/* a good check announces the slot until release */
	CHECK(!sv_cma_acquire(peer, 1, 0x3a7, 0x10010, 16, IBV_ACCESS_REMOTE_WRITE, &announce,
			      &ref));
	CHECK(announce == 4 && ref.raddr == 0x10010);
	sv_cma_release(&ref);
	CHECK(announce == 0);
	/* a failed one (rights, bounds, PD, key) leaves nothing announced */
	CHECK(sv_cma_acquire(peer, 1, 0x3a7, 0x10010, 16, IBV_ACCESS_REMOTE_READ, &announce, &ref));
	CHECK(sv_cma_acquire(peer, 1, 0x3a7, 0x10ff0, 32, IBV_ACCESS_REMOTE_WRITE, &announce, &ref));
	CHECK(sv_cma_acquire(peer, 2, 0x3a7, 0x10010, 16, IBV_ACCESS_REMOTE_WRITE, &announce, &ref));
	CHECK(sv_cma_acquire(peer, 1, 0x3a6, 0x10010, 16, IBV_ACCESS_REMOTE_WRITE, &announce, &ref));
	CHECK(announce == 0);
	/* zero length needs no key (IB C9-88) */
	CHECK(!sv_cma_acquire(peer, 9, 0, 0, 0, IBV_ACCESS_REMOTE_WRITE, &announce, &ref));
	CHECK(announce == 0);

	/* withdrawn: every later check fails */
	sv_seg_mr_retract(3);
	CHECK(peer->mr[3].key == 0);
	CHECK(sv_cma_acquire(peer, 1, 0x3a7, 0x10010, 16, IBV_ACCESS_REMOTE_WRITE, &announce,
			     &ref));
	CHECK(announce == 0);
	sv_seg_unmap(peer);
	return 0;
}
