// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: QPs, SRQs and CQs owned through an rdma_cm_id, and
 * the QP attributes for each state (rdma_init_qp_attr).
 *
 * CQs the CM creates get the id as cq_context and their own completion
 * channel, exactly what rdma_get_send_comp/rdma_get_recv_comp in
 * <rdma/rdma_verbs.h> expect (they assert context == id).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rdma/rdma_verbs.h>
#include "cm/cm.h"

uint32_t cm_random_psn(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)rand();
	return v & 0xffffff;
}

/* Known once the peer's REQ or REP has arrived. */
static bool has_remote(struct cm_id *p)
{
	return p->remote.lid || p->remote.qpn;
}

int cm_qp_attr(struct cm_id *p, struct ibv_qp_attr *attr, int *mask)
{
	enum ibv_qp_state want = attr->qp_state;
	bool ud = p->id.qp_type == IBV_QPT_UD || cm_ps_is_ud(p->id.ps);
	enum ibv_mtu mtu;

	if (!p->dev)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		attr->pkey_index = 0;
		attr->port_num = p->dev->port;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (ud) {
			attr->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (p->id.qp_type != IBV_QPT_UC)
				attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
							 IBV_ACCESS_REMOTE_ATOMIC;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (ud)
			return 0;
		if (!has_remote(p))
			return EINVAL;
		mtu = p->remote.mtu && p->remote.mtu < p->dev->mtu ?
		      (enum ibv_mtu)p->remote.mtu : p->dev->mtu;
		attr->path_mtu = mtu;
		attr->dest_qp_num = p->remote.qpn;
		attr->rq_psn = p->remote.psn;
		attr->ah_attr.dlid = p->remote.lid;
		attr->ah_attr.port_num = p->dev->port;
		attr->ah_attr.is_global = 1;
		memcpy(attr->ah_attr.grh.dgid.raw, p->remote.gid, 16);
		attr->ah_attr.grh.sgid_index = 0;
		attr->ah_attr.grh.hop_limit = 64;
		attr->ah_attr.grh.traffic_class = p->tos;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		/* responder attributes: not for UC nor an XRC initiator */
		if (p->id.qp_type == IBV_QPT_RC || p->id.qp_type == IBV_QPT_XRC_RECV) {
			attr->max_dest_rd_atomic = p->resp_res;
			attr->min_rnr_timer = 0;
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		return 0;
	case IBV_QPS_RTS:
		attr->sq_psn = p->psn;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (ud)
			return 0;
		if (!has_remote(p))
			return EINVAL;
		attr->timeout = p->ack_timeout_set ? p->ack_timeout : 18;
		if (p->id.qp_type == IBV_QPT_XRC_RECV)
			*mask |= IBV_QP_TIMEOUT;        /* a target's requester sends nothing */
		if (p->id.qp_type == IBV_QPT_RC || p->id.qp_type == IBV_QPT_XRC_SEND) {
			attr->retry_cnt = p->retry_count;
			attr->rnr_retry = p->rnr_retry_count;
			attr->max_rd_atomic = p->init_depth;
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
		}
		return 0;
	default:
		return EINVAL;
	}
}

int cm_qp_modify(struct cm_id *p, struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr attr;
	int mask = 0, err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = s;
	err = cm_qp_attr(p, &attr, &mask);
	if (err)
		return err;
	err = ibv_modify_qp(qp, &attr, mask);
	return err > 0 ? err : (err ? EINVAL : 0);
}

/* rdma_connect/rdma_accept: private data within `max` bytes, and the QPN
 * to announce: the id's QP, else the one the caller names in param (a
 * user-managed QP), else none at all if `none_ok` (UD without a QP). */
int cm_conn_param_qpn(struct cm_id *p, const struct rdma_conn_param *param, size_t max,
		      bool none_ok, uint32_t *qpn)
{
	if (param && param->private_data_len && !param->private_data)
		return EINVAL;
	if (param && param->private_data_len > max)
		return EINVAL;
	if (p->id.qp) {
		*qpn = p->id.qp->qp_num;
		p->srq = p->id.qp->srq != NULL;
	} else if (param) {
		*qpn = param->qp_num;
		p->srq = param->srq != 0;
	} else if (none_ok) {
		*qpn = 0;
	} else {
		return EINVAL;
	}
	return 0;
}

void cm_qp_to_error(struct cm_id *p)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };

	if (p->id.qp)
		ibv_modify_qp(p->id.qp, &attr, IBV_QP_STATE);
}

