/*
 * libFuzzer harness for softverbs' receive path.  Built twice
 * (tests/fuzz/CMakeLists.txt), with the library's sources compiled in:
 *
 *   fuzz_stream (FZ_MODE=FZ_STREAM): the input is the byte stream a peer sends on a
 *     QP's inbound channel.  One end of a socketpair becomes a channel
 *     (sv_conn_new, as for an accepted connection, but not handed to the
 *     progress thread) that only this thread drives (sv_engine_on_conn, and
 *     ibv_poll_cq's application-driven progress); the input is written to the other end in chunks of varying
 *     size, so that the receive machine stops and resumes at every point of
 *     a frame.  Responses (ACK, NAK, READ_RESP ...) are read and dropped.
 *     The first frame should be a HELLO naming the RC QP (dst_qpn
 *     FZ_QPN_RC) or the UC QP (FZ_QPN_UC), from FZ_PEER_QPN.  The input's
 *     first byte chooses descriptors that travel with that HELLO
 *     (fuzz.h, FZ_FDS_*): with a real ring memfd and our segment the
 *     channel moves to the ring, and the harness, as the ring's other end,
 *     writes the rest of the input there.
 *   fuzz_stranger (FZ_MODE=FZ_STRANGER): the same, but the peer is a
 *     stranger (not a same-user unix socket), so its HELLO only makes the
 *     channel a candidate (engine/verify.c).  The QPs' outbound channels
 *     reach this harness (SOFTVERBS_TRANSPORT=tcp, as fuzz_resp), which
 *     reads their questions and never answers, so no claim is ever proven.
 *     The QPs are set up once; after each input nothing may have changed:
 *     no byte of any MR, no QP's state, receive queue, expected PSN or
 *     bound channels, no completion, no descriptor left open.
 *   fuzz_dgram (FZ_MODE=FZ_DGRAM): the input is one byte that chooses the
 *     receive WQE the datagram meets, then one UDP datagram, sent to the UD
 *     QP's port group as another UD QP would: from a socket on the device
 *     address, whose port and address the tokens FZ_PEER_QPN (src_qpn) and
 *     0 (data1) stand for, so that the datagram passes the source check.
 *   fuzz_resp (FZ_MODE=FZ_RESP): the input is what the responder sends back
 *     on an RC QP's outbound channel (HELLO_ACK, then ACK, NAK, READ_RESP,
 *     ATOMIC_RESP ...) while six requests of every kind are in flight.  The
 *     harness is the peer: the QP connects to its TCP listener by itself
 *     (SOFTVERBS_TRANSPORT=tcp), sends its HELLO, and then the harness takes
 *     the channel over from the progress thread and drives it as above.
 *
 * Before each input the QPs are reset and brought back to RTR with fresh
 * receive WQEs, and the memory regions get their known contents, so an input
 * does the same thing each time it runs.  After each input the harness
 * checks that nothing outside MR 1 changed: the guard bytes around and
 * between the regions, the remote-read-only MR 2 and MR 3 of another PD.
 * The guard bytes are also poisoned for ASan, so the library touching them
 * (read or write) is reported where it happens, and the mapping is
 * surrounded by inaccessible pages.  fuzz.h explains the tokens an input
 * uses for QP numbers, rkeys and addresses.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <sanitizer/asan_interface.h>

#include "engine/engine.h"
#include "transport/node.h"
#include "transport/transport.h"
#include "verbs/sv.h"
#include "wire/proto.h"

#include "fuzz.h"

/* FZ_MODE: which receive path this build feeds */
#define FZ_STREAM 0             /* fuzz_stream: the responder's inbound channel */
#define FZ_DGRAM  1             /* fuzz_dgram: UD datagrams */
#define FZ_RESP   2             /* fuzz_resp: the completer's outbound channel */
#define FZ_STRANGER 3           /* fuzz_stranger: an inbound channel whose peer is never proven */
#ifndef FZ_MODE
#define FZ_MODE FZ_STREAM
#endif

#define FZ_GAP        256u      /* guard bytes before, between and after the MRs */
#define FZ_PAGE       4096u
#define FZ_GUARD_BYTE 0xA5
#define FZ_MR2_BYTE   0x5A
#define FZ_MR3_BYTE   0x3C
#define FZ_MAX_INPUT  (256u * 1024)

static struct {
	struct ibv_context *ctx;
	struct sv_node *node;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	struct ibv_qp *rc, *uc, *ud;
	struct ibv_mr *mr[4];          /* 1..3 */
	uint8_t *map;                  /* PROT_NONE page, body, PROT_NONE page */
	size_t map_len;
	uint8_t *body;
	size_t body_len;
	uint8_t *ref;                  /* what body must hold outside MR 1 */
	uint8_t *mr_addr[4];
	size_t mr_len[4];
	uint16_t lid;
	uint32_t peer_qpn;             /* dest_qp_num of the RC/UC QPs */
	int listen_fd;                 /* completer and stranger harnesses: we are the peer */
	int peer_fd[2];                /* stranger: the RC and UC QPs' outbound channels to us */
	int selftest;                  /* SOFTVERBS_FUZZ_SELFTEST */
	bool verbose;
	int udp_fd;                    /* datagram harness: our sending socket */
	uint32_t udp_qpn;              /* ... the QPN its port names (slot 1) */
	uint8_t buf[FZ_MAX_INPUT];
} F;

#define DIE(...) do { fprintf(stderr, "fuzz_recv: " __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

/* ---- memory: regions and guards ---- */

