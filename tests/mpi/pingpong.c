/* Two ranks: ping-pong of 8 B and 1 MiB, then an MPI_Allreduce, every
 * received byte checked.  Prints one line per size, "SIZE bytes: LAT us,
 * BW MB/s", so that the test script and docs/consumers.md can quote them.
 * Arguments: the iterations of each size (default 10000 and 200): a slow
 * transport can then be tested with fewer. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A pattern that depends on the iteration and the sender, so that a stale or
 * misplaced buffer is caught. */
static uint8_t pattern(int iter, int rank, size_t i)
{
  return (uint8_t)(iter * 31 + rank * 7 + i);
}

static void fill(uint8_t *buf, size_t len, int iter, int rank)
{
  for (size_t i = 0; i < len; i++)
    buf[i] = pattern(iter, rank, i);
}

static int check(const uint8_t *buf, size_t len, int iter, int rank)
{
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != pattern(iter, rank, i)) {
      fprintf(stderr, "bad byte %zu of %zu in iteration %d from rank %d\n", i, len, iter, rank);
      return 1;
    }
  }
  return 0;
}

/* Rank 0 sends, rank 1 checks and answers with its own pattern. */
static int pingpong(int rank, size_t len, int iters)
{
  uint8_t *out = malloc(len), *in = malloc(len);
  int peer = 1 - rank, bad = 0;
  double t0 = 0;

  if (!out || !in)
    return 1;
  for (int it = -1; it < iters && !bad; it++) {
    if (it == 0)
      t0 = MPI_Wtime(); /* iteration -1 warms up the connection */
    fill(out, len, it, rank);
    if (rank == 0) {
      MPI_Send(out, (int)len, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD);
      MPI_Recv(in, (int)len, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in, (int)len, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(out, (int)len, MPI_BYTE, peer, it & 0x7fff, MPI_COMM_WORLD);
    }
    bad = check(in, len, it, peer);
  }
  if (rank == 0 && !bad) {
    double half = (MPI_Wtime() - t0) / iters / 2;
    printf("%zu bytes: %.2f us, %.1f MB/s\n", len, half * 1e6, len / half / 1e6);
  }
  free(out);
  free(in);
  return bad;
}

/* Every rank contributes rank + 1 to each of many elements. */
static int allreduce(int rank, int size)
{
  enum { N = 4096 };
  static long v[N], sum[N];
  long want = (long)size * (size + 1) / 2;

  for (int i = 0; i < N; i++)
    v[i] = (rank + 1) * (long)(i + 1);
  MPI_Allreduce(v, sum, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < N; i++) {
    if (sum[i] != want * (i + 1)) {
      fprintf(stderr, "allreduce element %d: %ld, want %ld\n", i, sum[i], want * (i + 1));
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv)
{
  int rank, size, bad = 0, anybad = 0;
  int small = argc > 1 ? atoi(argv[1]) : 10000, large = argc > 2 ? atoi(argv[2]) : 200;

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "needs exactly 2 ranks, has %d\n", size);
    MPI_Finalize();
    return 2;
  }
  bad |= pingpong(rank, 8, small > 0 ? small : 1);
  bad |= pingpong(rank, 1 << 20, large > 0 ? large : 1);
  bad |= allreduce(rank, size);
  MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf(anybad ? "FAIL\n" : "PASS: ping-pong and allreduce values checked\n");
  MPI_Finalize();
  return anybad ? 1 : 0;
}
