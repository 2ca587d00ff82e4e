// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: the passive side's answers to a connection request:
 * rdma_accept, rdma_reject and, for synchronous listeners, rdma_get_request.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "cm/cm.h"

static int accept_locked(struct cm_id *p, struct rdma_conn_param *param)
{
	bool ud = cm_ps_is_ud(p->id.ps);
	size_t max = ud ? CMW_REP_PDATA_UD : CMW_REP_PDATA_RC;
	struct cmw_rep rep;
	uint32_t qpn;
	int err;

	if (p->state != CM_REQ_RCVD)
		return EINVAL;
	err = cm_conn_param_qpn(p, param, max, false, &qpn);
	if (err)
		return err;
	if (param && !ud) {
		err = cm_apply_rd_atomic(p, param);
		if (err)
			return err;
		p->rnr_retry_count = param->rnr_retry_count > 7 ? 7 : param->rnr_retry_count;
		p->flow_control = param->flow_control;
	}
	/* Never promise to read more than the requester can answer. */
	if (p->init_depth > p->remote_conn.responder_resources)
		p->init_depth = p->remote_conn.responder_resources;
	p->qp_num = qpn;

	if (p->peer_lost) {
		/* The requester vanished before we answered. */
		cm_id_set_state(p, CM_DISCONNECTED);
		cm_event_post(p, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET);
		return 0;
	}
	if (p->id.qp && !ud) {
		err = cm_qp_modify(p, p->id.qp, IBV_QPS_RTR);
		if (!err)
			err = cm_qp_modify(p, p->id.qp, IBV_QPS_RTS);
		if (err)
			return err;
	}

	CM_TRACE("id %llu: accept: peer qpn %u psn %u; local qpn %u psn %u",
		 (unsigned long long)p->serial, p->remote.qpn, p->remote.psn, qpn, p->psn);
	memset(&rep, 0, sizeof(rep));
	cm_ep_encode(p, &rep.ep, qpn, RDMA_UDP_QKEY);
	rep.conn.responder_resources = p->resp_res;
	rep.conn.initiator_depth = p->init_depth;
	rep.conn.flow_control = p->flow_control;
	rep.conn.retry_count = p->retry_count;
	rep.conn.rnr_retry_count = p->rnr_retry_count;
	rep.conn.srq = p->srq;
	rep.ece.vendor_id = htonl(p->local_ece.vendor_id);
	rep.ece.options = htonl(p->local_ece.options);
	rep.status = htonl(CMW_SIDR_SUCCESS);
	if (param && param->private_data_len) {
		rep.conn.pdata_len = param->private_data_len;
		memcpy(rep.pdata, param->private_data, param->private_data_len);
	}
	err = cm_send_msg(p, CMW_REP, &rep, sizeof(rep));
	if (ud) {
		/* Service lookup answered: nothing more to say. */
		cm_sock_close(p);
		cm_id_set_state(p, CM_ESTABLISHED);
		return 0;
	}
	if (err) {
		cm_peer_lost(p, err);
		return 0;
	}
	cm_id_set_state(p, CM_REP_SENT);
	cm_timer_set(p, CM_TIMER_RTU, cm.service_timeout_ms);
	return 0;
}

CM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct cm_id *p;
	bool sync;
	int err;

	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_lock();
	err = accept_locked(p, conn_param);
	/* read under the lock: once it is dropped another thread may destroy
	 * an asynchronous id (cmtime does) */
	sync = p->sync && !cm_ps_is_ud(id->ps);
	cm_unlock();
	if (err)
		return cm_set_errno(err);
	/* A synchronous RC accept returns once the connection is up. */
	return sync ? cm_sync_wait(p) : 0;
}

