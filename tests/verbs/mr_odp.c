/* On-demand paging (ibv_reg_mr(3) IBV_ACCESS_ON_DEMAND, ibv_advise_mr(3)):
 *   - the device reports ODP, implicit too, for RC, UC and UD;
 *   - SEND, RDMA WRITE, READ and atomics work on explicit ODP MRs at both
 *     ends, and on an implicit one (addr NULL, length SIZE_MAX) that covers
 *     any memory of the process: the heap, the stack, a fresh mapping;
 *   - ODP MRs follow the page tables: a buffer remapped after
 *     registration is what the next access sees;
 *   - ibv_advise_mr prefetches ODP ranges and answers EINVAL, EFAULT and
 *     EPERM as its man page says. */
#include "common.h"

#include <stdint.h>
#include <sys/mman.h>

#define ODP (IBV_ACCESS_ON_DEMAND)

static void caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;

	CHECK_OK(ibv_query_device_ex(ctx, NULL, &a));
	CHECK(a.odp_caps.general_caps & IBV_ODP_SUPPORT);
	CHECK(a.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT);
	CHECK_EQ(a.odp_caps.per_transport_caps.rc_odp_caps & 0x3f, 0x3f);
	CHECK(a.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_SEND);
	CHECK(a.odp_caps.per_transport_caps.ud_odp_caps & IBV_ODP_SUPPORT_RECV);
	/* XRC: all of RC's but receives, which are its SRQs' */
	CHECK_EQ(a.xrc_odp_caps, IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_SRQ_RECV |
		 IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC);
}

/* SEND, WRITE, READ and an atomic between a's buffer and b's. */
static void traffic(struct t_pair *p, uint8_t *abuf, uint32_t alkey, uint8_t *bbuf,
		    uint32_t blkey, uint32_t brkey, uint8_t seed)
{
	struct ibv_wc wc;

	t_fill(abuf, 1000, seed);
	CHECK_OK(t_post_recv(p->b.qp, 1, bbuf, 1000, blkey));
	CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, 2, abuf, 1000, alkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	wc = t_wc(p->b.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK(t_check_fill(bbuf, 1000, seed));

	t_fill(abuf, 3000, (uint8_t)(seed + 1));
	CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, 3, abuf, 3000, alkey,
			     (uintptr_t)bbuf + 1000, brkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(bbuf + 1000, 3000, (uint8_t)(seed + 1)));

	t_fill(bbuf + 4096, 2000, (uint8_t)(seed + 2));
	CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_READ, 4, abuf + 4096, 2000, alkey,
			     (uintptr_t)bbuf + 4096, brkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(abuf + 4096, 2000, (uint8_t)(seed + 2)));

	*(uint64_t *)(void *)(bbuf + 8192) = 40;
	CHECK_OK(t_post_atomic(p->a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, abuf + 8192, alkey,
			       (uintptr_t)bbuf + 8192, brkey, 2, 0));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_EQ(*(uint64_t *)(void *)(abuf + 8192), 40);
	CHECK_EQ(*(uint64_t *)(void *)(bbuf + 8192), 42);
}

static void explicit_odp(void)
{
	struct t_opts o;
	struct t_pair p;

	t_opts_default(&o, IBV_QPT_RC);
	o.mr_access = T_ALL_ACCESS | ODP;
	t_pair_open(&p, &o);
	caps(p.ctx);
	traffic(&p, p.a.buf, p.a.mr->lkey, p.b.buf, p.b.mr->lkey, p.b.mr->rkey, 1);
	t_pair_close(&p);
}

