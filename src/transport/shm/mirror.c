/*
 * The receive mirror (mirror.h): the responder's publication, the
 * requester's placement.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "transport/shm/cma.h"
#include "transport/transport.h"

/* Receive `idx`'s entry.  Consecutive receives' entries lie on different
 * lines: the responder rewrites an entry (for the receive SV_MIRROR_N
 * later) as soon as it takes its receive, and that must not take back the
 * line of the next one, which the requester fetched ahead (sv_conn_place). */
static uint32_t mirror_slot(uint32_t idx)
{
	uint32_t i = idx % SV_MIRROR_N;

	return i < SV_MIRROR_N / 2 ? 2 * i : 2 * (i - SV_MIRROR_N / 2) + 1;
}

/* Responder, QP lock held: receive `idx` is posted (the channel is the
 * QP's inbound one, whose ring 0 we consume). */
void sv_conn_recv_publish(struct sv_conn *c, uint32_t idx, const struct sv_recv_pub *r)
{
	struct sv_mirror_ent *e = &c->shm.mirror->e[mirror_slot(idx)];

	e->nsge = r->nsge;
	e->len = r->len;
	e->lkey = r->lkey;
	e->addr = r->addr;
	__atomic_store_n(&e->seq, idx + 1, __ATOMIC_RELEASE);
}

/* The first SGE of receive `idx`, if the responder published it and it
 * takes `len` bytes. */
static const struct sv_mirror_ent *published(const struct sv_conn *c, uint32_t idx, size_t len)
{
	const struct sv_mirror_ent *e = &c->shm.mirror->e[mirror_slot(idx)];

	if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != idx + 1)
		return NULL;
	return !len || (e->nsge && len <= e->len) ? e : NULL;
}

int sv_conn_place(struct sv_conn *c, uint32_t idx, const struct iovec *src, int n, size_t len)
{
	const struct sv_mirror_ent *e = published(c, idx, len);
	struct sv_cma_ref ref;
	struct iovec dst;

	/* The next request's entry, fetched while we copy and the peer
	 * answers: it was written by the responder's core, and read only then
	 * it cost a cache miss on the way of every placed SEND. */
	__builtin_prefetch(&c->shm.mirror->e[mirror_slot(idx + 1)]);
	if (!e)
		return -EAGAIN;         /* not published (yet) */
	if (!len)
		return 0;
	/* the receive's memory, as the responder would check it */
	if (sv_cma_acquire(c->peer_seg, c->peer_pd, e->lkey, e->addr, len, IBV_ACCESS_LOCAL_WRITE,
			   NULL, &ref))
		return -EFAULT;
	dst.iov_base = sv_peer_map(&c->peer_maps, c->peer_seg, e->lkey >> 8, e->lkey, ref.raddr, len);
	dst.iov_len = len;
	if (dst.iov_base)
		sv_iov_copy(&dst, 1, src, n);
	sv_cma_release(&ref);
	return dst.iov_base ? 0 : -EFAULT;
}
