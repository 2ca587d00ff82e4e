// SPDX-License-Identifier: MIT
/*
 * RC connections between two processes on 127.0.0.1: every connection event
 * and status, private data at the size limits (and over them: EINVAL),
 * data through the CM-made CQs with the rdma_verbs.h inlines, disconnect and
 * timewait, user-managed QPs (CONNECT_RESPONSE + rdma_establish), the
 * synchronous rdma_create_ep API, and the failures: no listener, a peer
 * that never answers, a peer killed mid-connection; a listener that comes
 * just after the connect.
 * Port block: 27200-27219.  Run with SOFTVERBS_CM_TIMEOUT_MS=1000.
 */
#include "cmtest.h"

#include <sys/socket.h>

#define PORT 27200


static void fill(uint8_t *b, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static int same(const void *a, const uint8_t *pattern_src, size_t n, uint8_t seed)
{
	uint8_t want[256];

	(void)pattern_src;
	fill(want, n, seed);
	return !memcmp(a, want, n);
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a;

	memset(&a, 0, sizeof(a));
	a.cap.max_send_wr = 4;
	a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	CHECK_OK(rdma_create_qp(id, NULL, &a));
	CHECK(id->qp && id->pd && id->send_cq && id->recv_cq);
	CHECK(id->send_cq_channel && id->recv_cq_channel);
	CHECK(id->send_cq->cq_context == id);
}

/* Client: resolve, QP, connect with conn_param; returns the id. */
static struct rdma_cm_id *client_connect(struct rdma_event_channel *ch, uint16_t port,
					 struct rdma_conn_param *cp, bool qp)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst = loop_addr(port);

	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 2000);
	CHECK_OK(rdma_resolve_route(id, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 2000);
	if (qp)
		make_qp(id);
	if (cp)
		CHECK_OK(rdma_connect(id, cp));
	return id;
}

static struct rdma_cm_id *server_listen(struct rdma_event_channel *ch, uint16_t port, void *ctx)
{
	struct rdma_cm_id *l;
	struct sockaddr_in a = loop_addr(port);

	CHECK_OK(rdma_create_id(ch, &l, ctx, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(l, (struct sockaddr *)&a));
	CHECK_OK(rdma_listen(l, 8));
	return l;
}

/* ---- 1. full RC connection --------------------------------------------- */

static int full_client(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	uint8_t pd[64], msg[32];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct ibv_qp_attr qa;
	int mask;

	(void)arg;
	CHECK(ch);
	id = client_connect(ch, PORT, NULL, true);
	memset(&cp, 0, sizeof(cp));
	fill(pd, sizeof(pd), 1);
	cp.private_data = pd;
	cp.private_data_len = 57;		/* one over the RC REQ limit */
	cp.responder_resources = 2;
	cp.initiator_depth = 3;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	CHECK_ERR(rdma_connect(id, &cp), EINVAL);
	cp.private_data_len = 56;
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CHECK_EQ(ev->status, 0);
	CHECK_EQ(ev->param.conn.private_data_len, 196);
	CHECK(same(ev->param.conn.private_data, NULL, 196, 2));
	CHECK_EQ(ev->param.conn.qp_num, ev->param.conn.qp_num);
	CHECK_OK(rdma_ack_cm_event(ev));

	qa.qp_state = IBV_QPS_RTS;
	CHECK_OK(rdma_init_qp_attr(id, &qa, &mask));
	CHECK(mask & IBV_QP_SQ_PSN);

	/* data: wait for the server's receive, then send */
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	CHECK(mr);
	strcpy((char *)msg, "hello over softverbs");
	to_child_wait();
	CHECK_OK(rdma_post_send(id, NULL, msg, sizeof(msg), mr, 0));
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);

	to_child_wait();			/* server checked the data */
	CHECK_OK(rdma_disconnect(id));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 3000);
	expect_ack(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, 3000);
	CHECK_OK(rdma_dereg_mr(mr));
	rdma_destroy_qp(id);
	CHECK(id->qp == NULL);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}

