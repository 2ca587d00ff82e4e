// SPDX-License-Identifier: MIT
/*
 * QP/SRQ/CQ management through an rdma_cm_id: rdma_create_qp(_ex),
 * rdma_destroy_qp, rdma_create_srq(_ex), rdma_destroy_srq, rdma_init_qp_attr
 * before a connection, XRC initiator and target QPs and the XRC SRQ, ECE calls.
 * Port block: 27400-27419 (only bound, never connected).
 */
#include "cmtest.h"

static struct rdma_cm_id *bound_id(struct rdma_event_channel *ch, enum rdma_port_space ps)
{
	struct rdma_cm_id *id;
	struct sockaddr_in a = loop_addr(0), dst = loop_addr(27419);

	/* Binding 127.0.0.1 attaches no device (as in the kernel); resolving
	 * it does, and leaves the id bound to a local port. */
	CHECK_OK(rdma_create_id(ch, &id, NULL, ps));
	CHECK_OK(rdma_resolve_addr(id, (struct sockaddr *)&a, (struct sockaddr *)&dst, 1000));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 1000);
	CHECK(id->verbs);
	return id;
}

int main(void)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr a;
	struct ibv_qp_init_attr_ex ax;
	struct ibv_srq_init_attr sa;
	struct ibv_srq_init_attr_ex sx;
	struct ibv_qp_attr qa;
	struct ibv_ece ece = { .vendor_id = 0x1234, .options = 5 }, got;
	uint32_t srqn;
	int mask;

	cmt_init("cm_qp", 60);
	need_device();
	ch = rdma_create_event_channel();
	CHECK(ch);

	/* not bound: no device to make a QP on */
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	memset(&a, 0, sizeof(a));
	a.cap.max_send_wr = a.cap.max_recv_wr = 2;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	CHECK_ERR(rdma_create_qp(id, NULL, &a), EINVAL);
	qa.qp_state = IBV_QPS_INIT;
	CHECK_ERR(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
	CHECK_OK(rdma_destroy_id(id));

	/* RC QP with CM-made CQs and the default PD, left in INIT */
	id = bound_id(ch, RDMA_PS_TCP);
	CHECK_OK(rdma_create_qp(id, NULL, &a));
	CHECK(id->qp && id->pd && id->send_cq && id->recv_cq);
	CHECK(a.send_cq == id->send_cq && a.recv_cq == id->recv_cq);
	CHECK(id->send_cq->cq_context == id && id->recv_cq->cq_context == id);
	CHECK(id->send_cq->channel == id->send_cq_channel);
	CHECK_OK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE, &a));
	CHECK_EQ(qa.qp_state, IBV_QPS_INIT);
	CHECK_ERR(rdma_create_qp(id, NULL, &a), EINVAL);	/* one QP per id */
	qa.qp_state = IBV_QPS_INIT;
	CHECK_OK(rdma_init_qp_attr(id, &qa, &mask));
	CHECK_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK_EQ(qa.port_num, 1);
	qa.qp_state = IBV_QPS_RTR;	/* no peer yet */
	CHECK_ERR(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
	qa.qp_state = IBV_QPS_SQD;
	CHECK_ERR(rdma_init_qp_attr(id, &qa, &mask), EINVAL);
	/* ECE needs an id without QP */
	CHECK_ERR(rdma_set_local_ece(id, &ece), EINVAL);
	rdma_destroy_qp(id);
	CHECK(!id->qp && !id->send_cq && !id->recv_cq && !id->send_cq_channel);
	CHECK_OK(rdma_set_local_ece(id, &ece));
	CHECK_OK(rdma_get_remote_ece(id, &got));
	CHECK_EQ(got.vendor_id, 0);
	ece.vendor_id = 0;
	CHECK_ERR(rdma_set_local_ece(id, &ece), EINVAL);

	/* rdma_create_qp_ex, user PD */
	memset(&ax, 0, sizeof(ax));
	ax.cap = a.cap;
	ax.qp_type = IBV_QPT_RC;
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = ibv_alloc_pd(id->verbs);
	CHECK(ax.pd);
	CHECK_OK(rdma_create_qp_ex(id, &ax));
	CHECK(id->pd == ax.pd);
	rdma_destroy_qp(id);
	ibv_dealloc_pd(ax.pd);

	/* SRQ, then a QP using it */
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	CHECK_OK(rdma_create_srq(id, NULL, &sa));
	CHECK(id->srq);
	memset(&a, 0, sizeof(a));
	a.cap.max_send_wr = a.cap.max_recv_wr = 2;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	CHECK_OK(rdma_create_qp(id, NULL, &a));
	CHECK(id->qp->srq == id->srq);
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	CHECK(!id->srq);

	/* XRC: an initiator QP; a target QP (no PD) whose XRC SRQ takes the
	 * id's receive CQ and the device's domain, as rdma-core's does */
	memset(&ax, 0, sizeof(ax));
	ax.qp_type = IBV_QPT_XRC_SEND;
	ax.cap.max_send_wr = 1;
	ax.cap.max_send_sge = 1;
	CHECK_OK(rdma_create_qp_ex(id, &ax));
	CHECK_EQ(id->qp->qp_type, IBV_QPT_XRC_SEND);
	rdma_destroy_qp(id);
	memset(&ax, 0, sizeof(ax));
	ax.qp_type = IBV_QPT_XRC_RECV;
	ax.cap.max_recv_wr = 1;
	CHECK_OK(rdma_create_qp_ex(id, &ax));
	CHECK(id->qp->pd == NULL && id->recv_cq);
	CHECK_EQ(id->qp_type, IBV_QPT_XRC_RECV);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 1;
	sa.attr.max_sge = 1;
	CHECK_OK(rdma_create_srq(id, NULL, &sa));	/* XRC, for an XRC target's id */
	CHECK_OK(ibv_get_srq_num(id->srq, &srqn));
	CHECK(srqn != 0);
	rdma_destroy_srq(id);
	rdma_destroy_qp(id);
	memset(&sx, 0, sizeof(sx));
	sx.attr.max_wr = 1;
	sx.attr.max_sge = 1;
	sx.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
	sx.srq_type = IBV_SRQT_TM;
	CHECK_ERR(rdma_create_srq_ex(id, &sx), EOPNOTSUPP);	/* no tag matching */
	CHECK_OK(rdma_destroy_id(id));

	/* UD QP: ready to send at once */
	id = bound_id(ch, RDMA_PS_UDP);
	memset(&a, 0, sizeof(a));
	a.cap.max_send_wr = a.cap.max_recv_wr = 2;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_UD;
	CHECK_OK(rdma_create_qp(id, NULL, &a));
	CHECK_OK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &a));
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qa.qkey, RDMA_UDP_QKEY);
	qa.qp_state = IBV_QPS_INIT;
	CHECK_OK(rdma_init_qp_attr(id, &qa, &mask));
	CHECK(mask & IBV_QP_QKEY);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	rdma_destroy_event_channel(ch);
	MSG("all checks passed");
	return 0;
}
