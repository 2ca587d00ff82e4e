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

#define SV_RING_MAGIC 0x53565247u   /* "SVRG" */

struct sv_ring {
	uint32_t magic;
	uint32_t size;               /* data bytes, a power of two */
	uint32_t closed;             /* an end closed the channel (its QP left RTS/RTR) */
	uint8_t pad0[52];
	uint64_t head;               /* consumer position (free-running) */
	uint32_t consumer_wants_wake;/* consumer sleeps: producer rings the doorbell */
	uint8_t pad1[52];
	uint64_t tail;               /* producer position (free-running) */
	uint32_t producer_wants_wake;/* producer waits for room */
	uint8_t pad2[52];
	uint8_t data[];
};

/* `size` is the caller's own copy, checked once at attach time: the shared
 * header is never trusted for bounds. */
void sv_ring_init(struct sv_ring *r, uint32_t size);
size_t sv_ring_readable(const struct sv_ring *r, uint32_t size);
/* Copy up to the iovecs' total into / out of the ring; returns bytes moved. */
size_t sv_ring_write(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n);
size_t sv_ring_read(struct sv_ring *r, uint32_t size, const struct iovec *iov, int n);

#endif
