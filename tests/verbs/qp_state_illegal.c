/* Illegal transitions, missing required and extra disallowed attributes are
 * EINVAL, and leave the QP's state unchanged. */
#include "common.h"

static void rtr_attr(struct ibv_qp_attr *a, const struct t_info *r)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->ah_attr.dlid = r->lid;
	a->ah_attr.port_num = 1;
	a->path_mtu = IBV_MTU_4096;
	a->dest_qp_num = r->qpn;
	a->rq_psn = r->psn;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 1;
}

#define RC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS_MASK (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

int main(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts rc, ud;
	struct t_ep e, u;
	struct t_info self;
	struct ibv_qp_attr a;

	t_opts_default(&rc, IBV_QPT_RC);
	t_opts_default(&ud, IBV_QPT_UD);
	t_ep_create(&e, ctx, &rc);
	t_ep_create(&u, ctx, &ud);
	t_ep_info(&e, &self);

	/* RESET -> RTS / RTR directly */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTS_MASK), EINVAL);
	rtr_attr(&a, &self);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK), EINVAL);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RESET);

	/* RESET -> INIT: RC without ACCESS_FLAGS / PORT, with a DEST_QPN */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		  EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS | IBV_QP_DEST_QPN), EINVAL);
	/* bad values: port 2 */
	a.port_num = 2;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RESET);

	/* UD RESET -> INIT without QKEY; with ACCESS_FLAGS instead */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	CHECK_ERR(ibv_modify_qp(u.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		  EINVAL);
	CHECK_ERR(ibv_modify_qp(u.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_EQ(t_qp_state(u.qp), IBV_QPS_RESET);

	/* INIT -> RTR: RC without DEST_QPN; with an SQ_PSN; INIT -> RTS */
	CHECK_OK(t_to_init(e.qp, &rc));
	rtr_attr(&a, &self);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK & ~IBV_QP_DEST_QPN), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK & ~IBV_QP_AV), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK | IBV_QP_SQ_PSN), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK | IBV_QP_TIMEOUT), EINVAL);
	a.qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTS_MASK), EINVAL);
	/* CUR_STATE that is not the current state */
	rtr_attr(&a, &self);
	a.cur_qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTR_MASK | IBV_QP_CUR_STATE), EINVAL);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_INIT);

	/* RTR -> RTS without TIMEOUT; with a DEST_QPN */
	rtr_attr(&a, &self);
	CHECK_OK(ibv_modify_qp(e.qp, &a, RC_RTR_MASK));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTS_MASK & ~IBV_QP_TIMEOUT), EINVAL);
	CHECK_ERR(ibv_modify_qp(e.qp, &a, RC_RTS_MASK | IBV_QP_DEST_QPN), EINVAL);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RTR);
	CHECK_OK(ibv_modify_qp(e.qp, &a, RC_RTS_MASK));
	/* RTS -> INIT / RTR */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RTR;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RTS);

	/* UD INIT -> RTR with an address vector (UD has none) */
	CHECK_OK(t_to_init(u.qp, &ud));
	rtr_attr(&a, &self);
	CHECK_ERR(ibv_modify_qp(u.qp, &a, IBV_QP_STATE | IBV_QP_AV), EINVAL);
	CHECK_EQ(t_qp_state(u.qp), IBV_QPS_INIT);

	/* ERR -> RTS */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK_OK(ibv_modify_qp(u.qp, &a, IBV_QP_STATE));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	CHECK_ERR(ibv_modify_qp(u.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
	CHECK_EQ(t_qp_state(u.qp), IBV_QPS_ERR);

	t_ep_destroy(&e);
	t_ep_destroy(&u);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
