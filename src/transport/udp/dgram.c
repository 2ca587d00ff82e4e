/* UD datagrams: one frame per UDP datagram, from the sender's port group. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/socket.h>

#include "engine/engine.h"
#include "transport/transport.h"

int sv_dgram_send(struct sv_node *node, uint32_t src_qpn, const struct sockaddr_in *dst,
		  const struct iovec *iov, int n)
{
	struct sv_pgroup *g = NULL;
	struct msghdr mh = { .msg_name = (void *)dst, .msg_namelen = sizeof(*dst),
			     .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	pthread_mutex_lock(&node->lock);
	for (uint32_t i = 0; i < node->ngroups; i++)
		if (node->groups[i]->port == (src_qpn >> 8))
			g = node->groups[i];
	pthread_mutex_unlock(&node->lock);
	if (!g)
		return -EINVAL;
	/* UD is unreliable: a full socket buffer drops the datagram, like a fabric. */
	if (sendmsg(g->udp_h.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN && errno != ECONNREFUSED)
		return -errno;
	return 0;
}
