/* ibv_req_notify_cq(cq, 1): only a solicited completion raises the event. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open_ch(&p, &o, NULL);
	struct ibv_comp_channel *ch = p.ch;

	CHECK_OK(ibv_req_notify_cq(p.b.cq, 1));
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_recv(p.b.qp, 2, p.b.buf + 64, 64, p.b.mr->lkey));

	/* Unsolicited SEND: completes, but no event. */
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 10, p.a.buf, 8, p.a.mr->lkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK(!t_fd_ready(ch->fd, 300));

	/* Solicited SEND: the event fires. */
	struct ibv_sge sge = { (uintptr_t)p.a.buf, 8, p.a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED }, *bad;
	CHECK_OK(ibv_post_send(p.a.qp, &wr, &bad));
	CHECK(t_fd_ready(ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == p.b.cq);
	ibv_ack_cq_events(ev_cq, 1);
	wc = t_wc(p.b.cq, 1000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(t_poll(p.a.cq, &wc, 1, 1000) + t_poll(p.a.cq, &wc, 1, 1000), 2);

	t_pair_close(&p);
	return 0;
}
