/* Posting more WRs than the queue holds: ENOMEM, *bad_wr = the first that
 * did not fit (send queue and receive queue). */
#include "common.h"

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ib;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.max_send_wr = 8;
	o.max_recv_wr = 8;
	o.timeout = 20;          /* no ack timeout during the test */
	t_ep_create(&a, ctx, &o);
	t_ep_create(&b, ctx, &o);   /* stays in RESET: a's requests go unanswered */
	t_ep_info(&b, &ib);
	t_ep_connect(&a, &o, &ib);
	CHECK_OK(ibv_query_qp(a.qp, &qa, IBV_QP_CAP, &qi));
	uint32_t ns = qi.cap.max_send_wr, nr = qi.cap.max_recv_wr;
	CHECK(ns >= 8 && ns <= 1024 && nr >= 8 && nr <= 1024);

	/* receive queue */
	struct ibv_sge sge = { (uintptr_t)a.buf, 64, a.mr->lkey };
	struct ibv_recv_wr *rw = calloc(nr + 1, sizeof(*rw)), *rbad = NULL;
	for (uint32_t i = 0; i <= nr; i++)
		rw[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
					      .next = i < nr ? &rw[i + 1] : NULL };
	CHECK_ERR(ibv_post_recv(a.qp, rw, &rbad), ENOMEM);
	CHECK(rbad == &rw[nr]);
	CHECK_ERR(t_post_recv(a.qp, 1000, a.buf, 64, a.mr->lkey), ENOMEM);

	/* send queue */
	struct ibv_send_wr *sw = calloc(ns + 1, sizeof(*sw)), *sbad = NULL;
	for (uint32_t i = 0; i <= ns; i++)
		sw[i] = (struct ibv_send_wr){ .wr_id = i, .sg_list = &sge, .num_sge = 1,
					      .opcode = IBV_WR_SEND,
					      .next = i < ns ? &sw[i + 1] : NULL };
	CHECK_ERR(ibv_post_send(a.qp, sw, &sbad), ENOMEM);
	CHECK(sbad == &sw[ns]);
	CHECK_ERR(t_post_send(a.qp, IBV_WR_SEND, 1000, a.buf, 64, a.mr->lkey, 0), ENOMEM);

	free(rw);
	free(sw);
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
