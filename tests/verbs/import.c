/* Shared objects between contexts (ibv_import_device(3), ibv_import_pd(3),
 * ibv_import_mr(3), ibv_import_dm(3)): a context imported from a dup of
 * another's cmd_fd sees its PDs, MRs and DMs by handle, and they work as
 * the originals do; another process cannot import this process's context. */
#include <fcntl.h>
#include <sys/wait.h>

#include "common.h"

/* a's QP lives on an imported context and PD and sends from an imported
 * MR to b, a pair made by the original context. */
static void check_pd_mr(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_context *ictx;
	struct ibv_pd *ipd;
	struct ibv_mr *imr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct t_info info;
	int fd;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_ERR(write(p.ctx->cmd_fd, "x", 1) < 0 ? -1 : 0, EPERM);   /* sealed */
	fd = dup(p.ctx->cmd_fd);
	CHECK(fd >= 0);
	ictx = CHECK_PTR(ibv_import_device(fd));
	CHECK_NULL_ERRNO(ibv_import_pd(ictx, 0xfffffff), EINVAL);
	ipd = CHECK_PTR(ibv_import_pd(ictx, p.a.pd->handle));
	CHECK_EQ(ipd->handle, p.a.pd->handle);
	imr = CHECK_PTR(ibv_import_mr(ipd, p.a.mr->handle));
	CHECK(imr->addr == NULL);                    /* ibv_import_mr(3) */
	CHECK_EQ(imr->lkey, p.a.mr->lkey);
	CHECK_EQ(imr->rkey, p.a.mr->rkey);
	CHECK_EQ(imr->length, p.a.mr->length);
	CHECK_NULL_ERRNO(ibv_import_mr(ipd, p.b.mr->handle), EINVAL);   /* b's PD */

	/* a QP of the imported context and PD, to b */
	cq = CHECK_PTR(ibv_create_cq(ictx, 8, NULL, NULL, 0));
	ia.send_cq = ia.recv_cq = cq;
	qp = CHECK_PTR(ibv_create_qp(ipd, &ia));
	info = p.ia;
	info.qpn = qp->qp_num;
	CHECK_OK(ibv_modify_qp(p.b.qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_RESET },
			       IBV_QP_STATE));             /* b now talks to qp */
	CHECK_OK(t_to_init(p.b.qp, &o));
	CHECK_OK(t_to_rtr(p.b.qp, &o, &info));
	CHECK_OK(t_to_rts(p.b.qp, &o, p.b.psn));
	info = p.ib;
	CHECK_OK(t_to_init(qp, &o));
	CHECK_OK(t_to_rtr(qp, &o, &info));
	CHECK_OK(t_to_rts(qp, &o, p.a.psn));
	t_fill(p.a.buf, 128, 4);
	CHECK_OK(t_post_rdma(qp, IBV_WR_RDMA_WRITE, 1, p.a.buf, 128, imr->lkey, p.ib.addr,
			     p.ib.rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(cq, 5000), IBV_WC_SUCCESS);
	CHECK(t_check_fill(p.b.buf, 128, 4));

	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_destroy_cq(cq));
	CHECK_ERR(ibv_dealloc_pd(ipd), EBUSY);       /* the imported MR uses it */
	ibv_unimport_mr(imr);
	ibv_unimport_pd(ipd);
	CHECK_OK(ibv_close_device(ictx));            /* closes fd */
	CHECK(fcntl(fd, F_GETFD) < 0);
	t_pair_close(&p);                            /* the originals are still whole */
}

static void check_dm(void)
{
	struct ibv_context *ctx = t_open(), *ictx;
	struct ibv_alloc_dm_attr a = { .length = 4096 };
	struct ibv_dm *dm, *idm;
	uint32_t v = 0x12345678, r = 0;

	dm = CHECK_PTR(ibv_alloc_dm(ctx, &a));
	ictx = CHECK_PTR(ibv_import_device(dup(ctx->cmd_fd)));
	idm = CHECK_PTR(ibv_import_dm(ictx, dm->handle));
	CHECK_OK(ibv_memcpy_to_dm(dm, 8, &v, 4));
	CHECK_OK(ibv_memcpy_from_dm(&r, idm, 8, 4));
	CHECK_EQ(r, v);
	CHECK_ERR(ibv_free_dm(dm), EBUSY);           /* imported */
	ibv_unimport_dm(idm);
	CHECK_OK(ibv_free_dm(dm));
	CHECK_OK(ibv_close_device(ictx));
	CHECK_OK(ibv_close_device(ctx));
}

/* Not a cmd_fd: EINVAL; another process's: EOPNOTSUPP. */
static void check_bad_fds(void)
{
	struct ibv_context *ctx = t_open();
	int st, fd = dup(ctx->cmd_fd);
	pid_t pid;

	CHECK_NULL_ERRNO(ibv_import_device(0), EINVAL);
	CHECK_OK(ibv_close_device(ctx));
	/* its context is gone: this fd names no device context here any more */
	CHECK_NULL_ERRNO(ibv_import_device(fd), EOPNOTSUPP);
	close(fd);

	ctx = t_open();
	fd = dup(ctx->cmd_fd);
	pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		/* the child's copy of the context is not the device context
		 * (and it starts no thread: TSan cannot follow one here) */
		_exit(!ibv_import_device(fd) && errno == EOPNOTSUPP ? 0 : 1);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	CHECK_OK(ibv_close_device(ctx));
}

int main(void)
{
	t_alarm(30);
	check_pd_mr();
	check_dm();
	check_bad_fds();
	return 0;
}
