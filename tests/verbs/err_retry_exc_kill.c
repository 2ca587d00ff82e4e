/* Two processes; the peer process is killed: the requester's outstanding
 * SEND completes with IBV_WC_RETRY_EXC_ERR within a bound (timeout = 10,
 * retry_cnt = 2), then the QP is in ERR. */
#include <signal.h>

#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_ep e;
	struct t_info mine, theirs;
	int fd;

	t_opts_default(&o, IBV_QPT_RC);
	o.timeout = 10;
	o.retry_cnt = 2;
	pid_t pid = t_fork(&fd);
	t_alarm(60);
	struct ibv_context *ctx = t_open();
	t_ep_create(&e, ctx, &o);
	t_ep_info(&e, &mine);
	t_xchg(fd, &mine, &theirs);
	t_ep_connect(&e, &o, &theirs);

	if (pid == 0) {
		CHECK_OK(t_post_recv(e.qp, 1, e.buf, 64, e.mr->lkey));
		t_sync(fd);
		CHECK_STATUS(t_wc(e.cq, 5000), IBV_WC_SUCCESS);
		t_sync(fd);
		pause();            /* until killed */
		_exit(3);
	}

	t_sync(fd);
	/* let the channel come up before the first SEND: the short timeout is
	 * for the dead peer, not for connection setup (rc_short_timeout_fork
	 * covers that case) */
	t_sleep_ms(200);
	CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 1, e.buf, 64, e.mr->lkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(e.cq, 5000), IBV_WC_SUCCESS);
	t_sync(fd);
	CHECK_OK(kill(pid, SIGKILL));
	CHECK_EQ(t_wait_child(pid, 5000), 128 + SIGKILL);

	uint64_t t0 = t_now_ms();
	CHECK_OK(t_post_send(e.qp, IBV_WR_SEND, 2, e.buf, 64, e.mr->lkey, IBV_SEND_SIGNALED));
	struct ibv_wc wc = t_wc(e.cq, 20000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_RETRY_EXC_ERR);
	fprintf(stderr, "RETRY_EXC_ERR after %llu ms\n", (unsigned long long)(t_now_ms() - t0));
	CHECK(t_now_ms() - t0 < 10000);
	CHECK_EQ(t_qp_state(e.qp), IBV_QPS_ERR);
	t_ep_destroy(&e);
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
