/* RC SEND of several sizes: data, byte_len, opcodes, qp_num, src_qp, wr_id. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	const uint32_t sizes[] = { 0, 1, 63, 4096, 4097, 30000, 65536 };

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = 2 * 65536;
	t_pair_open(&p, &o);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint32_t n = sizes[i];
		uint8_t *dst = p.b.buf, *src = p.a.buf + 65536;

		memset(dst, 0xab, 65536 + 16);
		t_fill(src, n, (uint8_t)i);
		CHECK_OK(t_post_recv(p.b.qp, 1000 + i, dst, 65536, p.b.mr->lkey));
		CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, i, src, n, p.a.mr->lkey,
				     IBV_SEND_SIGNALED));
		struct ibv_wc wc = t_wc(p.a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
		CHECK_EQ(wc.opcode, IBV_WC_SEND);
		CHECK_EQ(wc.qp_num, p.a.qp->qp_num);

		wc = t_wc(p.b.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, 1000 + i);
		CHECK_EQ(wc.opcode, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, n);
		CHECK_EQ(wc.qp_num, p.b.qp->qp_num);
		CHECK_EQ(wc.src_qp, p.a.qp->qp_num);
		CHECK_EQ(wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_GRH), 0);
		CHECK(t_check_fill(dst, n, (uint8_t)i));
		/* nothing written past the message */
		CHECK_EQ(dst[n], 0xab);
	}
	t_pair_close(&p);
	return 0;
}
