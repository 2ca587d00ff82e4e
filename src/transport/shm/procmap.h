/*
 * A same-host peer's process-wide memfds (its segment, its board) arrive
 * with every channel's handshake; each is mapped once per peer process,
 * whatever the number of channels, by the descriptor's inode, and unmapped
 * with its last channel: a mapping per channel would cost a page each.
 */
#ifndef SV_SHM_PROCMAP_H
#define SV_SHM_PROCMAP_H

#include <stdbool.h>
#include <stddef.h>

/* The mapping of fd's memfd (len bytes, prot), new or shared; NULL if it
 * does not map or `valid` rejects a new mapping. */
void *sv_procmap_get(int fd, size_t len, int prot, bool (*valid)(const void *base));
void sv_procmap_put(const void *base);
/* In a forked child: the parent's lock may be held by a thread that is gone. */
void sv_procmap_forget_after_fork(void);

#endif
