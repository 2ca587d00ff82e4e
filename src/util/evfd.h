/*
 * A level-triggered notification fd: readable exactly while a queue it
 * guards is non-empty.  The queue's owner calls sv_evfd_set/clear under the
 * queue's lock, so the eventfd's counter is only ever 0 or 1 and clearing it
 * never blocks.  The fd stays blocking unless the application makes it
 * non-blocking; sv_evfd_wait honours that choice.
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

#endif
