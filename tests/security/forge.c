/*
 * Forged handshake (docs/security.md, "Only the connected peer gets in").
 *
 * A connected RC pair a <-> b carries RDMA WRITEs while a stranger (another
 * uid, forge_attacker) connects to b's port, says HELLO claiming to be a
 * (the QPN is public: it is the port), and blindly sends RDMA WRITEs and
 * READs at b's secret buffer with its real rkey and with guessed ones.
 * Then it asks a, claiming to be b, about guessed nonces.
 *
 * Invariants: the stranger gets no HELLO_ACK, no READ response, no "yes",
 * and is disconnected; b's secret is unchanged; every WRITE a completes
 * landed in b's buffer; both QPs stay in RTS.
 */
#include <signal.h>
#include <sys/wait.h>

#include "sec.h"
#include "common.h"

#define DATA_LEN (64 * 1024)          /* a's WRITEs land here in b */
#define SECRET_OFF DATA_LEN           /* the stranger aims here */
#define CHUNK 4096

/* Run the attacker with `args`, return its one output line. */
static void attack(char *const args[], char *line, size_t cap)
{
	int fd;
	pid_t pid = sec_spawn("security_forge_attacker", args, &fd);
	FILE *f = fdopen(fd, "r");
	int st;

	CHECK(f);
	if (!fgets(line, (int)cap, f))
		line[0] = 0;
	fclose(f);
	st = t_wait_child(pid, 20000);
	CHECK_EQ(st, 0);
	fprintf(stderr, "attacker: %s", line);
}

/* a writes CHUNK-sized pieces into b's data area; each completion's bytes
 * must be in b's memory.  Runs while the stranger is at work. */
static void legit_writes(struct t_pair *p, int rounds, uint8_t seed)
{
	for (int i = 0; i < rounds; i++) {
		size_t off = (size_t)(i % (DATA_LEN / CHUNK)) * CHUNK;
		struct ibv_wc wc;

		t_fill(p->a.buf + off, CHUNK, (uint8_t)(seed + i));
		CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, (uint64_t)i, p->a.buf + off, CHUNK,
				     p->a.mr->lkey, p->ib.addr + off, p->ib.rkey, IBV_SEND_SIGNALED));
		wc = t_wc(p->a.cq, 5000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (!t_check_fill(p->b.buf + off, CHUNK, (uint8_t)(seed + i)))
			T_FAIL("acknowledged WRITE %d did not land", i);
	}
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	char port[16], dst[16], src[16], rkey[16], va[32], line[256];
	int hello_ack = -1, read_resp = -1, closed = -1, yes = -1;

	t_alarm(50);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = 2 * DATA_LEN;
	o.mr_access = T_ALL_ACCESS;
	o.qp_access = T_ALL_REMOTE;
	t_pair_open(&p, &o);
	t_fill(p.b.buf + SECRET_OFF, DATA_LEN, 0x5e);
	legit_writes(&p, 4, 1);       /* the pair is up before the stranger comes */

	snprintf(port, sizeof(port), "%u", p.ib.qpn >> 8);
	snprintf(dst, sizeof(dst), "%u", p.ib.qpn);
	snprintf(src, sizeof(src), "%u", p.ia.qpn);
	snprintf(rkey, sizeof(rkey), "%u", p.ib.rkey);
	snprintf(va, sizeof(va), "%llu", (unsigned long long)(p.ib.addr + SECRET_OFF));
	{
		char *args[] = { "hello", port, dst, src, rkey, va, NULL };
		int fd;
		pid_t pid = sec_spawn("security_forge_attacker", args, &fd);
		FILE *f = fdopen(fd, "r");

		CHECK(f);
		legit_writes(&p, 200, 9);          /* while the stranger is at work */
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		CHECK_EQ(t_wait_child(pid, 20000), 0);
		fprintf(stderr, "attacker: %s", line);
	}
	CHECK_EQ(sscanf(line, "hello_ack %d read_resp %d closed %d", &hello_ack, &read_resp,
			&closed), 3);
	CHECK_EQ(hello_ack, 0);
	CHECK_EQ(read_resp, 0);
	CHECK_EQ(closed, 1);
	if (!t_check_fill(p.b.buf + SECRET_OFF, DATA_LEN, 0x5e))
		T_FAIL("the stranger changed b's memory");

	snprintf(port, sizeof(port), "%u", p.ia.qpn >> 8);
	snprintf(dst, sizeof(dst), "%u", p.ia.qpn);
	snprintf(src, sizeof(src), "%u", p.ib.qpn);
	{
		char *args[] = { "ask", port, dst, src, NULL };

		attack(args, line, sizeof(line));
	}
	CHECK_EQ(sscanf(line, "verify_yes %d closed %d", &yes, &closed), 2);
	CHECK_EQ(yes, 0);
	CHECK_EQ(closed, 1);

	legit_writes(&p, 50, 77);        /* the pair is unharmed */
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_RTS);
	CHECK_EQ(t_qp_state(p.b.qp), IBV_QPS_RTS);
	t_pair_close(&p);
	return 0;
}
