/*
 * Bounded resources (docs/security.md): a stranger floods the victim's
 * softverbs port with connections that never send a HELLO.
 *
 * The victim (this process) has an RC QP connected to a peer process and
 * keeps a ping-pong of SENDs going, every byte checked.  While another uid
 * (security_flood_attacker) holds FLOOD_CONNS connections to its port:
 *   - its traffic completes, and it can still create a completion channel
 *     and a CQ;
 *   - every one of those connections is closed within about three seconds
 *     (the pending cap refuses most at once, the rest expire);
 *   - its progress thread does not spin (CPU time over a quiet window).
 * Then again with the victim's descriptor limit lowered, so that accepting
 * hits EMFILE: still no spin, traffic still flows, and once the attacker
 * has gone the victim gets descriptors again.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "common.h"
#include "sec.h"

#define FLOOD_CONNS 300
#define FLOOD_HOLD_MS 3500
#define CPU_WINDOW_MS 1500
#define CPU_MAX_PCT 50          /* of one core: a spinning thread takes ~100 */
#define EMFILE_ROOM 22          /* descriptors left to the victim: fewer than the pending cap */
#define HALF 32768              /* the victim sends from the buffer's first half */

/* ---- the ping-pong: the victim sends, the peer checks and answers ---- */

static uint32_t msg_len(int i)
{
	return 1 + (uint32_t)(i * 7919) % (HALF - 1);
}

static uint8_t msg_seed(int phase, int i)
{
	return (uint8_t)(phase * 61 + i);
}

/* One completion of each kind (send, receive); returns the receive's length. */
static uint32_t wait_send_recv(struct ibv_cq *cq)
{
	uint32_t len = 0;
	bool sent = false, got = false;

	while (!sent || !got) {
		struct ibv_wc wc = t_wc(cq, 10000);

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND) {
			CHECK(!sent);
			sent = true;
		} else {
			CHECK_EQ(wc.opcode, IBV_WC_RECV);
			CHECK(!got);
			got = true;
			len = wc.byte_len;
		}
	}
	return len;
}

static void victim_traffic(struct t_ep *e, int phase, int n)
{
	for (int i = 0; i < n; i++) {
		uint32_t len = msg_len(i);
		uint8_t seed = msg_seed(phase, i);

		CHECK_OK(t_post_recv(e->qp, 2, e->buf + HALF, HALF, e->mr->lkey));
		t_fill(e->buf, len, seed);
		CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 1, e->buf, len, e->mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_EQ(wait_send_recv(e->cq), len);
		CHECK(t_check_fill(e->buf + HALF, len, seed ^ 0xa5));
	}
}

/* A receive is always posted before the victim's next SEND can come; the
 * completion of our answer may come after that SEND. */
static void peer_traffic(struct t_ep *e, int phase, int n)
{
	int i = 0, sent = 0;

	while (i < n || sent < n) {
		struct ibv_wc wc = t_wc(e->cq, 10000);
		uint32_t len = msg_len(i);

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (wc.opcode == IBV_WC_SEND) {
			sent++;
			continue;
		}
		CHECK_EQ(wc.opcode, IBV_WC_RECV);
		CHECK(i < n);
		CHECK_EQ(wc.byte_len, len);
		CHECK(t_check_fill(e->buf, len, msg_seed(phase, i)));
		CHECK_OK(t_post_recv(e->qp, 2, e->buf, HALF, e->mr->lkey));
		t_fill(e->buf + HALF, len, msg_seed(phase, i) ^ 0xa5);
		CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 1, e->buf + HALF, len, e->mr->lkey,
				     IBV_SEND_SIGNALED));
		i++;
	}
}

/* Both processes run the same list of phases, in step. */
static const int phase_msgs[] = { 50, 200, 50, 100, 50 };
#define NPHASES ((int)(sizeof(phase_msgs) / sizeof(phase_msgs[0])))

static void peer_main(struct t_side *s)
{
	CHECK_OK(t_post_recv(s->e.qp, 2, s->e.buf, HALF, s->e.mr->lkey));
	for (int p = 0; p < NPHASES; p++) {
		t_sync(s->fd);
		peer_traffic(&s->e, p, phase_msgs[p]);
		t_sync(s->fd);
	}
	t_sync(s->fd);               /* the victim is done with the QP */
}

static void phase(struct t_ep *e, int fd, int p)
{
	t_sync(fd);
	victim_traffic(e, p, phase_msgs[p]);
	t_sync(fd);
}

/* ---- what the victim watches ---- */

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	CHECK_OK(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts));
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The main thread sleeps and the peer waits: what the process spends is
 * its progress thread's. */
static void check_no_spin(const char *when)
{
	uint64_t c0 = cpu_ns(), t0 = t_now_ms(), pct;

	t_sleep_ms(CPU_WINDOW_MS);
	pct = (cpu_ns() - c0) / 10000 / (t_now_ms() - t0);
	fprintf(stderr, "%s: victim CPU %llu%% of a core\n", when, (unsigned long long)pct);
	CHECK(pct < CPU_MAX_PCT);
}

