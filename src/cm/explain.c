/*
 * Failed connections that name the reason: with SOFTVERBS_DEBUG (or
 * SOFTVERBS_CM_DEBUG) set, every error event an id gets prints one line
 * saying what its status means here (docs/cm.md, "Events"), since a bare
 * "REJECTED 8" or "UNREACHABLE -110" sends users to the IB spec.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cm/cm.h"
#include "cm/wire.h"

int cm_explain_on;

/* "10.0.0.1:7471" (or "[::1]:7471"), "?" for an empty address. */
static const char *sa_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
	return buf;
}

static const char *rejected_why(int status)
{
	switch (status) {
	case CMW_REJ_INVALID_SERVICE_ID:
		return "nobody listens there (no rdma_listen on that port)";
	case CMW_REJ_CONSUMER_DEFINED:
		return "the peer rejected it (rdma_reject, or its QP could not reach RTR/RTS)";
	case CMW_REJ_TIMEOUT:
		return "the peer gave up waiting for us";
	default:
		return "the peer's CM rejected it";
	}
}

static const char *unreachable_why(const struct cm_id *p, int status)
{
	if (cm_ps_is_ud(p->id.ps) && status == CMW_SIDR_UNSUPPORTED)
		return "nobody listens there (no rdma_listen on that port)";
	if (cm_ps_is_ud(p->id.ps) && status > 0)
		return "the peer refused the SIDR request";
	switch (-status) {
	case ETIMEDOUT:
		return "no answer within SOFTVERBS_CM_TIMEOUT_MS";
	case ECONNRESET:
		return "the peer went away during the handshake";
	default:
		return status < 0 ? strerror(-status) : "the peer's CM refused it";
	}
}

static const char *why(const struct cm_id *p, enum rdma_cm_event_type type, int status)
{
	switch (type) {
	case RDMA_CM_EVENT_REJECTED:
		return rejected_why(status);
	case RDMA_CM_EVENT_UNREACHABLE:
		return unreachable_why(p, status);
	case RDMA_CM_EVENT_ADDR_ERROR:
		return status == -ENODEV ? "the address is no softverbs device's (SOFTVERBS_IP, "
					   "or an address of an interface that is up)" :
					   strerror(-status);
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return status < 0 ? strerror(-status) : "the connection could not be set up";
	default:
		return NULL;
	}
}

void cm_explain_event(const struct cm_id *p, enum rdma_cm_event_type type, int status)
{
	char src[64], dst[64];
	const char *w;

	if (!cm_explain_on && !cm_debug)
		return;
	w = why(p, type, status);
	if (!w)
		return;
	fprintf(stderr, "softverbs-cm[%d]: id %llu %s -> %s: %s: %s status %d\n", (int)getpid(),
		(unsigned long long)p->serial,
		sa_str(&p->id.route.addr.src_addr, src, sizeof(src)),
		sa_str(&p->id.route.addr.dst_addr, dst, sizeof(dst)), w, rdma_event_str(type),
		status);
}