CM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				int *qp_attr_mask)
{
	int err;

	if (!id || !qp_attr || !qp_attr_mask)
		return cm_set_errno(EINVAL);
	cm_lock();
	err = cm_qp_attr(cm_id_of(id), qp_attr, qp_attr_mask);
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

static struct ibv_cq *make_cq(struct cm_id *p, int size,
			      struct ibv_comp_channel **chan)
{
	struct ibv_cq *cq;

	*chan = ibv_create_comp_channel(p->id.verbs);
	if (!*chan)
		return NULL;
	cq = ibv_create_cq(p->id.verbs, size, &p->id, *chan, 0);
	if (!cq) {
		int err = errno;

		ibv_destroy_comp_channel(*chan);
		*chan = NULL;
		errno = err;
	}
	return cq;
}

/* CQs the CM made are freed once neither QP nor SRQ uses them. */
static void destroy_own_cqs(struct cm_id *p)
{
	struct rdma_cm_id *id = &p->id;

	if (!p->own_cqs || id->qp || id->srq)
		return;
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->recv_cq_channel)
			ibv_destroy_comp_channel(id->recv_cq_channel);
	}
	if (id->send_cq && id->send_cq != id->recv_cq) {
		ibv_destroy_cq(id->send_cq);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
	}
	id->recv_cq = id->send_cq = NULL;
	id->recv_cq_channel = id->send_cq_channel = NULL;
	p->own_cqs = false;
}

static int create_cqs(struct cm_id *p, uint32_t send_size, uint32_t recv_size)
{
	struct rdma_cm_id *id = &p->id;

	if (recv_size && !id->recv_cq) {
		id->recv_cq = make_cq(p, (int)recv_size, &id->recv_cq_channel);
		if (!id->recv_cq)
			return errno ? errno : ENOMEM;
		p->own_cqs = true;
	}
	if (send_size && !id->send_cq) {
		id->send_cq = make_cq(p, (int)send_size, &id->send_cq_channel);
		if (!id->send_cq)
			return errno ? errno : ENOMEM;
		p->own_cqs = true;
	}
	return 0;
}

/* Move a new QP to where rdma_create_qp promises: UD ready to send,
 * connected QPs in INIT (ready to post receives). */
static int init_new_qp(struct cm_id *p, struct ibv_qp *qp)
{
	int err = cm_qp_modify(p, qp, IBV_QPS_INIT);

	if (err || qp->qp_type != IBV_QPT_UD)
		return err;
	err = cm_qp_modify(p, qp, IBV_QPS_RTR);
	if (!err)
		err = cm_qp_modify(p, qp, IBV_QPS_RTS);
	return err;
}

