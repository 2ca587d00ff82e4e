/*
 * Writes the fuzzers' seed corpus: valid frames of every kind, with the
 * tokens of fuzz.h for QP numbers, rkeys and addresses.
 *
 *   gen_corpus STREAM_DIR DGRAM_DIR RESP_DIR [STRANGER_DIR [CM_DIR]]
 *
 * STREAM_DIR gets byte streams for fuzz_stream (the byte that picks the
 * descriptors passed with the HELLO, a HELLO, then requests; some offer
 * rings and send pulled SENDs), STRANGER_DIR the same for fuzz_stranger
 * (a stranger's HELLO, questions, requests), CM_DIR CM message streams
 * for fuzz_cm (the role byte, then messages: cm/wire.h),
 * RESP_DIR byte streams for fuzz_resp (a HELLO_ACK, then responses to the
 * six requests fuzz_recv.c's post_requests() has in flight),
 * DGRAM_DIR single datagrams for fuzz_dgram (after the byte that picks the
 * receive WQE).  The frames are built with the
 * library's own header (wire/proto.h) and encoder.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>

#include <rdma/rdma_cma.h>

#include "cm/wire.h"
#include "wire/proto.h"

#include "fuzz.h"

static uint8_t out[256 * 1024];
static size_t out_len;
static size_t out_start;        /* where the frames start (8: after a prefix byte, aligned) */
static int prefix = -1;         /* datagram seeds: the WQE-choice byte, written first */
static int lead = -1;           /* stream seeds: the descriptor byte, unless prefix says */

static struct sv_wire_hdr *frame(enum sv_op op, uint32_t dst, uint32_t psn, uint32_t len)
{
	struct sv_wire_hdr *h = (struct sv_wire_hdr *)(out + out_len);

	if (out_len + sizeof(*h) + len > sizeof(out)) {
		fprintf(stderr, "gen_corpus: seed too large\n");
		exit(1);
	}
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->dst_qpn = dst;
	h->src_qpn = FZ_PEER_QPN;
	h->psn = psn;
	h->len = len;
	for (uint32_t i = 0; i < len; i++)
		out[out_len + sizeof(*h) + i] = (uint8_t)('a' + i % 26);
	out_len += sizeof(*h) + len;
	return h;
}

/* Headers are filled in host order; encode them all before writing. */
static void encode_all(void)
{
	size_t o = out_start;

	while (o < out_len) {
		struct sv_wire_hdr *h = (struct sv_wire_hdr *)(out + o);
		uint32_t len = h->len;

		sv_wire_encode(h);
		o += sizeof(*h) + len;
	}
}

static void emit_raw(const char *dir, const char *name);

static void emit(const char *dir, const char *name)
{
	encode_all();
	emit_raw(dir, name);
}

static void emit_raw(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f && (prefix >= 0 || lead >= 0))
		fputc(prefix >= 0 ? prefix : lead, f);
	if (!f || fwrite(out + out_start, 1, out_len - out_start, f) != out_len - out_start ||
	    fclose(f)) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	out_len = out_start = 0;
	prefix = -1;
}

/* Datagram seeds start with the byte that picks the receive WQE (fuzz_recv.c). */
static void wqe_choice(uint8_t b)
{
	prefix = b;
	out_len = out_start = 8;
}

static struct sv_wire_hdr *hello(uint32_t qp)
{
	struct sv_wire_hdr *h = frame(SV_OP_HELLO, qp, 0, 0);

	h->data0 = 0x5eed5eed5eed5eedull;      /* the opener's nonce */
	h->data1 = 0x1234567890abcdefull;      /* host identity */
	return h;
}

/* A HELLO offering rings, with descriptors `fds` (fuzz.h); va lets the
 * responder probe us (MR 1 is there). */
static void hello_shm(uint32_t qp, uint8_t fds)
{
	struct sv_wire_hdr *h = hello(qp);

	h->flags = SV_WF_SHM;
	h->va = FZ_VA(1, 0);
	prefix = fds;
}

static void write_req(uint32_t qp, enum sv_op op, uint32_t psn, int mr, uint64_t off, uint32_t len)
{
	struct sv_wire_hdr *h = frame(op, qp, psn, len);

	h->rkey = FZ_RKEY(mr);
	h->va = FZ_VA(mr, off);
	if (op == SV_OP_WRITE_IMM)
		h->imm = 0x01020304;
}