int cm_reject_locked(struct cm_id *p, const void *pdata, uint8_t len,
		     uint32_t reason)
{
	bool ud = cm_ps_is_ud(p->id.ps);

	if (p->state != CM_REQ_RCVD && p->state != CM_REP_RCVD)
		return EINVAL;
	if (len && !pdata)
		return EINVAL;
	if (len > (ud ? CMW_REP_PDATA_UD : CMW_REJ_PDATA))
		return EINVAL;
	if (ud) {
		struct cmw_rep rep;

		memset(&rep, 0, sizeof(rep));
		rep.status = htonl(CMW_SIDR_REJECT);
		rep.conn.pdata_len = len;
		if (len)
			memcpy(rep.pdata, pdata, len);
		cm_send_msg(p, CMW_REP, &rep, sizeof(rep));
	} else {
		cm_send_rej(p, reason, pdata, len);
	}
	cm_conn_failed(p, NULL);
	return 0;
}

/* rdma_reject and rdma_reject_ece differ only in the reason they send. */
int cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len,
	      uint32_t reason)
{
	int err;

	if (!id)
		return cm_set_errno(EINVAL);
	cm_lock();
	err = cm_reject_locked(cm_id_of(id), pdata, len, reason);
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

CM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	return cm_reject(id, private_data, private_data_len,
			 CMW_REJ_CONSUMER_DEFINED);
}

CM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct cm_id *l, *c;
	struct rdma_cm_event *ev;
	int err;

	if (!listen || !id)
		return cm_set_errno(EINVAL);
	l = cm_id_of(listen);
	if (!l->sync || l->state != CM_LISTEN)
		return cm_set_errno(EINVAL);
	if (rdma_get_cm_event(listen->channel, &ev))
		return -1;
	if (ev->status) {
		err = ev->status < 0 ? -ev->status : ev->status;
		rdma_ack_cm_event(ev);
		return cm_set_errno(err);
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(ev);
		return cm_set_errno(EINVAL);
	}
	c = cm_id_of(ev->id);
	if (l->ep_qp_attr) {
		struct ibv_qp_init_attr attr = *l->ep_qp_attr;

		if (rdma_create_qp(&c->id, l->ep_pd, &attr)) {
			err = errno;
			rdma_reject(&c->id, NULL, 0);
			rdma_ack_cm_event(ev);
			rdma_destroy_id(&c->id);
			return cm_set_errno(err);
		}
	}
	c->id.event = ev;
	*id = &c->id;
	return 0;
}

void cm_ud_fill_param(struct cm_id *p, struct rdma_ud_param *ud)
{
	memset(&ud->ah_attr, 0, sizeof(ud->ah_attr));
	ud->ah_attr.dlid = p->remote.lid;
	ud->ah_attr.port_num = p->id.port_num;
	ud->ah_attr.is_global = 1;
	memcpy(ud->ah_attr.grh.dgid.raw, p->remote.gid, 16);
	ud->ah_attr.grh.sgid_index = 0;
	ud->ah_attr.grh.hop_limit = 64;
	ud->ah_attr.grh.traffic_class = p->tos;
	ud->qp_num = p->remote.qpn;
	ud->qkey = p->remote.qkey;
}

void cm_handle_ud_rep(struct cm_id *p, const struct cmw_rep *rep)
{
	uint32_t status = ntohl(rep->status);
	size_t len = rep->conn.pdata_len > CMW_REP_PDATA_UD ? CMW_REP_PDATA_UD :
		     rep->conn.pdata_len;
	struct cm_event *e;

	cm_timer_clear(p);
	cm_sock_close(p);
	if (status != CMW_SIDR_SUCCESS) {
		cm_id_set_state(p, CM_DISCONNECTED);
		e = cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE, (int)status);
		if (e)
			cm_event_set_pdata(e, true, rep->pdata, len, CMW_REP_PDATA_UD);
	} else {
		cm_ep_decode(&p->remote, &rep->ep);
		p->remote_ece.vendor_id = ntohl(rep->ece.vendor_id);
		p->remote_ece.options = ntohl(rep->ece.options);
		cm_route_fill(p);
		cm_id_set_state(p, CM_ESTABLISHED);
		e = cm_event_alloc(p, RDMA_CM_EVENT_ESTABLISHED, 0);
		if (e) {
			cm_event_set_pdata(e, true, rep->pdata, len, CMW_REP_PDATA_UD);
			cm_ud_fill_param(p, &e->ev.param.ud);
		}
	}
	if (e)
		cm_event_queue(e, sv_container_of(p->id.channel, struct cm_channel, ch));
}
