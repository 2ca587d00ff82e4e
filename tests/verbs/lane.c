/* A TCP channel's datagram lane (transport/tcp/lane.h): a ping-pong's lone
 * frames go first as UDP datagrams, then on the stream, and the reader
 * takes whichever comes first.  The stream stays the truth, so every
 * message arrives whole and in order whatever happens to the datagrams:
 *   1. a SEND ping-pong of sizes on both sides of the lane's limit: the
 *      lane carries the small ones (the QP's status counts them);
 *   2. READs and WRITEs one at a time: the data is right;
 *   3. datagrams from the peer's own address that do not carry the
 *      receiver's secret change nothing: each copy the lane sends is taken
 *      off it (lost, so the stream must bring it) and replaced by one
 *      with the same place in the stream, other bytes and a wrong secret;
 *      a flood of junk and false notices to stop copying does no harm;
 *   4. a lane that loses every second copy (SOFTVERBS_LANE_DROP=2): the
 *      stream fills the gaps;
 *   5. SOFTVERBS_LANE=0: no lane, no datagram.
 * Without SOFTVERBS_TRANSPORT=tcp (verbs_lane) the QPs use rings, which
 * have no lane: the same traffic, and the counters stay 0. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common.h"
#include "status/format.h"

#define ROUNDS 300
#define SLOT 4096u

static const uint32_t sizes[] = { 8, 100, 500, 600, 2048 };

static uint8_t seed_of(int i) { return (uint8_t)(11 * i + 5); }

static int lanes[16], nlanes, stolen;

/* The lane socket at the other end of fds[k]'s. */
static int partner(int k)
{
	struct sockaddr_in peer, me;
	socklen_t l1 = sizeof(peer), l2;

	CHECK(!getpeername(lanes[k], (struct sockaddr *)&peer, &l1));
	for (int j = 0; j < nlanes; j++) {
		l2 = sizeof(me);
		if (!getsockname(lanes[j], (struct sockaddr *)&me, &l2) && me.sin_port == peer.sin_port)
			return lanes[j];
	}
	T_FAIL("lane socket %d has no other end here", lanes[k]);
}

/* Every datagram waiting on the lanes is taken and a forged one sent in
 * its place: its header's secret changed, its bytes inverted. */
static void steal_and_forge(void)
{
	static uint8_t d[16][2048];
	ssize_t len[16];
	int from[16], n = 0;

	for (int k = 0; k < nlanes; k++) {
		ssize_t r;

		while (n < 16 && (r = recv(lanes[k], d[n], sizeof(d[n]), MSG_DONTWAIT)) >= 0) {
			if (r < 16)
				continue;
			len[n] = r;
			from[n++] = k;
		}
	}
	for (int m = 0; m < n; m++) {
		d[m][0] ^= 1;
		for (ssize_t i = 16; i < len[m]; i++)
			d[m][i] ^= 0xff;
		(void)send(partner(from[m]), d[m], (size_t)len[m], MSG_DONTWAIT);
	}
	stolen += n;
}

/* One SEND from `from` to `to`, its receive posted first, checked. */
static void send_one(struct t_ep *from, struct t_ep *to, int i)
{
	uint32_t len = sizes[i % 5];
	uint8_t *src = from->buf, *dst = to->buf + SLOT;
	struct ibv_wc wc;

	CHECK_OK(t_post_recv(to->qp, 2000 + i, dst, SLOT, to->mr->lkey));
	t_fill(src, len, seed_of(i));
	CHECK_OK(t_post_send(from->qp, IBV_WR_SEND, i, src, len, from->mr->lkey,
			     IBV_SEND_SIGNALED));
	if (nlanes)
		steal_and_forge();
	wc = t_wc(to->cq, 10000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, 2000 + i);
	CHECK_EQ(wc.byte_len, len);
	if (!t_check_fill(dst, len, seed_of(i)))
		T_FAIL("SEND %d (%u bytes): its bytes are wrong", i, len);
	wc = t_wc(from->cq, 10000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.wr_id, (uint64_t)i);
}

static void ping_pong(struct t_pair *p, int rounds)
{
	for (int i = 0; i < rounds; i++)
		send_one(i % 2 ? &p->b : &p->a, i % 2 ? &p->a : &p->b, i);
}

/* READ, then WRITE, of a's buffer's third slot from and to b's. */
static void one_sided(struct t_pair *p, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		uint32_t len = sizes[i % 5];
		uint8_t *local = p->a.buf + 2 * SLOT, *remote = p->b.buf + 2 * SLOT;
		struct ibv_wc wc;

		t_fill(remote, len, seed_of(i));
		CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_READ, i, local, len, p->a.mr->lkey,
				     (uintptr_t)remote, p->b.mr->rkey, IBV_SEND_SIGNALED));
		wc = t_wc(p->a.cq, 10000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (!t_check_fill(local, len, seed_of(i)))
			T_FAIL("READ %d (%u bytes): its bytes are wrong", i, len);
		t_fill(local, len, seed_of(i + 1));
		CHECK_OK(t_post_rdma(p->a.qp, IBV_WR_RDMA_WRITE, i, local, len, p->a.mr->lkey,
				     (uintptr_t)remote, p->b.mr->rkey, IBV_SEND_SIGNALED));
		wc = t_wc(p->a.cq, 10000);
		CHECK_STATUS(wc, IBV_WC_SUCCESS);
		if (!t_check_fill(remote, len, seed_of(i + 1)))
			T_FAIL("WRITE %d (%u bytes): its bytes are wrong", i, len);
	}
}

