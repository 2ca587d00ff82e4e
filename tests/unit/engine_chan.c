/*
 * The engine's receive machine, responder and completer, driven over an
 * in-memory fake channel: no socket, no second process.
 *
 * A fake channel is a struct sv_conn whose ops (fake_ops) move bytes
 * through two buffers: writev appends to `out`, readv takes at most
 * `chunk` bytes from `in` (-EAGAIN when it is empty), so the receive
 * machine stops and resumes wherever the test chooses.  Its descriptor is
 * -1 and it is never started (sv_conn_start): the progress thread never
 * sees it; this thread alone calls sv_engine_on_conn for it.
 *
 * QPs are made with the public verbs calls (the library's sources are
 * compiled into this program).  A responder is an RC QP in RTR whose
 * inbound channel is a fake one (bound as verify.c binds a proven
 * channel); a completer is an RC QP in RTS whose outbound channel is a
 * fake one (as req.c has it once HELLO_ACK came).  Their dest_qp_num,
 * PEER_QPN, names port 1, where no softverbs process listens: their own
 * connect attempts are refused at once.
 *
 * Cases (each checks exact results):
 *   0. a fake channel (fd -1) is made, rewatched, closed and freed without
 *      touching any descriptor;
 *   1. a SEND into a posted receive, read in 50-byte pieces: the receive
 *      completion, the bytes, the ACK; also a 192 KiB SEND, which the
 *      receive machine reads straight into the receive buffer;
 *   2. the same with its input arriving one byte per readv (and per
 *      wake-up): the machine's state between bytes;
 *   3. a SEND with no receive posted: RNR NAK, no completion; a later PSN
 *      is dropped; the NAKed PSN sent again completes;
 *   4. RDMA WRITE and READ with the MR's rkey (memory written, READ_RESP
 *      with the bytes), and each with a wrong rkey (NAK REM_ACCESS, QP to
 *      ERR, memory untouched);
 *   5. the completer: a signaled SEND goes out as a SEND frame; an ACK
 *      completes it; an RDMA READ goes out as READ_REQ and its READ_RESP
 *      places the bytes; two SENDs at once, one ACK for both; a NAK
 *      REM_ACCESS gives IBV_WC_REM_ACCESS_ERR; which requests say LONE
 *      (their requester has nothing else in flight, nor had before);
 *   6. a stream of READs, max_rd_atomic of them on the wire: the READs
 *      that responses read in one go make room for leave in one write
 *      (recv.c, rx_frames_acked), each response's bytes in place;
 *   7. how many READs stand: every one max_rd_atomic allows while they
 *      are small, 16 once those ask for 1 MiB (req.c, rd_room);
 *   8. a large payload arriving in pieces: while more than 64 KiB of it
 *      are still to come, the engine asks the channel to report input only
 *      once 256 KiB (or all the rest) wait, and for any byte again after
 *      (recv.c, rx_direct_lowat); small frames never ask; a TCP channel
 *      sets SO_RCVLOWAT so, capped at an eighth of its receive buffer;
 *      a request of 32 KiB or more makes the channel bulk for pollers
 *      (drive.c, bulk_wait), a smaller one ends that; an accepted TCP
 *      channel with Ethernet-sized segments has SV_CAP_READ_ACKS, one on
 *      loopback not; a poller's batch of 1 MiB of requests stamps its CQ
 *      as polled;
 *   9. a header with a bad magic: on channels not yet verified (an
 *      accepted one, a candidate of the QP) it closes the channel and the
 *      QP keeps its state and goes on working; on the QP's verified
 *      channel it closes the channel and the QP goes to ERR
 *      (docs/wire-format.md, Validation).
 *
 * Exit 0: every check passed; 1: one failed (it says which); 2: the
 * watchdog fired.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "engine/engine.h"
#include "transport/node.h"
#include "transport/transport.h"
#include "verbs/sv.h"
#include "wire/proto.h"

#define PEER_QPN   0x000101u        /* port 1: nobody listens there */
#define MR_LEN     (1u << 20)
#define GUARD      0xEE             /* what the MR holds where nothing may write */
#define RNR_TIMER  12               /* min_rnr_timer of the responders */
#define WATCHDOG_S 60

/* where in the MR */
#define OFF_RECV   0u               /* receive buffers */
#define OFF_WRITE  (512u << 10)     /* RDMA WRITE target */
#define OFF_READ   (600u << 10)     /* RDMA READ source */
#define OFF_SEND   (700u << 10)     /* the completer's SEND source */
#define OFF_RDDST  (800u << 10)     /* the completer's READ destination */

static const char *case_name = "setup";

static void __attribute__((noreturn, format(printf, 2, 3))) fail(int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "unit_engine_chan: case %s: line %d: check failed: ", case_name, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(c) do { if (!(c)) fail(__LINE__, "%s", #c); } while (0)
#define EXPECT_EQ(a, b) do { \
	unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
	if (a_ != b_) \
		fail(__LINE__, "%s == %s: %llu (0x%llx) != %llu (0x%llx)", #a, #b, a_, a_, b_, b_); \
} while (0)

static void on_alarm(int sig)
{
	static const char msg[] = "unit_engine_chan: watchdog: no end after 60 s\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(2);
}

static struct {
	struct ibv_context *ctx;
	struct sv_node *node;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *mem;
	uint16_t lid;
} G;

/* ---- the fake channel ---- */

struct fake {
	struct sv_conn *c;        /* not to be touched once closed, unless a driver */
	bool used;
	bool closed;              /* the library closed it (fake_ops.close) */
	size_t chunk;             /* most bytes one readv hands out */
	uint8_t *in, *out;
	size_t in_len, in_off, in_cap;
	size_t out_len, out_off, out_cap;
	unsigned reads;           /* readv calls that returned bytes */
	unsigned empty;           /* readv calls that found nothing (-EAGAIN) */
	unsigned writes;          /* writev calls */
	uint32_t lowat;           /* what rx_lowat last asked (0: never) */
	unsigned lowat_calls;     /* rx_lowat calls */
};

static struct fake fakes[32];

static struct fake *fake_of(struct sv_conn *c)
{
	for (size_t i = 0; i < sizeof(fakes) / sizeof(fakes[0]); i++)
		if (fakes[i].used && !fakes[i].closed && fakes[i].c == c)
			return &fakes[i];
	fail(__LINE__, "the library used a channel after closing it (or one not ours)");
}

static void grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	*cap = need > 2 * *cap ? need : 2 * *cap;
	*buf = realloc(*buf, *cap);
	CHECK(*buf);
}

static ssize_t fake_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct fake *f = fake_of(c);
	size_t total = 0;

	f->writes++;
	for (int i = 0; i < n; i++) {
		grow(&f->out, &f->out_cap, f->out_len + iov[i].iov_len);
		memcpy(f->out + f->out_len, iov[i].iov_base, iov[i].iov_len);
		f->out_len += iov[i].iov_len;
		total += iov[i].iov_len;
	}
	return (ssize_t)total;
}

static ssize_t fake_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct fake *f = fake_of(c);
	size_t left = f->in_len - f->in_off, got = 0;

	if (left > f->chunk)
		left = f->chunk;
	for (int i = 0; i < n && left; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;

		memcpy(iov[i].iov_base, f->in + f->in_off, k);
		f->in_off += k;
		got += k;
		left -= k;
	}
	if (!got) {
		f->empty++;
		return -EAGAIN;
	}
	f->reads++;
	return (ssize_t)got;
}

static void fake_close(struct sv_conn *c)
{
	fake_of(c)->closed = true;
}

static void fake_rx_lowat(struct sv_conn *c, uint32_t bytes)
{
	struct fake *f = fake_of(c);

	f->lowat = bytes;
	f->lowat_calls++;
	c->rx_lowat = bytes;
}

static const struct sv_chan_ops fake_ops = {
	.name = "fake",
	.caps = 0,                 /* a plain ordered stream: no rings, no held ACKs */
	.same_host = false,
	.writev = fake_writev,
	.readv = fake_readv,
	.close = fake_close,
	.rx_lowat = fake_rx_lowat,
};

