/*
 * The engine as the verbs layer sees it: all that src/verbs may call.  The
 * transports behind it stay out of sight (tools/layering.sh checks that
 * verbs includes this header, never engine.h or a transport's).
 */
#ifndef SV_ENGINE_API_H
#define SV_ENGINE_API_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "util/guard.h"
#include "verbs/sv.h"
#include "wire/addr.h"

struct sv_mcast_member;
struct sv_mrmap;

/* device.c: the node behind a context, and what verbs asks of it */
struct sv_node *sv_engine_open(void);            /* NULL when the node cannot start */
void sv_engine_close(struct sv_node *node);
const struct sv_addr_plan *sv_engine_addr_plan(void);
/* A QPN is reserved first and the QP published once it is fully built:
 * until then no frame finds it. */
int sv_engine_qpn_alloc(struct sv_node *node, uint32_t *qpn);
void sv_engine_qp_publish(struct sv_node *node, uint32_t qpn, struct sv_qp *qp);
/* ibv_destroy_qp: the QP leaves the node on the progress thread, so no
 * handler of its channels or timers runs any more once this returns. */
void sv_engine_qp_unlink(struct sv_node *node, struct sv_qp *qp);
/* An address vector's destination host (multicast: zero, found per send). */
int sv_engine_ah_resolve(struct sv_node *node, const struct ibv_ah_attr *attr,
			 struct sockaddr_in *dst);
/* status.c: publish this process (once), and a QP's descriptive record
 * again (its state, link, channels or last error changed; QP lock held). */
void sv_engine_status_open(void);
void sv_engine_status_qp(struct sv_qp *qp);
/* Run fn(arg) on the progress thread and wait for it. */
void sv_engine_sync(struct sv_node *node, void (*fn)(void *), void *arg);
/* drive.c: a CQ its pollers may spin on (the progress thread watches). */
void sv_engine_cq_add(struct sv_node *node, struct sv_cq *cq);
void sv_engine_cq_del(struct sv_node *node, struct sv_cq *cq);
/* Multicast: a UD QP's membership in a group (NULL, errno set). */
struct sv_mcast_member *sv_engine_mcast_join(struct sv_node *node, const union ibv_gid *mgid,
					     struct sv_qp *qp);
void sv_engine_mcast_leave(struct sv_mcast_member *m);
/* Registered memory same-host peers may map and access directly. */
struct sv_mrmap *sv_engine_mr_share(void *addr, size_t len);
void sv_engine_mr_unshare(struct sv_mrmap *m);
void sv_engine_mr_publish(const struct sv_mr *mr);
/* The MR is withdrawn: returns once no peer copies through it. */
void sv_engine_mr_retract(struct sv_node *node, uint32_t slot);

/* comp.c: a QP's deadlines.  After changing one (QP lock held), give the
 * node the earliest; stop clears those a reset or destroy ends. */
void sv_qp_timer_update(struct sv_qp *qp);
void sv_qp_timers_stop(struct sv_qp *qp);

/* An application thread releases a QP's lock.  The progress thread does
 * not wait for that lock: it leaves the channel's events to the holder
 * (recv.c), who serves them here. */
void sv_engine_serve_deferred(struct sv_qp *qp);

/* Release the lock; are a channel's events left to us?  The unlock
 * before the look at the flag (a fence only where membarrier is refused):
 * either recv.c's lock_or_defer finds the lock free, or we see its flag. */
static inline bool sv_qp_release(struct sv_qp *qp)
{
	sv_qlock_unlock(&qp->lock);
	sv_guard_entry_fence();
	return __atomic_load_n(&qp->deferred, __ATOMIC_RELAXED);
}

static inline void sv_qp_unlock(struct sv_qp *qp)
{
	if (sv_qp_release(qp))
		sv_engine_serve_deferred(qp);
}

/* A post into a ring of a QP of this process (engine/loopback.c): with
 * the QP's lock held, which QP that is; without it, serve that QP now. */
bool sv_engine_loopback_peer(const struct sv_qp *qp, uint32_t *peer);
void sv_engine_loopback(struct sv_node *node, uint32_t peer_qpn);

/* Application-driven progress: poll_cq on an empty CQ processes whatever
 * its channels have ready, so a polling application never waits for the
 * progress thread to be scheduled. */
