/*
 * softverbs internal object model.
 *
 * Every verbs object embeds the public rdma-core struct first and is reached
 * from it with one to_*() helper, as providers do.  Locking rules:
 *   - qp->lock guards the QP's state, its send and receive queues and its
 *     channels' transmit/receive machines.  Taken by the application (post_*,
 *     modify) and by the progress thread (frames arriving, timers).  A
 *     lock whose unlock is a plain store (util/qlock.h).
 *   - cq->lock guards the completion ring; taken inside qp->lock.  A spin
 *     lock (util/spin.h): held for a few stores, never across a block.
 *   - srq->lock guards the shared receive queue; taken inside qp->lock.
 *   - The MR table has its own rwlock (see mr.c); taken innermost.
 *   - The node lock (transport/node.c) guards QPN tables and port groups;
 *     never held while taking a QP lock.
 */
#ifndef SV_VERBS_SV_H
#define SV_VERBS_SV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/uio.h>

#include "util/evfd.h"
#include "util/list.h"
#include "util/qlock.h"
#include "util/spin.h"
#include "util/time.h"
#include "wire/proto.h"

#define SV_DEVICE_NAME    "softverbs0"
#define SV_DEVICE_DEV_NAME "uverbs_softverbs0"  /* /dev/infiniband/<this> */
#define SV_VENDOR_ID      0x5356      /* not Mellanox, Amazon or Intel */
#define SV_VENDOR_PART_ID 1
#define SV_MAX_SGE        SV_WIRE_MAX_SGE
#define SV_MAX_INLINE     512
#define SV_MAX_QP_WR      16384
#define SV_MAX_CQE        (1 << 22)
#define SV_MAX_RD_ATOM    28
#define SV_MTU            SV_WIRE_MTU
#define SV_UD_GRH_LEN     40
/* Multicast groups one UD QP may join (each costs a descriptor); any QP may
 * attach to a group.  Members are reached on the same host only. */
#define SV_MAX_MCAST_GRP  1024
#define SV_MAX_QP         (1 << 16)
/* A controlled Q_Key: only CAP_NET_RAW sets it on a QP; a send naming one uses the QP's own. */
#define SV_QKEY_CONTROLLED 0x80000000u
#define SV_PKEY_DEFAULT   0xffff
/* What ODP MRs serve, per transport (query_device_ex; verbs/mr.c). */
#define SV_ODP_UD (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV)
#define SV_ODP_UC (SV_ODP_UD | IBV_ODP_SUPPORT_WRITE)
#define SV_ODP_RC (SV_ODP_UC | IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)
#define SV_ODP_XRC (SV_ODP_RC & ~IBV_ODP_SUPPORT_RECV)   /* receives are an SRQ's */

struct sv_node;
struct sv_conn;
struct sv_dm;
/* Records in the status file (status/format.h): never NULL once created. */
struct svst_qp;
struct svst_cq;
struct svst_srq;
struct svst_mr;
struct svst_q;

struct sv_device {
	struct ibv_device ibdev;
	void *provider_ops;     /* libmlx5/libefa read this; NULL = not theirs */
};

/* Async events queued for ibv_get_async_event. */
struct sv_async_ev {
	struct sv_list link;
	struct ibv_async_event ev;
};

struct sv_context {
	struct verbs_context vctx;
	struct sv_node *node;
	uint64_t dev_ctx;            /* its cmd_fd's inode: shared by imported contexts */
	pid_t pid;                   /* that opened it (a forked child's copy is no device context) */
	struct sv_list link;         /* the process's contexts (verbs/context.c) */
	pthread_mutex_t async_lock;
	struct sv_list async_q;      /* of sv_async_ev */
	struct sv_evfd async_ev;     /* == ibv_context.async_fd, readable while queued */
};

struct sv_pd {
	struct ibv_pd ibpd;
	uint32_t id;                 /* process-unique, published with MRs; a parent
				      * domain has its protection domain's */
	int refcnt;                  /* MRs, QPs, SRQs, AHs, parent domains using it */
	bool imported;               /* ibv_import_pd's view of another context's */
	struct sv_list link;         /* the process's PDs, to import (verbs/pd.c) */
	/* a parent domain (ibv_alloc_parent_domain(3)): interchangeable with
	 * `protection`, whose id it has; QP buffers come from its allocator */
	struct sv_pd *protection;
	struct sv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
};

struct sv_td {
	struct ibv_td ibtd;
	int refcnt;                  /* parent domains using it */
};

