/* Two processes; the responder's process is alive but does not answer our
 * channel's HELLO for several retry budgets (stopped: as a process busy with
 * thousands of channel handshakes is, qp_scale).  Its socket is connected,
 * so the requester waits (engine/comp.c, hello_busy): the SEND posted
 * meanwhile completes once the peer runs again, where it failed with
 * IBV_WC_RETRY_EXC_ERR after one budget.  timeout = 12 and retry_cnt = 1:
 * a budget of 34 ms; the peer stays stopped for about four. */
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

#define STOP_MS 150

static pid_t child_pid;

/* a failing check exits: the stopped child must not outlive us */
static void kill_child(void)
{
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
}

static struct t_opts opts(void)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 12;
	o.retry_cnt = 1;
	return o;
}

static void child(int fd)
{
	struct t_opts o = opts();
	struct t_info mine, theirs;
	struct ibv_context *ctx;
	struct t_ep e;

	t_alarm(30);
	ctx = t_open();
	t_ep_create(&e, ctx, &o);
	t_ep_info(&e, &mine);
	t_xchg(fd, &mine, &theirs);
	t_ep_connect(&e, &o, &theirs);
	CHECK_OK(t_post_recv(e.qp, 1, e.buf, 64, e.mr->lkey));
	t_sync(fd);
	raise(SIGSTOP);              /* the parent connects while we are stopped */
	CHECK_STATUS(t_wc(e.cq, 10000), IBV_WC_SUCCESS);
	t_sync(fd);
	t_ep_destroy(&e);
	ibv_close_device(ctx);
	_exit(0);
}

int main(void)
{
	struct t_opts o = opts();
	struct t_info mine, theirs;
	struct ibv_context *ctx;
	struct ibv_wc wc;
	struct t_ep e;
	int fd, st;
	pid_t pid;

	t_alarm(30);
	pid = t_fork(&fd);
	if (pid == 0)
		child(fd);
	child_pid = pid;
	atexit(kill_child);
	ctx = t_open();
	t_ep_create(&e, ctx, &o);
	t_ep_info(&e, &mine);
	t_xchg(fd, &mine, &theirs);
	t_sync(fd);
	CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
	CHECK(WIFSTOPPED(st));
	/* RTR starts our link: the HELLO goes to a process that does not run */
	t_ep_connect(&e, &o, &theirs);
	CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 7, e.buf, 64, e.mr->lkey, IBV_SEND_SIGNALED));
	for (uint64_t end = t_now_ms() + STOP_MS; t_now_ms() < end; t_sleep_ms(5))
		CHECK_EQ(ibv_poll_cq(e.cq, 1, &wc), 0);
	CHECK_OK(kill(pid, SIGCONT));
	wc = t_wc(e.cq, 10000);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	t_sync(fd);
	CHECK_EQ(t_wait_child(pid, 10000), 0);
	child_pid = 0;
	t_ep_destroy(&e);
	ibv_close_device(ctx);
	return 0;
}
