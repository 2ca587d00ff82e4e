/*
 * One connection for a ping-pong (TCP channels, engine/req.c): once a
 * ping-pong is steady, one QP of the pair (the lesser QPN) sends its
 * requests on the channel its peer opened, so both directions share one
 * TCP connection.  Two threads play the two sides of a ping-pong, as two
 * processes would.  Checked: that it happens (the process owns both ends
 * of both connections and reads their byte counts), and that every
 * operation of the turned QP works on the shared connection, data
 * checked: SEND with immediate, RDMA WRITE, READ, fetch-and-add,
 * compare-and-swap, several requests in flight (READs behind WRITEs:
 * their responses share the peer's queue), an RNR retry; and the
 * peer's last SEND completes when the turned QP is destroyed right after.
 * Over shared memory (the default transport for two QPs on one host)
 * there are no TCP channels: only the operations are checked.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common.h"

#define DST      0        /* 64 bytes a SEND lands in */
#define SRC      4096     /* SEND sources, 64 bytes each, SLOTS of them */
#define SLOTS    32
#define RMEM     16384    /* what the peer WRITEs (8 bytes each) and READs */
#define COUNTER  32768    /* what the peer's atomics change */
#define RESULT   32776    /* an atomic's original value */
#define READBACK 32832    /* where a READ lands */
#define PAIRS    8        /* WRITE + READ pairs in flight at once */
#define PAIR_SRC 40960    /* what they WRITE, 8 bytes each */
#define PAIR_DST 41024    /* where they land in the peer, and READ from */
#define PAIR_BACK 41088   /* where the READs land */
#define ROUNDS   600
#define MEASURED 400      /* the last rounds, when the ping-pong is steady */
#define RNR_ROUND 550     /* the other side posts its receive late */

/* ---- the process's TCP connections ---- */

struct end {
	struct sockaddr_in self, peer;
	uint64_t sent;
};

/* Established TCP sockets of this process and the bytes each has sent. */
static int tcp_ends(struct end *e, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)) && n < max) {
		int fd = atoi(de->d_name), type = 0;
		struct tcp_info ti;
		socklen_t l = sizeof(type), tl = sizeof(ti), al = sizeof(e[n].self);

		if (de->d_name[0] == '.' ||
		    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l) || type != SOCK_STREAM ||
		    getsockname(fd, (struct sockaddr *)&e[n].self, &al) ||
		    e[n].self.sin_family != AF_INET ||
		    getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) ||
		    ti.tcpi_state != 1 /* TCP_ESTABLISHED */)
			continue;
		al = sizeof(e[n].peer);
		if (getpeername(fd, (struct sockaddr *)&e[n].peer, &al))
			continue;
		e[n].sent = ti.tcpi_bytes_sent;
		n++;
	}
	closedir(d);
	return n;
}

static bool same_addr(const struct sockaddr_in *x, const struct sockaddr_in *y)
{
	return x->sin_addr.s_addr == y->sin_addr.s_addr && x->sin_port == y->sin_port;
}

/* The bytes `e` sent since `before` (matched by its addresses). */
static uint64_t sent_since(const struct end *e, const struct end *before, int n)
{
	for (int i = 0; i < n; i++)
		if (same_addr(&e->self, &before[i].self) && same_addr(&e->peer, &before[i].peer))
			return e->sent - before[i].sent;
	return 0;
}

/* ---- one side of the ping-pong ---- */

struct side {
	struct t_ep *e;
	const struct t_info *peer;
	bool turner;             /* the lesser QPN: its requests turn; it sends first */
	uint32_t sends;          /* SENDs posted, and completed */
	uint32_t sends_done;
	int reads_due;           /* READ / atomic completions awaited */
	bool primed;             /* a receive is posted (left by the last run) */
	pthread_barrier_t *bar;
};

static void post_send(struct side *s, uint32_t r, enum ibv_wr_opcode op)
{
	struct t_ep *x = s->e;
	uint8_t *src = x->buf + SRC + 64 * (s->sends % SLOTS);
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge = { (uintptr_t)src, 8, x->mr->lkey };

	memcpy(src, &r, sizeof(r));
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 100 + s->sends % SLOTS;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.imm_data = htonl(r);
	wr.wr.rdma.remote_addr = s->peer->addr + RMEM;    /* RDMA_WRITE_WITH_IMM */
	wr.wr.rdma.rkey = s->peer->rkey;
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_OK(ibv_post_send(x->qp, &wr, &bad));
	s->sends++;
}

/* What a side sends in round r: the turner SENDs with immediate, the
 * other side SENDs, or WRITEs with immediate in odd rounds (one message
 * a round each way: a ping-pong). */
static enum ibv_wr_opcode round_op(bool turner, uint32_t r)
{
	if (turner)
		return IBV_WR_SEND_WITH_IMM;
	return r % 2 ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_SEND;
}

/* Poll until the receive of round r is in (and every READ / atomic
 * posted), counting other completions. */