/* A channel as a transport makes one (connected), never started. */
static struct fake *fake_new(bool outbound, size_t chunk)
{
	struct fake *f = NULL;

	for (size_t i = 0; i < sizeof(fakes) / sizeof(fakes[0]) && !f; i++)
		if (!fakes[i].used)
			f = &fakes[i];
	CHECK(f);
	memset(f, 0, sizeof(*f));
	f->used = true;
	f->chunk = chunk;
	f->c = sv_conn_new(G.node, -1, outbound, true, &fake_ops);
	CHECK(f->c);
	EXPECT_EQ(f->c->h.fd, -1);
	CHECK(f->c->ops == &fake_ops);
	EXPECT_EQ(f->c->caps, 0);
	CHECK(f->c->connected && !f->c->want_out && f->c->outbound == outbound);
	EXPECT_EQ(f->c->qc->rx_state, SV_RX_HDR);
	return f;
}

/* Its buffers, once the library closed it. */
static void fake_free(struct fake *f)
{
	CHECK(f->closed);
	free(f->in);
	free(f->out);
	memset(f, 0, sizeof(*f));
}

static void feed(struct fake *f, const void *p, size_t n)
{
	grow(&f->in, &f->in_cap, f->in_len + n);
	memcpy(f->in + f->in_len, p, n);
	f->in_len += n;
}

static struct sv_wire_hdr hdr(uint8_t op, uint32_t dst, uint32_t src, uint32_t psn)
{
	struct sv_wire_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = op;
	h.dst_qpn = dst;
	h.src_qpn = src;
	h.psn = psn;
	return h;
}

/* A frame (header in host order) with `len` payload bytes, onto `in`. */
static void feed_frame(struct fake *f, struct sv_wire_hdr h, const void *payload, uint32_t len)
{
	h.len = len;
	sv_wire_encode(&h);
	feed(f, &h, sizeof(h));
	if (len)
		feed(f, payload, len);
}

/* The next frame the library wrote: its header decoded (host order), its
 * payload where *payload points. */
static struct sv_wire_hdr take_frame(struct fake *f, const uint8_t **payload)
{
	struct sv_wire_hdr h;

	if (f->out_len - f->out_off < sizeof(h))
		fail(__LINE__, "expected a frame, found %zu byte(s) written", f->out_len - f->out_off);
	memcpy(&h, f->out + f->out_off, sizeof(h));
	if (!sv_wire_decode(&h))
		fail(__LINE__, "the library wrote a malformed header");
	f->out_off += sizeof(h);
	if (f->out_len - f->out_off < h.len)
		fail(__LINE__, "frame with %u payload bytes, %zu written", h.len,
		     f->out_len - f->out_off);
	if (payload)
		*payload = f->out + f->out_off;
	f->out_off += h.len;
	return h;
}

static void expect_no_output(struct fake *f)
{
	EXPECT_EQ(f->out_len - f->out_off, 0);
}

/* ---- verbs objects ---- */

static void noop(void *arg)
{
	(void)arg;
}

/* The progress thread finishes what it is doing (a timer under way, say)
 * and frees the channels closed meanwhile: it reaps after running
 * commands, so the second command runs after that reap. */
static void quiesce(void)
{
	sv_node_sync(G.node, noop, NULL);
	sv_node_sync(G.node, noop, NULL);
}

/*
 * Serve the channel as the progress thread would on EPOLLIN, until it
 * reads nothing more and writes nothing more, or the library closed it.
 * We are inside a guard meanwhile (sv_engine_enter): a channel the library
 * closes stays allocated until we leave (transport/conn.c, sv_conn_reap).
 * The real progress thread may hold the QP's lock meanwhile (a timer of a
 * slow run): we then find the events deferred to the holder, which, being
 * the progress thread, never serves them, so we do once it is done.
 */
static unsigned drive(struct fake *f)
{
	unsigned wakeups = 0;

	sv_engine_enter(G.node);
	while (!f->closed) {
		size_t in0 = f->in_off, out0 = f->out_len;

		sv_engine_on_conn(f->c, EPOLLIN);
		wakeups++;
		CHECK(wakeups < 1000000);
		if (__atomic_load_n(&f->c->deferred, __ATOMIC_SEQ_CST)) {
			quiesce();
			sv_engine_serve_deferred(f->c->qc->qp);
			continue;
		}
		if (f->in_off == in0 && f->out_len == out0)
			break;
	}
	sv_engine_leave(G.node);
	return wakeups;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int err = ibv_modify_qp(qp, a, mask);

	if (err)
		fail(__LINE__, "ibv_modify_qp(qp %u, to state %d): %s", qp->qp_num, a->qp_state,
		     strerror(err));
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0);
	return a.qp_state;
}

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct sv_qp *sqp;
	struct fake *f;
};

/* One frame in on `f`, and the engine must have read all of it: every
 * case's first check on what it fed.  Returns drive()'s wakeups. */
static unsigned deliver_on(struct fake *f, struct sv_wire_hdr h, const void *payload,
			   uint32_t len)
{
	unsigned wakeups;

	feed_frame(f, h, payload, len);
	wakeups = drive(f);
	EXPECT_EQ(f->in_off, f->in_len);
	return wakeups;
}

/* ... on the side's channel */
static unsigned deliver(struct side *s, struct sv_wire_hdr h, const void *payload,
			uint32_t len)
{
	return deliver_on(s->f, h, payload, len);
}