static void poison_guards(bool on)
{
	size_t off = 0;

	for (int n = 1; n <= 3; n++) {
		size_t gap = (size_t)(F.mr_addr[n] - F.body) - off;

		if (on)
			ASAN_POISON_MEMORY_REGION(F.body + off, gap);
		else
			ASAN_UNPOISON_MEMORY_REGION(F.body + off, gap);
		off = (size_t)(F.mr_addr[n] - F.body) + F.mr_len[n];
	}
	if (on)
		ASAN_POISON_MEMORY_REGION(F.body + off, F.body_len - off);
	else
		ASAN_UNPOISON_MEMORY_REGION(F.body + off, F.body_len - off);
}

static bool in_mr(size_t off, int *which)
{
	for (int n = 1; n <= 3; n++) {
		size_t s = (size_t)(F.mr_addr[n] - F.body);

		if (off >= s && off < s + F.mr_len[n]) {
			*which = n;
			return true;
		}
	}
	*which = 0;
	return false;
}

/* The memory as each input finds it: guard bytes, MR 1's pattern, MRs 2
 * and 3 with theirs. */
static void make_reference(void)
{
	F.ref = malloc(F.body_len);
	if (!F.ref)
		DIE("out of memory");
	memset(F.ref, FZ_GUARD_BYTE, F.body_len);
	for (size_t i = 0; i < F.mr_len[1]; i++)
		F.ref[(F.mr_addr[1] - F.body) + i] = (uint8_t)(i * 7 + 1);
	memset(F.ref + (F.mr_addr[2] - F.body), FZ_MR2_BYTE, F.mr_len[2]);
	memset(F.ref + (F.mr_addr[3] - F.body), FZ_MR3_BYTE, F.mr_len[3]);
}

static void fill_memory(void)
{
	poison_guards(false);
	memcpy(F.body, F.ref, F.body_len);
	poison_guards(true);
}

/* The invariant: only MR 1 may have changed. */
static void check_memory(void)
{
	size_t mr1 = (size_t)(F.mr_addr[1] - F.body), end1 = mr1 + F.mr_len[1];

	poison_guards(false);
	if (memcmp(F.body, F.ref, mr1) || memcmp(F.body + end1, F.ref + end1, F.body_len - end1)) {
		for (size_t i = 0; i < F.body_len; i++) {
			int n;

			if ((in_mr(i, &n) && n == 1) || F.body[i] == F.ref[i])
				continue;
			DIE("memory outside the writable region changed: byte %zu %s is 0x%02x, not 0x%02x",
			    i, n ? (n == 2 ? "(MR 2, remote read only)" : "(MR 3, other PD)") : "(guard)",
			    F.body[i], F.ref[i]);
		}
	}
	poison_guards(true);
}

static void setup_memory(void)
{
	size_t off = FZ_GAP;

	F.body_len = FZ_GAP + FZ_MR1_LEN + FZ_GAP + FZ_MR2_LEN + FZ_GAP + FZ_MR3_LEN + FZ_GAP;
	F.body_len = (F.body_len + FZ_PAGE - 1) & ~(size_t)(FZ_PAGE - 1);
	F.map_len = F.body_len + 2 * FZ_PAGE;
	F.map = mmap(NULL, F.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (F.map == MAP_FAILED)
		DIE("mmap: %s", strerror(errno));
	F.body = F.map + FZ_PAGE;
	if (mprotect(F.body, F.body_len, PROT_READ | PROT_WRITE))
		DIE("mprotect: %s", strerror(errno));
	F.mr_addr[1] = F.body + off;
	F.mr_len[1] = FZ_MR1_LEN;
	off += FZ_MR1_LEN + FZ_GAP;
	F.mr_addr[2] = F.body + off;
	F.mr_len[2] = FZ_MR2_LEN;
	off += FZ_MR2_LEN + FZ_GAP;
	F.mr_addr[3] = F.body + off;
	F.mr_len[3] = FZ_MR3_LEN;
	make_reference();
	fill_memory();
}

/* ---- verbs objects ---- */

static struct ibv_qp *make_qp(enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = F.cq, .recv_cq = F.cq, .qp_type = type,
		.cap = { .max_send_wr = 8, .max_recv_wr = 16, .max_send_sge = 4, .max_recv_sge = 4 },
	};
	struct ibv_qp *qp = ibv_create_qp(F.pd, &ia);

	if (!qp)
		DIE("ibv_create_qp(%d): %s", type, strerror(errno));
	return qp;
}

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	int err = ibv_modify_qp(qp, a, mask);

	if (err)
		DIE("ibv_modify_qp(%s) of QP %u: %s", what, qp->qp_num, strerror(err));
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, const struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = (struct ibv_sge *)sge, .num_sge = n };
	struct ibv_recv_wr *bad;
	int err = ibv_post_recv(qp, &wr, &bad);

	if (err)
		DIE("ibv_post_recv: %s", strerror(err));
}

static struct ibv_sge sge1(size_t off, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)F.mr_addr[1] + off, .length = len,
				 .lkey = F.mr[1]->lkey };
}

/* Receive WQEs of several shapes: small, scattered (for UD with the GRH
 * area split between two SGEs), the whole region, none at all; `first`
 * rotates the list (the datagram harness takes it from the input, since a
 * datagram only ever reaches the first receive WQE). */
#define FZ_NRECV 6

static void post_recvs(struct ibv_qp *qp, bool ud, unsigned first)
{
	uint32_t g = ud ? SV_UD_GRH_LEN : 0;

	for (unsigned k = 0; k < FZ_NRECV; k++) {
		unsigned i = (first + k) % FZ_NRECV;
		struct ibv_sge s[3];
		int n = 1;

		switch (i) {
		case 0:
			s[0] = sge1(0, g + 64);
			break;
		case 1:
			s[0] = sge1(1024, ud ? 24 : 16);
			s[1] = sge1(4096, 100);
			s[2] = sge1(8192, 4000);
			n = 3;
			break;
		case 2:
			s[0] = sge1(0, (uint32_t)F.mr_len[1]);
			break;
		case 3:
			s[0] = sge1(65536, 65536);
			break;
		case 4:
			n = 0;           /* only zero-length messages fit */
			break;
		default:
			s[0] = sge1(200, g + 8);
			break;
		}
		post_recv(qp, i + 1, s, n);
	}
}

