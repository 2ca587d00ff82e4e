/* UD datagrams: one frame per UDP datagram (multicast: per unix datagram),
 * always from the sending QP's port group, whose sockets prove its port. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/shm/dgring.h"
#include "transport/transport.h"
#include "transport/unix/mcast.h"

static bool is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

int sv_dgram_send(struct sv_node *node, uint32_t src_qpn, const struct sockaddr_in *dst,
		  const struct iovec *iov, int n)
{
	struct sv_pgroup *g = sv_node_group_of(node, src_qpn);
	struct sockaddr_in to = *dst;
	struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof(to),
			     .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (!g)
		return -EINVAL;
	/* Same host resolves to loopback, but UDP sockets hold only the device address. */
	if (is_loopback(to.sin_addr))
		to.sin_addr = node->addr;
	if (to.sin_addr.s_addr == node->addr.s_addr &&
	    sv_dgring_send(node, g->port, ntohs(to.sin_port), iov, n))
		return 0;
	/* UD is unreliable: a full socket buffer drops the datagram, like a fabric. */
	if (sendmsg(g->udp_h.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN && errno != ECONNREFUSED)
		return -errno;
	return 0;
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
	return sv_wire_decode(hdr) && hdr->len == (size_t)r - sizeof(*hdr) &&
	       (hdr->opcode == SV_OP_SEND || hdr->opcode == SV_OP_SEND_IMM);
}

void sv_dgram_drain(struct sv_node *node, int fd, uint8_t *buf)
{
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		struct sv_wire_hdr hdr;
		ssize_t r = recvfrom(fd, buf, SV_UDP_BUF, MSG_DONTWAIT | MSG_TRUNC,
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
