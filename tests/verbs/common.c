/* Shared helpers for the verbs tests; see common.h. */
#define _GNU_SOURCE
#include "common.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "status/format.h"

static void on_alarm(int sig)
{
	static const char msg[] = ": watchdog timeout, test hung\n";

	(void)sig;
	if (write(2, program_invocation_short_name, strlen(program_invocation_short_name)) < 0 ||
	    write(2, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(2);
}

/* SA_RESTART, as glibc's signal() sets and the sanitizers' interceptors of
 * it do not: with a handler without it, a thread asleep on a completion
 * channel waits in read, not on its CQs' sockets (verbs/comp_channel.c),
 * and the sanitizer builds would not test that path. */
void t_skip_cancel_asan(void)
{
#ifdef __SANITIZE_ADDRESS__
	printf("skip: ASan and pthread_cancel\n");
	exit(77);
#endif
}

void t_alarm(unsigned int seconds)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };

	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void t_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct ibv_context *t_open(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0;

	/* Every test gets a watchdog, even one that never calls t_alarm: the
	 * library runs a progress thread in every process. */
	unsigned int left = alarm(0);
	if (left)
		alarm(left);
	else
		t_alarm(40);
	srand48((long)getpid() ^ (long)t_now_ms());
	list = ibv_get_device_list(&n);
	T_SKIP_IF(!list || n == 0, "no RDMA device");
	for (int i = 0; i < n; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), "softverbs0")) {
			ctx = CHECK_PTR(ibv_open_device(list[i]));
			break;
		}
	}
	ibv_free_device_list(list);
	T_SKIP_IF(!ctx, "softverbs0 not found");
	return ctx;
}

void t_opts_default(struct t_opts *o, enum ibv_qp_type type)
{
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->cqe = 64;
	o->max_send_wr = 32;
	o->max_recv_wr = 32;
	o->max_send_sge = 4;
	o->max_recv_sge = 4;
	o->max_inline = 0;
	o->buf_len = 65536;
	o->mr_access = T_ALL_ACCESS;
	o->qp_access = T_ALL_REMOTE;
	o->sq_sig_all = 0;
	o->timeout = 14;      /* 4.096 us * 2^14 = 67 ms */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1;
	o->qkey = 0x11111111;
}

void t_ep_create(struct t_ep *e, struct ibv_context *ctx, const struct t_opts *o)
{
	struct ibv_qp_init_attr ia;

	memset(e, 0, sizeof(*e));
	e->ctx = ctx;
	e->type = o->type;
	e->own_pd = !o->pd;
	e->pd = o->pd ? o->pd : CHECK_PTR(ibv_alloc_pd(ctx));
	if (o->own_channel && !o->channel)
		e->ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	e->cq = CHECK_PTR(ibv_create_cq(ctx, o->cqe, o->cq_context, e->ch ? e->ch : o->channel, 0));
	e->len = o->buf_len;
	e->buf = CHECK_PTR(aligned_alloc(4096, (e->len + 4095) & ~(size_t)4095));
	memset(e->buf, 0, e->len);
	e->mr = CHECK_PTR(ibv_reg_mr(e->pd, e->buf, e->len, o->mr_access));

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.srq = o->srq;
	ia.qp_type = o->type;
	ia.sq_sig_all = o->sq_sig_all;
	ia.cap.max_send_wr = o->max_send_wr;
	ia.cap.max_recv_wr = o->srq ? 0 : o->max_recv_wr;
	ia.cap.max_send_sge = o->max_send_sge;
	ia.cap.max_recv_sge = o->srq ? 0 : o->max_recv_sge;
	ia.cap.max_inline_data = o->max_inline;
	e->qp = CHECK_PTR(ibv_create_qp(e->pd, &ia));
	e->psn = (uint32_t)(lrand48() & 0xffffff);
}

