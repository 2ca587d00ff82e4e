/* Completion channels: a pollable fd that reports CQs with new events. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/api.h"
#include "util/sys.h"
#include "verbs/sv.h"

#define SV_SLEEP_CQS 16      /* armed CQs a sleeper looks after */
#define SV_SLEEP_WAKES 64    /* wake-ups by their input in one wait before it lets go */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	static uint64_t ids;
	struct sv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	/* Readable exactly while a CQ has an undelivered event. */
	if (sv_evfd_init(&ch->ev)) {
		free(ch);
		return NULL;
	}
	ch->ibch.fd = ch->ev.fd;
	ch->ibch.context = context;
	ch->wake_id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
	pthread_mutex_init(&ch->lock, NULL);
	sv_list_init(&ch->fired);
	sv_list_init(&ch->cqs);
	return &ch->ibch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_comp_channel *ch = to_sch(channel);
	bool used;

	pthread_mutex_lock(&ch->lock);
	used = !sv_list_empty(&ch->cqs);
	pthread_mutex_unlock(&ch->lock);
	if (used)
		return EBUSY;
	sv_close(ch->ibch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

void sv_channel_add(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	sv_list_add_tail(&ch->cqs, &cq->chan_link);
	pthread_mutex_unlock(&ch->lock);
}

void sv_channel_del(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	sv_list_del(&cq->chan_link);
	pthread_mutex_unlock(&ch->lock);
}

/* Queue an event for `cq` (called when an armed CQ gets a completion). */
void sv_channel_fire(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	if (!cq->event_pending) {
		cq->event_pending = true;
		sv_list_add_tail(&ch->fired, &cq->fired_link);
		sv_evfd_set(&ch->ev);
	}
	pthread_mutex_unlock(&ch->lock);
}

/* Forget a CQ's undelivered event (the CQ is being destroyed). */
void sv_channel_forget(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	if (cq->event_pending) {
		sv_list_del(&cq->fired_link);
		cq->event_pending = false;
		if (sv_list_empty(&ch->fired))
			sv_evfd_clear(&ch->ev);
	}
	pthread_mutex_unlock(&ch->lock);
}

/* The next CQ with an event, if any. */
static struct sv_cq *next_event(struct sv_comp_channel *ch)
{
	struct sv_cq *scq = NULL;

	pthread_mutex_lock(&ch->lock);
	if (!sv_list_empty(&ch->fired)) {
		scq = sv_container_of(ch->fired.next, struct sv_cq, fired_link);
		sv_list_del(&scq->fired_link);
		scq->event_pending = false;
		if (sv_list_empty(&ch->fired))
			sv_evfd_clear(&ch->ev);
		__atomic_add_fetch(&scq->events_reported, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&ch->lock);
	return scq;
}

/*
 * A sleeper holds pointers to the channel's CQs while it sleeps: each one
 * pinned (sleep_pins), taken under the channel's lock while the CQ is on
 * its list.  ibv_destroy_cq takes the CQ off the list, then wakes the
 * sleepers (the eventfd) until no pin is left (sv_channel_unpinned); a
 * sleeper woken through the eventfd lets go of every CQ it holds.
 */
static void unpin(struct sv_cq *cq)
{
	__atomic_sub_fetch(&cq->sleep_pins, 1, __ATOMIC_RELEASE);
}

/* The channel's armed CQs, at most `max`, each pinned. */
static int armed_cqs(struct sv_comp_channel *ch, struct sv_cq **armed, int max)
{
	struct sv_list *pos, *tmp;
	int n = 0;

	pthread_mutex_lock(&ch->lock);
	sv_list_for_each_safe(pos, tmp, &ch->cqs) {
		struct sv_cq *cq = sv_container_of(pos, struct sv_cq, chan_link);

		if (n < max && (__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) ||
				__atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED))) {
			__atomic_add_fetch(&cq->sleep_pins, 1, __ATOMIC_RELAXED);
			armed[n++] = cq;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	return n;
}

void sv_channel_unpinned(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);
	const uint64_t one = 1;

	while (__atomic_load_n(&cq->sleep_pins, __ATOMIC_ACQUIRE)) {
		if (sv_write(ch->ev.fd, &one, sizeof(one)) < 0) {
			/* (full counter: it is readable anyway) */
		}
		sv_nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 });
	}
	/* what the wake-ups left readable: only the queue says */
	pthread_mutex_lock(&ch->lock);
	sv_evfd_clear(&ch->ev);
	sv_evfd_resync(&ch->ev, !sv_list_empty(&ch->fired));
	pthread_mutex_unlock(&ch->lock);
}

/* About to sleep: the armed CQs' same-host peers wake us from now on, and
 * what they sent before is taken here (a direct wake-up queues nothing:
 * the woken thread makes the completion itself).  (They are pinned.) */
static void sleep_on(struct sv_node *node, struct sv_cq **armed, int n)
{
	for (int i = 0; i < n; i++)
		sv_engine_cq_sleep(node, armed[i]);
}

/* What a sleeper took: armed CQs whose TCP channels' input wakes it
 * (sv_engine_sleep_take), held until it returns, so that input arriving
 * while it serves other input still finds it, not the progress thread. */
