/*
 * The RDMA engine: requester (req.c), responder (resp.c), completer
 * (comp.c), the frame receive dispatch (recv.c) and transmit (xmit.c).
 * It reaches sockets only through transport/transport.h.
 *
 * Protocol in one paragraph (docs/wire-format.md has the details): every
 * send WQE becomes one request frame with its own PSN.  The responder
 * executes requests in PSN order and answers RC requests with cumulative
 * ACKs, READ/ATOMIC responses, or a NAK (RNR or fatal).  After an RNR NAK the
 * responder drops requests until the NAKed PSN is sent again; the requester
 * rewinds to it once the RNR timer expires (go-back-N).  The requester's ack
 * timer turns a silent peer into RETRY_EXC_ERR after retry_cnt timeouts.
 */
#ifndef SV_ENGINE_H
#define SV_ENGINE_H

#include <stdint.h>

#include "engine/api.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/names.h"
#include "verbs/sv.h"

/* The receive machine of a channel (engine/recv.c); it changes under the
 * QP lock.  The transport never reads it: it sees `input`. */
enum sv_rx_state {
	SV_RX_HDR,        /* collecting a frame header */
	SV_RX_HELD,       /* a SEND's header is in, no receive posted: no input (resp.c) */
	SV_RX_READY,      /* that SEND may go on (a receive came, or the RNR timer ran out) */
	SV_RX_PAYLOAD,    /* placing payload bytes */
	SV_RX_NSTATES
};

/* Who is at the other end of a channel (engine/verify.c).  An outbound
 * channel reaches the address and port its QP was given at RTR, so its
 * peer is known; an inbound one names its peer QP in its HELLO, and that
 * claim is believed only once proven. */
enum sv_peer_state {
	SV_PEER_UNKNOWN,      /* accepted, no HELLO yet */
	SV_PEER_CLAIMED,      /* its HELLO named one of our QPs and the peer it claims to be */
	SV_PEER_ASKED,        /* the claimed peer was asked, on our own channel to it */
	SV_PEER_VERIFIED,     /* the peer is the QP's configured one: frames flow */
	SV_PEER_NSTATES
};
const char *sv_peer_state_name(enum sv_peer_state s);

/* Where incoming payload bytes go: a list of segments, or nowhere (discard).
 * The segments are registered memory; what they were translated from is
 * kept so that each step that writes them checks they still are
 * (engine/place.c). */
struct sv_place {
	struct iovec seg[SV_PLACE_MAX_SEG];
	uint32_t key[SV_PLACE_MAX_SEG];   /* the key and address each came from */
	uint64_t va[SV_PLACE_MAX_SEG];
	struct ibv_pd *pd;
	uint32_t qpn;                /* a remote access's responder QP (0: local) */
	uint32_t epoch;              /* the MR epoch the translation is good at */
	uint8_t dir;                 /* enum sv_access_dir */
	int nseg, cur;
	size_t cur_off;
	bool discard;
	bool revoked;                /* an MR went away mid-payload: the rest was discarded */
};

/* One frame being transmitted: header plus payload segments. */
struct sv_txframe {
	struct sv_wire_hdr hdr;
	struct iovec seg[SV_PLACE_MAX_SEG];
	int nseg;
	size_t total, done;
	bool in_use;
	uint32_t wqe_idx;            /* requester: SQ index it belongs to */
	/* a READ response: its payload seg[0] is our registered memory, checked
	 * before each write (engine/xmit.c); mr_pd NULL for any other frame */
	struct ibv_pd *mr_pd;
	uint32_t mr_qpn, mr_key, mr_epoch;
	uint64_t mr_va;
	bool fatal;                  /* a NAK that takes the QP to ERR once written */
	bool awaited;                /* its peer waits for it alone: a lone request
				      * (SV_WF_LONE) or the answer to one */
};

#define SV_RESPQ_LEN 32

/* A pulled SEND's descriptors: of the request on the wire (outbound), or
 * of the one being received, with the receive segments it is read into
 * (inbound).  Made at a channel's first (sv_pulled_get): most never carry one. */
