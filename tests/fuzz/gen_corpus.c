/*
 * Writes the fuzzers' seed corpus: valid frames of every kind, with the
 * tokens of fuzz.h for QP numbers, rkeys and addresses.
 *
 *   gen_corpus STREAM_DIR DGRAM_DIR RESP_DIR
 *
 * STREAM_DIR gets byte streams for fuzz_stream (a HELLO, then requests),
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
#include <sys/stat.h>

#include "wire/proto.h"

#include "fuzz.h"

static uint8_t out[256 * 1024];
static size_t out_len;
static size_t out_start;        /* where the frames start (8: after a prefix byte, aligned) */
static int prefix = -1;         /* datagram seeds: the WQE-choice byte, written first */

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

static void emit(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	encode_all();
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f && prefix >= 0)
		fputc(prefix, f);
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

static void hello(uint32_t qp)
{
	struct sv_wire_hdr *h = frame(SV_OP_HELLO, qp, 0, 0);

	h->data1 = 0x1234567890abcdefull;      /* host identity */
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

static void gen_stream(const char *d)
{
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

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s STREAM_DIR DGRAM_DIR RESP_DIR\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < 4; i++)
		if (mkdir(argv[i], 0755) && errno != EEXIST) {
			fprintf(stderr, "gen_corpus: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
	gen_stream(argv[1]);
	gen_dgram(argv[2]);
	gen_resp(argv[3]);
	return 0;
}
