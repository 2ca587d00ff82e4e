/*
 * One-sided access to a same-host peer's registered memory by cross-memory
 * attach (process_vm_readv/writev).  The initiator checks the rkey, rights
 * and bounds in the peer's published MR table (read-only to it) first.  A
 * copy into or out of the peer's address space also announces the MR slot
 * in the ring the initiator writes (struct sv_ring.direct_slot) until it
 * ends, so the peer's ibv_dereg_mr can wait for it (transport.h:
 * sv_conn_shm_wait_direct); memory the initiator maps (mrmap.h) needs no
 * announcement, since deregistration takes it back from the mapping.
 */
#ifndef SV_SHM_CMA_H
#define SV_SHM_CMA_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/shm/segment.h"

struct sv_cma_ref {
	uint32_t *announce;          /* the word to clear at release, or NULL */
	uint64_t raddr;              /* address in the peer */
};

/* 0; -EACCES: no such key, rights or bounds; -EAGAIN: a memory window's
 * key, which the owner checks (SV_SEG_WINDOW).  len 0 always succeeds.
 * With `announce`, the slot is announced there until sv_cma_release. */
int sv_cma_acquire(const struct sv_seg *seg, uint32_t pd, uint32_t rkey, uint64_t va,
		   uint64_t len, unsigned int need_access, uint32_t *announce,
		   struct sv_cma_ref *ref);
void sv_cma_release(struct sv_cma_ref *ref);
/* Copy between local iovecs and [raddr, raddr+len) in `pid`; returns bytes or -errno. */
ssize_t sv_cma_copy(pid_t pid, const struct iovec *local, int n, uint64_t raddr, size_t len,
		    int to_remote);
bool sv_cma_probe(pid_t pid, uint64_t raddr);
/* Read `len` bytes scattered in `pid` (remote) into local segments. */
ssize_t sv_cma_pull(pid_t pid, const struct iovec *local, int nl, const struct iovec *remote,
		    int nr, size_t len);

#endif
