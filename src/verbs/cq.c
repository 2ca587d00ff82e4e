/* Completion queues: a locked ring of work completions, plain and extended. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/api.h"
#include "status/publish.h"
#include "util/sys.h"
#include "util/time.h"
#include "util/log.h"
#include "verbs/ops.h"
#include "verbs/sv.h"
#include "util/stamp.h"

static uint32_t cq_slot(const struct sv_cq *cq, uint32_t idx)
{
	return idx & (cq->size - 1);     /* a power of two (sv_ring_slots) */
}

static bool cq_full(const struct sv_cq *cq)
{
	return cq->tail - cq->head >= (uint32_t)cq->ibcq.cqe;
}

/*
 * A completion made by the drive of the poll that will return it goes
 * straight into that poll's array: no CQ lock to push it and none to take
 * it, two locked instructions of a ping-pong's every completion.  Only
 * while nothing older waits in the ring (a QP's completions keep their
 * order: all of them are made under its lock), and not for a CQ whose
 * entries carry timestamps.  A pointer in the thread's static TLS
 * (initial-exec, as util/guard.h's), to the poll's frame.
 */
struct cq_direct {
	struct sv_cq *cq;
	struct ibv_wc *wc;
	int room, n;
};

static __thread struct cq_direct *direct_self __attribute__((tls_model("initial-exec")));

/*
 * A thread that polls the same CQ in vain SV_POLL_IDLE times in a row
 * (reset by a poll that finds completions, another CQ's poll, or a post)
 * waits SV_POLL_PAUSES pause instructions after each further empty poll.
 * Back to back, its reads of the ring word the peer writes next slowed
 * the peer's store into that very line more than the pause delays the
 * look that finds it (docs/measurements.md, 'Polls in vain pause').  A
 * stream's sender, which polls once between posts, and a thread polling
 * many CQs in turn never pause.
 */
#define SV_POLL_IDLE 2
#define SV_POLL_PAUSES 2

static __thread const struct sv_cq *vain_cq __attribute__((tls_model("initial-exec")));
static __thread uint32_t vain_polls __attribute__((tls_model("initial-exec")));

void sv_cq_thread_busy(void)
{
	vain_polls = 0;
}

static void poll_in_vain(const struct sv_cq *cq)
{
	if (cq != vain_cq) {
		vain_cq = cq;
		vain_polls = 0;
	}
	if (++vain_polls <= SV_POLL_IDLE)
		return;
	vain_polls = SV_POLL_IDLE;
	for (int i = 0; i < SV_POLL_PAUSES; i++)
		sv_spin_pause();
}

static struct ibv_wc *direct_slot(struct sv_cq *cq)
{
	struct cq_direct *d = direct_self;

	if (!d || d->cq != cq || d->n == d->room || cq->ts || cq->batch_i != cq->batch_n ||
	    __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
		return NULL;
	return &d->wc[d->n];
}

static bool is_direct(const struct sv_cq *cq, const struct ibv_wc *wc)
{
	const struct cq_direct *d = direct_self;

	return d && d->cq == cq && d->n < d->room && wc == &d->wc[d->n];
}

/* Completions are built in the ring itself: one built on the stack and
 * copied in is read back, a vector at a time, before its field-sized
 * stores have left the core, and each such load waits for them. */
struct ibv_wc *sv_cq_slot(struct sv_cq *cq)
{
	struct ibv_wc *wc = direct_slot(cq);

	if (wc)
		return wc;
	sv_spin_lock(&cq->lock);
	return cq_full(cq) ? &cq->lost : &cq->ring[cq_slot(cq, cq->tail)];
}

static void cq_overrun_report(struct sv_cq *cq, uint32_t qp_num, uint64_t wr_id,
			      enum ibv_wc_status status)
{
	struct ibv_async_event ev = { .element.cq = (struct ibv_cq *)&cq->ibcq,
				      .event_type = IBV_EVENT_CQ_ERR };