/* What a parent domain's allocator is asked for (resource_type: no driver
 * id in the upper 32 bits, ours below). */
enum sv_pd_resource {
	SV_RES_QP_SQ = 1,
	SV_RES_QP_RQ = 2,
};
/* A zeroed buffer for an object of `pd` (NULL: none): its parent domain's
 * allocator if it has one, else calloc.  *owner says which (the parent
 * domain, or NULL), for sv_pd_buf_free. */
void *sv_pd_buf_alloc(struct ibv_pd *pd, size_t size, enum sv_pd_resource type,
		      struct ibv_pd **owner);
void sv_pd_buf_free(struct ibv_pd *owner, void *buf, enum sv_pd_resource type);
struct ibv_pd *sv_alloc_parent_domain(struct ibv_context *ctx,
				      struct ibv_parent_domain_init_attr *attr);
struct ibv_td *sv_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr);
int sv_dealloc_td(struct ibv_td *td);

/* An entry of the key table (verbs/mr.c): an MR, or a memory window's
 * view of the MR it is bound to (then `mw` is set). */
struct sv_mr {
	struct ibv_mr ibmr;
	uint8_t *base;               /* its bytes here: ibmr.addr, but a DM MR's is NULL */
	struct sv_dm *dm;            /* registered on device memory (verbs/dm.c) */
	unsigned int access;
	uint64_t iova;               /* address the keys are valid for */
	uint32_t index;              /* slot in the MR table */
	struct sv_mrmap *share;      /* peers may map it (transport/shm/mrmap.h) */
	struct sv_mw *mw;            /* this entry is that window's */
	uint32_t windows;            /* windows bound to this MR */
	bool imported;               /* ibv_import_mr's view: not in the table */
	struct svst_mr *st;          /* its status record (MRs; NULL for windows, imports) */
};

/* Memory windows (verbs/mw.c), in the IB spec's states (10.6.7): a type 2
 * window goes back to FREE when invalidated. */
enum sv_mw_state {
	SV_MW_FREE,                  /* allocated, not bound: its key reaches nothing */
	SV_MW_VALID,                 /* bound to an MR */
	SV_MW_NSTATES
};

struct sv_mw {
	struct ibv_mw ibmw;
	struct sv_mr win;            /* its key table entry: the window's range and rights */
	enum sv_mw_state state;
	struct sv_mr *mr;            /* bound to, while VALID */
	uint32_t qpn;                /* type 2: the QP it is bound to */
};

struct sv_comp_channel {
	struct ibv_comp_channel ibch;
	pthread_mutex_t lock;
	struct sv_list fired;        /* CQs with an undelivered event */
	struct sv_evfd ev;           /* == ibch.fd: readable while fired is not empty,
				      * or when a same-host peer woke us directly */
	struct sv_list cqs;          /* CQs using it (cq->chan_link), under lock */
	uint64_t wake_id;            /* unique in the process: peers keep one copy of ev.fd per id */
};