void t_ep_destroy(struct t_ep *e)
{
	if (e->qp)
		CHECK_OK(ibv_destroy_qp(e->qp));
	if (e->mr)
		CHECK_OK(ibv_dereg_mr(e->mr));
	if (e->cq)
		CHECK_OK(ibv_destroy_cq(e->cq));
	if (e->ch)
		CHECK_OK(ibv_destroy_comp_channel(e->ch));
	if (e->pd && e->own_pd)
		CHECK_OK(ibv_dealloc_pd(e->pd));
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

void t_ep_info(const struct t_ep *e, struct t_info *info)
{
	struct ibv_port_attr pa;

	memset(info, 0, sizeof(*info));
	CHECK_OK(ibv_query_port(e->ctx, 1, &pa));
	CHECK_OK(ibv_query_gid(e->ctx, 1, 0, &info->gid));
	info->lid = pa.lid;
	info->qpn = e->qp->qp_num;
	info->psn = e->psn;
	info->rkey = e->mr->rkey;
	info->addr = (uintptr_t)e->buf;
	info->len = e->len;
}

int t_to_init(struct ibv_qp *qp, const struct t_opts *o)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (o->type == IBV_QPT_UD) {
		a.qkey = o->qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = o->qp_access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int t_to_rtr(struct ibv_qp *qp, const struct t_opts *o, const struct t_info *r)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (o->type != IBV_QPT_UD) {
		a.ah_attr.dlid = r->lid;
		a.ah_attr.port_num = 1;
		a.path_mtu = IBV_MTU_4096;
		a.dest_qp_num = r->qpn;
		a.rq_psn = r->psn;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (o->type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = o->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int t_to_rts(struct ibv_qp *qp, const struct t_opts *o, uint32_t psn)
{
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	if (o->type == IBV_QPT_RC) {
		a.timeout = o->timeout;
		a.retry_cnt = o->retry_cnt;
		a.rnr_retry = o->rnr_retry;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

void t_ep_connect(struct t_ep *e, const struct t_opts *o, const struct t_info *remote)
{
	CHECK_OK(t_to_init(e->qp, o));
	CHECK_OK(t_to_rtr(e->qp, o, remote));
	CHECK_OK(t_to_rts(e->qp, o, e->psn));
	CHECK_EQ(t_qp_state(e->qp), IBV_QPS_RTS);
}

enum ibv_qp_state t_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia));
	return a.qp_state;
}

/* Swap t_info between two created endpoints and connect them. */
static void ep_pair_connect(const struct t_opts *oa, const struct t_opts *ob, struct t_ep *a,
			    struct t_ep *b, struct t_info *ia, struct t_info *ib)
{
	t_ep_info(a, ia);
	t_ep_info(b, ib);
	t_ep_connect(a, oa, ib);
	t_ep_connect(b, ob, ia);
}

void t_ep_pair(struct ibv_context *ctx, const struct t_opts *oa, const struct t_opts *ob,
	       struct t_ep *a, struct t_ep *b, struct t_info *ia, struct t_info *ib)
{
	t_ep_create(a, ctx, oa);
	t_ep_create(b, ctx, ob);
	ep_pair_connect(oa, ob, a, b, ia, ib);
}

void t_pair_open2(struct t_pair *p, const struct t_opts *oa, const struct t_opts *ob)
{
	memset(p, 0, sizeof(*p));
	p->ctx = t_open();
	t_ep_pair(p->ctx, oa, ob, &p->a, &p->b, &p->ia, &p->ib);
}

void t_ep_pair_srq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_srq *srq,
		   struct t_ep *a, struct t_ep *b)
{
	struct t_opts oa, ob;
	struct t_info ia, ib;

	t_opts_default(&oa, IBV_QPT_RC);
	ob = oa;
	ob.srq = srq;
	ob.pd = pd;
	t_ep_pair(ctx, &oa, &ob, a, b, &ia, &ib);
}

void t_pair_open(struct t_pair *p, const struct t_opts *o)
{
	t_pair_open2(p, o, o);
}

void t_pair_open_ch(struct t_pair *p, const struct t_opts *o, void *cq_context)
{
	struct t_opts ob = *o;

	memset(p, 0, sizeof(*p));
	p->ctx = t_open();
	p->ch = CHECK_PTR(ibv_create_comp_channel(p->ctx));
	ob.channel = p->ch;
	ob.cq_context = cq_context;
	t_ep_pair(p->ctx, o, &ob, &p->a, &p->b, &p->ia, &p->ib);
}

struct ibv_ah *t_pair_open_ud(struct t_pair *p, struct t_opts *o, bool global)
{
	t_opts_default(o, IBV_QPT_UD);
	t_pair_open(p, o);
	return t_ah(p->a.pd, &p->ib, global);
}

struct ibv_qp_ex *t_pair_open_qp_ex(struct t_pair *p, const struct t_opts *o,
				    const struct ibv_qp_cap *cap, uint64_t send_ops_flags)
{
	memset(p, 0, sizeof(*p));
	p->ctx = t_open();
	t_ep_create(&p->a, p->ctx, o);
	t_ep_create(&p->b, p->ctx, o);
	CHECK_OK(ibv_destroy_qp(p->a.qp));
	struct ibv_qp_init_attr_ex ix = {
		.send_cq = p->a.cq, .recv_cq = p->a.cq, .qp_type = o->type, .cap = *cap,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = p->a.pd, .send_ops_flags = send_ops_flags,
	};
	p->a.qp = CHECK_PTR(ibv_create_qp_ex(p->ctx, &ix));
	struct ibv_qp_ex *qx = CHECK_PTR(ibv_qp_to_qp_ex(p->a.qp));
	ep_pair_connect(o, o, &p->a, &p->b, &p->ia, &p->ib);
	return qx;
}

void t_pair_close(struct t_pair *p)
{
	t_ep_destroy(&p->a);
	t_ep_destroy(&p->b);
	if (p->ch)
		CHECK_OK(ibv_destroy_comp_channel(p->ch));
	CHECK_OK(ibv_close_device(p->ctx));
	memset(p, 0, sizeof(*p));
}

void t_srq_pair_open(struct t_srq_pair *s, uint32_t max_wr)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = max_wr } };
	struct ibv_device_attr da;

	memset(s, 0, sizeof(*s));
	s->ctx = t_open();
	CHECK_OK(ibv_query_device(s->ctx, &da));
	si.attr.max_sge = (uint32_t)da.max_srq_sge;
	s->pd = CHECK_PTR(ibv_alloc_pd(s->ctx));
	s->srq = CHECK_PTR(ibv_create_srq(s->pd, &si));
	t_ep_pair_srq(s->ctx, s->pd, s->srq, &s->a, &s->b);
}

