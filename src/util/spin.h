/*
 * A lock for the short critical sections of the per-message path (a CQ's
 * ring of completions).  Unlocking is a release store, which on x86 is a
 * plain move: pthread's unlock is an exchange, a full barrier that waits
 * for every store before it (the completion just copied, a ring record) to
 * reach the cache (docs/measurements.md, 'CQ lock').  Waiters spin, then
 * yield, so a holder must never block or sleep inside.
 */
#ifndef SV_UTIL_SPIN_H
#define SV_UTIL_SPIN_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

struct sv_spin {
	uint32_t held;
};

#define SV_SPIN_INIT { 0 }
#define SV_SPIN_PAUSES 16       /* spins before a waiter yields its core */

static inline void sv_spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline bool sv_spin_trylock(struct sv_spin *l)
{
	return !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}

static inline void sv_spin_lock(struct sv_spin *l)
{
	for (uint32_t n = 0; !sv_spin_trylock(l); )
		while (__atomic_load_n(&l->held, __ATOMIC_RELAXED)) {
			if (++n < SV_SPIN_PAUSES) {
				sv_spin_pause();
			} else {
				n = 0;
				sched_yield();  /* the holder may be off its core */
			}
		}
}

static inline void sv_spin_unlock(struct sv_spin *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

#endif
