/* Controlled Q_Keys (high bit set): ibv_modify_qp sets one only with
 * CAP_NET_RAW over the network namespace, as the kernel's uverbs does;
 * otherwise EPERM, whatever the transition, and the QP is left as it was.
 * A send naming a controlled Q_Key goes with the QP's own Q_Key.
 *
 * Run as root: the allowed side here, the EPERM side in forked children
 * that drop to uid 65534 (and one that then enters a user namespace of its
 * own, where it holds every capability but not over the host's network).
 * Run unprivileged: the EPERM side in this process. */
#define _GNU_SOURCE
#include "common.h"

#include <grp.h>
#include <sched.h>
#include <sys/wait.h>

#define CONTROLLED 0x80000001u

/* CAP_NET_RAW (13) in this process's effective set, from /proc. */
static bool has_net_raw(void)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff & (1ull << 13);
}

static int modify_qkey(struct ibv_qp *qp, enum ibv_qp_state s, uint32_t qkey, int mask)
{
	struct ibv_qp_attr a = { .qp_state = s, .qkey = qkey, .port_num = 1 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY | mask);
}

static uint32_t qkey_of(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_QKEY, &ia));
	return a.qkey;
}

/* Every transition that carries a Q_Key refuses a controlled one. */
static void expect_eperm(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep e;

	t_opts_default(&o, IBV_QPT_UD);
	t_ep_create(&e, ctx, &o);
	CHECK_ERR(modify_qkey(e.qp, IBV_QPS_INIT, CONTROLLED, IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		  EPERM);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RESET);
	/* EPERM comes first, as in the kernel: this mask is also wrong */
	CHECK_ERR(modify_qkey(e.qp, IBV_QPS_INIT, CONTROLLED, 0), EPERM);
	CHECK_OK(modify_qkey(e.qp, IBV_QPS_INIT, 0x7fffffff, IBV_QP_PKEY_INDEX | IBV_QP_PORT));
	CHECK_ERR(modify_qkey(e.qp, IBV_QPS_INIT, CONTROLLED, 0), EPERM);
	CHECK_OK(t_to_rtr(e.qp, &o, NULL));
	CHECK_ERR(modify_qkey(e.qp, IBV_QPS_RTS, 0x80000000u, IBV_QP_SQ_PSN), EPERM);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_RTR);
	CHECK_OK(t_to_rts(e.qp, &o, 0));
	CHECK_ERR(modify_qkey(e.qp, IBV_QPS_RTS, 0xffffffffu, 0), EPERM);
	CHECK_EQ(qkey_of(e.qp), 0x7fffffff);
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
}

/* A child as uid/gid 65534 with no groups (and so no capabilities). */
static pid_t stranger(void)
{
	gid_t none = 65534;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		t_alarm(30);
		CHECK_OK(setgroups(1, &none));
		CHECK_OK(setresgid(65534, 65534, 65534));
		CHECK_OK(setresuid(65534, 65534, 65534));
		CHECK(!has_net_raw());
	}
	return pid;
}

static void run_strangers(void)
{
	pid_t pid = stranger();

	if (pid == 0) {
		expect_eperm();
		_exit(0);
	}
	CHECK_EQ(t_wait_child(pid, 30000), 0);

	pid = stranger();
	if (pid == 0) {
		/* Root of a user namespace of its own: every capability there,
		 * none over the network namespace (the device's). */
		if (unshare(CLONE_NEWUSER)) {
			fprintf(stderr, "no user namespace (%s): that case not run\n",
				strerror(errno));
			_exit(0);
		}
		CHECK(has_net_raw());
		expect_eperm();
		_exit(0);
	}
	CHECK_EQ(t_wait_child(pid, 30000), 0);
}

/* With CAP_NET_RAW: a controlled Q_Key is taken, and a send naming any
 * controlled Q_Key goes with the sender's own. */
static void expect_allowed(void)
{
	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep a, b;
	struct t_info ib;

	t_opts_default(&o, IBV_QPT_UD);
	o.qkey = CONTROLLED;
	t_ep_create(&a, ctx, &o);
	t_ep_create(&b, ctx, &o);
	t_ep_connect(&a, &o, NULL);
	t_ep_connect(&b, &o, NULL);
	CHECK_EQ(qkey_of(a.qp), CONTROLLED);
	t_ep_info(&b, &ib);
	struct ibv_ah *ah = t_ah(a.pd, &ib, false);

	CHECK_OK(t_post_recv(b.qp, 1, b.buf, 40 + 64, b.mr->lkey));
	t_fill(a.buf, 64, 5);
	CHECK_OK(t_post_ud(a.qp, 2, a.buf, 64, a.mr->lkey, ah, ib.qpn, 0x80000000u,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a.cq, 2000), IBV_WC_SUCCESS);
	struct ibv_wc wc = t_wc(b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.src_qp, a.qp->qp_num);
	CHECK(t_check_fill(b.buf + 40, 64, 5));

	CHECK_OK(ibv_destroy_ah(ah));
	t_ep_destroy(&a);
	t_ep_destroy(&b);
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	t_alarm(60);
	if (!has_net_raw()) {
		expect_eperm();
		return 0;
	}
	run_strangers();          /* before this process starts the library's thread */
	expect_allowed();
	return 0;
}