static void read_req(uint32_t qp, uint32_t psn, int mr, uint64_t off, uint32_t len)
{
	struct sv_wire_hdr *h = frame(SV_OP_READ_REQ, qp, psn, 0);

	h->rkey = FZ_RKEY(mr);
	h->va = FZ_VA(mr, off);
	h->rlen = len;
}

static void atomic_req(uint32_t qp, enum sv_op op, uint32_t psn, int mr, uint64_t off)
{
	struct sv_wire_hdr *h = frame(op, qp, psn, 0);

	h->rkey = FZ_RKEY(mr);
	h->va = FZ_VA(mr, off);
	h->data0 = 0x1111;
	/* compare: MR 1's initial contents at off (byte i is i * 7 + 1) */
	h->data1 = 0;
	for (int i = 7; i >= 0; i--)
		h->data1 = h->data1 << 8 | (uint8_t)((off + i) * 7 + 1);
}

/* A pulled SEND: descriptors (host order) for pieces of `lens`, whose sum
 * is rlen unless `rlen` says otherwise (0: the sum). */
static struct sv_wire_hdr *pulled_send(uint32_t psn, int n, const uint32_t *lens, int mr,
				       uint32_t rlen)
{
	struct sv_wire_hdr *h = frame(SV_OP_SEND, FZ_QPN_RC, psn, (uint32_t)(n * sizeof(struct sv_wire_pull)));
	struct sv_wire_pull *d = (struct sv_wire_pull *)(h + 1);
	uint32_t sum = 0, off = 0;

	h->flags = SV_WF_PULL;
	for (int i = 0; i < n; i++) {
		d[i].addr = FZ_VA(mr, off);
		d[i].len = lens[i];
		d[i].key = FZ_RKEY(mr);
		off += lens[i] + 8;
		sum += lens[i];
	}
	h->rlen = rlen ? rlen : sum;
	return h;
}

/* A pulled SEND whose payload is `len` bytes of filler, not descriptors. */
static void raw_pull(uint32_t psn, uint32_t len, uint32_t rlen)
{
	struct sv_wire_hdr *h = frame(SV_OP_SEND, FZ_QPN_RC, psn, len);

	h->flags = SV_WF_PULL;
	h->rlen = rlen;
}

/* Rings (descriptors with the HELLO) and pulled SENDs. */
static void gen_stream_shm(const char *d)
{
	static const uint8_t others[] = { FZ_FDS_RING, FZ_FDS_SEG_RING, FZ_FDS_ZERO_SEG,
					  FZ_FDS_NULL_PIPE, FZ_FDS_THREE, FZ_FDS_BAD_SIZE,
					  FZ_FDS_NONE };
	static const uint32_t fit[] = { 40, 24 }, one[] = { 64 }, big[] = { 16, 100, 4000 };
	uint32_t many[33];
	char name[64];

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 48);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 1, 1, 16, 200);
	read_req(FZ_QPN_RC, 2, 1, 128, 512);
	atomic_req(FZ_QPN_RC, SV_OP_FETCH_ADD, 3, 1, 64);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 4, 2, 0, 16);      /* MR 2: NAK */
	emit(d, "shm_ops");

	/* descriptors the rings must refuse, then the same requests on the socket */
	for (size_t i = 0; i < sizeof(others); i++) {
		hello_shm(FZ_QPN_RC, others[i]);
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "shm_fds_%u", others[i]);
		emit(d, name);
	}

	/* the UC QP takes rings, never pulls */
	hello_shm(FZ_QPN_UC, FZ_FDS_RING_SEG);
	frame(SV_OP_SEND, FZ_QPN_UC, 0, 30);
	emit(d, "shm_uc");

	/* pulled SENDs: from MR 2 (read from the requester, us), into receive WQEs */
	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 2, fit, 2, 0);
	pulled_send(1, 3, big, 2, 0);
	emit(d, "pull_send");

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 1, one, 2, 0);
	frame(SV_OP_SEND, FZ_QPN_RC, 1, 20);                 /* then an ordinary one */
	emit(d, "pull_then_send");

	/* bad descriptors: a NAK, never a write outside the receive buffer */
	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 2, fit, 2, 100);                      /* lengths do not add up */
	emit(d, "pull_bad_sum");

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	raw_pull(0, 20, 64);                                 /* not whole descriptors */
	emit(d, "pull_bad_len");

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 1, one, 2, 64)->rlen = 0;
	emit(d, "pull_no_rlen");

	for (int i = 0; i < 33; i++)
		many[i] = 1;
	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 33, many, 2, 0);                      /* one more than allowed */
	emit(d, "pull_too_many");

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	{
		struct sv_wire_hdr *h = pulled_send(0, 1, one, 2, 0);
		struct sv_wire_pull *p = (struct sv_wire_pull *)(h + 1);

		p->addr = 0x10;                              /* nothing mapped there */
		p->key = 0x4242;
	}
	emit(d, "pull_unmapped");

	hello_shm(FZ_QPN_RC, FZ_FDS_RING_SEG);
	pulled_send(0, 1, one, 2, 0);
	raw_pull(1, 0, 64);                                  /* an empty descriptor list */
	emit(d, "pull_empty");

	/* a pulled SEND without the HELLO_ACK's PULL (no rings): a protocol error */
	hello(FZ_QPN_RC);
	pulled_send(0, 1, one, 2, 0);
	emit(d, "pull_on_socket");
}

