// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: the active side of a connection (rdma_connect,
 * rdma_establish), rdma_disconnect, rdma_notify and the abort done by
 * rdma_destroy_id.
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

void cm_ep_encode(struct cm_id *p, struct cmw_endpoint *w, uint32_t qpn,
		  uint32_t qkey)
{
	memset(w, 0, sizeof(*w));
	w->qpn = htonl(qpn);
	w->psn = htonl(p->psn);
	w->qkey = htonl(qkey);
	if (p->dev) {
		w->lid = htons(p->dev->lid);
		w->mtu = (uint8_t)p->dev->mtu;
		w->port = p->dev->port;
		memcpy(w->gid, p->dev->gid.raw, 16);
	}
}

void cm_ep_decode(struct cmw_endpoint *host, const struct cmw_endpoint *w)
{
	*host = *w;
	host->qpn = ntohl(w->qpn) & 0xffffff;
	host->psn = ntohl(w->psn) & 0xffffff;
	host->qkey = ntohl(w->qkey);
	host->lid = ntohs(w->lid);
}

static uint8_t clamp3(uint8_t v)
{
	return v > 7 ? 7 : v;
}

/* Check and apply responder resources / initiator depth from a param:
 * RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH mean "the device maximum". */
int cm_apply_rd_atomic(struct cm_id *p, const struct rdma_conn_param *param)
{
	uint8_t rr = param->responder_resources, id = param->initiator_depth;

	if (rr == RDMA_MAX_RESP_RES)
		rr = p->dev->max_resp_res;
	else if (rr > p->dev->max_resp_res)
		return EINVAL;
	if (id == RDMA_MAX_INIT_DEPTH)
		id = p->dev->max_init_depth;
	else if (id > p->dev->max_init_depth)
		return EINVAL;
	p->resp_res = rr;
	p->init_depth = id;
	return 0;
}

static int start_tcp_connect(struct cm_id *p);

/* A refused connect within the grace period: close and try again shortly. */
static bool retry_refused(struct cm_id *p, int err)
{
	if (err != ECONNREFUSED || cm_now_ms() >= p->refused_until_ms)
		return false;
	cm_sock_close(p);
	cm_timer_set(p, CM_TIMER_REFUSED, CM_REFUSED_RETRY_MS);
	return true;
}

void cm_connect_again(struct cm_id *p)
{
	int err = start_tcp_connect(p);

	if (err)
		cm_tcp_connected(p, err);
}

void cm_tcp_connected(struct cm_id *p, int err)
{
	if (retry_refused(p, err))
		return;
	if (err) {
		struct cm_event *e;

		if (err == ECONNREFUSED && cm_ps_is_ud(p->id.ps)) {
			/* Nobody listens: what an IB CM answers a SIDR REQ
			 * for an unknown service. */
			e = cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE, CMW_SIDR_UNSUPPORTED);
			if (e)
				cm_event_set_pdata(e, true, NULL, 0, CMW_REP_PDATA_UD);
		} else if (err == ECONNREFUSED) {
			/* Nobody listens: an IB CM rejects the REQ with
			 * "invalid service ID". */
			e = cm_event_alloc(p, RDMA_CM_EVENT_REJECTED, CMW_REJ_INVALID_SERVICE_ID);
			if (e)
				cm_event_set_pdata(e, false, NULL, 0, CMW_REJ_PDATA);
		} else {
			e = cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE, -err);
		}
		cm_conn_failed(p, e);
		return;
	}
	p->tcp_pending = false;
	cm_sock_watch(p, EPOLLIN);
	err = cm_send_msg(p, CMW_REQ, &p->req, sizeof(p->req));
	if (err)
		cm_peer_lost(p, err);
}

static int start_tcp_connect(struct cm_id *p)
{
	const struct sockaddr *dst = &p->id.route.addr.dst_addr;
	int err;

	if (p->sock < 0) {
		/* A previous attempt consumed the socket: bind again. */
		err = cm_bind_socket(p, &p->id.route.addr.src_addr);
		if (err)
			return err;
	}
	p->tcp_pending = true;
	cm_id_set_state(p, CM_CONNECTING);
	cm_timer_set(p, CM_TIMER_RESPONSE, cm.resp_timeout_ms);
	if (connect(p->sock, dst, cm_sa_len(dst)) == 0) {
		cm_tcp_connected(p, 0);
	} else if (errno == EINPROGRESS || errno == EINTR) {
		cm_sock_watch(p, EPOLLOUT);
	} else {
		cm_tcp_connected(p, errno);
	}
	return 0;
}

