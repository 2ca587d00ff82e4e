/*
 * Same-host peer processes: how a ring channel rings its peer and learns
 * that the peer has gone, without a descriptor of its own.
 *
 * A process hands every same-host peer, in the channel handshake, two
 * descriptors that stand for the whole process: its bell, a copy of the
 * eventfd that wakes its progress thread, and its life line, the writing
 * end of a pipe whose reading end it keeps open and never reads.  A peer
 * keeps one of each per process it talks to, however many channels.
 * Ringing is a write on the bell, after which the progress thread looks
 * at its rings (transport/node.c).  When the process goes (exit, crash,
 * exec: the reading end is close-on-exec; a forked child closes its copy
 * at once), the last reading end closes and every copy of the life line
 * reports an error (EPOLLERR; nobody writes on it, so no SIGPIPE): the
 * peer marks the rings it has with that process closed, as if they had
 * been closed.  Neither is a unix socket: sockets in flight over unix
 * sockets make every close of one run the kernel's garbage collector.
 * So a ring channel needs no socket once its handshake is done, and a
 * connected QP holds no descriptor (docs/ARCHITECTURE.md).
 */
#ifndef SV_SHM_PEER_H
#define SV_SHM_PEER_H

#include <stdbool.h>
#include <sys/types.h>

#include "transport/node.h"

struct sv_shm_peer {
	struct sv_handler h;         /* its life line: an error when it has gone */
	int bell;                    /* its progress thread's eventfd */
	struct sv_node *node;
	struct sv_list link;         /* node->shm_peers (node lock) */
	dev_t dev;                   /* the life line's pipe: one per process */
	ino_t ino;
	int refs;                    /* channels (node lock) */
	bool gone;                   /* its life line broke (node lock) */
	struct sv_list wakes;        /* its sleepers' descriptors we hold (node lock) */
	int pidfd;                   /* the process (pidfd_open at its first handshake), -1: none */
};

#define SV_SHM_PEER_FDS 2            /* the bell, the life line */

/* Our life line, made with the node (the bell is its wake eventfd). */
int sv_shm_life_open(struct sv_node *node);
void sv_shm_life_close(struct sv_node *node);
/* Copies of our bell and life line for a handshake, into fds[0..1]. */
int sv_shm_peer_offer(struct sv_node *node, int *fds);
/* In a forked child: the reading end is the parent's, whose peers must
 * see it break when the parent goes, child or not. */
void sv_shm_life_forget_after_fork(struct sv_node *node);

/* The peer process `pid`, whose bell and life line fds[0..1] are (taken:
 * kept or closed), counted once more; NULL if it cannot be watched.  Its
 * pidfd is opened while the handshake shows it alive, so a reused pid is
 * never taken for it (mapping its memory uses it, shm/mrmap.h). */
struct sv_shm_peer *sv_shm_peer_get(struct sv_node *node, const int *fds, pid_t pid);
void sv_shm_peer_put(struct sv_shm_peer *p);
void sv_shm_peer_ring(const struct sv_shm_peer *p);

/* The descriptor of the peer's completion channel `id` (its handshake's
 * name for it), `fd` being a copy (taken): one kept per id, counted per
 * channel; -1 if none.  Put it back when the channel closes. */
int sv_shm_peer_wake_get(struct sv_shm_peer *p, uint64_t id, int fd);
void sv_shm_peer_wake_put(struct sv_shm_peer *p, int fd);

#endif
