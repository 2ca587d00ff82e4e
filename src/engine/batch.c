/*
 * Sends batched across posts (socket channels).  Over a network a small
 * message costs little but its system call, and a program that posts a
 * stream of them paid one per message.  So once a QP's posts come in quick
 * succession (a burst: SV_BURST_MIN posts each within the gap, 2 us or
 * SOFTVERBS_BATCH_GAP_US, of the last one's end), a post leaves its
 * request queued, and the queued requests go together, copied into one
 * write (xmit.c's stage), at the first of:
 *   - a post that is not part of the burst, or that makes SV_BATCH_MAX
 *     requests wait (sv_req_kick writes everything queued);
 *   - a poll of any CQ of the process: the program waits for something,
 *     maybe for the answer to what is queued;
 *   - ibv_req_notify_cq, ibv_get_cq_event and every slower verb
 *     (sv_engine_release_all_acks), as for held ACKs;
 *   - the progress thread's next tick (SV_SPIN_TICK_MS, drive.c): the
 *     program went elsewhere without a verb.
 * A post after a pause, and the first few of a burst, go at once: a single
 * message or a request and its notification pay no delay.  Ring channels
 * never batch (a record costs no system call).
 */
#include "engine/engine.h"
#include "util/env.h"
#include "util/time.h"

#define SV_BURST_MIN 4                /* posts of a burst that go at once */
#define SV_BATCH_MAX 64               /* requests queued at most */

static struct {
	pthread_mutex_t lock;
	struct sv_list qps;          /* QPs with requests left queued (qp->batch_link) */
	int on;                      /* -1 not read yet */
} batch = { .lock = PTHREAD_MUTEX_INITIALIZER, .qps = SV_LIST_INIT(batch.qps), .on = -1 };

bool sv_batch_waiting;               /* the list is not empty (api.h looks) */

static bool batch_on(void)
{
	int on = __atomic_load_n(&batch.on, __ATOMIC_RELAXED);

	if (on < 0) {
		on = sv_batch_enabled();
		__atomic_store_n(&batch.on, on, __ATOMIC_RELAXED);
	}
	return on;
}

/* A socket channel carries the QP's requests now. */
static bool batchable(struct sv_qp *qp)
{
	const struct sv_conn *c;

	if (qp->link != SV_LINK_UP || (qp->ibqp.qp_base.qp_type != IBV_QPT_RC &&
				       qp->ibqp.qp_base.qp_type != IBV_QPT_UC))
		return false;
	c = sv_req_conn(qp);
	return c && !(c->caps & SV_CAP_MAPPED) && c->connected && !c->dead;
}

/* Off the list (batch.lock held). */
static void batch_unlink(struct sv_qp *qp)
{
	sv_list_del(&qp->batch_link);
	qp->batched = false;
	if (sv_list_empty(&batch.qps))
		__atomic_store_n(&sv_batch_waiting, false, __ATOMIC_SEQ_CST);
}

static void batch_add(struct sv_node *node, struct sv_qp *qp)
{
	if (qp->batched)
		return;
	pthread_mutex_lock(&batch.lock);
	qp->batched = true;
	sv_list_add_tail(&batch.qps, &qp->batch_link);
	__atomic_store_n(&sv_batch_waiting, true, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&batch.lock);
	sv_node_spin_watch(node);            /* its tick writes what no verb does */
}

/* May the WQEs just queued on a socket channel's QP wait (a burst)? */
static bool batch_defer(struct sv_qp *qp)
{
	if (sv_now_ns() - qp->post_end_ns >= sv_batch_gap_ns()) {
		qp->burst = 0;
		return false;
	}
	if (qp->burst < SV_BURST_MIN) {
		qp->burst++;
		return false;
	}
	return qp->sq.tail - qp->sq.next < SV_BATCH_MAX &&
	       sv_sq_at(&qp->sq, qp->sq.tail - 1)->length <= SV_STAGE_FRAME;
}

void sv_batch_post(struct sv_node *node, struct sv_qp *qp)
{
	bool socket = batchable(qp) && batch_on();

	if (socket && batch_defer(qp))
		batch_add(node, qp);
	else
		sv_req_kick(qp);
	if (socket)
		qp->post_end_ns = sv_now_ns();
}

/* The first queued QP whose lock we get, taken off the list (its lock
 * held), or NULL. */
static struct sv_qp *batch_take(void)
{
	struct sv_list *pos, *tmp;
	struct sv_qp *got = NULL;

	pthread_mutex_lock(&batch.lock);
	sv_list_for_each_safe(pos, tmp, &batch.qps) {
		struct sv_qp *qp = sv_container_of(pos, struct sv_qp, batch_link);

		if (!sv_qlock_trylock(&qp->lock))
			continue;            /* its holder posts or serves it; later */
		batch_unlink(qp);
		got = qp;
		break;
	}
	pthread_mutex_unlock(&batch.lock);
	return got;
}

/* Write every queued QP's requests (sv_engine_batch_flush looked whether
 * any wait).  Inside a guard: ibv_destroy_qp takes its QP off the list,
 * then waits for the threads inside one. */
void sv_batch_flush(struct sv_node *node)
{
	struct sv_qp *qp;

	sv_engine_enter(node);
	while ((qp = batch_take())) {
		if (qp->attr.qp_state == IBV_QPS_RTS || qp->attr.qp_state == IBV_QPS_SQD)
			sv_req_kick(qp);
		sv_qp_unlock(qp);
	}
	sv_engine_leave(node);
}

void sv_batch_forget(struct sv_qp *qp)
{
	pthread_mutex_lock(&batch.lock);
	if (qp->batched)
		batch_unlink(qp);
	pthread_mutex_unlock(&batch.lock);
}