/* RESET -> INIT -> RTR (the responder's states), rq_psn `psn`. */
static void make_rtr(struct side *s, uint32_t psn)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 32, .max_recv_wr = 16, .max_send_sge = 4,
			 .max_recv_sge = 4 },
	};
	struct ibv_qp_attr a;

	s->cq = ibv_create_cq(G.ctx, 64, NULL, NULL, 0);
	CHECK(s->cq);
	ia.send_cq = ia.recv_cq = s->cq;
	s->qp = ibv_create_qp(G.pd, &ia);
	CHECK(s->qp);
	s->sqp = to_sqp(s->qp);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	modify(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = RNR_TIMER;
	a.ah_attr.dlid = G.lid;       /* this host: the unix name of port 1, unbound */
	a.ah_attr.port_num = 1;
	modify(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

/*
 * Why the progress thread cannot race the test on these QPs.  It reaches
 * a QP only through (a) events of channels it watches, (b) the QP's
 * deadlines (sv_engine_on_timer), (c) inbound channels it accepted
 * (node->pending), and always under qp->lock:
 *  (a) the fake channels are never started (fd -1, not in its epoll set)
 *      and never registered with a CQ for application-driven progress
 *      (drive.c: only on connect or HELLO_ACK), so only this thread serves
 *      them; the QP's real outbound channel, if its connect to port 1 is
 *      still under way, is closed here (an event for it already in the
 *      progress thread's batch finds it closed: recv.c, conn_serve);
 *  (b) its link retries (link_deadline) and the gone timer are cleared;
 *      ack timeout 0 arms no ack timer; fake channels have no SV_CAP_TURN
 *      (no held ACK, no ack_held_deadline) and no SV_CAP_HOLD (no RNR hold
 *      deadline); so the QP has no deadline, and its timer at 0 makes the
 *      node's timer list skip it.  A timer call already collected runs
 *      once more, finds nothing due and only takes the lock: quiesce()
 *      waits for it before a case begins;
 *  (c) our channels are not on node->pending, and nobody connects to
 *      this QP (its peer does not exist);
 *  (d) requests queued for a burst (batch.c) would be written by the
 *      progress thread's tick, which then also served the events left to
 *      it: batching is off here (main).
 * The status record's flush (stat_deadline, re-armed by any counter)
 * still takes the lock now and then and serves nothing: drive() meets it.
 * So the engine touches these QPs' channels only from this thread: the
 * fake's buffers need no lock (a TSan build would report otherwise).
 * Caller holds qp->lock.
 */
static void park(struct sv_qp *qp)
{
	if (qp->out) {
		sv_conn_close(qp->out);
		qp->out = NULL;
	}
	qp->link_deadline = 0;
	qp->gone_deadline = 0;
	EXPECT_EQ(qp->ack_deadline, 0);
	EXPECT_EQ(qp->rnr_deadline, 0);
	EXPECT_EQ(qp->ack_held_deadline, 0);
	EXPECT_EQ(qp->rnr_hold_deadline, 0);
	sv_qp_timer_update(qp);
}

/* A responder: RTR, its inbound channel a fake one whose peer is
 * verified, as verify.c binds one. */
static void responder(struct side *s, uint32_t psn, size_t chunk)
{
	make_rtr(s, psn);
	s->f = fake_new(false, chunk);
	sv_qlock_lock(&s->sqp->lock);
	CHECK(!s->sqp->in);
	park(s->sqp);
	s->sqp->in = s->f->c;
	s->f->c->qc->qp = s->sqp;
	s->f->c->qc->peer_state = SV_PEER_VERIFIED;
	sv_qp_unlock(s->sqp);
	quiesce();
}

/* A completer: RTS (ack timeout 0: no ack timer), its outbound channel a
 * fake one that is UP, as req.c has it once HELLO_ACK came. */
static void completer_rd(struct side *s, uint32_t sq_psn, uint8_t max_rd_atomic)
{
	struct ibv_qp_attr a;

	make_rtr(s, 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 0;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = max_rd_atomic;
	modify(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	s->f = fake_new(true, 65536);
	sv_qlock_lock(&s->sqp->lock);
	park(s->sqp);
	s->sqp->out = s->f->c;
	s->f->c->qc->qp = s->sqp;
	s->f->c->qc->peer_state = SV_PEER_VERIFIED;
	sv_link_set(s->sqp, SV_LINK_UP);
	sv_qp_unlock(s->sqp);
	quiesce();
}

static void completer(struct side *s, uint32_t sq_psn)
{
	completer_rd(s, sq_psn, 4);
}

/* Destroying the QP closes its channels (on the progress thread, which
 * sv_node_sync orders before us). */
static void side_end(struct side *s)
{
	CHECK(ibv_destroy_qp(s->qp) == 0);
	CHECK(ibv_destroy_cq(s->cq) == 0);
	fake_free(s->f);
}

static void post_recv(struct side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)G.mem + off, .length = len, .lkey = G.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	CHECK(ibv_post_recv(s->qp, &wr, &bad) == 0);
}

static void expect_wc(struct side *s, struct ibv_wc *wc)
{
	int n = ibv_poll_cq(s->cq, 1, wc);

	if (n != 1)
		fail(__LINE__, "expected one completion, ibv_poll_cq returned %d", n);
}

static void expect_no_wc(struct side *s)
{
	struct ibv_wc wc;
	int n = ibv_poll_cq(s->cq, 1, &wc);

	if (n != 0)
		fail(__LINE__, "expected no completion, ibv_poll_cq returned %d (wr %llu, %s)", n,
		     (unsigned long long)wc.wr_id, n > 0 ? ibv_wc_status_str(wc.status) : "-");
}

static void expect_recv_wc(struct side *s, uint64_t wr_id, uint32_t len)
{
	struct ibv_wc wc;

	expect_wc(s, &wc);
	EXPECT_EQ(wc.wr_id, wr_id);
	if (wc.status != IBV_WC_SUCCESS)
		fail(__LINE__, "receive completion: %s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(wc.opcode, IBV_WC_RECV);
	EXPECT_EQ(wc.byte_len, len);
	EXPECT_EQ(wc.qp_num, s->qp->qp_num);
	EXPECT_EQ(wc.src_qp, PEER_QPN);
	EXPECT_EQ(wc.wc_flags, 0);
	EXPECT_EQ(wc.slid, G.lid);
}

/* A response frame of ours to the peer. */
static void expect_resp(const struct sv_wire_hdr *h, struct side *s, uint8_t op, uint32_t psn,
			uint32_t len)
{
	EXPECT_EQ(h->opcode, op);
	EXPECT_EQ(h->psn, psn);
	EXPECT_EQ(h->dst_qpn, PEER_QPN);
	EXPECT_EQ(h->src_qpn, s->qp->qp_num);
	EXPECT_EQ(h->len, len);
}

static void expect_ack(struct side *s, uint32_t psn)
{
	struct sv_wire_hdr h = take_frame(s->f, NULL);

	expect_resp(&h, s, SV_OP_ACK, psn, 0);
}

static void expect_nak(struct side *s, uint32_t psn, uint32_t syndrome)
{
	struct sv_wire_hdr h = take_frame(s->f, NULL);

	expect_resp(&h, s, SV_OP_NAK, psn, 0);
	EXPECT_EQ(h.imm, syndrome);
}

static void pattern(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
}

static void expect_guard(size_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (G.mem[off + i] != GUARD)
			fail(__LINE__, "MR byte %zu is 0x%02x, not untouched (0x%02x)", off + i,
			     G.mem[off + i], GUARD);
}

static void expect_bytes(size_t off, const uint8_t *want, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (G.mem[off + i] != want[i])
			fail(__LINE__, "MR byte %zu is 0x%02x, not 0x%02x", off + i, G.mem[off + i],
			     want[i]);
}

static void begin(const char *name)
{
	case_name = name;
	memset(G.mem, GUARD, MR_LEN);
}

static void pass(void)
{
	printf("ok - %s\n", case_name);
	fflush(stdout);
}

/* The receive machine of a responder's channel, read under its lock. */
static void expect_rx(struct side *s, enum sv_rx_state st, size_t got, size_t remain)
{
	struct sv_conn *c = s->f->c;

	sv_qlock_lock(&s->sqp->lock);
	if (c->qc->rx_state != st)
		fail(__LINE__, "receive machine in %s, not %s", sv_rx_state_name(c->qc->rx_state),
		     sv_rx_state_name(st));
	if (st == SV_RX_HDR)
		EXPECT_EQ(c->qc->rx_got, got);
	else
		EXPECT_EQ(c->qc->rx_remain, remain);
	sv_qp_unlock(s->sqp);
}

/* ---- 0: a channel with no descriptor ---- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void case_no_fd(void)
{
	int sentinel, before;
	struct fake *f;

	begin("0 fd -1 is harmless");
	sentinel = dup(2);
	CHECK(sentinel >= 0);
	before = count_fds();
	f = fake_new(false, 1);
	/* what a flush that cannot write, a pause and a resume do to it */
	sv_conn_want_out(f->c, true);
	CHECK(f->c->want_out);
	sv_conn_want_out(f->c, false);
	sv_conn_pause(f->c, true);
	CHECK(f->c->paused);
	sv_conn_pause(f->c, false);
	EXPECT_EQ(count_fds(), before);

	sv_engine_enter(G.node);              /* keeps it allocated while we look */
	sv_conn_close(f->c);
	CHECK(f->closed);                     /* the ops' close was called */
	CHECK(f->c->closed && f->c->dead);
	EXPECT_EQ(f->c->h.fd, -1);
	sv_conn_close(f->c);                  /* twice: nothing more */
	sv_engine_leave(G.node);
	quiesce();                            /* freed (sv_conn_reap) */
	EXPECT_EQ(count_fds(), before);
	CHECK(fcntl(sentinel, F_GETFD) >= 0);
	for (int fd = 0; fd <= 2; fd++)
		CHECK(fcntl(fd, F_GETFD) >= 0);
	close(sentinel);
	fake_free(f);
	pass();
}

/* ---- 1, 2: SEND into a posted receive ---- */

static void case_send(void)
{
	struct side s;
	uint8_t msg[300];
	const uint32_t psn = 100;
	unsigned wakeups;

	begin("1 SEND into a posted receive, 50 bytes per readv");
	responder(&s, psn, 50);
	post_recv(&s, 11, OFF_RECV, 4096);
	pattern(msg, sizeof(msg), 1);
	wakeups = deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn), msg, sizeof(msg));
	EXPECT_EQ(s.f->reads, (64 + sizeof(msg) + 49) / 50);   /* stopped and resumed */
	CHECK(wakeups >= 1);
	expect_recv_wc(&s, 11, sizeof(msg));
	expect_no_wc(&s);
	expect_bytes(OFF_RECV, msg, sizeof(msg));
	expect_guard(OFF_RECV + sizeof(msg), 4096 - sizeof(msg));
	expect_ack(&s, psn);
	expect_no_output(s.f);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_RTR);
	expect_rx(&s, SV_RX_HDR, 0, 0);

	/* A 192 KiB SEND, next PSN, in 10,000-byte reads: past the first
	 * read, the payload goes straight to the receive buffer (recv.c,
	 * rx_direct), in several reads and wake-ups. */
	{
		const uint32_t len = 192u << 10;
		uint8_t *big = malloc(len);

		CHECK(big);
		s.f->chunk = 10000;
		s.f->reads = 0;
		post_recv(&s, 12, OFF_RECV, 256u << 10);
		pattern(big, len, 7);
		wakeups = deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn + 1), big, len);
		EXPECT_EQ(s.f->reads, (64 + len + 9999) / 10000);
		CHECK(wakeups > 1);          /* 16 reads per wake-up (recv.c, SV_RX_READS) */
		expect_recv_wc(&s, 12, len);
		expect_bytes(OFF_RECV, big, len);
		expect_guard(OFF_RECV + len, (256u << 10) - len);
		expect_ack(&s, psn + 1);
		expect_no_output(s.f);
		free(big);
	}
	side_end(&s);
	pass();
}

