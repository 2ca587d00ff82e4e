// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: listening ids and incoming connection requests.
 *
 * rdma_listen turns the id's bound TCP socket into a listening socket.
 * Each accepted TCP connection becomes an internal id (state REQ_WAIT,
 * invisible to the user) until its REQ arrives; then it becomes the new id
 * of a CONNECT_REQUEST event queued on the listener's channel.  Like the
 * real library, that event counts against the listener (the new id may be
 * destroyed before the event is acked) and the new id inherits the
 * listener's context, port space and (a)synchronous mode.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "cm/cm.h"

CM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cm_id *p;
	int err = 0;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_lock();
	if (p->state == CM_IDLE) {
		/* Listening unbound: any IPv4 address, any port. */
		struct sockaddr_in any = { .sin_family = AF_INET };

		err = cm_bind_socket(p, (struct sockaddr *)&any);
		if (!err)
			cm_id_set_state(p, CM_ADDR_BOUND);
	}
	if (!err && p->state != CM_ADDR_BOUND)
		err = EINVAL;
	if (!err && listen(p->sock, backlog > 0 ? backlog : SOMAXCONN))
		err = errno;
	if (!err) {
		cm_id_set_state(p, CM_LISTEN);
		cm_sock_watch(p, EPOLLIN);
	}
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

void cm_listen_readable(struct cm_id *l)
{
	for (;;) {
		struct cm_id *c;
		int fd = accept4(l->sock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;	/* EAGAIN, or a connection reset before accept */
		c = cm_id_new(l->id.channel, NULL, l->id.ps, l->id.qp_type);
		if (!c) {
			close(fd);
			continue;
		}
		c->sock = fd;
		c->listen_serial = l->serial;
		cm_id_set_state(c, CM_REQ_WAIT);
		cm_sock_watch(c, EPOLLIN);
		cm_timer_set(c, CM_TIMER_REQ_READ, cm.resp_timeout_ms);
	}
}

/* Refuse a request no listener wants, the way an IB CM does. */
static void refuse(struct cm_id *c, bool ud)
{
	if (ud) {
		struct cmw_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.status = htonl(CMW_SIDR_UNSUPPORTED);
		cm_send_msg(c, CMW_REP, &rep, sizeof(rep));
	} else {
		cm_send_rej(c, CMW_REJ_INVALID_SERVICE_ID, NULL, 0);
	}
	cm_timer_clear(c);
	cm_sock_close(c);
	cm_id_free_locked(c);
}

static void set_addrs(struct cm_id *c)
{
	socklen_t len = sizeof(c->id.route.addr.src_storage);

	getsockname(c->sock, &c->id.route.addr.src_addr, &len);
	len = sizeof(c->id.route.addr.dst_storage);
	getpeername(c->sock, &c->id.route.addr.dst_addr, &len);
}

void cm_handle_req(struct cm_id *c, const struct cmw_req *req)
{
	struct cm_id *l = cm_id_lookup(c->listen_serial);
	bool ud = cm_ps_is_ud((enum rdma_port_space)ntohs(req->port_space));
	struct cmw_mra mra = { .service_timeout_ms = htonl(cm.service_timeout_ms) };
	struct cm_device *dev;
	struct cm_event *e;
	size_t plen;

	if (!l || l->state != CM_LISTEN ||
	    ntohs(req->port_space) != (uint16_t)l->id.ps) {
		refuse(c, ud);
		return;
	}
	set_addrs(c);
	dev = cm_device_for_addr(&c->id.route.addr.src_addr);
	if (!dev) {
		refuse(c, ud);
		return;
	}
	cm_send_msg(c, CMW_MRA, &mra, sizeof(mra));

	c->id.context = l->id.context;
	if (l->sync) {
		struct cm_channel *ch = cm_channel_new(true);

		if (!ch) {
			refuse(c, ud);
			return;
		}
		c->id.channel = &ch->ch;
		c->sync = true;
	}
	cm_id_attach_device(c, dev);
	cm_ep_decode(&c->remote, &req->ep);
	c->remote_conn = req->conn;
	c->remote_ece.vendor_id = ntohl(req->ece.vendor_id);
	c->remote_ece.options = ntohl(req->ece.options);
	c->psn = cm_random_psn();
	/* Defaults used by rdma_accept(id, NULL). */
	c->resp_res = req->conn.initiator_depth < dev->max_resp_res ?
		      req->conn.initiator_depth : dev->max_resp_res;
	c->init_depth = req->conn.responder_resources < dev->max_init_depth ?
			req->conn.responder_resources : dev->max_init_depth;
	c->retry_count = req->conn.retry_count;
	c->rnr_retry_count = req->conn.rnr_retry_count;
	c->flow_control = req->conn.flow_control;
	cm_route_fill(c);
	cm_timer_clear(c);
	cm_id_set_state(c, CM_REQ_RCVD);

	e = cm_event_alloc(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!e)
		return;
	e->owner = l;
	e->ev.listen_id = &l->id;
	plen = req->conn.pdata_len;
	if (ud) {
		cm_event_set_pdata(e, true, req->pdata,
				   plen > CMW_REQ_PDATA_UD ? CMW_REQ_PDATA_UD : plen,
				   CMW_REQ_PDATA_UD);
		e->ev.param.ud.qp_num = c->remote.qpn;
		e->ev.param.ud.qkey = c->remote.qkey;
	} else {
		struct rdma_conn_param *cp = &e->ev.param.conn;

		cm_event_set_pdata(e, false, req->pdata,
				   plen > CMW_REQ_PDATA_RC ? CMW_REQ_PDATA_RC : plen,
				   CMW_REQ_PDATA_RC);
		cp->responder_resources = req->conn.initiator_depth;
		cp->initiator_depth = req->conn.responder_resources;
		cp->flow_control = req->conn.flow_control;
		cp->retry_count = req->conn.retry_count;
		cp->rnr_retry_count = req->conn.rnr_retry_count;
		cp->srq = req->conn.srq;
		cp->qp_num = c->remote.qpn;
	}
	cm_event_queue(e, sv_container_of(l->id.channel, struct cm_channel, ch));
}

void cm_listener_gone(struct cm_id *l)
{
	struct cm_channel *lch = sv_container_of(l->id.channel, struct cm_channel, ch);
	struct sv_list *pos, *tmp;

	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *c = sv_container_of(pos, struct cm_id, node);

		if (c->listen_serial != l->serial)
			continue;
		if (c->state == CM_REQ_WAIT) {
			refuse(c, cm_ps_is_ud(c->id.ps));
			continue;
		}
		if (c->state == CM_REQ_RCVD &&
		    cm_channel_has_event_for(lch, c, RDMA_CM_EVENT_CONNECT_REQUEST)) {
			/* The user never saw this request: it dies with the
			 * listener. */
			cm_reject_locked(c, NULL, 0, CMW_REJ_CONSUMER_DEFINED);
			cm_channel_purge_id(lch, c);
			if (c->sync) {
				struct cm_channel *cch = sv_container_of(c->id.channel,
							struct cm_channel, ch);
				cm_channel_purge_id(cch, c);
			}
			if (c->outstanding == 0) {
				cm_id_free_locked(c);
				continue;
			}
		}
		c->listen_serial = 0;
	}
}
