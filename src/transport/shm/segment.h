/*
 * This process's shared segment: what same-host peers of the same user may
 * see directly.  It holds the MR table (so an initiator can check rkeys,
 * rights and bounds itself before a cross-memory-attach access), the lock
 * that makes atomics atomic across initiators, and the progress thread's
 * sleep flag.  It is a memfd, handed to peers over a unix socket
 * (SCM_RIGHTS): no name in /dev/shm, nothing left behind if we die, and only
 * a process we chose to give it to can map it.
 */
#ifndef SV_SHM_SEGMENT_H
#define SV_SHM_SEGMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_SEG_MAGIC   0x53565347u     /* "SVSG" */
#define SV_SEG_VERSION 2
#define SV_SEG_MR_MAX  (1u << 16)      /* MR slots published to peers */

struct sv_seg_mr {
	uint32_t seq;                /* seqlock: odd while being changed */
	uint32_t key;                /* 0: no MR */
	uint32_t access;
	uint32_t pd;
	uint64_t addr, len, iova;
	uint32_t inflight;           /* peers' direct accesses in progress */
	int32_t map_fd;              /* our memfd behind [map_addr, +map_len) (mrmap.h), -1: none */
	uint64_t map_addr, map_len, map_ino;
};

/* How a peer may map an MR's memory (mrmap.h); fd -1: it may not. */
struct sv_seg_mr_map {
	int32_t fd;
	uint64_t addr, len, ino;
};

struct sv_seg {
	uint32_t magic, version;
	int32_t pid;
	uint32_t uid;
	uint64_t last_poll_ns;       /* an application thread polled a CQ */
	pthread_mutex_t atomic_lock; /* process-shared, robust */
	uint8_t pad[64];
	struct sv_seg_mr mr[SV_SEG_MR_MAX];
};

struct sv_seg *sv_seg_self(void);
/* In a forked child: the inherited segment is the parent's; make a new one. */
void sv_seg_forget_after_fork(void);
int sv_seg_fd(void);
struct sv_seg *sv_seg_map(int fd);           /* a peer's, from SCM_RIGHTS */
void sv_seg_unmap(struct sv_seg *seg);

/* MR table publication (mr.c); slot is the MR's key >> 8. */
void sv_seg_mr_publish(uint32_t slot, uint32_t key, uint32_t access, uint32_t pd,
		       uint64_t addr, uint64_t len, uint64_t iova, const struct sv_seg_mr_map *map);
/* Withdraw an MR and wait for peers' accesses to it to end; false if one
 * was still in flight after SV_SEG_RETRACT_NS (logged, sv_seg_peer_stuck). */
#define SV_SEG_RETRACT_NS (1000ull * 1000 * 1000)
bool sv_seg_mr_retract(uint32_t slot);
/* Hook for the transport: a same-host peer holds an access to MR `slot`
 * past the bound, so the channels of peers that map our segment should be
 * closed.  Only logged today. */
void sv_seg_peer_stuck(uint32_t slot);

void sv_seg_atomic_lock(struct sv_seg *seg);
void sv_seg_atomic_unlock(struct sv_seg *seg);

#endif