static void case_send_bytewise(void)
{
	struct side s;
	uint8_t msg[100];
	const uint32_t psn = 0xfffffe;      /* near the PSN wrap */
	size_t total;
	unsigned before;

	begin("2 SEND into a posted receive, one byte per readv");
	responder(&s, psn, 1);
	post_recv(&s, 21, OFF_RECV, 4096);
	pattern(msg, sizeof(msg), 2);
	{
		struct fake staging = { .chunk = 1 };
		struct sv_wire_hdr h = hdr(SV_OP_SEND_IMM, s.qp->qp_num, PEER_QPN, psn);

		h.imm = 0x12345678;
		feed_frame(&staging, h, msg, sizeof(msg));
		total = staging.in_len;
		/* one byte at a time into the channel, a wake-up after each */
		for (size_t i = 0; i < total; i++) {
			before = s.f->reads;
			feed(s.f, staging.in + i, 1);
			drive(s.f);
			EXPECT_EQ(s.f->reads, before + 1);
			EXPECT_EQ(s.f->in_off, i + 1);
			if (i + 1 == total)
				break;
			/* nothing happens before the frame is complete */
			expect_no_output(s.f);
			expect_no_wc(&s);
			if (i + 1 < sizeof(struct sv_wire_hdr))
				expect_rx(&s, SV_RX_HDR, i + 1, 0);
			else
				expect_rx(&s, SV_RX_PAYLOAD, 0, total - (i + 1));
		}
		free(staging.in);
	}
	EXPECT_EQ(s.f->reads, total);
	{
		struct ibv_wc wc;

		expect_wc(&s, &wc);
		EXPECT_EQ(wc.wr_id, 21);
		EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
		EXPECT_EQ(wc.opcode, IBV_WC_RECV);
		EXPECT_EQ(wc.byte_len, sizeof(msg));
		EXPECT_EQ(wc.qp_num, s.qp->qp_num);
		EXPECT_EQ(wc.src_qp, PEER_QPN);
		EXPECT_EQ(wc.wc_flags, IBV_WC_WITH_IMM);
		EXPECT_EQ(wc.imm_data, 0x12345678);
	}
	expect_no_wc(&s);
	expect_bytes(OFF_RECV, msg, sizeof(msg));
	expect_guard(OFF_RECV + sizeof(msg), 4096 - sizeof(msg));
	expect_ack(&s, psn);
	expect_no_output(s.f);
	sv_qlock_lock(&s.sqp->lock);
	EXPECT_EQ(s.sqp->epsn, 0xffffff);
	sv_qp_unlock(s.sqp);
	side_end(&s);
	pass();
}

/* ---- 3: RNR ---- */

static void case_rnr(void)
{
	struct side s;
	uint8_t msg[100], other[40];
	const uint32_t psn = 300;
	struct sv_wire_hdr h;

	begin("3 SEND with no receive posted: RNR NAK");
	responder(&s, psn, 4096);
	pattern(msg, sizeof(msg), 3);
	deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn), msg, sizeof(msg));
	h = take_frame(s.f, NULL);
	expect_resp(&h, &s, SV_OP_NAK, psn, 0);
	EXPECT_EQ(h.imm, SV_NAK_RNR);
	EXPECT_EQ(h.data0, RNR_TIMER);        /* the requester waits that long */
	expect_no_output(s.f);
	expect_no_wc(&s);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_RTR);
	expect_guard(0, MR_LEN);

	/* After the NAK, until the NAKed PSN comes again, requests are dropped
	 * unanswered (go-back-N): the next PSN takes no receive. */
	post_recv(&s, 31, OFF_RECV, 4096);
	pattern(other, sizeof(other), 4);
	deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn + 1), other, sizeof(other));
	expect_no_output(s.f);
	expect_no_wc(&s);
	expect_guard(0, MR_LEN);

	/* The requester sends the NAKed PSN again: it completes. */
	feed_frame(s.f, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn), msg, sizeof(msg));
	drive(s.f);
	expect_recv_wc(&s, 31, sizeof(msg));
	expect_no_wc(&s);
	expect_bytes(OFF_RECV, msg, sizeof(msg));
	expect_ack(&s, psn);
	expect_no_output(s.f);
	side_end(&s);
	pass();
}

/* ---- 4: RDMA WRITE and READ ---- */

static struct sv_wire_hdr rdma_hdr(struct side *s, uint8_t op, uint32_t psn, uint32_t rkey,
				   uint32_t off)
{
	struct sv_wire_hdr h = hdr(op, s->qp->qp_num, PEER_QPN, psn);

	h.rkey = rkey;
	h.va = (uintptr_t)G.mem + off;
	return h;
}

static void case_rdma(void)
{
	struct side s;
	uint8_t data[256], src[512];
	const uint8_t *payload;
	struct sv_wire_hdr h;
	const uint32_t psn = 400;

	begin("4 RDMA WRITE and READ with the MR's rkey");
	responder(&s, psn, 4096);
	pattern(data, sizeof(data), 5);
	deliver(&s, rdma_hdr(&s, SV_OP_WRITE, psn, G.mr->rkey, OFF_WRITE), data, sizeof(data));
	expect_bytes(OFF_WRITE, data, sizeof(data));
	expect_guard(0, OFF_WRITE);
	expect_guard(OFF_WRITE + sizeof(data), MR_LEN - OFF_WRITE - sizeof(data));
	expect_ack(&s, psn);
	expect_no_output(s.f);
	expect_no_wc(&s);                      /* a WRITE takes no receive */

	pattern(src, sizeof(src), 6);
	memcpy(G.mem + OFF_READ, src, sizeof(src));
	h = rdma_hdr(&s, SV_OP_READ_REQ, psn + 1, G.mr->rkey, OFF_READ);
	h.rlen = sizeof(src);
	deliver(&s, h, NULL, 0);
	h = take_frame(s.f, &payload);
	expect_resp(&h, &s, SV_OP_READ_RESP, psn + 1, sizeof(src));
	CHECK(memcmp(payload, src, sizeof(src)) == 0);
	expect_no_output(s.f);
	expect_no_wc(&s);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_RTR);
	side_end(&s);
	pass();

	/* A wrong rkey (the MR's slot, another tag: mr.c): NAK, and the
	 * responder's QP goes to ERR (wire-format.md), its channel closed. */
	begin("4 RDMA WRITE with a wrong rkey");
	responder(&s, psn, 4096);
	deliver(&s, rdma_hdr(&s, SV_OP_WRITE, psn, G.mr->rkey ^ 0x55, OFF_WRITE), data,
		sizeof(data));
	expect_nak(&s, psn, SV_NAK_REM_ACCESS);
	expect_no_output(s.f);
	expect_guard(0, MR_LEN);
	expect_no_wc(&s);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_ERR);
	CHECK(s.f->closed);
	side_end(&s);
	pass();

	begin("4 RDMA READ with a wrong rkey");
	responder(&s, psn, 4096);
	memcpy(G.mem + OFF_READ, src, sizeof(src));
	h = rdma_hdr(&s, SV_OP_READ_REQ, psn, G.mr->rkey ^ 0x55, OFF_READ);
	h.rlen = sizeof(src);
	deliver(&s, h, NULL, 0);
	expect_nak(&s, psn, SV_NAK_REM_ACCESS);   /* and no READ_RESP */
	expect_no_output(s.f);
	expect_no_wc(&s);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_ERR);
	CHECK(s.f->closed);
	side_end(&s);
	pass();
}

