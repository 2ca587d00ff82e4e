/* Many connected RC QPs between two processes: memory per QP and idle cost.
 *
 *   qp_scale [-n QPS] [-i IDLE_SECONDS] [-l ROUNDS] [-d DEVICE] [-k]
 *
 * Forks; parent and child each open the device (default: the first one),
 * one PD, one CQ and one MR, create QPS RC QPs (default 1000), exchange
 * LID/QPN/PSN over a socketpair, connect QP i of one to QP i of the other
 * (INIT, RTR, RTS) and post one receive on each.  Then both send one SEND
 * on every QP and poll the 2*QPS completions (their sends, the peer's):
 * the QPs' channels connect on the way (a same-host channel's handshake
 * comes with its first message).  Then the same once more, every channel
 * up: the messages alone.
 * Then (-l, default 2000 rounds; 0: none) a SEND ping-pong on the last QP
 * while all the others stay connected: what a poll costs a process with
 * that many QPs shows in its latency.
 * With -i, both then sit idle for IDLE_SECONDS (sleeping, no polling) and
 * measure their own CPU time over it from /proc/self/stat (utime+stime, all
 * threads) and CLOCK_PROCESS_CPUTIME_ID.
 * The soft RLIMIT_NOFILE is raised to the hard one unless -k is given.
 *
 * Prints "name value" lines, for the parent ("p_") and the child ("c_"):
 *   qps, create_ms, connect_ms, send_ms (first SEND to last completion),
 *   send2_ms (the same, the second time),
 *   rss_kib_base / pss_kib_base (device open, PD, CQ, MR; no QP),
 *   rss_kib / pss_kib (QPS connected QPs, after the first round of SENDs),
 *   rss_kib_per_qp / pss_kib_per_qp ((rss - base) / QPS),
 *   threads, fds, pingpong_us (one-way, the parent's), and with -i: idle_s,
 *   idle_cpu_pct, idle_cpu_pct_precise.
 * Exits non-zero if any step fails (the failing step is on stderr); a
 * failing process ends, and its peer with it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <infiniband/verbs.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ref/common.h"

#define SLOT 64

struct peer_info {
  uint32_t lid;
  uint32_t psn;
  uint32_t n;
};

struct result {
  double create_ms, connect_ms, send_ms, send2_ms, pingpong_us;
  long rss_base, pss_base, rss, pss, threads, fds;
  double idle_s, idle_pct, idle_pct_precise;
};

static int nqp = 1000, rounds = 2000;
static double idle_s;
static const char *devname;

static void xfer(int fd, void *buf, size_t len, int is_send)
{
  char *p = buf;
  while (len) {
    ssize_t r = is_send ? write(fd, p, len) : read(fd, p, len);
    if (r <= 0)
      SVB_DIE("%s on the socketpair", is_send ? "write" : "read");
    p += r;
    len -= (size_t)r;
  }
}

static void barrier(int fd)
{
  char c = 'b';
  xfer(fd, &c, 1, 1);
  xfer(fd, &c, 1, 0);
}

static void mem_kib(long *rss, long *pss)
{
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  char line[256];
  *rss = *pss = -1;
  if (!f)
    return;
  while (fgets(line, sizeof(line), f)) {
    if (!strncmp(line, "Rss:", 4))
      *rss = atol(line + 4);
    else if (!strncmp(line, "Pss:", 4))
      *pss = atol(line + 4);
  }
  fclose(f);
}

static long status_field(const char *name)
{
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t l = strlen(name);
  if (!f)
    return -1;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, name, l) && line[l] == ':')
      v = atol(line + l + 1);
  fclose(f);
  return v;
}

static long count_fds(void)
{
  DIR *d = opendir("/proc/self/fd");
  long n = 0;
  if (!d)
    return -1;
  while (readdir(d))
    n++;
  closedir(d);
  return n - 3;  /* ".", ".." and the DIR's own fd */
}

