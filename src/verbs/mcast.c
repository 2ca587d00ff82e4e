/*
 * Multicast attach/detach for UD QPs: the QP's list of groups.  Each is a
 * membership the transport keeps (transport/unix/member.c), whose copies
 * reach the QP's responder through the engine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api.h"
#include "verbs/sv.h"

struct sv_mcast_att {
	struct sv_list link;         /* qp->mcast, under qp->lock */
	union ibv_gid mgid;
	struct sv_mcast_member *m;
};

static struct sv_mcast_att *find(struct sv_qp *qp, const union ibv_gid *gid)
{
	struct sv_list *pos, *tmp;

	sv_list_for_each_safe(pos, tmp, &qp->mcast) {
		struct sv_mcast_att *a = sv_container_of(pos, struct sv_mcast_att, link);

		if (!memcmp(&a->mgid, gid, sizeof(*gid)))
			return a;
	}
	return NULL;
}

int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct sv_qp *qp = to_sqp(ibqp);
	struct sv_node *node = to_sctx(ibqp->context)->node;
	struct sv_mcast_att *a;
	int ret = 0;

	if (ibqp->qp_type != IBV_QPT_UD || !sv_gid_is_mcast(gid))
		return EINVAL;
	sv_qlock_lock(&qp->lock);
	if (find(qp, gid))
		goto out;                       /* already a member */
	if (sv_list_count(&qp->mcast) >= SV_MAX_MCAST_GRP) {
		ret = ENOMEM;
		goto out;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		ret = ENOMEM;
		goto out;
	}
	a->m = sv_engine_mcast_join(node, gid, qp);
	if (!a->m) {
		ret = errno;
		free(a);
		goto out;
	}
	a->mgid = *gid;
	sv_list_add_tail(&qp->mcast, &a->link);
out:
	sv_qp_unlock(qp);
	return ret;
}

struct detach_req {
	struct sv_qp *qp;
	union ibv_gid gid;
	int ret;
};

static void drop(struct sv_mcast_att *a)
{
	sv_list_del(&a->link);
	sv_engine_mcast_leave(a->m);
	free(a);
}

/* On the progress thread, so no handler of the attachment is running. */
static void detach_on_progress(void *arg)
{
	struct detach_req *r = arg;
	struct sv_qp *qp = r->qp;
	struct sv_mcast_att *a;

	sv_qlock_lock(&qp->lock);
	a = find(qp, &r->gid);
	if (a)
		drop(a);
	r->ret = a ? 0 : EINVAL;
	sv_qlock_unlock(&qp->lock);
}

int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct detach_req r = { .qp = to_sqp(ibqp), .gid = *gid };

	if (ibqp->qp_type != IBV_QPT_UD)
		return EINVAL;
	sv_engine_sync(to_sctx(ibqp->context)->node, detach_on_progress, &r);
	return r.ret;
}

void sv_mcast_detach_all(struct sv_qp *qp)
{
	struct sv_list *pos, *tmp;

	sv_qlock_lock(&qp->lock);
	sv_list_for_each_safe(pos, tmp, &qp->mcast)
		drop(sv_container_of(pos, struct sv_mcast_att, link));
	sv_qlock_unlock(&qp->lock);
}