/* CQ: a ring of work completions.  Producers: QP engines; consumer: poll. */
struct sv_cq {
	struct ibv_cq_ex ibcq;       /* its prefix is a struct ibv_cq */
	struct sv_spin lock;         /* never held across a block or a sleep */
	struct ibv_wc *ring;
	uint64_t *ts;                /* completion timestamps, parallel to ring */
	uint32_t size;               /* ring slots (sv_ring_slots(cqe)) */
	uint32_t head, tail;         /* consume at head, produce at tail */
	bool armed, armed_solicited;
	bool overrun;
	struct ibv_wc lost;          /* where sv_cq_slot puts one that finds the CQ full */
	bool event_pending;          /* on channel->fired */
	struct sv_list fired_link;
	struct sv_list chan_link;    /* on channel->cqs */
	uint32_t wc_flags;           /* cq_ex: requested fields */
	struct ibv_wc cur;           /* cq_ex: entry being read */
	uint64_t cur_ts;
	/* cq_ex: entries taken by start_poll/next_poll, read without the lock
	 * (the application may post work between start_poll and end_poll) */
	struct ibv_wc batch[16];
	uint64_t batch_ts[16];
	uint32_t batch_n, batch_i;
	int refcnt;                  /* QPs using it */
	struct ibv_pd *parent_domain;    /* created with one (IBV_CQ_INIT_ATTR_MASK_PD) */
	int drive_fd;                /* epoll set of channels completing here */
	int drive_socks;             /* sockets in it: 0 spares pollers the syscall */
	int dgram_socks;             /* of drive_socks, port groups' UDP sockets (UD QPs) */
	uint32_t dgram_polls;        /* polls that read UD rings without asking epoll */
	uint32_t polls;              /* polls, to stamp last_poll_ns now and then */
	uint32_t posts;              /* posts to its QPs, to stamp the segment (drive.c) */
	uint64_t last_poll_ns;       /* an application thread polled it (0: went to sleep) */
	pthread_mutex_t drive_lock;  /* guards changes to rings[], scan[], socks[]; spinning */
	struct sv_conn **rings;      /* ring channels completing here */
	uint32_t nrings, rings_cap;
	/* of them, those a poll looks at; the others are on the board
	 * (transport/shm/board.h), where a poll finds those with work */
	struct sv_conn **scan;
	uint32_t nscan, scan_cap;
	uint32_t board_cursor;       /* where the next poll starts reading the board */
	bool rings_armed;            /* their writers ring: a thread sleeps for us (drive.c) */
	uint32_t drive_next;         /* where the next poll starts looking (fairness) */
	/* TCP channels completing here.  While a poller spins on the CQ
	 * (its last poll found nothing) they are its alone: the progress
	 * thread is not woken for their input (engine/drive.c). */
	struct sv_conn **socks;
	uint32_t nsocks, socks_cap;
	bool spinning;
	uint32_t spin_wander;        /* polls left that neither start nor keep a spin (drive.c) */
	int sleepers;                /* threads asleep for its event that took them (drive_lock) */
	int sleep_pins;              /* sleepers holding a pointer to it (comp_channel.c) */
	struct sv_conn *hot;         /* the one a spinning poller reads first (drive_lock) */
	bool hot_out;                /* ... and its socket is out of drive_fd (drive_lock) */
	uint32_t hot_polls;          /* polls that read it without asking epoll */
	uint32_t hot_steady;         /* polls that read it since it became hot */
	bool acks_held;              /* a channel here may hold an ACK (engine/xmit.c) */
	bool found;                  /* the last poll found completions (drive.c) */
	struct sv_list spin_link;    /* node's spinning CQs (node lock) */
	uint32_t events_reported;    /* completion events handed out */
	uint32_t async_reported;
	struct svst_cq *st;          /* its status record */
};

struct sv_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* A receive work request as posted (RQ and SRQ). */
struct sv_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	struct sv_sge sge[];
};

/*
 * Rings (receive and send queues, CQs) are indexed by free-running 32-bit
 * counters, so they have a power-of-two number of slots: a counter that
 * wraps at 2^32 then stays on the next slot (and a mask is cheaper than a
 * division).  How many entries a ring takes is its own limit (max_wr, cqe).
 */
static inline uint32_t sv_ring_slots(uint32_t n)
{
	uint32_t s = 1;

	while (s < n)
		s <<= 1;
	return s;
}

/* A ring of receive WQEs with a fixed stride. */
struct sv_rq {
	uint8_t *buf;
	struct ibv_pd *buf_pd;       /* its parent domain's allocator gave buf (else NULL) */
	uint32_t max_wr, max_sge, stride;
	uint32_t mask;               /* slots - 1 */
	uint32_t head, tail;         /* consume at head, post at tail (free-running) */
	struct svst_q *st;           /* its owner's status record's copy of them */
};

struct sv_srq {
	struct ibv_srq ibsrq;
	pthread_mutex_t lock;
	struct sv_rq rq;
	uint32_t limit;              /* armed when non-zero */
	uint32_t srq_num;
	int refcnt;
	uint32_t async_reported;
	/* an XRC SRQ (verbs/xrc.c): its domain, and the CQ its receives go to */
	struct sv_xrcd *xrcd;
	struct sv_cq *cq;
	struct sv_list xrc_link;     /* the XRC SRQs, by number */
	struct svst_srq *st;         /* its status record */
};

/* An XRC domain (verbs/xrc.c).  Domains opened on the same file share
 * `dom`: an XRC SRQ serves the target QPs of its domain. */
struct sv_xrcd {
	struct ibv_xrcd ibxrcd;
	uint64_t dom;
	int refcnt;                  /* SRQs and target QPs in it */
};

struct sv_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
	struct sockaddr_in dst;      /* resolved host address */
};

