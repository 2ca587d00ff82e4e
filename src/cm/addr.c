// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: binding, address and route resolution.
 *
 * Every id that has an address owns a real TCP socket bound to it: the
 * listener's socket is what the peer connects to, and the active side's
 * socket (bound at resolve time, ephemeral port) is the one it connects
 * from, so rdma_get_src_port/rdma_get_dst_port are the TCP ports.
 * Address resolution is local: a route lookup (a connect() on a UDP socket,
 * which sends nothing) gives the source address or the error; it therefore
 * completes at once and the timeout is only an upper bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "util/sys.h"
#include "cm/cm.h"

socklen_t cm_sa_len(const struct sockaddr *sa)
{
	if (!sa)
		return 0;
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	return 0;
}

uint16_t cm_sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

void cm_sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

bool cm_sa_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

bool cm_sa_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

bool cm_sa_is_multicast(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return IN_MULTICAST(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return false;
}

void cm_gid_from_sa(union ibv_gid *gid, const struct sockaddr *sa)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	}
}

/* As in rdma-core, an id that has a device has a PD: the device's default
 * one until a QP brings its own (pyverbs builds QPs and AHs on id->pd). */
void cm_id_attach_device(struct cm_id *p, struct cm_device *dev)
{
	p->dev = dev;
	cm_device_watch(dev);
	p->id.verbs = dev->ctx;
	if (!p->id.pd || p->id.pd->context != dev->ctx)
		p->id.pd = cm_device_default_pd(dev);
	p->id.port_num = dev->port;
	p->id.route.addr.addr.ibaddr.sgid = dev->gid;
	p->id.route.addr.addr.ibaddr.pkey = dev->pkey;
}

/* Is this process already using addr:port for another CM id?  Linux lets two
 * SO_REUSEADDR sockets bind one port while neither listens; rdma_cm does not. */
static bool port_taken(struct cm_id *self, const struct sockaddr *sa)
{
	struct sv_list *pos, *tmp;
	uint16_t port = cm_sa_port(sa);

	if (!port)
		return false;
	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);
		const struct sockaddr *o = &p->id.route.addr.src_addr;

		if (p == self || p->sock < 0 || p->listen_serial)
			continue;
		if (p->state != CM_ADDR_BOUND && p->state != CM_LISTEN &&
		    p->state != CM_ADDR_RESOLVED && p->state != CM_ROUTE_RESOLVED)
			continue;
		if (o->sa_family != sa->sa_family || cm_sa_port(o) != port)
			continue;
		if (cm_sa_is_any(o) || cm_sa_is_any(sa) ||
		    !memcmp(o, sa, cm_sa_len(sa)))
			return true;
	}
	return false;
}

int cm_bind_socket(struct cm_id *p, const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	socklen_t len = cm_sa_len(sa);
	int fd, one = 1;

	if (!len)
		return EAFNOSUPPORT;
	if (port_taken(p, sa))
		return EADDRINUSE;
	fd = sv_socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	/* Without SO_REUSEADDR a restarted server could not bind its port
	 * while earlier connections sit in TCP TIME_WAIT. */
	if (p->reuseaddr)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6 && p->afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &p->afonly, sizeof(int));
	if (bind(fd, sa, len)) {
		int err = errno;

		close(fd);
		return err;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
		int err = errno;

		close(fd);
		return err;
	}
	cm_sock_close(p);
	p->sock = fd;
	memset(&p->id.route.addr.src_storage, 0, sizeof(p->id.route.addr.src_storage));
	memcpy(&p->id.route.addr.src_storage, &ss, len);
	return 0;
}

