/* Completion channel: the fd becomes readable after an armed CQ gets a
 * completion; ibv_get_cq_event returns that CQ and its context; one event
 * per arming. */
#include <poll.h>

#include "common.h"

static int fd_ready(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r = poll(&pfd, 1, ms);

	CHECK(r >= 0);
	return r > 0 && (pfd.revents & POLLIN);
}

int main(void)
{
	struct t_opts oa, ob;
	struct t_pair p;
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx = t_open();
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	int magic;
	struct ibv_wc wc;

	t_alarm(30);
	ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	CHECK(ch->fd >= 0);
	t_opts_default(&oa, IBV_QPT_RC);
	ob = oa;
	ob.channel = ch;
	ob.cq_context = &magic;
	/* Build the pair on our context so the channel belongs to it. */
	memset(&p, 0, sizeof(p));
	p.ctx = ctx;
	t_ep_create(&p.a, ctx, &oa);
	t_ep_create(&p.b, ctx, &ob);
	t_ep_info(&p.a, &p.ia);
	t_ep_info(&p.b, &p.ib);
	t_ep_connect(&p.a, &oa, &p.ib);
	t_ep_connect(&p.b, &ob, &p.ia);

	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK(!fd_ready(ch->fd, 50));

	CHECK_OK(t_post_recv(p.b.qp, 7, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 32, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK(fd_ready(ch->fd, 5000));
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
	CHECK(!fd_ready(ch->fd, 200));
	CHECK_STATUS(t_wc(p.a.cq, 1000), IBV_WC_SUCCESS);

	/* Re-armed: the next one does. */
	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK_OK(t_post_recv(p.b.qp, 9, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 3, p.a.buf, 32, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK(fd_ready(ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == p.b.cq);
	ibv_ack_cq_events(ev_cq, 1);
	CHECK_EQ(t_wc(p.b.cq, 1000).wr_id, 9);
	CHECK_STATUS(t_wc(p.a.cq, 1000), IBV_WC_SUCCESS);

	t_ep_destroy(&p.a);
	t_ep_destroy(&p.b);
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