	sv_err("CQ %p: overrun, all %d entries unpolled: the completion of QP %#x "
	       "wr_id %llu (%s) is lost; IBV_EVENT_CQ_ERR", (void *)&cq->ibcq,
	       cq->ibcq.cqe, qp_num, (unsigned long long)wr_id, ibv_wc_status_str(status));
	sv_async_post(to_sctx(cq->ibcq.context), &ev);
}

/* (CQ lock held) The CQ was armed for this completion: disarm it. */
static bool arm_taken(struct sv_cq *cq, bool solicited, enum ibv_wc_status status)
{
	if (!cq->armed && !(cq->armed_solicited && (solicited || status != IBV_WC_SUCCESS)))
		return false;
	__atomic_store_n(&cq->armed, false, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->armed_solicited, false, __ATOMIC_RELAXED);
	return cq->ibcq.channel != NULL;
}

static void fire(struct sv_cq *cq)
{
	sv_engine_cq_fired(cq);
	sv_channel_fire(cq);
}

/* Only a failed or an armed-for completion takes the lock: to be counted,
 * or to disarm the CQ (a thread may arm it while another polls). */
static bool direct_commit(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	bool fired = false;

	direct_self->n++;
	if (wc->status == IBV_WC_SUCCESS && !__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&cq->armed_solicited, __ATOMIC_RELAXED))
		return true;
	sv_spin_lock(&cq->lock);
	if (wc->status != IBV_WC_SUCCESS)
		cq->st->err_comps++;
	fired = arm_taken(cq, solicited, wc->status);
	sv_spin_unlock(&cq->lock);
	if (fired)
		fire(cq);
	return true;
}

bool sv_cq_commit(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	enum ibv_wc_status status = wc->status;
	bool fired, ok = wc != &cq->lost, overrun = false;
	uint32_t qp_num = wc->qp_num;
	uint64_t wr_id = wc->wr_id;

	if (is_direct(cq, wc))
		return direct_commit(cq, wc, solicited);
	if (!ok) {
		cq->st->overruns++;
		overrun = !cq->overrun;      /* told once, after the unlock */
		cq->overrun = true;
	} else {
		if (cq->ts)
			cq->ts[cq_slot(cq, cq->tail)] = sv_now_ns();
		__atomic_store_n(&cq->tail, cq->tail + 1, __ATOMIC_RELEASE);
		cq->st->pushed = cq->tail;
	}
	if (status != IBV_WC_SUCCESS)
		cq->st->err_comps++;
	fired = arm_taken(cq, solicited, status);
	sv_spin_unlock(&cq->lock);
	if (overrun)
		cq_overrun_report(cq, qp_num, wr_id, status);
	if (fired)
		fire(cq);
	return ok;
}

bool sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct ibv_wc *slot = sv_cq_slot(cq);

	*slot = *wc;
	return sv_cq_commit(cq, slot, solicited);
}

static void cq_clean(struct sv_cq *cq, uint32_t qp_num, bool keep_recv)
{
	uint32_t from, to;

	sv_spin_lock(&cq->lock);
	for (from = to = cq->tail; from != cq->head; ) {
		uint32_t i = cq_slot(cq, --from);
		const struct ibv_wc *wc = &cq->ring[i];

		if (wc->qp_num == qp_num && !(keep_recv && (wc->opcode & IBV_WC_RECV)))
			continue;
		to--;
		if (to != from) {
			cq->ring[cq_slot(cq, to)] = *wc;
			if (cq->ts)
				cq->ts[cq_slot(cq, to)] = cq->ts[i];
		}
	}
	__atomic_store_n(&cq->head, to, __ATOMIC_RELAXED);
	cq->st->polled = to;
	sv_spin_unlock(&cq->lock);
}

/* A QP moved to RESET or destroyed takes its completions back, as hardware
 * providers do: a flushed entry left behind would be read as the next use's
 * result, and an entry of a destroyed QP names a context its owner has freed.
 * Receives taken from an SRQ stay: their buffers are the SRQ's. */
void sv_cq_clean_qp(struct sv_qp *qp)
{
	uint32_t qp_num = qp->ibqp.qp_base.qp_num;

	if (qp->xrcd)
		return;         /* an XRC target owns no CQ: its SRQs' CQs keep theirs */
	if (qp->rcq)
		cq_clean(qp->rcq, qp_num, qp->srq != NULL);
	if (qp->scq && qp->scq != qp->rcq)
		cq_clean(qp->scq, qp_num, false);
}