CM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct cm_id *p;
	struct cm_device *dev = NULL;
	int err;

	if (!id || !addr)
		return cm_set_errno(EINVAL);
	if (!cm_sa_len(addr))
		return cm_set_errno(addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL);
	p = cm_id_of(id);
	cm_lock();
	if (p->state != CM_IDLE) {
		cm_unlock();
		return cm_set_errno(EINVAL);
	}
	/* A loopback address belongs to no RDMA device: the kernel binds it
	 * and leaves id->verbs NULL, and libfabric's verbs provider relies on
	 * that to advertise the device's own address instead of 127.0.0.1. */
	if (!cm_sa_is_any(addr) && !cm_sa_is_loopback(addr)) {
		dev = cm_device_for_addr(addr);
		if (!dev) {
			cm_unlock();
			return cm_set_errno(ENODEV);
		}
	}
	err = cm_bind_socket(p, addr);
	if (!err) {
		if (dev)
			cm_id_attach_device(p, dev);
		cm_id_set_state(p, CM_ADDR_BOUND);
	}
	cm_unlock();
	return err ? cm_set_errno(err) : 0;
}

/* Route lookup without sending anything: which local address would the
 * kernel use to reach dst (from src, if given)? */
static int route_lookup(const struct sockaddr *src, const struct sockaddr *dst,
			struct sockaddr_storage *out)
{
	struct sockaddr_storage d;
	socklen_t len;
	int fd, err = 0;

	fd = sv_socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (src && !cm_sa_is_any(src)) {
		struct sockaddr_storage s;

		memcpy(&s, src, cm_sa_len(src));
		cm_sa_set_port((struct sockaddr *)&s, 0);
		if (bind(fd, (struct sockaddr *)&s, cm_sa_len(src))) {
			err = errno;
			goto out;
		}
	}
	memcpy(&d, dst, cm_sa_len(dst));
	if (!cm_sa_port((struct sockaddr *)&d))
		cm_sa_set_port((struct sockaddr *)&d, 9);	/* any port will do */
	if (connect(fd, (struct sockaddr *)&d, cm_sa_len(dst))) {
		err = errno;
		goto out;
	}
	len = sizeof(*out);
	if (getsockname(fd, (struct sockaddr *)out, &len))
		err = errno;
out:
	close(fd);
	return err;
}

static bool sa_is_local(const struct sockaddr *sa)
{
	struct sockaddr_storage s;
	int fd;
	bool ok;

	if (cm_sa_is_loopback(sa) || cm_sa_is_any(sa))
		return true;
	fd = sv_socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	memcpy(&s, sa, cm_sa_len(sa));
	cm_sa_set_port((struct sockaddr *)&s, 0);
	ok = bind(fd, (struct sockaddr *)&s, cm_sa_len(sa)) == 0;
	close(fd);
	return ok;
}

void cm_route_fill(struct cm_id *p)
{
	struct rdma_route *r = &p->id.route;
	const struct sockaddr *dst = &r->addr.dst_addr;

	if (p->remote.lid || p->remote.qpn) {
		memcpy(r->addr.addr.ibaddr.dgid.raw, p->remote.gid, 16);
	} else if (p->dev && (sa_is_local(dst))) {
		r->addr.addr.ibaddr.dgid = p->dev->gid;
	} else {
		cm_gid_from_sa(&r->addr.addr.ibaddr.dgid, dst);
	}
	memset(&p->path, 0, sizeof(p->path));
	p->path.dgid = r->addr.addr.ibaddr.dgid;
	p->path.sgid = r->addr.addr.ibaddr.sgid;
	if (p->dev) {
		p->path.slid = htons(p->dev->lid);
		p->path.dlid = p->remote.lid ? htons(p->remote.lid) :
			       (sa_is_local(dst) ? htons(p->dev->lid) : 0);
		p->path.mtu = p->dev->mtu;
	}
	p->path.raw_traffic = 0;
	p->path.reversible = 1;
	p->path.numb_path = 1;
	p->path.pkey = r->addr.addr.ibaddr.pkey;
	p->path.sl = 0;
	p->path.mtu_selector = 2;	/* exactly */
	p->path.rate_selector = 2;
	p->path.rate = 3;		/* 10 Gb/s */
	p->path.packet_life_time_selector = 2;
	p->path.packet_life_time = 14;
	p->path.hop_limit = 64;
	p->path.traffic_class = p->tos;
	r->path_rec = &p->path;
	r->num_paths = 1;
}