static void wait_round(struct side *s, uint32_t r)
{
	enum ibv_wr_opcode op = round_op(!s->turner, r);

	bool got = false;

	while (!got || s->reads_due) {
		struct ibv_wc wc = t_wc(s->e->cq, 5000);

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (wc.wr_id >= 100) {
			s->sends_done++;
		} else if (wc.wr_id == 1) {
			CHECK(!got);
			CHECK_EQ(!!(wc.wc_flags & IBV_WC_WITH_IMM), op != IBV_WR_SEND);
			if (op != IBV_WR_SEND)
				CHECK_EQ(ntohl(wc.imm_data), r);
			if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
				CHECK_EQ(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
				CHECK(!memcmp(s->e->buf + RMEM, &r, sizeof(r)));
			} else {
				CHECK_EQ(wc.opcode, IBV_WC_RECV);
				CHECK(!memcmp(s->e->buf + DST, &r, sizeof(r)));
			}
			got = true;
		} else {
			s->reads_due--;
		}
	}
}

/* The turned QP's extra requests in round r, on the shared connection:
 * READ what the peer stored last round, atomics on the peer's counter,
 * and WRITEs (several requests in flight with the SEND). */
static void turner_extras(struct side *s, uint32_t r, uint64_t *counter)
{
	struct t_ep *x = s->e;
	uint64_t orig;

	switch (r % 4) {
	case 0:
		/* READs right behind WRITEs to the same place: executed in
		 * order, each READ returns its WRITE; their responses and the
		 * WRITEs' ACKs share the peer's response queue */
		for (uint64_t k = 0; k < PAIRS; k++) {
			uint64_t v = (uint64_t)r << 8 | k;

			memcpy(x->buf + PAIR_SRC + 8 * k, &v, 8);
			CHECK_OK(t_post_rdma(x->qp, IBV_WR_RDMA_WRITE, 5, x->buf + PAIR_SRC + 8 * k, 8,
					     x->mr->lkey, s->peer->addr + PAIR_DST + 8 * k,
					     s->peer->rkey, 0));
			CHECK_OK(t_post_rdma(x->qp, IBV_WR_RDMA_READ, 2, x->buf + PAIR_BACK + 8 * k, 8,
					     x->mr->lkey, s->peer->addr + PAIR_DST + 8 * k,
					     s->peer->rkey, IBV_SEND_SIGNALED));
		}
		s->reads_due += PAIRS;
		break;
	case 1:
		for (uint64_t k = 0; r && k < PAIRS; k++) {     /* last round's pairs */
			uint64_t v = (uint64_t)(r - 1) << 8 | k;

			CHECK(!memcmp(x->buf + PAIR_BACK + 8 * k, &v, 8));
		}
		CHECK_OK(t_post_rdma(x->qp, IBV_WR_RDMA_READ, 2, x->buf + READBACK, 8,
				     x->mr->lkey, s->peer->addr + READBACK, s->peer->rkey,
				     IBV_SEND_SIGNALED));
		CHECK_OK(t_post_atomic(x->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, x->buf + RESULT,
				       x->mr->lkey, s->peer->addr + COUNTER, s->peer->rkey, 1, 0));
		s->reads_due += 2;
		break;
	case 2:
		/* last round's READ and FETCH_ADD are done */
		CHECK_EQ(*(uint64_t *)(x->buf + READBACK), r - 2);
		memcpy(&orig, x->buf + RESULT, 8);
		CHECK_EQ(orig, *counter);
		*counter += 1;
		CHECK_OK(t_post_atomic(x->qp, IBV_WR_ATOMIC_CMP_AND_SWP, 4, x->buf + RESULT,
				       x->mr->lkey, s->peer->addr + COUNTER, s->peer->rkey,
				       *counter, *counter + 10));
		s->reads_due++;
		*counter += 10;
		break;
	case 3:
		memcpy(&orig, x->buf + RESULT, 8);         /* last round's CMP_AND_SWAP */
		CHECK_EQ(orig, *counter - 10);
		for (int k = 0; k < 3; k++)
			CHECK_OK(t_post_rdma(x->qp, IBV_WR_RDMA_WRITE, 5, x->buf + SRC, 8,
					     x->mr->lkey, s->peer->addr + RMEM + 64 + 8 * k,
					     s->peer->rkey, 0));
		break;
	}
}

/* The other side stores the round number where the turner READs it. */
static void other_extras(struct side *s, uint32_t r)
{
	uint64_t v = r;

	memcpy(s->e->buf + READBACK, &v, 8);
}

static void drain_sends(struct side *s, uint32_t keep)
{
	while (s->sends - s->sends_done > keep) {
		struct ibv_wc wc = t_wc(s->e->cq, 5000);

		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		CHECK(wc.wr_id >= 100);
		s->sends_done++;
	}
}

