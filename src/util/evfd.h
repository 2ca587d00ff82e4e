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

#include <poll.h>
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
/* Is the fd blocking (the application may make it non-blocking)? */
bool sv_evfd_blocking(const struct sv_evfd *e);
/* Does every installed signal handler ask for SA_RESTART?  Only then may
 * a wait use sv_evfd_wait_or: the kernel restarts an interrupted read for
 * those, never a poll, and which handler ran is unknown.  (Cached.) */
bool sv_evfd_signals_restart(void);
/* For a blocking fd: wait until it or one of the `n` descriptors of `p`
 * is readable; p[n] is filled in with the fd, and every revents tells.
 * A signal restarts the wait while every handler asks for SA_RESTART;
 * else false with errno EINTR (or poll's own errno). */
bool sv_evfd_wait_or(struct sv_evfd *e, struct pollfd *p, int n);

#endif
