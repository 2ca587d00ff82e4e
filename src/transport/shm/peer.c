#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm/peer.h"
#include "transport/transport.h"
#include "util/sys.h"

/* ---- ours ---- */

int sv_shm_life_open(struct sv_node *node)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC | O_NONBLOCK))
		return -errno;
	node->life_r = p[0];
	node->life_w = p[1];
	return 0;
}

void sv_shm_life_close(struct sv_node *node)
{
	if (node->life_r >= 0)
		sv_close(node->life_r);
	if (node->life_w >= 0)
		sv_close(node->life_w);
	node->life_r = node->life_w = -1;
}

int sv_shm_peer_offer(struct sv_node *node, int *fds)
{
	if (node->life_w < 0)
		return -1;
	fds[0] = fcntl(node->wake_h.fd, F_DUPFD_CLOEXEC, 0);
	fds[1] = fds[0] < 0 ? -1 : fcntl(node->life_w, F_DUPFD_CLOEXEC, 0);
	if (fds[1] >= 0)
		return 0;
	if (fds[0] >= 0)
		sv_close(fds[0]);
	return -1;
}

void sv_shm_life_forget_after_fork(struct sv_node *node)
{
	if (node->life_r >= 0)
		sv_close(node->life_r);
	node->life_r = -1;
}

/* ---- theirs ---- */

/* Progress thread: the peer's life line broke.  Its rings are closed for us. */
static void on_gone(struct sv_handler *h, uint32_t events)
{
	struct sv_shm_peer *p = sv_container_of(h, struct sv_shm_peer, h);
	struct sv_node *node = p->node;

	(void)events;
	sv_node_unwatch(node, &p->h);
	pthread_mutex_lock(&node->lock);
	p->gone = true;
	sv_conn_shm_peer_gone(node, p);
	pthread_mutex_unlock(&node->lock);
}

static struct sv_shm_peer *peer_find(struct sv_node *node, const struct stat *st)
{
	struct sv_list *pos;

	sv_list_for_each(pos, &node->shm_peers) {
		struct sv_shm_peer *q = sv_container_of(pos, struct sv_shm_peer, link);

		if (!q->gone && q->dev == st->st_dev && q->ino == st->st_ino)
			return q;
	}
	return NULL;
}

static struct sv_shm_peer *peer_new(struct sv_node *node, const int *fds, const struct stat *st,
				    pid_t pid)
{
	struct sv_shm_peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	sv_list_init(&p->wakes);
	p->h.fd = fds[1];
	p->h.fn = on_gone;
	p->bell = fds[0];
	p->node = node;
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->refs = 1;
	/* no events asked for: a pipe's writer always hears of its last reader */
	if (sv_node_watch(node, &p->h, 0)) {
		if (p->pidfd >= 0)
			sv_close(p->pidfd);
		free(p);
		return NULL;
	}
	return p;
}

struct sv_shm_peer *sv_shm_peer_get(struct sv_node *node, const int *fds, pid_t pid)
{
	struct sv_shm_peer *p = NULL;
	struct stat st;

	if (fds[0] >= 0 && fds[1] >= 0 && !fstat(fds[1], &st) && S_ISFIFO(st.st_mode)) {
		pthread_mutex_lock(&node->lock);
		p = peer_find(node, &st);
		if (p)
			p->refs++;
		pthread_mutex_unlock(&node->lock);
		if (!p && (p = peer_new(node, fds, &st, pid))) {
			pthread_mutex_lock(&node->lock);
			sv_list_add_tail(&node->shm_peers, &p->link);
			pthread_mutex_unlock(&node->lock);
			return p;                  /* keeps both */
		}
	}
	for (int i = 0; i < SV_SHM_PEER_FDS; i++)
		if (fds[i] >= 0)
			sv_close(fds[i]);       /* copies of what we keep, or unusable */
	return p;
}

/* Only where no event for it can be pending: the progress thread after
 * its batch (sv_conn_reap), or the node's end. */
void sv_shm_peer_put(struct sv_shm_peer *p)
{
	struct sv_node *node;
	bool last;

	if (!p)
		return;
	node = p->node;
	pthread_mutex_lock(&node->lock);
	last = --p->refs == 0;
	if (last)
		sv_list_del(&p->link);
	pthread_mutex_unlock(&node->lock);
	if (!last)
		return;
	if (!p->gone)
		sv_node_unwatch(node, &p->h);
	sv_close(p->h.fd);
	sv_close(p->bell);
	if (p->pidfd >= 0)
		sv_close(p->pidfd);
	free(p);                          /* (its channels put their wakes first) */
}

/* ---- their sleepers' descriptors ---- */

struct shm_wake {
	struct sv_list link;         /* p->wakes */
	uint64_t id;
	int fd;
	int refs;
};

/* The one named `id`, or (id 0) the one whose copy `fd` is (node lock). */
static struct shm_wake *wake_find(struct sv_shm_peer *p, uint64_t id, int fd)
{
	struct sv_list *pos;

	sv_list_for_each(pos, &p->wakes) {
		struct shm_wake *q = sv_container_of(pos, struct shm_wake, link);

		if (id ? q->id == id : q->fd == fd)
			return q;
	}
	return NULL;
}

int sv_shm_peer_wake_get(struct sv_shm_peer *p, uint64_t id, int fd)
{
	struct shm_wake *w;

	if (fd < 0 || !id)
		return fd;                   /* not named: the channel's own */
	pthread_mutex_lock(&p->node->lock);
	w = wake_find(p, id, -1);
	if (w) {
		w->refs++;
		sv_close(fd);                   /* a copy of the one we keep */
		fd = w->fd;
	} else if ((w = calloc(1, sizeof(*w)))) {
		w->id = id;
		w->fd = fd;
		w->refs = 1;
		sv_list_add_tail(&p->wakes, &w->link);
	}
	pthread_mutex_unlock(&p->node->lock);
	return fd;
}

void sv_shm_peer_wake_put(struct sv_shm_peer *p, int fd)
{
	struct shm_wake *w;
	bool last = true;                    /* the channel's own, or the last user */

	pthread_mutex_lock(&p->node->lock);
	w = wake_find(p, 0, fd);
	if (w && (last = --w->refs == 0))
		sv_list_del(&w->link);
	pthread_mutex_unlock(&p->node->lock);
	if (last) {
		sv_close(fd);
		free(w);
	}
}

void sv_shm_peer_ring(const struct sv_shm_peer *p)
{
	const uint64_t one = 1;

	/* an eventfd refuses only a counter about to overflow: it is
	 * readable already, and nothing is lost */
	(void)!sv_write(p->bell, &one, sizeof(one));
}