/* Up to `num` entries: first those start_poll took, then the ring's. */
static int ring_take(struct sv_cq *cq, int num, struct ibv_wc *wc)
{
	int n = 0;

	sv_spin_lock(&cq->lock);
	while (n < num && cq->batch_i < cq->batch_n)    /* taken by start_poll */
		wc[n++] = cq->batch[cq->batch_i++];
	while (n < num && cq->head != cq->tail) {
		wc[n++] = cq->ring[cq_slot(cq, cq->head)];
		__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	}
	cq->st->polled = cq->head;
	sv_spin_unlock(&cq->lock);
	return n;
}

int sv_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct sv_cq *cq = to_scq(ibcq);
	struct sv_node *node = to_sctx(ibcq->context)->node;
	int n = 0;

	if (num_entries < 0)
		return -1;
	sv_engine_batch_flush(node);
	sv_engine_polling(cq, 1);
	/* Cheap emptiness check first: pollers spin here. */
	if (__atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&cq->head, __ATOMIC_RELAXED)) {
		struct cq_direct d = { .cq = cq, .wc = wc, .room = num_entries };

		direct_self = &d;
		sv_engine_drive(node, cq);
		direct_self = NULL;
		n = d.n;
		if (!n && __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
			  __atomic_load_n(&cq->head, __ATOMIC_RELAXED)) {
			sv_engine_spin_start(node, cq);
			poll_in_vain(cq);
			return 0;
		}
	}
	sv_cq_thread_busy();
	sv_engine_spin_found(node, cq);
	if (!n)          /* a drive that filled ours leaves the ring to the next poll */
		n = ring_take(cq, num_entries, wc);
	sv_engine_polling(cq, (uint32_t)n);
	sv_stamp(SV_ST_POLL_FOUND);
	return n;
}

int sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sv_cq *cq = to_scq(ibcq);

	/* the application is about to wait for an event, not to poll */
	sv_engine_spin_end(to_sctx(ibcq->context)->node, cq);
	sv_engine_release_acks(to_sctx(ibcq->context)->node, cq);
	sv_engine_batch_flush(to_sctx(ibcq->context)->node);
	sv_spin_lock(&cq->lock);
	/* atomic stores: posters read them without the lock (sv_engine_posting) */
	if (solicited_only)
		__atomic_store_n(&cq->armed_solicited, true, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&cq->armed, true, __ATOMIC_RELAXED);
	sv_spin_unlock(&cq->lock);
	/* About to sleep: ring writers should ring the doorbell again. */
	sv_engine_stop_polling(cq);
	return 0;
}

int sv_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
	/* Moderation is a hint; completions are always delivered at once. */
	if (attr->attr_mask & ~(uint32_t)IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	return 0;
}

/* ---- extended CQ: iterator and field accessors ---- */

static struct sv_cq *cur(struct ibv_cq_ex *c) { return to_scq_ex(c); }

/* Take up to a batch of entries out of the ring.  The lock is not held
 * between start_poll and end_poll: the application may post meanwhile, and
 * posting takes QP locks that rank above the CQ lock. */
static void refill(struct sv_cq *cq)
{
	uint32_t n = 0;

	sv_spin_lock(&cq->lock);
	while (n < 16 && cq->head != cq->tail) {
		uint32_t i = cq_slot(cq, cq->head);

		cq->batch[n] = cq->ring[i];
		cq->batch_ts[n] = cq->ts ? cq->ts[i] : 0;
		n++;
		__atomic_store_n(&cq->head, cq->head + 1, __ATOMIC_RELAXED);
	}
	cq->st->polled = cq->head;
	sv_spin_unlock(&cq->lock);
	cq->batch_n = n;
	cq->batch_i = 0;
}

