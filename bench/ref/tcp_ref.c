/* Raw TCP between two processes (loopback, or two network namespaces):
 * the reference for softverbs' TCP channels.
 *
 *   tcp_ref server [-b ADDR] -p PORT
 *   tcp_ref client -a ADDR -p PORT -m lat|lat2|latb|bw -s SIZE [-n ITERS]
 *
 * The server accepts one connection, reads the client's request (mode, size,
 * count) and serves it, then exits.  TCP_NODELAY on both ends.
 *   lat  ping-pong of SIZE-byte messages on non-blocking sockets that both
 *        sides busy-poll (recv/send with EAGAIN retried at once), ITERS
 *        rounds (default 20000) after 500 warm-up rounds.  Prints the median
 *        and mean round trip halved:  lat_us <us>  avg_us <us>
 *   lat2 the same ping-pong over two connections, one per direction, as
 *        softverbs' channels are (one per QP and direction): each message
 *        also costs a pure TCP ACK, which one connection carries on the
 *        reply.  The floor of that design.
 *   latb the ping-pong on blocking sockets: both sides sleep in recv(), one
 *        wake-up per message, as a thread asleep on a completion channel
 *        (ibv_get_cq_event) is across hosts.
 *   ulat the ping-pong in UDP datagrams of SIZE bytes (at least 8: a round
 *        number travels in them) between connected sockets that both sides
 *        busy-poll; the TCP connection only sets it up.  A round whose
 *        answer has not come in 100 ms is sent again (none is lost on a
 *        quiet veth).  The floor of RC over UDP, as RoCE v2 carries it.
 *   bw   the client streams ITERS messages of SIZE bytes (default: 1 GiB in
 *        all) with blocking send(); the server reads them and answers one
 *        byte when it has everything.  Prints  mib_s <MiB/s>
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

struct req {
  uint32_t mode;  /* 1 lat, 2 bw, 3 lat2, 4 latb, 5 ulat */
  uint32_t pad;
  uint64_t size;
  uint64_t iters;
};

static void full_io(int fd, void *buf, size_t len, int is_send, int busy)
{
  char *p = buf;
  while (len) {
    ssize_t n = is_send ? send(fd, p, len, MSG_NOSIGNAL | (busy ? MSG_DONTWAIT : 0))
                        : recv(fd, p, len, busy ? MSG_DONTWAIT : 0);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
    } else if (n == 0) {
      errno = 0;
      SVB_DIE("peer closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      continue;  /* busy-poll */
    } else {
      SVB_DIE(is_send ? "send" : "recv");
    }
  }
}

static void nodelay(int fd)
{
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
    SVB_DIE("TCP_NODELAY");
}

static void set_nonblock(int fd, int on)
{
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK))
    SVB_DIE("fcntl");
}

static const uint64_t WARM = 500;

enum { MODE_LAT = 1, MODE_BW, MODE_LAT2, MODE_LATB, MODE_ULAT };

/* ulat: a UDP socket on the TCP connection's address (UDP ports are apart
 * from TCP's), connected to `peer` if given. */
static int udp_socket(const struct sockaddr_in *me, const struct sockaddr_in *peer)
{
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (fd < 0)
    SVB_DIE("socket");
  if (me && bind(fd, (const struct sockaddr *)me, sizeof(*me)))
    SVB_DIE("bind a UDP socket");
  if (peer && connect(fd, (const struct sockaddr *)peer, sizeof(*peer)))
    SVB_DIE("connect a UDP socket");
  return fd;
}

/* ulat server: echo every datagram, from the first one's sender on, until
 * the client closes the TCP connection. */
