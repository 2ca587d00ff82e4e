/* RDMA WRITE and READ reaching outside the remote MR: IBV_WC_REM_ACCESS_ERR,
 * and no byte outside (or inside) the MR is touched: the guard bytes around
 * it stay intact, the requester's buffer is not written by a failed READ. */
#include "common.h"

#define MR_OFF 4096
#define MR_LEN 4096

struct range { int64_t off; uint32_t len; enum ibv_wr_opcode op; };

static void run(const struct range *r)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	o.mr_access = IBV_ACCESS_LOCAL_WRITE;      /* the big MRs grant nothing remote */
	t_pair_open(&p, &o);
	struct ibv_mr *mr = CHECK_PTR(ibv_reg_mr(p.b.pd, p.b.buf + MR_OFF, MR_LEN, T_ALL_ACCESS));
	memset(p.b.buf, 0x3c, 3 * 4096);           /* MR and 4 KiB of guard each side */
	memset(p.a.buf, 0x5a, 3 * 4096);
	if (r->op == IBV_WR_RDMA_WRITE)
		t_fill(p.a.buf + 4096, r->len, 1);
	uint64_t raddr = (uintptr_t)p.b.buf + MR_OFF + r->off;
	CHECK_OK(t_post_rdma(p.a.qp, r->op, 1, p.a.buf + 4096, r->len, p.a.mr->lkey, raddr,
			     mr->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	for (int i = 0; i < 3 * 4096; i++)
		if (p.b.buf[i] != 0x3c)
			T_FAIL("op %d off %lld len %u: remote byte %d changed to 0x%02x", r->op,
			       (long long)r->off, r->len, i, p.b.buf[i]);
	if (r->op == IBV_WR_RDMA_READ)
		for (int i = 4096; i < 4096 + (int)r->len; i++)
			CHECK_EQ(p.a.buf[i], 0x5a);
	CHECK_OK(ibv_dereg_mr(mr));
	t_pair_close(&p);
}

int main(void)
{
	const struct range cases[] = {
		{ MR_LEN - 100, 101, IBV_WR_RDMA_WRITE },      /* one byte past the end */
		{ -1, 100, IBV_WR_RDMA_WRITE },                /* one byte before the start */
		{ MR_LEN, 8, IBV_WR_RDMA_WRITE },              /* entirely after */
		{ 0, MR_LEN + 4096, IBV_WR_RDMA_WRITE },       /* longer than the MR */
		{ MR_LEN - 100, 101, IBV_WR_RDMA_READ },
		{ -8, 16, IBV_WR_RDMA_READ },
	};

	t_alarm(40);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run(&cases[i]);
	return 0;
}