enum sv_swqe_state {
	SV_SWQE_POSTED,              /* not yet (fully) transmitted */
	SV_SWQE_SENT,                /* transmitted, waiting for ack/response */
	SV_SWQE_DONE,                /* finished; completion may be generated */
	SV_SWQE_NSTATES
};

/* A send work request as posted. */
struct sv_swqe {
	uint64_t wr_id;
	uint32_t opcode;             /* enum ibv_wr_opcode */
	uint32_t send_flags;
	union {
		uint32_t imm;                /* big-endian as given */
		uint32_t inv_rkey;           /* LOCAL_INV, SEND_WITH_INV */
		uint32_t bind_access;        /* BIND_MW */
	};
	uint32_t num_sge;
	uint32_t length;             /* total payload length */
	uint32_t psn;
	uint32_t state;              /* enum sv_swqe_state */
	uint32_t status;             /* enum ibv_wc_status once DONE */
	uint32_t rkey;
	uint32_t xrc_srqn;           /* XRC: the SRQ it is for, at the target */
	uint64_t remote_addr;
	union {
		struct {                     /* atomics */
			uint64_t compare_add, swap;
			uint64_t atomic_result;
		};
		struct {                     /* BIND_MW: rkey is the new key, remote_addr the start */
			struct ibv_mw *bind_mw;
			uint64_t bind_len;
			uint32_t bind_lkey;          /* the MR's (found again when it runs), 0: none */
		};
	};
	/* UD */
	struct sockaddr_in ud_dst;
	uint32_t ud_qpn, ud_qkey;
	union ibv_gid ud_mgid;
	bool ud_grh;
	bool ud_mcast;               /* to the members of MGID ud_mgid */
	bool psn_set;                /* executed directly (no frame): no PSN */
	bool placed;                 /* a SEND in the peer's receive `psn` (engine/placed.c) */
	bool is_inline;
	struct sv_sge sge[];         /* num_sge entries, then inline data */
};

struct sv_sq {
	uint8_t *buf;
	struct ibv_pd *buf_pd;       /* its parent domain's allocator gave buf (else NULL) */
	uint32_t max_wr, max_sge, max_inline, stride;
	uint32_t mask;               /* slots - 1 (sv_ring_slots) */
	uint32_t head;               /* oldest not completed */
	uint32_t next;               /* next to transmit */
	uint32_t tail;               /* next free slot */
};

/* A run of one operation on one channel, counted in the QP's own memory
 * and added to its status record when the run ends (engine/stat.h). */
struct sv_tally {
	uint8_t op;                  /* enum svst_op */
	uint8_t chan;                /* svst chan index, or SV_TALLY_DIRECT */
	uint16_t n;                  /* messages; 0: no run */
	uint32_t pad;
	uint64_t bytes;
};

/* Connection-level state of an RC/UC QP towards its one peer QP. */
enum sv_link_state {
	SV_LINK_IDLE,                /* not connected, nothing to do */
	SV_LINK_CONNECTING,          /* connect in progress */
	SV_LINK_HELLO,               /* HELLO sent, waiting for HELLO_ACK */
	SV_LINK_UP,                  /* outbound channel established */
	SV_LINK_BACKOFF,             /* failed; reconnect at timer */
	SV_LINK_NSTATES
};
struct sv_qp;
/* engine/req.c: the link's name, and its one door (every change logged). */
const char *sv_link_state_name(enum sv_link_state s);
void sv_link_set(struct sv_qp *qp, enum sv_link_state s);

/* Requester WQE states' names (engine/comp.c). */
const char *sv_swqe_state_name(enum sv_swqe_state s);

#define SV_ATOMIC_SEEN SV_MAX_RD_ATOM   /* atomic results kept for duplicates: a
					* requester has no more in flight */
struct sv_atomic_seen {
	uint32_t psn;
	bool valid;
	uint64_t orig;
};

#define SV_QP_ERR_LEN 256                /* an explained error, kept (sv_qp_explain) */

/* The RC responder (engine/resp.c).  UC and UD stay OPEN. */
enum sv_resp_state {
	SV_RESP_OPEN,                /* takes the request at epsn */
	SV_RESP_HOLDING,             /* a SEND on a ring waits for a receive, up to the RNR timer */
	SV_RESP_HOLD_OVER,           /* it waited the whole timer: it gets its RNR NAK */
	SV_RESP_NAKED,               /* RNR NAK sent: drop requests until epsn comes again */
	/* sequence NAK sent (a lossy channel lost requests): drop new requests
	 * until epsn comes again, still answering duplicates */
	SV_RESP_SEQ_NAKED,
	SV_RESP_NSTATES
};
/* engine/resp.c: the responder's name, and its one door (changes logged). */
const char *sv_resp_state_name(enum sv_resp_state s);
void sv_resp_set(struct sv_qp *qp, enum sv_resp_state s);

