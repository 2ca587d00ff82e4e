/*
 * Fault injection below the reliability layer (SOFTVERBS_FAULT,
 * docs/observability.md): frames of socket channels and datagrams are
 * dropped, duplicated or corrupted where they are written, as a lossy
 * fabric would, and a corrupted one is detected where it is read (a
 * CRC32C trailer, as RoCE's ICRC) and dropped.  Control frames (HELLO,
 * VERIFY) pass untouched: they are the link's set-up, not its traffic.
 * Same-host channels with faults keep their unix socket (no rings, no
 * direct access to the peer's memory): every frame then crosses the filter.
 */
#ifndef SV_TRANSPORT_FAULT_H
#define SV_TRANSPORT_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "util/env.h"

struct sv_conn;
struct sv_wire_hdr;

/* What happens to one frame. */
struct sv_fault_verdict {
	bool drop, dup, corrupt;
	bool delay;                   /* held back: it goes after the next frame */
	uint32_t flip;                /* corrupt: which bit (mod the frame's) */
};

/* A deterministic draw per frame: seeded from the seed and the channel's
 * identity (its kind, direction and rank among the process's channels of
 * that kind and direction). */
struct sv_fault_rng {
	uint64_t s;
	const struct sv_fault_conf *conf;
	uint64_t frames, dropped, duplicated, corrupted, delayed, bad;   /* for logs */
};

/* draw.c */
/* Set r for a channel of `kind`; false when that kind has no faults. */
bool sv_fault_rng_init(struct sv_fault_rng *r, enum sv_fault_kind kind, bool outbound);
struct sv_fault_verdict sv_fault_draw(struct sv_fault_rng *r);
/* Is this frame (its wire bytes, at any alignment: frames follow each other
 * in one write) subject to faults?  Not control frames. */
bool sv_fault_applies(const uint8_t *frame);
/* frame (header, payload) of len bytes, with room for 4 more: marks it
 * checked, appends its CRC32C; returns the new length. */
size_t sv_fault_seal(uint8_t *frame, size_t len);
/* A sealed frame of len bytes (trailer included): true if intact; then
 * unmarked and len - 4 bytes long. */
bool sv_fault_check(uint8_t *frame, size_t len);
/* Flip one bit (chosen by `bit`) of a sealed frame of len bytes; on a
 * stream, never one its framing depends on. */
void sv_fault_flip(uint8_t *frame, size_t len, uint32_t bit, bool stream);

/* stream.c: a socket channel's filter (conn.c calls it when c->fault) */
struct sv_fault_stream;
/* Give c a filter if its kind has faults (at creation); -ENOMEM on failure. */
int sv_fault_stream_attach(struct sv_conn *c, enum sv_fault_kind kind);
ssize_t sv_fault_stream_writev(struct sv_conn *c, const struct iovec *iov, int n);
ssize_t sv_fault_stream_readv(struct sv_conn *c, const struct iovec *iov, int n);
/* Checked frames wait for the engine (it must read on: the socket may say nothing more). */
bool sv_fault_stream_pending(const struct sv_conn *c);
/* The channel closes: its last frames go now if the socket takes them. */
void sv_fault_stream_close(struct sv_conn *c);
void sv_fault_stream_free(struct sv_conn *c);

/* dgram.c: UD datagrams (UDP and same-host UD rings; not multicast) */
struct sv_node;
/* node->fault_dgram, if datagrams have faults; -1 on failure. */
int sv_fault_dgram_attach(struct sv_node *node);
void sv_fault_dgram_free(struct sv_node *node);
/* Send through `xmit` what the faults make of the datagram: nothing, it
 * sealed, corrupted, twice, or later (after the process's next datagram,
 * with its own ctx, ctx_len bytes at most SV_FAULT_CTX_MAX, copied).
 * Returns xmit's result (0 when dropped or held). */
#define SV_FAULT_CTX_MAX 64
int sv_fault_dgram_send(struct sv_node *node, const struct iovec *iov, int n,
			int (*xmit)(void *ctx, const struct iovec *iov, int n), void *ctx,
			size_t ctx_len);
/* A received sealed datagram of len bytes (trailer included): intact? */
bool sv_fault_dgram_check(const uint8_t *buf, size_t len);

#endif