static void gen_stream(const char *d)
{
	lead = FZ_FDS_NONE;
	hello(FZ_QPN_RC);
	emit(d, "hello");

	hello(FZ_QPN_RC);
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 48);
	emit(d, "send");

	hello(FZ_QPN_RC);
	frame(SV_OP_SEND_IMM, FZ_QPN_RC, 0, 10)->imm = 0xdeadbeef;
	frame(SV_OP_SEND, FZ_QPN_RC, 1, 300)->flags = SV_WF_SOLICITED;
	frame(SV_OP_SEND, FZ_QPN_RC, 2, 0);
	emit(d, "send_imm_scatter");

	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
	emit(d, "write");

	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE_IMM, 0, 1, 4000, 100);
	emit(d, "write_imm");

	hello(FZ_QPN_RC);
	read_req(FZ_QPN_RC, 0, 1, 128, 512);
	emit(d, "read_req");

	hello(FZ_QPN_RC);
	atomic_req(FZ_QPN_RC, SV_OP_CMP_SWP, 0, 1, 0);
	emit(d, "cmp_swp");

	hello(FZ_QPN_RC);
	atomic_req(FZ_QPN_RC, SV_OP_FETCH_ADD, 0, 1, 64);
	emit(d, "fetch_add");

	/* every request kind in a row, PSNs in order */
	hello(FZ_QPN_RC);
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 20);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 1, 1, 0, 64);
	read_req(FZ_QPN_RC, 2, 1, 0, 64);
	atomic_req(FZ_QPN_RC, SV_OP_FETCH_ADD, 3, 1, 8);
	atomic_req(FZ_QPN_RC, SV_OP_CMP_SWP, 4, 1, 16);
	write_req(FZ_QPN_RC, SV_OP_WRITE_IMM, 5, 1, 256, 32);
	read_req(FZ_QPN_RC, 2, 1, 0, 64);          /* a duplicate READ: answered again */
	emit(d, "all_ops");

	/* access violations: a NAK, never a write */
	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 2, 0, 16);      /* MR 2 is remote-read only */
	emit(d, "write_readonly_mr");

	hello(FZ_QPN_RC);
	read_req(FZ_QPN_RC, 0, 2, 0, FZ_MR2_LEN);
	emit(d, "read_readonly_mr");

	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 3, 0, 16);      /* MR 3 is in another PD */
	emit(d, "write_other_pd");

	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, FZ_MR1_LEN - 8, 16); /* 8 bytes past the end */
	emit(d, "write_past_end");

	hello(FZ_QPN_RC);
	atomic_req(FZ_QPN_RC, SV_OP_FETCH_ADD, 0, 1, 4);     /* misaligned */
	emit(d, "atomic_misaligned");

	/* a message larger than the first receive WQE: LOC_LEN_ERR / NAK */
	hello(FZ_QPN_RC);
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 5000);
	emit(d, "send_too_long");

	/* a payload large enough for the direct read path (>= 64 KiB) */
	hello(FZ_QPN_RC);
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 1000, 120000);
	emit(d, "write_direct");

	/* out-of-order PSN: dropped (RC), then the expected one */
	hello(FZ_QPN_RC);
	frame(SV_OP_SEND, FZ_QPN_RC, 5, 8);
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 8);
	emit(d, "psn_gap");

	/* UC: sends and writes, no responses */
	hello(FZ_QPN_UC);
	frame(SV_OP_SEND, FZ_QPN_UC, 0, 30);
	write_req(FZ_QPN_UC, SV_OP_WRITE, 1, 1, 512, 64);
	write_req(FZ_QPN_UC, SV_OP_WRITE_IMM, 2, 1, 600, 8);
	emit(d, "uc_ops");

	/* a response on an inbound channel: a protocol error */
	hello(FZ_QPN_RC);
	frame(SV_OP_ACK, FZ_QPN_RC, 0, 0);
	emit(d, "ack_inbound");

	gen_stream_shm(d);
	lead = -1;
}

