#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <sys/uio.h>

#include "transport/shm/cma.h"

int sv_cma_acquire(const struct sv_seg *seg, uint32_t pd, uint32_t rkey, uint64_t va,
		   uint64_t len, unsigned int need_access, uint32_t *announce,
		   struct sv_cma_ref *ref)
{
	uint32_t slot = rkey >> 8, seq;
	const struct sv_seg_mr *m;

	ref->announce = NULL;
	ref->raddr = va;
	/* A zero-length READ or WRITE needs no valid key or address (IB C9-88). */
	if (!len)
		return 0;
	if (slot >= SV_SEG_MR_MAX)
		return -EAGAIN;          /* not published: the owner checks it */
	m = &seg->mr[slot];
	/* announced before the check, which the owner's dereg makes fail
	 * before it looks for announcements (seq_cst both sides) */
	if (announce)
		__atomic_store_n(announce, slot + 1, __ATOMIC_SEQ_CST);
	seq = __atomic_load_n(&m->seq, __ATOMIC_SEQ_CST);
	if (!(seq & 1) && __atomic_load_n(&m->key, __ATOMIC_SEQ_CST) == rkey &&
	    (m->access & SV_SEG_WINDOW)) {
		if (announce)
			__atomic_store_n(announce, 0, __ATOMIC_RELEASE);
		return -EAGAIN;
	}
	if ((seq & 1) || __atomic_load_n(&m->key, __ATOMIC_SEQ_CST) != rkey || m->pd != pd ||
	    (m->access & need_access) != need_access ||
	    va < m->iova || len > m->len || va - m->iova > m->len - len ||
	    __atomic_load_n(&m->seq, __ATOMIC_SEQ_CST) != seq) {
		if (announce)
			__atomic_store_n(announce, 0, __ATOMIC_RELEASE);
		return -EACCES;
	}
	ref->announce = announce;
	ref->raddr = m->addr + (va - m->iova);
	return 0;
}

void sv_cma_release(struct sv_cma_ref *ref)
{
	if (ref->announce)
		__atomic_store_n(ref->announce, 0, __ATOMIC_RELEASE);
}

ssize_t sv_cma_copy(pid_t pid, const struct iovec *local, int n, uint64_t raddr, size_t len,
		    int to_remote)
{
	size_t done = 0;

	while (done < len) {
		struct iovec loc[64];
		struct iovec rem = { (void *)(uintptr_t)(raddr + done), len - done };
		size_t skip = done;
		int k = 0;
		ssize_t r;

		for (int i = 0; i < n && k < 64; i++) {
			if (skip >= local[i].iov_len) {
				skip -= local[i].iov_len;
				continue;
			}
			loc[k].iov_base = (uint8_t *)local[i].iov_base + skip;
			loc[k].iov_len = local[i].iov_len - skip;
			skip = 0;
			k++;
		}
		r = to_remote ? process_vm_writev(pid, loc, k, &rem, 1, 0)
			      : process_vm_readv(pid, loc, k, &rem, 1, 0);
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += r;
	}
	return done;
}

ssize_t sv_cma_pull(pid_t pid, const struct iovec *local, int nl, const struct iovec *remote,
		    int nr, size_t len)
{
	ssize_t r = process_vm_readv(pid, local, nl, remote, nr, 0);

	/* one call moves it all unless a page faults: then it is an error */
	if (r < 0)
		return -errno;
	return (size_t)r == len ? r : -EFAULT;
}

bool sv_cma_probe(pid_t pid, uint64_t raddr)
{
	uint64_t v;
	struct iovec loc = { &v, sizeof(v) }, rem = { (void *)(uintptr_t)raddr, sizeof(v) };

	return process_vm_readv(pid, &loc, 1, &rem, 1, 0) == sizeof(v);
}