struct sleeper {
	struct sv_cq *took[SV_SLEEP_CQS];    /* each pinned */
	struct pollfd p[SV_SLEEP_CQS + 1];
	int k;
	int wakes;                          /* by their input, in this wait */
	bool blocking_known, blocking;
	bool gave_up;                       /* too many wakes: takes no more */
};

/* Take the armed CQs with TCP channels not taken yet, if the fd blocks and
 * a signal would end a poll as it would end a read (sv_evfd_wait_or);
 * asked once, and only if there are such CQs (same-host ones have none). */
static void sleeper_take(struct sleeper *sl, struct sv_comp_channel *ch, struct sv_cq **armed,
			 int n)
{
	for (int i = 0; i < n; i++) {
		bool have = false;
		int fd;

		for (int j = 0; j < sl->k && !have; j++)
			have = sl->took[j] == armed[i];
		if (have || sl->k == SV_SLEEP_CQS || sl->gave_up ||
		    !__atomic_load_n(&armed[i]->nsocks, __ATOMIC_RELAXED))
			goto next;
		if (!sl->blocking_known) {
			sl->blocking = sv_evfd_blocking(&ch->ev) && sv_evfd_signals_restart();
			sl->blocking_known = true;
		}
		if (!sl->blocking || (fd = sv_engine_sleep_take(armed[i])) < 0)
			goto next;
		sl->took[sl->k] = armed[i];              /* keeps its pin */
		sl->p[sl->k++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		continue;
next:
		unpin(armed[i]);
	}
}

static void sleeper_give(struct sleeper *sl)
{
	int err = errno;

	for (int i = 0; i < sl->k; i++) {
		sv_engine_sleep_give(sl->took[i]);
		unpin(sl->took[i]);
	}
	sl->k = 0;
	errno = err;
}

/*
 * A thread may be cancelled while it waits for an event (rping stops its
 * CQ thread so), as in the kernel's read of the channel's fd, and only
 * there: its two waits are ibv_get_cq_event's only cancellation points
 * (the engine makes none, util/sys.h).  In the one on the CQs' channels
 * it holds nothing but what the sleeper took, given back here.
 */
static void sleeper_cancelled(void *arg)
{
	sleeper_give(arg);
}

/* Sleep on the taken CQs' channels and on the channel itself (taken only
 * for a blocking fd).  1: their input woke us and was served (look for an
 * event again); 0: nothing taken, or the channel itself became readable:
 * everything is given back (a CQ's destroyer may be waiting) and the
 * caller takes the fd as before; -1: interrupted. */
static int sleeper_wait(struct sleeper *sl, struct sv_comp_channel *ch, struct sv_node *node)
{
	bool woke;

	if (!sl->k)
		return 0;
	pthread_cleanup_push(sleeper_cancelled, sl);
	woke = sv_evfd_wait_or(&ch->ev, sl->p, sl->k);
	pthread_cleanup_pop(0);
	if (!woke)
		return -1;
	if (sl->p[sl->k].revents) {
		sleeper_give(sl);
		return 0;
	}
	/* Input that wakes us again and again and makes no event (a paused
	 * channel, a QP lock held elsewhere, a CQ armed for solicited events
	 * only): leave it to the progress thread for the rest of this wait. */
	if (++sl->wakes > SV_SLEEP_WAKES) {
		sleeper_give(sl);
		sl->gave_up = true;
		return 1;
	}
	for (int i = 0; i < sl->k; i++) {
		struct sv_cq *cq = sl->took[i];

		if (!sl->p[i].revents)
			continue;
		sv_engine_drive(node, cq);
		/* still armed: we sleep again, not poll (the drive stamped) */
		if (__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) ||
		    __atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED))
			sv_engine_stop_polling(cq);
	}
	return 1;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct sv_comp_channel *ch = to_sch(channel);
	struct sv_node *node = to_sctx(channel->context)->node;
	struct sv_cq *scq, *armed[SV_SLEEP_CQS];
	struct sleeper sl = { .k = 0, .wakes = 0, .blocking_known = false, .gave_up = false };
	int n, r;

	sv_engine_release_all_acks(node);
	for (;;) {
		if ((scq = next_event(ch)))
			break;
		n = armed_cqs(ch, armed, SV_SLEEP_CQS);
		sleep_on(node, armed, n);
		if ((scq = next_event(ch))) {
			for (int i = 0; i < n; i++)
				unpin(armed[i]);
			break;
		}
		sleeper_take(&sl, ch, armed, n);       /* takes over their pins */
		r = sleeper_wait(&sl, ch, node);
		if (r > 0)
			continue;
		/* (r == 0: nothing taken, so nothing to give if cancelled here) */
		if (r < 0 || !sv_evfd_take(&ch->ev)) {
			sleeper_give(&sl);
			return -1;          /* EAGAIN (non-blocking fd) or EINTR */
		}
		pthread_mutex_lock(&ch->lock);
		sv_evfd_resync(&ch->ev, !sv_list_empty(&ch->fired));
		pthread_mutex_unlock(&ch->lock);
	}
	sleeper_give(&sl);
	*cq = (struct ibv_cq *)&scq->ibcq;
	*cq_context = scq->ibcq.cq_context;
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}