struct sv_pulled {
	struct sv_wire_pull desc[SV_WIRE_MAX_SGE];
	struct iovec dst[SV_WIRE_MAX_SGE];
	int ndst;
};

#define SV_DONE_MAX 16
/* A receive completion waiting for its batch's end: only what differs
 * from one to the next (the QP's part is added when it is pushed). */
struct sv_done_wc {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm;                /* or the rkey invalidated (one union in ibv_wc) */
	uint8_t status, opcode, wc_flags;
	bool solicited;
};
struct sv_done {
	struct sv_done_wc wc[SV_DONE_MAX];
};

/* Staging buffer of a channel's receive machine (engine/recv.c), lent
 * while it holds bytes (stage.c). */
#define SV_RBUF_LEN (256 * 1024)
uint8_t *sv_stage_take(void);          /* NULL: no memory */
void sv_stage_give(uint8_t *buf);      /* NULL: nothing */
/* A socket channel's frames up to SV_STAGE_FRAME bytes are copied into a
 * lent buffer too, up to SV_STAGE_LEN, and written together (xmit.c). */
#define SV_STAGE_LEN (64 * 1024)
#define SV_STAGE_FRAME (16 * 1024)

/* A TCP channel's datagram lane (lane.c).  Its connecting end: NO (the
 * peer takes no LANE frame, or it refused) -> MAY (the HELLO_ACK said it
 * takes them) -> OFFERED (after the first frame its peer waits for
 * alone) -> UP, or NO again.  The answerer: NO -> UP at a LANE it takes. */
enum sv_lane_state { SV_LANE_NO, SV_LANE_MAY, SV_LANE_OFFERED, SV_LANE_UP, SV_LANE_NSTATES };
const char *sv_lane_state_name(enum sv_lane_state s);

/* The engine's state for one channel, beside the transport's struct
 * sv_conn (c->qc; the transport allocates up->chan_size bytes for it and
 * never looks inside). */
struct sv_qpchan {
	struct sv_qp *qp;            /* owner; NULL until the HELLO names it */
	enum sv_peer_state peer_state;
	uint64_t nonce;              /* outbound: ours, in our HELLO; inbound: the peer's */
	struct sv_wire_hdr hello;    /* inbound: its HELLO (host order), answered once verified */
	bool mr_lost;                /* closed: a READ response lost its memory mid-frame */
	bool turn_ok;                /* both ways: outbound, requests may come in
				      * (we said so); inbound, ours may go out (the
				      * peer did) (req.c) */
	struct sv_pulled *pull;      /* pulled SENDs (NULL: none yet) */
	struct sv_cq *drive_cq;      /* CQ whose pollers check this channel (drive.c) */
	struct sv_cq *drive_cq2;     /* TCP: the other CQ of the QP */
	/* read by spinning pollers without the QP lock (drive.c) */
	bool rx_completes;           /* inbound: its last request completed a receive */
	bool rx_requested;           /* inbound: a request came (resp.c) */
	bool rx_bulk;                /* inbound: its last request carried SV_RX_BULK bytes or more */
	uint64_t rx_read_ns;         /* inbound, bulk: when a poller last read it */
	uint32_t tx_since_rx;        /* outbound: requests written since the last response */

	/* receive machine */
	enum sv_rx_state rx_state;   /* sv_rx_set() changes it */
	struct sv_wire_hdr rx_hdr;
	size_t rx_got;
	size_t rx_remain;            /* payload bytes still to place */
	struct sv_place place;
	uint8_t *rbuf;               /* staging buffer, lent while it holds bytes (NULL: none) */
	size_t rb_start, rb_end;     /* what rbuf holds */
	int rx_reads_left;           /* fairness budget of the current wake-up */
	bool rx_lone;                /* a READ, WRITE or atomic with SV_WF_LONE came */
	uint64_t rx_lone_ns;         /* progress thread: when it last served one */
	bool rx_drained;             /* a socket or ring read this wake-up came back short */
	bool recv_published;         /* inbound: a receive was published for placed SENDs */
	uint32_t rx_batch_bytes;     /* inbound: request bytes taken since responses last went */

