/* memcpy bandwidth of one core.
 *
 *   memcpy_bw SIZE [SECONDS]
 *
 * Copies SIZE bytes between two buffers of SIZE bytes (64 KiB stays in the
 * cache, 1 MiB mostly in L2/L3) over and over for SECONDS (default 0.5) in
 * 20 slices, and prints the median slice's rate:
 *   mib_s <MiB/s>
 */
#include "common.h"

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s SIZE [SECONDS]\n", argv[0]);
    return 2;
  }
  size_t size = svb_parse_size(argv[1]);
  double seconds = argc > 2 ? atof(argv[2]) : 0.5;
  if (size == 0 || seconds <= 0)
    SVB_DIE("bad size or duration");

  char *src = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
  char *dst = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
  if (!src || !dst)
    SVB_DIE("aligned_alloc");
  memset(src, 0x5a, size);
  memset(dst, 0, size);

  /* Calibrate: how many copies make one slice. */
  enum { SLICES = 20 };
  uint64_t slice_ns = (uint64_t)(seconds * 1e9 / SLICES);
  uint64_t reps = 1;
  for (;;) {
    uint64_t t0 = svb_now_ns();
    for (uint64_t i = 0; i < reps; i++) {
      memcpy(dst, src, size);
      __asm__ __volatile__("" : : "r"(dst) : "memory");
    }
    uint64_t dt = svb_now_ns() - t0;
    if (dt >= slice_ns / 4 || reps > (1ull << 40))
      break;
    reps *= 2;
  }

  double rate[SLICES];
  for (int s = 0; s < SLICES; s++) {
    uint64_t n = 0, t0 = svb_now_ns(), dt;
    do {
      for (uint64_t i = 0; i < reps; i++) {
        memcpy(dst, src, size);
        __asm__ __volatile__("" : : "r"(dst) : "memory");
      }
      n += reps;
      dt = svb_now_ns() - t0;
    } while (dt < slice_ns);
    rate[s] = (double)n * (double)size / SVB_MIB / (dt / 1e9);
  }
  printf("size %zu\n", size);
  printf("mib_s %.1f\n", svb_median_double(rate, SLICES));
  free(src);
  free(dst);
  return 0;
}
