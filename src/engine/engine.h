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

/* The engine's answers to the transport (upcalls.c registers them). */
extern const struct sv_upcalls sv_engine_upcalls;

/* progress-thread entry points, reached through sv_engine_upcalls */
void sv_engine_on_conn(struct sv_conn *c, uint32_t events);
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
void sv_engine_drive_forget(struct sv_conn *c);
void sv_engine_drive_register_also(struct sv_conn *c, struct sv_cq *cq);
void sv_engine_drive_register_dgram(struct sv_qp *qp);
int sv_engine_spin_tick(struct sv_node *node, uint64_t now);   /* ms to the next tick, or -1 */
/* A channel may hold an ACK: the slower verbs look (xmit.c). */
void sv_engine_acks_held_mark(void);

/* req.c */
bool sv_req_fill(struct sv_qp *qp, struct sv_txframe *f);   /* next request frame */
void sv_req_sent(struct sv_qp *qp, uint32_t wqe_idx);       /* fully written */
void sv_req_rewind(struct sv_qp *qp, uint32_t idx);         /* resend from SQ index */
void sv_req_arm_ack_timer(struct sv_qp *qp);
void sv_req_on_connected(struct sv_qp *qp);
void sv_req_on_hello_ack(struct sv_qp *qp, struct sv_conn *c);
/* The channel the QP's requests go on: `out`, or `in` when turned (req.c). */
struct sv_conn *sv_req_conn(struct sv_qp *qp);
void sv_req_turned_lost(struct sv_qp *qp);
void sv_req_link_failed(struct sv_qp *qp);

/* PSN arithmetic modulo 2^24 */
static inline bool sv_psn_le(uint32_t a, uint32_t b)
{
	return ((b - a) & 0xffffff) < 0x800000;
}

/* resp.c: the responder; called by recv.c */
void sv_resp_begin(struct sv_qp *qp, struct sv_conn *c);  /* header in c->rx_hdr */
void sv_resp_end(struct sv_qp *qp, struct sv_conn *c);    /* payload placed */
void sv_resp_rnr_hold_timer(struct sv_qp *qp, uint64_t now);
void sv_resp_batch_end(struct sv_qp *qp, struct sv_conn *c);  /* flush, then complete */
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
void sv_comp_fail(struct sv_qp *qp, struct sv_swqe *wqe, enum ibv_wc_status st);
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
void sv_rx_process(struct sv_conn *c);
/* QP lock held: process the channel's input, write what a ring channel
 * has to write, and drop the channel if it died. */
void sv_rx_serve(struct sv_conn *c);
void sv_conn_lost(struct sv_conn *c);
void sv_engine_protocol_error(struct sv_conn *c, const char *why);

/* xmit.c */
void sv_xmit_flush(struct sv_conn *c);            /* write pending frames */
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
void sv_xmit_nak(struct sv_conn *c, struct sv_qp *qp, uint32_t psn, enum sv_nak code,
		 uint64_t data0);
/* A control frame in the channel's ctrl slot (free), written now. */
void sv_xmit_ctrl(struct sv_conn *c, enum sv_op op, uint32_t dst, uint32_t src,
		  uint64_t data0, uint32_t imm);
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
void sv_place_reset(struct sv_place *p);
/* Aim a placement at an SGE list, or at [va, va+len) of MR `key`; it
 * accepts bytes (discard false) only if the translation succeeded. */
enum ibv_wc_status sv_place_sges(struct sv_place *p, struct ibv_pd *pd,
				 const struct sv_sge *sge, uint32_t n, enum sv_access_dir dir,
				 size_t *total);
bool sv_place_mr(struct sv_place *p, struct ibv_pd *pd, uint32_t key, uint64_t va,
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
