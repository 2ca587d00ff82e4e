// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: rdma_getaddrinfo / rdma_freeaddrinfo over getaddrinfo(3).
 * Errors are getaddrinfo's EAI_* codes, as the man page says.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cm/cm.h"

static struct sockaddr *dup_sa(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c)
		memcpy(c, sa, len);
	return c;
}

static int fill_one(struct rdma_addrinfo *r, const struct rdma_addrinfo *hints,
		    const struct addrinfo *ai, bool passive)
{
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space :
			   (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	if (passive) {
		r->ai_src_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
		if (!r->ai_src_addr)
			return EAI_MEMORY;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = dup_sa(ai->ai_addr, ai->ai_addrlen);
		if (!r->ai_dst_addr)
			return EAI_MEMORY;
		r->ai_dst_len = ai->ai_addrlen;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = dup_sa(hints->ai_src_addr, hints->ai_src_len);
			if (!r->ai_src_addr)
				return EAI_MEMORY;
			r->ai_src_len = hints->ai_src_len;
		}
	}
	if (ai->ai_canonname) {
		r->ai_dst_canonname = strdup(ai->ai_canonname);
		if (!r->ai_dst_canonname)
			return EAI_MEMORY;
	}
	return 0;
}

CM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct addrinfo h, *ai = NULL, *a;
	struct rdma_addrinfo *head = NULL, **tail = &head;
	bool passive;
	int ret;

	if (!res) {
		errno = EINVAL;
		return EAI_SYSTEM;
	}
	*res = NULL;
	if (!node && !service && !hints)
		return EAI_NONAME;
	passive = hints && (hints->ai_flags & RAI_PASSIVE);
	if (hints && (hints->ai_flags & ~(RAI_PASSIVE | RAI_NUMERICHOST |
					   RAI_NOROUTE | RAI_FAMILY)))
		return EAI_BADFLAGS;
	if (hints && hints->ai_qp_type == IBV_QPT_UD &&
	    (hints->ai_port_space == RDMA_PS_TCP || hints->ai_port_space == RDMA_PS_IB))
		return EAI_SOCKTYPE;
	if (hints && hints->ai_qp_type == IBV_QPT_RC &&
	    (hints->ai_port_space == RDMA_PS_UDP || hints->ai_port_space == RDMA_PS_IPOIB))
		return EAI_SOCKTYPE;

	if (!node && !service) {
		/* Addresses only from the hints. */
		struct rdma_addrinfo *r = calloc(1, sizeof(*r));

		if (!r)
			return EAI_MEMORY;
		r->ai_flags = hints->ai_flags;
		r->ai_qp_type = hints->ai_qp_type ? hints->ai_qp_type : IBV_QPT_RC;
		r->ai_port_space = hints->ai_port_space ? hints->ai_port_space :
				   (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
		r->ai_family = hints->ai_family;
		if (hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = dup_sa(hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
			r->ai_family = hints->ai_src_addr->sa_family;
		}
		if (hints->ai_dst_addr && hints->ai_dst_len) {
			r->ai_dst_addr = dup_sa(hints->ai_dst_addr, hints->ai_dst_len);
			r->ai_dst_len = hints->ai_dst_len;
			r->ai_family = hints->ai_dst_addr->sa_family;
		}
		if (!r->ai_src_addr && !r->ai_dst_addr) {
			free(r);
			return EAI_NONAME;
		}
		*res = r;
		return 0;
	}

	memset(&h, 0, sizeof(h));
	h.ai_socktype = SOCK_STREAM;
	h.ai_family = AF_UNSPEC;
	if (hints) {
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if ((hints->ai_flags & RAI_FAMILY) || hints->ai_family)
			h.ai_family = hints->ai_family;
		if (h.ai_family != AF_UNSPEC && h.ai_family != AF_INET &&
		    h.ai_family != AF_INET6)
			return EAI_FAMILY;
	}
	ret = getaddrinfo(node, service, &h, &ai);
	if (ret)
		return ret;
	for (a = ai; a; a = a->ai_next) {
		struct rdma_addrinfo *r;

		if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
			continue;
		r = calloc(1, sizeof(*r));
		if (!r) {
			ret = EAI_MEMORY;
			break;
		}
		*tail = r;
		tail = &r->ai_next;
		ret = fill_one(r, hints, a, passive);
		if (ret)
			break;
	}
	freeaddrinfo(ai);
	if (!ret && !head)
		ret = EAI_FAMILY;
	if (ret) {
		rdma_freeaddrinfo(head);
		return ret;
	}
	*res = head;
	return 0;
}

CM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
