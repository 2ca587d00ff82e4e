/*
 * The softverbs wire protocol: one fixed-size header per frame, then `len`
 * payload bytes.  The same frames travel over TCP streams, shared-memory byte
 * rings and UDP datagrams (UD).  All multi-byte fields are little-endian on
 * the wire; the accessors in this header are the only place that converts.
 * docs/wire-format.md describes each frame.
 */
#ifndef SV_WIRE_PROTO_H
#define SV_WIRE_PROTO_H

#include <assert.h>
#include <endian.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define SV_WIRE_MAGIC   0x5376   /* "Sv" */
#define SV_WIRE_VERSION 3   /* 3: a channel proves its peer (VERIFY) before HELLO_ACK */

enum sv_op {
	/* requests: requester -> responder */
	SV_OP_SEND = 1,
	SV_OP_SEND_IMM,
	SV_OP_WRITE,
	SV_OP_WRITE_IMM,
	SV_OP_READ_REQ,
	SV_OP_CMP_SWP,
	SV_OP_FETCH_ADD,
	/* responses: responder -> requester */
	SV_OP_ACK,
	SV_OP_NAK,
	SV_OP_READ_RESP,
	SV_OP_ATOMIC_RESP,
	/* connection management of the channel itself */
	SV_OP_HELLO,
	SV_OP_HELLO_ACK,
	SV_OP_HELLO_NAK,
	SV_OP_VERIFY,        /* on our outbound channel: did you open the channel
			      * into us whose HELLO carried nonce data0? */
	SV_OP_VERIFY_ACK,    /* the answer, on the same channel: imm 1 yes, 0 no */
	SV_OP_SEND_INV,      /* SEND with invalidate: imm is the rkey to invalidate */
	SV_OP_ATOMIC_WRITE,  /* 8 bytes (data0) stored at va in one access; ACKed as a WRITE */
	/* a SEND (with immediate) the requester placed itself in the receive
	 * it takes (rings only, transport/shm/mirror.h): no payload, no PSN,
	 * no ACK; psn is the receive's index, rlen the message's bytes */
	SV_OP_PLACED,
	SV_OP_PLACED_IMM,
	/* a TCP channel's datagram lane (engine/lane.c), offered by its
	 * connecting end and answered: imm the sender's UDP port (0: none),
	 * data0 the secret datagrams to it carry */
	SV_OP_LANE,
	SV_OP_LANE_ACK,
	SV_OP_MAX
};

/* A HELLO_ACK that switches to no rings says in imm what its sender takes:
 * LANE frames (SV_HELLO_LANES), if it can. */
#define SV_HELLO_LANES 1u

/* Header flags */
enum {
	SV_WF_SOLICITED = 1 << 0,
	SV_WF_GRH       = 1 << 1,   /* UD: sender addressed by GID */
	SV_WF_SHM       = 1 << 2,   /* HELLO: rings offered; HELLO_ACK: accepted */
	SV_WF_PULL      = 1 << 3,   /* HELLO_ACK: the responder can read us; SEND: the
				     * payload is (addr, len) pairs to pull, rlen bytes */
	SV_WF_ACK       = 1 << 4,   /* RC request: ack_psn acknowledges the reverse
				     * direction's requests (a piggybacked ACK) */
	SV_WF_TURN      = 1 << 5,   /* HELLO: the sender's end of this channel also
				     * takes requests and answers them on it */
	SV_WF_LONE      = 1 << 5,   /* RC request: the requester has nothing else
				     * in flight or queued (TURN is HELLO's) */
	SV_WF_SHORT     = 1 << 6,   /* va, data0 and data1 are 0 and not sent: the
				     * header is SV_WIRE_SHORT_LEN bytes (rings only) */
	SV_WF_CRC       = 1 << 7,   /* a CRC32C of the frame follows its payload (4
				     * bytes, not in len): fault injection only */
};

/* Scatter/gather entries per request: the device's max_sge, and the most
 * descriptors a pulled SEND may carry. */
#define SV_WIRE_MAX_SGE 32
#define SV_WIRE_MTU 4096        /* path MTU: the largest UD payload */

/* A pulled SEND's payload: where the message lies in the requester. */
struct sv_wire_pull {
	uint64_t addr;
	uint32_t len;
	uint32_t key;                /* the requester's lkey: lets the responder map it */
};
static_assert(sizeof(struct sv_wire_pull) == 16, "pull descriptor is 16 bytes");