/* ---- 5: the completer ---- */

static void post_send(struct side *s, uint64_t wr_id, enum ibv_wr_opcode op, uint32_t off,
		      uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)G.mem + off, .length = len, .lkey = G.mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK(ibv_post_send(s->qp, &wr, &bad) == 0);
}

/* A request frame of ours, with these header flags. */
static void expect_req(const struct sv_wire_hdr *h, struct side *s, uint8_t op, uint32_t psn,
		       uint32_t len, uint8_t flags)
{
	EXPECT_EQ(h->opcode, op);
	EXPECT_EQ(h->psn, psn);
	EXPECT_EQ(h->dst_qpn, PEER_QPN);
	EXPECT_EQ(h->src_qpn, s->qp->qp_num);
	EXPECT_EQ(h->len, len);
	EXPECT_EQ(h->flags, flags);
	EXPECT_EQ(h->ack_tmo, 0);            /* the QP's ack timeout */
}

static void expect_send_wc(struct side *s, uint64_t wr_id, enum ibv_wc_status st,
			   enum ibv_wc_opcode op, uint32_t len)
{
	struct ibv_wc wc;

	expect_wc(s, &wc);
	EXPECT_EQ(wc.wr_id, wr_id);
	if (wc.status != st)
		fail(__LINE__, "send completion of wr %llu: %s, not %s",
		     (unsigned long long)wr_id, ibv_wc_status_str(wc.status), ibv_wc_status_str(st));
	EXPECT_EQ(wc.qp_num, s->qp->qp_num);
	if (st == IBV_WC_SUCCESS) {
		EXPECT_EQ(wc.opcode, op);
		EXPECT_EQ(wc.byte_len, len);
	}
}

static void case_completer(void)
{
	struct side s;
	uint8_t msg[200], rd[128];
	const uint8_t *payload;
	struct sv_wire_hdr h;
	const uint32_t psn = 700;

	begin("5 completer: SEND, ACK; READ, READ_RESP; 2 SENDs, ACK; SEND, NAK REM_ACCESS");
	completer(&s, psn);

	/* SEND: the frame goes out from ibv_post_send itself */
	pattern(msg, sizeof(msg), 8);
	memcpy(G.mem + OFF_SEND, msg, sizeof(msg));
	post_send(&s, 51, IBV_WR_SEND, OFF_SEND, sizeof(msg), 0, 0);
	h = take_frame(s.f, &payload);
	expect_req(&h, &s, SV_OP_SEND, psn, sizeof(msg), 0);   /* its first: not LONE */
	CHECK(memcmp(payload, msg, sizeof(msg)) == 0);
	expect_no_output(s.f);
	expect_no_wc(&s);                     /* not before its ACK */
	deliver(&s, hdr(SV_OP_ACK, s.qp->qp_num, PEER_QPN, psn), NULL, 0);
	expect_send_wc(&s, 51, IBV_WC_SUCCESS, IBV_WC_SEND, sizeof(msg));
	expect_no_wc(&s);
	expect_no_output(s.f);

	/* RDMA READ: READ_REQ out; the READ_RESP's bytes land in our buffer */
	post_send(&s, 52, IBV_WR_RDMA_READ, OFF_RDDST, sizeof(rd), 0x123456789a0ull, 0x4242);
	h = take_frame(s.f, NULL);
	/* alone, after a request that was alone too: LONE */
	expect_req(&h, &s, SV_OP_READ_REQ, psn + 1, 0, SV_WF_LONE);
	EXPECT_EQ(h.rlen, sizeof(rd));
	EXPECT_EQ(h.va, 0x123456789a0ull);
	EXPECT_EQ(h.rkey, 0x4242);
	expect_no_output(s.f);
	expect_no_wc(&s);
	pattern(rd, sizeof(rd), 9);
	deliver(&s, hdr(SV_OP_READ_RESP, s.qp->qp_num, PEER_QPN, psn + 1), rd, sizeof(rd));
	expect_send_wc(&s, 52, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, sizeof(rd));
	expect_no_wc(&s);
	expect_bytes(OFF_RDDST, rd, sizeof(rd));
	expect_guard(OFF_RDDST + sizeof(rd), MR_LEN - OFF_RDDST - sizeof(rd));

	/* two at once: the first is still alone when it goes, the second is
	 * not; one ACK completes both */
	post_send(&s, 54, IBV_WR_SEND, OFF_SEND, sizeof(msg), 0, 0);
	post_send(&s, 55, IBV_WR_SEND, OFF_SEND, sizeof(msg), 0, 0);
	h = take_frame(s.f, &payload);
	expect_req(&h, &s, SV_OP_SEND, psn + 2, sizeof(msg), SV_WF_LONE);
	h = take_frame(s.f, &payload);
	expect_req(&h, &s, SV_OP_SEND, psn + 3, sizeof(msg), 0);
	expect_no_output(s.f);
	deliver(&s, hdr(SV_OP_ACK, s.qp->qp_num, PEER_QPN, psn + 3), NULL, 0);
	expect_send_wc(&s, 54, IBV_WC_SUCCESS, IBV_WC_SEND, sizeof(msg));
	expect_send_wc(&s, 55, IBV_WC_SUCCESS, IBV_WC_SEND, sizeof(msg));
	expect_no_wc(&s);

	/* SEND answered by a NAK REM_ACCESS: the WR fails, the QP goes to ERR.
	 * Alone, but its predecessor was not: not LONE. */
	post_send(&s, 53, IBV_WR_SEND, OFF_SEND, sizeof(msg), 0, 0);
	h = take_frame(s.f, &payload);
	expect_req(&h, &s, SV_OP_SEND, psn + 4, sizeof(msg), 0);
	expect_no_output(s.f);
	h = hdr(SV_OP_NAK, s.qp->qp_num, PEER_QPN, psn + 4);
	h.imm = SV_NAK_REM_ACCESS;
	deliver(&s, h, NULL, 0);
	expect_send_wc(&s, 53, IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, 0);
	expect_no_wc(&s);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_ERR);
	CHECK(s.f->closed);
	expect_no_output(s.f);
	side_end(&s);
	pass();
}

/* ---- 6: a stream of READs ---- */

#define RD_N   6
#define RD_LEN 16

static void expect_read_req(struct side *s, uint32_t psn, unsigned i)
{
	struct sv_wire_hdr h = take_frame(s->f, NULL);

	expect_req(&h, s, SV_OP_READ_REQ, psn, 0, 0);   /* none LONE: the first had no lone one before */
	EXPECT_EQ(h.rlen, RD_LEN);
	EXPECT_EQ(h.va, 0x5000ull + i * RD_LEN);
}

