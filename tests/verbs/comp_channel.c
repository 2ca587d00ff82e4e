/* Completion channel: the fd becomes readable after an armed CQ gets a
 * completion; ibv_get_cq_event returns that CQ and its context; one event
 * per arming. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	int magic;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open_ch(&p, &o, &magic);
	struct ibv_comp_channel *ch = p.ch;
	CHECK(ch->fd >= 0);

	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK(!t_fd_ready(ch->fd, 50));

	CHECK_OK(t_post_recv(p.b.qp, 7, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 32, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK(t_fd_ready(ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == p.b.cq);
	CHECK(ev_ctx == &magic);
	ibv_ack_cq_events(ev_cq, 1);
	wc = t_wc(p.b.cq, 1000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.byte_len, 32);
	CHECK_STATUS(t_wc(p.a.cq, 1000), IBV_WC_SUCCESS);

	/* Not re-armed: a second completion raises no event. */
	CHECK_OK(t_post_recv(p.b.qp, 8, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 32, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.b.cq, 2000);
	CHECK_EQ(wc.wr_id, 8);
	CHECK(!t_fd_ready(ch->fd, 200));
	CHECK_STATUS(t_wc(p.a.cq, 1000), IBV_WC_SUCCESS);

	/* Re-armed: the next one does. */
	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK_OK(t_post_recv(p.b.qp, 9, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 3, p.a.buf, 32, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK(t_fd_ready(ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == p.b.cq);
	ibv_ack_cq_events(ev_cq, 1);
	CHECK_EQ(t_wc(p.b.cq, 1000).wr_id, 9);
	CHECK_STATUS(t_wc(p.a.cq, 1000), IBV_WC_SUCCESS);

	t_pair_close(&p);
	return 0;
}