	/* transmit: requester frame (outbound) or response queue (inbound) */
	struct sv_txframe *req;      /* made at the first request (NULL: none, as on most inbound) */
	struct sv_txframe *resp;     /* SV_RESPQ_LEN of them, from the first response on */
	uint32_t resp_head, resp_tail;
	struct sv_txframe *ctrl;     /* HELLO, VERIFY and their answers (ctrl.c; NULL: none) */
	/* inbound ring channel: the ACK to publish in the ring (not a frame) */
	bool ack_word_pending;
	uint32_t ack_word_psn;
	/* inbound TCP channel: an ACK held for the QP's next request to carry
	 * (xmit.c); ack_held is read by pollers without the QP lock */
	bool ack_held;
	bool ack_carried;            /* a request of ours carried one (xmit.c) */
	bool ack_carriable;          /* acknowledged at once, though it could have waited */
	uint8_t ack_streak;          /* ACKs our requests carried in a row (xmit.c) */
	uint32_t ack_held_psn;
	uint32_t ack_held_n;         /* requests it covers */
	uint32_t ack_takes;          /* holds ended so far (the timer's yardstick) */

	/* responder: receive completions of the current batch, pushed only
	 * after the batch's acknowledgements are on their way (made at the
	 * first: only channels requests come in on need them) */
	struct sv_done *done;
	int ndone;

	/* socket channel: frames copied to go in one write (xmit.c), a buffer
	 * lent while it holds bytes the socket has not taken (NULL: none) */
	uint8_t *stage;
	size_t stage_off, stage_len;

	/* socket channel: its datagram lane (lane.c) */
	enum sv_lane_state lane;
	bool lane_due;               /* a frame went that a lane would have copied */
};

/* The engine's answers to the transport (upcalls.c registers them). */
extern const struct sv_upcalls sv_engine_upcalls;

/* progress-thread entry points, reached through sv_engine_upcalls */
void sv_engine_on_conn(struct sv_conn *c, uint32_t events);
void sv_engine_chan_free(struct sv_conn *c);
void sv_engine_on_timer(void *qp, uint64_t now);
void sv_engine_on_dgram(struct sv_node *node, const struct sockaddr_in *from,
			const struct sv_wire_hdr *h, const uint8_t *payload);
void sv_engine_on_mcast(void *qp, const struct sv_wire_hdr *h, const uint8_t *payload,
			struct in_addr self);
/* An inbound channel still on the node's pending list SV_PENDING_TTL_NS
 * after it was accepted (told once; node->lock not held): it must go. */
void sv_engine_pending_expired(struct sv_conn *c);


bool sv_engine_poller_active(struct sv_conn *c, uint64_t now);
void sv_engine_drive_register(struct sv_conn *c, struct sv_cq *cq);
void sv_engine_still_polling(struct sv_conn *c);
void sv_engine_drive_forget(struct sv_conn *c);
void sv_engine_drive_register_also(struct sv_conn *c, struct sv_cq *cq);
void sv_engine_drive_register_dgram(struct sv_qp *qp);
int sv_engine_spin_tick(struct sv_node *node, uint64_t now);   /* ms to the next tick, or -1 */
/* A channel may hold an ACK: the slower verbs look (xmit.c). */
void sv_engine_acks_held_mark(void);

