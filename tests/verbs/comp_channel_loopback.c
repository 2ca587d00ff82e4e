/* One thread drives both ends of an RC pair through completion channels,
 * each CQ with its own, as rdma-core's pyverbs traffic() does with CQ
 * events: a SEND each way per round, each end's completion taken by
 * ibv_get_cq_event, ibv_ack_cq_events, ibv_req_notify_cq and a poll, the
 * sender's CQ first, one receive posted at a time.  The thread arms the
 * receiver's CQ and then sleeps on the sender's channel, whose completion
 * needs the receiver's side served: by the progress thread, since no other
 * thread will come (before, each such wait took up to 50 ms:
 * docs/measurements.md, 'One thread, both ends'). */
#include "common.h"

#define ROUNDS 64
#define LEN 8

/* One completion of `e`'s CQ, by its channel's events; `fd_first`: wait
 * for the channel's descriptor first (poll(2), as an event loop does),
 * else sleep in ibv_get_cq_event. */
static struct ibv_wc event_wc(struct t_ep *e, bool fd_first)
{
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc;
	int n;

	do {
		if (fd_first)
			CHECK(t_fd_ready(e->ch->fd, 10000));
		CHECK_OK(ibv_get_cq_event(e->ch, &cq, &ctx));
		CHECK(cq == e->cq);
		ibv_ack_cq_events(cq, 1);
		CHECK_OK(ibv_req_notify_cq(cq, 0));
		n = ibv_poll_cq(cq, 1, &wc);
		CHECK(n >= 0);
	} while (n == 0);
	return wc;
}

/* `from` sends round `i` to `to`, which reposts its receive. */
static void one_way(struct t_ep *from, struct t_ep *to, int i)
{
	struct ibv_wc wc;

	t_fill(from->buf + 4096, LEN, (uint8_t)i);
	CHECK_OK(t_post_send(from->qp, IBV_WR_SEND, i, from->buf + 4096, LEN, from->mr->lkey,
			     IBV_SEND_SIGNALED));
	wc = event_wc(from, i & 1);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_SEND);
	wc = event_wc(to, i & 1);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, LEN);
	CHECK(t_check_fill(to->buf, LEN, (uint8_t)i));
	CHECK_OK(t_post_recv(to->qp, i, to->buf, LEN, to->mr->lkey));
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(40);
	t_opts_default(&o, IBV_QPT_RC);
	o.own_channel = true;
	t_pair_open(&p, &o);
	CHECK_OK(ibv_req_notify_cq(p.a.cq, 0));
	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK_OK(t_post_recv(p.a.qp, 0, p.a.buf, LEN, p.a.mr->lkey));
	CHECK_OK(t_post_recv(p.b.qp, 0, p.b.buf, LEN, p.b.mr->lkey));
	for (int i = 0; i < ROUNDS; i++) {
		one_way(&p.a, &p.b, i);
		one_way(&p.b, &p.a, i + ROUNDS);
	}
	t_pair_close(&p);
	return 0;
}
