/* Shared-memory ping-pong between two processes: the floor of a same-host
 * message.
 *
 *   shm_pingpong spin|futex|eventfd [ITERS] [SIZE]
 *
 * Parent and child share an anonymous mapping holding two slots (one cache
 * line each, payload after it).  The parent writes SIZE bytes (default 8)
 * and bumps its sequence number; the child waits for it, copies the payload
 * into its own slot and bumps its sequence; and so on, ITERS times (default
 * 100000) after 1000 warm-up rounds.
 *   spin   both sides spin on the sequence word
 *   futex  both sides sleep in FUTEX_WAIT and the writer always FUTEX_WAKEs:
 *          what a message costs when the receiver is not polling
 *   eventfd  both sides sleep in read() of their eventfd and the writer
 *          always writes it: a completion channel's wake-up, the least a
 *          message to a sleeping verbs consumer can cost
 * With two CPUs or more the parent runs on the first, the child on the
 * second (BENCH_PIN=0: wherever the scheduler puts them).
 * Prints the median of the round trips, halved (one-way), and the mean:
 *   lat_us <median one-way microseconds>
 *   avg_us <mean one-way microseconds>
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

struct slot {
  _Atomic uint32_t seq;
  int ev;                       /* EVENTFD: its sleeper waits here (inherited by fork) */
  char pad[56];
  char payload[];
};

enum mode { SPIN, FUTEX, EVENTFD };
static enum mode mode;
static size_t slot_bytes;

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
  syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void wait_for(struct slot *s, uint32_t want)
{
  uint32_t v;
  uint64_t n;
  while ((v = atomic_load_explicit(&s->seq, memory_order_acquire)) != want) {
    if (mode == FUTEX)
      futex_wait(&s->seq, v);
    else if (mode == EVENTFD) {
      if (read(s->ev, &n, sizeof(n)) != sizeof(n))
        SVB_DIE("eventfd read");
    } else
      svb_cpu_relax();
  }
}

static void post(struct slot *s, uint32_t seq)
{
  const uint64_t one = 1;
  atomic_store_explicit(&s->seq, seq, memory_order_release);
  if (mode == FUTEX)
    futex_wake(&s->seq);
  else if (mode == EVENTFD && write(s->ev, &one, sizeof(one)) != sizeof(one))
    SVB_DIE("eventfd write");
}

int main(int argc, char **argv)
{
  if (argc < 2 || (strcmp(argv[1], "spin") && strcmp(argv[1], "futex") &&
                    strcmp(argv[1], "eventfd"))) {
    fprintf(stderr, "usage: %s spin|futex|eventfd [ITERS] [SIZE]\n", argv[0]);
    return 2;
  }
  mode = !strcmp(argv[1], "futex") ? FUTEX : !strcmp(argv[1], "eventfd") ? EVENTFD : SPIN;

  uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 100000;
  size_t size = argc > 3 ? svb_parse_size(argv[3]) : 8;
  if (iters == 0)
    SVB_DIE("bad iteration count");
  const uint64_t warm = 1000;

  slot_bytes = (sizeof(struct slot) + size + 63) & ~(size_t)63;
  char *map = mmap(NULL, 2 * slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    SVB_DIE("mmap");
  struct slot *ping = (struct slot *)map, *pong = (struct slot *)(map + slot_bytes);
  ping->ev = eventfd(0, EFD_CLOEXEC);
  pong->ev = eventfd(0, EFD_CLOEXEC);
  if (ping->ev < 0 || pong->ev < 0)
    SVB_DIE("eventfd");
  char *local = malloc(size);
  if (!local)
    SVB_DIE("malloc");
  memset(local, 0x5a, size);

  /* On cores of their own, as bench pins every pair (lib.sh, BENCH_PIN). */
  cpu_set_t cpus, one;
  int pin[2] = { -1, -1 }, k = 0;
  const char *pin_env = getenv("BENCH_PIN");
  if ((!pin_env || strcmp(pin_env, "0")) && !sched_getaffinity(0, sizeof(cpus), &cpus))
    for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
      if (CPU_ISSET(c, &cpus))
        pin[k++] = c;
  pid_t pid = fork();
  if (pid < 0)
    SVB_DIE("fork");
  if (pin[1] >= 0) {
    CPU_ZERO(&one);
    CPU_SET(pin[pid == 0], &one);
    sched_setaffinity(0, sizeof(one), &one);
  }
  if (pid == 0) {
    for (uint64_t i = 1; i <= warm + iters; i++) {
      wait_for(ping, (uint32_t)i);
      memcpy(local, ping->payload, size);
      memcpy(pong->payload, local, size);
      post(pong, (uint32_t)i);
    }
    _exit(0);
  }

  uint64_t *rtt = malloc(iters * sizeof(*rtt));
  if (!rtt)
    SVB_DIE("malloc");
  uint64_t sum = 0;
  for (uint64_t i = 1; i <= warm + iters; i++) {
    uint64_t t0 = svb_now_ns();
    memcpy(ping->payload, local, size);
    post(ping, (uint32_t)i);
    wait_for(pong, (uint32_t)i);
    memcpy(local, pong->payload, size);
    uint64_t dt = svb_now_ns() - t0;
    if (i > warm) {
      rtt[i - warm - 1] = dt;
      sum += dt;
    }
  }
  waitpid(pid, NULL, 0);
  printf("size %zu\n", size);
  printf("lat_us %.3f\n", svb_median_u64(rtt, iters) / 2e3);
  printf("avg_us %.3f\n", (double)sum / (double)iters / 2e3);
  return 0;
}