static void udp_echo(int tcp, size_t size)
{
  struct sockaddr_in me, peer;
  socklen_t len = sizeof(me);
  char *buf = malloc(size), c = 'r';
  ssize_t n;
  int fd;

  if (!buf || getsockname(tcp, (struct sockaddr *)&me, &len))
    SVB_DIE("ulat setup");
  fd = udp_socket(&me, NULL);
  full_io(tcp, &c, 1, 1, 0);           /* bound: the client may send */
  len = sizeof(peer);
  while ((n = recvfrom(fd, buf, size, 0, (struct sockaddr *)&peer, &len)) < 0)
    if (errno != EAGAIN)
      SVB_DIE("recvfrom");
  if (connect(fd, (struct sockaddr *)&peer, len) || send(fd, buf, (size_t)n, 0) < 0)
    SVB_DIE("answer the first datagram");
  set_nonblock(tcp, 1);
  for (uint32_t idle = 0;;) {
    n = recv(fd, buf, size, 0);
    if (n > 0 && send(fd, buf, (size_t)n, 0) < 0 && errno != EAGAIN)
      SVB_DIE("send");
    if (n < 0 && errno != EAGAIN)
      SVB_DIE("recv");
    /* the client is done when it closes; looked at now and then only,
     * so that a poll costs one system call, as the client's */
    if (n < 0 && !(++idle & 1023) && recv(tcp, &c, 1, 0) == 0)
      break;
  }
  set_nonblock(tcp, 0);
  close(fd);
  free(buf);
}

/* ulat client: one round, its number in the datagram; an answer to an
 * older round is skipped, a lost one sent again. */
static void udp_round(int fd, char *buf, size_t size, uint64_t round)
{
  uint64_t got;

  for (;;) {
    uint64_t t0 = svb_now_ns();

    memcpy(buf, &round, sizeof(round));
    if (send(fd, buf, size, 0) < 0 && errno != EAGAIN)
      SVB_DIE("send");
    for (uint32_t k = 1; (k & 1023) || svb_now_ns() - t0 < 100000000; k++) {
      ssize_t n = recv(fd, buf, size, 0);
      if (n >= (ssize_t)sizeof(got)) {
        memcpy(&got, buf, sizeof(got));
        if (got == round)
          return;
      } else if (n < 0 && errno != EAGAIN) {
        SVB_DIE("recv");
      }
    }
  }
}

static int server(const char *addr, int port)
{
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  if (ls < 0)
    SVB_DIE("socket");
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  sa.sin_addr.s_addr = addr ? inet_addr(addr) : htonl(INADDR_ANY);
  if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1))
    SVB_DIE("bind/listen on port %d", port);
  int fd = accept(ls, NULL, NULL), out;
  if (fd < 0)
    SVB_DIE("accept");
  nodelay(fd);
  struct req rq;
  full_io(fd, &rq, sizeof(rq), 0, 0);
  out = fd;
  if (rq.mode == 3) {            /* lat2: the answers go on a second connection */
    out = accept(ls, NULL, NULL);
    if (out < 0)
      SVB_DIE("accept");
    nodelay(out);
  }
  close(ls);
  char *buf = malloc(rq.size ? rq.size : 1);
  if (!buf)
    SVB_DIE("malloc");
  memset(buf, 0, rq.size);
  if (rq.mode == MODE_ULAT) {
    udp_echo(fd, rq.size);
  } else if (rq.mode != 2) {
    int busy = rq.mode != 4;

    set_nonblock(fd, busy);
    set_nonblock(out, busy);
    for (uint64_t i = 0; i < WARM + rq.iters; i++) {
      full_io(fd, buf, rq.size, 0, busy);
      full_io(out, buf, rq.size, 1, busy);
    }
    if (out != fd)
      close(out);
  } else {
    uint64_t total = rq.size * rq.iters;
    while (total) {
      ssize_t n = recv(fd, buf, total < rq.size ? total : rq.size, 0);
      if (n <= 0)
        SVB_DIE("recv");
      total -= (uint64_t)n;
    }
    full_io(fd, "k", 1, 1, 0);
  }
  /* Wait for the client to close first, so the port is free of TIME_WAIT here. */
  set_nonblock(fd, 0);
  char c;
  while (recv(fd, &c, 1, 0) > 0)
    ;
  close(fd);
  return 0;
}