/* The work request an ibv_qp_ex builds (verbs/qp_ex.c). */
struct sv_qp_builder {
	struct ibv_send_wr wr;
	struct ibv_sge sge[SV_MAX_SGE];
	uint8_t inline_data[SV_MAX_INLINE];
};

struct sv_qp {
	struct ibv_qp_ex ibqp;       /* prefix: struct ibv_qp */
	struct sv_qlock lock;        /* released by application threads with sv_qp_unlock */
	bool deferred;               /* a channel's events wait for the lock's holder */
	struct sv_list node_link;    /* node's list of QPs */
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr;     /* current attributes (as ibv_query_qp reports) */
	int attr_mask_set;
	bool sq_sig_all;
	struct sv_sq sq;
	struct sv_tally tally[2];    /* [0] sent, [1] received (engine/stat.h) */
	struct sv_rq rq;
	struct sv_cq *scq, *rcq;     /* an XRC target's: its current request's SRQ's */
	struct sv_srq *srq;          /* an XRC target's: its last request's, held until the
				      * next begins or the QP leaves the wire (engine/resp.c) */
	struct sv_xrcd *xrcd;        /* an XRC target's domain */
	uint32_t send_ops_flags;     /* qp_ex */

	/* addressing of the peer (RC/UC) */
	struct sockaddr_in peer;
	uint32_t peer_qpn;

	/* requester */
	uint32_t next_psn;           /* PSN of the next new request */
	uint32_t peer_rq_next;       /* the peer's receive our next SEND takes (engine/placed.c) */
	uint32_t send_heard;         /* what we had heard from the peer at our last SEND (placed.c) */
	bool sent_send;              /* ... and there was one */
	bool place_refused;          /* the last placement was refused (the peer's memory not ours
				      * to reach), not merely unpublished (placed.c) */
	uint32_t rd_outstanding;     /* READ/atomic requests in flight */
	uint8_t lone_run;            /* requests sent in a row with nothing else in flight (req.c) */
	uint32_t retries;            /* transport retries used */
	uint32_t rnr_retries;        /* RNR retries used */
	uint64_t ack_deadline;       /* ns; 0 = no timer */
	uint64_t rnr_deadline;       /* ns; resend after RNR NAK */
	uint64_t link_deadline;      /* ns; reconnect */
	uint64_t gone_deadline;      /* ns; link lost: ERR unless it is back by then */
	uint64_t ack_held_deadline;  /* ns; responder: look at the held ACK then */
	uint64_t stat_deadline;      /* ns; the counters' runs go to the record (stat.h) */
	uint32_t ack_held_takes;     /* its channels' ack_takes when the timer last looked */
	bool rnr_wait;
	uint8_t hello_waits;         /* budgets given a live peer busy with our HELLO (comp.c) */
	enum sv_link_state link;
	struct sv_conn *out;         /* requests out, responses in */
	bool req_turned;             /* requests go on `in` instead (engine/req.c) */
	bool req_unsettled;          /* rewound: frames sent before may still arrive */
	bool req_filling;            /* inside sv_req_fill (xmit.c must not re-enter) */
	bool kick_held;              /* reading a batch of frames: responses kick once, after it */
	bool kick_due;               /* ... and one freed room or acknowledged (engine/recv.c) */
	uint64_t post_end_ns;        /* socket channel: when the last post ended (engine/batch.c) */
	uint8_t burst;               /* posts in quick succession so far */
	bool batched;                /* requests left queued for a batch (on its list) */
	struct sv_list batch_link;

	/* responder */
	struct sv_conn *in;          /* requests in, responses out */
	uint32_t epsn;               /* expected PSN */
	enum sv_resp_state resp;     /* sv_resp_set() changes it */
	uint64_t rnr_hold_since;     /* ns; a SEND waits for a receive since (resp.c) */
	uint64_t rnr_hold_deadline;  /* ns; look at the held SEND then */
	uint32_t publish_from;       /* receives from here wait to be published (engine/placed.c) */
	bool publish_due;
	bool comm_est_sent;

