/* A child forked after the parent opened the device must not harm the
 * parent: it may create and destroy objects on the inherited context, open
 * the device anew and run its own traffic, and exit; the parent's connected
 * QPs keep working afterwards. */
#include <sys/wait.h>

#include "common.h"

static void send_once(struct t_pair *p, uint64_t id)
{
	CHECK_OK(t_post_recv(p->b.qp, id, p->b.buf, 64, p->b.mr->lkey));
	CHECK_OK(t_post_send(p->a.qp, IBV_WR_SEND, id, p->a.buf, 64, p->a.mr->lkey,
			     IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(p->a.cq, 5000), IBV_WC_SUCCESS);
	CHECK_STATUS(t_wc(p->b.cq, 5000), IBV_WC_SUCCESS);
}

static int child(struct ibv_context *inherited)
{
	struct ibv_pd *pd = ibv_alloc_pd(inherited);
	struct ibv_cq *cq = pd ? ibv_create_cq(inherited, 4, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = cq ? ibv_create_qp(pd, &qa) : NULL;
	struct t_opts o;
	struct t_pair own;

	/* whatever the inherited context allows, it must not crash anyone */
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	/* a device opened in the child works on its own */
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&own, &o);
	send_once(&own, 7);
	t_pair_close(&own);
	return 0;
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	pid_t pid;

#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer cannot follow a child that starts threads after a
	 * multi-threaded fork; the plain and ASan runs cover this test. */
	T_SKIP_IF(1, "fork of a multi-threaded process under ThreadSanitizer");
#endif
	t_alarm(40);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	send_once(&p, 1);

	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child(p.ctx));
	CHECK_EQ(t_wait_child(pid, 20000), 0);

	for (uint64_t i = 2; i < 20; i++)
		send_once(&p, i);
	t_pair_close(&p);
	return 0;
}