static void test_full(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	uint8_t pd[200], msg[32];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint32_t client_qpn;
	int ctx = 42;
	pid_t pid;

	CHECK(ch);
	l = server_listen(ch, PORT, &ctx);
	pid = run_role("full_client");

	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	CHECK_EQ(ev->status, 0);
	CHECK(ev->listen_id == l);
	CHECK(ev->id != l);
	id = ev->id;
	CHECK(id->context == &ctx);		/* inherited from the listener */
	CHECK(id->verbs != NULL);
	CHECK_EQ(id->ps, RDMA_PS_TCP);
	CHECK_EQ(ev->param.conn.private_data_len, 56);
	CHECK(same(ev->param.conn.private_data, NULL, 56, 1));
	CHECK_EQ(ev->param.conn.responder_resources, 3);	/* peer's initiator depth */
	CHECK_EQ(ev->param.conn.initiator_depth, 2);	/* peer's responder resources */
	CHECK_EQ(ev->param.conn.retry_count, 7);
	CHECK_EQ(ev->param.conn.rnr_retry_count, 7);
	client_qpn = ev->param.conn.qp_num;
	CHECK(client_qpn != 0);
	CHECK_EQ(ntohs(rdma_get_src_port(id)), PORT);
	CHECK(rdma_get_dst_port(id) != 0);
	CHECK_OK(rdma_ack_cm_event(ev));

	make_qp(id);
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	CHECK(mr);
	CHECK_OK(rdma_post_recv(id, NULL, msg, sizeof(msg), mr));
	memset(&cp, 0, sizeof(cp));
	fill(pd, sizeof(pd), 2);
	cp.private_data = pd;
	cp.private_data_len = 197;		/* one over the REP limit */
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	CHECK_ERR(rdma_accept(id, &cp), EINVAL);
	cp.private_data_len = 196;
	CHECK_OK(rdma_accept(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_ESTABLISHED, 5000);
	CHECK(ev->id == id);
	CHECK_EQ(ev->status, 0);
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK_ERR(rdma_notify(id, IBV_EVENT_COMM_EST), EISCONN);
	MSG("connection established, client QPN %u", client_qpn);

	to_child_post();			/* receive is posted */
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, sizeof(msg));
	CHECK(!strcmp((char *)msg, "hello over softverbs"));
	CHECK_EQ(wc.qp_num, id->qp->qp_num);
	MSG("received \"%s\" through the CM's CQs", msg);
	to_child_post();

	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 5000);
	CHECK_OK(rdma_disconnect(id));	/* after the peer: still fine */
	expect_ack(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, 3000);
	CHECK_OK(rdma_dereg_mr(mr));
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	CHECK_OK(rdma_destroy_id(l));
	CHECK_EQ(wait_child(pid), 0);
	rdma_destroy_event_channel(ch);
	MSG("full connection: OK");
}

/* ---- 2. rejects ---------------------------------------------------------- */

static int reject_client(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	(void)arg;
	id = client_connect(ch, PORT + 1, &cp, true);
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED, 5000);
	CHECK_EQ(ev->status, 28);		/* IB_CM_REJ_CONSUMER_DEFINED */
	CHECK_EQ(ev->param.conn.private_data_len, 148);
	CHECK(same(ev->param.conn.private_data, NULL, 148, 3));
	CHECK_OK(rdma_ack_cm_event(ev));
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	id = client_connect(ch, PORT + 1, &cp, false);
	CHECK_EQ(0, 0);
	expect_ack(ch, RDMA_CM_EVENT_REJECTED, 35, 5000);	/* vendor option */
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}

static void test_reject(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l;
	struct rdma_cm_event *ev;
	uint8_t pd[160];
	pid_t pid;

	l = server_listen(ch, PORT + 1, NULL);
	pid = run_role("reject_client");
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	fill(pd, sizeof(pd), 3);
	CHECK_ERR(rdma_reject(ev->id, pd, 149), EINVAL);
	CHECK_OK(rdma_reject(ev->id, pd, 148));
	CHECK_OK(rdma_destroy_id(ev->id));	/* before the ack: allowed */
	CHECK_OK(rdma_ack_cm_event(ev));

	/* the second request: rdma_connect without QP needs qp_num; the
	 * client gave none, which is fine for the request itself */
	ev = get_event_within(ch, 5000);
	if (ev) {
		CHECK_EQ(ev->event, RDMA_CM_EVENT_CONNECT_REQUEST);
		CHECK_OK(rdma_reject_ece(ev->id, NULL, 0));
		CHECK_OK(rdma_destroy_id(ev->id));
		CHECK_OK(rdma_ack_cm_event(ev));
	}
	CHECK_EQ(wait_child(pid), 0);
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(ch);
	MSG("reject (status 28, 148 bytes) and reject_ece (status 35): OK");
}

/* ---- 3. failures --------------------------------------------------------- */

static void test_no_listener(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = loop_addr(PORT + 2);
	long long t0;

	id = client_connect(ch, PORT + 2, NULL, true);
	t0 = now_ms();
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_REJECTED, 1000);
	CHECK_EQ(ev->status, 8);		/* IB_CM_REJ_INVALID_SERVICE_ID */
	CHECK_OK(rdma_ack_cm_event(ev));
	MSG("no listener: REJECTED status 8 after %lld ms", now_ms() - t0);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));

	/* synchronous: rdma_connect itself fails with ECONNREFUSED */
	CHECK_OK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	CHECK_OK(rdma_resolve_route(id, 2000));
	make_qp(id);
	CHECK_ERR(rdma_connect(id, &cp), ECONNREFUSED);
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_REJECTED);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/*
 * A server that publishes its port before it listens (Debian's qperf 0.4.11
 * with -cm1): a REQ that comes in between is tried again, not rejected.
 */
