/*
 * What the verbs layer asks of the node behind a context: its start and
 * end, the device's addresses, QP numbers, address resolution, the CQs
 * pollers spin on, multicast membership and the registered memory
 * same-host peers access directly.  Verbs reaches the transports only
 * here and through the engine's other entry points (engine/api.h).
 */
#include <errno.h>
#include <string.h>

#include "engine/capture.h"
#include "engine/engine.h"

struct sv_node *sv_engine_open(void)
{
	struct sv_node *node;

	sv_capture_init();
	node = sv_node_get(&sv_engine_upcalls);
	if (node)
		sv_engine_status_open();
	return node;
}

void sv_engine_close(struct sv_node *node)
{
	sv_node_put(node);
}

const struct sv_addr_plan *sv_engine_addr_plan(void)
{
	return sv_addr_plan();
}

int sv_engine_qpn_alloc(struct sv_node *node, uint32_t *qpn)
{
	return sv_node_alloc_qpn(node, qpn);
}

void sv_engine_qp_publish(struct sv_node *node, uint32_t qpn, struct sv_qp *qp)
{
	sv_node_publish_qp(node, qpn, qp);
}

static void qp_unlink(void *arg)
{
	struct sv_qp *qp = arg;
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;

	sv_node_free_qpn(node, qp->ibqp.qp_base.qp_num);
	sv_mcast_detach_all(qp);
	sv_qlock_lock(&qp->lock);
	sv_engine_qp_teardown(qp);
	sv_qp_timers_stop(qp);
	sv_node_timer_forget(node, &qp->timer);
	sv_qlock_unlock(&qp->lock);
}

void sv_engine_qp_unlink(struct sv_node *node, struct sv_qp *qp)
{
	sv_node_sync(node, qp_unlink, qp);
}

int sv_engine_ah_resolve(struct sv_node *node, const struct ibv_ah_attr *attr,
			 struct sockaddr_in *dst)
{
	if (attr->is_global && sv_gid_is_mcast(&attr->grh.dgid)) {
		memset(dst, 0, sizeof(*dst));
		return 0;
	}
	if (attr->is_global)
		return sv_node_resolve_gid(node, &attr->grh.dgid, dst) ? 0 : EINVAL;
	return sv_node_resolve_lid(node, attr->dlid, dst) ? 0 : EINVAL;
}

void sv_engine_sync(struct sv_node *node, void (*fn)(void *), void *arg)
{
	sv_node_sync(node, fn, arg);
}

struct sv_mcast_member *sv_engine_mcast_join(struct sv_node *node, const union ibv_gid *mgid,
					     struct sv_qp *qp)
{
	return sv_mcast_join(node, mgid, qp->ibqp.qp_base.qp_num, qp);
}

void sv_engine_mcast_leave(struct sv_mcast_member *m)
{
	sv_mcast_leave(m);
}

struct sv_mrmap *sv_engine_mr_share(void *addr, size_t len)
{
	return sv_mrmap_share(addr, len);
}

void sv_engine_mr_unshare(struct sv_mrmap *m)
{
	sv_mrmap_unshare(m);
}

/* Same-host peers check rkeys in our segment before they access directly;
 * a window's accesses they leave to us (SV_SEG_WINDOW). */
void sv_engine_mr_publish(const struct sv_mr *mr)
{
	struct sv_seg_mr_map map;

	sv_mrmap_describe(mr->share, &map.fd, &map.addr, &map.len, &map.ino);
	sv_seg_mr_publish(mr->index, mr->ibmr.rkey, mr->access | (mr->mw ? SV_SEG_WINDOW : 0),
			  to_spd(mr->ibmr.pd)->id,
			  (uintptr_t)mr->base, mr->ibmr.length, mr->iova, &map);
}

void sv_engine_mr_retract(struct sv_node *node, uint32_t slot)
{
	sv_seg_mr_retract(slot);
	sv_conn_shm_wait_direct(node, slot);
}
