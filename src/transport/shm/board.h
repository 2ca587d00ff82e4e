/*
 * The input board: a bitmap in shared memory with a bit for each ring
 * channel of ours that joined it, which the peer sets when it gives us
 * something to look at there (a record, its ACK word, room for a write of
 * ours that waits).  A poller finds the channels with work among thousands
 * by reading the board instead of every ring (docs/measurements.md, 'Input
 * board').  A CQ's first channels stay off it: a bit costs the writer a
 * fence and a shared line, which a few rings scanned cost less than.
 *
 * The progress thread reads it too, for the node's channels (shm/ringchan.c
 * look_board): whoever takes a bit and leaves the work sets it again.  A
 * bit set for nothing costs a look; one that went missing would cost up to
 * SOFTVERBS_RING_LOOK_MS, the progress thread's look at every ring.  Peers
 * of our own user map it writable (shm/handshake.c); it holds nothing else.
 */
#ifndef SV_SHM_BOARD_H
#define SV_SHM_BOARD_H

#include <stdbool.h>
#include <stdint.h>

#define SV_BOARD_MAGIC 0x53564244u     /* "SVBD" */
#define SV_BOARD_SLOTS 65536u          /* slot 0 is "none"; channels beyond stay scanned */

/* A word of `bits` per 64 slots, and a bit of `summary` per word that may
 * have bits set: a poll reads the summary, then only the words it names. */
struct sv_board {
	uint32_t magic, slots;
	uint8_t pad[56];
	uint64_t summary[SV_BOARD_SLOTS / 64 / 64];
	uint64_t bits[SV_BOARD_SLOTS / 64];
};

struct sv_conn;

int sv_board_fd(void);                         /* ours, to offer; -1: none */
struct sv_board *sv_board_map(int fd);         /* a peer's, writable */
void sv_board_unmap(struct sv_board *b);
void sv_board_forget_after_fork(void);

/* Our end of a ring channel takes a slot (published in its receive ring's
 * consumer_slot) or gives it back (when the channel is freed). */
bool sv_conn_board_join(struct sv_conn *c);
void sv_conn_board_leave(struct sv_conn *c);
/* Input no peer will announce (a held frame made ready, a paused channel
 * resumed, a channel served in part): set its bit ourselves. */
void sv_conn_board_remind(struct sv_conn *c);
/* The peer's bit for this channel, after what we wrote for it to see. */
void sv_conn_board_post(struct sv_conn *c);
/* The boarded channels whose bit is set and that `mine` accepts, their
 * bits cleared first, at most `max`, from where the last full take of the
 * caller stopped (*cursor, a word). */
int sv_board_take(bool (*mine)(const struct sv_conn *c, const void *arg), const void *arg,
		  struct sv_conn **out, int max, uint32_t *cursor);

#endif
