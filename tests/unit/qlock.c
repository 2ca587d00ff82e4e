/* The QP lock (src/util/qlock.c) and the fence that pairs with its unlock
 * (src/util/guard.c, sv_guard_fence_all):
 *   1. trylock fails while held, succeeds when free;
 *   2. mutual exclusion among four threads, some holds long enough that
 *      waiters may go to sleep; and a waiter behind a hold that lasts
 *      until it is seen asleep on the futex gets the lock after it;
 *   3. the deferral handshake of engine/recv.c, run as a litmus test: a
 *      holder unlocks and looks at a flag while another thread sets the
 *      flag and tries the lock; with sv_guard_fence_all before its last
 *      try, never both miss.  How often they would have missed without
 *      that fence is printed, not checked (the CPU decides). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "util/guard.h"
#include "util/qlock.h"
#include "util/spin.h"

#define FAIL(...) do { fprintf(stderr, "qlock: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static struct sv_qlock lock = SV_QLOCK_INIT;
static unsigned long counter;            /* guarded by lock */
static uint32_t max_sleepers;            /* seen by a long holder */

static void nap_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

static void *contender(void *arg)
{
	long id = (long)arg;

	for (int i = 0; i < 20000; i++) {
		sv_qlock_lock(&lock);
		counter++;
		if (id == 0 && i % 2000 == 0) {  /* a long hold: the others sleep */
			nap_us(2000);
			uint32_t s = __atomic_load_n(&lock.sleepers, __ATOMIC_RELAXED);
			if (s > max_sleepers)
				max_sleepers = s;
		}
		sv_qlock_unlock(&lock);
	}
	return NULL;
}

static void exclusion(void)
{
	pthread_t t[4];

	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, contender, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (counter != 4 * 20000)
		FAIL("counter %lu, want %d: two holders at once", counter, 4 * 20000);
	if (lock.held || lock.sleepers)
		FAIL("left held %u, sleepers %u", lock.held, lock.sleepers);
}

static void *one_waiter(void *arg)
{
	(void)arg;
	sv_qlock_lock(&lock);
	counter++;
	sv_qlock_unlock(&lock);
	return NULL;
}

/* A hold that lasts until the waiter is seen asleep on the futex, then
 * the waiter gets the lock (the unlock wakes it, or its nap ends). */
static void sleeper(void)
{
	unsigned long before = counter;
	pthread_t t;
	int ms = 0;

	sv_qlock_lock(&lock);
	pthread_create(&t, NULL, one_waiter, NULL);
	/* (the waiter's nap ends and it counts itself again meanwhile) */
	while (!__atomic_load_n(&lock.sleepers, __ATOMIC_RELAXED) && ms++ < 10000)
		nap_us(1000);
	if (ms > 10000)
		FAIL("no waiter went to sleep behind a 10 s hold");
	sv_qlock_unlock(&lock);
	pthread_join(t, NULL);
	if (counter != before + 1 || lock.held || lock.sleepers)
		FAIL("the sleeper: counter %lu (want %lu), held %u, sleepers %u", counter,
		     before + 1, lock.held, lock.sleepers);
}

/* ---- 3: the litmus test ---- */

#define ROUNDS 20000

static uint32_t go;                      /* round number both threads start */
static uint32_t held_in;                 /* round the holder holds the lock in */
static uint32_t looked;                  /* round the holder looked at the flag in */
static uint32_t finished;                /* round the deferrer finished */
static uint32_t flag;
static int holder_saw[ROUNDS], first_try[ROUNDS], last_try[ROUNDS];

static void wait_for(const uint32_t *word, uint32_t v)
{
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != v)
		sv_spin_pause();
}

static void *holder(void *arg)
{
	(void)arg;
	sv_guard_enter();                /* a registered thread, as a poster */
	sv_guard_leave();
	for (uint32_t r = 1; r <= ROUNDS; r++) {
		wait_for(&finished, r - 1);      /* no second holder in a round */
		sv_qlock_lock(&lock);
		__atomic_store_n(&held_in, r, __ATOMIC_RELEASE);
		wait_for(&go, r);
		sv_qlock_unlock(&lock);          /* sv_qp_unlock's order */
		sv_guard_entry_fence();
		holder_saw[r - 1] = (int)__atomic_load_n(&flag, __ATOMIC_RELAXED);
		__atomic_store_n(&looked, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void *deferrer(void *arg)
{
	(void)arg;
	for (uint32_t r = 1; r <= ROUNDS; r++) {
		wait_for(&held_in, r);
		__atomic_store_n(&go, r, __ATOMIC_RELEASE);
		__atomic_store_n(&flag, 1, __ATOMIC_SEQ_CST);   /* lock_or_defer's order */
		first_try[r - 1] = sv_qlock_trylock(&lock);
		if (!first_try[r - 1]) {
			sv_guard_fence_all();
			last_try[r - 1] = sv_qlock_trylock(&lock);
		} else {
			last_try[r - 1] = 1;
		}
		if (last_try[r - 1])
			sv_qlock_unlock(&lock);
		wait_for(&looked, r);
		__atomic_store_n(&flag, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&finished, r, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void litmus(void)
{
	pthread_t h, d;
	int lost = 0, unfenced = 0;

	pthread_create(&h, NULL, holder, NULL);
	pthread_create(&d, NULL, deferrer, NULL);
	pthread_join(h, NULL);
	pthread_join(d, NULL);
	for (int r = 0; r < ROUNDS; r++) {
		lost += !holder_saw[r] && !last_try[r];
		unfenced += !holder_saw[r] && !first_try[r];
	}
	printf("litmus: %d rounds; both missed without the fence %d times, with it %d\n",
	       ROUNDS, unfenced, lost);
	if (lost)
		FAIL("%d rounds where the holder missed the flag and the last try the unlock", lost);
}

int main(void)
{
	sv_guard_enter();                /* registers: membarrier where allowed */
	sv_guard_leave();
	if (!sv_qlock_trylock(&lock) || sv_qlock_trylock(&lock))
		FAIL("trylock: free lock refused or held lock taken");
	sv_qlock_unlock(&lock);
	exclusion();
	sleeper();
	litmus();
	printf("qlock: ok (sleepers seen in the exclusion run: up to %u; membarrier %s)\n", max_sleepers,
	       sv_guard_fence_on_entry ? "refused: fences on entry" : "in use");
	return 0;
}