static void test_late_listen(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct sockaddr_in a = loop_addr(PORT + 6);
	struct rdma_cm_id *l, *id, *sid;
	struct rdma_cm_event *ev;

	CHECK_OK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_bind_addr(l, (struct sockaddr *)&a));
	id = client_connect(ch, PORT + 6, &cp, true);
	usleep(50 * 1000);
	CHECK_OK(rdma_listen(l, 8));
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 2000);
	sid = ev->id;
	make_qp(sid);
	CHECK_OK(rdma_accept(sid, &cp));
	CHECK_OK(rdma_ack_cm_event(ev));
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0, 2000);
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0, 2000);
	MSG("listen 50 ms after the client's connect: ESTABLISHED on both sides");
	CHECK_OK(rdma_disconnect(id));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 2000);
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 2000);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_qp(sid);
	CHECK_OK(rdma_destroy_id(sid));
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(ch);
}

static void test_silent_peer(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct sockaddr_in a = loop_addr(PORT + 3);
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	int one = 1, lfd;
	long long t0;

	/* A TCP listener that is no CM: accepts, never answers. */
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(lfd >= 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(lfd, 4) == 0);
	id = client_connect(ch, PORT + 3, NULL, true);
	t0 = now_ms();
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_UNREACHABLE, 5000);
	CHECK_EQ(ev->status, -ETIMEDOUT);
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK(now_ms() - t0 >= 900 && now_ms() - t0 < 4000);
	MSG("silent peer: UNREACHABLE -ETIMEDOUT after %lld ms", now_ms() - t0);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	close(lfd);
	rdma_destroy_event_channel(ch);
}

static int killed_server(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l;
	struct rdma_cm_event *ev;

	(void)arg;
	l = server_listen(ch, PORT + 4, NULL);
	CHECK(l);
	to_parent_post();
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	make_qp(ev->id);
	CHECK_OK(rdma_accept(ev->id, NULL));
	CHECK_OK(rdma_ack_cm_event(ev));
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0, 5000);
	to_parent_post();
	pause();			/* until killed */
	return 0;
}

static void test_peer_killed(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *id;
	long long t0;
	pid_t pid;

	pid = run_role("killed_server");
	to_parent_wait();
	id = client_connect(ch, PORT + 4, &cp, true);
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0, 5000);
	to_parent_wait();
	t0 = now_ms();
	kill(pid, SIGKILL);
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 3000);
	MSG("peer killed: DISCONNECTED after %lld ms", now_ms() - t0);
	wait_child(pid);
	rdma_destroy_qp(id);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

/* ---- 4. user-managed QPs -------------------------------------------------- */

static struct ibv_qp *own_qp(struct rdma_cm_id *id, struct ibv_pd **pd, struct ibv_cq **cq)
{
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	*pd = ibv_alloc_pd(id->verbs);
	CHECK(*pd);
	*cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	CHECK(*cq);
	memset(&a, 0, sizeof(a));
	a.send_cq = a.recv_cq = *cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 2;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.qp_type = IBV_QPT_RC;
	qp = ibv_create_qp(*pd, &a);
	CHECK(qp);
	return qp;
}

static void move_qp(struct rdma_cm_id *id, struct ibv_qp *qp)
{
	static const enum ibv_qp_state st[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	struct ibv_qp_attr a;
	int mask, i;

	for (i = 0; i < 3; i++) {
		a.qp_state = st[i];
		CHECK_OK(rdma_init_qp_attr(id, &a, &mask));
		CHECK_OK(ibv_modify_qp(qp, &a, mask));
	}
}

static int ownqp_client(void *arg)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;

	(void)arg;
	id = client_connect(ch, PORT + 5, NULL, false);
	qp = own_qp(id, &pd, &cq);
	cp.qp_num = qp->qp_num;
	CHECK_ERR(rdma_establish(id), EINVAL);
	CHECK_OK(rdma_connect(id, &cp));
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, 5000);
	CHECK_EQ(ev->status, 0);
	CHECK(ev->param.conn.qp_num != 0);
	CHECK_OK(rdma_ack_cm_event(ev));
	move_qp(id, qp);
	CHECK_OK(rdma_establish(id));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 5000);
	CHECK_OK(rdma_disconnect(id));
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	return 0;
}