	/* responder: the request being received (on `in`, or on `out` if
	 * the peer turned it) */
	struct {
		bool drop;               /* discard: payload is not placed */
		bool have_wqe;           /* a receive WQE was consumed */
		bool ack;                /* RC: acknowledge at the end */
		uint32_t status;         /* receive completion status */
		uint32_t nak;            /* NAK to send at the end (0: none) */
		bool pull;               /* a pulled SEND: data comes from the peer */
		bool placed;             /* a placed SEND: its data is in (engine/placed.c) */
		struct ibv_pd *pd;       /* its accesses are checked in (an XRC SRQ's) */
		const void *conn;        /* the channel it came on */
		struct sv_rwqe *wqe;     /* the receive taken: room for its queue's SGEs,
					  * allocated after the QP (qp_create) */
	} rctx;
	/* completer: the response being received on `out` */
	struct {
		uint32_t idx;            /* SQ index it answers */
		uint32_t status;
	} cctx;

	struct sv_list mcast;        /* multicast attachments (UD) */

	/* timers and teardown */
	struct sv_timer timer;       /* the earliest of the deadlines above (engine/comp.c) */
	uint32_t async_reported;
	uint32_t rd_bytes;           /* what the READs in flight ask for (req.c, rd_room; in padding) */

	/* qp_ex builder (between wr_start and wr_complete, under qp->lock);
	 * its WR only for a QP made with send_ops_flags, the only kind
	 * ibv_qp_to_qp_ex gives out */
	struct sv_qp_builder *ex;
	bool ex_pending;
	int wr_err;
	uint32_t wr_start_tail;

	char *last_err;              /* the last error, explained (sv_qp_explain; NULL: none) */
	struct svst_qp *st;          /* its status record (engine/status.c) */

	/* responder: the latest atomics' results, answered again to a
	 * duplicate (a lost response) instead of executing it twice (resp.c);
	 * SV_ATOMIC_SEEN of them, made at the first atomic */
	struct sv_atomic_seen *atomic_seen;
	uint32_t atomic_seen_next;
};

struct sv_comp_channel;

static inline struct sv_device *to_sdev(struct ibv_device *d) { return (struct sv_device *)d; }
static inline struct sv_context *to_sctx(struct ibv_context *c)
{
	return sv_container_of(c, struct sv_context, vctx.context);
}
static inline struct sv_pd *to_spd(struct ibv_pd *p) { return (struct sv_pd *)p; }
/* The same protection domain: a parent domain or an imported PD is its
 * protection domain's (they share the id). */
static inline bool sv_same_pd(struct ibv_pd *a, struct ibv_pd *b)
{
	return to_spd(a)->id == to_spd(b)->id;
}
static inline struct sv_mr *to_smr(struct ibv_mr *m) { return (struct sv_mr *)m; }
static inline struct sv_cq *to_scq(struct ibv_cq *c) { return (struct sv_cq *)c; }
static inline struct sv_cq *to_scq_ex(struct ibv_cq_ex *c) { return (struct sv_cq *)c; }
static inline struct sv_qp *to_sqp(struct ibv_qp *q) { return (struct sv_qp *)q; }
static inline struct sv_qp *to_sqp_ex(struct ibv_qp_ex *q) { return (struct sv_qp *)q; }
static inline struct sv_srq *to_ssrq(struct ibv_srq *s) { return (struct sv_srq *)s; }

/* The QP leaves the wire (ERR, RESET, destroy): its requester's and
 * responder's timers stop.  (The held-ACK backstop is left to itself.) */
static inline struct sv_ah *to_sah(struct ibv_ah *a) { return (struct sv_ah *)a; }
static inline struct sv_comp_channel *to_sch(struct ibv_comp_channel *c)
{
	return (struct sv_comp_channel *)c;
}

static inline struct sv_swqe *sv_sq_at(struct sv_sq *sq, uint32_t idx)
{
	return (struct sv_swqe *)(sq->buf + (size_t)(idx & sq->mask) * sq->stride);
}
static inline struct sv_rwqe *sv_rq_at(struct sv_rq *rq, uint32_t idx)
{
	return (struct sv_rwqe *)(rq->buf + (size_t)(idx & rq->mask) * rq->stride);
}

/* context.c, async.c, pd.c */
void sv_wait_acked(pthread_mutex_t *m, pthread_cond_t *c, const uint32_t *completed,
		   const uint32_t *reported);
void sv_async_purge(struct ibv_context *context, const void *element);
void sv_pd_get(struct ibv_pd *pd);
void sv_pd_put(struct ibv_pd *pd);
void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev);

