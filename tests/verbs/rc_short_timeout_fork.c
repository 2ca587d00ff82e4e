/* Two processes, RC with a short local ACK timeout (timeout = 13: 34 ms,
 * retry_cnt = 2; shorter ones fail on a loaded 2-core machine, where the
 * peer may not be scheduled for ~10 ms): SENDs posted right after RTS to a live peer that has its
 * receives posted succeed.  The transport timer measures a request's time on
 * the wire; connection setup behind RTR must not turn it into
 * RETRY_EXC_ERR, and every WR completes. */
#include "common.h"

#define N 4

int main(void)
{
	struct t_opts o;
	struct t_ep e;
	struct t_info mine, theirs;
	int fd;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 13;
	o.retry_cnt = 2;
	pid_t pid = t_fork(&fd);
	t_alarm(30);
	struct ibv_context *ctx = t_open();
	t_ep_create(&e, ctx, &o);
	t_ep_info(&e, &mine);
	t_xchg(fd, &mine, &theirs);
	t_ep_connect(&e, &o, &theirs);

	if (pid == 0) {
		for (int i = 0; i < N; i++)
			CHECK_OK(t_post_recv(e.qp, i, e.buf + 256 * i, 256, e.mr->lkey));
		t_sync(fd);
		for (int i = 0; i < N; i++) {
			struct ibv_wc wc = t_wc(e.cq, 5000);
			CHECK_STATUS(wc, IBV_WC_SUCCESS);
			CHECK_EQ(wc.wr_id, i);
		}
		t_sync(fd);
		t_ep_destroy(&e);
		CHECK_OK(ibv_close_device(ctx));
		exit(0);
	}

	t_sync(fd);
	for (int i = 0; i < N; i++)
		CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, i, e.buf, 64, e.mr->lkey,
				     IBV_SEND_SIGNALED));
	for (int i = 0; i < N; i++) {
		struct ibv_wc wc = t_wc(e.cq, 5000);
		CHECK_EQ(wc.wr_id, i);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
	}
	t_sync(fd);
	CHECK_EQ(t_wait_child(pid, 10000), 0);
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
