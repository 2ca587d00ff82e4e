/* ibv_query_qp returns the attributes the transitions set. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	t_opts_default(&o, IBV_QPT_RC);
	o.qp_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	o.timeout = 17;
	o.retry_cnt = 5;
	o.rnr_retry = 3;
	o.min_rnr_timer = 12;
	t_pair_open(&p, &o);

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(p.a.qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT |
			      IBV_QP_PKEY_INDEX | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN |
			      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			      IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_QP_RD_ATOMIC |
			      IBV_QP_MAX_DEST_RD_ATOMIC, &ia));
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	CHECK_EQ(a.qp_access_flags, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CHECK_EQ(a.port_num, 1);
	CHECK_EQ(a.pkey_index, 0);
	CHECK_EQ(a.ah_attr.dlid, p.ib.lid);
	CHECK_EQ(a.ah_attr.port_num, 1);
	CHECK_EQ(a.path_mtu, IBV_MTU_4096);
	CHECK_EQ(a.dest_qp_num, p.b.qp->qp_num);
	CHECK_EQ(a.rq_psn, p.b.psn);
	CHECK_EQ(a.sq_psn, p.a.psn);
	CHECK_EQ(a.timeout, 17);
	CHECK_EQ(a.retry_cnt, 5);
	CHECK_EQ(a.rnr_retry, 3);
	CHECK_EQ(a.min_rnr_timer, 12);
	CHECK_EQ(a.max_rd_atomic, 16);
	CHECK_EQ(a.max_dest_rd_atomic, 16);

	/* UD: qkey */
	struct t_opts u;
	struct t_ep e;
	t_opts_default(&u, IBV_QPT_UD);
	u.qkey = 0x12345678;
	t_ep_create(&e, p.ctx, &u);
	t_ep_connect(&e, &u, NULL);
	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_QKEY | IBV_QP_SQ_PSN, &ia));
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	CHECK_EQ(a.qkey, 0x12345678);
	CHECK_EQ(a.sq_psn, e.psn);
	t_ep_destroy(&e);
	t_pair_close(&p);
	return 0;
}