/* mr.c: key lookup and access checks.  Returns an ibv_wc_status. */
enum sv_access_dir { SV_LOCAL_READ, SV_LOCAL_WRITE, SV_REMOTE_READ, SV_REMOTE_WRITE,
		     SV_REMOTE_ATOMIC };
void sv_mr_rdlock(void);
void sv_mr_wrlock(void);
void sv_mr_unlock(void);
/* The key table (mr.c), for MRs and windows.  With the lock held: the
 * entry `key` names, whatever its PD; retag: its key's low byte. */
struct sv_mr *sv_key_find(uint32_t key);
struct sv_mr *sv_key_at(uint32_t slot);      /* NULL: a free slot */
uint32_t sv_key_slots(void);
void sv_key_retag(struct sv_mr *entry, uint8_t tag);
int sv_key_add(struct sv_mr *entry);         /* takes a slot and a random key; errno */
bool sv_key_remove(struct sv_mr *entry);     /* false: windows are bound to it */
/* Memory windows (mw.c).  Serves: may a remote access through QP `qpn`
 * (0: a local access) use the window?  With the MR lock held.  The others
 * run a work request of the send queue, QP lock held, and answer its
 * status; remote: a SEND with invalidate arrived on `qp`. */
bool sv_mw_serves(const struct sv_mw *mw, uint32_t qpn);
const char *sv_mw_state_name(enum sv_mw_state s);
enum ibv_wc_status sv_mw_bind(struct sv_qp *qp, const struct sv_swqe *w);
enum ibv_wc_status sv_mw_local_inv(struct sv_qp *qp, uint32_t rkey);
bool sv_mw_remote_inv(struct sv_qp *qp, uint32_t rkey);
void sv_mw_qp_gone(uint32_t qpn);            /* its type 2 windows are invalid */
struct ibv_mw *sv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sv_dealloc_mw(struct ibv_mw *mw);
int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
/* With the MR lock held: the host address of [addr, addr+len) in MR `key`
 * of `pd` if it has the rights for `dir`, else NULL.  len 0 always passes.
 * A remote access names the responder QP, `qpn`: a memory window serves
 * remote accesses only, and a type 2 window only those of its QP. */
void *sv_mr_translate(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr, uint64_t len,
		      enum sv_access_dir dir);
/* Why sv_mr_translate refuses the access, as a phrase naming the rule
 * ("" if it does not); takes the MR lock. */
void sv_mr_why(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr, uint64_t len,
	       enum sv_access_dir dir, char *buf, size_t size);
int sv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge);
struct ibv_mr *sv_reg_mr_at(struct ibv_pd *pd, void *addr, void *base, size_t length,
			    uint64_t iova, unsigned int access);
/* Device memory (verbs/dm.c): an MR on it holds it. */
#define SV_DM_MAX_SIZE (256u * 1024)
struct ibv_dm *sv_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int sv_free_dm(struct ibv_dm *dm);
struct ibv_mr *sv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t offset, size_t length,
			    unsigned int access);
void sv_dm_put(struct sv_dm *dm);
/* Moves (under the write lock) at every deregistration and re-registration:
 * a translation kept from an older epoch is checked again before its
 * memory is touched (engine/place.c).  Read with the MR lock held. */
extern uint32_t sv_mr_epoch;
/* With the MR lock held: does a translation made earlier still hold? */
static inline bool sv_mr_still(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr,
			       uint64_t len, enum sv_access_dir dir, const void *at)
{
	return sv_mr_translate(pd, qpn, key, addr, len, dir) == at;
}

/* comp_channel.c */
void sv_channel_fire(struct sv_cq *cq);
void sv_channel_add(struct sv_cq *cq);     /* a CQ of the channel is created */
void sv_channel_del(struct sv_cq *cq);     /* ... or destroyed */
void sv_channel_forget(struct sv_cq *cq);
/* After sv_channel_del: returns once no thread asleep on the channel holds
 * the CQ (it wakes them). */
void sv_channel_unpinned(struct sv_cq *cq);

/* cq.c */
/* Add a completion (caller holds no CQ lock).  Returns false on overrun. */
bool sv_cq_push(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited);
/* The same in two steps, for completions built in place: sv_cq_slot locks
 * the CQ and gives the entry to fill (every field), sv_cq_commit adds it
 * and unlocks. */