/* A stranger: it claims to be the QPs' peer (FZ_PEER_QPN, the harness's
 * real one) but is not; nothing it sends may change anything.  The first
 * byte: descriptors (fuzz.h) and whether the socket carries them. */
static void stranger_hello(uint32_t qp, uint8_t fds)
{
	hello(qp);
	prefix = fds;
}

static void gen_stranger(const char *d)
{
	static const uint8_t socks[] = { 0, FZ_FOREIGN_UNIX };
	char name[64];

	for (size_t i = 0; i < sizeof(socks); i++) {
		const char *u = socks[i] ? "_unix" : "";

		/* the selftest's seed (tests/fuzz/run.sh): a WRITE into MR 1 */
		stranger_hello(FZ_QPN_RC, socks[i]);
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "hello_write%s", u);
		emit(d, name);

		stranger_hello(FZ_QPN_RC, socks[i]);
		read_req(FZ_QPN_RC, 0, 1, 128, 512);
		atomic_req(FZ_QPN_RC, SV_OP_CMP_SWP, 1, 1, 0);
		snprintf(name, sizeof(name), "hello_read_atomic%s", u);
		emit(d, name);

		stranger_hello(FZ_QPN_RC, socks[i]);
		frame(SV_OP_SEND, FZ_QPN_RC, 0, 48);
		write_req(FZ_QPN_RC, SV_OP_WRITE_IMM, 1, 1, 4000, 100);
		snprintf(name, sizeof(name), "hello_send%s", u);
		emit(d, name);

		stranger_hello(FZ_QPN_UC, socks[i]);
		frame(SV_OP_SEND, FZ_QPN_UC, 0, 30);
		write_req(FZ_QPN_UC, SV_OP_WRITE, 1, 1, 512, 64);
		snprintf(name, sizeof(name), "uc_hello_send%s", u);
		emit(d, name);

		/* questions: guesses, and the nonce of the QP's own channel */
		stranger_hello(FZ_QPN_RC, socks[i]);
		frame(SV_OP_VERIFY, FZ_QPN_RC, 0, 0)->data0 = 0x5eed5eed5eed5eedull;
		frame(SV_OP_VERIFY, FZ_QPN_RC, 0, 0)->data0 = 1;
		frame(SV_OP_VERIFY, FZ_QPN_RC, 0, 0)->data0 = FZ_NONCE_OUT(0);
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "hello_verify%s", u);
		emit(d, name);

		/* an answer to the question about itself, on its own channel */
		stranger_hello(FZ_QPN_RC, socks[i]);
		frame(SV_OP_VERIFY_ACK, FZ_QPN_RC, 0, 0)->data0 = 0x5eed5eed5eed5eedull;
		((struct sv_wire_hdr *)(out + out_len - sizeof(struct sv_wire_hdr)))->imm = 1;
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "hello_verify_ack%s", u);
		emit(d, name);

		/* rings offered, with every set of descriptors */
		for (uint8_t k = FZ_FDS_RING_SEG; k <= FZ_FDS_BAD_SIZE; k++) {
			hello_shm(FZ_QPN_RC, (uint8_t)(k | socks[i]));
			write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
			snprintf(name, sizeof(name), "hello_shm_fds_%u%s", k, u);
			emit(d, name);
		}

		stranger_hello(FZ_QPN_RC, socks[i]);
		hello(FZ_QPN_RC);
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "hello_hello%s", u);
		emit(d, name);

		prefix = socks[i];
		write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
		snprintf(name, sizeof(name), "write_first%s", u);
		emit(d, name);

		/* responses and control frames an inbound channel never takes */
		stranger_hello(FZ_QPN_RC, socks[i]);
		frame(SV_OP_HELLO_ACK, FZ_QPN_RC, 0, 0);
		frame(SV_OP_ACK, FZ_QPN_RC, 0, 0);
		frame(SV_OP_READ_RESP, FZ_QPN_RC, 0, 64);
		snprintf(name, sizeof(name), "hello_responses%s", u);
		emit(d, name);
	}

	/* another peer than the QP's: HELLO_NAK */
	stranger_hello(FZ_QPN_RC, 0);
	((struct sv_wire_hdr *)(out + out_len - sizeof(struct sv_wire_hdr)))->src_qpn = 0x4242;
	write_req(FZ_QPN_RC, SV_OP_WRITE, 0, 1, 16, 200);
	emit(d, "hello_other_peer");
}

