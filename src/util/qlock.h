/*
 * The QP lock: taken by every post, by a poll that serves a channel, and
 * by the progress thread, so three times a message on each end of a
 * ping-pong.  Taking it is one locked instruction and releasing it a
 * release store, a plain move on x86; pthread's unlock is a second locked
 * instruction, which also waits for every store before it to reach the
 * cache (docs/measurements.md, 'QP lock').
 *
 * Unlike the CQ's spin lock (util/spin.h) it may be held for long: a post
 * writes a large message to a TCP socket under it.  A waiter spins a
 * little, then sleeps on a futex.  The unlocker wakes a sleeper it sees;
 * the one it may miss (its look at the count passed its own store) sleeps
 * out a short timeout instead of for ever.
 *
 * A release store is no barrier: whoever needs the holder to see a flag it
 * set before its unlock (engine/recv.c, lock_or_defer) fences the other
 * threads itself (util/guard.h, sv_guard_fence_all).
 */
#ifndef SV_UTIL_QLOCK_H
#define SV_UTIL_QLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct sv_qlock {
	uint32_t held;               /* 0 free, 1 held */
	uint32_t sleepers;           /* waiters in a futex wait on `held` */
};

#define SV_QLOCK_INIT { 0, 0 }

static inline bool sv_qlock_trylock(struct sv_qlock *l)
{
	uint32_t free_ = 0;

	return __atomic_compare_exchange_n(&l->held, &free_, 1, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

void sv_qlock_wait(struct sv_qlock *l);
void sv_qlock_wake(struct sv_qlock *l);

static inline void sv_qlock_lock(struct sv_qlock *l)
{
	if (__builtin_expect(!sv_qlock_trylock(l), 0))
		sv_qlock_wait(l);
}

static inline void sv_qlock_unlock(struct sv_qlock *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
	if (__builtin_expect(__atomic_load_n(&l->sleepers, __ATOMIC_RELAXED) != 0, 0))
		sv_qlock_wake(l);
}

#endif
