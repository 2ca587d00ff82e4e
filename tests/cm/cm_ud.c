// SPDX-License-Identifier: MIT
/*
 * UD service lookups (RDMA_PS_UDP) between two processes and multicast
 * joins: CONNECT_REQUEST/ESTABLISHED with ud params, private data limits
 * (180 / 136, over them EINVAL), reject and no-listener as UNREACHABLE with
 * the SIDR status, MULTICAST_JOIN/leave, join_ex flag checks.
 * Port block: 27300-27319.
 */
#include "cmtest.h"

#define PORT 27300


static void make_ud_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_UD;
	CHECK_OK(rdma_create_qp(id, NULL, &a));
	/* UD QPs are ready to send at once, with the rdma_cm qkey */
	CHECK_OK(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &ia));
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qa.qkey, RDMA_UDP_QKEY);
}

static struct rdma_cm_id *ud_client(struct rdma_event_channel *ch, uint16_t port)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = loop_addr(port);

	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 2000);
	CHECK_OK(rdma_resolve_route(id, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 2000);
	make_ud_qp(id);
	return id;
}

static int client(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint8_t pd[200];
	unsigned i;

	(void)arg;
	to_child_wait();
	id = ud_client(ch, PORT);
	memset(&cp, 0, sizeof(cp));
	for (i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)i;
	cp.private_data = pd;
	cp.private_data_len = 181;
	CHECK_ERR(rdma_connect(id, &cp), EINVAL);
	cp.private_data_len = 180;
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CHECK_EQ(ev->status, 0);
	CHECK_EQ(ev->param.ud.private_data_len, 136);
	CHECK(!memcmp(ev->param.ud.private_data, pd + 10, 136));
	CHECK(ev->param.ud.qp_num != 0);
	CHECK_EQ(ev->param.ud.qkey, RDMA_UDP_QKEY);
	CHECK_EQ(ev->param.ud.ah_attr.port_num, 1);
	CHECK(ev->param.ud.ah_attr.is_global);
	{
		struct ibv_ah *ah = ibv_create_ah(id->pd, &ev->param.ud.ah_attr);

		CHECK(ah);
		ibv_destroy_ah(ah);
	}
	CHECK_OK(rdma_ack_cm_event(ev));
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	/* rejected lookup: UNREACHABLE with SIDR status 2 and the data */
	id = ud_client(ch, PORT);
	cp.private_data_len = 4;
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_UNREACHABLE, 5000);
	CHECK_EQ(ev->status, 2);
	CHECK_EQ(ev->param.ud.private_data_len, 136);
	CHECK(!memcmp(ev->param.ud.private_data, "nope", 4));
	CHECK_OK(rdma_ack_cm_event(ev));
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	/* no listener: UNREACHABLE with SIDR status 1 (unsupported) */
	id = ud_client(ch, PORT + 1);
	CHECK_OK(rdma_connect(id, NULL));
	expect_ack(ch, RDMA_CM_EVENT_UNREACHABLE, 1, 1000);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}

static void test_lookup(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct sockaddr_in a = loop_addr(PORT);
	uint8_t pd[200];
	unsigned i;
	pid_t pid;

	CHECK_OK(rdma_create_id(ch, &l, NULL, RDMA_PS_UDP));
	CHECK_OK(rdma_bind_addr(l, (struct sockaddr *)&a));
	CHECK_OK(rdma_listen(l, 4));
	pid = run_role("client");
	to_child_post();

	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	id = ev->id;
	CHECK_EQ(ev->param.ud.private_data_len, 180);
	for (i = 0; i < 180; i++)
		CHECK_EQ(((uint8_t *)ev->param.ud.private_data)[i], i);
	CHECK_EQ(id->qp_type, IBV_QPT_UD);
	CHECK_OK(rdma_ack_cm_event(ev));
	make_ud_qp(id);
	memset(&cp, 0, sizeof(cp));
	for (i = 0; i < sizeof(pd); i++)
		pd[i] = (uint8_t)(i + 10);
	cp.private_data = pd;
	cp.private_data_len = 137;
	CHECK_ERR(rdma_accept(id, &cp), EINVAL);
	cp.private_data_len = 136;
	CHECK_OK(rdma_accept(id, &cp));
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	CHECK_ERR(rdma_reject(ev->id, "toolong", 137), EINVAL);
	CHECK_OK(rdma_reject(ev->id, "nope", 4));
	CHECK_OK(rdma_destroy_id(ev->id));
	CHECK_OK(rdma_ack_cm_event(ev));

	CHECK_EQ(wait_child(pid), 0);
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(ch);
	MSG("UD lookup, reject, no listener: OK");
}

static void test_mcast(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *tcp;
	struct rdma_cm_event *ev;
	struct sockaddr_in grp = loop_addr(0), grp2 = loop_addr(0), bind = loop_addr(0);
	struct rdma_cm_join_mc_attr_ex ex;
	int ctx = 7;

	grp.sin_addr.s_addr = inet_addr("239.1.1.1");
	grp2.sin_addr.s_addr = inet_addr("239.1.1.2");
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP));
	CHECK_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, &ctx), EINVAL); /* unbound */
	CHECK_OK(rdma_resolve_addr(id, (struct sockaddr *)&bind, (struct sockaddr *)&grp, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 2000);
	make_ud_qp(id);
	CHECK_OK(rdma_join_multicast(id, (struct sockaddr *)&grp, &ctx));
	ev = expect_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 2000);
	CHECK_EQ(ev->status, 0);
	CHECK(ev->param.ud.private_data == &ctx);
	CHECK_EQ(ev->param.ud.qp_num, 0xffffff);
	CHECK_EQ(ev->param.ud.qkey, RDMA_UDP_QKEY);
	CHECK(ev->param.ud.ah_attr.is_global);
	CHECK_EQ(ev->param.ud.ah_attr.grh.dgid.raw[0], 0xff);	/* a multicast GID */
	CHECK(ev->param.ud.ah_attr.dlid >= 0xc000);
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK_ERR(rdma_join_multicast(id, (struct sockaddr *)&grp, &ctx), EADDRINUSE);

	memset(&ex, 0, sizeof(ex));
	ex.addr = (struct sockaddr *)&grp2;
	ex.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;	/* flags missing */
	CHECK_ERR(rdma_join_multicast_ex(id, &ex, NULL), EINVAL);
	ex.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ex.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	CHECK_ERR(rdma_join_multicast_ex(id, &ex, NULL), EINVAL);
	ex.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	CHECK_OK(rdma_join_multicast_ex(id, &ex, NULL));
	expect_ack(ch, RDMA_CM_EVENT_MULTICAST_JOIN, 0, 2000);

	CHECK_OK(rdma_leave_multicast(id, (struct sockaddr *)&grp));
	CHECK_ERR(rdma_leave_multicast(id, (struct sockaddr *)&grp), EADDRNOTAVAIL);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));	/* leaves grp2 itself */

	/* multicast is for UD ids */
	CHECK_OK(rdma_create_id(ch, &tcp, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(tcp, (struct sockaddr *)&bind));
	CHECK_ERR(rdma_join_multicast(tcp, (struct sockaddr *)&grp, NULL), EINVAL);
	CHECK_OK(rdma_destroy_id(tcp));
	rdma_destroy_event_channel(ch);
	MSG("multicast join/leave: OK");
}

static const struct cmt_role roles[] = { { "client", client }, { NULL, NULL } };

int main(int argc, char **argv)
{
	cmt_init("cm_ud", 100);
	cmt_role_dispatch(argc, argv, roles);
	need_device();
	test_lookup();
	test_mcast();
	MSG("all checks passed");
	return 0;
}
