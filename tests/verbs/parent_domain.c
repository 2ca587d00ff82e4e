/* Parent domains and thread domains (ibv_alloc_parent_domain(3),
 * ibv_alloc_td(3)):
 *   - a parent domain is interchangeable with its protection domain: QPs on
 *     it reach MRs registered on either, in both directions;
 *   - its allocator gives the QPs' queue buffers (a send and a receive one
 *     each, zeroed, freed through its free at destroy); USE_DEFAULT falls
 *     back, NULL fails the QP with ENOMEM;
 *   - EINVAL for a parent of a parent, no PD, unknown comp_mask bits or
 *     allocators missing; EBUSY for a PD or TD still in use;
 *   - ibv_create_cq_ex takes a parent domain (IBV_CQ_INIT_ATTR_MASK_PD),
 *     not a plain PD. */
#include "common.h"

struct counts {
	int allocs, frees, types, mode;     /* mode: 0 own memory, 1 USE_DEFAULT, 2 NULL */
};

static void *my_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	struct counts *c = ctx;
	void *p;

	(void)pd;
	if (c->mode == 1)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (c->mode == 2)
		return NULL;
	CHECK(align >= 8 && !(align & (align - 1)));
	CHECK(type == 1 || type == 2);
	c->types |= 1 << type;
	CHECK_OK(posix_memalign(&p, align, size));
	memset(p, 0xa5, size);                  /* the device zeroes what it gets */
	c->allocs++;
	return p;
}

static void my_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	struct counts *c = ctx;

	(void)pd;
	(void)type;
	c->frees++;
	free(ptr);
}

static struct ibv_pd *parent(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_td *td,
			     struct counts *c)
{
	struct ibv_parent_domain_init_attr a = {
		.pd = pd, .td = td, .pd_context = c,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = my_alloc, .free = my_free,
	};

	return ibv_alloc_parent_domain(ctx, &a);
}

static void api(struct ibv_context *ctx)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx)), *par, *par2;
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_td *td = CHECK_PTR(ibv_alloc_td(ctx, &ta));
	struct ibv_parent_domain_init_attr a = { .pd = pd };
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct ibv_cq_ex *cq;
	struct counts c = { 0 };

	ta.comp_mask = 1;
	CHECK_NULL_ERRNO(ibv_alloc_td(ctx, &ta), EINVAL);
	par = CHECK_PTR(parent(ctx, pd, td, &c));
	CHECK(par->context == ctx);
	CHECK_NULL_ERRNO(parent(ctx, par, NULL, &c), EINVAL);          /* of a parent */
	CHECK_NULL_ERRNO(parent(ctx, NULL, NULL, &c), EINVAL);
	a.comp_mask = 1u << 7;
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(ctx, &a), EINVAL);
	a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;          /* but none given */
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(ctx, &a), EINVAL);
	a.comp_mask = 0;
	par2 = CHECK_PTR(ibv_alloc_parent_domain(ctx, &a));           /* no allocators */

	/* a CQ with a parent domain; not with a plain PD */
	ca.parent_domain = pd;
	CHECK_NULL_ERRNO(ibv_create_cq_ex(ctx, &ca), EINVAL);
	ca.parent_domain = par;
	cq = CHECK_PTR(ibv_create_cq_ex(ctx, &ca));

	CHECK_ERR(ibv_dealloc_td(td), EBUSY);
	CHECK_ERR(ibv_dealloc_pd(pd), EBUSY);
	CHECK_ERR(ibv_dealloc_pd(par), EBUSY);                         /* the CQ */
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
	CHECK_OK(ibv_dealloc_pd(par));
	CHECK_OK(ibv_dealloc_pd(par2));
	CHECK_OK(ibv_dealloc_td(td));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_EQ(c.allocs, 0);
}

/* QPs on parent domains; MRs on the parents and on the protection domains. */
static void traffic(struct ibv_context *ctx)
{
	struct ibv_pd *pa = CHECK_PTR(ibv_alloc_pd(ctx)), *pb = CHECK_PTR(ibv_alloc_pd(ctx));
	struct counts ca = { 0 }, cb = { .mode = 1 };
	struct t_opts oa, ob;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_mr *bmr;
	static uint8_t target[4096];

	t_opts_default(&oa, IBV_QPT_RC);
	ob = oa;
	oa.pd = CHECK_PTR(parent(ctx, pa, NULL, &ca));
	ob.pd = CHECK_PTR(parent(ctx, pb, NULL, &cb));
	t_ep_pair(ctx, &oa, &ob, &a, &b, &ia, &ib);
	CHECK_EQ(ca.allocs, 2);                     /* a's send and receive queues */
	CHECK_EQ(ca.types, (1 << 1) | (1 << 2));
	CHECK_EQ(cb.allocs, 0);                     /* USE_DEFAULT */

	/* the endpoints' MRs are on the parents; this one on b's protection domain */
	bmr = CHECK_PTR(ibv_reg_mr(pb, target, sizeof(target), T_ALL_ACCESS));
	t_fill(a.buf, 2048, 3);
	CHECK_OK(t_post_rdma(a.qp, IBV_WR_RDMA_WRITE, 1, a.buf, 2048, a.mr->lkey,
			     (uintptr_t)target, bmr->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(target, 2048, 3));
	CHECK_OK(t_post_recv(b.qp, 2, target, 1024, bmr->lkey));
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 3, a.buf, 1024, a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(b.cq, 5000), IBV_WC_SUCCESS);
	/* another protection domain's MR is still out of reach */
	{
		struct ibv_pd *other = CHECK_PTR(ibv_alloc_pd(ctx));
		struct ibv_mr *omr = CHECK_PTR(ibv_reg_mr(other, target, sizeof(target),
							  T_ALL_ACCESS));

		CHECK_OK(t_post_rdma(a.qp, IBV_WR_RDMA_WRITE, 4, a.buf, 64, a.mr->lkey,
				     (uintptr_t)target, omr->rkey, IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(a.cq, 5000), IBV_WC_REM_ACCESS_ERR);
		CHECK_OK(ibv_dereg_mr(omr));
		CHECK_OK(ibv_dealloc_pd(other));
	}
	CHECK_OK(ibv_dereg_mr(bmr));
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_EQ(ca.frees, 2);
	CHECK_OK(ibv_dealloc_pd(oa.pd));
	CHECK_OK(ibv_dealloc_pd(ob.pd));
	CHECK_OK(ibv_dealloc_pd(pa));
	CHECK_OK(ibv_dealloc_pd(pb));
}

/* An allocator that fails fails the QP. */
static void alloc_fails(struct ibv_context *ctx)
{
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct counts c = { .mode = 2 };
	struct ibv_pd *par = CHECK_PTR(parent(ctx, pd, NULL, &c));
	struct ibv_cq *cq = CHECK_PTR(ibv_create_cq(ctx, 16, NULL, NULL, 0));
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	CHECK_NULL_ERRNO(ibv_create_qp(par, &qa), ENOMEM);
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_dealloc_pd(par));
	CHECK_OK(ibv_dealloc_pd(pd));
}

int main(void)
{
	struct ibv_context *ctx;

	t_alarm(30);
	ctx = t_open();
	api(ctx);
	traffic(ctx);
	alloc_fails(ctx);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