/* req.c */
bool sv_req_fill(struct sv_qp *qp, struct sv_txframe *f);   /* next request frame */
struct sv_txframe *sv_req_frame(struct sv_conn *c);         /* c's, made (NULL: no memory) */
void sv_req_sent(struct sv_qp *qp, uint32_t wqe_idx);       /* fully written */
void sv_req_rewind(struct sv_qp *qp, uint32_t idx);         /* resend from SQ index */
void sv_req_arm_ack_timer(struct sv_qp *qp);
void sv_req_on_connected(struct sv_qp *qp);
void sv_req_on_hello_ack(struct sv_qp *qp, struct sv_conn *c);
/* lane.c: a TCP channel's datagram lane, agreed on in the stream */
void sv_engine_lane_hello_answer(struct sv_conn *c, struct sv_wire_hdr *ack);
void sv_engine_lane_hello_ack(struct sv_conn *c, const struct sv_wire_hdr *ack);
void sv_engine_lane_flushed(struct sv_conn *c);
void sv_engine_lane_on_frame(struct sv_conn *c, const struct sv_wire_hdr *h);
/* The channel the QP's requests go on: `out`, or `in` when turned (req.c). */
struct sv_conn *sv_req_conn(struct sv_qp *qp);
void sv_req_turned_lost(struct sv_qp *qp);
void sv_req_link_failed(struct sv_qp *qp);

/* Large RC SENDs to a same-host peer that can read us travel as the
 * addresses of their data (req.c): the responder pulls it with one
 * cross-memory read straight into the receive buffer (one copy instead of
 * two through the ring).  The data stays ours until the ACK, which follows
 * the pull.  Smaller ones may be placed (placed.c), and larger ones too
 * while the QP streams SENDs. */
#define SV_PULL_MIN (32 * 1024)

/* placed.c: SENDs the requester places in the peer's receive itself, from
 * SV_PLACE_MIN bytes on, and of any size into the peer's receives from
 * number SV_PLACE_WARM on: placing maps the receive's memory into the
 * requester, a page of its RSS per QP, which a QP that carries a few small
 * SENDs should not pay, while a busy one's small SENDs are much faster
 * placed (docs/measurements.md, 'Placed SENDs of any size').  (A larger
 * one is pulled in a ping-pong: one copy too, by the core that reads it
 * next, measured faster at 64 KiB; placed in a stream, by the core whose
 * cache holds it.) */
#define SV_PLACE_MIN 256
#define SV_PLACE_WARM 16
/* The frame of one placed now, or before (false: it travels as a SEND). */
bool sv_req_place(struct sv_qp *qp, struct sv_swqe *w, struct sv_txframe *f);
bool sv_req_place_waits(struct sv_qp *qp, const struct sv_swqe *w);
void sv_req_count_recv(struct sv_qp *qp, uint8_t op);      /* a request took its PSN */
bool sv_resp_placed_ok(struct sv_qp *qp, const struct sv_wire_hdr *h);
void sv_resp_publish_later(struct sv_qp *qp, uint32_t from);  /* a take let it in */
bool sv_resp_placed(struct sv_qp *qp, struct sv_conn *c, const struct sv_wire_hdr *h);  /* resp.c */

/* PSN arithmetic modulo 2^24 */
/* The descriptor a thread asleep for `cq`'s event waits on (-1: none): a
 * same-host peer of our user gets it in the handshake and wakes that
 * thread itself (transport/shm/ringchan.c). */
static inline int sv_cq_wake_fd(const struct sv_cq *cq)
{
	return cq && cq->ibcq.channel ? cq->ibcq.channel->fd : -1;
}

/* Which completion channel that is (peers keep one copy per id). */
static inline uint64_t sv_cq_wake_id(const struct sv_cq *cq)
{
	return cq && cq->ibcq.channel ? to_sch(cq->ibcq.channel)->wake_id : 0;
}

static inline bool sv_psn_le(uint32_t a, uint32_t b)
{
	return ((b - a) & 0xffffff) < 0x800000;
}

/* resp.c: the responder; called by recv.c */
void sv_resp_begin(struct sv_qp *qp, struct sv_conn *c);  /* header in c->qc->rx_hdr */
void sv_resp_end(struct sv_qp *qp, struct sv_conn *c);    /* payload placed */
void sv_resp_rnr_hold_timer(struct sv_qp *qp, uint64_t now);
void sv_resp_batch_end(struct sv_qp *qp, struct sv_conn *c);  /* flush, then complete */
void sv_resp_push_done(struct sv_qp *qp, struct sv_conn *c);  /* complete (the batch's end) */
void sv_resp_xrc_release(struct sv_qp *qp);   /* an XRC target's SRQ and CQ: let go */
struct sv_pulled *sv_pulled_get(struct sv_conn *c);       /* NULL: no memory */
/* A datagram whose source (h->src_qpn, from host `src`) the transport has
 * checked: the completion and the GRH report that source. */
