/*
 * The dereg rule (docs/security.md): when ibv_dereg_mr returns, no remote
 * access to that memory is in progress or can start.
 *
 * A peer streams 1 MiB RDMA WRITEs (or READs), several outstanding, into
 * the victim's MR.  Once the stream runs, the victim deregisters the MR,
 * at once fills the buffer with a pattern, and checks after the peer is
 * done and a grace period that the pattern is intact: nothing landed after
 * ibv_dereg_mr returned.  ibv_dereg_mr returns within 1 s, and the peer's
 * completions are SUCCESS, then one IBV_WC_REM_ACCESS_ERR (not
 * RETRY_EXC_ERR, not a hang), then flushes.
 *
 * The peer is this program run again ("peer write|read <victim>"): of the
 * same uid (shared memory: the peer writes our memory itself, the direct
 * path), then, as root, of uid 65534 (frames over a unix socket, which the
 * victim's responder places).  With SOFTVERBS_TRANSPORT=tcp, both over TCP.
 */
#define _GNU_SOURCE
#include "sec.h"
#include "common.h"

#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define TARGET_LEN (8u << 20)   /* the victim's MR */
#define CHUNK      (1u << 20)   /* one request */
#define DEPTH      4            /* requests outstanding */
#define FILL_PEER  0xab
#define FILL_AFTER 0x5c

/* ---- the peer ---- */

static void peer_parse(char **argv, struct t_info *v)
{
	memset(v, 0, sizeof(*v));
	v->qpn = (uint32_t)strtoul(argv[0], NULL, 0);
	v->lid = (uint16_t)strtoul(argv[1], NULL, 0);
	v->psn = (uint32_t)strtoul(argv[2], NULL, 0);
	v->rkey = (uint32_t)strtoul(argv[3], NULL, 0);
	v->addr = strtoull(argv[4], NULL, 0);
	v->len = strtoull(argv[5], NULL, 0);
}

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* One completion of the stream: SUCCESS until the first error, which must
 * be REM_ACCESS_ERR; only flushes after it. */
static void peer_completion(const struct ibv_wc *wc, int *ok, int *first_err)
{
	if (*first_err < 0 && wc->status == IBV_WC_SUCCESS) {
		if (++*ok == 1)
			say("go\n");
		return;
	}
	if (*first_err < 0) {
		*first_err = wc->status;
		if (wc->status != IBV_WC_REM_ACCESS_ERR)
			T_FAIL("peer: after %d successes: %s", *ok, ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		T_FAIL("peer: after the error: %s", ibv_wc_status_str(wc->status));
}

static int peer_main(char **argv)
{
	enum ibv_wr_opcode op = !strcmp(argv[0], "read") ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
	struct t_info victim, mine;
	struct t_opts o;
	struct t_ep e;
	sigset_t usr1;
	int sig, ok = 0, first_err = -1, outstanding = 0;
	uint64_t n = 0, end;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &usr1, NULL));   /* before any thread */
	t_alarm(60);
	peer_parse(argv + 1, &victim);
	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = CHUNK;
	t_ep_create(&e, t_open(), &o);
	memset(e.buf, FILL_PEER, CHUNK);
	t_ep_info(&e, &mine);
	say("%u %u %u\n", mine.qpn, mine.lid, mine.psn);
	t_ep_connect(&e, &o, &victim);
	CHECK_OK(sigwait(&usr1, &sig));          /* the victim's QP is ready */
	end = t_now_ms() + 30000;
	while (first_err < 0 || outstanding) {
		struct ibv_wc wc[DEPTH];
		int got;

		while (first_err < 0 && outstanding < DEPTH) {
			uint64_t off = (n % (victim.len / CHUNK)) * CHUNK;

			CHECK_OK(t_post_rdma(e.qp, op, n++, e.buf, CHUNK, e.mr->lkey,
					     victim.addr + off, victim.rkey, IBV_SEND_SIGNALED));
			outstanding++;
		}
		got = ibv_poll_cq(e.cq, DEPTH, wc);
		CHECK(got >= 0);
		for (int i = 0; i < got; i++, outstanding--)
			peer_completion(&wc[i], &ok, &first_err);
		if (t_now_ms() > end)
			T_FAIL("peer: %d successes, still %d outstanding after 30 s", ok, outstanding);
	}
	CHECK(ok > 0);
	say("done %d\n", ok);
	return 0;
}

/* ---- the victim ---- */

