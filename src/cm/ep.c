// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: rdma_create_ep / rdma_destroy_ep, the one-call
 * endpoint built from an rdma_getaddrinfo result.  The id is synchronous.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>
#include "cm/cm.h"

CM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct cm_id *p;
	enum rdma_port_space ps;
	int err;

	if (!id || !res)
		return cm_set_errno(EINVAL);
	ps = res->ai_port_space ? (enum rdma_port_space)res->ai_port_space :
	     (res->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	if (rdma_create_id(NULL, &cm_id, NULL, ps))
		return -1;
	p = cm_id_of(cm_id);
	if (res->ai_qp_type)
		cm_id->qp_type = (enum ibv_qp_type)res->ai_qp_type;

	if (res->ai_flags & RAI_PASSIVE) {
		if (!res->ai_src_addr || rdma_bind_addr(cm_id, res->ai_src_addr))
			goto fail;
		if (qp_init_attr) {
			p->ep_qp_attr = malloc(sizeof(*p->ep_qp_attr));
			if (!p->ep_qp_attr) {
				errno = ENOMEM;
				goto fail;
			}
			*p->ep_qp_attr = *qp_init_attr;
			if (!p->ep_qp_attr->qp_type)
				p->ep_qp_attr->qp_type = cm_id->qp_type;
			p->ep_pd = pd;
		}
		*id = cm_id;
		return 0;
	}

	if (rdma_resolve_addr(cm_id, res->ai_src_len ? res->ai_src_addr : NULL,
			      res->ai_dst_addr, 2000))
		goto fail;
	if (rdma_resolve_route(cm_id, 2000))
		goto fail;
	if (qp_init_attr) {
		if (!qp_init_attr->qp_type)
			qp_init_attr->qp_type = cm_id->qp_type;
		if (rdma_create_qp(cm_id, pd, qp_init_attr))
			goto fail;
	}
	*id = cm_id;
	return 0;
fail:
	err = errno;
	rdma_destroy_id(cm_id);
	return cm_set_errno(err);
}

CM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
