/*
 * Forged UD sources (docs/security.md).  A stranger (uid 65534) that knows a
 * victim UD QP's Q_Key sends it datagrams claiming a legitimate peer's QPN
 * and address, unicast and multicast, from every socket it can bind
 * (ud_forge_attacker.c).  None may be delivered: a completion's src_qp,
 * slid and GRH source must be where the datagram came from, and a UDP
 * source port or a unix sender name is held by one socket only.  Then the
 * peer's own datagrams arrive with its true identity.
 *
 * The attacker may bind the peer's port on a loopback address other than the
 * device address (the kernel allows it while the peer's UDP socket holds only
 * A:P); such a datagram's source is then not the address it claims (or is a
 * loopback address that is not A), and it is dropped all the same.
 *
 * First, a forked child that becomes uid 65534 (no CAP_NET_RAW) must get
 * EPERM for a controlled Q_Key, which would otherwise let it take datagrams
 * meant for privileged QPs.
 */
#define _GNU_SOURCE
#include "common.h"
#include "sec.h"

#include <arpa/inet.h>
#include <grp.h>

#define QKEY 0x1234abcdu
#define NRECV 16
#define SLOT 256              /* bytes per receive buffer: GRH + payload */

static const union ibv_gid mgid = { .raw = { 0xff, 0x0e, 0, 0, 0, 0, 0, 0,
					     0, 0, 0, 0, 0x5e, 0xc0, 0xf0, 0x01 } };

/* A child as a stranger: a controlled Q_Key is EPERM, an ordinary one fine. */
static void stranger_qkey(void)
{
	gid_t none = SEC_UID;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct ibv_context *ctx;
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
					 .qkey = 0x80000001u };
		int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		struct t_opts o;
		struct t_ep e;

		t_alarm(30);
		CHECK_OK(setgroups(1, &none));
		CHECK_OK(setresgid(SEC_UID, SEC_UID, SEC_UID));
		CHECK_OK(setresuid(SEC_UID, SEC_UID, SEC_UID));
		ctx = t_open();
		t_opts_default(&o, IBV_QPT_UD);
		t_ep_create(&e, ctx, &o);
		CHECK_ERR(ibv_modify_qp(e.qp, &a, mask), EPERM);
		a.qkey = QKEY;
		CHECK_OK(ibv_modify_qp(e.qp, &a, mask));
		t_ep_destroy(&e);
		CHECK_OK(ibv_close_device(ctx));
		_exit(0);
	}
	CHECK_EQ(t_wait_child(pid, 30000), 0);
}

/* The legitimate peer, in a process of its own: one unicast datagram (with
 * a GRH) and one multicast datagram, each when the victim says so. */
static void peer(int fd)
{
	struct ibv_context *ctx = t_open();
	struct ibv_ah_attr mc = { .dlid = 0xc001, .port_num = 1, .is_global = 1,
				  .grh = { .dgid = mgid, .hop_limit = 1 } };
	struct t_opts o;
	struct t_ep e;
	struct t_info mine, victim;

	t_alarm(40);
	t_opts_default(&o, IBV_QPT_UD);
	o.qkey = QKEY;
	t_ep_create(&e, ctx, &o);
	t_ep_connect(&e, &o, NULL);
	t_ep_info(&e, &mine);
	t_xchg(fd, &mine, &victim);
	struct ibv_ah *to = t_ah(e.pd, &victim, true);
	struct ibv_ah *group = CHECK_PTR(ibv_create_ah(e.pd, &mc));

	t_sync(fd);
	CHECK_OK(t_post_ud(e.qp, 1, e.buf, 8, e.mr->lkey, to, victim.qpn, QKEY, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e.cq, 2000), IBV_WC_SUCCESS);
	t_sync(fd);
	CHECK_OK(t_post_ud(e.qp, 2, e.buf, 8, e.mr->lkey, group, 0xffffff, QKEY,
			   IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e.cq, 2000), IBV_WC_SUCCESS);
	t_sync(fd);
	CHECK_OK(ibv_destroy_ah(group));
	CHECK_OK(ibv_destroy_ah(to));
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
}

struct attack {
	char bind[8][128];        /* "name=result" lines */
	int nbind;
	uint32_t honest;
};

