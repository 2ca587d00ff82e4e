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
/* Each of the first few threads fills its own part: a shared index taken
 * with a locked instruction waited for the stores before it (a ring
 * record's, which another core was reading) and put that wait into the
 * step it ended. */
#define SV_STAMP_THREADS 4
#define SV_STAMP_PART (SV_STAMP_MAX / SV_STAMP_THREADS)

struct stamp {
	uint64_t tsc;
	uint16_t point;
	uint16_t thread;             /* 1, 2, ... in the order threads first stamp */
};

static struct stamp *stamps;         /* NULL: not asked for */
static struct {
	uint32_t n;
	uint8_t pad[60];
} used[SV_STAMP_THREADS];            /* each thread's part: how much it filled */
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
	if (thread_no > SV_STAMP_THREADS)
		return;
	i = __atomic_load_n(&used[thread_no - 1].n, __ATOMIC_RELAXED);
	if (i == SV_STAMP_PART)
		return;
	stamps[(thread_no - 1) * SV_STAMP_PART + i] = (struct stamp){ __rdtsc(), (uint16_t)p, thread_no };
	__atomic_store_n(&used[thread_no - 1].n, i + 1, __ATOMIC_RELEASE);
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
	for (uint32_t t = 0; t < SV_STAMP_THREADS; t++) {
		const struct stamp *part = stamps + t * SV_STAMP_PART;
		uint32_t n = __atomic_load_n(&used[t].n, __ATOMIC_ACQUIRE);

		for (uint32_t i = 0; i < n; i++)
			fprintf(f, "%llu %u %s\n", (unsigned long long)part[i].tsc, /* cancellation point */
				part[i].thread, sv_stamp_name(part[i].point));
	}
	fclose(f);
}
#endif
