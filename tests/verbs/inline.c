/* IBV_SEND_INLINE: the data is copied at post time, so the buffer can be
 * reused at once; the lkey is not checked. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;
	uint8_t stack_buf[128];     /* not registered */

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.max_inline = 128;
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 256, p.b.mr->lkey));

	t_fill(stack_buf, 128, 12);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, stack_buf, 128, 0xdeadbeef,
			     IBV_SEND_INLINE | IBV_SEND_SIGNALED));
	memset(stack_buf, 0, sizeof(stack_buf));      /* reused immediately */
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 128);
	CHECK(t_check_fill(p.b.buf, 128, 12));

	/* Inline RDMA WRITE. */
	t_fill(stack_buf, 100, 13);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 2, stack_buf, 100, 0,
			     p.ib.addr + 1000, p.ib.rkey, IBV_SEND_INLINE | IBV_SEND_SIGNALED));
	memset(stack_buf, 0xff, sizeof(stack_buf));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf + 1000, 100, 13));

	/* More than max_inline_data: EINVAL. */
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	CHECK_OK(ibv_query_qp(p.a.qp, &qa, IBV_QP_CAP, &qi));
	CHECK(qi.cap.max_inline_data >= 128);
	uint32_t over = qi.cap.max_inline_data + 1;
	CHECK(over <= p.a.len);
	CHECK_ERR(t_post_send(p.a.qp, IBV_WR_SEND, 3, p.a.buf, over, p.a.mr->lkey,
			      IBV_SEND_INLINE | IBV_SEND_SIGNALED), EINVAL);
	t_no_wc(p.a.cq, 50);
	t_pair_close(&p);
	return 0;
}
