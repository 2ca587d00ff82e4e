/* TCP channels: a non-blocking stream socket per direction of a QP pair. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine/engine.h"
#include "transport/transport.h"
#include "util/log.h"

#define SV_RBUF_LEN (256 * 1024)

static void tune_socket(int fd)
{
	int one = 1, sz = 4 << 20;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

struct sv_conn *sv_conn_new(struct sv_node *node, int fd, bool outbound, bool connected)
{
	struct sv_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->rbuf = malloc(SV_RBUF_LEN);
	if (!c->rbuf) {
		free(c);
		return NULL;
	}
	c->h.fd = fd;
	c->h.fn = sv_engine_on_conn;
	c->node = node;
	c->outbound = outbound;
	c->connected = connected;
	sv_list_init(&c->pending_link);
	tune_socket(fd);
	if (sv_node_watch(node, &c->h, EPOLLIN | (connected ? 0 : EPOLLOUT))) {
		free(c->rbuf);
		free(c);
		return NULL;
	}
	c->want_out = !connected;
	return c;
}

static uint32_t conn_events(struct sv_conn *c)
{
	return (c->paused ? 0 : EPOLLIN) | (c->want_out ? EPOLLOUT : 0);
}

void sv_conn_want_out(struct sv_conn *c, bool on)
{
	if (c->want_out == on || c->closed)
		return;
	c->want_out = on;
	sv_node_rewatch(c->node, &c->h, conn_events(c));
}

void sv_conn_pause(struct sv_conn *c, bool paused)
{
	if (c->paused == paused || c->closed)
		return;
	c->paused = paused;
	sv_node_rewatch(c->node, &c->h, conn_events(c));
}

void sv_conn_close(struct sv_conn *c)
{
	struct sv_node *node;

	if (!c || c->closed)
		return;
	node = c->node;
	c->closed = c->dead = true;
	sv_node_unwatch(node, &c->h);
	close(c->h.fd);
	c->h.fd = -1;
	pthread_mutex_lock(&node->lock);
	sv_list_del(&c->pending_link);
	sv_list_add_tail(&node->graveyard, &c->pending_link);
	pthread_mutex_unlock(&node->lock);
}

void sv_conn_reap(struct sv_node *node)
{
	struct sv_list dead, *pos, *tmp;

	sv_list_init(&dead);
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->graveyard) {
		sv_list_del(pos);
		sv_list_add_tail(&dead, pos);
	}
	pthread_mutex_unlock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &dead) {
		struct sv_conn *c = sv_container_of(pos, struct sv_conn, pending_link);

		free(c->rbuf);
		free(c);
	}
}

ssize_t sv_conn_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };
	ssize_t r = sendmsg(c->h.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (r < 0)
		c->dead = true;
	return r < 0 ? -errno : r;
}

ssize_t sv_conn_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	ssize_t r = readv(c->h.fd, iov, n);

	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -EAGAIN;
	if (r <= 0)
		c->dead = true;
	return r < 0 ? -errno : r;
}

ssize_t sv_conn_read(struct sv_conn *c, void *buf, size_t len)
{
	struct iovec iov = { buf, len };

	return sv_conn_readv(c, &iov, 1);
}

int sv_conn_connect(struct sv_node *node, const struct sockaddr_in *dst, struct sv_conn **out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	tune_socket(fd);
	if (connect(fd, (const struct sockaddr *)dst, sizeof(*dst)) && errno != EINPROGRESS) {
		int e = errno;

		close(fd);
		return -e;
	}
	/* Completion is always reported by EPOLLOUT, immediate or not. */
	*out = sv_conn_new(node, fd, true, false);
	if (!*out) {
		close(fd);
		return -ENOMEM;
	}
	return 0;
}
