#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/evfd.h"
#include "util/sys.h"
#include "util/time.h"

int sv_evfd_init(struct sv_evfd *e)
{
	e->set = false;
	e->fd = eventfd(0, EFD_CLOEXEC);
	return e->fd < 0 ? -errno : 0;
}

void sv_evfd_set(struct sv_evfd *e)
{
	uint64_t one = 1;

	if (!e->set && sv_write(e->fd, &one, sizeof(one)) == sizeof(one))
		e->set = true;
}

void sv_evfd_clear(struct sv_evfd *e)
{
	uint64_t v;
	struct pollfd p = { .fd = e->fd, .events = POLLIN };

	/* a wake-up may have been written meanwhile: poll first so that a read
	 * can never block */
	if (sv_poll_now(&p, 1) == 1 && sv_read(e->fd, &v, sizeof(v)) != sizeof(v))
		return;
	e->set = false;
}

/* (if fcntl fails, as blocking: a wait then reads) */
bool sv_evfd_blocking(const struct sv_evfd *e)
{
	int flags = fcntl(e->fd, F_GETFL);

	return flags < 0 || !(flags & O_NONBLOCK);
}

/* Wait until readable (a non-blocking fd: only look); with `take`, the
 * counter is taken, else it stays as it was. */
static bool wait_readable(struct sv_evfd *e, bool take)
{
	struct pollfd p = { .fd = e->fd, .events = POLLIN };
	uint64_t v;

	if (!sv_evfd_blocking(e)) {
		if (poll(&p, 1, 0) != 1) { /* cancellation point */
			errno = EAGAIN;
			return false;
		}
		return !take || read(e->fd, &v, sizeof(v)) == sizeof(v); /* cancellation point */
	}
	/* Blocked as the kernel's read of a channel fd is: a signal ends the
	 * wait with EINTR unless its handler asked for SA_RESTART (qperf stops
	 * a test from a SIGALRM handler without it; MPI launchers' SIGCHLD
	 * handlers ask for it).  The read takes the counter; unless taking,
	 * it goes back at once (clearing it is sv_evfd_clear's). */
	if (read(e->fd, &v, sizeof(v)) != sizeof(v)) /* cancellation point */
		return false;
	return take || sv_write(e->fd, &v, sizeof(v)) == sizeof(v);
}

bool sv_evfd_wait(struct sv_evfd *e)
{
	return wait_readable(e, false);
}

bool sv_evfd_take(struct sv_evfd *e)
{
	return wait_readable(e, true);
}

void sv_evfd_resync(struct sv_evfd *e, bool queued)
{
	e->set = false;
	if (queued)
		sv_evfd_set(e);
}

/* A fault's signal comes from the thread's own instruction, never to a
 * thread asleep in a system call: crash handlers (the sanitizers', MPI's)
 * do not count. */
static bool from_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE ||
	       sig == SIGTRAP || sig == SIGSYS;
}

/* Would the kernel have restarted a read that a signal interrupted?  Only
 * if the handler that ran asked for it; which one ran is unknown here, so
 * only if every installed handler did. */
static bool handlers_restart(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (!from_fault(sig) && sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN && !(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

/* handlers_restart, looked at again at most once a second: the sleeper
 * asks before every wait.  A handler installed since shows at the EINTR
 * it causes (sv_evfd_wait_or looks afresh then). */
#define SV_SIGNALS_LOOK_NS (1000 * 1000 * 1000ull)

bool sv_evfd_signals_restart(void)
{
	static uint64_t looked;          /* ns, 0: never */
	static bool all;
	uint64_t now = sv_now_ns(), last = __atomic_load_n(&looked, __ATOMIC_RELAXED);

	if (!last || now - last > SV_SIGNALS_LOOK_NS) {
		__atomic_store_n(&all, handlers_restart(), __ATOMIC_RELAXED);
		__atomic_store_n(&looked, now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&all, __ATOMIC_RELAXED);
}

bool sv_evfd_wait_or(struct sv_evfd *e, struct pollfd *p, int n)
{
	p[n] = (struct pollfd){ .fd = e->fd, .events = POLLIN };
	for (;;) {
		if (poll(p, (nfds_t)n + 1, -1) > 0) /* cancellation point */
			return true;
		if (errno != EINTR || !handlers_restart())
			return false;
	}
}
