/*
 * One-sided access to a same-host peer's registered memory, done by the
 * initiator itself (its channel has cma_ok): the key, rights and bounds
 * checked in the peer's published MR table, then a memcpy or a CPU atomic on
 * memory we mapped (mrmap.h), or a copy by cross-memory attach, announced in
 * the ring we write so that the peer's dereg waits for it (cma.h).  And the
 * other way round, a pulled SEND's data read from the requester.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "transport/shm/cma.h"
#include "transport/transport.h"
#include "util/tsan.h"

/* An atomic on the peer's memory we mapped: the CPU's own atomics make it
 * atomic against every other initiator and the peer's responder, which
 * use them on the same memory. */
static void direct_atomic(const struct sv_direct *d, uint64_t *mapped)
{
	uint64_t orig;

	sv_dma_begin();         /* the peer application's memory, as a NIC's atomic (util/tsan.h) */
	if (d->cmp_swp) {
		orig = d->compare_add;
		__atomic_compare_exchange_n(mapped, &orig, d->swap, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(mapped, d->compare_add, __ATOMIC_SEQ_CST);
	}
	sv_dma_end();
	memcpy(d->iov[0].iov_base, &orig, 8);
}

/* Copy `len` bytes between local segments and the peer's memory we mapped. */
/* The last of the len bytes the iovec holds. */
static uint8_t *last_byte(const struct iovec *iov, int n, size_t len)
{
	size_t off = len - 1;

	for (int i = 0; i < n; i++) {
		if (off < iov[i].iov_len)
			return (uint8_t *)iov[i].iov_base + off;
		off -= iov[i].iov_len;
	}
	return NULL;
}

/* Writes into the peer store the last byte after the rest, as a NIC's DMA
 * does and engine/place.c does: programs poll the last byte of a WRITE. */
static void copy_mapped(const struct sv_direct *d, void *remote)
{
	struct iovec r = { remote, d->len };

	if (!d->to_remote) {
		sv_iov_copy(d->iov, d->n, &r, 1);
		return;
	}
	r.iov_len = d->len - 1;
	sv_iov_copy(&r, 1, d->iov, d->n);
	__atomic_store_n((uint8_t *)remote + d->len - 1, *last_byte(d->iov, d->n, d->len),
			 __ATOMIC_RELEASE);
}

static ssize_t copy_cma(struct sv_conn *c, const struct sv_direct *d, uint64_t raddr)
{
	size_t head = d->to_remote ? d->len - 1 : d->len;
	struct iovec one;
	ssize_t r = 0;

	if (head)
		r = sv_cma_copy(c->peer_pid, d->iov, d->n, raddr, head, d->to_remote);
	if (r < 0 || head == d->len)
		return r;
	one.iov_base = last_byte(d->iov, d->n, d->len);
	one.iov_len = 1;
	return sv_cma_copy(c->peer_pid, &one, 1, raddr + head, 1, 1);
}

int sv_conn_direct(struct sv_conn *c, const struct sv_direct *d)
{
	bool atomic = d->need == IBV_ACCESS_REMOTE_ATOMIC;
	struct sv_cma_ref ref;
	void *mapped;
	ssize_t r = 0;
	int err;

	if (atomic && (d->raddr & 7))
		return -EINVAL;
	err = sv_cma_acquire(c->peer_seg, c->peer_pd, d->rkey, d->raddr, d->len, d->need, NULL, &ref);
	if (err)
		return err;
	mapped = d->len ? sv_peer_map(&c->peer_maps, c->peer_seg, d->rkey >> 8, d->rkey,
				      ref.raddr, d->len) : NULL;
	if (atomic && !mapped)
		return -EAGAIN;      /* no atomic copy across processes: the responder does it */
	/* A copy into the peer's address space is announced, and the check
	 * made again after: its dereg waits for announced copies. */
	if (!mapped && d->len &&
	    (err = sv_cma_acquire(c->peer_seg, c->peer_pd, d->rkey, d->raddr, d->len, d->need,
				  &c->shm.tx->direct_slot, &ref)))
		return err;
	if (atomic)
		direct_atomic(d, mapped);
	else if (mapped)
		copy_mapped(d, mapped);
	else if (d->len)
		r = copy_cma(c, d, ref.raddr);
	sv_cma_release(&ref);
	if (r < 0) {
		if (r == -EPERM)
			c->cma_ok = false;      /* the kernel says no: use the validated path */
		return -EAGAIN;
	}
	return 0;
}

/* Local addresses of the requester's pieces, if all lie in memory of its
 * we could map (mrmap.h); else cross-memory attach reads them. */
static bool pull_mapped(struct sv_conn *c, const struct sv_wire_pull *pd, int n,
			struct iovec *src)
{
	for (int i = 0; i < n; i++) {
		const struct sv_wire_pull *d = &pd[i];

		src[i].iov_base = sv_peer_map_pull(&c->peer_maps, c->peer_seg, d->key, d->addr,
						   d->len);
		src[i].iov_len = d->len;
		if (!src[i].iov_base)
			return false;
	}
	return true;
}

ssize_t sv_conn_pull(struct sv_conn *c, const struct sv_wire_pull *pd, int n,
		     const struct iovec *dst, int ndst, size_t len)
{
	struct iovec remote[SV_WIRE_MAX_SGE];

	if (pull_mapped(c, pd, n, remote)) {
		sv_iov_copy(dst, ndst, remote, n);
		return (ssize_t)len;
	}
	for (int i = 0; i < n; i++) {
		remote[i].iov_base = (void *)(uintptr_t)pd[i].addr;
		remote[i].iov_len = pd[i].len;
	}
	return sv_cma_pull(c->peer_pid, dst, ndst, remote, n, len);
}
