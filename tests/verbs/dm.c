/* Device memory (ibv_alloc_dm(3), ibv_reg_dm_mr(3)):
 *   - allocation within max_dm_size (ENOMEM beyond what is left), EINVAL
 *     for a comp_mask or an alignment the device does not have;
 *   - ibv_memcpy_to/from_dm in 4-byte units, inside the DM (EINVAL else);
 *   - zero-based MRs on it (EINVAL without IBV_ACCESS_ZERO_BASED or beyond
 *     the DM), which SENDs, RDMA WRITEs and READs reach by offset;
 *   - a DM with an MR on it is busy (EBUSY) until the MR goes. */
#include "common.h"

static void api(struct ibv_context *ctx, struct ibv_pd *pd)
{
	struct ibv_device_attr_ex a;
	struct ibv_alloc_dm_attr at = { .length = 4096 };
	struct ibv_dm *dm, *big;
	struct ibv_mr *mr;
	uint8_t in[256], out[256];

	CHECK_OK(ibv_query_device_ex(ctx, NULL, &a));
	CHECK(a.max_dm_size >= 65536);
	dm = CHECK_PTR(ibv_alloc_dm(ctx, &at));
	at.length = a.max_dm_size;                  /* more than is left */
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &at), ENOMEM);
	at.length = a.max_dm_size - 4096;           /* exactly what is left */
	big = CHECK_PTR(ibv_alloc_dm(ctx, &at));
	CHECK_OK(ibv_free_dm(big));
	at.length = 64;
	at.comp_mask = 1;
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &at), EINVAL);
	at.comp_mask = 0;
	at.log_align_req = 30;
	CHECK_NULL_ERRNO(ibv_alloc_dm(ctx, &at), EINVAL);

	t_fill(in, sizeof(in), 7);
	CHECK_OK(ibv_memcpy_to_dm(dm, 1024, in, sizeof(in)));
	memset(out, 0, sizeof(out));
	CHECK_OK(ibv_memcpy_from_dm(out, dm, 1024, sizeof(out)));
	CHECK(t_check_fill(out, sizeof(out), 7));
	CHECK_ERR(ibv_memcpy_to_dm(dm, 1025, in, 16), EINVAL);       /* unaligned offset */
	CHECK_ERR(ibv_memcpy_to_dm(dm, 1024, in, 15), EINVAL);       /* unaligned length */
	CHECK_ERR(ibv_memcpy_from_dm(out, dm, 4096 - 128, 256), EINVAL);   /* past the end */

	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE), EINVAL);
	CHECK_NULL_ERRNO(ibv_reg_dm_mr(pd, dm, 2048, 4096, IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_ZERO_BASED), EINVAL);
	mr = CHECK_PTR(ibv_reg_dm_mr(pd, dm, 1024, 2048, IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_ZERO_BASED));
	CHECK(mr->addr == NULL);                    /* zero-based: SGEs are offsets */
	CHECK_EQ(mr->length, 2048);
	CHECK_ERR(ibv_free_dm(dm), EBUSY);
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_free_dm(dm));
}

/* b's receive buffer and WRITE/READ target are a DM MR, at offsets. */
static void traffic(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_alloc_dm_attr at = { .length = 16384 };
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t got[2048];

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	dm = CHECK_PTR(ibv_alloc_dm(p.ctx, &at));
	mr = CHECK_PTR(ibv_reg_dm_mr(p.b.pd, dm, 4096, 8192, T_ALL_ACCESS | IBV_ACCESS_ZERO_BASED));

	t_fill(p.a.buf, 1000, 1);
	CHECK_OK(t_post_recv(p.b.qp, 1, (void *)(uintptr_t)100, 1000, mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 1000, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_OK(ibv_memcpy_from_dm(got, dm, 4096 + 100, 1000));
	CHECK(t_check_fill(got, 1000, 1));

	t_fill(p.a.buf, 2048, 2);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 3, p.a.buf, 2048, p.a.mr->lkey, 4096,
			     mr->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_OK(ibv_memcpy_from_dm(got, dm, 4096 + 4096, 2048));
	CHECK(t_check_fill(got, 2048, 2));

	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_READ, 4, p.a.buf + 8192, 2048, p.a.mr->lkey,
			     4096, mr->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.a.buf + 8192, 2048, 2));

	/* beyond the MR (8192 bytes from offset 0): the peer is refused */
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 5, p.a.buf, 64, p.a.mr->lkey, 8192 - 32,
			     mr->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_REM_ACCESS_ERR);

	CHECK_OK(ibv_dereg_mr(mr));
	CHECK_OK(ibv_free_dm(dm));
	t_pair_close(&p);
}

int main(void)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	t_alarm(30);
	ctx = t_open();
	pd = CHECK_PTR(ibv_alloc_pd(ctx));
	api(ctx, pd);
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	traffic();
	return 0;
}
