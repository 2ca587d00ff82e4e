/*
 * What a process using softverbs publishes about itself, for `softverbs
 * status` and `softverbs stat` (docs/observability.md): the layout of one
 * shared-memory file per process, read by the CLI, written by the library.
 * Header-only and self-contained (system headers only), since both sides
 * include it; every struct is asserted, and SVST_VERSION changes whenever
 * a byte of it does.
 *
 * The file: `SVST_DIR_FMT/<pid>` (a directory per uid, mode 0700; the file
 * 0600), a struct svst_file at offset 0, then up to max_slots records of
 * slot_size bytes from hdr_size on.  The file is sized for every slot but
 * sparse: pages are allocated (fallocate) SVST_CHUNK_SLOTS at a time as
 * the high-water mark grows, so memory follows the objects that exist.
 * The process holds a shared flock on it for its whole life: a file whose
 * lock can be taken belongs to a dead process.
 *
 * Each record begins with a struct svst_rec.  Its descriptive fields
 * (kind, numbers, states, peer, last error) are written under a seqlock:
 * `seq` (the slot's first word) is odd while the writer changes them, and
 * a reader copies the slot and keeps the copy only if `seq` was even and
 * unchanged around it (src/cli/status_read.c).  The
 * live fields (counters, queue indices, PSNs) are single aligned words the
 * owner stores with plain writes (a QP's, within 100 ms of its traffic:
 * engine/stat.h); a reader takes them as they are.  The reader never
 * writes: it takes no lock the process needs.
 */
#ifndef SV_STATUS_FORMAT_H
#define SV_STATUS_FORMAT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define SVST_MAGIC       0x5355544154535653ull   /* "SVSTATUS", little-endian */
#define SVST_VERSION     2
#define SVST_DIR_FMT     "/dev/shm/softverbs-%u"  /* the uid's directory */
#define SVST_DIR_PREFIX  "softverbs-"             /* of those, in /dev/shm */
#define SVST_HDR_SIZE    4096u
#define SVST_SLOT_SIZE   1024u
#define SVST_MAX_SLOTS   65536u                   /* 64 MiB of address space, sparse */
#define SVST_CHUNK_SLOTS 64u                      /* allocated together: 64 KiB */

enum svst_kind {
	SVST_FREE,
	SVST_QP,
	SVST_CQ,
	SVST_SRQ,
	SVST_MR,
	SVST_NKINDS
};

/* Operations counted, sent and received (the wire's opcodes, grouped;
 * DIRECT: one-sided operations done in the peer's memory without a frame). */
enum svst_op {
	SVST_OP_SEND,
	SVST_OP_SEND_IMM,
	SVST_OP_SEND_INV,
	SVST_OP_WRITE,
	SVST_OP_WRITE_IMM,
	SVST_OP_READ_REQ,
	SVST_OP_READ_RESP,
	SVST_OP_CMP_SWP,
	SVST_OP_FETCH_ADD,
	SVST_OP_ATOMIC_RESP,
	SVST_OP_ATOMIC_WRITE,
	SVST_OP_ACK,
	SVST_OP_NAK,
	SVST_OP_CTRL,                /* HELLO, VERIFY and their answers */
	SVST_NOPS
};

/* The outbound link's states, and what an inbound channel is. */
enum svst_chan_state {
	SVST_CHAN_NONE,
	SVST_CHAN_CONNECTING,
	SVST_CHAN_HELLO,
	SVST_CHAN_UP,
	SVST_CHAN_BACKOFF,
	SVST_CHAN_IDLE,
	SVST_CHAN_NSTATES
};

struct svst_file {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;           /* where slot 0 begins */
	uint32_t slot_size;
	uint32_t max_slots;
	uint32_t pid;
	uint32_t uid;
	uint64_t start_ns;           /* CLOCK_REALTIME when published */
	char comm[16];
	char device[16];
	uint32_t addr;               /* the device's IPv4 address, network order */
	uint32_t hwm;                /* slots [0, hwm) may be in use (release-stored) */
	uint32_t unshown[SVST_NKINDS];   /* objects that got no slot (all taken) */
	uint8_t pad[SVST_HDR_SIZE - 100];
};
static_assert(offsetof(struct svst_file, hwm) == 76, "svst_file layout");
static_assert(sizeof(struct svst_file) == SVST_HDR_SIZE, "svst_file fills its header");

struct svst_rec {
	uint32_t seq;                /* odd: being written */
	uint16_t kind;               /* enum svst_kind */
	uint16_t pad;
	uint32_t gen;                /* the slot's allocations: a new object, a new gen */
	uint32_t pad2;
};
static_assert(sizeof(struct svst_rec) == 16, "svst_rec is 16 bytes");

struct svst_ctr {
	uint64_t msgs;
	uint64_t bytes;              /* payload */
};

