/*
 * A UD QP's membership of a multicast group on this host: its socket
 * (unix/mcast.c names and binds it), watched by the progress thread, whose
 * copies are checked here (well-formed SENDs from the socket their source
 * QPN names) and handed up for the member's owner.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/transport.h"
#include "transport/unix/mcast.h"
#include "util/sys.h"

struct sv_mcast_member {
	struct sv_handler h;
	struct sv_node *node;
	void *owner;
};

static void on_member(struct sv_handler *h, uint32_t events)
{
	struct sv_mcast_member *m = sv_container_of(h, struct sv_mcast_member, h);
	uint8_t buf[SV_UDP_BUF];

	for (;;) {
		struct sv_wire_hdr hdr;
		struct sockaddr_un from;
		socklen_t fl = sizeof(from);
		ssize_t r = sv_recvfrom(h->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &fl);

		if (r < 0)
			return;
		if (!sv_dgram_frame_ok(buf, r, &hdr) ||
		    !sv_mcast_source_ok((struct sockaddr *)&from, fl, &hdr, m->node->addr))
			continue;                   /* malformed, or a forged source: drop */
		m->node->up->mcast_dgram(m->owner, &hdr, buf + sizeof(hdr), m->node->addr);
	}
}

struct sv_mcast_member *sv_mcast_join(struct sv_node *node, const union ibv_gid *mgid,
				      uint32_t qpn, void *owner)
{
	struct sv_mcast_member *m = calloc(1, sizeof(*m));
	int fd = m ? sv_mcast_bind(mgid, qpn) : -ENOMEM;

	if (fd < 0) {
		free(m);
		errno = -fd;
		return NULL;
	}
	m->h.fd = fd;
	m->h.fn = on_member;
	m->node = node;
	m->owner = owner;
	if (sv_node_watch(node, &m->h, EPOLLIN)) {
		sv_close(fd);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void sv_mcast_leave(struct sv_mcast_member *m)
{
	sv_node_unwatch(m->node, &m->h);
	sv_close(m->h.fd);
	free(m);
}