void t_srq_pair_close(struct t_srq_pair *s)
{
	t_ep_destroy(&s->a);
	t_ep_destroy(&s->b);
	CHECK_OK(ibv_destroy_srq(s->srq));
	CHECK_OK(ibv_dealloc_pd(s->pd));
	CHECK_OK(ibv_close_device(s->ctx));
	memset(s, 0, sizeof(*s));
}

struct ibv_ah *t_ah(struct ibv_pd *pd, const struct t_info *r, bool global)
{
	struct ibv_ah_attr a;

	memset(&a, 0, sizeof(a));
	a.dlid = r->lid;
	a.port_num = 1;
	if (global) {
		a.is_global = 1;
		a.grh.dgid = r->gid;
		a.grh.sgid_index = 0;
		a.grh.hop_limit = 64;
	}
	return CHECK_PTR(ibv_create_ah(pd, &a));
}

int t_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	return ibv_post_recv(qp, &wr, &bad);
}

int t_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len,
		    uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/* The one-SGE work request every post helper starts from. */
static void one_sge_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, enum ibv_wr_opcode op,
		       uint64_t wr_id, int flags)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->send_flags = flags;
}

void t_send_chain(struct ibv_send_wr *w, int n, struct ibv_sge *sge, enum ibv_wr_opcode op)
{
	for (int i = 0; i < n; i++) {
		one_sge_wr(&w[i], sge, op, 1 + i, IBV_SEND_SIGNALED);
		w[i].next = i < n - 1 ? &w[i + 1] : NULL;
	}
}

