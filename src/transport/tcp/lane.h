/*
 * A TCP channel's datagram lane: early copies of a ping-pong's writes.
 *
 * Across hosts a one-way trip is mostly the kernel's TCP (about 2.8 us on
 * a veth here, its UDP 1.7: docs/measurements.md, 'Across veth: the
 * kernel's TCP is most of a one-way trip').  So each end of a TCP channel
 * may have a connected UDP socket, agreed on in the stream once it carries
 * a ping-pong (engine/lane.c), and a small write holding a frame its peer
 * waits for alone goes first as a datagram, then on the stream as always.
 * The datagram names its place in the stream; the reader takes it if it
 * is the next bytes and skips those bytes when the stream brings them.
 * The stream stays the whole truth: a lost, late or foreign datagram is
 * dropped and the stream's bytes are read instead, so the engine sees
 * the same ordered, lossless stream it always did, only sooner.
 *
 * Each datagram carries the receiver's secret, which only the stream
 * told: the connected socket takes datagrams from the peer's address and
 * port alone, and the secret keeps anyone off the path from forging one.
 * Lives under its QP's lock, as the channel's reads and writes do.
 */
#ifndef SV_TRANSPORT_TCP_LANE_H
#define SV_TRANSPORT_TCP_LANE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct sv_conn;
struct sv_lane_offer;          /* transport.h */

/* Connecting end: open our socket, for the LANE frame (false: no lane). */
bool sv_lane_offer(struct sv_conn *c, struct sv_lane_offer *ours);
/* Accepting end: the peer offered `theirs`; open ours and connect it, for
 * the LANE_ACK (false: no lane, the peer's offer is ignored). */
bool sv_lane_take(struct sv_conn *c, const struct sv_lane_offer *theirs,
		  struct sv_lane_offer *ours);
/* Connecting end: the LANE_ACK's answer (port 0: the peer has none). */
void sv_lane_answered(struct sv_conn *c, const struct sv_lane_offer *theirs);
/* Where to count the datagrams sent and taken (the engine's, live). */
void sv_lane_counters(struct sv_conn *c, uint64_t *tx, uint64_t *rx);
bool sv_lane_up(const struct sv_conn *c);
void sv_lane_close(struct sv_conn *c);
void sv_lane_free(struct sv_conn *c);

/* Before the stream write of iov[0..n): its datagram copy, if it goes.
 * Offsets are c->tx_bytes and c->rx_bytes, which count the stream's bytes
 * from its first (tcp/stream.c), lane or not. */
void sv_lane_copy(struct sv_conn *c, const struct iovec *iov, int n);
/* The next bytes of the stream from a datagram, into iov (0: none). */
ssize_t sv_lane_read(struct sv_conn *c, const struct iovec *iov, int n);
/* The stream's bytes a datagram already brought, read and dropped: false
 * if some are left (r is then what the socket said: -errno or 0 for EOF). */
bool sv_lane_skip(struct sv_conn *c, ssize_t *r);
/* The socket gave r > 0 bytes after the skipped ones. */
void sv_lane_stream_read(struct sv_conn *c, ssize_t r);

#endif
