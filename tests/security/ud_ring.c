/*
 * UD rings only between processes of one user (docs/security.md,
 * "Datagram sources"; transport/shm/dgring.c).
 *
 *   1. A stranger (another uid, forge_attacker) binds the name where a
 *      port group takes UD rings, and a UD QP of ours sends there: our
 *      sender must hand it no ring (no descriptor at all).
 *   2. The stranger offers our port group a valid ring: we must not take
 *      it (no answer), and our UD QP still receives datagrams of our own.
 */
#include "sec.h"
#include "common.h"

/* Run forge_attacker with args, return its one line of output. */
static void attacker(char **args, char *line, size_t len, bool (*during)(void *), void *arg)
{
	int fd;
	pid_t pid = sec_spawn("security_forge_attacker", args, &fd);
	FILE *f = fdopen(fd, "r");

	CHECK(f);
	if (!fgets(line, (int)len, f))
		line[0] = 0;
	if (during && !strncmp(line, "listening", 9)) {
		CHECK(during(arg));
		if (!fgets(line, (int)len, f))
			line[0] = 0;
	}
	fclose(f);
	CHECK_EQ(t_wait_child(pid, 20000), 0);
	fprintf(stderr, "attacker %s: %s", args[0], line);
}

struct send_to_port {
	struct t_pair *p;
	struct ibv_ah *ah;
	uint16_t port;
};

/* Our UD QP sends to QP 1 of the stranger's port: the ring is asked for now. */
static bool send_there(void *arg)
{
	struct send_to_port *s = arg;

	CHECK_OK(t_post_ud(s->p->a.qp, 1, s->p->a.buf, 64, s->p->a.mr->lkey, s->ah,
			   ((uint32_t)s->port << 8) | 1, 0x11111111, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(s->p->a.cq, 5000), IBV_WC_SUCCESS);
	return true;
}

static void offered_ring(struct t_pair *p)
{
	struct send_to_port s = { .p = p };
	struct t_opts o;
	char line[128] = "", port[16];
	int fds = 99;

	s.ah = t_pair_open_ud(p, &o, false);
	for (int attempt = 0; attempt < 5 && fds == 99; attempt++) {
		char *args[] = { "listen", port, "ud", NULL };

		s.port = (uint16_t)(40000 + (getpid() * 7 + attempt * 997) % 20000);
		snprintf(port, sizeof(port), "%u", s.port);
		attacker(args, line, sizeof(line), send_there, &s);
		if (sscanf(line, "fds %d", &fds) != 1)
			fds = 99;
	}
	CHECK(fds != 99);
	CHECK(fds <= 0);                     /* no hello, no memfd: it closed */
	CHECK_OK(ibv_destroy_ah(s.ah));
}

static void took_ring(struct t_pair *p)
{
	char line[128], port[16];
	char *args[] = { "udoffer", port, NULL };
	struct t_opts o;
	struct ibv_ah *ah;
	int answered = -1;

	snprintf(port, sizeof(port), "%u", p->b.qp->qp_num >> 8);
	attacker(args, line, sizeof(line), NULL, NULL);
	CHECK_EQ(sscanf(line, "answered %d", &answered), 1);
	CHECK_EQ(answered, 0);
	/* and ours still arrive */
	t_opts_default(&o, IBV_QPT_UD);
	ah = CHECK_PTR(t_ah(p->a.pd, &p->ib, false));
	CHECK_OK(t_post_recv(p->b.qp, 7, p->b.buf, 40 + 64, p->b.mr->lkey));
	CHECK_OK(t_post_ud(p->a.qp, 2, p->a.buf, 64, p->a.mr->lkey, ah, p->b.qp->qp_num,
			   o.qkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	struct ibv_wc wc = t_wc(p->b.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.src_qp, p->a.qp->qp_num);
	CHECK_OK(ibv_destroy_ah(ah));
}

int main(void)
{
	struct t_pair p;

	t_alarm(60);
	T_SKIP_IF(sec_tcp(), "UD rings are for one host's processes, not over TCP");
	offered_ring(&p);
	took_ring(&p);
	t_pair_close(&p);
	return 0;
}
