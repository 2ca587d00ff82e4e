// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: closes that finish in the background.  close(2) of a
 * socket without SO_LINGER returns at once and the kernel sends what is
 * queued; so rclose of a nonblocking rsocket hands the lingering
 * (rs_conn_close: FIN, queued sends, the peer's FIN) to a thread of its
 * own, which holds a reference until it is done.  Nothing else of ours
 * runs in the background, so the library's destructor waits for those
 * threads, at most as long as a blocking rclose would have lingered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <time.h>

#include "rs/rs.h"

/* rs_conn_close lingers twice at most: for our sends, then the peer's FIN */
#define RS_EXIT_WAIT_MS (2 * RS_CLOSE_MS + 500)

/* More closes at once linger in rclose itself: a thread each would let a
 * server that drops many connections make as many threads. */
#define RS_CLOSERS_MAX 16

static pthread_mutex_t closing_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t closing_done = PTHREAD_COND_INITIALIZER;
static int closing;	/* background closes under way */

static void *finish_close(void *arg)
{
	struct rsock *rs = arg;

	pthread_mutex_lock(&rs->lock);
	rs_conn_close(rs);
	rs_leave(rs);
	pthread_mutex_lock(&closing_lock);
	closing--;
	pthread_cond_broadcast(&closing_done);
	pthread_mutex_unlock(&closing_lock);
	return NULL;
}

bool rs_close_later(struct rsock *rs)
{
	pthread_attr_t a;
	pthread_t t;
	sigset_t all, old;
	int rc;

	pthread_mutex_lock(&closing_lock);
	if (closing >= RS_CLOSERS_MAX) {
		pthread_mutex_unlock(&closing_lock);
		return false;
	}
	closing++;
	pthread_mutex_unlock(&closing_lock);
	rs_hold(rs);
	/* the thread takes no signal meant for the application */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &a, finish_close, rs);
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!rc)
		return true;
	pthread_mutex_lock(&closing_lock);
	closing--;
	pthread_mutex_unlock(&closing_lock);
	rs_put(rs);
	return false;
}

/* A forked child has none of its parent's threads to wait for. */
static void forget_closes(void)
{
	closing = 0;
}

__attribute__((constructor)) static void rs_linger_init(void)
{
	pthread_atfork(NULL, NULL, forget_closes);
}

__attribute__((destructor)) static void rs_linger_exit(void)
{
	struct timespec end;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += RS_EXIT_WAIT_MS / 1000;
	end.tv_nsec += (long)(RS_EXIT_WAIT_MS % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&closing_lock);
	while (closing && pthread_cond_timedwait(&closing_done, &closing_lock, &end) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&closing_lock);
}
