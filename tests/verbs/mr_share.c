/* Registered memory that same-host peers map (transport/shm/mrmap.h):
 * registration and deregistration keep the buffer's contents; while
 * registered its pages are a memfd a peer writes, reads and updates
 * atomically without system calls; afterwards they are private again; a
 * forked child gets its own copy; memory that is not private anonymous is
 * left alone and still reachable; two MRs may cover the same pages; pages
 * never touched stay zeros through it all; deregistration on another
 * thread opens no descriptor an application's stray close could take, and
 * a descriptor of ours the application closed and reused is not read.
 * Over TCP (verbs_tcp_mr_share) or with SOFTVERBS_MR_SHARE=0 nothing is
 * shared and everything else must hold just the same. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "common.h"

#define LEN (64 * 1024)

/* Over TCP, or with SOFTVERBS_MR_SHARE=0 (verbs_cma_mr_share), nothing is shared. */
static bool sharing_off(void)
{
	const char *m = getenv("SOFTVERBS_MR_SHARE");

	return t_transport_tcp() || (m && !strcmp(m, "0"));
}

/* Is the page at `p` backed by our memfd? */
static bool shared_page(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && (uintptr_t)p >= s && (uintptr_t)p < e) {
			found = strstr(line, "softverbs-mr") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

/* a WRITEs `seed` into b's [off, off+n) at `rkey`, then READs it back. */
static void write_read(struct t_pair *p, uint8_t *dst, uint32_t rkey, size_t off, size_t n,
		       uint8_t seed)
{
	t_fill(p->a.buf, n, seed);
	CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, 1, p->a.buf, n, p->a.mr->lkey,
			     (uintptr_t)dst + off, rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(dst + off, n, seed));
	memset(p->a.buf, 0, n);
	CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_READ, 2, p->a.buf, n, p->a.mr->lkey,
			     (uintptr_t)dst + off, rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p->a.buf, n, seed));
}

static void private_buffer(struct t_pair *p)
{
	uint8_t *buf = CHECK_PTR(aligned_alloc(4096, LEN)), *ref = CHECK_PTR(malloc(LEN));
	struct ibv_mr *mr;
	uint64_t *word = (uint64_t *)(buf + 4096);
	struct ibv_wc wc;
	pid_t child;
	int st;

	t_fill(buf, LEN, 3);
	memcpy(ref, buf, LEN);
	mr = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, LEN, T_ALL_ACCESS));
	CHECK(!memcmp(buf, ref, LEN));                    /* contents kept */
	CHECK_EQ(shared_page(buf), !sharing_off());

	write_read(p, buf, mr->rkey, 100, 20000, 4);
	CHECK(!memcmp(buf, ref, 100));                    /* around it: untouched */
	CHECK(!memcmp(buf + 20100, ref + 20100, LEN - 20100));

	*word = 40;
	CHECK_OK(t_post_atomic(p->a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, p->a.buf, p->a.mr->lkey,
			       (uintptr_t)word, mr->rkey, 2, 0));
	wc = t_wc(p->a.cq, 5000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(*(uint64_t *)p->a.buf, 40);
	CHECK_EQ(*word, 42);

	/* A forked child has its own copy: neither sees the other's stores. */
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		bool ok = *word == 42;

		*word = 7;
		_exit(ok ? 0 : 1);
	}
	CHECK_EQ(waitpid(child, &st, 0), child);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(*word, 42);

	/* Deregistered: private again, contents kept. */
	memset(buf, 0x5a, LEN);
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK(!shared_page(buf));
	for (size_t i = 0; i < LEN; i++)
		CHECK_EQ(buf[i], 0x5a);
	free(ref);
	free(buf);
}

/* A fresh mapping with some pages touched: only pages with data are
 * copied in and out (mrmap.c), the others must still read as zeros, and
 * what the peer writes into an untouched page survives deregistration. */
static void sparse_buffer(struct t_pair *p)
{
	const size_t len = 4u << 20, pg = 4096;
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	CHECK(buf != MAP_FAILED);
	for (size_t off = 0; off < len; off += 3 * pg)      /* every third page */
		t_fill(buf + off, pg, (uint8_t)(off / pg));
	mr = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, len, T_ALL_ACCESS));
	CHECK_EQ(shared_page(buf), !sharing_off());
	for (size_t off = 0; off < len; off += pg) {
		if (off % (3 * pg) == 0) {
			CHECK(t_check_fill(buf + off, pg, (uint8_t)(off / pg)));
			continue;
		}
		for (size_t i = 0; i < pg; i++)
			CHECK_EQ(buf[off + i], 0);
	}
	write_read(p, buf, mr->rkey, pg + 100, 3000, 21);    /* into an untouched page */
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK(!shared_page(buf));
	CHECK(t_check_fill(buf + pg + 100, 3000, 21));
	CHECK(t_check_fill(buf + 3 * pg, pg, 3));
	for (size_t i = 0; i < pg; i++)
		CHECK_EQ(buf[2 * pg + i], 0);
	munmap(buf, len);
}

/* Memory that is not moved, reached by peers all the same (cross-memory
 * attach): a MAP_SHARED mapping, and an MR larger than
 * SOFTVERBS_MR_SHARE_MAX_MIB (8; moving costs about a millisecond per MiB). */
