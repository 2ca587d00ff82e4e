/*
 * The input board (src/transport/shm/board.c), in one process: fake ring
 * channels whose peer is this process itself (its board mapped a second
 * time through the descriptor it would offer, both rings' headers one).
 *
 * Cases (each checks exact results):
 *   1. join gives slots from 1 and publishes them in the receive ring's
 *      consumer_slot; a channel of a CQ that joined nothing takes nothing;
 *   2. a post sets the bit the peer published and its word's summary bit;
 *      a take returns the channel once, with both cleared; a second take
 *      returns nothing;
 *   3. a take leaves another caller's channels (mine() false), their
 *      bits and their word's summary bit, returns them to their own caller; a take stops at `max` and
 *      the next one resumes where it stopped;
 *   4. remind sets our own bit; a post to a slot beyond the board, or
 *      with no slot published, sets nothing;
 *   5. leave clears the slot, its bit and the ring's consumer_slot; the
 *      slot is given again to the next join;
 *   6. more channels than 64 spread over words; all come back.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/board.h"
#include "transport/transport.h"

static int failures;

#define CHECK(cond)                                                                    \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                                    \
		}                                                                      \
	} while (0)

#define N 100

/* A fake channel: its rings' headers are one, so what it publishes as
 * consumer it reads back as producer. */
struct fake {
	struct sv_conn c;
	struct sv_ring ring;
	int owner;               /* which caller takes it */
};

static struct fake *fakes;
static struct sv_board *peer;    /* our own board, mapped as a peer maps it */

static void fake_init(struct fake *f, int owner)
{
	memset(f, 0, sizeof(*f));
	f->c.caps = SV_CAP_MAPPED;
	f->c.shm.rx = f->c.shm.tx = &f->ring;
	f->c.peer_board = peer;
	f->owner = owner;
}

static bool mine(const struct sv_conn *c, const void *arg)
{
	return ((const struct fake *)c)->owner == *(const int *)arg;
}

static int take(int owner, struct sv_conn **out, int max, uint32_t *cursor)
{
	return sv_board_take(mine, &owner, out, max, cursor);
}

int main(void)
{
	struct sv_conn *out[N];
	uint32_t cur = 0, cur2 = 0;
	int fd = sv_board_fd(), k;

	CHECK(fd >= 0);
	peer = sv_board_map(fd);
	CHECK(peer != NULL);
	if (!peer)
		return 1;
	fakes = calloc(N, sizeof(*fakes));
	for (int i = 0; i < N; i++)
		fake_init(&fakes[i], i < 3 ? 0 : 1);

	/* 1 */
	CHECK(take(0, out, N, &cur) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(sv_conn_board_join(&fakes[i].c));
		CHECK(fakes[i].c.shm.slot == (uint32_t)i + 1);
		CHECK(fakes[i].ring.consumer_slot == (uint32_t)i + 1);
	}
	/* joining reminds: all three once, then nothing */
	CHECK(take(0, out, N, &cur) == 3);
	CHECK(take(0, out, N, &cur) == 0);

	/* 2 */
	sv_conn_board_post(&fakes[1].c);
	CHECK(peer->bits[0] == 1ull << 2);
	CHECK(peer->summary[0] == 1);
	k = take(0, out, N, &cur);
	CHECK(k == 1 && out[0] == &fakes[1].c);
	CHECK(peer->bits[0] == 0);
	CHECK(peer->summary[0] == 0);
	CHECK(take(0, out, N, &cur) == 0);

	/* 3 */
	fake_init(&fakes[3], 1);
	CHECK(sv_conn_board_join(&fakes[3].c));
	CHECK(take(0, out, N, &cur) == 0);         /* fakes[3] is caller 1's */
	CHECK(peer->bits[0] == 1ull << 4);
	CHECK(peer->summary[0] == 1);
	CHECK(take(1, out, N, &cur2) == 1 && out[0] == &fakes[3].c);
	CHECK(peer->summary[0] == 0);
	for (int i = 0; i < 3; i++)
		sv_conn_board_post(&fakes[i].c);
	CHECK(take(0, out, 2, &cur) == 2);
	CHECK(take(0, out, 2, &cur) == 1);
	CHECK(take(0, out, 2, &cur) == 0);

	/* 4 */
	sv_conn_board_remind(&fakes[0].c);
	CHECK(take(0, out, N, &cur) == 1 && out[0] == &fakes[0].c);
	fakes[0].ring.consumer_slot = SV_BOARD_SLOTS;       /* a peer's lie */
	sv_conn_board_post(&fakes[0].c);
	fakes[0].ring.consumer_slot = 0;                    /* none */
	sv_conn_board_post(&fakes[0].c);
	CHECK(take(0, out, N, &cur) == 0);
	fakes[0].ring.consumer_slot = fakes[0].c.shm.slot;

	/* 5 */
	sv_conn_board_post(&fakes[2].c);
	sv_conn_board_leave(&fakes[2].c);
	CHECK(fakes[2].c.shm.slot == 0 && fakes[2].ring.consumer_slot == 0);
	CHECK(peer->bits[0] == 0);
	CHECK(take(0, out, N, &cur) == 0);
	fake_init(&fakes[2], 0);
	CHECK(sv_conn_board_join(&fakes[2].c) && fakes[2].c.shm.slot == 3);
	CHECK(take(0, out, N, &cur) == 1);

	/* 6 */
	for (int i = 4; i < N; i++) {
		CHECK(sv_conn_board_join(&fakes[i].c));
		CHECK(fakes[i].c.shm.slot == (uint32_t)i + 1);
	}
	CHECK(take(1, out, N, &cur2) == N - 4);
	for (int i = 4; i < N; i++)
		sv_conn_board_post(&fakes[i].c);
	CHECK(peer->summary[0] == 3);               /* slots 5..100: words 0 and 1 */
	k = 0;
	for (int round = 0; round < 20; round++)
		k += take(1, out, 7, &cur2);
	CHECK(k == N - 4);
	CHECK(peer->summary[0] == 0 && peer->bits[0] == 0 && peer->bits[1] == 0);
	for (int i = 0; i < N; i++)
		sv_conn_board_leave(&fakes[i].c);
	sv_board_unmap(peer);
	free(fakes);
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("board: all checks passed\n");
	return failures ? 1 : 0;
}
