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

/* A connected RC QP on `srq`, then moved to ERR: it raises LAST_WQE_REACHED. */
static void srq_qp_to_err(struct ibv_context *ctx, struct ibv_srq *srq, struct ibv_pd *pd,
			  struct t_ep *a, struct t_ep *b)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };

	t_ep_pair_srq(ctx, pd, srq, a, b);
	CHECK_OK(ibv_modify_qp(b->qp, &qa, IBV_QP_STATE));
}

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_pd *pd = CHECK_PTR(ibv_alloc_pd(ctx));
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = CHECK_PTR(ibv_create_srq(pd, &si));
	struct t_ep a, b;
	pthread_t th;

	t_alarm(30);
	/* gotten, acked 300 ms later from another thread: destroy waits */
	srq_qp_to_err(ctx, srq, pd, &a, &b);
	t_expect_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, &held, 5000);
	CHECK(held.element.qp == b.qp);
	uint64_t t0 = t_now_ms();
	CHECK_OK(pthread_create(&th, NULL, ack_later, NULL));
	CHECK_OK(ibv_destroy_qp(b.qp));
	uint64_t waited = t_now_ms() - t0;
	b.qp = NULL;
	CHECK_OK(pthread_join(th, NULL));
	if (waited < 250)
		T_FAIL("ibv_destroy_qp returned after %llu ms, before the event was acked",
		       (unsigned long long)waited);
	t_ep_destroy(&a);
	t_ep_destroy(&b);

	/* raised but never gotten: destroy does not wait */
	srq_qp_to_err(ctx, srq, pd, &a, &b);
	t_sleep_ms(100);              /* let the event be queued */
	t0 = t_now_ms();
	CHECK_OK(ibv_destroy_qp(b.qp));
	b.qp = NULL;
	CHECK(t_now_ms() - t0 < 1000);
	t_ep_destroy(&a);
	t_ep_destroy(&b);

	CHECK_OK(ibv_destroy_srq(srq));
	CHECK_OK(ibv_dealloc_pd(pd));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