struct ibv_wc *sv_cq_slot(struct sv_cq *cq);
bool sv_cq_commit(struct sv_cq *cq, const struct ibv_wc *wc, bool solicited);
void sv_cq_clean_qp(struct sv_qp *qp);
void sv_cq_init_ex_ops(struct sv_cq *cq);
/* The calling thread did something else than poll one CQ in vain (post.c:
 * its posts): its next empty polls do not pause (cq.c, poll_in_vain). */
void sv_cq_thread_busy(void);

/* srq.c */
/* `pd`: a QP's (its parent domain's allocator may give the buffer), or NULL. */
int sv_rq_init(struct sv_rq *rq, uint32_t max_wr, uint32_t max_sge, struct ibv_pd *pd);
void sv_rq_free(struct sv_rq *rq);
int sv_rq_post(struct sv_rq *rq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* Take one receive WQE from the QP's RQ or SRQ into `out`; false if none. */
bool sv_qp_take_rwqe(struct sv_qp *qp, struct sv_rwqe *out);
void sv_srq_check_limit(struct sv_srq *srq);

/* context.c: device contexts.  Contexts imported from one (ibv_import_device(3))
 * share its device context; PDs, MRs and DMs are imported in pd.c, mr.c, dm.c. */
#define SV_CMD_FD_NAME "softverbs-context"
struct ibv_context *sv_context_open(struct ibv_device *device, int cmd_fd);
static inline bool sv_same_dev_ctx(struct ibv_context *a, struct ibv_context *b)
{
	return to_sctx(a)->dev_ctx == to_sctx(b)->dev_ctx;
}

/* xrc.c */
struct ibv_xrcd *sv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int sv_close_xrcd(struct ibv_xrcd *xrcd);
void sv_xrcd_get(struct sv_xrcd *x);
void sv_xrcd_put(struct sv_xrcd *x);
void sv_xrc_srq_add(struct sv_srq *srq);
int sv_xrc_srq_del(struct sv_srq *srq);
void sv_xrc_srq_put(struct sv_srq *srq);
struct sv_srq *sv_xrc_target_srq(struct sv_qp *tgt, uint32_t srqn);
static inline bool sv_qp_is_xrc_tgt(const struct sv_qp *qp)
{
	return qp->ibqp.qp_base.qp_type == IBV_QPT_XRC_RECV;
}
/* RC and both XRC ends: reliable, connected, one peer QP. */
static inline bool sv_qp_is_rc(const struct sv_qp *qp)
{
	enum ibv_qp_type t = qp->ibqp.qp_base.qp_type;

	return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV;
}

/* qp.c */
/* An error of `qp` in one line naming the broken rule: kept as its last
 * error and printed with SOFTVERBS_DEBUG >= 1 ("QP <num>: " goes first). */
void sv_qp_explain(struct sv_qp *qp, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));
const char *sv_qp_state_name(enum ibv_qp_state s);       /* qp_modify.c */
const char *sv_qp_type_name(enum ibv_qp_type t);         /* qp_modify.c */
const char *sv_wr_opcode_name(enum ibv_wr_opcode op);    /* post.c */
void sv_qp_to_error(struct sv_qp *qp) __attribute__((cold));
void sv_qp_flush(struct sv_qp *qp);
void sv_qp_async(struct sv_qp *qp, enum ibv_event_type type);
uint64_t sv_qp_ack_timeout_ns(const struct sv_qp *qp);
uint64_t sv_rnr_timer_ns(uint8_t min_rnr_timer);

/* post.c, qp_ex.c */
int sv_sq_enqueue(struct sv_qp *qp, const struct ibv_send_wr *wr);
void sv_sq_doorbell(struct sv_qp *qp);
void sv_qp_init_ex_ops(struct sv_qp *qp);

/* mcast.c */
void sv_mcast_detach_all(struct sv_qp *qp);     /* progress thread */

static inline bool sv_gid_is_mcast(const union ibv_gid *g) { return g->raw[0] == 0xff; }

/* status.c: the status records of CQs, SRQs and MRs (status/format.h;
 * made by svst_alloc), rewritten when their descriptive part changes. */
void sv_status_cq(struct sv_cq *cq);
void sv_status_srq(struct sv_srq *srq);
void sv_status_mr(struct sv_mr *mr);

/* ah.c */
int sv_ah_resolve(struct ibv_context *ctx, const struct ibv_ah_attr *attr,
		  struct sockaddr_in *dst);

#endif
