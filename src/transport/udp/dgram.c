/* UD datagrams: one frame per UDP datagram (multicast: per unix datagram),
 * always from the sending QP's port group, whose sockets prove its port. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/fault/fault.h"
#include "transport/shm/dgring.h"
#include "transport/transport.h"
#include "transport/unix/mcast.h"
#include "util/sys.h"

static bool is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

struct dgram_to {
	struct sv_node *node;
	struct sv_pgroup *g;
	struct sockaddr_in to;
};

static int dgram_send_now(void *ctx, const struct iovec *iov, int n)
{
	struct dgram_to *d = ctx;
	struct msghdr mh = { .msg_name = &d->to, .msg_namelen = sizeof(d->to),
			     .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (d->to.sin_addr.s_addr == d->node->addr.s_addr &&
	    sv_dgring_send(d->node, d->g->port, ntohs(d->to.sin_port), iov, n))
		return 0;
	/* UD is unreliable: a full socket buffer drops the datagram, like a fabric. */
	if (sv_sendmsg(d->g->udp_h.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN && errno != ECONNREFUSED)
		return -errno;
	return 0;
}

int sv_dgram_send(struct sv_node *node, uint32_t src_qpn, const struct sockaddr_in *dst,
		  const struct iovec *iov, int n)
{
	struct dgram_to d = { node, sv_node_group_of(node, src_qpn), *dst };

	if (!d.g)
		return -EINVAL;
	/* Same host resolves to loopback, but UDP sockets hold only the device address. */
	if (is_loopback(d.to.sin_addr))
		d.to.sin_addr = node->addr;
	if (__builtin_expect(node->fault_dgram != NULL, 0))
		return sv_fault_dgram_send(node, iov, n, dgram_send_now, &d, sizeof(d));
	return dgram_send_now(&d, iov, n);
}

int sv_dgram_send_mcast(struct sv_node *node, uint32_t src_qpn, const union ibv_gid *mgid,
			const struct iovec *iov, int n)
{
	struct sv_pgroup *g = sv_node_group_of(node, src_qpn);

	return g ? sv_mcast_send(g->mcast_fd, mgid, iov, n) : -EINVAL;
}

bool sv_dgram_source_ok(const struct sv_node *node, const struct sockaddr_in *from,
			const struct sv_wire_hdr *h)
{
	/* The port is the sender's group (only it holds A:P), the address the one
	 * its frame claims: a UDP source cannot be forged without CAP_NET_RAW. */
	if ((h->src_qpn >> 8) != ntohs(from->sin_port) || h->data1 != from->sin_addr.s_addr)
		return false;
	/* Every loopback address names this host (node.c), but a stranger may bind
	 * 127.0.0.2:P while P's group holds only A:P: loopback only when A is. */
	return !is_loopback(from->sin_addr) || from->sin_addr.s_addr == node->addr.s_addr;
}

bool sv_dgram_frame_ok(const uint8_t *buf, ssize_t r, struct sv_wire_hdr *hdr)
{
	if (r < (ssize_t)sizeof(*hdr) || (size_t)r > SV_UDP_BUF)
		return false;                       /* runt or oversized */
	memcpy(hdr, buf, sizeof(*hdr));
	if (__builtin_expect(hdr->flags & SV_WF_CRC, 0)) {     /* a sender's faults */
		if (!sv_fault_dgram_check(buf, r))
			return false;
		hdr->flags &= (uint8_t)~SV_WF_CRC;
		r -= 4;
	}
	return sv_wire_decode(hdr) && hdr->len == (size_t)r - sizeof(*hdr) &&
	       (hdr->opcode == SV_OP_SEND || hdr->opcode == SV_OP_SEND_IMM);
}

void sv_dgram_drain(struct sv_node *node, int fd, uint8_t *buf)
{
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		struct sv_wire_hdr hdr;
		ssize_t r = sv_recvfrom(fd, buf, SV_UDP_BUF, MSG_DONTWAIT | MSG_TRUNC,
				     (struct sockaddr *)&from, &fl);

		if (r < 0)
			return;
		if (!sv_dgram_frame_ok(buf, r, &hdr) || !sv_dgram_source_ok(node, &from, &hdr))
			continue;                   /* malformed, or a forged source: drop */
		node->up->dgram(node, &from, &hdr, buf + sizeof(hdr));
	}
}

void sv_dgram_on_ready(struct sv_handler *h, uint32_t events)
{
	struct sv_node *node = sv_container_of(h, struct sv_pgroup, udp_h)->node;

	sv_dgram_drain(node, h->fd, node->udp_buf);
}
