/* TCP channels: a non-blocking stream socket per direction of a QP pair,
 * to another host (or to this one, with SOFTVERBS_TRANSPORT=tcp). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/sys.h"
#include "transport/tcp/lane.h"
#include "transport/transport.h"
#include "util/stamp.h"

/* One buffer (a staged flush, the usual case) goes by send(2): it spares
 * the kernel copying in a msghdr and importing an iovec, per message. */
static ssize_t tcp_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r;

	if (c->lane && c->tx_awaited)
		sv_lane_copy(c, iov, n);
	c->tx_awaited = false;
	sv_stamp(SV_ST_SOCK_SEND);
	r = n == 1 ? sv_send(c->h.fd, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL | MSG_DONTWAIT)
		   : sv_sendmsg(c->h.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	sv_stamp(SV_ST_SOCK_SENT);
	if (r > 0)
		c->tx_bytes += (uint64_t)r;
	return sv_conn_sock_wrote(c, r < 0 ? -errno : r);
}

static ssize_t tcp_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	/* recv(2), not read(2): a spinning poller pays this on every empty
	 * look, and read's file layer (position lock, access checks) costs
	 * more than the socket's own; one buffer spares importing an iovec */
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r;

	if (c->lane) {                /* the next bytes may have come early */
		r = sv_lane_read(c, iov, n);
		if (r > 0) {
			sv_stamp(SV_ST_SOCK_READ);
			c->rx_bytes += (uint64_t)r;
			return sv_conn_sock_read(c, r);
		}
		if (!sv_lane_skip(c, &r))
			return sv_conn_sock_read(c, r);
	}
	r = n == 1 ? sv_recv(c->h.fd, iov[0].iov_base, iov[0].iov_len, MSG_DONTWAIT)
		   : sv_recvmsg(c->h.fd, &mh, MSG_DONTWAIT);
	if (r > 0) {
		sv_stamp(SV_ST_SOCK_READ);
		c->rx_bytes += (uint64_t)r;
		if (c->lane)
			sv_lane_stream_read(c, r);
	}
	return sv_conn_sock_read(c, r < 0 ? -errno : r);
}

/* SO_RCVLOWAT: epoll and the socket's wake-ups wait for that many bytes.
 * The kernel still reports less when its receive window or memory runs
 * short; we keep well below that, at an eighth of the receive buffer. */
static void tcp_rx_lowat(struct sv_conn *c, uint32_t bytes)
{
	int v;

	if (!c->rx_lowat_max) {
		int buf = 0;
		socklen_t len = sizeof(buf);

		getsockopt(c->h.fd, SOL_SOCKET, SO_RCVBUF, &buf, &len);
		c->rx_lowat_max = buf >= 16 ? (uint32_t)buf / 8 : 1;
	}
	v = (int)(bytes < c->rx_lowat_max ? bytes : c->rx_lowat_max);
	if (!setsockopt(c->h.fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)))
		c->rx_lowat = bytes;
}

/* Segments this small (an Ethernet MTU, jumbo frames) are many per large
 * message; loopback's 64 KiB MTU makes one segment of a 64 KiB message,
 * which TCP acknowledges per two segments however it is read. */
#define SV_TCP_SMALL_MSS (16 * 1024)

void sv_tcp_accepted(struct sv_conn *c)
{
	int mss = 0;
	socklen_t len = sizeof(mss);

	if (!getsockopt(c->h.fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) && mss > 0 &&
	    mss < SV_TCP_SMALL_MSS)
		c->caps |= SV_CAP_READ_ACKS;
}

const struct sv_chan_ops sv_tcp_ops = {
	.name = "tcp",
	.caps = SV_CAP_TURN | SV_CAP_SPIN_TAKE,
	.writev = tcp_writev,
	.readv = tcp_readv,
	.rx_lowat = tcp_rx_lowat,
	.close = sv_lane_close,
	.lane_offer = sv_lane_offer,
	.lane_take = sv_lane_take,
	.lane_answered = sv_lane_answered,
	.lane_counters = sv_lane_counters,
	.lane_up = sv_lane_up,
};

int sv_conn_connect(struct sv_node *node, const struct sockaddr_in *dst, struct sv_conn **out)
{
	int fd = sv_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	sv_conn_tune_socket(fd);
	if (sv_connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) && errno != EINPROGRESS) {
		int e = errno;

		sv_close(fd);
		return -e;
	}
	/* Completion is always reported by EPOLLOUT, immediate or not. */
	*out = sv_conn_new(node, fd, true, false, &sv_tcp_ops);
	if (!*out) {
		sv_close(fd);
		return -ENOMEM;
	}
	return 0;
}