static void case_read_stream(void)
{
	uint8_t rd[RD_N][RD_LEN];
	const uint32_t psn = 900;
	struct side s;
	unsigned w0;

	begin("6 READs, 4 on the wire: two responses in one read free two, in one write");
	completer(&s, psn);                  /* max_rd_atomic 4 */
	for (unsigned i = 0; i < RD_N; i++)
		post_send(&s, 80 + i, IBV_WR_RDMA_READ, OFF_RDDST + i * RD_LEN, RD_LEN,
			  0x5000ull + i * RD_LEN, 0x4242);
	for (unsigned i = 0; i < 4; i++)
		expect_read_req(&s, psn + i, i);
	expect_no_output(s.f);               /* the last two wait for room */

	w0 = s.f->writes;
	for (unsigned i = 0; i < 2; i++) {
		pattern(rd[i], RD_LEN, 20 + i);
		feed_frame(s.f, hdr(SV_OP_READ_RESP, s.qp->qp_num, PEER_QPN, psn + i), rd[i],
			   RD_LEN);
	}
	drive(s.f);
	EXPECT_EQ(s.f->in_off, s.f->in_len);
	EXPECT_EQ(s.f->writes - w0, 1);      /* not one write per response */
	expect_read_req(&s, psn + 4, 4);
	expect_read_req(&s, psn + 5, 5);
	expect_no_output(s.f);

	for (unsigned i = 2; i < RD_N; i++) {
		pattern(rd[i], RD_LEN, 20 + i);
		deliver(&s, hdr(SV_OP_READ_RESP, s.qp->qp_num, PEER_QPN, psn + i), rd[i], RD_LEN);
	}
	for (unsigned i = 0; i < RD_N; i++) {
		expect_send_wc(&s, 80 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, RD_LEN);
		expect_bytes(OFF_RDDST + i * RD_LEN, rd[i], RD_LEN);
	}
	expect_no_wc(&s);
	expect_guard(OFF_RDDST + RD_N * RD_LEN, MR_LEN - OFF_RDDST - RD_N * RD_LEN);
	expect_no_output(s.f);
	side_end(&s);
	pass();
}

/* ---- 7: how many READs stand ---- */

/* Post `n` READs of `len` bytes (all into one buffer), then take the
 * `sent` requests that go; no more may. */
static void post_reads(struct side *s, uint32_t psn, unsigned n, uint32_t len, unsigned sent)
{
	struct ibv_wc wc;

	for (unsigned i = 0; i < n; i++)
		post_send(s, 300 + i, IBV_WR_RDMA_READ, OFF_RDDST, len, 0x5000ull + i * len, 0x4242);
	CHECK(ibv_poll_cq(s->cq, 1, &wc) == 0);      /* none answered yet */
	for (unsigned i = 0; i < sent; i++) {
		struct sv_wire_hdr h = take_frame(s->f, NULL);

		EXPECT_EQ(h.opcode, SV_OP_READ_REQ);
		EXPECT_EQ(h.psn, psn + i);
		EXPECT_EQ(h.rlen, len);
	}
	expect_no_output(s->f);
}

static void case_read_window(void)
{
	struct ibv_device_attr da;
	struct side s;

	begin("7 READs in flight: all max_rd_atomic if small, 16 if they ask for 1 MiB");
	CHECK(ibv_query_device(G.ctx, &da) == 0);
	CHECK(da.max_qp_init_rd_atom > 16 && da.max_qp_init_rd_atom < 32);
	completer_rd(&s, 1000, (uint8_t)da.max_qp_init_rd_atom);
	post_reads(&s, 1000, (unsigned)da.max_qp_init_rd_atom + 1, 64, (unsigned)da.max_qp_init_rd_atom);
	side_end(&s);

	completer_rd(&s, 2000, (uint8_t)da.max_qp_init_rd_atom);
	post_reads(&s, 2000, 20, 64u << 10, 16);      /* 16 of 64 KiB: 1 MiB asked for */
	side_end(&s);
	pass();
}

/* ---- 8: a large payload read in large pieces ---- */

/* Feed `n` more bytes of `msg` (from *at), drive, and expect the engine's
 * last ask of the channel to be `lowat`. */
static void feed_more(struct side *s, const uint8_t *msg, size_t *at, size_t n, uint32_t lowat)
{
	feed(s->f, msg + *at, n);
	*at += n;
	drive(s->f);
	EXPECT_EQ(s->f->in_off, s->f->in_len);
	EXPECT_EQ(s->f->lowat, lowat);
}

/* A TCP connection on loopback, its connecting end asking for segments of
 * `mss` bytes (0: loopback's own): *out and the accepted *in. */
static void tcp_pair(int mss, int *out, int *in)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	*out = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(l >= 0 && *out >= 0);
	CHECK(bind(l, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(l, 1) == 0);
	CHECK(getsockname(l, (struct sockaddr *)&a, &alen) == 0);
	if (mss)
		CHECK(setsockopt(*out, IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof(mss)) == 0);
	CHECK(connect(*out, (struct sockaddr *)&a, sizeof(a)) == 0);
	*in = accept(l, NULL, NULL);
	CHECK(*in >= 0);
	close(l);
}

/* A channel made on `fd` (never started) goes, and its descriptor with it. */
static void tcp_conn_free(struct sv_conn *c)
{
	sv_engine_enter(G.node);
	sv_conn_close(c);
	sv_engine_leave(G.node);
	quiesce();
}

/* A TCP channel's op on a real socket: SO_RCVLOWAT as asked, capped. */
static void tcp_lowat(void)
{
	int fd, in, v = 0, buf = 0;
	socklen_t len = sizeof(v);
	struct sv_conn *c;

	tcp_pair(0, &fd, &in);
	c = sv_conn_new(G.node, fd, true, true, &sv_tcp_ops);
	CHECK(c);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, &len) == 0 && buf >= 64);
	sv_chan_rx_lowat(c, 1000);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, &len) == 0);
	EXPECT_EQ(v, buf / 8 < 1000 ? buf / 8 : 1000);
	sv_chan_rx_lowat(c, 64u << 20);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, &len) == 0);
	EXPECT_EQ(v, buf / 8);
	sv_chan_rx_lowat(c, 1);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, &len) == 0);
	EXPECT_EQ(v, 1);
	tcp_conn_free(c);
	close(in);
}

/* An accepted TCP channel whose peer sent `mss` (0: loopback's own): are
 * its reads said to make TCP acknowledge (SV_CAP_READ_ACKS)? */
static bool tcp_read_acks(int mss)
{
	int fd, in;
	struct sv_conn *c;
	bool acks;

	tcp_pair(mss, &fd, &in);
	c = sv_conn_new(G.node, in, false, true, &sv_tcp_ops);
	CHECK(c);
	sv_tcp_accepted(c);
	acks = c->caps & SV_CAP_READ_ACKS;
	tcp_conn_free(c);
	close(fd);
	return acks;
}

/* A SEND of `len` bytes, its receive (`wr_id`) posted first. */
static struct sv_wire_hdr bulk_send(struct side *s, uint32_t psn, uint64_t wr_id, uint32_t len)
{
	struct sv_wire_hdr b = hdr(SV_OP_SEND, s->qp->qp_num, PEER_QPN, psn);

	b.rlen = len;                         /* the batch counts request bytes by it */
	post_recv(s, wr_id, OFF_RECV, len);
	return b;
}

