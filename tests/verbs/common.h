/*
 * Shared helpers for the verbs tests (tests/verbs/).
 *
 * Every test is a standalone program: exit 0 = pass, 77 = skip, other = fail.
 * CHECK* macros print file:line, the failing expression and its values, then
 * exit(1).  t_alarm() arms a watchdog so no test can hang; a forked child
 * must arm its own (alarms are not inherited across fork()).
 *
 * Typical shape:
 *     struct t_opts o; t_opts_default(&o, IBV_QPT_RC);
 *     struct t_pair p; t_pair_open(&p, &o);      // two connected QPs, one process
 *     ... t_post_send(p.a.qp, ...); wc = t_wc(p.a.cq, 2000); ...
 *     t_pair_close(&p);
 *
 * Two processes: t_two_procs(&o, &o, 30, 10000, parent, child, NULL) forks,
 * then each side opens the device on its own (the library's progress thread
 * does not survive fork()), connects its endpoint to the other's and runs
 * its callback with a struct t_side.
 */
#ifndef TESTS_VERBS_COMMON_H
#define TESTS_VERBS_COMMON_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define T_SKIP 77

#define T_FAIL(...)                                                            \
	do {                                                                   \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);          \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		exit(1);                                                       \
	} while (0)

#define CHECK(e)                                                               \
	do {                                                                   \
		if (!(e))                                                      \
			T_FAIL("CHECK(%s) (errno %d: %s)", #e, errno,          \
			       strerror(errno));                               \
	} while (0)

/* Integer equality; prints both values. */
#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		unsigned long long _a = (unsigned long long)(a);               \
		unsigned long long _b = (unsigned long long)(b);               \
		if (_a != _b)                                                  \
			T_FAIL("CHECK_EQ(%s, %s): %lld (0x%llx) != %lld (0x%llx)", \
			       #a, #b, (long long)_a, _a, (long long)_b, _b);  \
	} while (0)

#define CHECK_NE(a, b)                                                         \
	do {                                                                   \
		unsigned long long _a = (unsigned long long)(a);               \
		unsigned long long _b = (unsigned long long)(b);               \
		if (_a == _b)                                                  \
			T_FAIL("CHECK_NE(%s, %s): both %lld (0x%llx)", #a, #b, \
			       (long long)_a, _a);                             \
	} while (0)

/* A verbs call that returns 0 or an errno value (or -1 with errno set). */
#define CHECK_OK(e)                                                            \
	do {                                                                   \
		int _r = (e);                                                  \
		if (_r)                                                        \
			T_FAIL("%s returned %d (%s), errno %d", #e, _r,         \
			       strerror(_r > 0 ? _r : errno), errno);          \
	} while (0)

