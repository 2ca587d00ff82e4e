/*
 * One-sided access to a same-host peer's registered memory by cross-memory
 * attach (process_vm_readv/writev).  The initiator checks the rkey, rights
 * and bounds in the peer's published MR table first and holds the entry's
 * inflight count during the copy, so deregistration waits for it.
 */
#ifndef SV_SHM_CMA_H
#define SV_SHM_CMA_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/shm/segment.h"

struct sv_cma_ref {
	struct sv_seg_mr *mr;        /* NULL: a zero-length access, nothing held */
	uint64_t raddr;              /* address in the peer */
};

/* 0, or an ibv_wc_status-like reason: -1 no such key / rights / bounds.
 * len 0 always succeeds and holds nothing. */
int sv_cma_acquire(struct sv_seg *seg, uint32_t pd, uint32_t rkey, uint64_t va, uint64_t len,
		   unsigned int need_access, struct sv_cma_ref *ref);
void sv_cma_release(struct sv_cma_ref *ref);
/* Copy between local iovecs and [raddr, raddr+len) in `pid`; returns bytes or -errno. */
ssize_t sv_cma_copy(pid_t pid, const struct iovec *local, int n, uint64_t raddr, size_t len,
		    int to_remote);
bool sv_cma_probe(pid_t pid, uint64_t raddr);
/* Read `len` bytes scattered in `pid` (remote) into local segments. */
ssize_t sv_cma_pull(pid_t pid, const struct iovec *local, int nl, const struct iovec *remote,
		    int nr, size_t len);

#endif
