/* process_vm_writev between two processes: what cross-memory attach costs.
 *
 *   pvm SIZE [ITERS]
 *
 * Forks a child that owns a SIZE-byte buffer; the parent writes SIZE bytes
 * into it with one process_vm_writev per call, ITERS calls (default: about
 * 1 GiB, at least 1000, at most 200000) in 21 batches.  Prints the median
 * batch's
 *   us_per_call <microseconds per call>
 *   mib_s <MiB/s>
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: %s SIZE [ITERS]\n", argv[0]);
    return 2;
  }
  size_t size = svb_parse_size(argv[1]);
  if (size == 0)
    SVB_DIE("bad size");
  uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : (1ull << 30) / size;
  if (argc <= 2) {
    if (iters < 1000)
      iters = 1000;
    if (iters > 200000)
      iters = 200000;
  }

  int to_parent[2], to_child[2];
  if (pipe(to_parent) || pipe(to_child))
    SVB_DIE("pipe");
  pid_t pid = fork();
  if (pid < 0)
    SVB_DIE("fork");
  if (pid == 0) {
    char *buf = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
    if (!buf)
      SVB_DIE("aligned_alloc");
    memset(buf, 0, size);  /* fault it in: the target is resident, like an MR */
    uintptr_t addr = (uintptr_t)buf;
    if (write(to_parent[1], &addr, sizeof(addr)) != sizeof(addr))
      SVB_DIE("write");
    char c;
    if (read(to_child[0], &c, 1) < 0)  /* until the parent is done */
      SVB_DIE("read");
    _exit(0);
  }

  uintptr_t raddr;
  if (read(to_parent[0], &raddr, sizeof(raddr)) != sizeof(raddr))
    SVB_DIE("read child address");
  char *src = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
  if (!src)
    SVB_DIE("aligned_alloc");
  memset(src, 0x5a, size);
  struct iovec l = { src, size }, r = { (void *)raddr, size };

  /* Warm-up. */
  for (int i = 0; i < 100; i++)
    if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)size)
      SVB_DIE("process_vm_writev");

  enum { BATCHES = 21 };
  uint64_t per = iters / BATCHES ? iters / BATCHES : 1;
  double us[BATCHES], bw[BATCHES];
  for (int b = 0; b < BATCHES; b++) {
    uint64_t t0 = svb_now_ns();
    for (uint64_t i = 0; i < per; i++)
      if (process_vm_writev(pid, &l, 1, &r, 1, 0) != (ssize_t)size)
        SVB_DIE("process_vm_writev");
    uint64_t dt = svb_now_ns() - t0;
    us[b] = dt / 1e3 / (double)per;
    bw[b] = (double)per * (double)size / SVB_MIB / (dt / 1e9);
  }
  if (write(to_child[1], "x", 1) != 1)
    SVB_DIE("write");
  waitpid(pid, NULL, 0);
  printf("size %zu\n", size);
  printf("us_per_call %.3f\n", svb_median_double(us, BATCHES));
  printf("mib_s %.1f\n", svb_median_double(bw, BATCHES));
  return 0;
}
