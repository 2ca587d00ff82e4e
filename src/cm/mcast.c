// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: UD multicast joins.
 *
 * There is no subnet manager: a group's MGID is derived from its IP address
 * (IPv4: ff15:401b:ffff::a.b.c.d, IPv6 multicast: the address itself) and
 * its MLID from a hash of the MGID (0xc000-0xfffe).  Joining attaches the
 * id's QP with ibv_attach_mcast and reports MULTICAST_JOIN with the AH
 * attributes, QPN 0xffffff and RDMA_UDP_QKEY; the device delivers group
 * traffic to every attached QP.  A failed attach is MULTICAST_ERROR, except
 * EOPNOTSUPP (a device without multicast): the join is reported, unattached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "cm/cm.h"

static void mgid_for(union ibv_gid *mgid, const struct sockaddr *sa)
{
	memset(mgid, 0, sizeof(*mgid));
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_MULTICAST(a)) {
			memcpy(mgid->raw, a, 16);
			return;
		}
		memcpy(mgid->raw, a, 16);
		mgid->raw[0] = 0xff;
		mgid->raw[1] = 0x15;
		return;
	}
	mgid->raw[0] = 0xff;
	mgid->raw[1] = 0x15;
	mgid->raw[2] = 0x40;
	mgid->raw[3] = 0x1b;
	mgid->raw[4] = 0xff;
	mgid->raw[5] = 0xff;
	memcpy(&mgid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
}

static uint16_t mlid_for(const union ibv_gid *mgid)
{
	uint32_t h = 2166136261u;
	int i;

	for (i = 0; i < 16; i++)
		h = (h ^ mgid->raw[i]) * 16777619u;
	return (uint16_t)(0xc000 + h % 0x3fff);
}

static struct cm_mcast *find(struct cm_id *p, const struct sockaddr *sa)
{
	struct sv_list *pos, *tmp;
	socklen_t len = cm_sa_len(sa);

	sv_list_for_each_safe(pos, tmp, &p->mcasts) {
		struct cm_mcast *m = sv_container_of(pos, struct cm_mcast, node);

		if (m->addr.ss_family == sa->sa_family &&
		    !memcmp(&m->addr, sa, len))
			return m;
	}
	return NULL;
}

static void post_join(struct cm_id *p, struct cm_mcast *m, int err)
{
	struct cm_event *e;
	struct rdma_ud_param *ud;

	e = cm_event_alloc(p, err ? RDMA_CM_EVENT_MULTICAST_ERROR :
				    RDMA_CM_EVENT_MULTICAST_JOIN, err ? -err : 0);
	if (!e)
		return;
	ud = &e->ev.param.ud;
	/* "The context is returned to the user through the private_data
	 * field in the rdma_cm_event." */
	ud->private_data = m->context;
	ud->private_data_len = 0;
	ud->ah_attr.dlid = m->mlid;
	ud->ah_attr.port_num = p->id.port_num;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.grh.dgid = m->mgid;
	ud->ah_attr.grh.sgid_index = 0;
	ud->ah_attr.grh.hop_limit = 64;
	ud->ah_attr.grh.traffic_class = p->tos;
	ud->qp_num = 0xffffff;
	ud->qkey = RDMA_UDP_QKEY;
	cm_event_queue(e, sv_container_of(p->id.channel, struct cm_channel, ch));
}

static int join_locked(struct cm_id *p, const struct sockaddr *addr,
		       void *context, bool send_only)
{
	struct cm_mcast *m;
	int err = 0;

	if (!p->dev || !cm_ps_is_ud(p->id.ps))
		return EINVAL;
	if (!cm_sa_len(addr))
		return addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL;
	if (!cm_sa_is_multicast(addr))
		return EINVAL;
	if (find(p, addr))
		return EADDRINUSE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return ENOMEM;
	memcpy(&m->addr, addr, cm_sa_len(addr));
	m->context = context;
	m->send_only = send_only;
	mgid_for(&m->mgid, addr);
	m->mlid = mlid_for(&m->mgid);
	if (p->id.qp && !send_only) {
		err = ibv_attach_mcast(p->id.qp, &m->mgid, m->mlid);
		if (err == EOPNOTSUPP || err == ENOSYS) {
			/* The device cannot deliver group traffic yet: the
			 * join itself (address, AH, qkey) still stands. */
			CM_TRACE("id %llu: ibv_attach_mcast: %d, joined unattached",
				 (unsigned long long)p->serial, err);
			err = 0;
		} else if (err) {
			err = err > 0 ? err : EINVAL;
		} else {
			m->attached = true;
		}
	}
	sv_list_add_tail(&p->mcasts, &m->node);
	post_join(p, m, err);
	return 0;
}

CM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	int err;

	if (!id || !addr)
		return cm_set_errno(EINVAL);
	cm_lock();
	err = join_locked(cm_id_of(id), addr, context, false);
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

CM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *mc_join_attr,
				     void *context)
{
	uint32_t need = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	int err;

	if (!id || !mc_join_attr || !mc_join_attr->addr)
		return cm_set_errno(EINVAL);
	if ((mc_join_attr->comp_mask & need) != need ||
	    (mc_join_attr->comp_mask & ~need))
		return cm_set_errno(EINVAL);
	if (mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    mc_join_attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return cm_set_errno(EINVAL);
	cm_lock();
	err = join_locked(cm_id_of(id), mc_join_attr->addr, context,
			  mc_join_attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER);
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

static void leave_one(struct cm_id *p, struct cm_mcast *m)
{
	if (m->attached && p->id.qp)
		ibv_detach_mcast(p->id.qp, &m->mgid, m->mlid);
	sv_list_del(&m->node);
	free(m);
}

CM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_mcast *m;
	int err = 0;

	if (!id || !addr)
		return cm_set_errno(EINVAL);
	cm_lock();
	m = cm_sa_len(addr) ? find(cm_id_of(id), addr) : NULL;
	if (m)
		leave_one(cm_id_of(id), m);
	else
		err = EADDRNOTAVAIL;
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

void cm_mcast_leave_all(struct cm_id *p)
{
	struct sv_list *pos, *tmp;

	sv_list_for_each_safe(pos, tmp, &p->mcasts)
		leave_one(p, sv_container_of(pos, struct cm_mcast, node));
}
