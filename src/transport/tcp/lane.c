/* A TCP channel's datagram lane (lane.h). */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "transport/tcp/lane.h"
#include "transport/transport.h"
#include "util/env.h"
#include "util/log.h"
#include "util/sys.h"

/* A datagram: this header, then stream bytes [off, off + len).  Big-endian. */
struct sv_lane_hdr {
	uint64_t secret;             /* the receiver's */
	uint64_t off;                /* where its bytes lie in the stream */
};

/* The largest write that goes as a datagram too: a ping-pong's frame and
 * the ACK it carries, well inside an Ethernet MTU.  Larger ones and
 * streams gain nothing from a copy, and cost the writer a system call. */
#define SV_LANE_MAX 512u
#define SV_LANE_IOV 8                /* iovecs a copy may gather */
#define SV_LANE_READS 64             /* datagrams dropped per read, at most (a flood) */
#define SV_LANE_SKIP_BUF 4096

/* A copy helps only a reader that looks for it, a poller that spins on
 * the channel (sv_conn_blind); one told by epoll that the stream has
 * input (the progress thread of a target nobody polls at, a sleeper, a
 * poller of many channels) finds it with the stream's bytes, and the
 * writer's copy only delayed them.  After SV_LANE_LATE such in a row the reader says so in a
 * header-only datagram (off SV_LANE_NOTICE), and the writer copies none
 * of its next SV_LANE_MUTE writes, then tries again. */
#define SV_LANE_NOTICE UINT64_MAX
#define SV_LANE_LATE 64
#define SV_LANE_MUTE 1024

/* A reader whose stream brings new bytes the lane did not (a stream, or a
 * writer that copies nothing) looks at the lane only every
 * SV_LANE_IDLE_EVERY reads, after SV_LANE_IDLE such: a look is a system
 * call. */
#define SV_LANE_IDLE 4
#define SV_LANE_IDLE_EVERY 16

struct sv_lane {
	int fd;
	bool up;                     /* connected to the peer's socket */
	uint32_t late;               /* datagrams in a row that came no sooner */
	uint32_t mute;               /* writes left not to copy */
	uint32_t idle, looks;        /* stream reads the lane had nothing for */
	uint32_t drop, drop_every;   /* SOFTVERBS_LANE_DROP: copies not sent (tests) */
	uint64_t *ctr_tx, *ctr_rx;   /* the engine's counters of datagrams, or NULL */
	uint64_t secret, peer_secret;
	uint64_t tcp_off;            /* stream bytes read from the socket (c->rx_bytes:
				      * handed up, from either) */
	uint8_t buf[sizeof(struct sv_lane_hdr) + SV_LANE_MAX + 1];
};

/* A UDP socket on the TCP connection's local address, any port. */
static bool lane_open(struct sv_conn *c, struct sv_lane_offer *ours)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	struct sv_lane *l;
	int fd;

	if (!sv_chan_lanes(c) || c->lane ||
	    getsockname(c->h.fd, (struct sockaddr *)&me, &len) || me.sin_family != AF_INET)
		return false;
	l = calloc(1, sizeof(*l));
	if (!l)
		return false;
	me.sin_port = 0;
	fd = sv_socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	len = sizeof(me);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
	    getsockname(fd, (struct sockaddr *)&me, &len) ||
	    getrandom(&l->secret, sizeof(l->secret), 0) != sizeof(l->secret)) {
		if (fd >= 0)
			sv_close(fd);
		free(l);
		return false;
	}
	l->fd = fd;
	l->tcp_off = c->rx_bytes;    /* so far all from the socket */
	l->drop_every = (uint32_t)sv_env_int("SOFTVERBS_LANE_DROP", 0);
	c->lane = l;
	ours->port = ntohs(me.sin_port);
	ours->secret = l->secret;
	return true;
}

/* To the peer's socket: on the TCP peer's address, the port it offered. */
static void lane_connect(struct sv_conn *c, const struct sv_lane_offer *theirs)
{
	struct sv_lane *l = c->lane;
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);

	if (!theirs->port || getpeername(c->h.fd, (struct sockaddr *)&peer, &len) ||
	    peer.sin_family != AF_INET) {
		sv_lane_close(c);
		return;
	}
	peer.sin_port = htons(theirs->port);
	if (sv_connect(l->fd, (struct sockaddr *)&peer, sizeof(peer))) {
		sv_lane_close(c);
		return;
	}
	l->peer_secret = theirs->secret;
	l->up = true;
}

bool sv_lane_offer(struct sv_conn *c, struct sv_lane_offer *ours)
{
	return lane_open(c, ours);
}

bool sv_lane_take(struct sv_conn *c, const struct sv_lane_offer *theirs,
		  struct sv_lane_offer *ours)
{
	if (!theirs->port || !lane_open(c, ours))
		return false;
	lane_connect(c, theirs);
	return c->lane->up;
}

void sv_lane_answered(struct sv_conn *c, const struct sv_lane_offer *theirs)
{
	if (c->lane)
		lane_connect(c, theirs);
}

bool sv_lane_up(const struct sv_conn *c)
{
	return c->lane && c->lane->up;
}