void sv_resp_ud(struct sv_qp *qp, const struct sv_wire_hdr *h, const uint8_t *payload,
		struct in_addr src);

/* comp.c: the completer; called by recv.c */
void sv_comp_begin(struct sv_qp *qp, struct sv_conn *c);
void sv_comp_end(struct sv_qp *qp, struct sv_conn *c);
void sv_comp_ack_word(struct sv_qp *qp, struct sv_conn *c);
/* A request of the peer carried an ACK of ours (SV_WF_ACK). */
void sv_comp_ack_carried(struct sv_qp *qp, uint32_t psn);
void sv_comp_fail(struct sv_qp *qp, struct sv_swqe *wqe, enum ibv_wc_status st)
	__attribute__((cold));
void sv_comp_link_lost(struct sv_qp *qp);

/* verify.c: an inbound channel carries traffic once its peer is proven */
uint64_t sv_verify_nonce(void);
void sv_verify_attach(struct sv_qp *qp, struct sv_conn *c);
void sv_verify_look(struct sv_qp *qp, bool ask_again);
void sv_verify_on_question(struct sv_qp *qp, struct sv_conn *c);
void sv_verify_on_answer(struct sv_qp *qp, struct sv_conn *out);
void sv_verify_drop_all(struct sv_qp *qp);

/* recv.c: the receive machine, shared with drive.c */
bool sv_rx_answer_hello(struct sv_conn *c, struct sv_qp *qp);
void sv_rx_on_rings(struct sv_conn *c);
void sv_rx_process(struct sv_conn *c);
/* QP lock held: process the channel's input, write what a ring channel
 * has to write, and drop the channel if it died. */
void sv_rx_serve(struct sv_conn *c);
void sv_conn_lost(struct sv_conn *c);
void sv_engine_protocol_error(struct sv_conn *c, const char *why) __attribute__((cold));

/* xmit.c */
void sv_xmit_flush(struct sv_conn *c);            /* write pending frames */
void sv_xmit_drain(struct sv_conn *c);            /* write what the stage holds */
struct sv_txframe *sv_xmit_resp_slot(struct sv_conn *c);  /* NULL if queue full */
struct sv_txframe *sv_xmit_rd_resp_slot(struct sv_conn *c, uint32_t psn);
void sv_xmit_resp_commit(struct sv_conn *c, struct sv_txframe *f);
void sv_xmit_ack(struct sv_conn *c, struct sv_qp *qp, uint32_t psn);
/* Held ACKs (TCP, see xmit.c): hold one for the next request to carry,
 * take it into a request, or queue it as a frame (then flush). */
void sv_xmit_ack_maybe_hold(struct sv_conn *c, struct sv_qp *qp, uint32_t psn);
void sv_xmit_ack_hold(struct sv_conn *c, struct sv_qp *qp, uint32_t psn);
bool sv_xmit_ack_take(struct sv_conn *c, uint32_t *psn);
bool sv_xmit_ack_carry(struct sv_conn *c, uint32_t *psn);
bool sv_xmit_ack_carry_any(struct sv_qp *qp, uint32_t *psn);
void sv_xmit_ack_release(struct sv_conn *c);
void sv_xmit_ack_recover(struct sv_qp *qp);
#define SV_ACK_HOLD_MIN_TMO 12   /* requester ack timeouts (4.096 us << t) that allow holding */
#define SV_ACK_STREAK 16         /* a ping-pong this long is steady */
#define SV_ACK_HOLD_MAX 16       /* requests one held ACK may cover */
#define SV_ACK_HOLD_NS (2ull * 1000 * 1000)   /* the timer looks at held ACKs this often */
#define SV_RX_BULK (32u * 1024)  /* a request this large makes its channel bulk (drive.c) */
void sv_xmit_nak(struct sv_conn *c, struct sv_qp *qp, uint32_t psn, enum sv_nak code,
		 uint64_t data0);
