/*
 * Payload placement into registered memory, and the rule that keeps it
 * honest: when ibv_dereg_mr or ibv_rereg_mr returns, no access to the old
 * memory is in progress and none can start.
 *
 * A placement is translated from (pd, key, address, length, direction) once,
 * when the header arrives, and remembers that source and the MR epoch
 * (verbs/mr.c) it was made at.  Every step that touches the memory (a copy
 * from the staging buffer, a read straight from the channel) holds the MR
 * read lock for that one step and compares the epoch: unchanged, the
 * translation stands; moved (some MR went away), each segment is translated
 * again, and one that no longer translates to the same place revokes the
 * placement: the rest of the payload is discarded and the request fails at
 * its end.
 */
#include <stdio.h>
#include <string.h>

#include "engine/engine.h"
#include "util/tsan.h"

void sv_place_reset(struct sv_place *p)
{
	p->nseg = p->cur = 0;
	p->cur_off = 0;
	p->discard = true;
	p->revoked = false;
}

size_t sv_place_left(const struct sv_place *p)
{
	size_t n = 0;

	for (int i = p->cur; i < p->nseg; i++)
		n += p->seg[i].iov_len - (i == p->cur ? p->cur_off : 0);
	return n;
}

void sv_place_advance(struct sv_place *p, size_t n)
{
	while (n && p->cur < p->nseg) {
		size_t room = p->seg[p->cur].iov_len - p->cur_off;
		size_t k = n < room ? n : room;

		p->cur_off += k;
		n -= k;
		if (p->cur_off == p->seg[p->cur].iov_len) {
			p->cur++;
			p->cur_off = 0;
		}
	}
}

/* With the MR lock held: translate the non-empty SGEs into seg[] (their
 * sources into key[] and va[] when given); `qpn` as sv_mr_translate's. */
static enum ibv_wc_status sges_translate(struct ibv_pd *pd, uint32_t qpn, const struct sv_sge *sge,
					 uint32_t n, enum sv_access_dir dir, struct iovec *seg,
					 int *nseg, size_t *total, uint32_t *key, uint64_t *va)
{
	*nseg = 0;
	*total = 0;
	for (uint32_t i = 0; i < n; i++) {
		void *p;

		if (!sge[i].length)
			continue;
		p = sv_mr_translate(pd, qpn, sge[i].lkey, sge[i].addr, sge[i].length, dir);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		if (key) {
			key[*nseg] = sge[i].lkey;
			va[*nseg] = sge[i].addr;
		}
		seg[*nseg].iov_base = p;
		seg[*nseg].iov_len = sge[i].length;
		(*nseg)++;
		*total += sge[i].length;
	}
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status sv_sges_translate(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
				     enum sv_access_dir dir, struct iovec *seg, int *nseg,
				     size_t *total)
{
	return sges_translate(pd, 0, sge, n, dir, seg, nseg, total, NULL, NULL);
}

void sv_sges_why(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
		 enum sv_access_dir dir, char *buf, size_t size)
{
	char why[160];

	snprintf(buf, size, "%s", "");
	for (uint32_t i = 0; i < n; i++) {
		sv_mr_why(pd, 0, sge[i].lkey, sge[i].addr, sge[i].length, dir, why, sizeof(why));
		if (why[0]) {
			snprintf(buf, size, "sge[%u] %s", i, why);
			return;
		}
	}
}

enum ibv_wc_status sv_sges_to_place(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
				    enum sv_access_dir dir, struct iovec *seg, int *nseg,
				    size_t *total)
{
	enum ibv_wc_status st;

	sv_mr_rdlock();
	st = sv_sges_translate(pd, sge, n, dir, seg, nseg, total);
	sv_mr_unlock();
	return st;
}

static enum ibv_wc_status place_aim(struct sv_place *p, struct ibv_pd *pd, uint32_t qpn,
				    const struct sv_sge *sge, uint32_t n, enum sv_access_dir dir,
				    size_t *total)
{
	enum ibv_wc_status st;

	sv_mr_rdlock();
	st = sges_translate(pd, qpn, sge, n, dir, p->seg, &p->nseg, total, p->key, p->va);
	p->epoch = sv_mr_epoch;
	sv_mr_unlock();
	p->pd = pd;
	p->qpn = qpn;
	p->dir = dir;
	p->discard = st != IBV_WC_SUCCESS;
	return st;
}

enum ibv_wc_status sv_place_sges(struct sv_place *p, struct ibv_pd *pd,
				 const struct sv_sge *sge, uint32_t n, enum sv_access_dir dir,
				 size_t *total)
{
	return place_aim(p, pd, 0, sge, n, dir, total);
}

bool sv_place_mr(struct sv_place *p, struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t va,
		 uint32_t len, enum sv_access_dir dir)
{
	struct sv_sge sge = { .addr = va, .length = len, .lkey = key };
	size_t total;

	return place_aim(p, pd, qpn, &sge, 1, dir, &total) == IBV_WC_SUCCESS;
}

/* With the MR lock held, the epoch moved: does every segment not yet
 * filled still translate to the same memory? */
static bool still_registered(struct sv_place *p)
{
	for (int i = p->cur; i < p->nseg; i++)
		if (!sv_mr_still(p->pd, p->qpn, p->key[i], p->va[i], p->seg[i].iov_len, p->dir,
				 p->seg[i].iov_base))
			return false;
	p->epoch = sv_mr_epoch;
	return true;
}

bool sv_place_hold(struct sv_place *p)
{
	sv_mr_rdlock();
	if (__builtin_expect(p->epoch == sv_mr_epoch, 1) || still_registered(p))
		return true;
	sv_mr_unlock();
	p->discard = true;
	p->revoked = true;
	return false;
}

/* Copy staged bytes to the destination segments (registered memory).
 * That is DMA into the application's buffers: hidden from TSan (util/tsan.h).
 * The last byte of each piece is stored after the rest, as a NIC's DMA
 * writes in address order: programs poll the last byte of an RDMA WRITE
 * (perftest, riostream), and memcpy's string stores may become visible out
 * of order. */
void sv_place_copy(struct sv_place *p, const uint8_t *src, size_t n)
{
	if (p->discard || !sv_place_hold(p))
		return;
	sv_dma_begin();
	while (n && p->cur < p->nseg) {
		size_t room = p->seg[p->cur].iov_len - p->cur_off;
		size_t k = n < room ? n : room;
		uint8_t *dst = (uint8_t *)p->seg[p->cur].iov_base + p->cur_off;

		if (!k)
			break;
		memcpy(dst, src, k - 1);
		__atomic_store_n(dst + k - 1, src[k - 1], __ATOMIC_RELEASE);
		src += k;
		n -= k;
		sv_place_advance(p, k);
	}
	sv_dma_end();
	sv_mr_unlock();
}