CM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				struct sockaddr *dst_addr, int timeout_ms)
{
	struct cm_id *p;
	struct sockaddr_storage local;
	struct sockaddr *bound;
	struct cm_device *dev;
	int err = 0;

	(void)timeout_ms;
	if (!id || !dst_addr)
		return cm_set_errno(EINVAL);
	if (!cm_sa_len(dst_addr))
		return cm_set_errno(dst_addr->sa_family == AF_IB ? EAFNOSUPPORT : EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);
	cm_lock();
	if (p->state == CM_IDLE && src_addr && cm_sa_len(src_addr)) {
		struct cm_device *sdev = NULL;

		if (src_addr->sa_family != dst_addr->sa_family) {
			cm_unlock();
			return cm_set_errno(EINVAL);
		}
		if (!cm_sa_is_any(src_addr) && !(sdev = cm_device_for_addr(src_addr))) {
			cm_unlock();
			return cm_set_errno(ENODEV);
		}
		err = cm_bind_socket(p, src_addr);
		if (err) {
			cm_unlock();
			return cm_set_errno(err);
		}
		if (sdev)
			cm_id_attach_device(p, sdev);
		cm_id_set_state(p, CM_ADDR_BOUND);
	}
	if (p->state != CM_IDLE && p->state != CM_ADDR_BOUND &&
	    p->state != CM_ADDR_RESOLVED) {
		cm_unlock();
		return cm_set_errno(EINVAL);
	}
	bound = p->state == CM_IDLE ? NULL : &id->route.addr.src_addr;
	if (bound && bound->sa_family != dst_addr->sa_family) {
		cm_unlock();
		return cm_set_errno(EINVAL);
	}
	memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
	memcpy(&id->route.addr.dst_storage, dst_addr, cm_sa_len(dst_addr));

	memset(&local, 0, sizeof(local));
	if (cm_sa_is_multicast(dst_addr)) {
		/* A group is reached through the bound address, or through
		 * whatever the routing table says, or loopback. */
		if (bound && !cm_sa_is_any(bound)) {
			memcpy(&local, bound, cm_sa_len(bound));
		} else if (route_lookup(NULL, dst_addr, &local)) {
			memset(&local, 0, sizeof(local));
			local.ss_family = dst_addr->sa_family;
			if (local.ss_family == AF_INET)
				((struct sockaddr_in *)&local)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			else
				((struct sockaddr_in6 *)&local)->sin6_addr = in6addr_loopback;
		}
	} else {
		err = route_lookup(bound, dst_addr, &local);
	}
	if (!err) {
		dev = cm_device_for_addr((struct sockaddr *)&local);
		if (!dev)
			err = ENODEV;
	}
	if (!err && p->state == CM_IDLE) {
		cm_sa_set_port((struct sockaddr *)&local, 0);
		err = cm_bind_socket(p, (struct sockaddr *)&local);
		if (!err)
			cm_id_set_state(p, CM_ADDR_BOUND);
	}
	if (err) {
		cm_event_post(p, RDMA_CM_EVENT_ADDR_ERROR, -err);
	} else {
		uint16_t port = cm_sa_port(&id->route.addr.src_addr);

		/* A wildcard bind still reports the address actually used. */
		memcpy(&id->route.addr.src_storage, &local, cm_sa_len((struct sockaddr *)&local));
		cm_sa_set_port(&id->route.addr.src_addr, port);
		cm_id_attach_device(p, dev);
		cm_route_fill(p);
		id->route.path_rec = NULL;
		id->route.num_paths = 0;
		cm_id_set_state(p, CM_ADDR_RESOLVED);
		cm_event_post(p, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	}
	cm_unlock();
	return p->sync ? cm_sync_wait(p) : 0;
}

CM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cm_id *p;

	(void)timeout_ms;
	if (!id)
		return cm_set_errno(EINVAL);
	p = cm_id_of(id);
	cm_sync_ack(p);
	cm_lock();
	if (p->state != CM_ADDR_RESOLVED && p->state != CM_ROUTE_RESOLVED) {
		cm_unlock();
		return cm_set_errno(EINVAL);
	}
	cm_route_fill(p);
	cm_id_set_state(p, CM_ROUTE_RESOLVED);
	cm_event_post(p, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	cm_unlock();
	return p->sync ? cm_sync_wait(p) : 0;
}