static void not_moved(struct t_pair *p, size_t len, int flags, uint8_t seed)
{
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	CHECK(buf != MAP_FAILED);
	t_fill(buf, len, seed);
	mr = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, len, T_ALL_ACCESS));
	CHECK(!shared_page(buf));
	CHECK(t_check_fill(buf, len, seed));
	write_read(p, buf, mr->rkey, len - 8192, 8192, seed + 1);
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK(t_check_fill(buf + len - 8192, 8192, seed + 1));
	munmap(buf, len);
}

/* Two MRs over the same pages, and a small one inside a page. */
static void overlapping(struct t_pair *p)
{
	uint8_t *buf = CHECK_PTR(aligned_alloc(4096, LEN));
	struct ibv_mr *m1, *m2, *small;

	memset(buf, 0, LEN);
	m1 = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, LEN, T_ALL_ACCESS));
	m2 = CHECK_PTR(ibv_reg_mr(p->b.pd, buf + 8192, 16384, T_ALL_ACCESS));
	small = CHECK_PTR(ibv_reg_mr(p->b.pd, buf + 40000 + 10, 100, T_ALL_ACCESS));
	write_read(p, buf, m2->rkey, 8192, 16384, 11);
	write_read(p, buf, small->rkey, 40010, 100, 12);
	CHECK_OK(ibv_dereg_mr(m1));
	CHECK_EQ(shared_page(buf + 8192), !sharing_off());   /* m2 still holds it */
	write_read(p, buf, m2->rkey, 8192 + 5, 1000, 13);
	CHECK_OK(ibv_dereg_mr(m2));
	CHECK_OK(ibv_dereg_mr(small));
	CHECK(!shared_page(buf + 8192));
	CHECK(t_check_fill(buf + 8192 + 5, 1000, 13));
	free(buf);
}

/* rsockets deregister on a thread of their own, while a single-threaded
 * application may close a descriptor number it closed before (iperf3
 * does): the lowest free number, which a descriptor opened meanwhile by
 * that thread would get.  Deregistration must still make the pages private. */
struct dereg_arg {
	struct ibv_mr *mr;
	int done;
};

static void *dereg_thread(void *arg)
{
	struct dereg_arg *d = arg;

	CHECK_OK(ibv_dereg_mr(d->mr));
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void stray_close(struct t_pair *p)
{
	uint8_t *buf = CHECK_PTR(aligned_alloc(4096, LEN));
	struct dereg_arg d;
	pthread_t t;
	int lowest;

	t_fill(buf, LEN, 17);
	d.mr = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, LEN, T_ALL_ACCESS));
	d.done = 0;
	CHECK_EQ(shared_page(buf), !sharing_off());
	lowest = dup(0);
	CHECK(lowest >= 0);
	CHECK_OK(close(lowest));
	CHECK_OK(pthread_create(&t, NULL, dereg_thread, &d));
	while (!__atomic_load_n(&d.done, __ATOMIC_ACQUIRE))
		(void)close(lowest);
	CHECK_OK(pthread_join(t, NULL));
	CHECK(!shared_page(buf));
	CHECK(t_check_fill(buf, LEN, 17));
	free(buf);
}

/* The descriptor softverbs keeps on /proc/self/maps (mrmap.c), or -1. */
static int kept_maps_fd(void)
{
	DIR *d = CHECK_PTR(opendir("/proc/self/fd"));
	struct dirent *e;
	int fd = -1;

	while ((e = readdir(d))) {
		char path[300], target[256];
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = 0;
		if (strlen(target) > 5 && !strcmp(target + strlen(target) - 5, "/maps") &&
		    atoi(e->d_name) != dirfd(d))
			fd = atoi(e->d_name);
	}
	closedir(d);
	return fd;
}

/* A program that closes descriptors it did not open, as daemons do, may
 * give that number to a file of its own: registration must notice, and
 * neither read nor close it. */
static void maps_fd_reused(struct t_pair *p)
{
	uint8_t *buf = CHECK_PTR(aligned_alloc(4096, LEN));
	int fd = kept_maps_fd(), pipefd[2];
	struct ibv_mr *mr;
	char c = 0;

	if (fd < 0) {
		CHECK(sharing_off());         /* nothing shared: no maps to read */
		free(buf);
		return;
	}
	CHECK_OK(close(fd));
	CHECK_OK(pipe2(pipefd, O_NONBLOCK));
	CHECK_EQ(dup2(pipefd[0], fd), fd);
	CHECK_EQ(write(pipefd[1], "x", 1), 1);
	t_fill(buf, LEN, 23);
	mr = CHECK_PTR(ibv_reg_mr(p->b.pd, buf, LEN, T_ALL_ACCESS));
	CHECK(shared_page(buf));
	CHECK_OK(ibv_dereg_mr(mr));
	CHECK(!shared_page(buf));
	CHECK(t_check_fill(buf, LEN, 23));
	CHECK_EQ(read(fd, &c, 1), 1);         /* still open, its byte unread */
	CHECK_EQ(c, 'x');
	close(fd);
	close(pipefd[0]);
	close(pipefd[1]);
	free(buf);
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	private_buffer(&p);
	sparse_buffer(&p);
	not_moved(&p, LEN, MAP_SHARED, 9);
	not_moved(&p, 9u << 20, MAP_PRIVATE, 30);
	overlapping(&p);
	stray_close(&p);
	maps_fd_reused(&p);
	t_pair_close(&p);
	return 0;
}