static struct {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
} own_leftover;

static void test_own_qp(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .rnr_retry_count = 7 };
	struct rdma_cm_id *l, *id;
	struct rdma_cm_event *ev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	pid_t pid;

	l = server_listen(ch, PORT + 5, NULL);
	pid = run_role("ownqp_client");
	ev = expect_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, 5000);
	id = ev->id;
	CHECK_OK(rdma_ack_cm_event(ev));
	qp = own_qp(id, &pd, &cq);
	move_qp(id, qp);
	CHECK_ERR(rdma_accept(id, NULL), EINVAL);	/* no QP, no qp_num */
	cp.qp_num = qp->qp_num;
	CHECK_OK(rdma_accept(id, &cp));
	expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED, 0, 5000);
	MSG("user-managed QPs: CONNECT_RESPONSE, rdma_establish, ESTABLISHED");
	CHECK_OK(rdma_disconnect(id));
	expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED, 0, 3000);
	CHECK_EQ(wait_child(pid), 0);
	CHECK_OK(rdma_destroy_id(id));
	CHECK_OK(rdma_destroy_id(l));
	rdma_destroy_event_channel(ch);
	/* The QP is destroyed at the very end: softverbs reuses a destroyed
	 * QPN at once, and a reused QPN confuses its transport (reported). */
	own_leftover.qp = qp;
	own_leftover.cq = cq;
	own_leftover.pd = pd;
}

/* ---- 5. synchronous endpoints (rdma_create_ep) ---------------------------- */

static int ep_client(void *arg)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *id;
	uint8_t pd[8] = "epdata";
	uint8_t msg[16] = "ping";
	struct ibv_mr *mr;
	struct ibv_wc wc;

	(void)arg;
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	to_child_wait();
	CHECK_OK(rdma_getaddrinfo("127.0.0.1", "27206", &hints, &res));
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	CHECK_OK(rdma_create_ep(&id, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK(id->qp && id->send_cq && id->recv_cq);
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	CHECK(mr);
	cp.private_data = pd;
	cp.private_data_len = sizeof(pd);
	CHECK_OK(rdma_connect(id, &cp));	/* returns when established */
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ESTABLISHED);
	CHECK(!strcmp(id->event->param.conn.private_data, "accepted"));
	CHECK_OK(rdma_post_send(id, NULL, msg, sizeof(msg), mr, 0));
	CHECK_EQ(rdma_get_send_comp(id, &wc), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_OK(rdma_disconnect(id));	/* returns with DISCONNECTED */
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_DISCONNECTED);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	return 0;
}

static void test_ep(void)
{
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *l, *id;
	uint8_t msg[16];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	pid_t pid;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_OK(rdma_getaddrinfo("127.0.0.1", "27206", &hints, &res));
	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
	attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
	CHECK_OK(rdma_create_ep(&l, res, NULL, &attr));
	rdma_freeaddrinfo(res);
	CHECK_OK(rdma_listen(l, 1));
	pid = run_role("ep_client");
	to_child_post();
	CHECK_OK(rdma_get_request(l, &id));
	CHECK(id->qp != NULL);		/* made from the listener's attributes */
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(!strcmp(id->event->param.conn.private_data, "epdata"));
	mr = rdma_reg_msgs(id, msg, sizeof(msg));
	CHECK(mr);
	CHECK_OK(rdma_post_recv(id, NULL, msg, sizeof(msg), mr));
	cp.private_data = "accepted";
	cp.private_data_len = 9;
	CHECK_OK(rdma_accept(id, &cp));	/* returns when established */
	CHECK_EQ(rdma_get_recv_comp(id, &wc), 1);
	CHECK(!strcmp((char *)msg, "ping"));
	CHECK_OK(rdma_disconnect(id));
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(l);
	CHECK_EQ(wait_child(pid), 0);
	MSG("synchronous rdma_create_ep/get_request/accept/connect/disconnect: OK");
}

static const struct cmt_role roles[] = {
	{ "full_client", full_client }, { "reject_client", reject_client },
	{ "killed_server", killed_server }, { "ownqp_client", ownqp_client },
	{ "ep_client", ep_client }, { NULL, NULL },
};

int main(int argc, char **argv)
{
	cmt_init("cm_connect", 100);
	cmt_role_dispatch(argc, argv, roles);
	need_device();
	test_full();
	test_reject();
	test_no_listener();
	test_late_listen();
	test_silent_peer();
	test_peer_killed();
	test_own_qp();
	test_ep();
	ibv_destroy_qp(own_leftover.qp);
	ibv_destroy_cq(own_leftover.cq);
	ibv_dealloc_pd(own_leftover.pd);
	MSG("all checks passed");
	return 0;
}