/* utime + stime of the whole process, in seconds. */
static double proc_cpu_s(void)
{
  FILE *f = fopen("/proc/self/stat", "r");
  char buf[1024];
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');  /* comm may hold spaces */
  if (!p)
    return -1;
  unsigned long long ut = 0, st = 0;
  /* After ")": state(3) ... utime is field 14, stime 15. */
  if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double cputime_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A failed step ends this process: the peer sees its end of the socketpair
 * close and ends too. */
#define STEP(cond, ...)                                \
  do {                                                 \
    if (!(cond)) {                                     \
      fprintf(stderr, "qp_scale[%s]: ", who);          \
      fprintf(stderr, __VA_ARGS__);                    \
      fprintf(stderr, ": %s\n", strerror(errno));      \
      fflush(stdout);                                  \
      _exit(1);                                        \
    }                                                  \
  } while (0)

static int poll_n(struct ibv_cq *cq, int want, const char *who, double timeout_s)
{
  struct ibv_wc wc[64];
  int got = 0;
  uint64_t deadline = svb_now_ns() + (uint64_t)(timeout_s * 1e9);
  while (got < want) {
    int n = ibv_poll_cq(cq, 64, wc);
    if (n < 0) {
      fprintf(stderr, "qp_scale[%s]: ibv_poll_cq failed\n", who);
      return -1;
    }
    for (int i = 0; i < n; i++)
      if (wc[i].status != IBV_WC_SUCCESS) {
        fprintf(stderr, "qp_scale[%s]: completion %d of %d: %s (opcode %d, wr_id %llu)\n", who,
                got + i, want, ibv_wc_status_str(wc[i].status), wc[i].opcode,
                (unsigned long long)wc[i].wr_id);
        return -1;
      }
    got += n;
    if (!n && svb_now_ns() > deadline) {
      fprintf(stderr, "qp_scale[%s]: %d of %d completions after %.0f s\n", who, got, want, timeout_s);
      return -1;
    }
  }
  return 0;
}

/* Poll until `recvs` receive and `sends` send completions came (10 s at
 * most); one that came early (the next round's receive) is kept in got[]. */
static int wait_wc(struct ibv_cq *cq, int got[2], int recvs, int sends, const char *who)
{
  uint64_t deadline = svb_now_ns() + 10000000000ull;
  struct ibv_wc wc;
  while (got[0] < recvs || got[1] < sends) {
    int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) {
      fprintf(stderr, "qp_scale[%s]: ping-pong: %s\n", who,
              n < 0 ? "ibv_poll_cq failed" : ibv_wc_status_str(wc.status));
      return -1;
    }
    if (n == 1)
      got[wc.opcode == IBV_WC_RECV ? 0 : 1]++;
    else if (svb_now_ns() > deadline) {
      fprintf(stderr, "qp_scale[%s]: ping-pong: no completion for 10 s\n", who);
      return -1;
    }
  }
  got[0] -= recvs;
  got[1] -= sends;
  return 0;
}

/* A receive into QP i's slot. */
static int post_slot_recv(struct ibv_qp *q, struct ibv_mr *mr, char *buf, int i)
{
  struct ibv_sge sge = { (uintptr_t)(buf + (size_t)i * SLOT), SLOT, mr->lkey };
  struct ibv_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 }, *bad;

  return ibv_post_recv(q, &rw, &bad);
}

/* One SEND on every QP, then their completions and the peer's (a receive
 * waits on each); then the two processes meet.  0, or -1. */
static int send_all(struct ibv_qp **qp, struct ibv_cq *cq, struct ibv_mr *mr, char *buf,
                    const char *who, double *ms)
{
  uint64_t t0 = svb_now_ns();

  for (int i = 0; i < nqp; i++) {
    char *p = buf + (size_t)(nqp + i) * SLOT;
    snprintf(p, SLOT, "%s %d", who, i);
    struct ibv_sge sge = { (uintptr_t)p, 16, mr->lkey };
    struct ibv_send_wr sw = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
                              .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
    if (ibv_post_send(qp[i], &sw, &bad)) {
      fprintf(stderr, "qp_scale[%s]: ibv_post_send #%d failed\n", who, i);
      return -1;
    }
  }
  if (poll_n(cq, 2 * nqp, who, 60))
    return -1;
  *ms = (svb_now_ns() - t0) / 1e6;
  return 0;
}

/* One SEND each way per round on `q`, a receive posted before each; the
 * parent starts.  One-way microseconds, or -1. */
static double pingpong(struct ibv_qp *q, struct ibv_cq *cq, struct ibv_mr *mr, char *slot,
                       int fd, int is_parent, const char *who)
{
  struct ibv_sge rs = { (uintptr_t)slot, SLOT / 2, mr->lkey },
                 ss = { (uintptr_t)slot + SLOT / 2, 8, mr->lkey };
  struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
  struct ibv_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
                            .send_flags = IBV_SEND_SIGNALED }, *sbad;
  int got[2] = { 0, 0 };
  if (ibv_post_recv(q, &rw, &rbad))
    return -1;
  barrier(fd);
  uint64_t t0 = svb_now_ns();
  for (int r = 0; r < rounds; r++) {
    if (is_parent) {
      if (ibv_post_send(q, &sw, &sbad) || wait_wc(cq, got, 1, 1, who) || ibv_post_recv(q, &rw, &rbad))
        return -1;
    } else if (wait_wc(cq, got, 1, 0, who) || ibv_post_recv(q, &rw, &rbad) ||
               ibv_post_send(q, &sw, &sbad) || wait_wc(cq, got, 0, 1, who)) {
      return -1;
    }
  }
  double us = (svb_now_ns() - t0) / 1e3 / rounds / 2;
  barrier(fd);
  return us;
}

