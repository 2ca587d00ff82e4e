/* Multicast attach/detach for UD QPs. */
#include <errno.h>

#include "verbs/sv.h"

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (qp->qp_type != IBV_QPT_UD)
		return EINVAL;
	/* TODO(issue 3): multicast delivery over IP multicast groups. */
	return EOPNOTSUPP;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	if (qp->qp_type != IBV_QPT_UD)
		return EINVAL;
	return EOPNOTSUPP;
}
