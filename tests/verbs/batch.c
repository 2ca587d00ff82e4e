/*
 * Sends batched across posts (engine/batch.c).  A burst of small RDMA
 * WRITEs posted back to back, then no verb at all while the poster waits
 * on the target memory: every WRITE lands (the progress thread's tick
 * writes what the burst left queued), in order, each where it belongs.
 * Over TCP the burst also took far fewer sendmsg calls than WRITEs, which
 * is the point (this program's sendmsg counts the library's calls; the
 * kernel's autocorking would hide the difference in TCP segments).  A
 * burst of SENDs then completes as usual, the poll writing what waits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common.h"

#define BURST 64
#define SLOT  64          /* one WRITE's target, 8 bytes used */

static uint64_t sendmsgs;           /* the process's calls, every thread's */

/* The library's sendmsg resolves to this one (the executable's symbols come
 * first). */
ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);

	if (!real)
		real = (ssize_t (*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
	__atomic_add_fetch(&sendmsgs, 1, __ATOMIC_RELAXED);
	return real(fd, m, flags);
}

static void write_burst(struct t_pair *p, uint64_t round)
{
	for (uint64_t i = 0; i < BURST; i++) {
		uint64_t v = round << 32 | i;

		memcpy(p->a.buf + SLOT * i, &v, 8);
		CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, i, p->a.buf + SLOT * i, 8,
				     p->a.mr->lkey, p->ib.addr + SLOT * i, p->ib.rkey,
				     i == BURST - 1 ? IBV_SEND_SIGNALED : 0));
	}
}

/* Spin on b's memory, no verb called, until the burst's last WRITE is in. */
static void wait_landed(struct t_pair *p, uint64_t round)
{
	uint64_t *last = (uint64_t *)(p->b.buf + SLOT * (BURST - 1));
	uint64_t deadline = t_now_ms() + 5000;

	while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != (round << 32 | (BURST - 1)))
		CHECK(t_now_ms() < deadline);
	for (uint64_t i = 0; i < BURST; i++)
		CHECK_EQ(*(uint64_t *)(p->b.buf + SLOT * i), round << 32 | i);
}

int main(void)
{
	bool tcp = t_transport_tcp();
	struct t_opts o;
	struct t_pair p;
	uint64_t segs = UINT64_MAX;

	t_alarm(60);
	/* The mechanism, not the threshold: under a sanitizer on a busy machine
	 * this loop's posts can be more than the default 2 us apart. */
	setenv("SOFTVERBS_BATCH_GAP_US", "1000", 0);
	t_opts_default(&o, IBV_QPT_RC);
	o.max_send_wr = 2 * BURST;
	o.max_recv_wr = BURST;
	o.cqe = 4 * BURST;
	t_pair_open(&p, &o);
	/* a few rounds: a preempted burst writes more of itself at once */
	for (uint64_t round = 1; round <= 4; round++) {
		uint64_t before = __atomic_load_n(&sendmsgs, __ATOMIC_RELAXED), used;

		write_burst(&p, round);
		wait_landed(&p, round);
		CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
		used = __atomic_load_n(&sendmsgs, __ATOMIC_RELAXED) - before;
		if (used < segs)
			segs = used;
	}
	if (tcp) {
		fprintf(stderr, "fewest sendmsg calls for %d WRITEs: %llu\n", BURST,
			(unsigned long long)segs);
		CHECK(segs < BURST / 2);
	}
	/* SENDs: the receiver's poll writes what the sender left queued */
	for (int i = 0; i < BURST; i++)
		CHECK_OK(t_post_recv(p.b.qp, i, p.b.buf + SLOT * i, SLOT, p.b.mr->lkey));
	for (uint64_t i = 0; i < BURST; i++) {
		memcpy(p.a.buf + SLOT * i, &i, 8);
		CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, i, p.a.buf + SLOT * i, 8, p.a.mr->lkey,
				     IBV_SEND_SIGNALED));
	}
	for (uint64_t i = 0; i < BURST; i++) {
		struct ibv_wc wc = t_wc(p.b.cq, 2000);

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, i);
		CHECK_EQ(*(uint64_t *)(p.b.buf + SLOT * i), i);
	}
	for (int i = 0; i < BURST; i++)
		CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	t_pair_close(&p);
	return 0;
}
