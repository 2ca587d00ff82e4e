/* Large SENDs (which a same-host responder pulls straight from the sender's
 * memory) gathered from 4 segments and scattered into 4 at the receiver:
 * every byte lands where it should, byte_len is the message length, and a
 * receive too small still completes with LOC_LEN_ERR. */
#include "common.h"

#define SZ (1u << 20)

static void one(struct t_pair *p, uint32_t len, uint8_t seed)
{
	struct ibv_sge ss[4], rs[4];
	struct ibv_send_wr swr = { .wr_id = seed, .sg_list = ss, .num_sge = 4,
				   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_recv_wr rwr = { .wr_id = seed, .sg_list = rs, .num_sge = 4 };
	struct ibv_send_wr *bs;
	struct ibv_recv_wr *br;
	uint32_t q = len / 4;

	t_fill(p->a.buf, len, seed);
	memset(p->b.buf, 0, SZ + 64);
	for (int i = 0; i < 4; i++) {
		/* the sender's pieces in reverse order, the receiver's in order */
		ss[i] = (struct ibv_sge){ (uintptr_t)p->a.buf + (3 - i) * q, q, p->a.mr->lkey };
		rs[i] = (struct ibv_sge){ (uintptr_t)p->b.buf + i * q, q, p->b.mr->lkey };
	}
	CHECK_OK(ibv_post_recv(p->b.qp, &rwr, &br));
	CHECK_OK(ibv_post_send(p->a.qp, &swr, &bs));
	CHECK_STATUS(t_wc(p->a.cq, 10000), IBV_WC_SUCCESS);
	struct ibv_wc wc = t_wc(p->b.cq, 10000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, len);
	for (int i = 0; i < 4; i++)
		CHECK(!memcmp(p->b.buf + i * q, p->a.buf + (3 - i) * q, q));
	CHECK_EQ(p->b.buf[len], 0);          /* nothing past the message */
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = SZ + 4096;
	t_pair_open(&p, &o);
	one(&p, SZ, 1);
	one(&p, 64 * 1024, 2);
	one(&p, 32 * 1024, 3);

	/* too small a receive: LOC_LEN_ERR at the receiver, REM_INV_REQ at the sender */
	t_fill(p.a.buf, SZ, 9);
	CHECK_OK(t_post_recv(p.b.qp, 77, p.b.buf, SZ / 2, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 78, p.a.buf, SZ, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.b.cq, 10000), IBV_WC_LOC_LEN_ERR);
	CHECK_STATUS(t_wc(p.a.cq, 10000), IBV_WC_REM_INV_REQ_ERR);
	t_pair_close(&p);
	return 0;
}
