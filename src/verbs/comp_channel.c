/* Completion channels: a pollable fd that reports CQs with new events. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs/sv.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sv_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	/* Semaphore mode: one read per queued event, so the fd stays readable
	 * while events remain, as poll/epoll users expect. */
	ch->ibch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ibch.fd < 0) {
		free(ch);
		return NULL;
	}
	ch->ibch.context = context;
	pthread_mutex_init(&ch->lock, NULL);
	sv_list_init(&ch->fired);
	return &ch->ibch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_comp_channel *ch = to_sch(channel);

	if (__atomic_load_n(&ch->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	close(ch->ibch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* Queue an event for `cq` (called when an armed CQ gets a completion). */
void sv_channel_fire(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);
	uint64_t one = 1;
	bool notify = false;

	pthread_mutex_lock(&ch->lock);
	if (!cq->event_pending) {
		cq->event_pending = true;
		sv_list_add_tail(&ch->fired, &cq->fired_link);
		notify = true;
	}
	pthread_mutex_unlock(&ch->lock);
	if (notify && write(ch->ibch.fd, &one, sizeof(one)) < 0)
		return;
}

/* Forget a CQ's undelivered event (the CQ is being destroyed). */
void sv_channel_forget(struct sv_cq *cq)
{
	struct sv_comp_channel *ch = to_sch(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	if (cq->event_pending) {
		/* its count stays on the fd: ibv_get_cq_event skips it */
		sv_list_del(&cq->fired_link);
		cq->event_pending = false;
	}
	pthread_mutex_unlock(&ch->lock);
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct sv_comp_channel *ch = to_sch(channel);
	struct sv_cq *scq;
	uint64_t v;

	for (;;) {
		if (read(channel->fd, &v, sizeof(v)) != sizeof(v))
			return -1;          /* EAGAIN on a non-blocking fd */
		pthread_mutex_lock(&ch->lock);
		if (!sv_list_empty(&ch->fired))
			break;
		/* the count of a destroyed CQ's event: wait again */
		pthread_mutex_unlock(&ch->lock);
	}
	scq = sv_container_of(ch->fired.next, struct sv_cq, fired_link);
	sv_list_del(&scq->fired_link);
	scq->event_pending = false;
	__atomic_add_fetch(&scq->events_reported, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ch->lock);
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