void sv_engine_drive(struct sv_node *node, struct sv_cq *cq);
/* An application thread posts to a QP completing to `cq` (see drive.c). */
void sv_engine_posting(struct sv_cq *cq);
/* An application thread is about to sleep (ibv_req_notify_cq): writers ring doorbells. */
void sv_engine_stop_polling(struct sv_cq *cq);
/* A thread goes to sleep for armed `cq`'s event (ibv_get_cq_event): its
 * same-host peers wake it directly from now on; what came before is taken
 * now (it may fire the event). */
void sv_engine_cq_sleep(struct sv_node *node, struct sv_cq *cq);
/* A thread sleeps for armed `cq`'s event on the descriptor returned (-1:
 * none), where its TCP channels' input wakes it rather than the progress
 * thread; it serves that input with sv_engine_drive and gives them back. */
int sv_engine_sleep_take(struct sv_cq *cq);
void sv_engine_sleep_give(struct sv_cq *cq);
/* `cq`'s event fired: its sleeper is awake, and a peer that still woke it
 * would leave the channel readable with no event. */
void sv_engine_cq_fired(struct sv_cq *cq);

/* Sends batched across posts (engine/batch.c).  A post (QP lock held, its
 * WQEs queued) writes them, or leaves them queued in a burst.  Every poll,
 * arm and slower verb writes what waits (sv_engine_batch_flush), as does
 * the progress thread's tick; ibv_destroy_qp forgets its QP's. */
void sv_batch_post(struct sv_node *node, struct sv_qp *qp);
void sv_batch_flush(struct sv_node *node);
void sv_batch_forget(struct sv_qp *qp);
extern bool sv_batch_waiting;
static inline void sv_engine_batch_flush(struct sv_node *node)
{
	if (__atomic_load_n(&sv_batch_waiting, __ATOMIC_RELAXED))
		sv_batch_flush(node);
}

/* Every poll of `cq` by an application thread (cheap): `work` is 1 for
 * the poll itself, then the number of completions it returned. */
void sv_engine_polling(struct sv_cq *cq, uint32_t work);

/* A poll found the CQ empty / returned completions or armed it. */
void sv_engine_spin_start(struct sv_node *node, struct sv_cq *cq);
/* A QP's outbound link enters (true) or leaves (false) its handshake. */
void sv_engine_link_setup(bool on);
void sv_engine_spin_end(struct sv_node *node, struct sv_cq *cq);
/* A poll found completions: the spin goes on while its channels are taken,
 * and the next empty poll only ends the draining loop (held ACKs stay). */
void sv_engine_spin_found(struct sv_node *node, struct sv_cq *cq);

/* An application thread about to run the engine (post, poll, modify):
 * channels it may find or close stay allocated until it leaves
 * (util/guard.h); the progress thread frees them only when no thread is
 * inside, and ibv_destroy_qp waits for that (sv_engine_wait_drivers). */
static inline void sv_engine_enter(struct sv_node *node)
{
	sv_guard_enter();
}

static inline void sv_engine_leave(struct sv_node *node)
{
	sv_guard_leave();
}

static inline void sv_engine_wait_drivers(struct sv_node *node)
{
	sv_guard_wait();
}

/* verbs entry points; caller holds qp->lock */
void sv_req_kick(struct sv_qp *qp);              /* transmit what can go */
void sv_req_start_link(struct sv_qp *qp);        /* at RTR: connect to the peer */
void sv_engine_qp_ready(struct sv_qp *qp);       /* state changed: resume channels */
void sv_engine_qp_teardown(struct sv_qp *qp);    /* close channels */

void sv_resp_rnr_resume(struct sv_qp *qp);                 /* a receive was posted */
/* Publish posted receives from index `from` for the requester to place
 * SENDs in (engine/placed.c). */
void sv_resp_publish(struct sv_qp *qp, uint32_t from);
/* ... and those a taken receive let into the window, held until now: after
 * ibv_post_send wrote its requests. */
void sv_resp_publish_due(struct sv_qp *qp);

/* Pollers: release the ACKs the CQ's channels hold (the application waits). */
void sv_engine_release_acks(struct sv_node *node, struct sv_cq *cq);
/* Slower verbs: release every ACK held (the ping-pong is over), and write
 * the sends a burst left queued (batch.c). */
void sv_engine_release_all_acks(struct sv_node *node);
void sv_comp_reap(struct sv_qp *qp);              /* in-order send completions */

#endif