/* RESET -> INIT -> RTR, with fresh receive WQEs: the same QP every time. */
static void qp_fresh(struct ibv_qp *qp, unsigned first_recv)
{
	struct ibv_qp_attr a;
	bool ud = qp->qp_type == IBV_QPT_UD;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	modify(qp, &a, IBV_QP_STATE, "RESET");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	if (ud) {
		a.qkey = FZ_QKEY;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "INIT");
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
			(qp->qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
		modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		       "INIT");
	}
	post_recvs(qp, ud, first_recv);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (ud) {
		modify(qp, &a, IBV_QP_STATE, "RTR");
		return;
	}
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = F.peer_qpn;
	a.rq_psn = 0;
	a.ah_attr.dlid = F.lid;          /* ourselves: the outbound channel goes nowhere */
	a.ah_attr.port_num = 1;
	if (qp->qp_type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 12;
		modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");
	} else {
		modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN, "RTR");
	}
}

/* SOFTVERBS_FUZZ_VERBOSE=1 prints every completion (to see what an input does). */
static void drain_cq(void)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(F.cq, 16, wc)) > 0) {
		/* A completion is a QP's state changed by the stranger. */
		if (FZ_MODE == FZ_STRANGER)
			DIE("stranger changed a QP: completion of qp %u wr %lu (%s)", wc[0].qp_num,
			    (unsigned long)wc[0].wr_id, ibv_wc_status_str(wc[0].status));
		for (int i = 0; F.verbose && i < n; i++)
			fprintf(stderr, "fuzz: qp %u wr %lu %s opcode %d len %u imm 0x%x\n",
				wc[i].qp_num, (unsigned long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status), wc[i].opcode, wc[i].byte_len,
				wc[i].imm_data);
	}
	if (n < 0)
		DIE("ibv_poll_cq: %d", n);
}

#if FZ_MODE == FZ_RESP || FZ_MODE == FZ_STRANGER
static void listen_as_peer(void);
#else
static void listen_as_peer(void) { }
#endif
#if FZ_MODE == FZ_DGRAM
static void open_udp_peer(void);
#else
static void open_udp_peer(void) { }
#endif

