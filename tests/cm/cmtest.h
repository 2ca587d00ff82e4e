/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the librdmacm tests: checks, bounded waits for CM events,
 * two-process scaffolding.  Every test arms alarm() so nothing can hang;
 * exit 0 = pass, 77 = skip, anything else = fail.
 */
#ifndef CMTEST_H
#define CMTEST_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define SKIP 77

static const char *cmt_name = "cmtest";

#define FAIL(...) do { \
	fprintf(stderr, "%s[%d] FAIL %s:%d: ", cmt_name, (int)getpid(), __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)
#define CHECK(c) do { if (!(c)) FAIL("check failed: %s (errno %d %s)", #c, errno, strerror(errno)); } while (0)
#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) FAIL("%s == %lld, expected %s == %lld", #a, _a, #b, _b); } while (0)
/* A call that must fail with errno e. */
#define CHECK_ERR(call, e) do { errno = 0; int _r = (int)(call); \
	if (_r != -1 || errno != (e)) FAIL("%s returned %d errno %d (%s), expected -1/%s", \
		#call, _r, errno, strerror(errno), #e); } while (0)
#define CHECK_OK(call) do { errno = 0; if ((call) != 0) \
	FAIL("%s failed: errno %d (%s)", #call, errno, strerror(errno)); } while (0)
#define MSG(...) do { printf("%s[%d]: ", cmt_name, (int)getpid()); printf(__VA_ARGS__); \
	putchar('\n'); fflush(stdout); } while (0)

static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void cmt_alarm(int sig)
{
	(void)sig;
	static const char m[] = "cmtest: timed out (alarm)\n";
	ssize_t r = write(2, m, sizeof(m) - 1);
	(void)r;
	_exit(2);
}

static inline void cmt_init(const char *name, unsigned seconds)
{
	cmt_name = name;
	/* Short CM timeouts, unless the caller chose others. */
	setenv("SOFTVERBS_CM_TIMEOUT_MS", "1000", 0);
	setenv("SOFTVERBS_CM_TIMEWAIT_MS", "200", 0);
	signal(SIGALRM, cmt_alarm);
	alarm(seconds);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* Next event on ch within ms, or NULL. */
static inline struct rdma_cm_event *get_event_within(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	long long end = now_ms() + ms;

	for (;;) {
		int left = (int)(end - now_ms());

		if (left < 0)
			left = 0;
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return NULL;
		if (pfd.revents & POLLIN) {
			/* Non-blocking, so a spurious wakeup cannot block. */
			int fl = fcntl(ch->fd, F_GETFL);

			if (!(fl & O_NONBLOCK))
				fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
			if (rdma_get_cm_event(ch, &ev) == 0)
				return ev;
			if (errno != EAGAIN)
				FAIL("rdma_get_cm_event: %s", strerror(errno));
		}
		if (now_ms() >= end)
			return NULL;
	}
}

/* Wait for an event of this type; fail on anything else. */
static inline struct rdma_cm_event *expect_event(struct rdma_event_channel *ch,
						 enum rdma_cm_event_type type, int ms)
{
	struct rdma_cm_event *ev = get_event_within(ch, ms);

	if (!ev)
		FAIL("no event within %d ms (wanted %s)", ms, rdma_event_str(type));
	if (ev->event != type)
		FAIL("got %s status %d, wanted %s", rdma_event_str(ev->event), ev->status,
		     rdma_event_str(type));
	return ev;
}

static inline void expect_ack(struct rdma_event_channel *ch, enum rdma_cm_event_type type,
			      int status, int ms)
{
	struct rdma_cm_event *ev = expect_event(ch, type, ms);

	CHECK_EQ(ev->status, status);
	CHECK_OK(rdma_ack_cm_event(ev));
}

static inline struct sockaddr_in loop_addr(uint16_t port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* Skip the whole test when there is no RDMA device to bind to. */
static inline void need_device(void)
{
	int n = 0;
	struct ibv_context **l = rdma_get_devices(&n);

	if (l)
		rdma_free_devices(l);
	if (n <= 0) {
		printf("%s: no RDMA device, skipping\n", cmt_name);
		exit(SKIP);
	}
}

/* Roles run in a fresh process: fork + exec of this same program with the
 * role name, so the child never inherits the parent's verbs or CM state.
 * main() must start with cmt_role_dispatch(). */
struct cmt_role {
	const char *name;
	int (*fn)(void *);
};
static char *cmt_self;
static int cmt_fds[4] = { -1, -1, -1, -1 };	/* two sync pipes */

static inline pid_t run_role(const char *role)
{
	char fds[64];
	pid_t pid;

	snprintf(fds, sizeof(fds), "%d,%d,%d,%d", cmt_fds[0], cmt_fds[1], cmt_fds[2], cmt_fds[3]);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/proc/self/exe", cmt_self, "--role", role, fds, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* Fork a child running fn(arg) without exec (no verbs use in it!). */
static inline pid_t run_child(int (*fn)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fn(arg));
	return pid;
}

static inline int wait_child(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		FAIL("waitpid: %s", strerror(errno));
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

/* One-byte pipe handshakes between the two processes: cmt_fds[0..1] is the
 * pipe towards the parent, cmt_fds[2..3] the one towards the child. */
static inline void sp_post_fd(int fd) { char c = 1; CHECK(write(fd, &c, 1) == 1); }
static inline void sp_wait_fd(int fd)
{
	char c;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, 10000) != 1 || read(fd, &c, 1) != 1)
		FAIL("peer never signalled");
}
#define to_parent_post() sp_post_fd(cmt_fds[1])
#define to_parent_wait() sp_wait_fd(cmt_fds[0])
#define to_child_post() sp_post_fd(cmt_fds[3])
#define to_child_wait() sp_wait_fd(cmt_fds[2])

/* Parse "--role NAME fds" and run that role; returns only in the parent. */
static inline void cmt_role_dispatch(int argc, char **argv, const struct cmt_role *roles)
{
	cmt_self = argv[0];
	if (argc >= 4 && !strcmp(argv[1], "--role")) {
		if (sscanf(argv[3], "%d,%d,%d,%d", &cmt_fds[0], &cmt_fds[1], &cmt_fds[2],
			   &cmt_fds[3]) != 4)
			exit(3);
		for (; roles && roles->name; roles++)
			if (!strcmp(roles->name, argv[2]))
				exit(roles->fn(NULL));
		exit(3);
	}
	{
		int a[2], b[2];

		CHECK(pipe(a) == 0 && pipe(b) == 0);
		cmt_fds[0] = a[0];
		cmt_fds[1] = a[1];
		cmt_fds[2] = b[0];
		cmt_fds[3] = b[1];
	}
}

#endif