static void gen_dgram(const char *d)
{
	struct sv_wire_hdr *h;

	wqe_choice(0);
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 60);
	h->qkey = FZ_QKEY;
	emit(d, "send");

	wqe_choice(0);
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 60);
	h->qkey = FZ_QKEY;
	h->data1 = 0x0100007f;                   /* claims 127.0.0.1: dropped unless the device address */
	emit(d, "send_forged_source");

	wqe_choice(1);                           /* three SGEs, the GRH split over two */
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 1000);
	h->qkey = FZ_QKEY;
	emit(d, "send_scatter");

	wqe_choice(0);
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 100);   /* more than the WQE holds */
	h->qkey = FZ_QKEY;
	emit(d, "send_too_long");

	wqe_choice(0);
	h = frame(SV_OP_SEND_IMM, FZ_QPN_UD, 0, 16);
	h->qkey = FZ_QKEY;
	h->imm = 0xcafe;
	h->flags = SV_WF_GRH | SV_WF_SOLICITED;
	emit(d, "send_imm_grh");

	wqe_choice(4);                           /* a WQE without SGEs */
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 0);
	h->qkey = FZ_QKEY;
	emit(d, "send_empty");

	wqe_choice(2);
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 4096);
	h->qkey = FZ_QKEY;
	emit(d, "send_mtu");

	wqe_choice(0);
	h = frame(SV_OP_SEND, FZ_QPN_UD, 0, 10);
	h->qkey = FZ_QKEY + 1;                   /* Q_Key violation: dropped */
	emit(d, "bad_qkey");

	wqe_choice(0);
	h = frame(SV_OP_WRITE, FZ_QPN_UD, 0, 10);   /* not a datagram opcode */
	h->qkey = FZ_QKEY;
	emit(d, "write");
}

/* Responses: the requests in flight are SEND psn 0, WRITE 1, READ 2 (256
 * bytes), CMP_SWP 3, FETCH_ADD 4, SEND_IMM 5 (fuzz_recv.c). */
static struct sv_wire_hdr *resp(enum sv_op op, uint32_t psn, uint32_t len)
{
	return frame(op, FZ_QPN_RC, psn, len);
}

static void hello_ack(void)
{
	resp(SV_OP_HELLO_ACK, 0, 0)->data1 = 0x1234567890abcdefull;
}

