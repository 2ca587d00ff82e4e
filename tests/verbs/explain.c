/* Errors that name the broken rule (SOFTVERBS_DEBUG=1): the common misuse
 * cases each print one line saying which object broke which rule: a
 * receive buffer too small, an unregistered buffer, an SGE beyond its MR, a
 * missing remote right, a QP not in RTS, no receive posted, a CQ overrun;
 * the EINVAL/ENOMEM of ibv_modify_qp and the post verbs; UD datagrams
 * dropped or too large for their receive. */
#include <fcntl.h>

#include "common.h"

static char log_path[] = "/tmp/sv_explain_XXXXXX";
static int saved_err;

/* stderr goes to a file, read back by expect(). */
static void capture(void)
{
	int fd = mkstemp(log_path);

	CHECK(fd >= 0);
	saved_err = dup(2);
	CHECK(dup2(fd, 2) == 2);
	close(fd);
}

static off_t seen;

/* A new case: what was printed so far is not looked at again. */
static void next_case(void)
{
	seen = lseek(2, 0, SEEK_END);
}

/* Every piece appears in one line of what this case printed. */
static void expect(const char *what, const char *const *pieces)
{
	char buf[16384], *line, *save = NULL;
	int fd = open(log_path, O_RDONLY);
	ssize_t n;

	CHECK(fd >= 0);
	n = pread(fd, buf, sizeof(buf) - 1, seen);
	close(fd);
	CHECK(n >= 0);
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int i;

		for (i = 0; pieces[i] && strstr(line, pieces[i]); i++)
			;
		if (!pieces[i]) {
			dprintf(saved_err, "%s: %s\n", what, line);
			return;
		}
	}
	dprintf(saved_err, "%s: no line with all of:", what);
	for (int i = 0; pieces[i]; i++)
		dprintf(saved_err, " [%s]", pieces[i]);
	dprintf(saved_err, "\nprinted:\n%s\n", buf);
	exit(1);
}

#define EXPECT(what, ...) expect(what, (const char *const[]){ __VA_ARGS__, NULL })

static void small_receive(void)
{
	struct t_opts o;
	struct t_pair p;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 5, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1, p.a.buf, 200, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_REM_INV_REQ_ERR);
	CHECK_STATUS(t_wc(p.b.cq, 5000), IBV_WC_LOC_LEN_ERR);
	EXPECT("receive too small", "SEND psn", "the message is 200 bytes, receive wr_id 5 holds 64",
	       "NAK invalid request");
	t_pair_close(&p);
}

static void bad_sge(void)
{
	struct t_opts o;
	struct t_pair p;
	char lkey[32];

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 7, p.a.buf, 16, p.a.mr->lkey ^ 0x7700,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_LOC_PROT_ERR);
	snprintf(lkey, sizeof(lkey), "lkey %#x", p.a.mr->lkey ^ 0x7700);
	EXPECT("unregistered buffer", "SEND wr_id 7", "sge[0]", lkey, "names no registered memory",
	       "local protection error");
	t_pair_close(&p);

	next_case();
	t_pair_open(&p, &o);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 8, p.a.buf + p.a.len - 100, 200,
			     p.a.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_LOC_PROT_ERR);
	EXPECT("SGE beyond its MR", "SEND wr_id 8", "sge[0] lkey", "covers [",
	       "the access asks [", ", +200)", "local protection error");
	t_pair_close(&p);
}

static void missing_right(void)
{
	struct t_opts o;
	struct t_pair p;

	t_opts_default(&o, IBV_QPT_RC);
	o.mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	t_pair_open(&p, &o);
	CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 9, p.a.buf, 32, p.a.mr->lkey, p.ib.addr,
			     p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_REM_ACCESS_ERR);
	/* the responder names the rule, the requester what it was refused */
	EXPECT("missing remote right (responder)", "WRITE psn", "without IBV_ACCESS_REMOTE_WRITE",
	       "NAK remote access");
	t_pair_close(&p);
	EXPECT("missing remote right (requester)", "RDMA_WRITE wr_id 9", "refused rkey",
	       "remote access error");
}

static void not_rts(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep e;

	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&e, ctx, &o);
	CHECK_OK(t_to_init(e.qp, &o));
	CHECK_ERR(t_post_send(e.qp, IBV_WR_SEND, 11, e.buf, 8, e.mr->lkey, 0), EINVAL);
	EXPECT("QP not in RTS", "ibv_post_send wr_id 11", "the QP is in INIT", "sends need RTS",
	       "EINVAL");
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
}

static void no_receive(void)
{
	struct t_opts o;
	struct t_pair p;

	t_opts_default(&o, IBV_QPT_RC);
	o.rnr_retry = 0;
	o.min_rnr_timer = 1;
	t_pair_open(&p, &o);
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 12, p.a.buf, 8, p.a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 10000), IBV_WC_RNR_RETRY_EXC_ERR);
	EXPECT("no receive posted", "SEND wr_id 12", "had no receive posted", "RNR NAKs (rnr_retry 0)",
	       "RNR retry counter exceeded");
	t_pair_close(&p);
}