/* A queue's free-running indices as its owner last stored them. */
struct svst_q {
	uint32_t posted;             /* work requests posted (tail) */
	uint32_t done;               /* ... taken or completed (head) */
};

struct svst_chan {
	char kind[8];                /* "shm", "unix", "tcp", "udp" ("" none) */
	uint32_t state;              /* enum svst_chan_state */
	uint32_t peer_addr;          /* network order */
	uint32_t peer_pid;           /* same host, once known; else 0 */
	uint32_t pad;
};
static_assert(sizeof(struct svst_chan) == 24, "svst_chan layout");

#define SVST_ERR_LEN 256

/* A run of frames (engine/stat.h) touches three cache lines of its QP's
 * record: the line of live words every run updates (64-byte aligned as
 * slots are), its operation's counters, and `direct` for direct runs. */
struct svst_qp {
	struct svst_rec h;
	/* descriptive */
	uint32_t qpn;
	uint32_t type;               /* enum ibv_qp_type */
	uint32_t state;              /* enum ibv_qp_state */
	uint32_t peer_qpn;
	uint32_t pd;
	uint32_t srqn;               /* 0: its own receive queue */
	uint32_t max_send_wr, max_recv_wr;
	struct svst_chan chan[2];    /* [0] outbound (UD: datagrams), [1] inbound */
	char last_err[SVST_ERR_LEN];
	/* live, rare */
	uint64_t retries;            /* transport retries (ACK timeouts) */
	uint64_t rnr_naks_rcvd;
	uint64_t rnr_naks_sent;
	uint64_t err_comps;          /* send completions in error (flushes too) */
	uint64_t direct;             /* of tx, done in the peer's memory */
	uint64_t placed;             /* of tx SENDs, placed in the peer's receive */
	uint64_t lane_tx;            /* datagram copies sent on a TCP channel's lane */
	uint64_t lane_rx;            /* ... taken before the stream brought them */
	uint8_t pad[32];
	/* live, every frame: one cache line */
	uint32_t sq_psn;             /* the next request's PSN */
	uint32_t rq_psn;             /* the expected PSN */
	struct svst_q sq, rq;
	uint64_t chan_tx[2];         /* frames sent on chan[i] */
	uint64_t chan_rx[2];         /* ... received */
	uint64_t pad2;
	/* live, per operation */
	struct svst_ctr tx[SVST_NOPS], rx[SVST_NOPS];
};
static_assert(offsetof(struct svst_qp, chan) == 48, "svst_qp layout");
static_assert(offsetof(struct svst_qp, retries) == 96 + SVST_ERR_LEN, "svst_qp layout");
static_assert(offsetof(struct svst_qp, sq_psn) == 448, "svst_qp: the hot line is aligned");
static_assert(offsetof(struct svst_qp, tx) == 512, "svst_qp layout");
static_assert(sizeof(struct svst_qp) == 960, "svst_qp layout");
static_assert(sizeof(struct svst_qp) <= SVST_SLOT_SIZE, "a QP fits a slot");

struct svst_cq {
	struct svst_rec h;
	uint32_t cqe;
	uint32_t has_channel;        /* a completion channel */
	/* live */
	uint32_t pushed;             /* completions added (tail) */
	uint32_t polled;             /* ... taken (head) */
	uint64_t err_comps;          /* completions in error */
	uint64_t overruns;           /* completions lost: the CQ was full */
};
static_assert(sizeof(struct svst_cq) == 48, "svst_cq layout");

struct svst_srq {
	struct svst_rec h;
	uint32_t srqn;
	uint32_t max_wr;
	uint32_t limit;
	uint32_t xrc;
	struct svst_q rq;            /* live */
};
static_assert(sizeof(struct svst_srq) == 40, "svst_srq layout");

struct svst_mr {
	struct svst_rec h;
	uint64_t addr;
	uint64_t length;
	uint32_t access;             /* enum ibv_access_flags */
	uint32_t lkey, rkey;
	uint32_t pd;
};
static_assert(sizeof(struct svst_mr) == 48, "svst_mr layout");

/* ---- the seqlock's writer (the reader: src/cli/status_read.c) ---- */

/* Writer (the owner, one thread at a time per record; never per message).
 * The acquire keeps the record's stores after the odd sequence. */
static inline void svst_write_begin(struct svst_rec *r)
{
	__atomic_fetch_add(&r->seq, 1, __ATOMIC_ACQUIRE);
}

static inline void svst_write_end(struct svst_rec *r)
{
	__atomic_store_n(&r->seq, r->seq + 1, __ATOMIC_RELEASE);
}

static inline size_t svst_slot_off(uint32_t slot)
{
	return SVST_HDR_SIZE + (size_t)slot * SVST_SLOT_SIZE;
}

#endif