static void setup(void)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	int n, selftest;

	/* No log lines per input; SOFTVERBS_DEBUG still wins if set. */
	setenv("SOFTVERBS_DEBUG", "0", 0);
	if (FZ_MODE == FZ_RESP || FZ_MODE == FZ_STRANGER)
		setenv("SOFTVERBS_TRANSPORT", "tcp", 1);
	F.verbose = getenv("SOFTVERBS_FUZZ_VERBOSE") && atoi(getenv("SOFTVERBS_FUZZ_VERBOSE"));
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		DIE("no device");
	F.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!F.ctx)
		DIE("ibv_open_device: %s", strerror(errno));
	F.node = to_sctx(F.ctx)->node;
	if (ibv_query_port(F.ctx, 1, &pa))
		DIE("ibv_query_port");
	F.lid = pa.lid;
	F.pd = ibv_alloc_pd(F.ctx);
	F.pd2 = ibv_alloc_pd(F.ctx);
	F.cq = ibv_create_cq(F.ctx, 256, NULL, NULL, 0);
	if (!F.pd || !F.pd2 || !F.cq)
		DIE("pd/cq: %s", strerror(errno));
	setup_memory();
	/* SOFTVERBS_FUZZ_SELFTEST proves that the checks work (tests/fuzz/run.sh
	 * runs them): 1 makes MR 2 remotely writable, so that a WRITE to it
	 * breaks the invariant; 2 registers MR 1 8 bytes too long, so that a
	 * WRITE at its end lands in poisoned guard bytes; 3 (stranger) trusts
	 * the stranger as a same-user unix peer, so that its WRITE lands. */
	selftest = getenv("SOFTVERBS_FUZZ_SELFTEST") ? atoi(getenv("SOFTVERBS_FUZZ_SELFTEST")) : 0;
	F.selftest = selftest;
	F.mr[1] = ibv_reg_mr(F.pd, F.mr_addr[1], F.mr_len[1] + (selftest == 2 ? 8 : 0),
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	F.mr[2] = ibv_reg_mr(F.pd, F.mr_addr[2], F.mr_len[2], IBV_ACCESS_REMOTE_READ |
			     (selftest == 1 ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0));
	F.mr[3] = ibv_reg_mr(F.pd2, F.mr_addr[3], F.mr_len[3], IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (!F.mr[1] || !F.mr[2] || !F.mr[3])
		DIE("ibv_reg_mr: %s", strerror(errno));
	F.peer_qpn = FZ_PEER_QPN;
	if (FZ_MODE == FZ_DGRAM) {
		F.ud = make_qp(IBV_QPT_UD);
		open_udp_peer();
	} else {
		F.rc = make_qp(IBV_QPT_RC);
		if (FZ_MODE != FZ_RESP)
			F.uc = make_qp(IBV_QPT_UC);
	}
	if (FZ_MODE == FZ_RESP || FZ_MODE == FZ_STRANGER)
		listen_as_peer();
}

static void noop(void *arg) { (void)arg; }

/* Let the progress thread finish what it is doing, and free the channels
 * closed meanwhile: it reaps after running commands, so the second command
 * runs after that reap.  Each input then ends with what it allocated freed
 * (libFuzzer's leak check compares mallocs and frees per input). */
static void quiesce(void)
{
	sv_node_sync(F.node, noop, NULL);
	sv_node_sync(F.node, noop, NULL);
}

/* ---- tokens (fuzz.h) ---- */

static uint64_t patch_va(uint64_t va)
{
	if ((va >> 48) >= 0xF001 && (va >> 48) <= 0xF003)
		return (uint64_t)(uintptr_t)F.mr_addr[(va >> 48) & 3] + (va & FZ_VA_OFF_MASK);
	return va;
}

/* The nonce a QP's outbound channel said in its HELLO (stranger harness). */
static uint64_t out_nonce(struct ibv_qp *qp)
{
	struct sv_qp *sqp = to_sqp(qp);
	uint64_t n = 0;

	sv_qlock_lock(&sqp->lock);
	if (sqp->out)
		n = sqp->out->qc->nonce;
	sv_qlock_unlock(&sqp->lock);
	return n;
}

static void patch_header(uint8_t *p)
{
	struct sv_wire_hdr h;
	uint32_t v;
	uint64_t va;

	memcpy(&h, p, sizeof(h));
	v = le32toh(h.dst_qpn);
	if (FZ_MODE == FZ_DGRAM && v == FZ_QPN_UD)
		h.dst_qpn = htole32(F.ud->qp_num);
	else if (FZ_MODE != FZ_DGRAM && v == FZ_QPN_RC)
		h.dst_qpn = htole32(F.rc->qp_num);
	else if (FZ_MODE == FZ_STREAM && v == FZ_QPN_UC)
		h.dst_qpn = htole32(F.uc->qp_num);
	else if (FZ_MODE == FZ_STRANGER && v == FZ_QPN_UC)
		h.dst_qpn = htole32(F.uc->qp_num);
	if ((FZ_MODE == FZ_RESP || FZ_MODE == FZ_STRANGER) && le32toh(h.src_qpn) == FZ_PEER_QPN)
		h.src_qpn = htole32(F.peer_qpn);
	if (FZ_MODE == FZ_DGRAM && le32toh(h.src_qpn) == FZ_PEER_QPN)
		h.src_qpn = htole32(F.udp_qpn);
	if (FZ_MODE == FZ_DGRAM && !h.data1)
		h.data1 = htole64(F.node->addr.s_addr);
	v = le32toh(h.rkey);
	if (v >= FZ_RKEY(1) && v <= FZ_RKEY(3))
		h.rkey = htole32(F.mr[v & 3]->rkey);
	va = le64toh(h.va);
	h.va = htole64(patch_va(va));
	if (FZ_MODE == FZ_STRANGER && (le64toh(h.data0) & ~1ull) == FZ_NONCE_OUT(0))
		h.data0 = htole64(out_nonce(le64toh(h.data0) & 1 ? F.uc : F.rc));
	memcpy(p, &h, sizeof(h));
}

/* A pulled SEND's descriptors (host order, docs/wire-format.md). */
static void patch_pulls(uint8_t *p, size_t len)
{
	for (size_t o = 0; o + sizeof(struct sv_wire_pull) <= len; o += sizeof(struct sv_wire_pull)) {
		struct sv_wire_pull d;

		memcpy(&d, p + o, sizeof(d));
		d.addr = patch_va(d.addr);
		if (d.key >= FZ_RKEY(1) && d.key <= FZ_RKEY(3))
			d.key = F.mr[d.key & 3]->lkey;
		memcpy(p + o, &d, sizeof(d));
	}
}

/* Walk the frames as the receive machine will and replace the tokens. */
static __attribute__((unused)) void patch_stream(uint8_t *buf, size_t n)
{
	size_t o = 0;

	while (n - o >= sizeof(struct sv_wire_hdr)) {
		struct sv_wire_hdr h;

		patch_header(buf + o);
		memcpy(&h, buf + o, sizeof(h));
		h.len = le32toh(h.len);
		o += sizeof(struct sv_wire_hdr);
		if (h.len > n - o)
			break;
		if ((h.opcode == SV_OP_SEND || h.opcode == SV_OP_SEND_IMM) && (h.flags & SV_WF_PULL))
			patch_pulls(buf + o, h.len);
		o += h.len;
	}
}

/* ---- the stream harness ---- */

#if FZ_MODE != FZ_DGRAM
static void drain_responses(int fd)
{
	uint8_t sink[65536];

	while (read(fd, sink, sizeof(sink)) > 0)
		;
}

static const size_t chunk_sizes[] = { 1, 63, 64, 65, 7, 4096, 200, 65536, 3, 100000 };
#define FZ_NCHUNK (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))
#endif

#if FZ_MODE == FZ_STREAM || FZ_MODE == FZ_STRANGER
/* Both stream harnesses read their input alike: a byte of FZ_FDS_* flags,
 * then what the peer sends, copied to F.buf with its tokens patched. */
static bool take_stream(const uint8_t *data, size_t *size, unsigned *fds)
{
	if (*size < 1)
		return false;
	*fds = data[0];
	memcpy(F.buf, data + 1, --*size);
	patch_stream(F.buf, *size);
	return true;
}

/* ---- descriptors passed with the first frame (fuzz.h, FZ_FDS_*) ---- */

/* The peer's end of the channel: the socket, and the rings when it
 * offered a real ring memfd (it made them, as shm/chan.c's connector). */
struct fz_peer {
	int sp[2];                     /* sp[0] the library's, sp[1] ours */
	struct sv_shm_chan ring;
	bool have_ring;
};

static int memfd_of(size_t len)
{
	int fd = memfd_create("fuzz-not-a-ring", MFD_CLOEXEC);

	if (fd < 0 || ftruncate(fd, (off_t)len))
		DIE("memfd: %s", strerror(errno));
	return fd;
}

/* A ring memfd made by the library itself, our end kept in p->ring. */
static int make_ring(struct fz_peer *p)
{
	int fd = sv_shm_chan_create(&p->ring);

	if (fd < 0)
		DIE("sv_shm_chan_create: %s", strerror(-fd));
	p->have_ring = true;
	return fd;
}

static int open_or_die(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		DIE("%s: %s", path, strerror(errno));
	return fd;
}

/* The descriptors of choice `k`; returns how many. */
static int make_fds(struct fz_peer *p, unsigned k, int fds[3])
{
	int pfd[2];

	switch (k & FZ_FDS_MASK) {
	case FZ_FDS_RING_SEG:
		fds[0] = make_ring(p);
		fds[1] = dup(sv_seg_fd());
		return 2;
	case FZ_FDS_RING:
		fds[0] = make_ring(p);
		return 1;
	case FZ_FDS_SEG_RING:
		fds[0] = dup(sv_seg_fd());
		fds[1] = make_ring(p);
		return 2;
	case FZ_FDS_ZERO_SEG:
		fds[0] = make_ring(p);
		fds[1] = memfd_of(p->ring.map.len);  /* the ring's size, not its contents */
		close(fds[0]);
		fds[0] = fds[1];
		fds[1] = dup(sv_seg_fd());
		return 2;
	case FZ_FDS_NULL_PIPE:
		if (pipe2(pfd, O_CLOEXEC))
			DIE("pipe: %s", strerror(errno));
		fds[0] = open_or_die("/dev/null");
		fds[1] = pfd[0];
		close(pfd[1]);
		return 2;
	case FZ_FDS_THREE:
		fds[0] = make_ring(p);
		fds[1] = dup(sv_seg_fd());
		fds[2] = open_or_die("/dev/null");
		return 3;
	case FZ_FDS_BAD_SIZE:
		fds[0] = make_ring(p);
		p->ring.tx->size *= 2;           /* ring 0's header: what attach reads */
		fds[1] = dup(sv_seg_fd());
		return 2;
	default:
		return 0;
	}
}

/* Our first write: the first frame, with the chosen descriptors.  Ours are
 * closed after it: the message holds its own references. */
static size_t send_first(struct fz_peer *p, unsigned k, const uint8_t *buf, size_t size)
{
	union { char b[CMSG_SPACE(3 * sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = size < 64 ? size : 64 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[3], n = make_fds(p, k, fds);
	ssize_t w;

	if (n && iov.iov_len) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.b;
		mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	}
	w = iov.iov_len ? sendmsg(p->sp[1], &mh, MSG_NOSIGNAL) : 0;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	if (w < 0)
		DIE("sendmsg: %s", strerror(errno));
	return (size_t)w;
}

/* ---- the stream harnesses ---- */

/* Bytes written to the library that it has not read: in the ring once the
 * channel moved there, else on our end of the socket. */
static size_t unread_by_library(struct sv_conn *c, struct fz_peer *p)
{
	int outq = 0;

	if ((c->caps & SV_CAP_MAPPED) && p->have_ring)
		return (size_t)(__atomic_load_n(&p->ring.tx->tail, __ATOMIC_ACQUIRE) -
				__atomic_load_n(&p->ring.tx->head, __ATOMIC_ACQUIRE));
	if (ioctl(p->sp[1], SIOCOUTQ, &outq))
		return 0;
	return (size_t)outq;
}

/* Write the next chunk where the library reads it now. */
static size_t feed(struct sv_conn *c, struct fz_peer *p, const uint8_t *buf, size_t n)
{
	if ((c->caps & SV_CAP_MAPPED) && p->have_ring) {
		struct iovec iov = { .iov_base = (void *)buf, .iov_len = n };

		return sv_ring_write(p->ring.tx, p->ring.tx_data, p->ring.size, &iov, 1,
				     &p->ring.tx_head_seen);
	} else {
		ssize_t w = write(p->sp[1], buf, n);

		return w > 0 ? (size_t)w : 0;
	}
}

static void drain_peer(struct sv_conn *c, struct fz_peer *p)
{
	uint8_t sink[65536];
	struct iovec iov = { .iov_base = sink, .iov_len = sizeof(sink) };

	drain_responses(p->sp[1]);           /* frames, or doorbell bytes */
	if ((c->caps & SV_CAP_MAPPED) && p->have_ring)
		while (sv_ring_read(p->ring.rx, p->ring.rx_data, p->ring.size, &iov, 1, &p->ring.rx_rd))
			;
}

/* The channel's socketpair.  A stranger of another uid (bit 3 of the first
 * byte) needs root: the socket then carries that uid (SO_PEERCRED), made
 * with this thread's effective uid changed for the call (the raw system
 * call changes this thread's only). */
#define FZ_OTHER_UID 65534

static bool make_pair(int sp[2], bool other_uid)
{
	bool as_other = other_uid && geteuid() == 0;
	int r;

	if (as_other && syscall(SYS_setresuid, -1, FZ_OTHER_UID, -1))
		DIE("setresuid: %s", strerror(errno));
	r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp);
	if (as_other && syscall(SYS_setresuid, -1, 0, -1))
		DIE("setresuid back: %s", strerror(errno));
	if (r)
		DIE("socketpair: %s", strerror(errno));
	return as_other;
}

/* An accepted channel (transport/conn.c's accept_all), but never started
 * (sv_conn_start): the progress thread does not see it, this thread alone
 * drives it, and runs are deterministic. */
static struct sv_conn *accept_channel(int fd, bool is_unix)
{
	struct sv_conn *c = sv_conn_new(F.node, fd, false, true, is_unix ? &sv_unix_ops : &sv_tcp_ops);

	if (!c)
		DIE("sv_conn_new failed");
	pthread_mutex_lock(&F.node->lock);
	sv_list_add_tail(&F.node->pending, &c->node_link);
	pthread_mutex_unlock(&F.node->lock);
	return c;
}

/* Feed buf to the channel in chunks of varying size, driving it after
 * each, until the library has read everything and seen our EOF, or closed
 * the channel.  Nothing but the HELLO goes before the library took it: a
 * channel that moves to rings reads the rest there. */
static void drive(struct sv_conn *c, struct fz_peer *p, const uint8_t *buf, size_t size,
		  size_t off)
{
	size_t k = 0, last_unread = (size_t)-1;
	int idle = 0;
	bool eof = false;

	while (idle < 200) {
		size_t unread;
		bool progress = false;

		if (off < size && (c->qc->qp || c->closed)) {
			size_t want = chunk_sizes[k++ % FZ_NCHUNK];
			size_t w = feed(c, p, buf + off, want < size - off ? want : size - off);

			off += w;
			progress = w > 0;
		}
		if (!c->closed)
			sv_engine_on_conn(c, EPOLLIN | EPOLLOUT);
		drain_peer(c, p);
		drain_cq();                  /* the application-driven path, too */
		if (c->closed)
			break;
		unread = unread_by_library(c, p);
		if (off == size && unread == 0 && !eof) {
			/* All consumed: the peer goes away. */
			shutdown(p->sp[1], SHUT_WR);
			eof = true;
			progress = true;
		}
		if (unread != last_unread)
			progress = true;
		last_unread = unread;
		idle = progress ? 0 : idle + 1;
	}
}

/* Every descriptor the input made is closed by now.  The progress thread
 * may be between an open and a close of its own: look again a while. */
static void check_fds(int before)
{
	int now = fz_count_fds();

	for (int i = 0; i < 100 && now > before; i++) {
		usleep(1000);
		quiesce();
		now = fz_count_fds();
	}
	if (now > before) {
		fz_list_fds();
		DIE("%d descriptor(s) leaked by the input (%d open before, %d after)",
		    now - before, before, now);
	}
}
#endif

#if FZ_MODE == FZ_STREAM
static void run_stream(const uint8_t *data, size_t size)
{
	struct fz_peer p = { 0 };
	struct sv_conn *c;
	unsigned fds;
	size_t off;
	int before = fz_count_fds();

	if (!take_stream(data, &size, &fds))
		return;
	make_pair(p.sp, false);

	/* Hold off the progress thread's reaping: a channel that closes while
	 * we drive it stays readable until we are done (util/guard.h). */
	sv_guard_enter();
	/* A same-host socket of our own user: its peer is trusted once the
	 * HELLO names the QP's peer (engine/verify.c), so the input reaches
	 * the responder. */
	c = accept_channel(p.sp[0], true);
	off = send_first(&p, fds, F.buf, size);
	drive(c, &p, F.buf, size, off);
	/* A channel that never named a QP is ours to close; one that did is
	 * closed by the QP's reset below. */
	if (!c->closed && !c->qc->qp)
		sv_conn_close(c);
	sv_guard_leave();

	qp_fresh(F.rc, 0);
	qp_fresh(F.uc, 0);
	drain_cq();
	close(p.sp[1]);
	if (p.have_ring)
		sv_shm_chan_destroy(&p.ring);
	quiesce();
	check_fds(before);
}
#endif

#if FZ_MODE == FZ_STRANGER
/* What a stranger must leave as it found it. */
struct qp_snap {
	enum ibv_qp_state state;
	struct sv_conn *in, *out;
	uint32_t epsn, rq_head, rq_tail;
	enum sv_resp_state resp;
	enum sv_link_state link;
};

static struct qp_snap snap(struct ibv_qp *qp)
{
	struct sv_qp *s = to_sqp(qp);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct qp_snap r;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		DIE("ibv_query_qp");
	sv_qlock_lock(&s->lock);
	r = (struct qp_snap){ .state = a.qp_state, .in = s->in, .out = s->out, .epsn = s->epsn,
			      .rq_head = s->rq.head, .rq_tail = s->rq.tail,
			      .resp = s->resp, .link = s->link };
	sv_qlock_unlock(&s->lock);
	return r;
}

static void check_snap(struct ibv_qp *qp, const struct qp_snap *was)
{
	struct qp_snap now = snap(qp);

#define FZ_SAME(f, what) \
	if (now.f != was->f) \
		DIE("stranger changed qp %u: %s", qp->qp_num, what)
	FZ_SAME(state, "its state");
	FZ_SAME(in, "its inbound channel");
	FZ_SAME(out, "its outbound channel");
	FZ_SAME(epsn, "its expected PSN");
	FZ_SAME(rq_head, "its receive queue");
	FZ_SAME(rq_tail, "its receive queue");
	FZ_SAME(resp, "its responder state");
	FZ_SAME(link, "its link state");
#undef FZ_SAME
}

/* The invariant, for every MR (MR 1 too) and the guard bytes. */
static void check_all_memory(void)
{
	poison_guards(false);
	if (memcmp(F.body, F.ref, F.body_len)) {
		for (size_t i = 0; i < F.body_len; i++) {
			int n;

			if (F.body[i] == F.ref[i])
				continue;
			in_mr(i, &n);
			DIE("stranger changed memory: byte %zu (%s%d) is 0x%02x, not 0x%02x", i,
			    n ? "MR " : "guard ", n, F.body[i], F.ref[i]);
		}
	}
	poison_guards(true);
}

/* Our channel, before we close it: a candidate still, never bound. */
static void check_unbound(struct sv_conn *c)
{
	struct ibv_qp *qps[2] = { F.rc, F.uc };

	for (int i = 0; i < 2; i++) {
		struct sv_qp *s = to_sqp(qps[i]);

		if (s->in == c || s->out == c)
			DIE("stranger changed qp %u: its channel became the QP's", qps[i]->qp_num);
	}
	if (c->qc->peer_state == SV_PEER_VERIFIED)
		DIE("stranger changed its channel: verified");
}

static void close_channel(struct sv_conn *c)
{
	struct sv_qp *qp = c->qc->qp;

	if (qp)
		sv_qlock_lock(&qp->lock);
	if (!c->closed) {
		check_unbound(c);
		sv_conn_close(c);
	}
	if (qp)
		sv_qlock_unlock(&qp->lock);
}

static void run_stranger(const uint8_t *data, size_t size)
{
	struct fz_peer p = { 0 };
	struct qp_snap rc = snap(F.rc), uc = snap(F.uc);
	struct sv_conn *c;
	unsigned fds;
	size_t off;
	bool is_unix;
	int before = fz_count_fds();

	if (!take_stream(data, &size, &fds))
		return;
	/* Self-test 3: a socket of our own user, trusted as such. */
	is_unix = make_pair(p.sp, fds & FZ_FOREIGN_UNIX) || F.selftest == 3;

	sv_guard_enter();
	c = accept_channel(p.sp[0], is_unix);
	off = send_first(&p, fds, F.buf, size);
	drive(c, &p, F.buf, size, off);
	if (c->qc->qp || c->closed)
		check_unbound(c);
	close_channel(c);
	sv_guard_leave();

	close(p.sp[1]);
	if (p.have_ring)
		sv_shm_chan_destroy(&p.ring);
	for (int i = 0; i < 2; i++)
		drain_responses(F.peer_fd[i]);   /* the questions the QPs asked */
	quiesce();
	drain_cq();
	check_all_memory();
	check_snap(F.rc, &rc);
	check_snap(F.uc, &uc);
	check_fds(before);
}
#endif

/* ---- the datagram harness ---- */

#if FZ_MODE == FZ_DGRAM
/* Our socket on the device address, as a peer's port group's would be. */
static void open_udp_peer(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = F.node->addr };
	socklen_t sl = sizeof(sa);

	F.udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (F.udp_fd < 0 || bind(F.udp_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(F.udp_fd, (struct sockaddr *)&sa, &sl))
		DIE("udp socket: %s", strerror(errno));
	F.udp_qpn = (uint32_t)ntohs(sa.sin_port) << 8 | 1;
}

static void run_dgram(const uint8_t *data, size_t size)
{
	struct sv_pgroup *g = sv_node_group_of(F.node, F.ud->qp_num);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr = F.node->addr };
	int pending = 1;

	if (!g)
		DIE("no port group for QP %u", F.ud->qp_num);
	/* Byte 0 picks the receive WQE the datagram meets; the rest is the
	 * datagram. */
	if (size < 1)
		return;
	qp_fresh(F.ud, data[0] % FZ_NRECV);
	data++;
	size--;
	memcpy(F.buf, data, size);
	if (size >= sizeof(struct sv_wire_hdr))
		patch_header(F.buf);
	to.sin_port = htons(g->port);
	if (sendto(F.udp_fd, F.buf, size, 0, (struct sockaddr *)&to, sizeof(to)) < 0 &&
	    errno != EMSGSIZE)
		DIE("sendto: %s", strerror(errno));
	/* Until the datagram left the socket (our poll or the progress thread
	 * took it), then until the progress thread finished its batch. */
	for (int i = 0; i < 100000 && pending; i++) {
		drain_cq();
		if (ioctl(g->udp_h.fd, FIONREAD, &pending))
			pending = 0;
	}
	sv_node_sync(F.node, noop, NULL);
	drain_cq();
	quiesce();
}
#endif

/* ---- the completer harness ---- */

#if FZ_MODE == FZ_RESP || FZ_MODE == FZ_STRANGER
/* The RC QP's peer is this harness: a TCP listener on port P, named by the
 * QPN (P << 8) | 1 (SOFTVERBS_TRANSPORT=tcp, so that the library connects
 * to it rather than to a unix socket). */
static void listen_as_peer(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);

	F.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (F.listen_fd < 0 || bind(F.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    getsockname(F.listen_fd, (struct sockaddr *)&sa, &sl) || listen(F.listen_fd, 16))
		DIE("listener: %s", strerror(errno));
	F.peer_qpn = ((uint32_t)ntohs(sa.sin_port) << 8) | 1;
}

static bool wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, ms) == 1;
}