static void cq_overrun(void)
{
	struct t_opts o;
	struct t_pair p;

	t_opts_default(&o, IBV_QPT_RC);
	o.cqe = 2;
	t_pair_open(&p, &o);
	for (int i = 0; i < 4; i++)
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, 20 + i, p.a.buf, 8, p.a.mr->lkey,
				     p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
	t_sleep_ms(300);
	EXPECT("CQ overrun", "overrun, all", "entries unpolled", "is lost", "IBV_EVENT_CQ_ERR");
	t_pair_close(&p);
}

/* ibv_modify_qp's EINVALs name the modify-QP table's rule they break. */
static void modify_mask(void)
{
	struct ibv_context *ctx = t_open();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024 };
	struct t_opts o;
	struct t_ep e;

	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&e, ctx, &o);
	a.qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE), EINVAL);
	EXPECT("no such transition", "ibv_modify_qp: RESET -> RTS is no transition", "EINVAL");
	next_case();
	CHECK_OK(t_to_init(e.qp, &o));
	a.qp_state = IBV_QPS_RTR;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PATH_MTU), EINVAL);
	EXPECT("missing attribute", "INIT -> RTR (RC QP) requires", "IBV_QP_AV", "IBV_QP_RQ_PSN",
	       "IBV_QP_DEST_QPN", "not in attr_mask: EINVAL");
	next_case();
	a.qp_state = IBV_QPS_INIT;
	a.sq_psn = 1;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), EINVAL);
	EXPECT("extra attribute", "INIT -> INIT (RC QP) does not take IBV_QP_SQ_PSN", "EINVAL");
	next_case();
	a.port_num = 2;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_PORT), EINVAL);
	EXPECT("bad value", "INIT -> INIT", "port_num must be 1", "EINVAL");
	next_case();
	a.cur_qp_state = IBV_QPS_RTS;
	CHECK_ERR(ibv_modify_qp(e.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
	EXPECT("current state", "IBV_QP_CUR_STATE says RTS, the QP is in INIT", "EINVAL");
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
}

/* Work requests refused at post time say which limit or rule they broke. */
static void post_limits(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_sge sge[3];
	struct ibv_send_wr w = { .wr_id = 31, .sg_list = sge, .num_sge = 3, .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	int i, ret = 0;

	t_opts_default(&o, IBV_QPT_RC);
	o.max_send_wr = 4;
	o.max_send_sge = 2;
	o.max_recv_wr = 2;
	o.rnr_retry = 7;
	t_pair_open(&p, &o);
	for (i = 0; i < 3; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)p.a.buf, 8, p.a.mr->lkey };
	CHECK_ERR(ibv_post_send(p.a.qp, &w, &bad), EINVAL);
	EXPECT("too many SGEs", "ibv_post_send wr_id 31 (SEND)", "num_sge 3", "max_send_sge 2",
	       "EINVAL");
	next_case();
	CHECK_OK(t_post_recv(p.b.qp, 50, p.b.buf, 8, p.b.mr->lkey));
	CHECK_OK(t_post_recv(p.b.qp, 51, p.b.buf, 8, p.b.mr->lkey));
	CHECK_ERR(t_post_recv(p.b.qp, 52, p.b.buf, 8, p.b.mr->lkey), ENOMEM);
	EXPECT("receive queue full", "ibv_post_recv wr_id 52", "the receive queue is full",
	       "ENOMEM");
	next_case();
	/* two SENDs take the receives, the next wait for more (RNR, forever) */
	for (i = 0; i < 16 && !ret; i++)
		ret = t_post_send(p.a.qp, IBV_WR_SEND, 40 + i, p.a.buf, 8, p.a.mr->lkey, 0);
	CHECK(ret == ENOMEM);
	EXPECT("send queue full", "(SEND)", "the send queue is full", "max_send_wr", "ENOMEM");
	t_pair_close(&p);
}

/* UD datagrams a fabric drops silently say why in the QP's last error, and
 * a receive without room for the GRH says so. */
static void ud_drops(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_ah *ah = t_pair_open_ud(&p, &o, false);

	CHECK_OK(t_post_ud(p.a.qp, 1, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_no_wc(p.b.cq, 150);
	EXPECT("UD without a receive", "UD datagram of 64 bytes from QP", "no receive posted");
	next_case();
	CHECK_OK(t_post_recv(p.b.qp, 7, p.b.buf, 64, p.b.mr->lkey));
	CHECK_OK(t_post_ud(p.a.qp, 2, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey + 1,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_no_wc(p.b.cq, 150);
	EXPECT("UD Q_Key", "dropped: its Q_Key", "is not the QP's");
	next_case();
	CHECK_OK(t_post_ud(p.a.qp, 3, p.a.buf, 64, p.a.mr->lkey, ah, p.ib.qpn, o.qkey,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p.b.cq, 2000), IBV_WC_LOC_LEN_ERR);
	EXPECT("UD receive without the GRH", "receive wr_id 7 holds 64 bytes",
	       "needs 40 (the 40-byte GRH) + 64", "local length error");
	CHECK_OK(ibv_destroy_ah(ah));
	t_pair_close(&p);
}

int main(void)
{
	t_alarm(40);
	setenv("SOFTVERBS_DEBUG", "1", 1);
	capture();
	next_case();
	small_receive();
	next_case();
	bad_sge();
	next_case();
	missing_right();
	next_case();
	not_rts();
	next_case();
	no_receive();
	next_case();
	cq_overrun();
	next_case();
	modify_mask();
	next_case();
	post_limits();
	next_case();
	ud_drops();
	unlink(log_path);
	return 0;
}
