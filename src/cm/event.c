// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: event channels and events.
 *
 * A channel's fd is an eventfd in semaphore mode: every queued event adds 1,
 * every rdma_get_cm_event reads 1 before taking the oldest event, so the fd
 * is readable exactly while events may be waiting, blocks when empty and
 * honours O_NONBLOCK set by the application (EAGAIN).  Events purged from a
 * queue (their id was destroyed) leave their count behind; a reader that
 * finds the queue empty after reading simply reads again.
 *
 * Each event holds one count of its owner's `outstanding` from queueing to
 * rdma_ack_cm_event (or purge); rdma_destroy_id waits for it to reach zero.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "cm/cm.h"

struct cm_channel *cm_channel_new(bool sync_private)
{
	struct cm_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return NULL;
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	pthread_mutex_init(&ch->lock, NULL);
	pthread_cond_init(&ch->cond, NULL);
	sv_list_init(&ch->queue);
	ch->sync_private = sync_private;
	return ch;
}

static void channel_release(struct cm_channel *ch);

/* Destroyed public channels wait here before they are freed: a program's
 * CM thread may be between two rdma_get_cm_event calls when its main thread
 * destroys the channel (rping: the thread acks DISCONNECTED, which lets
 * rdma_destroy_id return, and the channel goes next), and its next call
 * must not find freed memory.  Such a late reader blocks on the still open
 * fd, as a reader already inside does (cm_channel_free).  Bounded: the
 * oldest is released when the quarantine is full. */
#define CM_CHANNEL_QUARANTINE 16

static pthread_mutex_t quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cm_channel *quarantine[CM_CHANNEL_QUARANTINE];
static unsigned int quarantine_next;

static void channel_quarantine(struct cm_channel *ch)
{
	struct cm_channel *old;

	pthread_mutex_lock(&quarantine_lock);
	old = quarantine[quarantine_next];
	quarantine[quarantine_next] = ch;
	quarantine_next = (quarantine_next + 1) % CM_CHANNEL_QUARANTINE;
	pthread_mutex_unlock(&quarantine_lock);
	if (old)
		channel_release(old);
}

void cm_channel_free(struct cm_channel *ch)
{
	if (!ch)
		return;
	pthread_mutex_lock(&ch->lock);
	ch->closing = true;
	pthread_mutex_unlock(&ch->lock);
	/* A per-id synchronous channel is only read by that id's own calls. */
	if (ch->sync_private)
		channel_release(ch);
	else
		channel_quarantine(ch);
}

static void channel_release(struct cm_channel *ch)
{
	struct sv_list *pos, *tmp;

	/* A thread may still be blocked in rdma_get_cm_event (rping destroys
	 * its channel while its CM thread waits there).  As with rdma-core, that
	 * thread stays blocked until the process exits: the channel and its fd
	 * are left to it, never freed under it. */
	pthread_mutex_lock(&ch->lock);
	if (ch->readers) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	pthread_mutex_unlock(&ch->lock);
	sv_list_for_each_safe(pos, tmp, &ch->queue) {
		sv_list_del(pos);
		free(sv_container_of(pos, struct cm_event, node));
	}
	close(ch->ch.fd);
	pthread_mutex_destroy(&ch->lock);
	pthread_cond_destroy(&ch->cond);
	free(ch);
}

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *ch;

	cm_lock();		/* starts the progress thread */
	cm_unlock();
	ch = cm_channel_new(false);
	if (!ch) {
		if (!errno)
			errno = ENOMEM;
		return NULL;
	}
	return &ch->ch;
}

CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel)
		cm_channel_free(sv_container_of(channel, struct cm_channel, ch));
}

struct cm_event *cm_event_alloc(struct cm_id *p, enum rdma_cm_event_type type,
				int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ev.id = &p->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = p;
	sv_list_init(&e->node);
	cm_explain_event(p, type, status);
	return e;
}

void cm_event_set_pdata(struct cm_event *e, bool ud, const void *data,
			size_t len, size_t report_len)
{
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (report_len > sizeof(e->pdata))
		report_len = sizeof(e->pdata);
	memset(e->pdata, 0, sizeof(e->pdata));
	if (data && len)
		memcpy(e->pdata, data, len);
	if (ud) {
		e->ev.param.ud.private_data = report_len ? e->pdata : NULL;
		e->ev.param.ud.private_data_len = (uint8_t)report_len;
	} else {
		e->ev.param.conn.private_data = report_len ? e->pdata : NULL;
		e->ev.param.conn.private_data_len = (uint8_t)report_len;
	}
}

void cm_event_queue(struct cm_event *e, struct cm_channel *ch)
{
	uint64_t one = 1;
	ssize_t r;

	e->owner->outstanding++;
	CM_TRACE("id %llu: event %s status %d", (unsigned long long)cm_id_of(e->ev.id)->serial,
		 rdma_event_str(e->ev.event), e->ev.status);
	pthread_mutex_lock(&ch->lock);
	sv_list_add_tail(&ch->queue, &e->node);
	pthread_mutex_unlock(&ch->lock);
	r = write(ch->ch.fd, &one, sizeof(one));
	(void)r;
}