/* NAK syndromes (in `imm` of a NAK frame) */
enum sv_nak {
	SV_NAK_RNR = 1,          /* no receive WQE; retry after data0 usec */
	SV_NAK_INV_REQ,          /* invalid request -> IBV_WC_REM_INV_REQ_ERR */
	SV_NAK_REM_ACCESS,       /* rkey/rights/bounds -> IBV_WC_REM_ACCESS_ERR */
	SV_NAK_REM_OP,           /* responder-side failure -> IBV_WC_REM_OP_ERR */
	SV_NAK_SEQ,              /* PSN sequence error: requests from psn were lost
				  * (lossy channels only), retransmit from it */
};

struct sv_wire_hdr {
	uint16_t magic;
	uint8_t  version;
	uint8_t  opcode;
	uint8_t  flags;
	uint8_t  ack_tmo;   /* RC request: the requester's ack timeout (IB encoding) */
	uint8_t  pad[2];
	uint32_t dst_qpn;
	uint32_t src_qpn;
	uint32_t psn;
	uint32_t len;       /* payload bytes following this header */
	uint32_t imm;       /* immediate data (as given, big-endian) or NAK syndrome */
	uint32_t rkey;
	union {
		uint32_t qkey;      /* UD */
		uint32_t ack_psn;   /* RC request with SV_WF_ACK */
	};
	uint32_t rlen;      /* READ_REQ: bytes to read */
	uint64_t va;        /* remote address (WRITE/READ/atomics) */
	uint64_t data0;     /* atomic: swap or add; ATOMIC_RESP: original; NAK RNR: usec;
			     * HELLO, VERIFY, VERIFY_ACK: the channel's nonce */
	uint64_t data1;     /* atomic: compare; UD: sender address */
};
static_assert(sizeof(struct sv_wire_hdr) == 64, "wire header is 64 bytes");

/* A short header (SV_WF_SHORT) ends before `va`: with 8 bytes of payload and
 * a ring record's word it fits one cache line (transport/shm/ring.h). */
#define SV_WIRE_SHORT_LEN 40u
static_assert(offsetof(struct sv_wire_hdr, va) == SV_WIRE_SHORT_LEN, "short header ends at va");

/* Bytes of the header on the wire, once its first 8 (up to flags) are in. */
static inline size_t sv_wire_hdr_len(const struct sv_wire_hdr *h)
{
	return (h->flags & SV_WF_SHORT) ? SV_WIRE_SHORT_LEN : sizeof(*h);
}

/* Send the header short (its tail is zero)?  Either byte order. */
static inline bool sv_wire_can_short(const struct sv_wire_hdr *h)
{
	return !h->va && !h->data0 && !h->data1;
}

/* Frame kinds, for the opcode table */
enum {
	SV_OPF_REQ      = 1 << 0,  /* a request that carries a PSN */
	SV_OPF_RESP     = 1 << 1,  /* a response */
	SV_OPF_PAYLOAD  = 1 << 2,  /* may carry payload bytes */
	SV_OPF_RECV     = 1 << 3,  /* consumes a receive WQE at the responder */
	SV_OPF_IMM      = 1 << 4,  /* carries immediate data */
	SV_OPF_RKEY     = 1 << 5,  /* targets remote memory through rkey/va */
	SV_OPF_ATOMIC   = 1 << 6,
	SV_OPF_CTRL     = 1 << 7,  /* channel management */
	SV_OPF_INV      = 1 << 8,  /* carries an rkey the responder invalidates (in imm) */
	SV_OPF_PLACED   = 1 << 9,  /* its payload is already in the receive it takes */
};

/* Which QP types may use an opcode */
enum { SV_QPT_RC = 1 << 0, SV_QPT_UC = 1 << 1, SV_QPT_UD = 1 << 2 };

struct sv_opinfo {
	const char *name;
	uint32_t flags;
	uint32_t qpts;
};

extern const struct sv_opinfo sv_opinfo[SV_OP_MAX];

static inline const struct sv_opinfo *sv_op_info(unsigned op)
{
	return op > 0 && op < SV_OP_MAX ? &sv_opinfo[op] : NULL;
}

/* Byte order accessors: the wire is little-endian. */
#define SV_WIRE_GET32(v) le32toh(v)
#define SV_WIRE_PUT32(v) htole32(v)
#define SV_WIRE_GET64(v) le64toh(v)
#define SV_WIRE_PUT64(v) htole64(v)

/* Convert a received header to host order in place; false if malformed. */
bool sv_wire_decode(struct sv_wire_hdr *h);
/* Convert a header in host order to wire order in place. */
void sv_wire_encode(struct sv_wire_hdr *h);

/* Largest payload a single frame may carry (the device's max_msg_sz). */
#define SV_MAX_MSG (1u << 31)

#endif