/* The next line from the peer within timeout_ms (without its newline). */
static void read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t n = 0;
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;

	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(end - t_now_ms());

		if ((int64_t)(end - t_now_ms()) <= 0 || poll(&p, 1, left) <= 0)
			T_FAIL("no line from the peer within %d ms (got \"%.*s\")", timeout_ms,
			       (int)n, buf);
		if (read(fd, buf + n, 1) != 1)
			T_FAIL("the peer closed its output (got \"%.*s\")", (int)n, buf);
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
}

/* The peer as our own uid: this program again, its stdout a pipe. */
static pid_t spawn_same_uid(char *const args[], int *out)
{
	char *argv[16] = { "security_dereg" };
	int pfd[2];
	pid_t pid;

	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	CHECK_OK(pipe2(pfd, O_CLOEXEC));
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		dup2(pfd[1], 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	*out = pfd[0];
	return pid;
}

static void attack(enum ibv_wr_opcode op, bool stranger)
{
	const char *what = op == IBV_WR_RDMA_READ ? "read" : "write";
	char a[6][32], line[128], *args[9];
	struct t_info mine, peer;
	struct t_opts o;
	struct t_ep e;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t t0, took;
	int out;
	pid_t pid;

	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&e, t_open(), &o);
	buf = mmap(NULL, TARGET_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED);
	memset(buf, 0x11, TARGET_LEN);
	mr = CHECK_PTR(ibv_reg_mr(e.pd, buf, TARGET_LEN, T_ALL_ACCESS));
	t_ep_info(&e, &mine);
	snprintf(a[0], sizeof(a[0]), "%u", mine.qpn);
	snprintf(a[1], sizeof(a[1]), "%u", mine.lid);
	snprintf(a[2], sizeof(a[2]), "%u", mine.psn);
	snprintf(a[3], sizeof(a[3]), "%u", mr->rkey);
	snprintf(a[4], sizeof(a[4]), "%" PRIuPTR, (uintptr_t)buf);
	snprintf(a[5], sizeof(a[5]), "%u", TARGET_LEN);
	args[0] = "peer";
	args[1] = (char *)what;
	for (int i = 0; i < 6; i++)
		args[i + 2] = a[i];
	args[8] = NULL;
	pid = stranger ? sec_spawn("security_dereg", args, &out) : spawn_same_uid(args, &out);

	read_line(out, line, sizeof(line), 10000);
	memset(&peer, 0, sizeof(peer));
	CHECK_EQ(sscanf(line, "%u %hu %u", &peer.qpn, &peer.lid, &peer.psn), 3);
	t_ep_connect(&e, &o, &peer);
	CHECK_OK(kill(pid, SIGUSR1));
	read_line(out, line, sizeof(line), 10000);
	CHECK(!strcmp(line, "go"));
	t_sleep_ms(20);                          /* well into the stream */

	t0 = t_now_ms();
	CHECK_OK(ibv_dereg_mr(mr));
	took = t_now_ms() - t0;
	memset(buf, FILL_AFTER, TARGET_LEN);
	if (took >= 1000)
		T_FAIL("%s: ibv_dereg_mr took %" PRIu64 " ms", what, took);

	read_line(out, line, sizeof(line), 40000);
	CHECK(!strncmp(line, "done ", 5));
	CHECK_EQ(t_wait_child(pid, 10000), 0);
	t_sleep_ms(200);                         /* anything late would have landed */
	for (size_t i = 0; i < TARGET_LEN; i++)
		if (buf[i] != FILL_AFTER)
			T_FAIL("%s (%s): byte %zu is %#x after ibv_dereg_mr returned", what,
			       stranger ? "uid 65534" : "same uid", i, buf[i]);
	fprintf(stderr, "%s, %s: %s, ibv_dereg_mr %" PRIu64 " ms\n", what,
		stranger ? "uid 65534" : "same uid", line, took);
	close(out);
	munmap(buf, TARGET_LEN);
	{
		struct ibv_context *ctx = e.ctx;

		t_ep_destroy(&e);
		CHECK_OK(ibv_close_device(ctx));
	}
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "peer"))
		return peer_main(argv + 2);
	t_alarm(150);
	attack(IBV_WR_RDMA_WRITE, false);
	attack(IBV_WR_RDMA_READ, false);
	if (geteuid() != 0) {
		fprintf(stderr, "not root: no peer of another uid\n");
		return 0;
	}
	attack(IBV_WR_RDMA_WRITE, true);
	attack(IBV_WR_RDMA_READ, true);
	return 0;
}
