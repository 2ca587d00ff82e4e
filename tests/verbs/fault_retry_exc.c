/* Fault injection (SOFTVERBS_FAULT, docs/observability.md) that loses
 * every data frame: all dropped (drop=1), or all corrupted (corrupt=1,
 * each detected by its checksum and dropped).  The channel still comes up
 * (control frames pass), and an RC QP with timeout 10 (4.2 ms) and
 * retry_cnt 2 retransmits on each timeout until the budget is spent: its
 * first SEND completes with IBV_WC_RETRY_EXC_ERR after (retry_cnt + 1)
 * timeouts, the rest with IBV_WC_WR_FLUSH_ERR, and nothing, corrupted or
 * not, is received (the receiver's receives are at most flushed).  Each case runs in a child, which reads the knob when
 * it opens the device. */
#include <sys/wait.h>

#include "common.h"

static void lose_all(const char *spec)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;
	uint64_t t0, ms;

	CHECK_OK(setenv("SOFTVERBS_FAULT", spec, 1));
	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;
	o.retry_cnt = 2;
	t_pair_open(&p, &o);
	memset(p.b.buf, 0, 3 * 64);
	for (int i = 0; i < 4; i++)
		CHECK_OK(t_post_recv(p.b.qp, 100 + i, p.b.buf + 64 * i, 64, p.b.mr->lkey));
	t_fill(p.a.buf, 3 * 64, 5);
	t0 = t_now_ms();
	for (int i = 0; i < 3; i++)
		CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 1 + i, p.a.buf + 64 * i, 64,
				     p.a.mr->lkey, IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 10000);
	ms = t_now_ms() - t0;
	CHECK_EQ(wc.wr_id, 1);
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	for (int i = 1; i < 3; i++) {
		wc = t_wc(p.a.cq, 2000);
		CHECK_EQ(wc.wr_id, 1 + i);
		CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	}
	fprintf(stderr, "%s: RETRY_EXC_ERR after %llu ms\n", spec, (unsigned long long)ms);
	/* three timeouts of 4.2 ms (the first, then two retries; the node's
	 * timers may fire up to a millisecond early) */
	CHECK(ms >= 9);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	/* nothing arrived, corrupted or not: b's receives may only be flushed
	 * (its peer's QP failed and left) */
	for (int n; (n = t_poll(p.b.cq, &wc, 1, 100)) > 0;)
		CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	for (int i = 0; i < 3 * 64; i++)
		CHECK_EQ(p.b.buf[i], 0);
	t_pair_close(&p);
	exit(0);
}

int main(void)
{
	static const char *const specs[] = {
		"tcp+unix:drop=1,seed=1",
		"tcp+unix:corrupt=1,seed=2",
	};

	t_alarm(60);
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		int fd;
		pid_t pid = t_fork(&fd);

		if (!pid)
			lose_all(specs[i]);
		close(fd);
		CHECK_EQ(t_wait_child(pid, 30000), 0);
	}
	return 0;
}
