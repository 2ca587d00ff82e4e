/* Every legal QP transition, with exactly its required attributes, works
 * for RC, UC and UD, and ibv_query_qp reports the new state. */
#include "common.h"

static void to(struct ibv_qp *qp, enum ibv_qp_state s, struct ibv_qp_attr *a, int mask)
{
	a->qp_state = s;
	CHECK_OK(ibv_modify_qp(qp, a, mask | IBV_QP_STATE));
	if (s == IBV_QPS_SQD)      /* draining may take a moment */
		t_wait_qp_state(qp, s, 2000);
	CHECK_EQ(t_qp_state(qp), s);
	CHECK_EQ(qp->state, s);
}

static void run(struct ibv_context *ctx, enum ibv_qp_type type)
{
	struct t_opts o;
	struct t_ep e, peer;
	struct t_info pi;
	struct ibv_qp_attr a;

	t_opts_default(&o, type);
	t_ep_create(&e, ctx, &o);
	t_ep_create(&peer, ctx, &o);
	t_ep_info(&peer, &pi);

	for (int round = 0; round < 2; round++) {
		/* RESET -> INIT */
		CHECK_OK(t_to_init(e.qp, &o));
		CHECK_EQ(t_qp_state(e.qp), IBV_QPS_INIT);
		/* INIT -> INIT (optional attributes only) */
		memset(&a, 0, sizeof(a));
		if (type == IBV_QPT_UD) {
			a.qkey = 0x42;
			to(e.qp, IBV_QPS_INIT, &a, IBV_QP_QKEY);
		} else {
			a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			to(e.qp, IBV_QPS_INIT, &a, IBV_QP_ACCESS_FLAGS);
		}
		/* INIT -> RTR -> RTS */
		CHECK_OK(t_to_rtr(e.qp, &o, &pi));
		CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RTR);
		CHECK_OK(t_to_rts(e.qp, &o, e.psn));
		CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RTS);
		/* RTS -> RTS */
		memset(&a, 0, sizeof(a));
		if (type == IBV_QPT_UD) {
			a.qkey = 0x43;
			to(e.qp, IBV_QPS_RTS, &a, IBV_QP_QKEY);
		} else {
			a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
			to(e.qp, IBV_QPS_RTS, &a, IBV_QP_ACCESS_FLAGS);
		}
		/* RTS -> SQD -> RTS */
		memset(&a, 0, sizeof(a));
		to(e.qp, IBV_QPS_SQD, &a, 0);
		to(e.qp, IBV_QPS_RTS, &a, 0);
		/* RTS -> ERR -> RESET */
		to(e.qp, IBV_QPS_ERR, &a, 0);
		to(e.qp, IBV_QPS_RESET, &a, 0);
		/* RESET -> ERR -> RESET; INIT -> RESET; RTR -> ERR */
		to(e.qp, IBV_QPS_ERR, &a, 0);
		to(e.qp, IBV_QPS_RESET, &a, 0);
		CHECK_OK(t_to_init(e.qp, &o));
		to(e.qp, IBV_QPS_RESET, &a, 0);
		CHECK_OK(t_to_init(e.qp, &o));
		CHECK_OK(t_to_rtr(e.qp, &o, &pi));
		to(e.qp, IBV_QPS_ERR, &a, 0);
		to(e.qp, IBV_QPS_RESET, &a, 0);
		/* second round: the QP is reusable after RESET */
	}
	t_ep_destroy(&e);
	t_ep_destroy(&peer);
}

int main(void)
{
	struct ibv_context *ctx = t_open();

	t_alarm(30);
	run(ctx, IBV_QPT_RC);
	run(ctx, IBV_QPT_UC);
	run(ctx, IBV_QPT_UD);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