int t_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, int flags)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	one_sge_wr(&wr, &sge, op, wr_id, flags);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

int t_post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		uint32_t len, uint32_t lkey, int flags)
{
	return t_post_rdma(qp, op, wr_id, addr, len, lkey, 0, 0, flags);
}

int t_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		  uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)addr, 8, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	one_sge_wr(&wr, &sge, op, wr_id, IBV_SEND_SIGNALED);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

int t_post_ud(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
	      struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, int flags)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	one_sge_wr(&wr, &sge, IBV_WR_SEND, wr_id, flags);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

int t_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
	int got = 0;

	for (;;) {
		int r = ibv_poll_cq(cq, n - got, wc + got);

		if (r < 0)
			T_FAIL("ibv_poll_cq returned %d", r);
		got += r;
		if (got >= n || t_now_ms() >= end)
			return got;
		if (!r)
			usleep(200);
	}
}

struct ibv_wc t_wc_at(struct ibv_cq *cq, int timeout_ms, const char *file, int line)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	if (t_poll(cq, &wc, 1, timeout_ms) != 1) {
		fprintf(stderr, "%s:%d: FAIL: no completion within %d ms\n", file, line,
			timeout_ms);
		exit(1);
	}
	return wc;
}

void t_no_wc_at(struct ibv_cq *cq, int ms, const char *file, int line)
{
	struct ibv_wc wc;

	if (t_poll(cq, &wc, 1, ms) != 0) {
		fprintf(stderr, "%s:%d: FAIL: unexpected completion: wr_id %llu status %s "
			"opcode %d\n", file, line, (unsigned long long)wc.wr_id,
			ibv_wc_status_str(wc.status), wc.opcode);
		exit(1);
	}
}

void t_wait_qp_state(struct ibv_qp *qp, enum ibv_qp_state state, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
	enum ibv_qp_state s;

	while ((s = t_qp_state(qp)) != state) {
		if (t_now_ms() >= end)
			T_FAIL("QP %u in state %d, expected %d after %d ms", qp->qp_num, s,
			       state, timeout_ms);
		usleep(1000);
	}
}

bool t_fd_ready(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r = poll(&pfd, 1, ms);

	CHECK(r >= 0);
	return r > 0 && (pfd.revents & POLLIN);
}

bool t_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	CHECK(r >= 0);
	if (r == 0)
		return false;
	CHECK(pfd.revents & POLLIN);
	CHECK_OK(ibv_get_async_event(ctx, ev));
	return true;
}

void t_expect_async(struct ibv_context *ctx, enum ibv_event_type type,
		    struct ibv_async_event *out, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
	struct ibv_async_event ev;

	for (;;) {
		uint64_t now = t_now_ms();

		if (now >= end || !t_async_event(ctx, &ev, (int)(end - now)))
			T_FAIL("no async event %s within %d ms", ibv_event_type_str(type),
			       timeout_ms);
		if (ev.event_type == type) {
			*out = ev;
			return;
		}
		fprintf(stderr, "note: skipping async event %s\n",
			ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

pid_t t_fork(int *fd)
{
	int sv[2];
	pid_t pid;

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		*fd = sv[1];
	} else {
		close(sv[1]);
		*fd = sv[0];
	}
	return pid;
}

void t_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t r = write(fd, b, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			T_FAIL("write to peer: %s", r < 0 ? strerror(errno) : "closed");
		b += r;
		n -= (size_t)r;
	}
}

void t_read_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			T_FAIL("read from peer: %s", r < 0 ? strerror(errno) : "peer closed");
		b += r;
		n -= (size_t)r;
	}
}

