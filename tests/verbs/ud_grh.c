/* UD receive: the first 40 bytes of the receive buffer are the GRH area, the
 * data lands at offset 40, byte_len = len + 40; IBV_WC_GRH is set when the
 * sender's AH is global and not when it addresses by LID. */
#include "common.h"

static void send_one(struct t_ep *a, struct t_ep *b, struct ibv_ah *ah, uint32_t qkey,
		     uint32_t len, uint8_t seed, struct ibv_wc *wc)
{
	memset(b->buf, 0xcc, 4096 + 64);
	CHECK_OK(t_post_recv(b->qp, seed, b->buf, 40 + 4096, b->mr->lkey));
	t_fill(a->buf, len, seed);
	CHECK_OK(t_post_ud(a->qp, seed, a->buf, len, a->mr->lkey, ah, b->qp->qp_num, qkey,
			   IBV_SEND_SIGNALED));
	struct ibv_wc s = t_wc(a->cq, 2000);
	CHECK_STATUS(s, IBV_WC_SUCCESS);
	CHECK_EQ(s.opcode, IBV_WC_SEND);
	*wc = t_wc(b->cq, 2000);
	CHECK_STATUS(*wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc->wr_id, seed);
	CHECK_EQ(wc->opcode, IBV_WC_RECV);
	CHECK_EQ(wc->byte_len, len + 40);
	CHECK_EQ(wc->src_qp, a->qp->qp_num);
	CHECK_EQ(wc->qp_num, b->qp->qp_num);
	CHECK(t_check_fill(b->buf + 40, len, seed));
	CHECK_EQ(b->buf[40 + len], 0xcc);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	struct ibv_ah *by_lid = t_pair_open_ud(&p, &o, false);
	struct ibv_ah *by_gid = t_ah(p.a.pd, &p.ib, true);

	send_one(&p.a, &p.b, by_lid, o.qkey, 100, 1, &wc);
	CHECK_EQ(wc.wc_flags & IBV_WC_GRH, 0);
	CHECK_EQ(wc.slid, p.ia.lid);

	send_one(&p.a, &p.b, by_gid, o.qkey, 4096, 2, &wc);     /* a full MTU */
	CHECK(wc.wc_flags & IBV_WC_GRH);
	struct ibv_grh *grh = (struct ibv_grh *)p.b.buf;
	CHECK(memcmp(&grh->sgid, &p.ia.gid, 16) == 0);
	CHECK(memcmp(&grh->dgid, &p.ib.gid, 16) == 0);
	/* ... which is enough to answer the sender (ibv_create_ah_from_wc). */
	struct ibv_ah *back = CHECK_PTR(ibv_create_ah_from_wc(p.b.pd, &wc, grh, 1));
	send_one(&p.b, &p.a, back, o.qkey, 10, 3, &wc);

	CHECK_OK(ibv_destroy_ah(back));
	CHECK_OK(ibv_destroy_ah(by_lid));
	CHECK_OK(ibv_destroy_ah(by_gid));
	t_pair_close(&p);
	return 0;
}
