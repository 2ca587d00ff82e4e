/* A SEND that finds no receive.  On a ring channel (one host) it waits for
 * one up to the responder's RNR timer (engine/resp.c): with rnr_retry = 0
 * and a 491 ms timer, a receive posted 50 ms later takes it at once, and
 * both sides complete successfully.  Over TCP it is NAKed at once, as by a
 * NIC: rnr_retry = 0 fails it with RNR_RETRY_EXC_ERR, and the receiver has
 * consumed nothing. */
#include <stdlib.h>
#include <string.h>

#include "common.h"

int main(void)
{
	bool tcp = t_transport_tcp();
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.rnr_retry = 0;
	o.min_rnr_timer = 31;          /* 491.52 ms */
	t_pair_open(&p, &o);
	t_fill(p.a.buf, 100, 7);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 100, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	if (tcp) {
		wc = t_wc(p.a.cq, 5000);
		CHECK_EQ(wc.wr_id, 1);
		CHECK_STATUS(wc, IBV_WC_RNR_RETRY_EXC_ERR);
		CHECK_OK(t_post_recv(p.b.qp, 2, p.b.buf, 4096, p.b.mr->lkey));
		t_no_wc(p.b.cq, 50);
		t_pair_close(&p);
		return 0;
	}
	t_no_wc(p.a.cq, 50);            /* held, not NAKed */
	CHECK_OK(t_post_recv(p.b.qp, 2, p.b.buf, 4096, p.b.mr->lkey));
	/* taken when posted, not when the timer runs out 440 ms later */
	wc = t_wc(p.b.cq, 300);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, 100);
	CHECK(t_check_fill(p.b.buf, 100, 7));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	/* the next SEND finds its receive at once, and the held state is gone */
	CHECK_OK(t_post_recv(p.b.qp, 3, p.b.buf, 4096, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 4, p.a.buf, 100, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.b.cq, 5000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_RTS);
	t_pair_close(&p);
	return 0;
}
