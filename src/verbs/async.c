/* Asynchronous events: ibv_get_async_event / ibv_ack_async_event. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "verbs/sv.h"

enum async_element { EL_NONE, EL_CQ, EL_SRQ, EL_QP };

/* Which object an event names: counting and acking must agree on it. */
static enum async_element element_of(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return EL_CQ;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return EL_SRQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return EL_QP;
	default:
		return EL_NONE;
	}
}

/* Count an event handed to the application against its object, so that
 * destroying the object can wait for the matching acknowledgement. */
static void count_reported(struct ibv_async_event *ev)
{
	switch (element_of(ev->event_type)) {
	case EL_CQ:
		to_scq(ev->element.cq)->async_reported++;
		break;
	case EL_SRQ:
		to_ssrq(ev->element.srq)->async_reported++;
		break;
	case EL_QP:
		to_sqp(ev->element.qp)->async_reported++;
		break;
	case EL_NONE:
		break;
	}
}

int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sv_context *ctx = to_sctx(context);
	struct sv_async_ev *e;

	for (;;) {
		pthread_mutex_lock(&ctx->async_lock);
		if (!sv_list_empty(&ctx->async_q))
			break;
		pthread_mutex_unlock(&ctx->async_lock);
		if (!sv_evfd_wait(&ctx->async_ev))
			return -1;          /* EAGAIN (non-blocking fd) or EINTR */
	}
	e = sv_container_of(ctx->async_q.next, struct sv_async_ev, link);
	sv_list_del(&e->link);
	*event = e->ev;
	count_reported(event);
	if (sv_list_empty(&ctx->async_q))
		sv_evfd_clear(&ctx->async_ev);
	pthread_mutex_unlock(&ctx->async_lock);
	free(e);
	return 0;
}

static void ack_one(pthread_mutex_t *m, pthread_cond_t *c, uint32_t *completed)
{
	pthread_mutex_lock(m);
	(*completed)++;
	pthread_cond_broadcast(c);
	pthread_mutex_unlock(m);
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_cq *cq = event->element.cq;
	struct ibv_srq *srq = event->element.srq;
	struct ibv_qp *qp = event->element.qp;

	switch (element_of(event->event_type)) {
	case EL_CQ:
		ack_one(&cq->mutex, &cq->cond, &cq->async_events_completed);
		break;
	case EL_SRQ:
		ack_one(&srq->mutex, &srq->cond, &srq->events_completed);
		break;
	case EL_QP:
		ack_one(&qp->mutex, &qp->cond, &qp->events_completed);
		break;
	case EL_NONE:
		break;
	}
}

/* Drop the events not yet handed out that name `element` (being destroyed). */
void sv_async_purge(struct ibv_context *context, const void *element)
{
	struct sv_context *ctx = to_sctx(context);
	struct sv_list *pos, *tmp;

	pthread_mutex_lock(&ctx->async_lock);
	sv_list_for_each_safe(pos, tmp, &ctx->async_q) {
		struct sv_async_ev *e = sv_container_of(pos, struct sv_async_ev, link);

		/* every element member of the union is a pointer at offset 0 */
		if (e->ev.element.qp != element)
			continue;
		sv_list_del(&e->link);
		free(e);
	}
	if (sv_list_empty(&ctx->async_q))
		sv_evfd_clear(&ctx->async_ev);
	pthread_mutex_unlock(&ctx->async_lock);
}

/* Wait until the application has acknowledged every event it was given. */
void sv_wait_acked(pthread_mutex_t *m, pthread_cond_t *c, const uint32_t *completed,
		   const uint32_t *reported)
{
	pthread_mutex_lock(m);
	while (*completed != __atomic_load_n(reported, __ATOMIC_ACQUIRE))
		pthread_cond_wait(c, m);    /* a cancellation point, as rdma-core's */
	pthread_mutex_unlock(m);
}