/* Accept the QP's channel and read its HELLO: the library connects (and
 * the progress thread says HELLO) on its own once the QP is in RTR. */
static int accept_requester(struct ibv_qp *qp)
{
	for (int tries = 0; tries < 10; tries++) {
		struct sv_wire_hdr h;
		size_t got = 0;
		int fd;

		if (!wait_fd(F.listen_fd, POLLIN, 5000))
			break;
		fd = accept4(F.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		while (got < sizeof(h) && wait_fd(fd, POLLIN, 5000)) {
			ssize_t r = read(fd, (uint8_t *)&h + got, sizeof(h) - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got == sizeof(h) && sv_wire_decode(&h) && h.opcode == SV_OP_HELLO &&
		    h.src_qpn == qp->qp_num && h.dst_qpn == F.peer_qpn)
			return fd;
		close(fd);
	}
	DIE("QP %u did not connect to its peer (this harness) within 5 s", qp->qp_num);
}
#endif

#if FZ_MODE == FZ_STRANGER
/* The QPs' outbound channels reach us: the peer a stranger claims to be.
 * It never answers, so candidates stay candidates. */
static void stranger_setup(void)
{
	qp_fresh(F.rc, 0);
	F.peer_fd[0] = accept_requester(F.rc);
	qp_fresh(F.uc, 0);
	F.peer_fd[1] = accept_requester(F.uc);
}
#endif

#if FZ_MODE == FZ_RESP

/* RESET -> INIT -> RTR -> RTS: a requester whose retries never fire during
 * an input (ack timeout 4 s). */
static void qp_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	qp_fresh(qp, 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	a.timeout = 20;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

static void post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	int err;

	wr->send_flags |= IBV_SEND_SIGNALED;
	err = ibv_post_send(qp, wr, &bad);
	if (err)
		DIE("ibv_post_send: %s", strerror(err));
}

/* One request of each kind, PSNs 0..5 (gen_corpus.c answers them). */
static void post_requests(struct ibv_qp *qp)
{
	struct ibv_sge s[3];
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	s[0] = sge1(0, 64);
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = s, .num_sge = 1, .opcode = IBV_WR_SEND };
	post_send(qp, &wr);
	s[0] = sge1(100, 100);
	wr = (struct ibv_send_wr){ .wr_id = 2, .sg_list = s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .wr.rdma = { .remote_addr = 0x10000, .rkey = 0x1234 } };
	post_send(qp, &wr);
	s[0] = sge1(4096, 256);
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = s, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ,
				   .wr.rdma = { .remote_addr = 0x20000, .rkey = 0x1234 } };
	post_send(qp, &wr);
	s[0] = sge1(8192, 8);
	wr = (struct ibv_send_wr){ .wr_id = 4, .sg_list = s, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
				   .wr.atomic = { .remote_addr = 0x30000, .compare_add = 1,
						  .swap = 2, .rkey = 0x1234 } };
	post_send(qp, &wr);
	s[0] = sge1(8200, 8);
	wr = (struct ibv_send_wr){ .wr_id = 5, .sg_list = s, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
				   .wr.atomic = { .remote_addr = 0x30008, .compare_add = 5,
						  .rkey = 0x1234 } };
	post_send(qp, &wr);
	s[0] = sge1(300, 10);
	s[1] = sge1(2000, 20);
	s[2] = sge1(3000, 30);
	wr = (struct ibv_send_wr){ .wr_id = 6, .sg_list = s, .num_sge = 3,
				   .opcode = IBV_WR_SEND_WITH_IMM, .imm_data = htobe32(7) };
	post_send(qp, &wr);
}

