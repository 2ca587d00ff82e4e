/*
 * A single-producer single-consumer byte ring in shared memory.  It gives a
 * channel the semantics of a non-blocking stream socket without syscalls.
 * The producer owns `tail`, the consumer owns `head`; each publishes with a
 * release store and reads the other's with an acquire load.  Offsets only,
 * never pointers: the two processes map it at different addresses.
 */
#ifndef SV_SHM_RING_H
#define SV_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SV_RING_MAGIC 0x53565232u   /* "SVR2": version 2 has the ACK word */

/* One cache line each for what rarely changes (read on every operation,
 * so it must not share a line with a position the other side writes), the
 * consumer's position and the producer's. */
struct sv_ring {
	uint32_t magic;
	uint32_t size;               /* data bytes, a power of two */
	uint32_t closed;             /* an end closed the channel (its QP left RTS/RTR) */
	uint32_t consumer_wants_wake;/* consumer sleeps: producer rings the doorbell */
	uint32_t producer_wants_wake;/* producer waits for room */
	uint8_t pad0[44];
	uint64_t head;               /* consumer position (free-running) */
	uint8_t pad1[56];
	uint64_t tail;               /* producer position (free-running) */
	uint32_t ack;                /* the producer's cumulative ACK (see below) */
	uint8_t pad2[52];
	uint8_t data[];
};

/* `size` is the caller's own copy, checked once at attach time: the shared
 * header is never trusted for bounds. */
void sv_ring_init(struct sv_ring *r, uint32_t size);
size_t sv_ring_readable(const struct sv_ring *r, uint32_t size);
/* Copy up to the iovecs' total into / out of the ring; returns bytes moved.
 * The producer keeps its own copy of the consumer's position (*head_seen)
 * and reads the shared one only when that copy says the ring is too full:
 * each read of it is a cache miss while the consumer is busy. */
size_t sv_ring_write(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n,
		     uint64_t *head_seen);
size_t sv_ring_read(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n);

/* A responder acknowledges in its response ring, next to the position the
 * requester reads anyway, instead of writing ACK frames into it: one store,
 * and the requester finds responses and ACK in one cache line.  0 means
 * "nothing yet"; else the PSN of the last request executed, with
 * SV_RING_ACK_VALID. */
#define SV_RING_ACK_VALID (1u << 31)
static inline void sv_ring_ack_publish(struct sv_ring *r, uint32_t psn)
{
	/* seq_cst: orders it before the doorbell flag's load (Dekker) */
	__atomic_store_n(&r->ack, psn | SV_RING_ACK_VALID, __ATOMIC_SEQ_CST);
}

static inline uint32_t sv_ring_ack_load(const struct sv_ring *r)
{
	return __atomic_load_n(&r->ack, __ATOMIC_ACQUIRE);
}

#endif
