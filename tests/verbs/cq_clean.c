/* A QP that goes to RESET or is destroyed takes its unpolled completions
 * out of its CQs, as hardware providers do: middleware (libfabric's rxm)
 * closes an endpoint and then drains the CQ, and an entry of the destroyed
 * QP would name a context it has freed.  Receives taken from an SRQ stay,
 * since their buffers belong to the SRQ; other QPs' entries stay. */
#include "common.h"

/* n SENDs from a to b, all landed: b's receive completions sit unpolled. */
static void deliver(struct t_ep *a, struct t_ep *b, struct ibv_srq *srq, int n)
{
	for (int i = 0; i < n; i++) {
		if (srq)
			CHECK_OK(t_post_srq_recv(srq, 100 + i, b->buf, 64, b->mr->lkey));
		else
			CHECK_OK(t_post_recv(b->qp, 100 + i, b->buf, 64, b->mr->lkey));
	}
	for (int i = 0; i < n; i++)
		CHECK_OK(t_post_send(a->qp, IBV_WR_SEND, i, a->buf, 8, a->mr->lkey,
				     IBV_SEND_SIGNALED));
	for (int i = 0; i < n; i++)
		CHECK_STATUS(t_wc(a->cq, 5000), IBV_WC_SUCCESS);
	/* The receive completion is written before the ACK leaves, but give a
	 * slow responder its moment anyway: a late one would fail the test. */
	t_sleep_ms(20);
}

static void reset_takes_completions(const struct t_opts *o)
{
	struct t_pair p;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	t_pair_open(&p, o);
	deliver(&p.a, &p.b, NULL, 2);
	CHECK_OK(ibv_modify_qp(p.b.qp, &attr, IBV_QP_STATE));
	t_no_wc(p.b.cq, 100);
	t_pair_close(&p);
}

static void destroy_takes_completions(const struct t_opts *o)
{
	struct t_pair p;

	t_pair_open(&p, o);
	deliver(&p.a, &p.b, NULL, 3);
	/* a's side keeps its own entry: one more SEND, not polled. */
	CHECK_OK(t_post_recv(p.b.qp, 200, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 9, p.a.buf, 8, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	t_sleep_ms(50);
	CHECK_OK(ibv_destroy_qp(p.b.qp));
	p.b.qp = NULL;
	t_no_wc(p.b.cq, 100);
	struct ibv_wc wc = t_wc(p.a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 9);
	t_pair_close(&p);
}

static void srq_receives_stay(void)
{
	struct t_srq_pair s;

	t_srq_pair_open(&s, 16);
	deliver(&s.a, &s.b, s.srq, 1);
	CHECK_OK(ibv_destroy_qp(s.b.qp));
	s.b.qp = NULL;
	struct ibv_wc wc = t_wc(s.b.cq, 1000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 100);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	t_no_wc(s.b.cq, 50);
	t_srq_pair_close(&s);
}

int main(void)
{
	struct t_opts o;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	reset_takes_completions(&o);
	destroy_takes_completions(&o);
	srq_receives_stay();
	return 0;
}
