/* SPDX-License-Identifier: MIT */
/*
 * softverbs rsockets: sockets over RDMA (rsocket(7)), built on the public
 * librdmacm and libibverbs API only, as an application would build them.
 *
 * An rsocket's number is an epoll descriptor of its own that holds the
 * descriptors which can make it progress (its CM event channel, its
 * completion channel, an eventfd other threads use to wake sleepers), so
 * rpoll and the preload library's poll/select can sleep on it as on a
 * socket.  One mutex per rsocket guards all of it; it is never held while
 * sleeping.  Every call holds a reference from its lookup (rs_get or
 * rs_enter) to its return, and so does the number itself until rclose: the
 * last reference frees the rsocket, so a thread asleep in a call never
 * finds it gone.  The references are counted under the table's lock, which
 * may be taken with an rsocket's mutex held, never the other way round.
 *
 * A stream rsocket is one RC QP.  The protocol (docs/wire-format.md,
 * "rsockets") is SENDs into fixed-size receive slots with credits: a slot
 * is a credit, every message carries in its immediate data the credits its
 * sender has freed since it last said so, and the last credit is kept for
 * control messages so two peers can never wait on each other's credits.
 * A datagram rsocket is one UD QP (rs/dgram.c).
 */
#ifndef SOFTVERBS_RS_H
#define SOFTVERBS_RS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#define RS_EXPORT __attribute__((visibility("default")))

/* Stream socket states; rs_state_name() names them (rs/table.c). */
enum rs_state {
	RS_IDLE,		/* created, maybe bound */
	RS_LISTENING,
	RS_RESOLVING_ADDR,	/* rconnect: waiting for ADDR_RESOLVED */
	RS_RESOLVING_ROUTE,	/* waiting for ROUTE_RESOLVED */
	RS_CONNECTING,		/* rdma_connect sent, waiting for ESTABLISHED */
	RS_CONNECTED,
	RS_DISCONNECTED,	/* the connection ended; data already in may be read */
	RS_ERROR,		/* failed to connect, or the QP failed; err says why */
	RS_STATE_COUNT
};
const char *rs_state_name(enum rs_state s);

/* Immediate data of every message: op in the top bits, credits below. */
enum rs_op { RS_OP_DATA, RS_OP_CREDIT, RS_OP_FIN, RS_OP_IOMAP, RS_OP_COUNT };
#define RS_IMM_OP_SHIFT 28
#define RS_IMM_CREDITS 0x0fffffffu

/* Private data of the connect request and reply. */
struct rs_conn_data {
	uint8_t version;	/* RS_PROTO_VERSION */
	uint8_t reserved[3];
	uint32_t slot_size;	/* big endian: the sender's receive slots */
	uint32_t slots;
};
#define RS_PROTO_VERSION 1

/* Payload of RS_OP_IOMAP: a buffer the peer may riowrite at [offset, +len). */
struct rs_iomap_wire {
	uint64_t offset;	/* big endian, all */
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct rs_iomap {
	bool used;
	uint64_t offset, addr, len;
	uint32_t rkey;
	void *buf;		/* local maps: the application's buffer */
	struct ibv_mr *mr;
	uint64_t unsent;	/* local maps not announced yet: riomap's order, 0 once sent */
};

/* A received message not yet read by the application. */
struct rs_rx {
	uint32_t slot, off, len;
};

/* A connect request raccept has not taken yet. */
struct rs_pending {
	struct rdma_cm_id *id;
	struct rs_conn_data peer;
};

struct rsock {
	int fd;			/* epoll fd: the rsocket's number */
	int evfd;		/* written to wake sleepers after progress */
	int type;		/* SOCK_STREAM or SOCK_DGRAM */
	int domain;
	pthread_mutex_t lock;
	enum rs_state state;
	int err;		/* SO_ERROR: pending error */
	int sleepers;		/* threads in poll(2) on it: rs_sleep, rpoll (rs/poll.c) */
	int behind;		/* sleepers that went to sleep before the last rs_wake */
	unsigned int gen;	/* rs_wakes so far */
	int refs;		/* the number's, and one per call: under the table's lock */
	bool closed;		/* rclosed: calls still in it return EBADF */
	bool nonblock;
	bool shut_rd, shut_wr;	/* local shutdown */
	bool peer_fin;		/* the peer shut its writing side */
	bool fin_pending;	/* FIN waits for a credit */
	bool fin_sent;

	/* options (rs/opt.c) */
	int rcvbuf, sndbuf, sqsize, rqsize, inline_size, iomap_size;
	int nodelay, keepalive, keepidle, oobinline, reuseaddr;
	struct linger linger;

	struct rdma_event_channel *cm_ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	bool own_pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool cq_armed;
	unsigned int cq_events;	/* not yet acknowledged */

	/* listening */
	struct rs_pending *backlog;
	int backlog_len, backlog_max;

	/* receiving: slots the peer SENDs into */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	uint32_t rslots, rslot_size;
	struct rs_rx *rx;	/* ring of rslots entries */
	uint32_t rx_head, rx_count;
	uint32_t unreported;	/* slots reposted since we last told the peer */