/* A control frame in the channel's ctrl slot (free), written now. */
void sv_xmit_ctrl(struct sv_conn *c, enum sv_op op, uint32_t dst, uint32_t src,
		  uint64_t data0, uint32_t imm);
/* ctrl.c: the channel's control frame, lent while one is in flight */
struct sv_txframe *sv_ctrl_frame(struct sv_conn *c);    /* NULL: in flight, or no memory */
struct sv_txframe *sv_ctrl_pending(struct sv_conn *c);  /* the one to write (NULL: none) */
void sv_ctrl_free(struct sv_conn *c);
static inline bool sv_ctrl_busy(const struct sv_conn *c)
{
	return c->qc->ctrl && c->qc->ctrl->in_use;
}
void sv_frame_init(struct sv_txframe *f, enum sv_op op, uint32_t dst, uint32_t src, uint32_t psn);
void sv_frame_add(struct sv_txframe *f, void *addr, size_t len);

/* place.c: placement into registered memory, checked at every step. */
/* Gather a local SGE list into segments after checking keys (the MR lock
 * taken inside, or held by the caller of sv_sges_translate).  Returns
 * IBV_WC_SUCCESS or the local error status. */
enum ibv_wc_status sv_sges_to_place(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
				    enum sv_access_dir dir, struct iovec *seg, int *nseg,
				    size_t *total);
enum ibv_wc_status sv_sges_translate(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
				     enum sv_access_dir dir, struct iovec *seg, int *nseg,
				     size_t *total);
/* Which SGE breaks a key rule, and which ("sge[i] ..."; "" if none). */
void sv_sges_why(struct ibv_pd *pd, const struct sv_sge *sge, uint32_t n,
		 enum sv_access_dir dir, char *buf, size_t size);
void sv_place_reset(struct sv_place *p);
/* Aim a placement at an SGE list, or at [va, va+len) of MR `key`; it
 * accepts bytes (discard false) only if the translation succeeded. */
enum ibv_wc_status sv_place_sges(struct sv_place *p, struct ibv_pd *pd,
				 const struct sv_sge *sge, uint32_t n, enum sv_access_dir dir,
				 size_t *total);
bool sv_place_mr(struct sv_place *p, struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t va,
		 uint32_t len, enum sv_access_dir dir);
size_t sv_place_left(const struct sv_place *p);
void sv_place_advance(struct sv_place *p, size_t n);
/* Before one step that writes the placement's memory: true with the MR
 * read lock held (release it with sv_mr_unlock right after the step), or
 * false, no lock held, when an MR of it went away (`revoked`: the rest is
 * discarded, the request fails at its end).  Never across a blocking call. */
bool sv_place_hold(struct sv_place *p);
void sv_place_copy(struct sv_place *p, const uint8_t *src, size_t n);

/* recv.c: the receive machine's names and its one door. */
const char *sv_rx_state_name(enum sv_rx_state s);
void sv_rx_set(struct sv_conn *c, enum sv_rx_state s);

/* The requester WQE state machine's one door (POSTED -> SENT -> DONE, SENT
 * -> POSTED when rewound); traced by name. */
static inline void sv_swqe_to(const struct sv_qp *qp, struct sv_swqe *w, enum sv_swqe_state s)
{
	sv_trace("qp %u: wqe psn %u %s -> %s", qp->ibqp.qp_base.qp_num, w->psn,
		 sv_swqe_state_name((enum sv_swqe_state)w->state), sv_swqe_state_name(s));
	w->state = s;
}

static inline void sv_swqe_done(const struct sv_qp *qp, struct sv_swqe *w, enum ibv_wc_status st)
{
	sv_swqe_to(qp, w, SV_SWQE_DONE);
	w->status = st;
}

#endif