static void case_lowat(void)
{
	const uint32_t psn = 500, len = 400u << 10;
	uint8_t small[300], *big = malloc(len);
	struct sv_wire_hdr h;
	struct side s;
	size_t at = 0;

	begin("8 a large payload is read in large pieces");
	CHECK(big);
	responder(&s, psn, 1u << 20);
	post_recv(&s, 1, OFF_RECV, 4096);
	pattern(small, sizeof(small), 3);
	deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn), small, sizeof(small));
	expect_recv_wc(&s, 1, sizeof(small));
	EXPECT_EQ(s.f->lowat_calls, 0);       /* a small frame never asks */
	CHECK(!s.f->c->qc->rx_bulk);          /* nor makes its channel bulk (drive.c) */

	post_recv(&s, 2, OFF_RECV, len);
	pattern(big, len, 9);
	h = hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn + 1);
	h.len = len;
	sv_wire_encode(&h);
	feed(s.f, &h, sizeof(h));
	feed_more(&s, big, &at, 100u << 10, 256u << 10);   /* 300 KiB to come */
	expect_rx(&s, SV_RX_PAYLOAD, 0, len - at);
	feed_more(&s, big, &at, 100u << 10, 200u << 10);   /* 200 KiB: all of it */
	feed_more(&s, big, &at, 150u << 10, 1);            /* 50 KiB: any byte */
	feed_more(&s, big, &at, len - at - 1, 1);
	expect_no_wc(&s);
	feed_more(&s, big, &at, 1, 1);
	expect_recv_wc(&s, 2, len);
	CHECK(s.f->c->qc->rx_bulk);           /* pollers read it in batches now */
	expect_bytes(OFF_RECV, big, len);
	expect_ack(&s, psn);
	expect_ack(&s, psn + 1);
	expect_no_output(s.f);
	expect_rx(&s, SV_RX_HDR, 0, 0);
	post_recv(&s, 3, OFF_RECV, 4096);
	deliver(&s, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, psn + 2), small, sizeof(small));
	expect_recv_wc(&s, 3, sizeof(small));
	CHECK(!s.f->c->qc->rx_bulk);          /* a small request ends it */

	/* A poller (this thread, not the progress thread) that takes 1 MiB of
	 * requests in one batch stamps its CQ as polled (drive.c,
	 * sv_engine_still_polling): the channel is the CQ's, as a ring
	 * channel registered with it would be. */
	{
		struct sv_cq *cq = to_scq(s.cq);

		__atomic_store_n(&s.f->c->qc->drive_cq, cq, __ATOMIC_RELEASE);
		__atomic_store_n(&cq->last_poll_ns, 0, __ATOMIC_RELAXED);
		deliver(&s, bulk_send(&s, psn + 3, 4, len), big, len);   /* a batch of its own */
		expect_recv_wc(&s, 4, len);
		EXPECT_EQ(__atomic_load_n(&cq->last_poll_ns, __ATOMIC_RELAXED), 0);
		for (uint32_t i = 0; i < 3; i++)                        /* one batch */
			feed_frame(s.f, bulk_send(&s, psn + 4 + i, 5 + i, len), big, len);
		drive(s.f);
		EXPECT_EQ(s.f->in_off, s.f->in_len);
		for (uint32_t i = 0; i < 3; i++)
			expect_recv_wc(&s, 5 + i, len);
		CHECK(__atomic_load_n(&cq->last_poll_ns, __ATOMIC_RELAXED) != 0);
		__atomic_store_n(&s.f->c->qc->drive_cq, NULL, __ATOMIC_RELEASE);
	}
	side_end(&s);
	free(big);

	tcp_lowat();
	CHECK(tcp_read_acks(1400));           /* an Ethernet's segments */
	CHECK(!tcp_read_acks(0));             /* loopback's 64 KiB ones */
	pass();
}

/* ---- 9: a bad magic ---- */

static void feed_bad_magic(struct fake *f, struct sv_wire_hdr h)
{
	h.len = 0;
	sv_wire_encode(&h);
	h.magic = htole16(0x4141);
	feed(f, &h, sizeof(h));
}

static void case_bad_magic(void)
{
	struct side s;
	struct fake *f;
	uint8_t msg[64];

	/* An accepted channel (no QP yet) whose first frame, a HELLO, has a
	 * bad magic: closed, nothing else. */
	begin("9 bad magic on an accepted channel");
	responder(&s, 600, 4096);
	post_recv(&s, 61, OFF_RECV, 4096);
	f = fake_new(false, 4096);
	feed_bad_magic(f, hdr(SV_OP_HELLO, s.qp->qp_num, PEER_QPN, 0));
	drive(f);
	CHECK(f->closed);
	expect_no_output(f);
	fake_free(f);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_RTR);
	expect_no_wc(&s);
	pass();

	/* A candidate of the QP (its HELLO named it, its peer not proven
	 * yet: verify.c): closed, the QP keeps its state and its channel. */
	case_name = "9 bad magic on a candidate channel";
	f = fake_new(false, 4096);
	sv_qlock_lock(&s.sqp->lock);
	f->c->qc->qp = s.sqp;
	f->c->qc->peer_state = SV_PEER_CLAIMED;
	sv_qp_unlock(s.sqp);
	feed_bad_magic(f, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, 600));
	drive(f);
	CHECK(f->closed);
	expect_no_output(f);
	fake_free(f);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_RTR);
	sv_qlock_lock(&s.sqp->lock);
	CHECK(s.sqp->in == s.f->c);
	EXPECT_EQ(s.sqp->epsn, 600);
	sv_qp_unlock(s.sqp);
	expect_no_wc(&s);
	/* ... and its verified channel still works */
	pattern(msg, sizeof(msg), 10);
	feed_frame(s.f, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, 600), msg, sizeof(msg));
	drive(s.f);
	expect_recv_wc(&s, 61, sizeof(msg));
	expect_bytes(OFF_RECV, msg, sizeof(msg));
	expect_ack(&s, 600);
	expect_no_output(s.f);
	pass();

	/* On the QP's verified channel a malformed frame is the peer breaking
	 * the protocol: the channel is closed and the QP goes to ERR, its
	 * receives flushed (docs/wire-format.md, Validation). */
	case_name = "9 bad magic on the verified channel";
	post_recv(&s, 62, OFF_RECV, 4096);
	feed_bad_magic(s.f, hdr(SV_OP_SEND, s.qp->qp_num, PEER_QPN, 601));
	drive(s.f);
	CHECK(s.f->closed);
	expect_no_output(s.f);
	sv_qlock_lock(&s.sqp->lock);
	CHECK(!s.sqp->in);
	sv_qp_unlock(s.sqp);
	EXPECT_EQ(qp_state(s.qp), IBV_QPS_ERR);
	{
		struct ibv_wc wc;

		expect_wc(&s, &wc);
		EXPECT_EQ(wc.wr_id, 62);
		EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	}
	expect_no_wc(&s);
	side_end(&s);
	pass();
}

/* ---- 10: the hot socket out of its epoll sets ---- */

/* Is `fd` in epoll set `epfd`?  (Read from fdinfo: asking epoll_ctl would
 * change the entry.) */
static bool in_set(int epfd, int fd)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;
	int tfd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	f = fopen(path, "r");
	CHECK(f);
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd;
	fclose(f);
	return found;
}

/* Under the CQ's drive_lock (the progress thread's tick may end a spin
 * at any time): the socket is out of the CQ's set exactly while the CQ's
 * spinning poller reads it on every poll, and out of the progress
 * thread's while that poller takes it and some CQ's polls read it (this
 * one's, or a second CQ's that is out too).  Returns whether it is out
 * of the CQ's set. */
static bool hot_is_out(struct sv_cq *cq, struct sv_conn *c)
{
	bool out;

	pthread_mutex_lock(&cq->drive_lock);
	out = cq->hot_out;
	EXPECT_EQ(in_set(cq->drive_fd, c->h.fd), !out);
	EXPECT_EQ(in_set(G.node->epfd, c->h.fd), !(cq->spinning && c->spin_reads));
	if (out) {
		CHECK(cq->spinning && !cq->sleepers && cq->hot == c);
		CHECK(c->spin_reads >= 1);
	}
	pthread_mutex_unlock(&cq->drive_lock);
	return out;
}

/* Spin and poll the CQ `polls` times, its hot channel `c`, or until that
 * is out of the sets.  (256 polls of one spin make it steady; on a busy
 * machine the progress thread's tick may end a spin between two polls,
 * which begins the count again.)  Returns whether it is out. */
static bool poll_hot(struct sv_cq *cq, struct sv_conn *c, int polls)
{
	for (int i = 0; i < polls; i++) {
		sv_engine_spin_start(G.node, cq);
		pthread_mutex_lock(&cq->drive_lock);
		if (cq->spinning)
			__atomic_store_n(&cq->hot, c, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&cq->drive_lock);
		sv_engine_drive(G.node, cq);
		if (hot_is_out(cq, c))
			return true;
	}
	return false;
}

