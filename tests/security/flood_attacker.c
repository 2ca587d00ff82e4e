/*
 * The attacker of tests/security/flood.c: many connections to a softverbs
 * port that never send a byte (no HELLO).
 *
 *   security_flood_attacker PORT tcp|unix COUNT HOLD_MS
 *
 * Prints "open N" once its connections are made (N of COUNT succeeded),
 * then "closed M max_ms T": how many the victim closed within
 * FLOOD_CLOSE_MS of their connect, and the slowest of those.  Keeps the
 * others open until HOLD_MS after it began, then exits (closing them).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "sec.h"

#define FLOOD_MAX 4096
#define FLOOD_CLOSE_MS 3000

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The victim may have lowered the descriptor limit we inherited. */
static void raise_own_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	static int fd[FLOOD_MAX];
	static uint64_t at[FLOOD_MAX];
	uint64_t start = now_ms(), hold, slowest = 0;
	int count, n = 0, closed = 0;
	bool tcp;

	if (argc != 5)
		return 2;
	alarm(30);                   /* never outlive the test */
	tcp = !strcmp(argv[2], "tcp");
	count = atoi(argv[3]);
	hold = (uint64_t)atoll(argv[4]);
	if (count < 1 || count > FLOOD_MAX)
		return 2;
	raise_own_limit();
	for (int i = 0; i < count; i++) {
		int s = sec_connect_port((uint16_t)atoi(argv[1]), tcp);

		if (s < 0)
			continue;
		at[n] = now_ms();
		fd[n++] = s;
	}
	printf("open %d\n", n);
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		int64_t left = (int64_t)(at[i] + FLOOD_CLOSE_MS - now_ms());

		/* a close that came while we waited for earlier ones shows at once */
		if (sec_closed_within(fd[i], left > 0 ? (int)left : 1)) {
			uint64_t took = now_ms() - at[i];

			closed++;
			slowest = took > slowest ? took : slowest;
		}
	}
	printf("closed %d max_ms %llu\n", closed, (unsigned long long)slowest);
	fflush(stdout);
	if (now_ms() < start + hold)
		usleep((useconds_t)((start + hold - now_ms()) * 1000));
	return 0;
}