/* A verbs call that must fail with errno value `err` (returned or in errno). */
#define CHECK_ERR(e, err)                                                      \
	do {                                                                   \
		errno = 0;                                                     \
		int _r = (e);                                                  \
		int _e = _r > 0 ? _r : (_r < 0 ? errno : 0);                   \
		if (_e != (err))                                               \
			T_FAIL("%s returned %d errno %d (%s), expected %s (%d)", \
			       #e, _r, errno, strerror(_e), #err, (err));      \
	} while (0)

/* A constructor that must return non-NULL. */
#define CHECK_PTR(e)                                                           \
	({                                                                     \
		__typeof__(e) _p = (e);                                        \
		if (!_p)                                                       \
			T_FAIL("%s returned NULL (errno %d: %s)", #e, errno,   \
			       strerror(errno));                               \
		_p;                                                            \
	})

/* A constructor that must fail (NULL) with errno `err`. */
#define CHECK_NULL_ERRNO(e, err)                                               \
	do {                                                                   \
		errno = 0;                                                     \
		void *_p = (void *)(e);                                        \
		if (_p)                                                        \
			T_FAIL("%s succeeded, expected NULL with %s", #e, #err); \
		if (errno != (err))                                            \
			T_FAIL("%s: errno %d (%s), expected %s", #e, errno,    \
			       strerror(errno), #err);                         \
	} while (0)

#define CHECK_STATUS(wc, st)                                                   \
	do {                                                                   \
		struct ibv_wc _w = (wc);                                       \
		if (_w.status != (st))                                         \
			T_FAIL("wc status %s (%d), expected %s (wr_id %llu opcode %d)", \
			       ibv_wc_status_str(_w.status), _w.status, #st,   \
			       (unsigned long long)_w.wr_id, _w.opcode);       \
	} while (0)

#define T_SKIP_IF(cond, ...)                                                   \
	do {                                                                   \
		if (cond) {                                                    \
			fprintf(stderr, "SKIP: " __VA_ARGS__);                 \
			fputc('\n', stderr);                                   \
			exit(T_SKIP);                                          \
		}                                                              \
	} while (0)

#define T_ALL_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		      IBV_ACCESS_REMOTE_ATOMIC)
#define T_ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | T_ALL_REMOTE)

/* Everything an endpoint is built and connected with. */
struct t_opts {
	enum ibv_qp_type type;
	int cqe;
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline;
	size_t buf_len;
	int mr_access;             /* of the endpoint's buffer */
	int qp_access;             /* qp_access_flags (RC/UC) */
	int sq_sig_all;
	struct ibv_srq *srq;       /* attach the QP to it (no own RQ) */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t qkey;             /* UD */
	struct ibv_pd *pd;         /* use this PD (not freed) instead of a new one */
	struct ibv_comp_channel *channel;   /* for the CQ */
	bool own_channel;          /* no `channel`: the endpoint makes its own (e->ch) */
	void *cq_context;
};

/* One endpoint: a PD, a CQ (send and receive), a QP and a registered buffer. */
struct t_ep {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	uint32_t psn;
	enum ibv_qp_type type;
	bool own_pd;
	struct ibv_comp_channel *ch;   /* its own, with t_opts.own_channel */
};

/* What a peer needs to address an endpoint. */
struct t_info {
	uint16_t lid;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
	union ibv_gid gid;
};

/* Two connected endpoints in one process (a -> b and b -> a). */
struct t_pair {
	struct ibv_context *ctx;
	struct t_ep a, b;
	struct t_info ia, ib;
	struct ibv_comp_channel *ch;   /* b's CQ's (t_pair_open_ch), or NULL */
};

/* One SRQ in one process: a PD, an SRQ on it and an RC pair a -> b, b
 * receiving through the SRQ (t_ep_pair_srq). */
struct t_srq_pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_srq *srq;
	struct t_ep a, b;
};

/* Watchdog: after `seconds`, print the test name and _exit(2). */
void t_alarm(unsigned int seconds);
/* Under ASan, exit 77 (skip): it reports a cancelled thread's end as a
 * stack overflow (the unwound frames stay poisoned when the thread's
 * alternate signal stack is unset); a few lines without softverbs do too.
 * For tests that pthread_cancel a thread. */
void t_skip_cancel_asan(void);
/* Monotonic milliseconds. */
uint64_t t_now_ms(void);
void t_sleep_ms(unsigned int ms);

/* Open softverbs0 (exit 77 if absent).  Arms a 40 s watchdog unless one is
 * already armed. */
struct ibv_context *t_open(void);

void t_opts_default(struct t_opts *o, enum ibv_qp_type type);
/* Create an endpoint's objects; the QP stays in RESET. */
void t_ep_create(struct t_ep *e, struct ibv_context *ctx, const struct t_opts *o);
void t_ep_destroy(struct t_ep *e);
void t_ep_info(const struct t_ep *e, struct t_info *info);
/* RESET -> INIT -> RTR -> RTS towards `remote` (UD: remote unused). */
void t_ep_connect(struct t_ep *e, const struct t_opts *o, const struct t_info *remote);
/* Individual transitions (used by t_ep_connect and the state-machine tests). */
int t_to_init(struct ibv_qp *qp, const struct t_opts *o);
int t_to_rtr(struct ibv_qp *qp, const struct t_opts *o, const struct t_info *remote);
int t_to_rts(struct ibv_qp *qp, const struct t_opts *o, uint32_t psn);
enum ibv_qp_state t_qp_state(struct ibv_qp *qp);

void t_pair_open(struct t_pair *p, const struct t_opts *o);
/* Same, with different options per side. */
void t_pair_open2(struct t_pair *p, const struct t_opts *oa, const struct t_opts *ob);
/* Two endpoints on an open context, connected to each other. */
void t_ep_pair(struct ibv_context *ctx, const struct t_opts *oa, const struct t_opts *ob,
	       struct t_ep *a, struct t_ep *b, struct t_info *ia, struct t_info *ib);
/* The same for RC, default options, b receiving through `srq` (of `pd`). */
void t_ep_pair_srq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_srq *srq,
		   struct t_ep *a, struct t_ep *b);
/* t_pair_open, with b's CQ on a new completion channel p->ch of the pair's
 * context, and `cq_context` as that CQ's context. */
void t_pair_open_ch(struct t_pair *p, const struct t_opts *o, void *cq_context);
/* A UD pair with default options (filled into *o) and an address handle
 * from a to b: by LID, or global with b's GID. */
struct ibv_ah *t_pair_open_ud(struct t_pair *p, struct t_opts *o, bool global);
/* t_pair_open, but a's QP is made with ibv_create_qp_ex (capabilities `cap`,
 * the extended post API's `send_ops_flags`); returns a's ibv_qp_ex. */
struct ibv_qp_ex *t_pair_open_qp_ex(struct t_pair *p, const struct t_opts *o,
				    const struct ibv_qp_cap *cap, uint64_t send_ops_flags);
/* Destroys both endpoints (a QP or CQ already destroyed and set to NULL is
 * skipped), the channel if any, and closes the device. */
void t_pair_close(struct t_pair *p);

/* Open the device, a PD, an SRQ of `max_wr` receives of up to the device's
 * max_srq_sge SGEs each (more than b's QP would take itself) and the pair. */
void t_srq_pair_open(struct t_srq_pair *s, uint32_t max_wr);
/* Destroys both endpoints, the SRQ and the PD; closes the device. */
void t_srq_pair_close(struct t_srq_pair *s);

/* Address handle towards `remote`: by LID, or global with its GID. */
struct ibv_ah *t_ah(struct ibv_pd *pd, const struct t_info *remote, bool global);

/* Posting.  Return the verbs call's result. */
int t_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
int t_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len,
		    uint32_t lkey);