static void gen_resp(const char *d)
{
	hello_ack();
	emit(d, "hello_ack");

	resp(SV_OP_HELLO_NAK, 0, 0);
	emit(d, "hello_nak");

	hello_ack();
	resp(SV_OP_ACK, 0, 0);
	resp(SV_OP_ACK, 1, 0);
	resp(SV_OP_READ_RESP, 2, 256);
	resp(SV_OP_ATOMIC_RESP, 3, 0)->data0 = 1;
	resp(SV_OP_ATOMIC_RESP, 4, 0)->data0 = 42;
	resp(SV_OP_ACK, 5, 0);
	emit(d, "all_done");

	hello_ack();
	resp(SV_OP_ACK, 1, 0);                   /* cumulative: SEND and WRITE */
	resp(SV_OP_ACK, 1, 0);                   /* a duplicate */
	resp(SV_OP_READ_RESP, 2, 256);
	emit(d, "cumulative_ack");

	hello_ack();
	resp(SV_OP_ACK, 5, 0);                   /* past the READ and atomics */
	emit(d, "ack_past_read");

	hello_ack();
	resp(SV_OP_NAK, 0, 0)->imm = SV_NAK_RNR;
	emit(d, "nak_rnr");

	hello_ack();
	resp(SV_OP_ACK, 0, 0);
	resp(SV_OP_NAK, 1, 0)->imm = SV_NAK_REM_ACCESS;
	emit(d, "nak_rem_access");

	hello_ack();
	resp(SV_OP_NAK, 0, 0)->imm = SV_NAK_INV_REQ;
	emit(d, "nak_inv_req");

	hello_ack();
	resp(SV_OP_NAK, 2, 0)->imm = SV_NAK_REM_OP;
	emit(d, "nak_rem_op");

	hello_ack();
	resp(SV_OP_ACK, 1, 0);
	resp(SV_OP_READ_RESP, 2, 100);           /* not the requested length */
	emit(d, "read_resp_short");

	hello_ack();
	resp(SV_OP_ATOMIC_RESP, 2, 0);           /* answers the READ */
	emit(d, "atomic_for_read");

	hello_ack();
	resp(SV_OP_ACK, 9, 0);                   /* nothing was sent with PSN 9 */
	emit(d, "ack_future");

	hello_ack();
	frame(SV_OP_SEND, FZ_QPN_RC, 0, 8);      /* a request on an outbound channel */
	emit(d, "request_outbound");
}

/* ---- CM message streams (fuzz_cm.c): big-endian, cm/wire.h ---- */

#define CM_ACTIVE 1          /* fuzz_cm.c's role bits */
#define CM_UD     2

static void cm_begin(uint8_t role)
{
	prefix = role;
	out_len = out_start = 0;
}

static void cm_msg(uint8_t type, const void *body, size_t len)
{
	struct cmw_hdr h = { .magic = htonl(CMW_MAGIC), .version = CMW_VERSION, .type = type,
			     .body_len = htons((uint16_t)len) };

	memcpy(out + out_len, &h, sizeof(h));
	memcpy(out + out_len + sizeof(h), body, len);
	out_len += sizeof(h) + len;
}

/* Written as they are: no frame headers to encode. */
static void cm_emit(const char *dir, const char *name)
{
	emit_raw(dir, name);
}

/* REQ and REP carry the sender's endpoint alike; only its QPN and PSN vary. */
static void cm_ep(struct cmw_endpoint *ep, uint32_t qpn, uint32_t psn)
{
	ep->qpn = htonl(qpn);
	ep->psn = htonl(psn);
	ep->qkey = htonl(RDMA_UDP_QKEY);
	ep->lid = htons(1);
	ep->mtu = 5;
	ep->port = 1;
}

static void cm_req(uint16_t ps, uint8_t pdata_len)
{
	struct cmw_req r;

	memset(&r, 0, sizeof(r));
	cm_ep(&r.ep, 0x123456, 77);
	r.conn.responder_resources = 4;
	r.conn.initiator_depth = 4;
	r.conn.retry_count = 7;
	r.conn.rnr_retry_count = 7;
	r.conn.pdata_len = pdata_len;
	r.port_space = htons(ps);
	r.qp_type = ps == RDMA_PS_UDP ? 8 : 2;
	memset(r.pdata, 0x77, sizeof(r.pdata));
	cm_msg(CMW_REQ, &r, sizeof(r));
}

static void cm_rep(uint32_t status, uint8_t pdata_len)
{
	struct cmw_rep r;

	memset(&r, 0, sizeof(r));
	cm_ep(&r.ep, 0x654321, 99);
	r.conn.responder_resources = 2;
	r.conn.initiator_depth = 2;
	r.conn.pdata_len = pdata_len;
	r.status = htonl(status);
	cm_msg(CMW_REP, &r, sizeof(r));
}