static struct cm_channel *chan_of(struct cm_id *p)
{
	return sv_container_of(p->id.channel, struct cm_channel, ch);
}

void cm_event_post(struct cm_id *p, enum rdma_cm_event_type type, int status)
{
	struct cm_event *e = cm_event_alloc(p, type, status);

	if (e)
		cm_event_queue(e, chan_of(p));
}

static bool event_is_about(struct cm_event *e, struct cm_id *p)
{
	return e->owner == p || e->ev.id == &p->id;
}

void cm_channel_purge_id(struct cm_channel *ch, struct cm_id *p)
{
	struct sv_list *pos, *tmp;

	pthread_mutex_lock(&ch->lock);
	sv_list_for_each_safe(pos, tmp, &ch->queue) {
		struct cm_event *e = sv_container_of(pos, struct cm_event, node);

		if (!event_is_about(e, p))
			continue;
		sv_list_del(pos);
		e->owner->outstanding--;
		pthread_cond_broadcast(&e->owner->cond);
		free(e);
	}
	pthread_mutex_unlock(&ch->lock);
}

void cm_channel_move_id(struct cm_channel *from, struct cm_channel *to,
			struct cm_id *p)
{
	struct sv_list moved, *pos, *tmp;
	uint64_t one = 1;
	ssize_t r;

	sv_list_init(&moved);
	pthread_mutex_lock(&from->lock);
	sv_list_for_each_safe(pos, tmp, &from->queue) {
		struct cm_event *e = sv_container_of(pos, struct cm_event, node);

		if (e->owner != p)
			continue;
		sv_list_del(pos);
		sv_list_add_tail(&moved, pos);
	}
	pthread_mutex_unlock(&from->lock);

	sv_list_for_each_safe(pos, tmp, &moved) {
		sv_list_del(pos);
		pthread_mutex_lock(&to->lock);
		sv_list_add_tail(&to->queue, pos);
		pthread_mutex_unlock(&to->lock);
		r = write(to->ch.fd, &one, sizeof(one));
		(void)r;
	}
}

bool cm_channel_has_event_for(struct cm_channel *ch, struct cm_id *p,
			      enum rdma_cm_event_type type)
{
	struct sv_list *pos, *tmp;
	bool found = false;

	pthread_mutex_lock(&ch->lock);
	sv_list_for_each_safe(pos, tmp, &ch->queue) {
		struct cm_event *e = sv_container_of(pos, struct cm_event, node);

		if (e->ev.id == &p->id && e->ev.event == type) {
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	return found;
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct cm_channel *ch;
	struct cm_event *e = NULL;
	uint64_t v;
	ssize_t r;

	if (!channel || !event)
		return cm_set_errno(EINVAL);
	ch = sv_container_of(channel, struct cm_channel, ch);
	pthread_mutex_lock(&ch->lock);
	ch->readers++;
	pthread_mutex_unlock(&ch->lock);
	while (!e) {
		r = read(ch->ch.fd, &v, sizeof(v));
		/* A channel destroyed under a blocked reader is not freed (see
		 * cm_channel_free): that reader just goes on as before. */
		pthread_mutex_lock(&ch->lock);
		if (r < 0) {
			if (errno == EINTR) {
				pthread_mutex_unlock(&ch->lock);
				continue;
			}
		} else if (!sv_list_empty(&ch->queue)) {
			e = sv_container_of(ch->queue.next, struct cm_event, node);
			sv_list_del(&e->node);
		} else {
			pthread_mutex_unlock(&ch->lock);
			continue;
		}
		ch->readers--;
		pthread_cond_broadcast(&ch->cond);
		pthread_mutex_unlock(&ch->lock);
		if (!e)
			return -1;          /* EAGAIN for a non-blocking fd */
	}
	*event = &e->ev;
	return 0;
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e;

	if (!event)
		return cm_set_errno(EINVAL);
	e = sv_container_of(event, struct cm_event, ev);
	cm_lock();
	e->owner->outstanding--;
	pthread_cond_broadcast(&e->owner->cond);
	cm_unlock();
	free(e);
	return 0;
}

/* A synchronous id holds the last event it waited for until its next call. */
void cm_sync_ack(struct cm_id *p)
{
	if (p->sync && p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
}

int cm_sync_wait(struct cm_id *p)
{
	struct rdma_cm_event *ev;

	if (p->id.event) {
		rdma_ack_cm_event(p->id.event);
		p->id.event = NULL;
	}
	if (rdma_get_cm_event(p->id.channel, &ev))
		return -1;
	p->id.event = ev;
	if (ev->status) {
		if (ev->event == RDMA_CM_EVENT_REJECTED)
			return cm_set_errno(ECONNREFUSED);
		return cm_set_errno(ev->status < 0 ? -ev->status : ev->status);
	}
	return 0;
}

CM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	switch (event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
	case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
	case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
	case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
	case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
	case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
	case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
	case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
	case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
	case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
	case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
	case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
	case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
	case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
	case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
	}
	return "UNKNOWN EVENT";
}