static bool poll_until_out(struct sv_cq *cq, struct sv_conn *c)
{
	return poll_hot(cq, c, 1000000);
}

static void case_hot_out(void)
{
	struct ibv_cq *ibcq, *ibcq2;
	struct sv_cq *cq, *cq2;
	struct sv_conn *c;
	int fd, in;

	begin("10 the hot socket out of its epoll sets");
	ibcq = ibv_create_cq(G.ctx, 16, NULL, NULL, 0);
	CHECK(ibcq);
	cq = to_scq(ibcq);
	/* an inbound TCP channel of no QP (pollers skip it), started (the
	 * progress thread watches it) and the CQ's, in a steady ping-pong */
	tcp_pair(0, &fd, &in);
	c = sv_conn_new(G.node, in, false, true, &sv_tcp_ops);
	CHECK(c && sv_conn_start(c) == 0);
	sv_engine_drive_register(c, cq);
	__atomic_store_n(&c->qc->ack_streak, SV_ACK_STREAK, __ATOMIC_RELAXED);
	CHECK(!poll_hot(cq, c, 200));         /* not steady yet */

	CHECK(poll_until_out(cq, c));         /* steady: out of both sets */
	sv_engine_spin_end(G.node, cq);       /* a poll found completions */
	CHECK(!hot_is_out(cq, c));
	EXPECT_EQ(c->spin_reads, 0);
	CHECK(!poll_hot(cq, c, 200));         /* a new spin counts again */

	CHECK(poll_until_out(cq, c));
	__atomic_store_n(&c->qc->ack_streak, 0, __ATOMIC_RELAXED);
	sv_engine_drive(G.node, cq);          /* no longer one message at a time */
	CHECK(!hot_is_out(cq, c));
	__atomic_store_n(&c->qc->ack_streak, SV_ACK_STREAK, __ATOMIC_RELAXED);

	CHECK(poll_until_out(cq, c));
	CHECK(sv_engine_sleep_take(cq) == cq->drive_fd);   /* a sleeper waits on the set */
	CHECK(!hot_is_out(cq, c));
	sv_engine_sleep_give(cq);

	/* its second CQ (an inbound channel's send CQ), polled but never
	 * spinning, as in a ping-pong: out of its set too, and its polls read
	 * it, until a thread sleeps for it */
	ibcq2 = ibv_create_cq(G.ctx, 16, NULL, NULL, 0);
	CHECK(ibcq2);
	cq2 = to_scq(ibcq2);
	sv_engine_drive_register_also(c, cq2);
	CHECK(c->qc->drive_cq2 == cq2);
	CHECK(poll_until_out(cq, c));
	CHECK(!in_set(cq2->drive_fd, c->h.fd) && cq2->hot_out && cq2->hot == c);
	pthread_mutex_lock(&cq->drive_lock);  /* (unless a tick ended the spin) */
	if (cq->hot_out)
		EXPECT_EQ(c->spin_reads, 2);
	pthread_mutex_unlock(&cq->drive_lock);
	sv_engine_spin_end(G.node, cq);
	CHECK(!hot_is_out(cq, c));
	CHECK(!in_set(cq2->drive_fd, c->h.fd));
	EXPECT_EQ(c->spin_reads, 1);
	sv_engine_drive(G.node, cq2);         /* a poll: it reads it, not epoll */
	CHECK(!cq2->spinning && cq2->hot_out);
	CHECK(sv_engine_sleep_take(cq2) == cq2->drive_fd);
	CHECK(in_set(cq2->drive_fd, c->h.fd) && !cq2->hot_out);
	EXPECT_EQ(c->spin_reads, 0);
	sv_engine_sleep_give(cq2);

	CHECK(poll_until_out(cq, c));
	sv_engine_drive_forget(c);            /* still counted while out */
	EXPECT_EQ(__atomic_load_n(&cq->drive_socks, __ATOMIC_RELAXED), 0);
	EXPECT_EQ(__atomic_load_n(&cq2->drive_socks, __ATOMIC_RELAXED), 0);
	CHECK(!in_set(cq->drive_fd, c->h.fd) && !in_set(cq2->drive_fd, c->h.fd));
	sv_engine_spin_end(G.node, cq);
	tcp_conn_free(c);
	close(fd);
	CHECK(ibv_destroy_cq(ibcq) == 0);
	CHECK(ibv_destroy_cq(ibcq2) == 0);
	pass();
}

/* ---- 11: a peer that turned our outbound channel ---- */

/* The lesser QP of a steady TCP ping-pong sends its requests on its
 * inbound channel (req.c, turn_wanted), so ours come in on our outbound
 * one; the inbound one is quiet then, or a spinning poller, which takes a
 * CQ's channels all or none, would never take them (drive.c, spin_takes). */
static void case_turned(void)
{
	const uint32_t psn = 600;
	uint8_t data[64];
	struct fake *out;
	struct sv_wire_hdr h;
	struct side s;

	begin("11 a request on the outbound channel (the peer turned it) quiets the inbound one");
	responder(&s, psn, 4096);
	out = fake_new(true, 4096);
	sv_qlock_lock(&s.sqp->lock);
	s.sqp->out = out->c;
	out->c->qc->qp = s.sqp;
	out->c->qc->peer_state = SV_PEER_VERIFIED;
	out->c->qc->turn_ok = true;              /* as verify.c has it after SV_WF_TURN */
	sv_qp_unlock(s.sqp);
	pattern(data, sizeof(data), 11);

	deliver(&s, rdma_hdr(&s, SV_OP_WRITE, psn, G.mr->rkey, OFF_WRITE), data, sizeof(data));
	expect_ack(&s, psn);
	CHECK(s.f->c->qc->rx_requested);

	deliver_on(out, rdma_hdr(&s, SV_OP_WRITE, psn + 1, G.mr->rkey, OFF_WRITE), data,
		   sizeof(data));
	h = take_frame(out, NULL);               /* answered where it came from */
	expect_resp(&h, &s, SV_OP_ACK, psn + 1, 0);
	CHECK(!s.f->c->qc->rx_requested);

	/* it turns back: requests on the inbound channel again */
	deliver(&s, rdma_hdr(&s, SV_OP_WRITE, psn + 2, G.mr->rkey, OFF_WRITE), data, sizeof(data));
	expect_ack(&s, psn + 2);
	CHECK(s.f->c->qc->rx_requested);
	expect_bytes(OFF_WRITE, data, sizeof(data));
	expect_no_output(s.f);
	expect_no_output(out);
	expect_no_wc(&s);
	side_end(&s);
	fake_free(out);
	pass();
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n;

	signal(SIGALRM, on_alarm);
	alarm(WATCHDOG_S);
	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("SOFTVERBS_BATCH", "0", 1);   /* see park(): (d) */

	list = ibv_get_device_list(&n);
	CHECK(list && n >= 1);
	G.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	CHECK(G.ctx);
	G.node = to_sctx(G.ctx)->node;
	CHECK(ibv_query_port(G.ctx, 1, &pa) == 0);
	G.lid = pa.lid;
	G.pd = ibv_alloc_pd(G.ctx);
	CHECK(G.pd);
	G.mem = mmap(NULL, MR_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(G.mem != MAP_FAILED);
	G.mr = ibv_reg_mr(G.pd, G.mem, MR_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ);
	CHECK(G.mr);

	case_no_fd();
	case_send();
	case_send_bytewise();
	case_rnr();
	case_rdma();
	case_completer();
	case_read_stream();
	case_read_window();
	case_lowat();
	case_bad_magic();
	case_hot_out();
	case_turned();

	case_name = "teardown";
	CHECK(ibv_dereg_mr(G.mr) == 0);
	CHECK(ibv_dealloc_pd(G.pd) == 0);
	CHECK(ibv_close_device(G.ctx) == 0);
	munmap(G.mem, MR_LEN);
	printf("unit_engine_chan: all cases passed\n");
	return 0;
}