static int connect_locked(struct cm_id *p, struct rdma_conn_param *param)
{
	bool ud = cm_ps_is_ud(p->id.ps);
	size_t max = ud ? CMW_REQ_PDATA_UD : CMW_REQ_PDATA_RC;
	struct cmw_req *req = &p->req;
	uint32_t qpn;
	int err;

	if (p->state != CM_ROUTE_RESOLVED || !p->dev)
		return EINVAL;
	err = cm_conn_param_qpn(p, param, max, ud, &qpn);
	if (err)
		return err;
	if (param) {
		err = cm_apply_rd_atomic(p, param);
		if (err)
			return err;
		p->retry_count = clamp3(param->retry_count);
		p->rnr_retry_count = clamp3(param->rnr_retry_count);
		p->flow_control = param->flow_control;
	} else {
		p->resp_res = p->dev->max_resp_res;
		p->init_depth = p->dev->max_init_depth;
		p->retry_count = 7;
		p->rnr_retry_count = 7;
		p->flow_control = 1;
	}
	p->qp_num = qpn;
	p->psn = cm_random_psn();

	memset(req, 0, sizeof(*req));
	cm_ep_encode(p, &req->ep, qpn, RDMA_UDP_QKEY);
	req->conn.responder_resources = p->resp_res;
	req->conn.initiator_depth = p->init_depth;
	req->conn.flow_control = p->flow_control;
	req->conn.retry_count = p->retry_count;
	req->conn.rnr_retry_count = p->rnr_retry_count;
	req->conn.srq = p->srq;
	req->ece.vendor_id = htonl(p->local_ece.vendor_id);
	req->ece.options = htonl(p->local_ece.options);
	req->port_space = htons((uint16_t)p->id.ps);
	req->qp_type = (uint8_t)p->id.qp_type;
	if (param && param->private_data_len) {
		req->conn.pdata_len = param->private_data_len;
		memcpy(req->pdata, param->private_data, param->private_data_len);
	}
	p->refused_until_ms = cm_now_ms() + CM_REFUSED_GRACE_MS;
	return start_tcp_connect(p);
}

CM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *p;
	bool sync;
	int err;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);
	cm_lock();
	err = connect_locked(p, conn_param);
	sync = p->sync;          /* under the lock, as in rdma_accept */
	cm_unlock();
	if (err)
		return cm_set_errno(err);
	return sync ? cm_sync_wait(p) : 0;
}

static void fill_conn_param(struct cm_id *p, struct rdma_conn_param *c,
			    const struct cmw_conn *w)
{
	c->responder_resources = w->initiator_depth;
	c->initiator_depth = w->responder_resources;
	c->flow_control = w->flow_control;
	c->retry_count = w->retry_count;
	c->rnr_retry_count = w->rnr_retry_count;
	c->srq = w->srq;
	c->qp_num = p->remote.qpn;
}

