// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: rdma_cm_id lifetime, options and channel migration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "cm/cm.h"

const char *cm_state_str(enum cm_state s)
{
	static const char *const names[] = {
		[CM_IDLE] = "IDLE", [CM_ADDR_BOUND] = "ADDR_BOUND",
		[CM_ADDR_RESOLVED] = "ADDR_RESOLVED",
		[CM_ROUTE_RESOLVED] = "ROUTE_RESOLVED", [CM_LISTEN] = "LISTEN",
		[CM_REQ_WAIT] = "REQ_WAIT", [CM_CONNECTING] = "CONNECTING",
		[CM_REP_RCVD] = "REP_RCVD", [CM_REQ_RCVD] = "REQ_RCVD",
		[CM_REP_SENT] = "REP_SENT", [CM_ESTABLISHED] = "ESTABLISHED",
		[CM_DISCONNECTING] = "DISCONNECTING",
		[CM_DISCONNECTED] = "DISCONNECTED", [CM_DESTROYING] = "DESTROYING",
	};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void cm_id_set_state(struct cm_id *p, enum cm_state s)
{
	p->state = s;
}

bool cm_ps_is_ud(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB;
}

int cm_ps_valid(enum rdma_port_space ps)
{
	return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IB ||
	       ps == RDMA_PS_IPOIB;
}

struct cm_id *cm_id_new(struct rdma_event_channel *channel, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cm_id *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	if (!channel) {
		struct cm_channel *ch = cm_channel_new(true);

		if (!ch) {
			free(p);
			return NULL;
		}
		channel = &ch->ch;
		p->sync = true;
	}
	p->id.channel = channel;
	p->id.context = context;
	p->id.ps = ps;
	p->id.qp_type = qpt;
	p->id.route.path_rec = NULL;
	p->serial = cm.next_serial++;
	p->state = CM_IDLE;
	p->sock = -1;
	p->afonly = -1;
	p->reuseaddr = true;
	pthread_cond_init(&p->cond, NULL);
	sv_list_init(&p->mcasts);
	sv_list_add_tail(&cm.ids, &p->node);
	return p;
}

void cm_id_free_locked(struct cm_id *p)
{
	struct cm_channel *ch = sv_container_of(p->id.channel, struct cm_channel, ch);

	sv_list_del(&p->node);
	if (p->sync && ch->sync_private)
		cm_channel_free(ch);
	pthread_cond_destroy(&p->cond);
	free(p->ep_qp_attr);
	free(p);
}

CM_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	struct cm_id *p;
	enum ibv_qp_type qpt;

	if (!id || !cm_ps_valid(ps))
		return cm_set_errno(EINVAL);
	qpt = cm_ps_is_ud(ps) ? IBV_QPT_UD : IBV_QPT_RC;
	cm_lock();
	p = cm_id_new(channel, context, ps, qpt);
	cm_unlock();
	if (!p)
		return cm_set_errno(ENOMEM);
	*id = &p->id;
	return 0;
}

CM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cm_id *p;
	struct cm_channel *ch;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);

	cm_lock();
	ch = sv_container_of(id->channel, struct cm_channel, ch);
	cm_mcast_leave_all(p);
	cm_conn_abort(p);
	if (p->state == CM_LISTEN)
		cm_listener_gone(p);
	cm_id_set_state(p, CM_DESTROYING);
	cm_timer_clear(p);
	cm_sock_close(p);
	cm_channel_purge_id(ch, p);
	/* "Destruction of an rdma_cm_id will block until related events have
	 * been acknowledged." */
	while (p->outstanding > 0)
		pthread_cond_wait(&p->cond, &cm.lock);
	cm_id_free_locked(p);
	cm_unlock();
	return 0;
}

CM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel)
{
	struct cm_id *p;
	struct cm_channel *from, *to;
	bool new_private = false;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);
	if (!channel) {
		to = cm_channel_new(true);
		if (!to)
			return cm_set_errno(ENOMEM);
		new_private = true;
	} else {
		to = sv_container_of(channel, struct cm_channel, ch);
	}
	cm_lock();
	from = sv_container_of(id->channel, struct cm_channel, ch);
	if (from == to) {
		cm_unlock();
		return 0;
	}
	cm_channel_move_id(from, to, p);
	id->channel = &to->ch;
	if (p->sync && from->sync_private)
		cm_channel_free(from);
	p->sync = new_private;
	cm_unlock();
	return 0;
}

static int set_id_option(struct cm_id *p, int optname, void *optval,
			 size_t optlen)
{
	switch (optname) {
	case RDMA_OPTION_ID_TOS:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		p->tos = *(uint8_t *)optval;
		p->tos_set = true;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		/* Both are int flags that shape the bind, so only an idle id
		 * takes them. */
		if (optlen != sizeof(int) || p->state != CM_IDLE)
			return EINVAL;
		if (optname == RDMA_OPTION_ID_REUSEADDR)
			p->reuseaddr = *(int *)optval != 0;
		else
			p->afonly = *(int *)optval != 0;
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != sizeof(uint8_t))
			return EINVAL;
		p->ack_timeout = *(uint8_t *)optval;
		p->ack_timeout_set = true;
		return 0;
	}
	return ENOSYS;
}

static int set_ib_path(struct cm_id *p, void *optval, size_t optlen)
{
	struct ibv_path_data *pd = optval;
	size_t n = optlen / sizeof(*pd);

	if (!optval || !n || optlen % sizeof(*pd))
		return EINVAL;
	if (p->state != CM_ADDR_RESOLVED && p->state != CM_ROUTE_RESOLVED)
		return EINVAL;
	/* The path the user supplies replaces our computed route; with a
	 * software device only the GIDs/LIDs matter and the CM exchanges
	 * those itself, so the route is simply marked resolved. */
	cm_route_fill(p);
	cm_id_set_state(p, CM_ROUTE_RESOLVED);
	return 0;
}

CM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen)
{
	struct cm_id *p;
	int err;

	if (!id || !optval)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_lock();
	if (level == RDMA_OPTION_ID)
		err = set_id_option(p, optname, optval, optlen);
	else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH)
		err = set_ib_path(p, optval, optlen);
	else
		err = ENOSYS;
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

static __be16 sa_port_be(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_port;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)sa)->sin6_port;
	return 0;
}

CM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return id ? sa_port_be(&id->route.addr.src_addr) : 0;
}

CM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return id ? sa_port_be(&id->route.addr.dst_addr) : 0;
}