void t_xchg(int fd, const struct t_info *mine, struct t_info *theirs)
{
	t_write_all(fd, mine, sizeof(*mine));
	t_read_all(fd, theirs, sizeof(*theirs));
}

void t_sync(int fd)
{
	char c = 's';

	t_write_all(fd, &c, 1);
	t_read_all(fd, &c, 1);
	CHECK_EQ(c, 's');
}

int t_wait_child(pid_t pid, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		CHECK(r >= 0);
		if (r == pid)
			break;
		if (t_now_ms() >= end) {
			kill(pid, SIGKILL);
			CHECK_EQ(waitpid(pid, &st, 0), pid);
			T_FAIL("child %d did not exit within %d ms", (int)pid, timeout_ms);
		}
		usleep(2000);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

void t_ep_peer(struct t_ep *e, struct ibv_context *ctx, const struct t_opts *o, int fd,
	       struct t_info *mine, struct t_info *theirs)
{
	t_ep_create(e, ctx, o);
	t_ep_info(e, mine);
	t_xchg(fd, mine, theirs);
	t_ep_connect(e, o, theirs);
}

int t_side_reap(struct t_side *s, int timeout_ms)
{
	s->child_status = t_wait_child(s->child, timeout_ms);
	s->child = 0;
	return s->child_status;
}

int t_two_procs(const struct t_opts *op, const struct t_opts *oc, unsigned int alarm_s,
		int wait_ms, void (*parent)(struct t_side *), void (*child)(struct t_side *),
		void *arg)
{
	struct t_side s;
	const struct t_opts *o;

	memset(&s, 0, sizeof(s));
	s.arg = arg;
	s.child = t_fork(&s.fd);
	o = s.child ? op : oc;
	/* alarms are not inherited: each side arms its own */
	t_alarm(alarm_s);
	s.ctx = t_open();
	t_ep_peer(&s.e, s.ctx, o, s.fd, &s.mine, &s.theirs);
	if (!s.child) {
		child(&s);
		t_ep_destroy(&s.e);
		CHECK_OK(ibv_close_device(s.ctx));
		exit(0);
	}
	parent(&s);
	if (s.child)
		t_side_reap(&s, wait_ms);
	t_ep_destroy(&s.e);
	CHECK_OK(ibv_close_device(s.ctx));
	close(s.fd);
	return s.child_status;
}

void t_fill(void *buf, size_t len, uint8_t seed)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

bool t_check_fill(const void *buf, size_t len, uint8_t seed)
{
	const uint8_t *b = buf;

	for (size_t i = 0; i < len; i++) {
		if (b[i] != (uint8_t)(seed + i * 7 + (i >> 8))) {
			fprintf(stderr, "data mismatch at byte %zu: 0x%02x != 0x%02x\n", i, b[i],
				(uint8_t)(seed + i * 7 + (i >> 8)));
			return false;
		}
	}
	return true;
}

bool t_transport_tcp(void)
{
	const char *t = getenv("SOFTVERBS_TRANSPORT");

	return t && !strcmp(t, "tcp");
}

bool t_status_qp(uint32_t qpn, struct svst_qp *out)
{
	char path[64];
	struct svst_file h;
	bool found = false;
	int fd;

	snprintf(path, sizeof(path), SVST_DIR_FMT "/%d", (unsigned)getuid(), (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (pread(fd, &h, sizeof(h), 0) == sizeof(h) && h.magic == SVST_MAGIC &&
	    h.version == SVST_VERSION) {
		for (uint32_t i = 0; i < h.hwm && !found; i++) {
			off_t at = (off_t)h.hdr_size + (off_t)i * h.slot_size;

			found = pread(fd, out, sizeof(*out), at) == sizeof(*out) &&
				out->h.kind == SVST_QP && out->qpn == qpn;
		}
	}
	close(fd);
	return found;
}

uint64_t t_placed(struct ibv_qp *qp)
{
	struct svst_qp r;

	CHECK(t_status_qp(qp->qp_num, &r));
	return r.placed;
}
