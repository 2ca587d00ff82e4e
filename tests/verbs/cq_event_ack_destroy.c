/* ibv_destroy_cq waits until the completion events gotten with
 * ibv_get_cq_event are acked with ibv_ack_cq_events. */
#include <pthread.h>

#include "common.h"

static struct ibv_cq *ev_cq;

static void *ack_later(void *arg)
{
	(void)arg;
	t_sleep_ms(300);
	ibv_ack_cq_events(ev_cq, 1);
	return NULL;
}

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_comp_channel *ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	struct t_opts oa, ob;
	struct t_ep a, b;
	struct t_info ia, ib;
	void *cq_ctx;
	pthread_t th;

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

	CHECK_OK(ibv_req_notify_cq(b.cq, 0));
	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 64, b.mr->lkey));
	CHECK_OK(t_post_send(a.qp, IBV_WR_SEND, 1, a.buf, 8, a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &cq_ctx));     /* blocking */
	CHECK(ev_cq == b.cq);
	CHECK_STATUS(t_wc(b.cq, 2000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);

	CHECK_OK(ibv_destroy_qp(b.qp));
	b.qp = NULL;
	uint64_t t0 = t_now_ms();
	CHECK_OK(pthread_create(&th, NULL, ack_later, NULL));
	CHECK_OK(ibv_destroy_cq(b.cq));
	uint64_t waited = t_now_ms() - t0;
	b.cq = NULL;
	CHECK_OK(pthread_join(th, NULL));
	if (waited < 250)
		T_FAIL("ibv_destroy_cq returned after %llu ms, before the event was acked",
		       (unsigned long long)waited);

	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
