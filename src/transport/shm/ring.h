/*
 * A single-producer single-consumer ring of records in shared memory.  It
 * gives a channel the semantics of a non-blocking stream socket without
 * syscalls.  Each write is one record that starts on a cache line: an
 * 8-byte word (its length and where it starts) and then its bytes.  The
 * consumer looks for the next record in the record itself, not at a
 * separate write position: a small frame costs the consumer one cache line
 * from the producer's core, where a position word and a frame spanning two
 * lines cost three.  Offsets only, never pointers: the two processes map
 * it at different addresses.
 */
#ifndef SV_SHM_RING_H
#define SV_SHM_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define SV_RING_MAGIC 0x53565237u   /* "SVR7": records; headers before all data (shm/chan.c);
				     * the consumer's board slot (shm/board.h); the
				     * process's bell and life line (shm/peer.h); a
				     * channel's receive mirror (shm/mirror.h) */
#define SV_RING_LINE  64u

/* One cache line each for what rarely changes (read on every operation,
 * so it must not share a line with a position the other side writes), the
 * consumer's position, the producer's, the ACK word (which the consumer
 * reads while it waits, and which changes only with an ACK) and the
 * producer's announcement of a cross-memory-attach copy (shm/cma.h). */
struct sv_ring {
	uint32_t magic;
	uint32_t size;               /* data bytes, a power of two */
	uint32_t closed;             /* an end closed the channel (its QP left RTS/RTR) */
	uint32_t consumer_wants_wake;/* consumer sleeps: producer rings the doorbell */
	uint32_t producer_wants_wake;/* producer waits for room */
	uint32_t consumer_armed;     /* a thread of the consumer sleeps for its CQ */
	uint32_t consumer_sleeps;    /* enum sv_ring_sleep: that thread sleeps on the
				      * wake descriptor it gave us; the producer who
				      * takes it (0) wakes it there */
	uint32_t consumer_slot;      /* the consumer's board slot for the channel, 0: none */
	uint32_t consumer_unpolled;  /* no poller of the consumer reads the ring: the
				      * producer rings whenever it asks */
	uint8_t pad0[28];
	uint64_t head;               /* consumer: start of the next record to finish */
	uint8_t pad1[56];
	uint64_t tail;               /* producer: where its next record goes (its own) */
	uint64_t cleared;            /* producer: lines in [tail, cleared) start with 0 */
	uint8_t pad2[48];
	uint32_t ack;                /* the producer's cumulative ACK (see below) */
	uint8_t pad3[60];
	uint32_t direct_slot;        /* producer: the consumer's MR slot + 1 it copies
				      * into or out of by cross-memory attach, 0 none */
	uint8_t pad4[60];
};
_Static_assert(sizeof(struct sv_ring) % SV_RING_LINE == 0, "ring headers stack on lines");

/* What wakes a consumer's thread asleep on its completion channel
 * (consumer_sleeps): any frame that completes, or a solicited one only. */
enum sv_ring_sleep {
	SV_RING_AWAKE = 0,
	SV_RING_SLEEPS_ANY = 1,
	SV_RING_SLEEPS_SOLICITED = 2,
};

/* The consumer's own state: how much of the record at `head` it has read. */
struct sv_ring_rd {
	uint32_t off;
};

/* `size` and `data` (the ring's bytes, which need not follow its header)
 * are the caller's own copies, checked once at attach time: the shared
 * header is never trusted for bounds, nor is a record's length. */
/* A new ring whose first record goes at stream position `start` (a line). */
void sv_ring_init(struct sv_ring *r, uint32_t size, uint64_t start);
/* Consumer: is a record at its position?  (One it has begun to read is
 * still there: a record leaves when its last byte is read.)  Any thread. */
bool sv_ring_has_input(const struct sv_ring *r, const uint8_t *data, uint32_t size);
/* Consumer: the length of the record at its position (0: none yet), for a
 * reader of whole records (datagrams), which reads it with one
 * sv_ring_read of exactly that many bytes. */
uint32_t sv_ring_record_len(const struct sv_ring *r, const uint8_t *data, uint32_t size);
/* Producer: could a write take at least one byte now? */
bool sv_ring_writable(const struct sv_ring *r, uint32_t size);
/* Producer: would a record of `len` bytes fit whole now?  (A datagram is
 * written whole or not at all.) */
bool sv_ring_fits(struct sv_ring *r, uint32_t size, size_t len, uint64_t *head_seen);
/* Copy up to the iovecs' total into / out of the ring; returns bytes moved.
 * The producer keeps its own copy of the consumer's position (*head_seen)
 * and reads the shared one only when that copy says the ring is too full:
 * each read of it is a cache miss while the consumer is busy. */
size_t sv_ring_write(struct sv_ring *r, uint8_t *data, uint32_t size, const struct iovec *iov,
		     int n, uint64_t *head_seen);
size_t sv_ring_read(struct sv_ring *r, const uint8_t *data, uint32_t size, const struct iovec *iov,
		    int n, struct sv_ring_rd *rd);
/* Consumer: take the record at its position, not begun, if it is exactly
 * `len` bytes long, without copying it (its bytes were peeked); returns
 * whether it did. */
bool sv_ring_skip(struct sv_ring *r, const uint8_t *data, uint32_t size, size_t len,
		  const struct sv_ring_rd *rd);
/* Consumer: copy the next `len` bytes without taking them, if the record
 * it is reading holds them all. */
bool sv_ring_peek(const struct sv_ring *r, const uint8_t *data, uint32_t size, void *buf,
		  size_t len, const struct sv_ring_rd *rd);

/* A responder acknowledges in its response ring, in a line of its own,
 * instead of writing ACK frames into it: one store.  0 means "nothing yet";
 * else the PSN of the last request executed, with SV_RING_ACK_VALID. */
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