/* Connections the library made before the previous input's reset. */
static void drop_stale_connections(void)
{
	int fd;

	while ((fd = accept4(F.listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

static void run_resp(const uint8_t *data, size_t size)
{
	struct sv_qp *sqp = (struct sv_qp *)F.rc;
	struct sv_conn *c;
	size_t off = 0, k = 0, last_unread = (size_t)-1;
	int fd, idle = 0;
	bool eof = false;

	memcpy(F.buf, data, size);
	patch_stream(F.buf, size);
	drop_stale_connections();
	qp_rts(F.rc);
	post_requests(F.rc);
	fd = accept_requester(F.rc);

	/* Take the channel over from the progress thread (as in run_stream,
	 * the guard keeps a closed channel from being freed under us). */
	sv_guard_enter();
	sv_qlock_lock(&sqp->lock);
	c = sqp->out;
	if (!c || c->closed)
		DIE("the RC QP has no outbound channel after its HELLO");
	sv_node_unwatch(F.node, &c->h);
	sv_qlock_unlock(&sqp->lock);

	while (idle < 200) {
		size_t unread = 0;
		bool progress = false;

		if (off < size) {
			size_t want = chunk_sizes[k++ % FZ_NCHUNK];
			ssize_t w = write(fd, F.buf + off, want < size - off ? want : size - off);

			if (w > 0) {
				off += (size_t)w;
				progress = true;
			}
		}
		if (!c->closed)
			sv_engine_on_conn(c, EPOLLIN | EPOLLOUT);
		drain_responses(fd);         /* here: the requests */
		drain_cq();
		if (c->closed)
			break;
		{
			int inq = 0;     /* bytes the library has not read yet */

			if (ioctl(c->h.fd, SIOCINQ, &inq) == 0)
				unread = (size_t)inq;
		}
		if (off == size && unread == 0 && !eof) {
			shutdown(fd, SHUT_WR);
			eof = true;
			progress = true;
		}
		if (unread != last_unread)
			progress = true;
		last_unread = unread;
		idle = progress ? 0 : idle + 1;
	}
	qp_fresh(F.rc, 0);           /* closes the channel, if it is still open */
	sv_guard_leave();
	drain_cq();
	close(fd);
	quiesce();
}
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	if (FZ_MODE == FZ_DGRAM) {
		qp_fresh(F.ud, 0);
	} else if (FZ_MODE == FZ_STREAM) {
		qp_fresh(F.rc, 0);
		qp_fresh(F.uc, 0);
	}
#if FZ_MODE == FZ_STRANGER
	stranger_setup();
#endif
	drain_cq();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FZ_MAX_INPUT)
		return -1;                   /* not added to the corpus */
	fill_memory();
#if FZ_MODE == FZ_DGRAM
	run_dgram(data, size);
#elif FZ_MODE == FZ_RESP
	run_resp(data, size);
#elif FZ_MODE == FZ_STRANGER
	run_stranger(data, size);
#else
	run_stream(data, size);
#endif
	check_memory();
	return 0;
}