static int load_cur(struct sv_cq *cq)
{
	if (cq->batch_i == cq->batch_n)
		refill(cq);
	if (cq->batch_i == cq->batch_n)
		return ENOENT;
	cq->cur = cq->batch[cq->batch_i];
	cq->cur_ts = cq->batch_ts[cq->batch_i];
	cq->batch_i++;
	cq->ibcq.wr_id = cq->cur.wr_id;
	cq->ibcq.status = cq->cur.status;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct sv_cq *cq = cur(c);
	struct sv_node *node = to_sctx(cq->ibcq.context)->node;
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	sv_engine_batch_flush(node);
	sv_engine_polling(cq, 1);
	if (cq->batch_i == cq->batch_n &&
	    __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
		sv_engine_drive(node, cq);
	ret = load_cur(cq);
	if (ret)
		sv_engine_spin_start(node, cq);
	else
		sv_engine_spin_found(node, cq);
	return ret;
}

static int ex_next_poll(struct ibv_cq_ex *c)
{
	int ret = load_cur(cur(c));

	if (!ret)
		sv_engine_polling(cur(c), 1);      /* a completion taken is work too */
	return ret;
}
static void ex_end_poll(struct ibv_cq_ex *c) { }
static enum ibv_wc_opcode ex_opcode(struct ibv_cq_ex *c) { return cur(c)->cur.opcode; }
static uint32_t ex_vendor_err(struct ibv_cq_ex *c) { return cur(c)->cur.vendor_err; }
static uint32_t ex_byte_len(struct ibv_cq_ex *c) { return cur(c)->cur.byte_len; }
static __be32 ex_imm(struct ibv_cq_ex *c) { return cur(c)->cur.imm_data; }
static uint32_t ex_qp_num(struct ibv_cq_ex *c) { return cur(c)->cur.qp_num; }
static uint32_t ex_src_qp(struct ibv_cq_ex *c) { return cur(c)->cur.src_qp; }
static unsigned int ex_wc_flags(struct ibv_cq_ex *c) { return cur(c)->cur.wc_flags; }
static uint32_t ex_slid(struct ibv_cq_ex *c) { return cur(c)->cur.slid; }
static uint8_t ex_sl(struct ibv_cq_ex *c) { return cur(c)->cur.sl; }
static uint8_t ex_path_bits(struct ibv_cq_ex *c) { return cur(c)->cur.dlid_path_bits; }
static uint64_t ex_ts(struct ibv_cq_ex *c) { return cur(c)->cur_ts; }
static uint16_t ex_cvlan(struct ibv_cq_ex *c) { return 0; }
static uint32_t ex_flow_tag(struct ibv_cq_ex *c) { return 0; }
static void ex_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm) { memset(tm, 0, sizeof(*tm)); }

static uint64_t ex_wallclock(struct ibv_cq_ex *c)
{
	struct timespec ts;

	/* Timestamps are taken on CLOCK_MONOTONIC; convert to realtime ns. */
	uint64_t mono = sv_now_ns(), real;

	clock_gettime(CLOCK_REALTIME, &ts);
	real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return real - (mono - cur(c)->cur_ts);
}

void sv_cq_init_ex_ops(struct sv_cq *cq)
{
	struct ibv_cq_ex *c = &cq->ibcq;

	c->start_poll = ex_start_poll;
	c->next_poll = ex_next_poll;
	c->end_poll = ex_end_poll;
	c->read_opcode = ex_opcode;
	c->read_vendor_err = ex_vendor_err;
	c->read_byte_len = ex_byte_len;
	c->read_imm_data = ex_imm;
	c->read_qp_num = ex_qp_num;
	c->read_src_qp = ex_src_qp;
	c->read_wc_flags = ex_wc_flags;
	c->read_slid = ex_slid;
	c->read_sl = ex_sl;
	c->read_dlid_path_bits = ex_path_bits;
	c->read_completion_ts = ex_ts;
	c->read_cvlan = ex_cvlan;
	c->read_flow_tag = ex_flow_tag;
	c->read_tm_info = ex_tm_info;
	c->read_completion_wallclock_ns = ex_wallclock;
}

/* ---- create, resize, destroy ---- */

#define SV_CQ_SUP_WC_FLAGS (IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static int cq_alloc_ring(struct sv_cq *cq, uint32_t cqe, bool with_ts)
{
	cq->size = sv_ring_slots(cqe);
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	cq->ts = with_ts ? calloc(cq->size, sizeof(*cq->ts)) : NULL;
	return cq->ring && (cq->ts || !with_ts) ? 0 : ENOMEM;
}

