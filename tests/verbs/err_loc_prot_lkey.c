/* A send SGE with an invalid lkey, or the lkey of another PD's MR:
 * IBV_WC_LOC_PROT_ERR, the QP goes to ERR, nothing reaches the peer. */
#include "common.h"

static void run(uint32_t (*bad_lkey)(struct t_pair *p))
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_wc wc;

	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	CHECK_OK(t_post_recv(p.b.qp, 1, p.b.buf, 256, p.b.mr->lkey));
	CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, 2, p.a.buf, 64, bad_lkey(&p),
			     IBV_SEND_SIGNALED));
	wc = t_wc(p.a.cq, 5000);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_STATUS(wc, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(t_qp_state(p.a.qp), IBV_QPS_ERR);
	t_no_wc(p.b.cq, 100);
	t_pair_close(&p);
}

static uint32_t garbage(struct t_pair *p) { return p->a.mr->lkey ^ 0x00a5a500u; }
static uint32_t other_pd(struct t_pair *p) { return p->b.mr->lkey; }

int main(void)
{
	t_alarm(30);
	run(garbage);
	run(other_pd);
	return 0;
}