int t_post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		uint32_t len, uint32_t lkey, int flags);
int t_post_rdma(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, int flags);
/* n signaled WRs over one sge, wr_id 1..n, linked in order: a list to post
 * at once, for the tests about what happens along it. */
void t_send_chain(struct ibv_send_wr *w, int n, struct ibv_sge *sge, enum ibv_wr_opcode op);
int t_post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		  uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t compare_add,
		  uint64_t swap);
int t_post_ud(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
	      struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, int flags);

/* Poll until `n` completions or `timeout_ms`; returns how many were got. */
int t_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);
/* Exactly one completion within timeout_ms (fails otherwise, naming the
 * caller's line). */
#define t_wc(cq, timeout_ms) t_wc_at(cq, timeout_ms, __FILE__, __LINE__)
struct ibv_wc t_wc_at(struct ibv_cq *cq, int timeout_ms, const char *file, int line);
/* No completion for `ms` (fails if one arrives). */
#define t_no_wc(cq, ms) t_no_wc_at(cq, ms, __FILE__, __LINE__)
void t_no_wc_at(struct ibv_cq *cq, int ms, const char *file, int line);
/* Wait (up to timeout_ms) for ibv_query_qp to report `state`. */
void t_wait_qp_state(struct ibv_qp *qp, enum ibv_qp_state state, int timeout_ms);

/* Whether `fd` (a completion channel's, say) becomes readable within `ms`. */
bool t_fd_ready(int fd, int ms);

/* Async events: wait on context->async_fd for one event (false on timeout). */
bool t_async_event(struct ibv_context *ctx, struct ibv_async_event *ev, int timeout_ms);
/* Wait for an event of `type` (others are acked and skipped). */
void t_expect_async(struct ibv_context *ctx, enum ibv_event_type type,
		    struct ibv_async_event *out, int timeout_ms);

/* Two processes.  t_fork returns the child's pid in the parent (0 in the
 * child); *fd is this side's end of a socketpair. */
pid_t t_fork(int *fd);
void t_write_all(int fd, const void *p, size_t n);
void t_read_all(int fd, void *p, size_t n);
void t_xchg(int fd, const struct t_info *mine, struct t_info *theirs);
/* Barrier: one byte each way. */
void t_sync(int fd);
/* Reap the child within timeout_ms (kill it otherwise); returns its exit
 * status, or 128+signal. */
int t_wait_child(pid_t pid, int timeout_ms);

/* One endpoint on `ctx` connected to the peer process's: create it, swap
 * t_info over `fd`, connect. */
void t_ep_peer(struct t_ep *e, struct ibv_context *ctx, const struct t_opts *o, int fd,
	       struct t_info *mine, struct t_info *theirs);

/* One process of a two-process test, as its callback sees it. */
struct t_side {
	int fd;                    /* socketpair to the other process (t_sync) */
	pid_t child;               /* parent: the child's pid, 0 once reaped */
	int child_status;          /* parent: its exit status once reaped */
	struct ibv_context *ctx;
	struct t_ep e;             /* connected to the other process's */
	struct t_info mine, theirs;
	void *arg;                 /* t_two_procs' `arg` */
};

/* Fork; each process arms a watchdog of alarm_s seconds, opens the device
 * and connects an endpoint to the other's (t_ep_peer; the parent's built
 * with `op`, the child's with `oc`), then runs its callback.  The child then
 * destroys its endpoint, closes the device and exits 0.  The parent reaps
 * the child within wait_ms (unless its callback did, t_side_reap), then
 * destroys its endpoint and closes the device.  Returns the child's exit
 * status, or 128+signal. */
int t_two_procs(const struct t_opts *op, const struct t_opts *oc, unsigned int alarm_s,
		int wait_ms, void (*parent)(struct t_side *), void (*child)(struct t_side *),
		void *arg);
/* In the parent's callback: reap the child now (t_wait_child); returns its
 * status, which t_two_procs returns too. */
int t_side_reap(struct t_side *s, int timeout_ms);

void t_fill(void *buf, size_t len, uint8_t seed);
bool t_check_fill(const void *buf, size_t len, uint8_t seed);

/* Does the run force TCP (SOFTVERBS_TRANSPORT=tcp): no rings between the
 * test's processes? */
bool t_transport_tcp(void);

/* The record of QP `qpn` in this process's own status file (status/format.h,
 * which a caller reading its fields includes); false: none. */
struct svst_qp;
bool t_status_qp(uint32_t qpn, struct svst_qp *out);
/* The SENDs QP `qp` placed (engine/placed.c), as its status record counts
 * them; fails the test without a record. */
uint64_t t_placed(struct ibv_qp *qp);

#endif
