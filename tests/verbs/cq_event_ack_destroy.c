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
	struct t_opts o;
	struct t_pair p;
	void *cq_ctx;
	pthread_t th;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open_ch(&p, &o, NULL);
	struct ibv_comp_channel *ch = p.ch;

	CHECK_OK(ibv_req_notify_cq(p.b.cq, 0));
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 8, p.a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_OK(ibv_get_cq_event(ch, &ev_cq, &cq_ctx));     /* blocking */
	CHECK(ev_cq == p.b.cq);
	CHECK_STATUS(t_wc(p.b.cq, 2000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);

	CHECK_OK(ibv_destroy_qp(p.b.qp));
	p.b.qp = NULL;
	uint64_t t0 = t_now_ms();
	CHECK_OK(pthread_create(&th, NULL, ack_later, NULL));
	CHECK_OK(ibv_destroy_cq(p.b.cq));
	uint64_t waited = t_now_ms() - t0;
	p.b.cq = NULL;
	CHECK_OK(pthread_join(th, NULL));
	if (waited < 250)
		T_FAIL("ibv_destroy_cq returned after %llu ms, before the event was acked",
		       (unsigned long long)waited);

	t_pair_close(&p);
	return 0;
}
