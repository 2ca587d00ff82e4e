/*
 * Guards: an application thread that may hold pointers to channels the
 * progress thread frees (a poll driving them, a post writing to them)
 * marks itself inside a guard; the progress thread frees closed channels
 * only when no thread is inside (sv_guard_quiet).
 *
 * Entering and leaving are on every post and poll, so they are a store to
 * the thread's own slot, not a read-modify-write of a word all threads
 * share (docs/measurements.md, 'Guards').  The StoreLoad fence that makes
 * a thread's entry visible before it reads channel pointers is taken by
 * the rare side instead: sv_guard_quiet() runs membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which serializes every running
 * thread of the process, before it looks at the slots.  Where membarrier
 * is refused (old kernels, seccomp), entering takes the fence itself.
 */
#ifndef SV_UTIL_GUARD_H
#define SV_UTIL_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "util/tsan.h"

struct sv_guard_slot {
	uint32_t inside;             /* nesting depth; written by its thread only */
	uint32_t reading;            /* read locks of the rw guard held (below) */
	uint32_t taken;              /* a live thread owns it (registry lock) */
	struct sv_guard_slot *next;  /* the registry's, never unlinked */
};

/* initial-exec: a load from the thread pointer, not a __tls_get_addr call
 * on every post and poll (8 bytes of the static TLS that glibc keeps for
 * libraries loaded later with dlopen; docs/measurements.md, 'Guards') */
extern __thread struct sv_guard_slot *sv_guard_self __attribute__((tls_model("initial-exec")));
extern bool sv_guard_fence_on_entry;
struct sv_guard_slot *sv_guard_register(void);

/* The fence an entering thread owes: none of its own where membarrier
 * takes it on the other side. */
static inline void sv_guard_entry_fence(void)
{
#ifdef SV_TSAN
	static uint32_t word;

	__atomic_fetch_add(&word, 0, __ATOMIC_SEQ_CST);   /* TSan has no fences */
#else
	if (__atomic_load_n(&sv_guard_fence_on_entry, __ATOMIC_RELAXED))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void sv_guard_enter(void)
{
	struct sv_guard_slot *s = sv_guard_self;

	if (__builtin_expect(!s, 0))
		s = sv_guard_register();
#ifdef SV_TSAN
	__atomic_add_fetch(&s->inside, 1, __ATOMIC_SEQ_CST);     /* fences TSan sees */
#else
	__atomic_store_n(&s->inside, s->inside + 1, __ATOMIC_RELAXED);
	sv_guard_entry_fence();
#endif
}

static inline void sv_guard_leave(void)
{
	struct sv_guard_slot *s = sv_guard_self;

	__atomic_store_n(&s->inside, s->inside - 1, __ATOMIC_RELEASE);
}

/* Every running thread's stores before its next loads, as seen from here:
 * the rare side of a StoreLoad pairing whose frequent side took
 * sv_guard_entry_fence() (util/qlock.h's holders, the guards' entries). */
void sv_guard_fence_all(void);

/* Is no thread inside a guard now?  (Fences every running thread first.) */
bool sv_guard_quiet(void);
/* Until no thread is inside (not to be called from inside one). */
void sv_guard_wait(void);

/*
 * The process's reader-writer guard: a reader-writer lock, the MR table's
 * (verbs/mr.c), whose read side is taken for every message that touches
 * registered memory.  A reader counts itself in its own slot and checks
 * that no writer is active; a writer (registration, deregistration, a
 * window bind) marks itself active, fences every thread (as
 * sv_guard_quiet) and waits for the slots' readers to leave.  Readers may
 * nest; a reader meeting an active writer waits for it on its mutex.
 * Unlock serves both sides, as pthread_rwlock_unlock does.
 */
void sv_guard_rdlock(void);
void sv_guard_wrlock(void);
void sv_guard_unlock(void);

#endif
