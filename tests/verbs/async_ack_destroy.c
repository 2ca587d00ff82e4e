/* ibv_destroy_qp waits until every async event it got for the QP is acked
 * (ibv_get_async_event(3)), and does not wait for events never gotten. */
#include <pthread.h>

#include "common.h"

static struct ibv_async_event held;

static void *ack_later(void *arg)
{
	(void)arg;
	t_sleep_ms(300);
	ibv_ack_async_event(&held);
	return NULL;
}

/* Move b (on the SRQ) to ERR: it raises LAST_WQE_REACHED. */
static void qp_to_err(struct t_ep *b)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

	CHECK_OK(ibv_modify_qp(b->qp, &qa, IBV_QP_STATE));
}

int main(void)
{
	struct t_srq_pair s;
	pthread_t th;

	t_alarm(30);
	/* gotten, acked 300 ms later from another thread: destroy waits */
	t_srq_pair_open(&s, 8);
	qp_to_err(&s.b);
	t_expect_async(s.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &held, 5000);
	CHECK(held.element.qp == s.b.qp);
	uint64_t t0 = t_now_ms();
	CHECK_OK(pthread_create(&th, NULL, ack_later, NULL));
	CHECK_OK(ibv_destroy_qp(s.b.qp));
	uint64_t waited = t_now_ms() - t0;
	s.b.qp = NULL;
	CHECK_OK(pthread_join(th, NULL));
	if (waited < 250)
		T_FAIL("ibv_destroy_qp returned after %llu ms, before the event was acked",
		       (unsigned long long)waited);
	t_ep_destroy(&s.a);
	t_ep_destroy(&s.b);

	/* raised but never gotten: destroy does not wait */
	t_ep_pair_srq(s.ctx, s.pd, s.srq, &s.a, &s.b);
	qp_to_err(&s.b);
	t_sleep_ms(100);              /* let the event be queued */
	t0 = t_now_ms();
	CHECK_OK(ibv_destroy_qp(s.b.qp));
	s.b.qp = NULL;
	CHECK(t_now_ms() - t0 < 1000);

	t_srq_pair_close(&s);
	return 0;
}
