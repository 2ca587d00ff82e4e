/*
 * Multicast attach/detach for UD QPs.  Each attachment is a membership
 * socket (transport/unix/mcast.h) that the progress thread watches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine.h"
#include "transport/node.h"
#include "transport/unix/mcast.h"
#include "verbs/sv.h"

struct sv_mcast_att {
	struct sv_handler h;
	struct sv_list link;         /* qp->mcast, under qp->lock */
	union ibv_gid mgid;
	struct sv_qp *qp;
};

static void on_mcast(struct sv_handler *h, uint32_t events)
{
	struct sv_mcast_att *a = sv_container_of(h, struct sv_mcast_att, h);
	struct in_addr self = to_sctx(a->qp->ibqp.qp_base.context)->node->addr;
	uint8_t buf[SV_UDP_BUF];

	for (;;) {
		struct sv_wire_hdr hdr;
		struct sockaddr_un from;
		socklen_t fl = sizeof(from);
		ssize_t r = recvfrom(h->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &fl);

		if (r < 0)
			return;
		if ((size_t)r < sizeof(hdr) || (size_t)r > sizeof(buf))
			continue;
		memcpy(&hdr, buf, sizeof(hdr));
		if (!sv_wire_decode(&hdr) || hdr.len != (size_t)r - sizeof(hdr) ||
		    (hdr.opcode != SV_OP_SEND && hdr.opcode != SV_OP_SEND_IMM) ||
		    !sv_mcast_source_ok((struct sockaddr *)&from, fl, &hdr, self))
			continue;                   /* malformed, or a forged source: drop */
		pthread_mutex_lock(&a->qp->lock);
		sv_resp_ud(a->qp, &hdr, buf + sizeof(hdr), self);
		pthread_mutex_unlock(&a->qp->lock);
	}
}

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
	int fd, ret = 0;

	if (ibqp->qp_type != IBV_QPT_UD || !sv_gid_is_mcast(gid))
		return EINVAL;
	pthread_mutex_lock(&qp->lock);
	if (find(qp, gid))
		goto out;                       /* already a member */
	if (sv_list_count(&qp->mcast) >= SV_MAX_MCAST_GRP) {
		ret = ENOMEM;
		goto out;
	}
	a = calloc(1, sizeof(*a));
	fd = a ? sv_mcast_bind(gid, ibqp->qp_num) : -ENOMEM;
	if (fd < 0) {
		free(a);
		ret = -fd;
		goto out;
	}
	a->h.fd = fd;
	a->h.fn = on_mcast;
	a->mgid = *gid;
	a->qp = qp;
	sv_list_add_tail(&qp->mcast, &a->link);
	if (sv_node_watch(node, &a->h, EPOLLIN)) {
		sv_list_del(&a->link);
		close(fd);
		free(a);
		ret = ENOMEM;
	}
out:
	sv_qp_unlock(qp);
	return ret;
}

struct detach_req {
	struct sv_qp *qp;
	union ibv_gid gid;
	int ret;
};

static void drop(struct sv_node *node, struct sv_mcast_att *a)
{
	sv_list_del(&a->link);
	sv_node_unwatch(node, &a->h);
	close(a->h.fd);
	free(a);
}

/* On the progress thread, so no handler of the attachment is running. */
static void detach_on_progress(void *arg)
{
	struct detach_req *r = arg;
	struct sv_qp *qp = r->qp;
	struct sv_mcast_att *a;

	pthread_mutex_lock(&qp->lock);
	a = find(qp, &r->gid);
	if (a)
		drop(to_sctx(qp->ibqp.qp_base.context)->node, a);
	r->ret = a ? 0 : EINVAL;
	pthread_mutex_unlock(&qp->lock);
}

int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct detach_req r = { .qp = to_sqp(ibqp), .gid = *gid };

	if (ibqp->qp_type != IBV_QPT_UD)
		return EINVAL;
	sv_node_sync(to_sctx(ibqp->context)->node, detach_on_progress, &r);
	return r.ret;
}

void sv_mcast_detach_all(struct sv_qp *qp)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	struct sv_list *pos, *tmp;

	pthread_mutex_lock(&qp->lock);
	sv_list_for_each_safe(pos, tmp, &qp->mcast)
		drop(node, sv_container_of(pos, struct sv_mcast_att, link));
	pthread_mutex_unlock(&qp->lock);
}
