/* Two processes (fork): the parent SENDs, WRITEs with immediate, READs and
 * runs a FETCH_AND_ADD against the child's buffer; the child checks what
 * arrived.  Each process opens the device after fork. */
#include "common.h"

static void child(struct t_side *s)
{
	struct t_ep *e = &s->e;

	t_fill(e->buf + 32768, 4096, 77);               /* for the READ */
	*(uint64_t *)(e->buf + 40960) = 1000;           /* for the atomic */
	CHECK_OK(t_post_recv(e->qp, 1, e->buf, 8192, e->mr->lkey));
	CHECK_OK(t_post_recv(e->qp, 2, e->buf + 8192, 64, e->mr->lkey));
	t_sync(s->fd);

	struct ibv_wc wc = t_wc(e->cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 5000);
	CHECK_EQ(wc.src_qp, s->theirs.qpn);
	CHECK(t_check_fill(e->buf, 5000, 1));
	wc = t_wc(e->cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(be32toh(wc.imm_data), 4242);
	CHECK_EQ(wc.byte_len, 3000);
	CHECK(t_check_fill(e->buf + 16384, 3000, 2));
	t_sync(s->fd);              /* parent: READ and atomic */
	t_sync(s->fd);
	/* written by the device (our progress thread): read it as an atomic */
	CHECK_EQ(__atomic_load_n((uint64_t *)(e->buf + 40960), __ATOMIC_ACQUIRE), 1007);
	t_sync(s->fd);
}

static void parent(struct t_side *s)
{
	struct t_ep *e = &s->e;
	const struct t_info *theirs = &s->theirs;
	struct ibv_wc wc;

	t_sync(s->fd);
	t_fill(e->buf, 5000, 1);
	CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 1, e->buf, 5000, e->mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	t_fill(e->buf + 8192, 3000, 2);
	struct ibv_sge sge = { (uintptr_t)e->buf + 8192, 3000, e->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(4242),
				  .wr.rdma = { theirs->addr + 16384, theirs->rkey } }, *bad;
	CHECK_OK(ibv_post_send(e->qp, &wr, &bad));
	CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
	t_sync(s->fd);

	CHECK_OK(t_post_rdma(e->qp, IBV_WR_RDMA_READ, 3, e->buf + 20000, 4096, e->mr->lkey,
			     theirs->addr + 32768, theirs->rkey, IBV_SEND_SIGNALED));
	wc = t_wc(e->cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK(t_check_fill(e->buf + 20000, 4096, 77));
	uint64_t *res = (uint64_t *)(e->buf + 30000 - 30000 % 8);
	CHECK_OK(t_post_atomic(e->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, res, e->mr->lkey,
			       theirs->addr + 40960, theirs->rkey, 7, 0));
	wc = t_wc(e->cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(*res, 1000);
	t_sync(s->fd);
	t_sync(s->fd);
}

int main(void)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	CHECK_EQ(t_two_procs(&o, &o, 30, 10000, parent, child, NULL), 0);
	return 0;
}