void cm_handle_rep(struct cm_id *p, const struct cmw_rep *rep)
{
	struct cm_event *e;
	int err;

	cm_ep_decode(&p->remote, &rep->ep);
	p->remote_conn = rep->conn;
	p->remote_ece.vendor_id = ntohl(rep->ece.vendor_id);
	p->remote_ece.options = ntohl(rep->ece.options);
	/* We may not read more at once than the peer can answer. */
	if (p->init_depth > rep->conn.responder_resources)
		p->init_depth = rep->conn.responder_resources;
	cm_route_fill(p);
	cm_timer_clear(p);
	CM_TRACE("id %llu: REP: peer qpn %u psn %u lid %u; local qpn %u psn %u",
		 (unsigned long long)p->serial, p->remote.qpn, p->remote.psn,
		 p->remote.lid, p->qp_num, p->psn);

	if (p->id.qp) {
		err = cm_qp_modify(p, p->id.qp, IBV_QPS_RTR);
		if (!err)
			err = cm_qp_modify(p, p->id.qp, IBV_QPS_RTS);
		if (err) {
			cm_send_rej(p, CMW_REJ_CONSUMER_DEFINED, NULL, 0);
			cm_sock_close(p);
			cm_qp_to_error(p);
			cm_id_set_state(p, CM_DISCONNECTED);
			cm_event_post(p, RDMA_CM_EVENT_CONNECT_ERROR, -err);
			return;
		}
		cm_send_msg(p, CMW_RTU, &(struct cmw_empty){ 0 }, sizeof(struct cmw_empty));
		cm_id_set_state(p, CM_ESTABLISHED);
		e = cm_event_alloc(p, RDMA_CM_EVENT_ESTABLISHED, 0);
	} else {
		/* The user moves its own QP and calls rdma_establish. */
		cm_id_set_state(p, CM_REP_RCVD);
		e = cm_event_alloc(p, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
	}
	if (!e)
		return;
	cm_event_set_pdata(e, false, rep->pdata,
			   rep->conn.pdata_len > CMW_REP_PDATA_RC ? CMW_REP_PDATA_RC : rep->conn.pdata_len,
			   CMW_REP_PDATA_RC);
	fill_conn_param(p, &e->ev.param.conn, &rep->conn);
	cm_event_queue(e, sv_container_of(p->id.channel, struct cm_channel, ch));
}

CM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cm_id *p;
	int err = 0;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_lock();
	if (id->qp || p->state != CM_REP_RCVD) {
		err = EINVAL;
	} else {
		err = cm_send_msg(p, CMW_RTU, &(struct cmw_empty){ 0 },
				  sizeof(struct cmw_empty));
		if (!err)
			cm_id_set_state(p, CM_ESTABLISHED);
	}
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

CM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cm_id *p;
	struct cm_channel *ch;
	bool wait = false;
	int err = 0;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);
	cm_lock();
	ch = sv_container_of(id->channel, struct cm_channel, ch);
	switch (p->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		if (cm_ps_is_ud(id->ps) || p->sock < 0) {
			cm_qp_to_error(p);
			break;
		}
		cm_qp_to_error(p);
		cm_send_msg(p, CMW_DREQ, &(struct cmw_empty){ 0 }, sizeof(struct cmw_empty));
		cm_id_set_state(p, CM_DISCONNECTING);
		cm_timer_set(p, CM_TIMER_DREP, cm.resp_timeout_ms);
		wait = true;
		break;
	case CM_CONNECTING:
		/* Give up the attempt: tell the peer, report DISCONNECTED. */
		if (!p->tcp_pending)
			cm_send_rej(p, CMW_REJ_CONSUMER_DEFINED, NULL, 0);
		cm_timer_clear(p);
		cm_sock_close(p);
		cm_qp_to_error(p);
		cm_id_set_state(p, CM_DISCONNECTED);
		cm_event_post(p, RDMA_CM_EVENT_DISCONNECTED, 0);
		wait = true;
		break;
	case CM_DISCONNECTING:
	case CM_DISCONNECTED:
		/* The peer went first (or we already did). */
		cm_qp_to_error(p);
		wait = cm_channel_has_event_for(ch, p, RDMA_CM_EVENT_DISCONNECTED) ||
		       p->state == CM_DISCONNECTING;
		break;
	case CM_REQ_RCVD:
		cm_qp_to_error(p);
		break;
	default:
		err = EINVAL;
		break;
	}
	wait = wait && p->sync;
	cm_unlock();
	if (err)
		return cm_set_errno(err);
	return wait ? cm_sync_wait(p) : 0;
}

CM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cm_id *p;
	int err = 0;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_lock();
	if (event != IBV_EVENT_COMM_EST) {
		err = EINVAL;
	} else if (p->state == CM_REP_SENT) {
		/* Data arrived before the RTU: the connection is up. */
		cm_timer_clear(p);
		cm_id_set_state(p, CM_ESTABLISHED);
		cm_event_post(p, RDMA_CM_EVENT_ESTABLISHED, 0);
	} else if (p->state == CM_ESTABLISHED) {
		err = EISCONN;
	} else {
		err = EINVAL;
	}
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

void cm_conn_abort(struct cm_id *p)
{
	switch (p->state) {
	case CM_CONNECTING:
		if (!p->tcp_pending)
			cm_send_rej(p, CMW_REJ_TIMEOUT, NULL, 0);
		break;
	case CM_REQ_RCVD:
		cm_reject_locked(p, NULL, 0, CMW_REJ_CONSUMER_DEFINED);
		break;
	case CM_REP_SENT:
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
		if (!cm_ps_is_ud(p->id.ps))
			cm_send_msg(p, CMW_DREQ, &(struct cmw_empty){ 0 },
				    sizeof(struct cmw_empty));
		break;
	default:
		break;
	}
	cm_timer_clear(p);
	if (p->state != CM_LISTEN)
		cm_sock_close(p);
}
