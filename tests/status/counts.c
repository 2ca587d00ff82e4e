/* status_counts: the counters a process publishes are exact.  An RC pair
 * in this process exchanges SENDS SENDs and WRITES RDMA WRITEs (more than
 * one counting run, and not a whole number of them: engine/stat.h); then,
 * within a few seconds, this process's own status file says so: the
 * requester's sent SENDs and WRITEs, the responder's received SENDs, and
 * both send queues' indices.  Run on the rings and over TCP. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "status/format.h"

enum { SENDS = 100, WRITES = 70, SEND_LEN = 8, WRITE_LEN = 16 };

struct want {
	const char *what;
	const uint64_t *got;
	uint64_t value;
};

/* Whether every counter in `w` has its value (the mismatch printed). */
static bool all_match(const struct want *w, size_t n, bool say)
{
	bool ok = true;

	for (size_t i = 0; i < n; i++) {
		if (*w[i].got == w[i].value)
			continue;
		ok = false;
		if (say)
			fprintf(stderr, "status_counts: %s is %llu, not %llu\n", w[i].what,
				(unsigned long long)*w[i].got, (unsigned long long)w[i].value);
	}
	return ok;
}

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct svst_qp a, b;
	uint64_t a_sq_posted, a_sq_done, b_rx_send, b_rx_bytes;

	t_alarm(40);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	for (int i = 0; i < SENDS; i++) {
		CHECK_OK(t_post_recv(p.b.qp, i, p.b.buf, SEND_LEN, p.b.mr->lkey));
		CHECK_OK(t_post_send(p.a.qp, IBV_WR_SEND, i, p.a.buf, SEND_LEN, p.a.mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
		CHECK_STATUS(t_wc(p.b.cq, 5000), IBV_WC_SUCCESS);
	}
	for (int i = 0; i < WRITES; i++) {
		CHECK_OK(t_post_rdma(p.a.qp, IBV_WR_RDMA_WRITE, i, p.a.buf, WRITE_LEN,
				     p.a.mr->lkey, p.ib.addr, p.ib.rkey, IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(p.a.cq, 5000), IBV_WC_SUCCESS);
	}

	const struct want w[] = {
		{ "sent SENDs", &a.tx[SVST_OP_SEND].msgs, SENDS },
		{ "sent SEND bytes", &a.tx[SVST_OP_SEND].bytes, SENDS * SEND_LEN },
		{ "sent WRITEs", &a.tx[SVST_OP_WRITE].msgs, WRITES },
		{ "sent WRITE bytes", &a.tx[SVST_OP_WRITE].bytes, WRITES * WRITE_LEN },
		{ "received SENDs", &b_rx_send, SENDS },
		{ "received SEND bytes", &b_rx_bytes, SENDS * SEND_LEN },
		{ "requests posted", &a_sq_posted, SENDS + WRITES },
		{ "requests done", &a_sq_done, SENDS + WRITES },
	};
	/* The record may lag the QP by a little (engine/stat.h): poll. */
	for (int tries = 0;; tries++) {
		if (!t_status_qp(p.a.qp->qp_num, &a) || !t_status_qp(p.b.qp->qp_num, &b))
			T_FAIL("no status record for the QPs %#x and %#x", p.a.qp->qp_num,
			       p.b.qp->qp_num);
		a_sq_posted = a.sq.posted;
		a_sq_done = a.sq.done;
		b_rx_send = b.rx[SVST_OP_SEND].msgs;
		b_rx_bytes = b.rx[SVST_OP_SEND].bytes;
		if (all_match(w, sizeof(w) / sizeof(w[0]), tries == 100))
			break;
		if (tries == 100)
			T_FAIL("the status record's counters are not the exchange's");
		t_sleep_ms(50);
	}
	/* everything the requester sent went on its outbound channel or directly */
	if (a.chan_tx[0] + a.direct < SENDS + WRITES)
		T_FAIL("%llu frames and %llu direct accesses for %d requests",
		       (unsigned long long)a.chan_tx[0], (unsigned long long)a.direct,
		       SENDS + WRITES);
	t_pair_close(&p);
	printf("status_counts: ok (%llu frames, %llu direct)\n",
	       (unsigned long long)a.chan_tx[0], (unsigned long long)a.direct);
	return 0;
}
