/*
 * Held ACKs (TCP channels, engine/xmit.c): after a ping-pong the responder
 * may keep an ACK for its next request to carry.  Whatever the holder does
 * next, the requester's SEND still completes successfully: when the holder
 * answers, goes quiet (the progress thread's timer), arms its CQ, or
 * destroys its QP.  (Requesters with short ack timeouts are never held
 * for: the header carries the timeout; not tested here, as it is timing.)
 */
#include "common.h"

/* a SENDs to b, b answers: `n` round trips, each side checking both of
 * its completions. */
static void pingpong(struct t_pair *p, int n)
{
	for (int i = 0; i < n; i++) {
		CHECK_OK(t_post_recv(p->b.qp, 1, p->b.buf, 64, p->b.mr->lkey));
		CHECK_OK(t_post_recv(p->a.qp, 2, p->a.buf + 64, 64, p->a.mr->lkey));
		CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, 3, p->a.buf, 8, p->a.mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(p->b.cq, 2000), IBV_WC_SUCCESS);
		CHECK_OK(t_post_send(p->b.qp, IBV_WR_SEND, 4, p->b.buf + 64, 8, p->b.mr->lkey,
				     IBV_SEND_SIGNALED));
		for (int k = 0; k < 2; k++)
			CHECK_STATUS(t_wc(p->a.cq, 2000), IBV_WC_SUCCESS);
		CHECK_STATUS(t_wc(p->b.cq, 2000), IBV_WC_SUCCESS);
	}
}

/* The last SEND of a ping-pong: b takes it and then does `then`; a's SEND
 * must complete successfully anyway. */
enum then { THEN_SLEEP, THEN_NOTIFY, THEN_DESTROY };

static void last_send(struct t_pair *p, enum then then)
{
	struct ibv_wc wc;

	CHECK_OK(t_post_recv(p->b.qp, 1, p->b.buf, 64, p->b.mr->lkey));
	CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, 9, p->a.buf, 8, p->a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->b.cq, 2000), IBV_WC_SUCCESS);
	switch (then) {
	case THEN_SLEEP:
		t_sleep_ms(50);        /* no verbs call at all */
		break;
	case THEN_NOTIFY:
		CHECK_OK(ibv_req_notify_cq(p->b.cq, 0));
		break;
	case THEN_DESTROY:
		CHECK_OK(ibv_destroy_qp(p->b.qp));
		p->b.qp = NULL;
		break;
	}
	wc = t_wc(p->a.cq, 3000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 9);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	for (int then = THEN_SLEEP; then <= THEN_DESTROY; then++) {
		t_pair_open(&p, &o);
		pingpong(&p, 64);
		last_send(&p, then);
		t_pair_close(&p);
	}
	return 0;
}
