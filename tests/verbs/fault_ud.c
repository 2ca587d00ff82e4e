/* Fault injection on UD (SOFTVERBS_FAULT, docs/observability.md): a
 * datagram is lost as a fabric loses it, never delivered damaged.  With
 * drops, duplicates and corruption, some of 400 datagrams never arrive,
 * some twice, and every one that does is intact; with corrupt=1 none
 * arrives (each fails its checksum at the receiver).  The sender's
 * completions all succeed: UD has no acknowledgements.  Each case runs in
 * a child, which reads the knob when it opens the device. */
#include "common.h"

#define N_SENT 400
#define PAYLOAD 256
#define SLOT (40 + PAYLOAD)          /* a receive: the GRH area, the payload */
#define N_RECV 512

/* Send n datagrams (index, then the index's fill); the sender completes each. */
static void send_all(struct t_pair *p, struct ibv_ah *ah, const struct t_opts *o, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t *m = p->a.buf + (size_t)(i % 16) * PAYLOAD;

		memcpy(m, &i, sizeof(i));
		t_fill(m + sizeof(i), PAYLOAD - sizeof(i), (uint8_t)i);
		CHECK_OK(t_post_ud(p->a.qp, (uint64_t)i, m, PAYLOAD, p->a.mr->lkey, ah, p->ib.qpn,
				   o->qkey, IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(p->a.cq, 2000), IBV_WC_SUCCESS);
	}
}

/* Every datagram received until 300 ms pass without one: counted by index. */
static int receive_all(struct t_pair *p, int count[N_SENT])
{
	struct ibv_wc wc;
	int got = 0;

	while (t_poll(p->b.cq, &wc, 1, 300) == 1) {
		const uint8_t *m = p->b.buf + wc.wr_id * SLOT + 40;
		int i;

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, SLOT);
		memcpy(&i, m, sizeof(i));
		CHECK(i >= 0 && i < N_SENT);
		CHECK(t_check_fill(m + sizeof(i), PAYLOAD - sizeof(i), (uint8_t)i));
		count[i]++;
		got++;
	}
	return got;
}

static void run(const char *spec, bool expect_none)
{
	static int count[N_SENT];
	struct t_opts o;
	struct t_pair p;
	struct ibv_ah *ah;
	int got, distinct = 0, twice = 0;

	CHECK_OK(setenv("SOFTVERBS_FAULT", spec, 1));
	t_alarm(60);
	t_opts_default(&o, IBV_QPT_UD);
	o.max_recv_wr = N_RECV;
	o.cqe = 2 * N_RECV;
	o.buf_len = (size_t)N_RECV * SLOT;
	t_pair_open(&p, &o);
	ah = t_ah(p.a.pd, &p.ib, false);
	for (int i = 0; i < N_RECV; i++)
		CHECK_OK(t_post_recv(p.b.qp, (uint64_t)i, p.b.buf + (size_t)i * SLOT, SLOT,
				     p.b.mr->lkey));
	send_all(&p, ah, &o, expect_none ? 50 : N_SENT);
	got = receive_all(&p, count);
	for (int i = 0; i < N_SENT; i++) {
		distinct += count[i] > 0;
		twice += count[i] > 1;
		CHECK(count[i] <= 2);
	}
	fprintf(stderr, "%s: %d received, %d of %d distinct, %d twice\n", spec, got, distinct,
		expect_none ? 50 : N_SENT, twice);
	if (expect_none) {
		CHECK_EQ(got, 0);
	} else {
		CHECK(distinct < N_SENT);          /* some were lost */
		CHECK(distinct > N_SENT / 3);      /* most were not */
		CHECK(twice > 0);                  /* some came twice */
	}
	CHECK_OK(ibv_destroy_ah(ah));
	t_pair_close(&p);
	exit(0);
}

int main(void)
{
	static const struct { const char *spec; bool none; } cases[] = {
		{ "udp:drop=0.2,dup=0.2,corrupt=0.2,seed=4", false },
		{ "udp:corrupt=1,seed=5", true },
	};

	t_alarm(120);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd;
		pid_t pid = t_fork(&fd);

		if (!pid)
			run(cases[i].spec, cases[i].none);
		close(fd);
		CHECK_EQ(t_wait_child(pid, 60000), 0);
	}
	return 0;
}
