/*
 * Where a message's time goes: a build with -DSV_STAMPS=ON (make stamps)
 * records the TSC at the points below, and with SOFTVERBS_STAMPS=PREFIX set
 * writes them to PREFIX.<pid> at exit; bench/stamps.py reads two such files
 * (two processes share the TSC) and prints each step's median
 * (docs/measurements.md, 'Where a one-way trip goes').  perf samples
 * where time is spent, not in what order; a stamp costs a few
 * nanoseconds, little enough to see a path of tens of steps.  In any other
 * build sv_stamp() is nothing.
 */
#ifndef SV_UTIL_STAMP_H
#define SV_UTIL_STAMP_H

#include <stdint.h>

enum sv_stamp_point {
	SV_ST_POST_SEND,        /* ibv_post_send entered */
	SV_ST_ENQUEUED,         /* its WR is in the send queue */
	SV_ST_POST_SEND_DONE,   /* ibv_post_send returns */
	SV_ST_POST_RECV,        /* ibv_post_recv entered */
	SV_ST_POST_RECV_DONE,   /* ibv_post_recv returns */
	SV_ST_POLL_FOUND,       /* ibv_poll_cq returns completions */
	SV_ST_KICK,             /* the requester looks for work to send */
	SV_ST_FILL,             /* a request's header is built */
	SV_ST_FILLED,           /* its payload is in the frame */
	SV_ST_RING_WRITE,       /* a record is written into a ring */
	SV_ST_RING_WRITTEN,     /* ... and published (the reader may see it) */
	SV_ST_SOCK_SEND,        /* a socket send begins */
	SV_ST_SOCK_SENT,        /* ... and returned */
	SV_ST_RINGS_READY,      /* a poll found rings with input */
	SV_ST_RINGS_DONE,       /* ... and served them */
	SV_ST_SOCK_READ,        /* a socket read brought bytes */
	SV_ST_SERVE,            /* a channel's QP is locked to serve it */
	SV_ST_STAGED,           /* a read into the staging buffer returned */
	SV_ST_HEADER,           /* a frame's header is read and checked */
	SV_ST_BEGUN,            /* its request or response has begun */
	SV_ST_PLACED,           /* its payload is placed */
	SV_ST_ENDED,            /* it is done (ACKs applied, receive completed) */
	SV_ST_BATCH_END,        /* responses written, completions pushed */
	SV_ST_SERVED,           /* the channel is served */
	SV_ST_UNLOCKED,         /* ... and its QP unlocked */
	SV_ST_N
};

const char *sv_stamp_name(enum sv_stamp_point p);

#ifdef SV_STAMPS
void sv_stamp(enum sv_stamp_point p);
#else
static inline void sv_stamp(enum sv_stamp_point p)
{
	(void)p;
}
#endif

#endif
