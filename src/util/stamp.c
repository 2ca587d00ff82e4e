#include "util/stamp.h"
#include "util/names.h"

SV_NAME_TABLE(sv_stamp_name, enum sv_stamp_point, SV_ST_N,
	      [SV_ST_POST_SEND] = "post_send", [SV_ST_ENQUEUED] = "enqueued",
	      [SV_ST_POST_SEND_DONE] = "post_send_done", [SV_ST_POST_RECV] = "post_recv",
	      [SV_ST_POST_RECV_DONE] = "post_recv_done", [SV_ST_POLL_FOUND] = "poll_found",
	      [SV_ST_KICK] = "kick", [SV_ST_FILL] = "fill", [SV_ST_FILLED] = "filled",
	      [SV_ST_RING_WRITE] = "ring_write", [SV_ST_RING_WRITTEN] = "ring_written",
	      [SV_ST_SOCK_SEND] = "sock_send", [SV_ST_SOCK_SENT] = "sock_sent",
	      [SV_ST_RINGS_READY] = "rings_ready", [SV_ST_RINGS_DONE] = "rings_done",
	      [SV_ST_SOCK_READ] = "sock_read", [SV_ST_SERVE] = "serve", [SV_ST_STAGED] = "staged",
	      [SV_ST_HEADER] = "header", [SV_ST_BEGUN] = "begun", [SV_ST_PLACED] = "placed",
	      [SV_ST_ENDED] = "ended", [SV_ST_BATCH_END] = "batch_end", [SV_ST_SERVED] = "served",
	      [SV_ST_UNLOCKED] = "unlocked")

#ifdef SV_STAMPS
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <x86intrin.h>

#include "util/env.h"
#include "util/time.h"

#define SV_STAMP_MAX (1u << 22)      /* then later stamps are dropped */

struct stamp {
	uint64_t tsc;
	uint16_t point;
	uint16_t thread;             /* 1, 2, ... in the order threads first stamp */
};

static struct stamp *stamps;         /* NULL: not asked for */
static uint32_t nstamps;
static uint16_t nthreads;
static __thread uint16_t thread_no;
static uint64_t t0_ns, t0_tsc;

void sv_stamp(enum sv_stamp_point p)
{
	uint32_t i;

	if (!stamps)
		return;
	if (!thread_no)
		thread_no = __atomic_add_fetch(&nthreads, 1, __ATOMIC_RELAXED);
	i = __atomic_fetch_add(&nstamps, 1, __ATOMIC_RELAXED);
	if (i < SV_STAMP_MAX)
		stamps[i] = (struct stamp){ __rdtsc(), (uint16_t)p, thread_no };
}

__attribute__((constructor)) static void stamps_start(void)
{
	if (!sv_env_str("SOFTVERBS_STAMPS"))
		return;
	stamps = calloc(SV_STAMP_MAX, sizeof(*stamps));
	t0_ns = sv_now_ns();
	t0_tsc = __rdtsc();
}

/* The TSC's rate, from the run itself: the reader turns ticks into ns. */
__attribute__((destructor)) static void stamps_write(void)
{
	uint32_t n = nstamps < SV_STAMP_MAX ? nstamps : SV_STAMP_MAX;
	char path[4096];
	FILE *f;

	if (!stamps)
		return;
	snprintf(path, sizeof(path), "%s.%d", sv_env_str("SOFTVERBS_STAMPS"), (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return;
	/* (at exit, nothing held: each is a cancellation point) */
	fprintf(f, "# softverbs stamps: tsc thread point; ticks per ns %.6f\n",    /* cancellation point */
		(double)(__rdtsc() - t0_tsc) / (double)(sv_now_ns() - t0_ns));
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%llu %u %s\n", (unsigned long long)stamps[i].tsc, /* cancellation point */
			stamps[i].thread,
			sv_stamp_name(stamps[i].point));
	fclose(f);
}
#endif
