/*
 * This process's shared segment: what same-host peers of the same user may
 * see directly, and only read.  It holds the MR table (so an initiator can
 * check rkeys, rights and bounds itself before a direct access) and the
 * poll stamp.  Peers map it read-only: nothing a peer writes can block our
 * verbs (a copy it announces is announced in the ring it writes, shm/cma.h).
 * It is a memfd, handed to peers over a unix socket (SCM_RIGHTS): no name
 * in /dev/shm, nothing left behind if we die, and only a process we chose
 * to give it to can map it.
 */
#ifndef SV_SHM_SEGMENT_H
#define SV_SHM_SEGMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_SEG_MAGIC   0x53565347u     /* "SVSG" */
#define SV_SEG_VERSION 4                /* 4: SV_SEG_WINDOW entries */
#define SV_SEG_MR_MAX  (1u << 16)      /* MR slots published to peers */
/* In an entry's access: the key is a memory window's, whose rules (the QP
 * it is bound to) only its owner checks: peers send such accesses to it. */
#define SV_SEG_WINDOW  (1u << 31)

struct sv_seg_mr {
	uint32_t seq;                /* seqlock: odd while being changed */
	uint32_t key;                /* 0: no MR */
	uint32_t access;
	uint32_t pd;
	uint64_t addr, len, iova;
	int32_t map_fd;              /* our memfd behind [map_addr, +map_len) (mrmap.h), -1: none */
	uint64_t map_addr, map_len, map_ino;
};

/* How a peer may map an MR's memory (mrmap.h); fd -1: it may not. */
struct sv_seg_mr_map {
	int32_t fd;
	uint64_t addr, len, ino;
};

/* A poll stamp (last_poll_ns) this recent means an application thread
 * polls: ring writers then skip the doorbell (transport/shm/ringchan.c) and the
 * progress thread leaves its rings to it (engine/drive.c).  Longer than the
 * progress threads' short runs: a poller they preempt on a busy machine
 * still polls, or each preemption would draw doorbells whose wake-ups
 * preempt the pollers again (docs/measurements.md, 'Poll stamp'). */
#define SV_POLLER_ACTIVE_NS 200000

struct sv_seg {
	uint32_t magic, version;
	int32_t pid;
	uint32_t uid;
	uint64_t last_poll_ns;       /* an application thread polled a CQ */
	uint8_t pad[64];
	struct sv_seg_mr mr[SV_SEG_MR_MAX];
};

struct sv_seg *sv_seg_self(void);
/* An application thread is about to clear our poll stamp (it will sleep:
 * ibv_req_notify_cq); counted first, so that whoever sees the cleared
 * stamp sees the count too.  The progress thread tells from the count
 * whether the stamp stayed 0 between two of its looks (transport/node.c). */
void sv_seg_stamp_clearing(void);
uint32_t sv_seg_stamp_clears(void);
/* In a forked child: the inherited segment is the parent's; make a new one. */
void sv_seg_forget_after_fork(void);
int sv_seg_fd(void);
const struct sv_seg *sv_seg_map(int fd);     /* a peer's, from SCM_RIGHTS: read-only */
void sv_seg_unmap(const struct sv_seg *seg);

/* MR table publication (mr.c); slot is the MR's key >> 8. */
void sv_seg_mr_publish(uint32_t slot, uint32_t key, uint32_t access, uint32_t pd,
		       uint64_t addr, uint64_t len, uint64_t iova, const struct sv_seg_mr_map *map);
/* Withdraw an MR: peers' later checks fail.  Copies already announced are
 * waited for by the caller (sv_conn_shm_wait_direct). */
void sv_seg_mr_retract(uint32_t slot);

#endif
