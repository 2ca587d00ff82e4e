/*
 * Registered memory that same-host peers can map: syscall-free one-sided
 * operations.
 *
 * Owner side: at ibv_reg_mr the page-aligned interior of a private anonymous
 * buffer (heap, malloc, anonymous mmap) is moved onto a memfd, at the same
 * address and with the same contents, and the memfd's descriptor number is
 * published in the MR's segment entry.  At ibv_dereg_mr the memory becomes
 * private anonymous memory again.  A forked child gets private copies, as a
 * real device's fork-safe kernel gives it.  Memory that is not private
 * anonymous (files, shared mappings, the stack, huge pages) is left alone.
 *
 * Peer side: an initiator that holds a validated reference to the MR
 * (sv_cma_acquire) takes the descriptor with pidfd_getfd(2) (the same
 * permission as cross-memory attach), maps it once and from then on copies
 * with memcpy.  Whatever cannot be mapped falls back to process_vm_*v.
 *
 * Caveat (docs/ARCHITECTURE.md): bytes another thread writes into the buffer
 * during the copy at registration or deregistration are lost.
 */
#ifndef SV_SHM_MRMAP_H
#define SV_SHM_MRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "transport/shm/segment.h"

struct sv_mrmap;

/* Share [addr, addr+len)'s page-aligned interior; NULL when not possible or
 * disabled (SOFTVERBS_MR_SHARE=0, SOFTVERBS_NO_CMA=1, SOFTVERBS_TRANSPORT=tcp). */
struct sv_mrmap *sv_mrmap_share(void *addr, size_t len);
void sv_mrmap_unshare(struct sv_mrmap *m);
/* What a segment entry publishes about it (all zero / -1 for NULL). */
void sv_mrmap_describe(const struct sv_mrmap *m, int32_t *fd, uint64_t *addr, uint64_t *len,
		       uint64_t *ino);

/* Peer side: the mappings of one peer process's memory, per channel. */
struct sv_peer_map {
	uint32_t slot, key;
	uint64_t raddr, len;         /* the window in the peer */
	uint8_t *local;              /* where we mapped it */
};

struct sv_peer_maps {
	struct sv_peer_map *v;
	uint32_t n, cap;
	int pidfd;                   /* the peer process's (shm/peer.h: not ours), -1: none */
	pid_t pid;
};

/* Local address of [raddr, raddr+len) in the peer, through the MR `m`
 * (slot, key) the caller holds a reference on; NULL: use cross-memory
 * attach. */
void *sv_peer_map(struct sv_peer_maps *pm, const struct sv_seg *seg, uint32_t slot, uint32_t key,
		  uint64_t raddr, uint64_t len);
/* The same for memory the peer offered us to read (a pulled SEND): `key`
 * is its lkey, checked against its MR table; no access rights needed. */
void *sv_peer_map_pull(struct sv_peer_maps *pm, const struct sv_seg *seg, uint32_t key,
		       uint64_t addr, uint64_t len);
void sv_peer_maps_clear(struct sv_peer_maps *pm);

/* Copy the bytes of src[] into dst[] (scatter-gather, up to the shorter). */
void sv_iov_copy(const struct iovec *dst, int nd, const struct iovec *src, int ns);

#endif