static void cm_rej(uint32_t reason, uint8_t pdata_len)
{
	struct cmw_rej r;

	memset(&r, 0, sizeof(r));
	r.reason = htonl(reason);
	r.pdata_len = pdata_len;
	cm_msg(CMW_REJ, &r, sizeof(r));
}

static void cm_empty(uint8_t type)
{
	struct cmw_empty e = { 0 };

	cm_msg(type, &e, sizeof(e));
}

static void gen_cm(const char *d)
{
	struct cmw_mra mra = { .service_timeout_ms = htonl(100) };
	uint8_t junk[300];

	/* passive: what reaches a listener */
	cm_begin(0);
	cm_req(RDMA_PS_TCP, 8);
	cm_emit(d, "req");

	cm_begin(0);
	cm_req(RDMA_PS_TCP, 255);                /* more private data than a REQ holds */
	cm_empty(CMW_RTU);
	cm_empty(CMW_DREQ);
	cm_emit(d, "req_rtu_dreq");

	cm_begin(0);
	cm_req(RDMA_PS_UDP, 0);                  /* another port space: refused */
	cm_emit(d, "req_ud_to_rc");

	cm_begin(0);
	cm_req(RDMA_PS_TCP, 0);
	cm_req(RDMA_PS_TCP, 0);                  /* a second REQ */
	cm_rej(CMW_REJ_CONSUMER_DEFINED, 200);
	cm_emit(d, "req_req_rej");

	cm_begin(0);
	cm_empty(CMW_DREQ);                      /* before any REQ */
	cm_emit(d, "dreq_first");

	cm_begin(0);
	cm_msg(CMW_REQ, junk, 10);               /* a REQ of the wrong size */
	cm_emit(d, "req_short");

	cm_begin(0);
	memset(junk, 0xff, sizeof(junk));
	memcpy(out, junk, 12);                   /* no magic */
	out_len = 12;
	cm_emit(d, "bad_magic");

	/* active: answers to our REQ */
	cm_begin(CM_ACTIVE);
	cm_msg(CMW_MRA, &mra, sizeof(mra));
	cm_rep(0, 16);
	cm_empty(CMW_DREQ);
	cm_emit(d, "mra_rep_dreq");

	cm_begin(CM_ACTIVE);
	cm_rep(0, 255);
	cm_empty(CMW_DREP);
	cm_emit(d, "rep");

	cm_begin(CM_ACTIVE);
	cm_rej(CMW_REJ_CONSUMER_DEFINED, 16);
	cm_emit(d, "rej");

	cm_begin(CM_ACTIVE);
	cm_rej(CMW_REJ_TIMEOUT, 255);            /* pdata_len past the body */
	cm_emit(d, "rej_long");

	cm_begin(CM_ACTIVE);
	cm_req(RDMA_PS_TCP, 0);                  /* a REQ to a connecting id */
	cm_empty(CMW_RTU);
	cm_emit(d, "req_to_active");

	cm_begin(CM_ACTIVE | CM_UD);
	cm_rep(CMW_SIDR_SUCCESS, 8);
	cm_emit(d, "ud_rep");

	cm_begin(CM_ACTIVE | CM_UD);
	cm_rep(CMW_SIDR_NO_QP, 0);
	cm_emit(d, "ud_rep_no_qp");

	cm_begin(CM_ACTIVE | CM_UD);
	cm_msg(CMW_MRA, &mra, sizeof(mra));
	cm_rej(CMW_REJ_INVALID_SERVICE_ID, 0);
	cm_emit(d, "ud_mra_rej");
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: %s STREAM_DIR DGRAM_DIR RESP_DIR [STRANGER_DIR [CM_DIR]]\n",
			argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (mkdir(argv[i], 0755) && errno != EEXIST) {
			fprintf(stderr, "gen_corpus: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	gen_stream(argv[1]);
	gen_dgram(argv[2]);
	gen_resp(argv[3]);
	if (argc >= 5)
		gen_stranger(argv[4]);
	if (argc >= 6)
		gen_cm(argv[5]);
	return 0;
}
