/* The QP lock's waits (qlock.h). */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/qlock.h"
#include "util/spin.h"

#define SV_QLOCK_SPINS 64             /* looks before a waiter sleeps */
#define SV_QLOCK_NAP_NS (100 * 1000)  /* the longest a missed wake-up costs */

static void nap(struct sv_qlock *l)
{
	struct timespec ts = { 0, SV_QLOCK_NAP_NS };

	/* returns at once if the lock changed meanwhile */
	syscall(SYS_futex, &l->held, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0);
}

void sv_qlock_wait(struct sv_qlock *l)
{
	for (int n = 0; n < SV_QLOCK_SPINS; n++) {
		if (!__atomic_load_n(&l->held, __ATOMIC_RELAXED) && sv_qlock_trylock(l))
			return;
		sv_spin_pause();
	}
	/* counted before the looks at `held`: an unlock that misses the
	 * count stored first, which the futex almost always finds; the
	 * nap's timeout bounds the rest */
	__atomic_add_fetch(&l->sleepers, 1, __ATOMIC_SEQ_CST);
	while (!sv_qlock_trylock(l))
		nap(l);
	__atomic_sub_fetch(&l->sleepers, 1, __ATOMIC_RELAXED);
}

void sv_qlock_wake(struct sv_qlock *l)
{
	syscall(SYS_futex, &l->held, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