/* Can the application still get descriptors from the library? */
static bool make_channel_and_cq(struct ibv_context *ctx)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq;

	if (!ch)
		return false;
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	if (cq)
		CHECK_OK(ibv_destroy_cq(cq));
	CHECK_OK(ibv_destroy_comp_channel(ch));
	return cq != NULL;
}

static int read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	uint64_t end = t_now_ms() + (uint64_t)timeout_ms;
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = (int64_t)(end - t_now_ms());

		if (left <= 0 || poll(&p, 1, (int)left) <= 0 || read(fd, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

static pid_t start_attacker(uint16_t port, int *out, int *opened)
{
	char sport[16], count[16], hold[16], line[64];
	char *argv[] = { sport, sec_tcp() ? "tcp" : "unix", count, hold, NULL };
	pid_t pid;

	snprintf(sport, sizeof(sport), "%u", port);
	snprintf(count, sizeof(count), "%d", FLOOD_CONNS);
	snprintf(hold, sizeof(hold), "%d", FLOOD_HOLD_MS);
	pid = sec_spawn("security_flood_attacker", argv, out);
	CHECK_OK(read_line(*out, line, sizeof(line), 10000));
	CHECK_EQ(sscanf(line, "open %d", opened), 1);
	fprintf(stderr, "attacker (uid %d): %d connections to port %u\n", SEC_UID, *opened, port);
	return pid;
}

static void attacker_closed(int out, int *closed, int *slowest_ms)
{
	char line[64];

	CHECK_OK(read_line(out, line, sizeof(line), 10000));
	CHECK_EQ(sscanf(line, "closed %d max_ms %d", closed, slowest_ms), 2);
	fprintf(stderr, "victim closed %d of them, the last after %d ms\n", *closed, *slowest_ms);
}

/* ---- the two floods ---- */

static void flood_pending(struct t_ep *e, int fd)
{
	int out, opened, closed, slowest;
	pid_t a = start_attacker((uint16_t)(e->qp->qp_num >> 8), &out, &opened);

	CHECK_EQ(opened, FLOOD_CONNS);
	phase(e, fd, 1);
	CHECK(make_channel_and_cq(e->ctx));
	check_no_spin("pending flood");
	attacker_closed(out, &closed, &slowest);
	CHECK_EQ(closed, opened);
	CHECK(slowest <= 3100);
	CHECK_EQ(t_wait_child(a, 10000), 0);
	close(out);
	phase(e, fd, 2);
}

static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int max = -1;

	CHECK(d);
	while ((de = readdir(d)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9' && atoi(de->d_name) > max)
			max = atoi(de->d_name);
	closedir(d);
	return max;
}

/* Fill the holes below the highest descriptor (closed channels left them),
 * so that a limit just above it leaves exactly the room we choose. */
static int plug_holes(int *plugs, int cap)
{
	int top = highest_fd(), n = 0;

	for (;;) {
		int f = open("/dev/null", O_RDONLY | O_CLOEXEC);

		CHECK(f >= 0);
		if (f > top) {
			close(f);
			return n;
		}
		CHECK(n < cap);
		plugs[n++] = f;
	}
}

static void flood_emfile(struct t_ep *e, int fd)
{
	static int plugs[4096];
	struct rlimit saved, low;
	int out, opened, closed, slowest, nplugs = plug_holes(plugs, 4096);
	uint64_t t0;
	pid_t a;

	CHECK_OK(getrlimit(RLIMIT_NOFILE, &saved));
	low = saved;
	low.rlim_cur = (rlim_t)(highest_fd() + 1 + EMFILE_ROOM);
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
	a = start_attacker((uint16_t)(e->qp->qp_num >> 8), &out, &opened);
	CHECK(opened > EMFILE_ROOM);
	phase(e, fd, 3);
	check_no_spin("descriptor flood");
	attacker_closed(out, &closed, &slowest);
	CHECK_EQ(t_wait_child(a, 10000), 0);

	/* The attacker has gone: what it left queued is accepted and closed. */
	t0 = t_now_ms();
	while (!make_channel_and_cq(e->ctx)) {
		CHECK(t_now_ms() - t0 < 5000);
		t_sleep_ms(10);
	}
	fprintf(stderr, "descriptors again %llu ms after the attacker left\n",
		(unsigned long long)(t_now_ms() - t0));
	close(out);
	phase(e, fd, 4);
	check_no_spin("after the floods");
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &saved));
	while (nplugs)
		close(plugs[--nplugs]);
}

static void victim_main(struct t_side *s)
{
	phase(&s->e, s->fd, 0);
	flood_pending(&s->e, s->fd);
	flood_emfile(&s->e, s->fd);
	t_sync(s->fd);
}

int main(void)
{
	struct t_opts o;

	T_SKIP_IF(geteuid() != 0, "needs root to run an attacker as uid %d", SEC_UID);
	t_opts_default(&o, IBV_QPT_RC);
	CHECK_EQ(t_two_procs(&o, &o, 55, 10000, victim_main, peer_main, NULL), 0);
	return 0;
}
