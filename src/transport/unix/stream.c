/* Same-host channels before (or without) their rings: an abstract unix
 * stream socket, which names its peer (SO_PEERCRED) and carries the ring and
 * segment descriptors of the handshake (shm/handshake.c).  A peer of another
 * user keeps talking frames on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>

#include "transport/transport.h"
#include "transport/unix/sock.h"
#include "util/sys.h"

_Static_assert(SV_CONN_MAX_FDS <= SV_UNIX_MAX_FDS, "a handshake's descriptors fit one message");

static ssize_t unix_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	ssize_t r = sv_unix_send(c->h.fd, iov, n, c->tx_fds, c->n_tx_fds);

	if (r > 0)
		sv_conn_drop_tx_fds(c);      /* the message holds its own references now */
	return sv_conn_sock_wrote(c, r);
}

static ssize_t unix_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	return sv_conn_sock_read(c, sv_unix_recv(c->h.fd, iov, n, c->rx_fds, &c->n_rx_fds,
						 SV_CONN_MAX_FDS));
}

const struct sv_chan_ops sv_unix_ops = {
	.name = "unix socket",
	.caps = 0,
	.same_host = true,
	.writev = unix_writev,
	.readv = unix_readv,
	.offer = sv_conn_rings_offer,
	.take = sv_conn_rings_take,
	.answered = sv_conn_rings_answered,
};

int sv_conn_connect_local(struct sv_node *node, uint16_t port, struct sv_conn **out)
{
	int fd = sv_unix_connect(port);

	if (fd < 0)
		return fd;
	*out = sv_conn_new(node, fd, true, false, &sv_unix_ops);
	if (!*out) {
		sv_close(fd);
		return -ENOMEM;
	}
	return 0;
}