CM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				struct ibv_qp_init_attr_ex *attr)
{
	struct cm_id *p;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	bool tgt;
	int err;

	if (!id || !attr)
		return cm_set_errno(EINVAL);
	if (!attr->qp_type)
		attr->qp_type = id->qp_type;
	p = cm_id_of(id);
	cm_lock();
	err = EINVAL;
	if (id->qp || !id->verbs)
		goto out;
	pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : NULL;
	if (!pd)
		pd = id->pd ? id->pd : cm_device_default_pd(p->dev);
	if (!pd || pd->context != id->verbs)
		goto out;
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		goto out;
	/* an XRC target sends nothing; its receives are its SRQ's, on the
	 * id's receive CQ (rdma_create_srq_ex) */
	tgt = attr->qp_type == IBV_QPT_XRC_RECV;
	if (tgt) {
		attr->xrcd = cm_device_xrcd(p->dev);
		if (!attr->xrcd)
			goto out;
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	err = create_cqs(p, attr->send_cq || tgt ? 0 : attr->cap.max_send_wr,
			 attr->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (err)
		goto fail_cqs;
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;

	if ((attr->comp_mask & ~IBV_QP_INIT_ATTR_PD) == 0) {
		struct ibv_qp_init_attr a = {
			.qp_context = attr->qp_context,
			.send_cq = attr->send_cq,
			.recv_cq = attr->recv_cq,
			.srq = attr->srq,
			.cap = attr->cap,
			.qp_type = attr->qp_type,
			.sq_sig_all = attr->sq_sig_all,
		};

		qp = ibv_create_qp(pd, &a);
		if (qp)
			attr->cap = a.cap;
	} else {
		attr->pd = pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		qp = ibv_create_qp_ex(id->verbs, attr);
	}
	if (!qp) {
		err = errno ? errno : ENOMEM;
		goto fail_cqs;
	}
	err = init_new_qp(p, qp);
	if (err) {
		ibv_destroy_qp(qp);
		goto fail_cqs;
	}
	id->qp = qp;
	id->pd = pd;
	id->qp_type = qp->qp_type;
	cm_unlock();
	return 0;
fail_cqs:
	destroy_own_cqs(p);
out:
	cm_unlock();
	return cm_set_errno(err);
}

CM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ex;
	int ret;

	if (!id || !qp_init_attr)
		return cm_set_errno(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.qp_context = qp_init_attr->qp_context;
	ex.send_cq = qp_init_attr->send_cq;
	ex.recv_cq = qp_init_attr->recv_cq;
	ex.srq = qp_init_attr->srq;
	ex.cap = qp_init_attr->cap;
	ex.qp_type = qp_init_attr->qp_type;
	ex.sq_sig_all = qp_init_attr->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	ret = rdma_create_qp_ex(id, &ex);
	if (!ret) {
		qp_init_attr->send_cq = ex.send_cq;
		qp_init_attr->recv_cq = ex.recv_cq;
		qp_init_attr->srq = ex.srq;
		qp_init_attr->cap = ex.cap;
	}
	return ret;
}

CM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct cm_id *p;
	struct sv_list *pos, *tmp;

	if (!id || !id->qp)
		return;
	p = cm_id_of(id);
	cm_lock();
	sv_list_for_each_safe(pos, tmp, &p->mcasts) {
		struct cm_mcast *m = sv_container_of(pos, struct cm_mcast, node);

		if (m->attached)
			ibv_detach_mcast(id->qp, &m->mgid, m->mlid);
		m->attached = false;
	}
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_own_cqs(p);
	if (!id->srq)	/* the QP's PD may be the user's, about to go */
		id->pd = cm_device_default_pd(p->dev);
	cm_unlock();
}

CM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct cm_id *p;
	struct ibv_pd *pd;
	struct ibv_srq *srq;
	bool xrc;
	int err = EINVAL;

	if (!id || !attr)
		return cm_set_errno(EINVAL);
	xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type != IBV_SRQT_BASIC && !xrc)
		return cm_set_errno(EOPNOTSUPP);	/* tag matching */
	p = cm_id_of(id);
	cm_lock();
	if (id->srq || !id->verbs)
		goto out;
	/* an XRC SRQ: the device's domain, and the id's receive CQ */
	if (xrc && !(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD)) {
		attr->xrcd = cm_device_xrcd(p->dev);
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD;
	}
	if (xrc && !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ)) {
		err = create_cqs(p, 0, attr->attr.max_wr);
		if (err)
			goto out;
		attr->cq = id->recv_cq;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
	}
	pd = (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : NULL;
	if (!pd)
		pd = id->pd ? id->pd : cm_device_default_pd(p->dev);
	if (!pd || pd->context != id->verbs)
		goto out;
	if ((attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE)) == 0) {
		struct ibv_srq_init_attr a = {
			.srq_context = attr->srq_context,
			.attr = attr->attr,
		};

		srq = ibv_create_srq(pd, &a);
		if (srq)
			attr->attr = a.attr;
	} else {
		attr->pd = pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
		srq = ibv_create_srq_ex(id->verbs, attr);
	}
	if (!srq) {
		err = errno ? errno : ENOMEM;
		goto out;
	}
	id->srq = srq;
	id->pd = pd;
	err = 0;
out:
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

CM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex;
	int ret;

	if (!id || !attr)
		return cm_set_errno(EINVAL);
	memset(&ex, 0, sizeof(ex));
	ex.srq_context = attr->srq_context;
	ex.attr = attr->attr;
	ex.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
	/* an XRC target's id gets an XRC SRQ, as rdma-core's librdmacm does */
	ex.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ex.pd = pd;
	ret = rdma_create_srq_ex(id, &ex);
	if (!ret)
		attr->attr = ex.attr;
	return ret;
}

CM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	cm_lock();
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_own_cqs(cm_id_of(id));
	if (!id->qp)
		id->pd = cm_device_default_pd(cm_id_of(id)->dev);
	cm_unlock();
}
