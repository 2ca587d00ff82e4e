/*
 * A socket channel's last words.  A QP that fails closes its channels
 * right after its NAK saying why; closed at once, the NAK could be lost:
 * closing a TCP socket with unread input (the rest of the peer's requests)
 * resets the connection, and the reset drops what we wrote and the kernel
 * has not sent yet.  So the channel hands its socket to a linger record:
 * the socket is shut for writing (the FIN goes after the NAK), its input
 * is read and dropped until the peer closes too, and SV_LINGER_NS ends it
 * if the peer never does.  The engine is done with the channel at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/node.h"
#include "transport/transport.h"
#include "util/sys.h"
#include "util/time.h"

#define SV_LINGER_NS (2000ull * 1000 * 1000)

struct sv_linger {
	struct sv_handler h;
	struct sv_node *node;
	struct sv_list link;         /* node->lingering (node lock) */
	uint64_t until;
};

/* Off the node's list already. */
static void linger_free(struct sv_linger *l)
{
	sv_node_unwatch(l->node, &l->h);
	sv_close(l->h.fd);
	free(l);
}

static void linger_end(struct sv_linger *l)
{
	pthread_mutex_lock(&l->node->lock);
	sv_list_del(&l->link);
	pthread_mutex_unlock(&l->node->lock);
	linger_free(l);
}

/* Progress thread: the peer's input goes nowhere until its EOF. */
static void on_linger(struct sv_handler *h, uint32_t events)
{
	struct sv_linger *l = sv_container_of(h, struct sv_linger, h);
	char buf[16384];
	ssize_t r;

	(void)events;
	while ((r = sv_recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		linger_end(l);
}

void sv_conn_close_linger(struct sv_conn *c)
{
	struct sv_node *node = c->node;
	struct sv_linger *l;

	if (c->closed || !c->connected || (c->caps & SV_CAP_MAPPED) || !(l = calloc(1, sizeof(*l)))) {
		sv_conn_close(c);
		return;
	}
	/* The copy keeps the socket open when the channel closes its descriptor. */
	l->h.fd = fcntl(c->h.fd, F_DUPFD_CLOEXEC, 0);
	sv_conn_close(c);
	if (l->h.fd < 0) {
		free(l);
		return;
	}
	l->h.fn = on_linger;
	l->node = node;
	l->until = sv_now_ns() + SV_LINGER_NS;
	shutdown(l->h.fd, SHUT_WR);
	pthread_mutex_lock(&node->lock);
	sv_list_add_tail(&node->lingering, &l->link);
	if (!node->linger_due) {
		__atomic_store_n(&node->linger_due, l->until, __ATOMIC_RELAXED);
		sv_node_kick(node);      /* it may sleep without a deadline */
	}
	pthread_mutex_unlock(&node->lock);
	if (sv_node_watch(node, &l->h, EPOLLIN))
		linger_end(l);
}

/* Progress thread (and the node's end, `all`): end the records whose time
 * ran out.  Returns when the next one's does (0: none left). */
uint64_t sv_node_linger_reap(struct sv_node *node, uint64_t now, bool all)
{
	struct sv_list *pos, *tmp, done;
	uint64_t next = 0;

	sv_list_init(&done);
	pthread_mutex_lock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &node->lingering) {
		struct sv_linger *l = sv_container_of(pos, struct sv_linger, link);

		if (all || l->until <= now) {
			sv_list_del(&l->link);
			sv_list_add_tail(&done, &l->link);
		} else if (!next || l->until < next) {
			next = l->until;
		}
	}
	__atomic_store_n(&node->linger_due, next, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&node->lock);
	sv_list_for_each_safe(pos, tmp, &done)
		linger_free(sv_container_of(pos, struct sv_linger, link));
	return next;
}
