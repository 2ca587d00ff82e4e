/* ibv_req_notify_cq(cq, 1): only a solicited completion raises the event. */
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
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_context *ctx = t_open();
	struct ibv_comp_channel *ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&oa, IBV_QPT_RC);
	ob = oa;
	ob.channel = ch;
	t_ep_create(&a, ctx, &oa);
	t_ep_create(&b, ctx, &ob);
	t_ep_info(&a, &ia);
	t_ep_info(&b, &ib);
	t_ep_connect(&a, &oa, &ib);
	t_ep_connect(&b, &ob, &ia);

	CHECK_OK(ibv_req_notify_cq(b.cq, 1));
	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 64, b.mr->lkey));
	CHECK_OK(t_post_recv(b.qp, 2, b.buf + 64, 64, b.mr->lkey));

	/* Unsolicited SEND: completes, but no event. */
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 10, a.buf, 8, a.mr->lkey, IBV_SEND_SIGNALED));
	wc = t_wc(b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 1);
	CHECK(!fd_ready(ch->fd, 300));

	/* Solicited SEND: the event fires. */
	struct ibv_sge sge = { (uintptr_t)a.buf, 8, a.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 11, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED }, *bad;
	CHECK_OK(ibv_post_send(a.qp, &wr, &bad));
	CHECK(fd_ready(ch->fd, 5000));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx));
	CHECK(ev_cq == b.cq);
	ibv_ack_cq_events(ev_cq, 1);
	wc = t_wc(b.cq, 1000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(t_poll(a.cq, &wc, 1, 1000) + t_poll(a.cq, &wc, 1, 1000), 2);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
