/*
 * A same-host peer process goes while a child it forked lives on: killed,
 * or replaced by exec.  The child inherited the peer's descriptors, so
 * nothing the peer held closes with it; yet a QP connected to it that only
 * waits on a receive learns it has gone (its receive flushes, the QP is in
 * ERR), as it would on a fabric: the ring channels' peer is watched per
 * process (transport/shm/peer.h), not through the descriptors a child
 * keeps.  Over TCP the inherited sockets keep the connections up: skipped.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum how { BY_KILL, BY_EXEC };

/* A grandchild that holds every descriptor of the peer until killed. */
static pid_t fork_holder(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		alarm(30);
		for (;;)
			pause();
	}
	CHECK(pid > 0);
	return pid;
}

/* A message each way, so that both directions' channels are up (a QP
 * whose own channel never came up waits for its peer's QP to appear). */
static void exchange(struct t_side *s, bool first)
{
	struct t_ep *e = &s->e;

	CHECK_OK(t_post_recv(e->qp, 1, e->buf + 64, 64, e->mr->lkey));
	t_sync(s->fd);
	for (int turn = 0; turn < 2; turn++) {
		if ((turn == 0) == first) {
			CHECK_OK(t_post_send(e->qp, IBV_WR_SEND, 2, e->buf, 8, e->mr->lkey,
					     IBV_SEND_SIGNALED));
			CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
		} else {
			CHECK_STATUS(t_wc(e->cq, 5000), IBV_WC_SUCCESS);
		}
		t_sync(s->fd);
	}
}

static void child(struct t_side *s)
{
	enum how how = *(enum how *)s->arg;
	pid_t holder;

	exchange(s, false);
	t_sync(s->fd);                       /* the parent's receive is posted */
	holder = fork_holder();
	t_write_all(s->fd, &holder, sizeof(holder));
	t_sync(s->fd);
	if (how == BY_EXEC) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(4);
	}
	pause();                             /* until killed */
	_exit(3);
}

static void parent(struct t_side *s)
{
	struct t_ep *e = &s->e;
	enum how how = *(enum how *)s->arg;
	struct ibv_wc wc;
	pid_t holder;
	uint64_t t0;

	exchange(s, true);
	CHECK_OK(t_post_recv(e->qp, 7, e->buf, 64, e->mr->lkey));
	t_sync(s->fd);
	t_read_all(s->fd, &holder, sizeof(holder));
	t_sync(s->fd);
	t0 = t_now_ms();
	if (how == BY_KILL) {
		CHECK_OK(kill(s->child, SIGKILL));
		CHECK_EQ(t_side_reap(s, 5000), 128 + SIGKILL);
	}
	/* exec: the child lives on as sleep(1), without the library */
	wc = t_wc(e->cq, 10000);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_STATUS(wc, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(t_qp_state(e->qp), IBV_QPS_ERR);
	fprintf(stderr, "%s: receive flushed after %llu ms\n", how == BY_KILL ? "kill" : "exec",
		(unsigned long long)(t_now_ms() - t0));
	kill(holder, SIGKILL);                /* (the peer's child: not ours to reap) */
	if (how == BY_EXEC) {
		CHECK_OK(kill(s->child, SIGKILL));
		CHECK_EQ(t_side_reap(s, 5000), 128 + SIGKILL);
	}
}

int main(void)
{
	struct t_opts o;

	if (t_transport_tcp()) {
		fprintf(stderr, "skip: a forked child's copies of TCP sockets keep the connection\n");
		return 77;
	}
	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;          /* a retry budget of tens of ms once the peer is gone */
	o.retry_cnt = 2;
	for (enum how how = BY_KILL; how <= BY_EXEC; how++)
		CHECK_EQ(t_two_procs(&o, &o, 60, 5000, parent, child, &how), 128 + SIGKILL);
	return 0;
}