/* The stream goes on alone. */
void sv_lane_close(struct sv_conn *c)
{
	if (!c->lane || c->lane->fd < 0)
		return;
	sv_close(c->lane->fd);
	c->lane->fd = -1;
	c->lane->up = false;
}

void sv_lane_counters(struct sv_conn *c, uint64_t *tx, uint64_t *rx)
{
	if (c->lane) {
		c->lane->ctr_tx = tx;
		c->lane->ctr_rx = rx;
	}
}

void sv_lane_free(struct sv_conn *c)
{
	sv_lane_close(c);
	free(c->lane);
	c->lane = NULL;
}

/* Only a write its peer waits for alone (c->tx_awaited): a stream's
 * writer would pay a second system call per write for nothing. */
void sv_lane_copy(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_lane *l = c->lane;
	struct iovec v[SV_LANE_IOV + 1];
	struct sv_lane_hdr h;
	struct msghdr mh = { .msg_iov = v, .msg_iovlen = (size_t)n + 1 };
	size_t total = 0;

	if (!l->up || n > SV_LANE_IOV)
		return;
	if (l->mute) {
		l->mute--;
		return;
	}
	if (l->drop_every && ++l->drop == l->drop_every) {
		l->drop = 0;             /* as if lost on the way */
		return;
	}
	for (int i = 0; i < n; i++) {
		total += iov[i].iov_len;
		v[i + 1] = iov[i];
	}
	if (!total || total > SV_LANE_MAX)
		return;
	h.secret = htobe64(l->peer_secret);
	h.off = htobe64(c->tx_bytes);
	v[0].iov_base = &h;
	v[0].iov_len = sizeof(h);
	/* lost or refused, the stream carries it anyway */
	if (sv_sendmsg(l->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) > 0 && l->ctr_tx)
		(*l->ctr_tx)++;
}

static void lane_notice(struct sv_lane *l)
{
	struct sv_lane_hdr h = { .secret = htobe64(l->peer_secret), .off = htobe64(SV_LANE_NOTICE) };

	(void)sv_send(l->fd, &h, sizeof(h), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Did this datagram come sooner than the stream's bytes? */
static void lane_timely(struct sv_lane *l, bool sooner)
{
	if (sooner) {
		l->late = 0;
	} else if (++l->late >= SV_LANE_LATE) {
		l->late = 0;
		lane_notice(l);
	}
}

/* Copy src[0..len) into iov; returns what fit. */
static size_t to_iov(const struct iovec *iov, int n, const uint8_t *src, size_t len)
{
	size_t done = 0;

	for (int i = 0; i < n && done < len; i++) {
		size_t k = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;

		memcpy(iov[i].iov_base, src + done, k);
		done += k;
	}
	return done;
}

ssize_t sv_lane_read(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_lane *l = c->lane;
	const size_t hl = sizeof(struct sv_lane_hdr);

	if (!l->up || (l->idle >= SV_LANE_IDLE && (++l->looks % SV_LANE_IDLE_EVERY)))
		return 0;
	for (int k = 0; k < SV_LANE_READS; k++) {
		ssize_t r = sv_recv(l->fd, l->buf, sizeof(l->buf), MSG_DONTWAIT | MSG_TRUNC);
		struct sv_lane_hdr h;
		uint64_t off, len, skip;
		size_t got;

		if (r < 0)
			return 0;            /* none (or an ICMP error: the stream says) */
		if ((size_t)r < hl || (size_t)r > sizeof(l->buf) - 1)
			continue;            /* not one of ours */
		memcpy(&h, l->buf, hl);
		if (be64toh(h.secret) != l->secret)
			continue;            /* forged, or for a lane before */
		off = be64toh(h.off);
		len = (uint64_t)r - hl;
		if (off == SV_LANE_NOTICE && !len) {
			l->mute = SV_LANE_MUTE;
			continue;
		}
		if (off + len <= c->rx_bytes) {
			lane_timely(l, false);
			continue;            /* the stream brought it first */
		}
		if (off > c->rx_bytes)
			return 0;            /* one before it was lost: the stream has both */
		skip = c->rx_bytes - off;
		got = to_iov(iov, n, l->buf + hl + skip, (size_t)(len - skip));
		lane_timely(l, sv_conn_blind);
		l->idle = 0;
		if (l->ctr_rx)
			(*l->ctr_rx)++;
		return (ssize_t)got;
	}
	return 0;
}

bool sv_lane_skip(struct sv_conn *c, ssize_t *r)
{
	struct sv_lane *l = c->lane;
	uint8_t scratch[SV_LANE_SKIP_BUF];

	while (l->tcp_off < c->rx_bytes) {
		uint64_t want = c->rx_bytes - l->tcp_off;
		ssize_t got = sv_recv(c->h.fd, scratch, want < sizeof(scratch) ? want : sizeof(scratch),
				      MSG_DONTWAIT);

		if (got <= 0) {
			*r = got < 0 ? -errno : 0;
			return false;
		}
		l->tcp_off += (uint64_t)got;
	}
	return true;
}

void sv_lane_stream_read(struct sv_conn *c, ssize_t r)
{
	struct sv_lane *l = c->lane;

	l->tcp_off += (uint64_t)r;
	if (l->idle < SV_LANE_IDLE)
		l->idle++;
}