/* Round r: the turner sends, the other side answers. */
static void *side_run(void *arg)
{
	struct side *s = arg;
	struct t_ep *x = s->e;
	/* the peer's counter, which the turner's atomics change (one process) */
	uint64_t counter = *(uint64_t *)(uintptr_t)(s->peer->addr + COUNTER);

	if (!s->primed)
		CHECK_OK(t_post_recv(x->qp, 1, x->buf + DST, 64, x->mr->lkey));
	s->primed = true;        /* each round posts the next one */
	pthread_barrier_wait(s->bar);
	for (uint32_t r = 0; r < ROUNDS; r++) {
		if (r == ROUNDS - MEASURED)
			pthread_barrier_wait(s->bar);      /* the main thread counts bytes */
		if (s->turner) {
			turner_extras(s, r, &counter);
			post_send(s, r, round_op(true, r));
			wait_round(s, r);
			CHECK_OK(t_post_recv(x->qp, 1, x->buf + DST, 64, x->mr->lkey));
		} else {
			wait_round(s, r);
			/* before RNR_ROUND the receive is posted only after the answer */
			if (r + 1 != RNR_ROUND)
				CHECK_OK(t_post_recv(x->qp, 1, x->buf + DST, 64, x->mr->lkey));
			other_extras(s, r);
			post_send(s, r, round_op(false, r));
			if (r + 1 == RNR_ROUND) {
				t_sleep_ms(5);
				CHECK_OK(t_post_recv(x->qp, 1, x->buf + DST, 64, x->mr->lkey));
			}
		}
		drain_sends(s, SLOTS - 2);
	}
	pthread_barrier_wait(s->bar);
	return NULL;
}

/* Does one connection carry (nearly) all of a steady ping-pong, both ways? */
static bool one_connection(const struct end *before, int nb, const struct end *after, int na)
{
	uint64_t total = 0, least = 70ull * (MEASURED - 50);   /* a SEND: 64 + 8 bytes */

	CHECK_EQ(nb, 4);
	CHECK_EQ(na, 4);
	for (int i = 0; i < na; i++)
		total += sent_since(&after[i], before, nb);
	for (int i = 0; i < na; i++)
		for (int k = 0; k < na; k++) {
			uint64_t x = sent_since(&after[i], before, nb);
			uint64_t y = sent_since(&after[k], before, nb);

			if (same_addr(&after[k].self, &after[i].peer) &&
			    same_addr(&after[k].peer, &after[i].self) && x >= least && y >= least &&
			    (x + y) * 10 >= total * 9)
				return true;
		}
	return false;
}

int main(void)
{
	bool tcp = t_transport_tcp();
	struct end before[8], after[8];
	int nb = 0, na = 0;
	struct t_opts o;
	struct t_pair p;
	pthread_barrier_t bar;
	struct side sa = { 0 }, sb = { 0 };
	pthread_t ta, tb;
	bool a_turns, turned = false;

	t_alarm(120);
	t_opts_default(&o, IBV_QPT_RC);
	t_pair_open(&p, &o);
	a_turns = p.a.qp->qp_num < p.b.qp->qp_num;
	memset(p.a.buf, 0, p.a.len);
	memset(p.b.buf, 0, p.b.len);
	CHECK_OK(pthread_barrier_init(&bar, NULL, 3));
	sa = (struct side){ .e = &p.a, .peer = &p.ib, .turner = a_turns, .bar = &bar };
	sb = (struct side){ .e = &p.b, .peer = &p.ia, .turner = !a_turns, .bar = &bar };
	/* A loaded machine (sanitizers, parallel tests) may break a
	 * ping-pong's streak now and then: it gets a few runs to show one
	 * connection.  Every run checks all its data. */
	for (int run = 0; run < 4 && !turned; run++) {
		CHECK_OK(pthread_create(&ta, NULL, side_run, &sa));
		CHECK_OK(pthread_create(&tb, NULL, side_run, &sb));
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		if (tcp)
			nb = tcp_ends(before, 8);
		pthread_barrier_wait(&bar);
		if (tcp)
			na = tcp_ends(after, 8);
		CHECK_OK(pthread_join(ta, NULL));
		CHECK_OK(pthread_join(tb, NULL));
		turned = !tcp || one_connection(before, nb, after, na);
		if (!turned)
			fprintf(stderr, "run %d: the ping-pong did not stay on one connection\n", run);
	}
	CHECK(turned);

	/* The turned QP takes the last SEND and is destroyed: the SEND completes. */
	{
		struct side *t = a_turns ? &sa : &sb, *o2 = a_turns ? &sb : &sa;

		drain_sends(t, 0);
		drain_sends(o2, 0);
		post_send(o2, ROUNDS, IBV_WR_SEND);
		CHECK_EQ(t_wc(t->e->cq, 5000).wr_id, 1);
		CHECK_OK(ibv_destroy_qp(t->e->qp));
		t->e->qp = NULL;
		drain_sends(o2, 0);
	}
	t_pair_close(&p);
	pthread_barrier_destroy(&bar);
	return 0;
}