	/* sending */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	uint32_t sslots, sslot_size;
	uint32_t *sfree;	/* stack of free send slots */
	uint32_t sfree_count;
	uint32_t sq_size, sq_avail;
	uint32_t credits;	/* peer receive slots we may fill */
	uint32_t peer_slots;

	/* riomap: ours (what the peer may write) and the peer's */
	struct rs_iomap *lmap, *rmap;
	int lmap_count, rmap_count;
	uint64_t iomap_seq;	/* riomap calls so far: orders the unsent maps */
	int iomap_unsent;	/* local maps waiting for a credit to be announced */

	/* datagram sockets (rs/dgram.c) */
	struct rs_dgram *dg;
};

/* ---- rs/table.c: numbers, creation, destruction ---------------------- */
struct rsock *rs_get(int s);			/* a reference; NULL: errno EBADF */
void rs_put(struct rsock *rs);			/* the last one frees; errno kept */
void rs_hold(struct rsock *rs);			/* one more reference, for a thread */
/* rs_get and the lock, for a call; NULL (EBADF) if rclosed meanwhile. */
struct rsock *rs_enter(int s);
void rs_leave(struct rsock *rs);		/* unlock and rs_put */
struct rsock *rs_alloc(int type, int domain);	/* registered, not locked */
/* Takes the number away: later lookups fail, the number's reference goes. */
void rs_unregister(struct rsock *rs);
int rs_epoll_add(struct rsock *rs, int fd);
int rs_nonblock(int fd);

/* ---- rs/linger.c: closes that finish in the background --------------- */
/* rs_conn_close on a thread of its own; false if none could be started
 * or RS_CLOSERS_MAX are under way (the caller lingers itself). */
bool rs_close_later(struct rsock *rs);

/* ---- rs/opt.c: defaults from /etc/rdma/rsocket ------------------------ */
void rs_defaults(struct rsock *rs);
int rs_polling_us(void);
/* Copies a socket address as getsockname does (truncating to *len). */
int rs_copy_addr(const struct sockaddr *sa, struct sockaddr *addr, socklen_t *len);

/* ---- rs/conn.c: connection management -------------------------------- */
/* Handles every queued CM event of rs (never blocks); lock held. */
int rs_cm_progress(struct rsock *rs);
/* Tears the connection down: FIN, bounded wait for sends, disconnect. */
void rs_conn_close(struct rsock *rs);
#define RS_CLOSE_MS 2000	/* how long rs_conn_close waits for each of those */
void rs_conn_free(struct rsock *rs);

/* ---- rs/stream.c: the data path ---------------------------------------- */
int rs_stream_setup(struct rsock *rs, const struct rs_conn_data *peer);
void rs_conn_data_init(struct rsock *rs, struct rs_conn_data *cd);
int rs_cq_progress(struct rsock *rs);	/* completions taken */
bool rs_can_send(struct rsock *rs);
void rs_send_control(struct rsock *rs);	/* credits and FIN when due */
void rs_stream_free(struct rsock *rs);
ssize_t rs_stream_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_stream_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);
/* One SEND_WITH_IMM of op, from send slot `slot` (>= 0) or inline data. */
int rs_post_msg(struct rsock *rs, enum rs_op op, int slot, const void *data, uint32_t len);

/* ---- rs/iomap.c: riomap's buffers and their announcements --------------- */
/* Announces the maps riomap queued, oldest first, while credits allow. */
void rs_iomap_flush(struct rsock *rs);
void rs_iomap_remote(struct rsock *rs, const struct rs_iomap_wire *w);	/* the peer's map */

/* ---- rs/poll.c: waiting ----------------------------------------------- */
int rs_progress(struct rsock *rs);		/* CM events and completions taken */
short rs_revents(struct rsock *rs);		/* POLLIN/OUT/HUP/ERR now */
/* Sleeps until something may have changed, or timeout_ms (-1: forever).
 * Lock held on entry and return; 0, or -1 with errno ETIMEDOUT/EINTR, or
 * EBADF once the rsocket is rclosed: every call must then return. */
int rs_wait(struct rsock *rs, int timeout_ms);
/* rs_wait for the lingering of a connection's close: not cut short by it. */
int rs_sleep(struct rsock *rs, int timeout_ms);
void rs_wake(struct rsock *rs);			/* something changed: every sleeper looks */
/* Counts the caller asleep (lock held): the gen to hand rs_sleep_leave. */
unsigned int rs_sleep_enter(struct rsock *rs);
void rs_sleep_leave(struct rsock *rs, unsigned int gen);

/* ---- rs/dgram.c -------------------------------------------------------- */
int rs_dgram_init(struct rsock *rs);
void rs_dgram_free(struct rsock *rs);
int rs_dgram_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
int rs_dgram_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
ssize_t rs_dgram_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		      const struct sockaddr *to, socklen_t tolen);
ssize_t rs_dgram_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		      struct sockaddr *from, socklen_t *fromlen);
int rs_dgram_progress(struct rsock *rs);
short rs_dgram_revents(struct rsock *rs);
int rs_dgram_name(struct rsock *rs, struct sockaddr *addr, socklen_t *len, bool peer);

static inline int rs_errno(int e)
{
	errno = e;
	return -1;
}

static inline size_t rs_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

#endif