static void run(int fd, int is_parent, struct result *res)
{
  const char *who = is_parent ? "parent" : "child";
  struct ibv_device **list = NULL;
  struct ibv_context *ctx = NULL;
  struct ibv_pd *pd = NULL;
  struct ibv_cq *cq = NULL;
  struct ibv_mr *mr = NULL;
  struct ibv_qp **qp = calloc((size_t)nqp, sizeof(*qp));
  uint32_t *qpn = calloc((size_t)nqp, sizeof(*qpn)), *rqpn = calloc((size_t)nqp, sizeof(*rqpn));
  char *buf = NULL;
  size_t buflen = (size_t)nqp * SLOT * 2;
  int i, ndev = 0;

  memset(res, 0, sizeof(*res));
  STEP(qp && qpn && rqpn, "calloc");
  list = ibv_get_device_list(&ndev);
  STEP(list && ndev > 0, "no RDMA device");
  struct ibv_device *dev = list[0];
  if (devname)
    for (dev = NULL, i = 0; i < ndev; i++)
      if (!strcmp(ibv_get_device_name(list[i]), devname))
        dev = list[i];
  STEP(dev, "device %s not found", devname);
  ctx = ibv_open_device(dev);
  STEP(ctx, "ibv_open_device");
  pd = ibv_alloc_pd(ctx);
  STEP(pd, "ibv_alloc_pd");
  cq = ibv_create_cq(ctx, 2 * nqp + 16, NULL, NULL, 0);
  STEP(cq, "ibv_create_cq(%d)", 2 * nqp + 16);
  buf = aligned_alloc(4096, (buflen + 4095) & ~(size_t)4095);
  STEP(buf, "aligned_alloc");
  memset(buf, 0, buflen);
  mr = ibv_reg_mr(pd, buf, buflen, IBV_ACCESS_LOCAL_WRITE);
  STEP(mr, "ibv_reg_mr");
  struct ibv_port_attr pa;
  STEP(!ibv_query_port(ctx, 1, &pa), "ibv_query_port");
  mem_kib(&res->rss_base, &res->pss_base);
  barrier(fd);

  uint64_t t0 = svb_now_ns();
  for (i = 0; i < nqp; i++) {
    struct ibv_qp_init_attr ia = {
      .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
      .cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
    };
    qp[i] = ibv_create_qp(pd, &ia);
    STEP(qp[i], "ibv_create_qp #%d", i);
    qpn[i] = qp[i]->qp_num;
    struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
    STEP(!ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                       IBV_QP_ACCESS_FLAGS), "INIT #%d", i);
  }
  res->create_ms = (svb_now_ns() - t0) / 1e6;

  struct peer_info me = { .lid = pa.lid, .psn = is_parent ? 1000 : 2000, .n = (uint32_t)nqp }, them;
  xfer(fd, &me, sizeof(me), 1);
  xfer(fd, qpn, (size_t)nqp * sizeof(*qpn), 1);
  xfer(fd, &them, sizeof(them), 0);
  xfer(fd, rqpn, (size_t)nqp * sizeof(*rqpn), 0);

  t0 = svb_now_ns();
  for (i = 0; i < nqp; i++) {
    struct ibv_qp_attr a = {
      .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_4096, .dest_qp_num = rqpn[i],
      .rq_psn = them.psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 1,
      .ah_attr = { .dlid = (uint16_t)them.lid, .port_num = 1 },
    };
    STEP(!ibv_modify_qp(qp[i], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                                       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
         "RTR #%d", i);
    struct ibv_qp_attr b = { .qp_state = IBV_QPS_RTS, .sq_psn = me.psn, .timeout = 14,
                             .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
    STEP(!ibv_modify_qp(qp[i], &b, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                                       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                       IBV_QP_MAX_QP_RD_ATOMIC), "RTS #%d", i);
    STEP(!post_slot_recv(qp[i], mr, buf, i), "ibv_post_recv #%d", i);
  }
  res->connect_ms = (svb_now_ns() - t0) / 1e6;
  barrier(fd);

  STEP(send_all(qp, cq, mr, buf, who, &res->send_ms) == 0, "first SENDs");
  /* (measured here, as before the second round existed, to compare with
   * earlier results; the second one touches a little more of the rings) */
  mem_kib(&res->rss, &res->pss);
  for (i = 0; i < nqp; i++)
    STEP(!post_slot_recv(qp[i], mr, buf, i), "ibv_post_recv #%d", i);
  barrier(fd);
  STEP(send_all(qp, cq, mr, buf, who, &res->send2_ms) == 0, "second SENDs");
  barrier(fd);

  res->threads = status_field("Threads");
  res->fds = count_fds();
  if (rounds > 0) {
    res->pingpong_us = pingpong(qp[nqp - 1], cq, mr, buf + (size_t)(nqp - 1) * SLOT, fd,
                                is_parent, who);
    STEP(res->pingpong_us > 0, "ping-pong");
  }

  if (idle_s > 0) {
    barrier(fd);
    double c0 = proc_cpu_s(), p0 = cputime_s();
    uint64_t w0 = svb_now_ns();
    struct timespec ts = { (time_t)idle_s, (long)((idle_s - (time_t)idle_s) * 1e9) };
    while (nanosleep(&ts, &ts) && errno == EINTR)
      ;
    double wall = (svb_now_ns() - w0) / 1e9;
    res->idle_s = wall;
    res->idle_pct = (proc_cpu_s() - c0) / wall * 100.0;
    res->idle_pct_precise = (cputime_s() - p0) / wall * 100.0;
    barrier(fd);
  }
  /* No teardown: it is not measured, and exit() releases everything. */
}

static void print(const char *pfx, const struct result *r)
{
  printf("%sqps %d\n", pfx, nqp);
  printf("%screate_ms %.1f\n%sconnect_ms %.1f\n%ssend_ms %.1f\n%ssend2_ms %.1f\n", pfx,
         r->create_ms, pfx, r->connect_ms, pfx, r->send_ms, pfx, r->send2_ms);
  printf("%srss_kib_base %ld\n%spss_kib_base %ld\n", pfx, r->rss_base, pfx, r->pss_base);
  printf("%srss_kib %ld\n%spss_kib %ld\n", pfx, r->rss, pfx, r->pss);
  printf("%srss_kib_per_qp %.2f\n", pfx, (double)(r->rss - r->rss_base) / nqp);
  printf("%spss_kib_per_qp %.2f\n", pfx, (double)(r->pss - r->pss_base) / nqp);
  printf("%sthreads %ld\n%sfds %ld\n", pfx, r->threads, pfx, r->fds);
  if (rounds > 0)
    printf("%spingpong_us %.2f\n", pfx, r->pingpong_us);
  if (r->idle_s > 0)
    printf("%sidle_s %.2f\n%sidle_cpu_pct %.3f\n%sidle_cpu_pct_precise %.3f\n", pfx, r->idle_s,
           pfx, r->idle_pct, pfx, r->idle_pct_precise);
}

int main(int argc, char **argv)
{
  int opt, keep_limit = 0;
  while ((opt = getopt(argc, argv, "n:i:l:d:k")) != -1) {
    switch (opt) {
    case 'n': nqp = atoi(optarg); break;
    case 'i': idle_s = atof(optarg); break;
    case 'l': rounds = atoi(optarg); break;
    case 'd': devname = optarg; break;
    case 'k': keep_limit = 1; break;
    default:
      fprintf(stderr, "usage: %s [-n QPS] [-i IDLE_SECONDS] [-l ROUNDS] [-d DEVICE] [-k]\n", argv[0]);
      return 2;
    }
  }
  if (nqp <= 0)
    return 2;
  struct rlimit rl;
  if (!keep_limit && !getrlimit(RLIMIT_NOFILE, &rl)) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (!getrlimit(RLIMIT_NOFILE, &rl))
    printf("nofile_limit %llu\n", (unsigned long long)rl.rlim_cur);

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
    SVB_DIE("socketpair");
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0)
    SVB_DIE("fork");
  struct result r, cr;
  if (pid == 0) {
    close(sv[0]);
    run(sv[1], 0, &r);
    xfer(sv[1], &r, sizeof(r), 1);
    /* Stay until the parent has printed: the peer's QPs stay connected. */
    char c;
    if (read(sv[1], &c, 1) < 0)
      _exit(1);
    _exit(0);
  }
  close(sv[1]);
  run(sv[0], 1, &r);
  xfer(sv[0], &cr, sizeof(cr), 0);
  print("p_", &r);
  print("c_", &cr);
  fflush(stdout);
  if (write(sv[0], "x", 1) < 0)
    perror("write");
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