static void lane_counts(struct t_pair *p, uint64_t *tx, uint64_t *rx)
{
	struct svst_qp a, b;

	CHECK(t_status_qp(p->a.qp->qp_num, &a));
	CHECK(t_status_qp(p->b.qp->qp_num, &b));
	*tx = a.lane_tx + b.lane_tx;
	*rx = a.lane_rx + b.lane_rx;
}

static void open_pair(struct t_pair *p)
{
	struct t_opts o;

	t_opts_default(&o, IBV_QPT_RC);
	o.buf_len = 4 * SLOT;
	t_pair_open(p, &o);
}

/* This process's lanes: connected UDP sockets (the UD sockets are not
 * connected).  Each end of a lane is here, so a datagram sent on one
 * comes from exactly the address the other expects. */
static int find_lanes(int *fds, int max)
{
	int n = 0;

	for (int fd = 3; fd < 4096 && n < max; fd++) {
		struct sockaddr_in me, peer;
		socklen_t l1 = sizeof(me), l2 = sizeof(peer);
		int type = 0;
		socklen_t tl = sizeof(type);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM ||
		    getsockname(fd, (struct sockaddr *)&me, &l1) || me.sin_family != AF_INET ||
		    getpeername(fd, (struct sockaddr *)&peer, &l2))
			continue;
		fds[n++] = fd;
	}
	return n;
}

/* Forged datagrams on every lane: they must change nothing. */
static void forge(int *fds, int n)
{
	uint8_t junk[256];

	for (int k = 0; k < n; k++) {
		for (uint64_t off = 0; off < 4096; off += 64) {
			uint64_t hdr[2] = { 0x1234567890abcdefull, __builtin_bswap64(off) };

			t_fill(junk, sizeof(junk), (uint8_t)off);
			memcpy(junk, hdr, sizeof(hdr));
			(void)send(fds[k], junk, sizeof(junk), MSG_DONTWAIT);
		}
		/* a notice (header only, offset all ones) with a wrong secret */
		uint64_t notice[2] = { 42, ~0ull };
		(void)send(fds[k], notice, sizeof(notice), MSG_DONTWAIT);
		(void)send(fds[k], junk, 3, MSG_DONTWAIT);
	}
}

int main(void)
{
	const char *tr = getenv("SOFTVERBS_TRANSPORT");
	bool tcp = tr && !strcmp(tr, "tcp");
	struct t_pair p;
	uint64_t tx, rx;
	int fds[16];

	t_alarm(40);

	/* 1 and 2 */
	open_pair(&p);
	ping_pong(&p, ROUNDS);
	one_sided(&p, 100);
	lane_counts(&p, &tx, &rx);
	if (!tcp) {
		CHECK_EQ(tx, 0);
		CHECK_EQ(rx, 0);
		t_pair_close(&p);
		return 0;
	}
	if (!tx || !rx)
		T_FAIL("the lane carried nothing: %llu datagrams sent, %llu taken",
		       (unsigned long long)tx, (unsigned long long)rx);
	CHECK(rx <= tx);

	/* 3 */
	nlanes = find_lanes(lanes, 16);
	if (nlanes < 2)
		T_FAIL("found %d lane sockets, expected both ends of each", nlanes);
	forge(lanes, nlanes);
	ping_pong(&p, ROUNDS);
	if (!stolen)
		T_FAIL("no copy was there to steal in %d round trips", ROUNDS);
	forge(lanes, nlanes);
	nlanes = 0;
	one_sided(&p, 50);
	t_pair_close(&p);

	/* 4 */
	setenv("SOFTVERBS_LANE_DROP", "2", 1);
	open_pair(&p);
	ping_pong(&p, ROUNDS);
	one_sided(&p, 50);
	lane_counts(&p, &tx, &rx);
	if (!tx)
		T_FAIL("with half the copies lost the lane sent none");
	t_pair_close(&p);
	unsetenv("SOFTVERBS_LANE_DROP");

	/* 5 */
	setenv("SOFTVERBS_LANE", "0", 1);
	open_pair(&p);
	ping_pong(&p, 50);
	lane_counts(&p, &tx, &rx);
	CHECK_EQ(tx, 0);
	CHECK_EQ(rx, 0);
	CHECK_EQ(find_lanes(fds, 16), 0);
	t_pair_close(&p);
	return 0;
}