/* Implicit MRs at both ends: memory that was never registered itself. */
static void implicit_odp(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_mr *ia, *ib;
	static uint8_t bss[16384] __attribute__((aligned(8)));
	uint8_t *heap = malloc(16384), *fresh;

	CHECK(heap != NULL);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	ia = CHECK_PTR(ibv_reg_mr(p.a.pd, NULL, SIZE_MAX, T_ALL_ACCESS | ODP));
	ib = CHECK_PTR(ibv_reg_mr(p.b.pd, NULL, SIZE_MAX, T_ALL_ACCESS | ODP));
	CHECK(ia->addr == NULL);
	CHECK_EQ(ia->length, SIZE_MAX);
	traffic(&p, heap, ia->lkey, bss, ib->lkey, ib->rkey, 10);

	/* a mapping made after the registration, then replaced by another */
	fresh = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(fresh != MAP_FAILED);
	traffic(&p, heap, ia->lkey, fresh, ib->lkey, ib->rkey, 20);
	CHECK(mmap(fresh, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		   -1, 0) == fresh);
	CHECK_EQ(fresh[1000], 0);                /* the new pages, not the old */
	traffic(&p, heap, ia->lkey, fresh, ib->lkey, ib->rkey, 30);
	CHECK_OK(munmap(fresh, 16384));

	/* the implicit form only: with huge pages or zero-based, EINVAL */
	CHECK_NULL_ERRNO(ibv_reg_mr(p.a.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | ODP |
				    IBV_ACCESS_HUGETLB), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_mr(p.a.pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE | ODP), EFAULT);
	CHECK_NULL_ERRNO(ibv_reg_mr(p.a.pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE), EFAULT);
	CHECK_OK(ibv_dereg_mr(ia));
	CHECK_OK(ibv_dereg_mr(ib));
	t_pair_close(&p);
	free(heap);
}

static int advise(struct ibv_pd *pd, int advice, uint32_t flags, void *addr, uint32_t len,
		  uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };

	return ibv_advise_mr(pd, advice, flags, &sge, 1);
}

/* A page nothing is mapped at, and that stays so: the middle of three
 * reserved, given back while its neighbours stay.  Two pages given back
 * alone joined the free range below the lowest mapping, where the next
 * mapping of any size goes: under ASan one came in before the check. */
static uint8_t *unmapped_page(void)
{
	uint8_t *r = mmap(NULL, 3 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(r != MAP_FAILED);
	CHECK_OK(munmap(r + 4096, 4096));
	return r + 4096;
}

static void advise_mr(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx)), *other = CHECK_PTR(ibv_alloc_pd(ctx));
	uint8_t *buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *odp, *ro, *plain, *imp;
	uint8_t *hole;
	const uint32_t F = IBV_ADVISE_MR_FLAG_FLUSH;

	CHECK(buf != MAP_FAILED);
	odp = CHECK_PTR(ibv_reg_mr(pd, buf, 32768, IBV_ACCESS_LOCAL_WRITE | ODP));
	ro = CHECK_PTR(ibv_reg_mr(pd, buf, 32768, ODP));
	plain = CHECK_PTR(ibv_reg_mr(pd, buf + 32768, 32768, IBV_ACCESS_LOCAL_WRITE));
	imp = CHECK_PTR(ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | ODP));

	CHECK_OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, F, buf, 32768, odp->lkey));
	CHECK_OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, buf + 100, 5000, odp->lkey));
	CHECK_OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, F, buf, 32768, ro->lkey));
	CHECK_OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, F, buf, 32768, ro->lkey));
	CHECK_OK(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, F, buf + 40000, 100, imp->lkey));
	/* not an ODP MR; no such key or another PD's; out of the MR */
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, F, buf + 32768, 4096, plain->lkey),
		  EINVAL);
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, F, buf, 4096, odp->lkey ^ 0x80),
		  EFAULT);
	CHECK_ERR(advise(other, IBV_ADVISE_MR_ADVICE_PREFETCH, F, buf, 4096, odp->lkey), EFAULT);
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, F, buf + 32000, 4096, odp->lkey),
		  EFAULT);
	/* writable prefetch of memory registered without local write */
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, F, buf, 4096, ro->lkey), EPERM);
	/* flags, advice, an empty list */
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, buf, 4096, odp->lkey), EINVAL);
	CHECK_ERR(advise(pd, 7, F, buf, 4096, odp->lkey), EINVAL);
	CHECK_ERR(ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, F, NULL, 0), EINVAL);
	/* an implicit MR's range that is not mapped */
	hole = unmapped_page();
	CHECK_ERR(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, F, hole, 4096, imp->lkey), EFAULT);
	CHECK_OK(munmap(hole - 4096, 3 * 4096));

	CHECK_OK(ibv_dereg_mr(imp));
	CHECK_OK(ibv_dereg_mr(plain));
	CHECK_OK(ibv_dereg_mr(ro));
	CHECK_OK(ibv_dereg_mr(odp));
	CHECK_OK(munmap(buf, 65536));
	CHECK_OK(ibv_dealloc_pd(other));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	t_alarm(40);
	explicit_odp();
	implicit_odp();
	advise_mr();
	return 0;
}
