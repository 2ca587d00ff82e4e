/* Shared helpers of the bench reference programs (bench/ref, bench/scale).
 * Every program prints its results as "name value" lines on stdout, which
 * bench/lib.sh reads with bench_get; diagnostics go to stderr. */
#ifndef SVB_COMMON_H
#define SVB_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SVB_DIE(...)                                                      \
  do {                                                                    \
    fprintf(stderr, __VA_ARGS__);                                         \
    fprintf(stderr, " (%s)\n", errno ? strerror(errno) : "no errno");     \
    exit(1);                                                              \
  } while (0)

static inline uint64_t svb_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void svb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

static int svb_cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int svb_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of n values (sorts them in place). */
static inline uint64_t svb_median_u64(uint64_t *v, size_t n)
{
  qsort(v, n, sizeof(*v), svb_cmp_u64);
  return n ? v[n / 2] : 0;
}

static inline double svb_median_double(double *v, size_t n)
{
  qsort(v, n, sizeof(*v), svb_cmp_double);
  return n ? v[n / 2] : 0;
}

/* A size with an optional K/M suffix (powers of 1024). */
static inline size_t svb_parse_size(const char *s)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 0);
  if (*end == 'k' || *end == 'K')
    v <<= 10;
  else if (*end == 'm' || *end == 'M')
    v <<= 20;
  return (size_t)v;
}

#define SVB_MIB (1024.0 * 1024.0)

#endif
