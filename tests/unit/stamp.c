/* The stamp recorder (src/util/stamp.c, built with SV_STAMPS): a run of
 * known steps, each a known spin long, written at exit for stamp.sh to
 * read back with bench/stamps.py. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "util/stamp.h"

static void spin_ns(uint64_t ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull + (uint64_t)(b.tv_nsec - a.tv_nsec) < ns);
}

int main(void)
{
	for (int i = 0; i < 4000; i++) {
		sv_stamp(SV_ST_POST_SEND);
		spin_ns(2000);
		sv_stamp(SV_ST_RING_WRITE);
		spin_ns(6000);
		sv_stamp(SV_ST_RING_WRITTEN);
		sv_stamp(SV_ST_POST_SEND_DONE);
	}
	if (sv_stamp_name(SV_ST_N)[0] != '?' || sv_stamp_name(SV_ST_UNLOCKED)[0] != 'u') {
		fprintf(stderr, "stamp names: %s, %s\n", sv_stamp_name(SV_ST_N),
			sv_stamp_name(SV_ST_UNLOCKED));
		return 1;
	}
	return 0;
}
