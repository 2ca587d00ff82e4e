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
 *     FZ_QPN_RC) or the UC QP (FZ_QPN_UC), from FZ_PEER_QPN.
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
	int listen_fd;                 /* completer harness: we are the peer */
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

	while ((n = ibv_poll_cq(F.cq, 16, wc)) > 0)
		for (int i = 0; F.verbose && i < n; i++)
			fprintf(stderr, "fuzz: qp %u wr %lu %s opcode %d len %u imm 0x%x\n",
				wc[i].qp_num, (unsigned long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status), wc[i].opcode, wc[i].byte_len,
				wc[i].imm_data);
	if (n < 0)
		DIE("ibv_poll_cq: %d", n);
}

#if FZ_MODE == FZ_RESP
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
	if (FZ_MODE == FZ_RESP)
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
	 * runs both): 1 makes MR 2 remotely writable, so that a WRITE to it
	 * breaks the invariant; 2 registers MR 1 8 bytes too long, so that a
	 * WRITE at its end lands in poisoned guard bytes. */
	selftest = getenv("SOFTVERBS_FUZZ_SELFTEST") ? atoi(getenv("SOFTVERBS_FUZZ_SELFTEST")) : 0;
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
		if (FZ_MODE == FZ_STREAM)
			F.uc = make_qp(IBV_QPT_UC);
	}
	if (FZ_MODE == FZ_RESP)
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
	if (FZ_MODE == FZ_RESP && le32toh(h.src_qpn) == FZ_PEER_QPN)
		h.src_qpn = htole32(F.peer_qpn);
	if (FZ_MODE == FZ_DGRAM && le32toh(h.src_qpn) == FZ_PEER_QPN)
		h.src_qpn = htole32(F.udp_qpn);
	if (FZ_MODE == FZ_DGRAM && !h.data1)
		h.data1 = htole64(F.node->addr.s_addr);
	v = le32toh(h.rkey);
	if (v >= FZ_RKEY(1) && v <= FZ_RKEY(3))
		h.rkey = htole32(F.mr[v & 3]->rkey);
	va = le64toh(h.va);
	if ((va >> 48) >= 0xF001 && (va >> 48) <= 0xF003)
		h.va = htole64((uint64_t)(uintptr_t)F.mr_addr[(va >> 48) & 3] + (va & FZ_VA_OFF_MASK));
	memcpy(p, &h, sizeof(h));
}

/* Walk the frames as the receive machine will and replace the tokens. */
static __attribute__((unused)) void patch_stream(uint8_t *buf, size_t n)
{
	size_t o = 0;

	while (n - o >= sizeof(struct sv_wire_hdr)) {
		uint32_t len;

		patch_header(buf + o);
		memcpy(&len, buf + o + offsetof(struct sv_wire_hdr, len), 4);
		len = le32toh(len);
		o += sizeof(struct sv_wire_hdr);
		if (len > n - o)
			break;
		o += len;
	}
}

/* ---- the stream harness ---- */

#if FZ_MODE == FZ_STREAM || FZ_MODE == FZ_RESP
static void drain_responses(int fd)
{
	uint8_t sink[65536];

	while (read(fd, sink, sizeof(sink)) > 0)
		;
}

static const size_t chunk_sizes[] = { 1, 63, 64, 65, 7, 4096, 200, 65536, 3, 100000 };
#define FZ_NCHUNK (sizeof(chunk_sizes) / sizeof(chunk_sizes[0]))
#endif

#if FZ_MODE == FZ_STREAM
/* Bytes written to our end of the socketpair that the library has not read. */
static size_t unread_by_library(int fd)
{
	int outq = 0;

	if (ioctl(fd, SIOCOUTQ, &outq))
		return 0;
	return (size_t)outq;
}

static void run_stream(const uint8_t *data, size_t size)
{
	struct sv_conn *c;
	size_t off = 0, k = 0, last_unread = (size_t)-1;
	int sp[2], idle = 0;
	bool eof = false;

	memcpy(F.buf, data, size);
	patch_stream(F.buf, size);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp))
		DIE("socketpair: %s", strerror(errno));

	/* Hold off the progress thread's reaping: a channel that closes while
	 * we drive it stays readable until we are done (node->drivers). */
	__atomic_add_fetch(&F.node->drivers, 1, __ATOMIC_SEQ_CST);
	/* An accepted channel (recv.c's accept_all), but never started
	 * (sv_conn_start): the progress thread does not see it, this thread
	 * alone drives it, and runs are deterministic. */
	c = sv_conn_new(F.node, sp[0], false, true);
	if (!c)
		DIE("sv_conn_new failed");
	/* A same-host socket of our own user: its peer is trusted once the
	 * HELLO names the QP's peer (engine/verify.c), so the input reaches
	 * the responder. */
	c->is_unix = true;

	while (idle < 200) {
		size_t unread;
		bool progress = false;

		if (off < size) {
			size_t want = chunk_sizes[k++ % FZ_NCHUNK];
			ssize_t w = write(sp[1], F.buf + off, want < size - off ? want : size - off);

			if (w > 0) {
				off += (size_t)w;
				progress = true;
			}
		}
		if (!c->closed)
			sv_engine_on_conn(&c->h, EPOLLIN | EPOLLOUT);
		drain_responses(sp[1]);
		drain_cq();                  /* the application-driven path, too */
		if (c->closed)
			break;
		unread = unread_by_library(sp[1]);
		if (off == size && unread == 0 && !eof) {
			/* All consumed: the peer goes away. */
			shutdown(sp[1], SHUT_WR);
			eof = true;
			progress = true;
		}
		if (unread != last_unread)
			progress = true;
		last_unread = unread;
		idle = progress ? 0 : idle + 1;
	}
	/* A channel that never named a QP is ours to close; one that did is
	 * closed by the QP's reset below. */
	if (!c->closed && !c->qp)
		sv_conn_close(c);
	__atomic_sub_fetch(&F.node->drivers, 1, __ATOMIC_SEQ_CST);

	qp_fresh(F.rc, 0);
	qp_fresh(F.uc, 0);
	drain_cq();
	close(sp[1]);
	quiesce();
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

#if FZ_MODE == FZ_RESP
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

static bool wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };

	return poll(&p, 1, ms) == 1;
}

/* Connections the library made before the previous input's reset. */
static void drop_stale_connections(void)
{
	int fd;

	while ((fd = accept4(F.listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
}

/* Accept the QP's channel and read its HELLO: the library connects (and
 * the progress thread says HELLO) on its own once the QP is in RTR. */
static int accept_requester(void)
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
		    h.src_qpn == F.rc->qp_num && h.dst_qpn == F.peer_qpn)
			return fd;
		close(fd);
	}
	DIE("the RC QP did not connect to its peer (this harness) within 5 s");
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
	fd = accept_requester();

	/* Take the channel over from the progress thread (as in run_stream,
	 * node->drivers keeps a closed channel from being freed under us). */
	__atomic_add_fetch(&F.node->drivers, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&sqp->lock);
	c = sqp->out;
	if (!c || c->closed)
		DIE("the RC QP has no outbound channel after its HELLO");
	sv_node_unwatch(F.node, &c->h);
	pthread_mutex_unlock(&sqp->lock);

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
			sv_engine_on_conn(&c->h, EPOLLIN | EPOLLOUT);
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
	__atomic_sub_fetch(&F.node->drivers, 1, __ATOMIC_SEQ_CST);
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
#else
	run_stream(data, size);
#endif
	check_memory();
	return 0;
}
