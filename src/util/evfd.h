/*
 * A level-triggered notification fd: readable while a queue it guards is
 * non-empty.  The queue's owner calls sv_evfd_set/clear under the queue's
 * lock.  Others may also write it to wake a waiter without queueing
 * anything (a completion channel's same-host peers do): such a waiter takes
 * the counter (sv_evfd_take), looks for the work itself, and sets the fd
 * again if the queue is not empty.  Clearing never blocks.  The fd stays
 * blocking unless the application makes it non-blocking; the waits honour
 * that choice.
 */
#ifndef SV_UTIL_EVFD_H
#define SV_UTIL_EVFD_H

#include <stdbool.h>

struct sv_evfd {
	int fd;
	bool set;
};

int sv_evfd_init(struct sv_evfd *e);
void sv_evfd_set(struct sv_evfd *e);        /* queue became non-empty */
void sv_evfd_clear(struct sv_evfd *e);      /* queue became empty */
/* Wait until readable; false with errno EAGAIN if the fd is non-blocking,
 * EINTR if a signal handler ran meanwhile. */
bool sv_evfd_wait(struct sv_evfd *e);
/* Wait as sv_evfd_wait, then take the counter: the fd is not readable
 * until set again.  The caller then calls sv_evfd_resync under its lock. */
bool sv_evfd_take(struct sv_evfd *e);
void sv_evfd_resync(struct sv_evfd *e, bool queued);

#endif
