/*
 * The receive mirror: SENDs a same-host requester places itself.
 *
 * A responder publishes the receives posted to its QP, up to
 * SV_MIRROR_N ahead of the next one a request will take, in the memfd of
 * the channel its requests come on.  An RC QP's requests take receives in
 * order, one each, whichever way they travel: the requester's n-th
 * receive-taking request takes the responder's n-th receive (both count
 * from the QP's last RESET).  So a requester with nothing in flight may
 * copy a SEND into the receive it will take, if the mirror holds it and
 * the responder's published MR table lets it be written there, and tell
 * the responder with a frame that has no payload (SV_OP_PLACED): the
 * responder only completes the receive.  Anything else travels as a SEND,
 * and the responder decides as always.
 *
 * An entry is written by the responder only while its receive is the
 * next one's or a later one's, and read by the requester only for the
 * receive its next request takes: once the requester sees the index it
 * wants, the entry stays until that receive is taken.
 */
#ifndef SV_SHM_MIRROR_H
#define SV_SHM_MIRROR_H

#include <stdint.h>

#define SV_MIRROR_N 32

struct sv_mirror_ent {
	uint32_t seq;                /* the receive's index + 1, stored last; else stale */
	uint32_t nsge;
	uint32_t len, lkey;          /* its first SGE */
	uint64_t addr;
	uint64_t pad;
};

struct sv_mirror {
	struct sv_mirror_ent e[SV_MIRROR_N];
};
_Static_assert(sizeof(struct sv_mirror) % 64 == 0, "the mirror keeps the rings on lines");

#endif