static struct sv_cq *cq_create(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct sv_cq *cq;
	int err = 0;

	if (!a->cqe || a->cqe > SV_MAX_CQE || a->comp_vector >= (uint32_t)context->num_comp_vectors)
		err = EINVAL;
	else if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		err = EOPNOTSUPP;
	else if (a->wc_flags & ~(uint64_t)SV_CQ_SUP_WC_FLAGS)
		err = EOPNOTSUPP;
	/* a parent domain, not a plain PD (ibv_create_cq_ex(3)) */
	else if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
		 (!a->parent_domain || !to_spd(a->parent_domain)->protection ||
		  a->parent_domain->context != context))
		err = EINVAL;
	if (err) {
		errno = err;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq || cq_alloc_ring(cq, a->cqe, a->wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
					IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))) {
		if (cq) {
			free(cq->ring);
			free(cq->ts);
		}
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ibcq.context = context;
	cq->ibcq.channel = a->channel;
	cq->ibcq.cq_context = a->cq_context;
	cq->ibcq.cqe = a->cqe;
	cq->st = svst_alloc(SVST_CQ);
	sv_status_cq(cq);
	cq->drive_fd = epoll_create1(EPOLL_CLOEXEC);
	pthread_mutex_init(&cq->drive_lock, NULL);
	sv_engine_cq_add(to_sctx(context)->node, cq);
	cq->wc_flags = a->wc_flags;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	sv_list_init(&cq->fired_link);
	sv_cq_init_ex_ops(cq);
	if (a->channel)
		sv_channel_add(cq);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		cq->parent_domain = a->parent_domain;
		sv_pd_get(cq->parent_domain);
	}
	return cq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe > 0 ? (uint32_t)cqe : 0,
					 .cq_context = cq_context, .channel = channel,
					 .comp_vector = comp_vector >= 0 ? (uint32_t)comp_vector : ~0u };
	struct sv_cq *cq = cq_create(context, &a);

	return cq ? (struct ibv_cq *)&cq->ibcq : NULL;
}

struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *a)
{
	struct sv_cq *cq = cq_create(context, a);

	return cq ? &cq->ibcq : NULL;
}

static uint32_t cq_used(struct sv_cq *cq)
{
	uint32_t n;

	sv_spin_lock(&cq->lock);
	n = cq->tail - cq->head;
	sv_spin_unlock(&cq->lock);
	return n;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sv_cq *cq = to_scq(ibcq), tmp = { 0 };
	struct ibv_wc *old_ring;
	uint64_t *old_ts;
	uint32_t n;

	if (cqe <= 0 || cqe > SV_MAX_CQE || (uint32_t)cqe < cq_used(cq))
		return EINVAL;
	/* allocated and freed outside the lock: a spin lock's holder never
	 * waits for the allocator (entries may come meanwhile: looked at again) */
	if (cq_alloc_ring(&tmp, cqe, cq->ts != NULL)) {
		free(tmp.ring);
		free(tmp.ts);
		return ENOMEM;
	}
	sv_spin_lock(&cq->lock);
	n = cq->tail - cq->head;
	if ((uint32_t)cqe < n) {
		sv_spin_unlock(&cq->lock);
		free(tmp.ring);
		free(tmp.ts);
		return EINVAL;
	}
	for (uint32_t i = 0; i < n; i++) {
		tmp.ring[i] = cq->ring[cq_slot(cq, cq->head + i)];
		if (tmp.ts)
			tmp.ts[i] = cq->ts[cq_slot(cq, cq->head + i)];
	}
	old_ring = cq->ring;
	old_ts = cq->ts;
	cq->ring = tmp.ring;
	cq->ts = tmp.ts;
	cq->size = tmp.size;
	cq->head = 0;
	cq->tail = n;
	cq->ibcq.cqe = cqe;
	sv_status_cq(cq);
	sv_spin_unlock(&cq->lock);
	free(old_ring);
	free(old_ts);
	return 0;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sv_cq *cq = to_scq(ibcq);

	if (__atomic_load_n(&cq->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (ibcq->channel) {
		sv_channel_forget(cq);
		/* ibv_destroy_cq(3): waits until every event it got is acked. */
		sv_wait_acked(&ibcq->mutex, &ibcq->cond, &ibcq->comp_events_completed,
			      &cq->events_reported);
		sv_channel_del(cq);
		sv_channel_unpinned(cq);     /* no sleeper holds it any more */
	}
	sv_async_purge(ibcq->context, ibcq);
	sv_wait_acked(&ibcq->mutex, &ibcq->cond, &ibcq->async_events_completed,
		      &cq->async_reported);
	sv_engine_cq_del(to_sctx(ibcq->context)->node, cq);
	if (cq->parent_domain)
		sv_pd_put(cq->parent_domain);
	sv_close(cq->drive_fd);
	free(cq->ring);
	free(cq->ts);
	svst_free(cq->st);
	free(cq);
	return 0;
}
