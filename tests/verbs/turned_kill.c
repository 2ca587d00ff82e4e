/*
 * A peer process dies while a ping-pong runs on one connection (TCP
 * channels, engine/req.c: one QP of the pair sends its requests on the
 * channel its peer opened).  Whether the dead process had turned the
 * channel or not, the survivor's next SEND completes with
 * IBV_WC_RETRY_EXC_ERR within a bound and its QP is in ERR.
 *
 * Three processes: this one relays the endpoints' addresses, lets two
 * children ping-pong, kills one of them (chosen by role) and waits for the
 * other's verdict.  Over TCP each child also checks, on its own sockets,
 * that one connection carried the ping-pong both ways (it was turned).
 */
#include <linux/tcp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <dirent.h>

#include "common.h"

#define ROUNDS 300

/* Did one of this process's TCP sockets both send and receive a SEND
 * (64 header + 8 payload bytes) per round of most of the ping-pong? */
static bool own_socket_both_ways(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	bool found = false;

	CHECK(d != NULL);
	while (!found && (de = readdir(d))) {
		int fd = atoi(de->d_name), type = 0;
		struct tcp_info ti;
		socklen_t l = sizeof(type), tl = sizeof(ti);

		if (de->d_name[0] == '.' ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM ||
		    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl))
			continue;
		found = ti.tcpi_bytes_sent >= 70ull * (ROUNDS / 2) &&
			ti.tcpi_bytes_received >= 70ull * (ROUNDS / 2);
	}
	closedir(d);
	return found;
}

/* One endpoint: ping-pong, report, then wait to be killed or survive. */
static void child(int fd, bool first)
{
	struct t_opts o;
	struct t_ep e;
	struct t_info mine, theirs;
	struct ibv_wc wc;
	uint8_t turned, survive;
	uint64_t t0;

	t_alarm(60);
	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 12;          /* 16.8 ms: long enough for ACKs to be held */
	o.retry_cnt = 2;
	struct ibv_context *ctx = t_open();

	t_ep_peer(&e, ctx, &o, fd, &mine, &theirs);
	t_sync(fd);
	for (int i = 0; i < ROUNDS; i++) {
		CHECK_OK(t_post_recv(e.qp, 1, e.buf + 64, 64, e.mr->lkey));
		if (first)
			CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 2, e.buf, 8, e.mr->lkey,
					     IBV_SEND_SIGNALED));
		for (int got = 0; got < 1;) {
			wc = t_wc(e.cq, 5000);
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			got += wc.wr_id == 1;
		}
		if (!first)
			CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 2, e.buf, 8, e.mr->lkey,
					     IBV_SEND_SIGNALED));
	}
	turned = t_transport_tcp() ? own_socket_both_ways() : 1;
	t_write_all(fd, &turned, 1);
	t_read_all(fd, &survive, 1);     /* the victim is killed meanwhile */
	t_sleep_ms(50);

	/* The survivor: its peer is gone; a SEND fails within the transport's
	 * retry budget (send completions of the ping-pong may come first). */
	t0 = t_now_ms();
	CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 3, e.buf, 8, e.mr->lkey, IBV_SEND_SIGNALED));
	do {
		wc = t_wc(e.cq, 20000);
	} while (wc.status == IBV_WC_SUCCESS);
	CHECK(wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR);
	fprintf(stderr, "survivor (%s): %s after %llu ms\n", first ? "first" : "second",
		ibv_wc_status_str(wc.status), (unsigned long long)(t_now_ms() - t0));
	CHECK(t_now_ms() - t0 < 10000);
	t_wait_qp_state(e.qp, IBV_QPS_ERR, 5000);
	_exit(0);
}

/* Run a pair, kill the child whose QPN is lesser (it turned) or greater. */
static void run(bool kill_turner)
{
	int fd[2];
	pid_t pid[2];
	struct t_info info[2];
	uint8_t turned[2], go = 1;
	int victim, survivor;

	for (int k = 0; k < 2; k++) {
		pid[k] = t_fork(&fd[k]);
		if (pid[k] == 0)
			child(fd[k], k == 0);
	}
	/* relay the addresses: each child sends its own, gets the other's */
	for (int k = 0; k < 2; k++)
		t_read_all(fd[k], &info[k], sizeof(info[k]));
	for (int k = 0; k < 2; k++)
		t_write_all(fd[k], &info[1 - k], sizeof(info[1 - k]));
	for (int k = 0; k < 2; k++)
		t_sync(fd[k]);
	for (int k = 0; k < 2; k++)
		t_read_all(fd[k], &turned[k], 1);
	CHECK(turned[0] && turned[1]);
	victim = (info[0].qpn < info[1].qpn) == kill_turner ? 0 : 1;
	survivor = 1 - victim;
	CHECK_OK(kill(pid[victim], SIGKILL));
	CHECK_EQ(t_wait_child(pid[victim], 5000), 128 + SIGKILL);
	t_write_all(fd[survivor], &go, 1);
	CHECK_EQ(t_wait_child(pid[survivor], 30000), 0);
	close(fd[0]);
	close(fd[1]);
}

int main(void)
{
	t_alarm(90);
	run(true);
	run(false);
	return 0;
}