static const char *bind_result(const struct attack *r, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < r->nbind; i++)
		if (!strncmp(r->bind[i], name, n) && r->bind[i][n] == '=')
			return r->bind[i] + n + 1;
	T_FAIL("the attacker did not report %s", name);
}

static void run_attacker(const struct t_info *victim, const struct t_info *legit,
			 struct in_addr dev, struct attack *r)
{
	char vq[16], addr[INET_ADDRSTRLEN], pq[16], qk[16], mg[33], line[128];
	char *argv[] = { vq, addr, pq, qk, mg, NULL };
	int out;
	FILE *f;

	snprintf(vq, sizeof(vq), "%u", victim->qpn);
	inet_ntop(AF_INET, &dev, addr, sizeof(addr));
	snprintf(pq, sizeof(pq), "%u", legit->qpn);
	snprintf(qk, sizeof(qk), "0x%x", QKEY);
	for (int i = 0; i < 16; i++)
		snprintf(mg + 2 * i, 3, "%02x", mgid.raw[i]);
	pid_t pid = sec_spawn("security_ud_forge_attacker", argv, &out);

	f = CHECK_PTR(fdopen(out, "r"));
	memset(r, 0, sizeof(*r));
	while (fgets(line, sizeof(line), f) && strcmp(line, "done\n")) {
		line[strcspn(line, "\n")] = 0;
		fprintf(stderr, "attacker: %s\n", line);
		if (sscanf(line, "honest=%u", &r->honest) != 1 && r->nbind < 8)
			snprintf(r->bind[r->nbind++], sizeof(r->bind[0]), "%s", line);
	}
	fclose(f);
	CHECK_EQ(t_wait_child(pid, 10000), 0);
	CHECK(r->honest);
}

int main(void)
{
	T_SKIP_IF(geteuid() != 0, "needs root to run an attacker as uid %d", SEC_UID);
	t_alarm(60);
	stranger_qkey();

	int fd;
	pid_t child = t_fork(&fd);

	if (child == 0) {
		peer(fd);
		_exit(0);
	}

	struct ibv_context *ctx = t_open();
	struct t_opts o;
	struct t_ep v;
	struct t_info mine, legit;
	struct attack r;
	struct in_addr dev;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_UD);
	o.qkey = QKEY;
	t_ep_create(&v, ctx, &o);
	t_ep_connect(&v, &o, NULL);
	CHECK_OK(ibv_attach_mcast(v.qp, &mgid, 0xc001));
	for (int i = 0; i < NRECV; i++)
		CHECK_OK(t_post_recv(v.qp, i, v.buf + i * SLOT, SLOT, v.mr->lkey));
	t_ep_info(&v, &mine);
	t_xchg(fd, &mine, &legit);
	memcpy(&dev.s_addr, &mine.gid.raw[12], 4);
	CHECK(legit.qpn >> 8 != mine.qpn >> 8);       /* two processes, two ports */

	run_attacker(&mine, &legit, dev, &r);
	/* The peer's port is held on the device address: neither it nor the
	 * wildcard can be bound, nor its multicast sender name. */
	CHECK(strcmp(bind_result(&r, "bind_dev_port"), "ok"));
	CHECK(strcmp(bind_result(&r, "bind_any_port"), "ok"));
	CHECK(strcmp(bind_result(&r, "bind_mc_peer"), "ok"));
	/* Only the attacker's two honest datagrams (unicast, multicast) arrive. */
	for (int i = 0; i < 2; i++) {
		wc = t_wc(v.cq, 2000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.src_qp, r.honest);
		CHECK_EQ(wc.slid, mine.lid);
	}
	t_no_wc(v.cq, 300);

	/* The peer's unicast datagram: its true QPN, LID and GID. */
	t_sync(fd);
	wc = t_wc(v.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.src_qp, legit.qpn);
	CHECK_EQ(wc.slid, legit.lid);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK(!memcmp(&((struct ibv_grh *)(v.buf + 2 * SLOT))->sgid, &legit.gid, 16));
	/* ... and its multicast one. */
	t_sync(fd);
	wc = t_wc(v.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.src_qp, legit.qpn);
	CHECK_EQ(wc.slid, legit.lid);
	t_sync(fd);
	CHECK_EQ(t_wait_child(child, 10000), 0);

	CHECK_OK(ibv_detach_mcast(v.qp, &mgid, 0xc001));
	t_ep_destroy(&v);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
