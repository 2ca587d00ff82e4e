#ifndef SV_UTIL_TIME_H
#define SV_UTIL_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "util/list.h"

/* A deadline kept by the node's progress thread for its owner
 * (transport/node.h: sv_node_timer_set); when it passes, the node calls its
 * upcall with `owner`.  The owner decides the time, the node only when. */
struct sv_timer {
	struct sv_list link;         /* the node's timers (node lock) */
	bool listed;
	uint64_t at;                 /* ns; 0: none */
	void *owner;
};

static inline uint64_t sv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A time no earlier than now, at a fraction of the cost (the coarse clock
 * plus its resolution): for deadlines, which may fire late but never early. */
static inline uint64_t sv_now_ns_upper(void)
{
	static uint64_t res;
	struct timespec ts;

	if (!__atomic_load_n(&res, __ATOMIC_RELAXED)) {
		if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) || ts.tv_sec)
			return sv_now_ns();
		__atomic_store_n(&res, (uint64_t)ts.tv_nsec + 1, __ATOMIC_RELAXED);
	}
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	       __atomic_load_n(&res, __ATOMIC_RELAXED);
}

#endif
