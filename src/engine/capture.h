/*
 * Packet capture (SOFTVERBS_PCAP=DIR): every message this process sends
 * and receives, written to DIR as the RoCEv2 packets a NIC would put on
 * the wire for it (engine/capture.c, docs/observability.md).  The hooks
 * cost one predictable branch when it is off: SV_CAPTURE(call).
 */
#ifndef SV_ENGINE_CAPTURE_H
#define SV_ENGINE_CAPTURE_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct sv_conn;
struct sv_qp;
struct sv_txframe;
struct sv_direct;
struct sv_wire_hdr;

extern bool sv_capture_on;
#define SV_CAPTURE(call) do { if (__builtin_expect(sv_capture_on, 0)) call; } while (0)

/* Read SOFTVERBS_PCAP once (the node's start). */
void sv_capture_init(void);
/* A write of `wrote` bytes of frame f (its header sealed): its last one
 * writes the frame. */
void sv_capture_tx(struct sv_conn *c, const struct sv_txframe *f, ssize_t wrote);
/* The frame just received whole on a channel (rx_hdr, its payload placed). */
void sv_capture_rx(struct sv_conn *c);
/* A ring channel's ACK word: published (tx) or taken (rx). */
void sv_capture_ack_word(struct sv_qp *qp, uint32_t psn, bool tx);
/* A one-sided operation the requester did in the peer's memory itself. */
void sv_capture_direct(struct sv_qp *qp, const struct sv_direct *d);
/* A SEND placed in the peer's receive (engine/placed.c), by its frame's
 * header in host order: by us (its payload iov[0..n)), or in our receive
 * just taken (qp->rctx). */
void sv_capture_placed(struct sv_qp *qp, const struct sv_wire_hdr *h, const struct iovec *iov,
		       int n);
void sv_capture_placed_rx(struct sv_qp *qp, const struct sv_wire_hdr *h);
/* The pulled SEND received last, copied into the receive buffer dst[0..n). */
void sv_capture_pulled(struct sv_qp *qp, const struct iovec *dst, int n);
/* A UD datagram sent (header sealed; payload seg[0..n), n < 0: it failed)
 * or received. */
void sv_capture_ud_tx(struct sv_qp *qp, const struct sv_wire_hdr *h, const struct iovec *seg, int n,
		      struct in_addr dst);
void sv_capture_ud_rx(struct sv_qp *qp, const struct sv_wire_hdr *h, const uint8_t *payload,
		      struct in_addr src);

#endif