static int connect_to(const char *addr, int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    SVB_DIE("socket");
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
  sa.sin_addr.s_addr = inet_addr(addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
    SVB_DIE("connect to %s:%d", addr, port);
  nodelay(fd);
  return fd;
}

static int client(const char *addr, int port, int mode, size_t size, uint64_t iters)
{
  int fd = connect_to(addr, port), in = fd;
  struct req rq = { .mode = (uint32_t)mode, .size = size, .iters = iters };
  full_io(fd, &rq, sizeof(rq), 1, 0);
  if (mode == 3)
    in = connect_to(addr, port);     /* the server answers on this one */
  char *buf = malloc(size);
  if (!buf)
    SVB_DIE("malloc");
  memset(buf, 0x5a, size);
  if (mode != 2) {
    uint64_t *rtt = malloc(iters * sizeof(*rtt)), sum = 0;
    int busy = mode != 4, udp = -1;
    if (!rtt)
      SVB_DIE("malloc");
    if (mode == MODE_ULAT) {
      struct sockaddr_in me, peer;
      socklen_t l1 = sizeof(me), l2 = sizeof(peer);
      char c;

      full_io(fd, &c, 1, 0, 0);        /* the server's UDP socket is bound */
      if (getsockname(fd, (struct sockaddr *)&me, &l1) ||
          getpeername(fd, (struct sockaddr *)&peer, &l2))
        SVB_DIE("ulat setup");
      udp = udp_socket(&me, &peer);
    }
    set_nonblock(fd, busy);
    set_nonblock(in, busy);
    for (uint64_t i = 0; i < WARM + iters; i++) {
      uint64_t t0 = svb_now_ns();
      if (udp >= 0) {
        udp_round(udp, buf, size, i);
      } else {
        full_io(fd, buf, size, 1, busy);
        full_io(in, buf, size, 0, busy);
      }
      uint64_t dt = svb_now_ns() - t0;
      if (i >= WARM) {
        rtt[i - WARM] = dt;
        sum += dt;
      }
    }
    printf("size %zu\n", size);
    printf("lat_us %.3f\n", svb_median_u64(rtt, iters) / 2e3);
    printf("avg_us %.3f\n", (double)sum / (double)iters / 2e3);
    if (in != fd)
      close(in);
    if (udp >= 0)
      close(udp);
  } else {
    uint64_t t0 = svb_now_ns();
    for (uint64_t i = 0; i < iters; i++)
      full_io(fd, buf, size, 1, 0);
    char c;
    full_io(fd, &c, 1, 0, 0);
    uint64_t dt = svb_now_ns() - t0;
    printf("size %zu\n", size);
    printf("mib_s %.1f\n", (double)size * (double)iters / SVB_MIB / (dt / 1e9));
  }
  close(fd);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 2) {
  usage:
    fprintf(stderr, "usage: %s server [-b ADDR] -p PORT\n"
                    "       %s client -a ADDR -p PORT -m lat|lat2|latb|ulat|bw -s SIZE [-n ITERS]\n",
            argv[0], argv[0]);
    return 2;
  }
  const char *role = argv[1], *addr = NULL;
  int port = 0, mode = 0, opt;
  size_t size = 8;
  uint64_t iters = 0;
  optind = 2;
  while ((opt = getopt(argc, argv, "a:b:p:m:s:n:")) != -1) {
    switch (opt) {
    case 'a': case 'b': addr = optarg; break;
    case 'p': port = atoi(optarg); break;
    case 'm': mode = !strcmp(optarg, "lat") ? 1 : !strcmp(optarg, "bw") ? 2 :
                     !strcmp(optarg, "lat2") ? 3 : !strcmp(optarg, "latb") ? 4 :
                     !strcmp(optarg, "ulat") ? MODE_ULAT : -1; break;
    case 's': size = svb_parse_size(optarg); break;
    case 'n': iters = strtoull(optarg, NULL, 0); break;
    default: goto usage;
    }
  }
  if (port <= 0)
    goto usage;
  if (!strcmp(role, "server"))
    return server(addr, port);
  if (strcmp(role, "client") || !addr || mode <= 0 || size == 0 ||
      (mode == MODE_ULAT && (size < 8 || size > 65507)))
    goto usage;
  if (!iters)
    iters = mode != 2 ? 20000 : ((1ull << 30) / size ? (1ull << 30) / size : 1);
  return client(addr, port, mode, size, iters);
}
