/* SPDX-License-Identifier: MIT */
/*
 * softverbs librdmacm: internal declarations shared by the .c files of src/cm.
 *
 * Locking (two levels, always taken in this order):
 *   1. cm.lock   - one process-wide mutex.  Guards every field of every
 *                  struct cm_id marked [G], the id list, epoll registrations,
 *                  timers, the device table and multicast lists.  The progress
 *                  thread holds it while it handles socket events and timers.
 *                  It is never held while a caller blocks for an event.
 *   2. ch->lock  - per event channel.  Guards only that channel's queue.
 *                  rdma_get_cm_event takes it alone; code that queues, purges
 *                  or moves events takes it while already holding cm.lock.
 * Fields of the public struct rdma_cm_id are written under cm.lock by the CM
 * (verbs, port_num, route, qp, cqs ...) and read by the application freely,
 * as with the real library.
 */
#ifndef SOFTVERBS_CM_H
#define SOFTVERBS_CM_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cm/wire.h"
#include "util/list.h"

#define CM_EXPORT __attribute__((visibility("default")))


/* ---- devices ------------------------------------------------------------ */
struct cm_device {
	struct ibv_context *ctx;       /* opened once, kept while loaded */
	struct ibv_pd *default_pd;     /* [G] allocated on first use */
	struct ibv_xrcd *xrcd;         /* [G] the XRC ids' domain, opened on first use */
	uint8_t port;                  /* first ACTIVE port (1 if none) */
	uint16_t lid;
	uint16_t pkey;
	enum ibv_mtu mtu;
	union ibv_gid gid;             /* GID index 0 */
	uint8_t max_resp_res;          /* max_qp_rd_atom */
	uint8_t max_init_depth;        /* max_qp_init_rd_atom */
	struct ibv_context *monitor;   /* [G] own context for async events */
	bool monitored;                /* [G] monitor fd is in the epoll set */
};

/* Fills the device table once; returns the number of devices (may be 0). */
int cm_devices_init(void);
void cm_devices_forget(void);		/* fork child: look again */
struct cm_device *cm_device_by_ctx(struct ibv_context *ctx);
/* Device serving a local address (NULL address: the first device). */
struct cm_device *cm_device_for_addr(const struct sockaddr *sa);
struct ibv_pd *cm_device_default_pd(struct cm_device *dev);
struct ibv_xrcd *cm_device_xrcd(struct cm_device *dev);
int cm_device_index(struct cm_device *dev);
int cm_device_monitor_fd(int idx);                 /* [G] */
bool cm_device_monitor_fatal(int idx);             /* [G] */
void cm_device_watch(struct cm_device *dev);       /* [G] core.c */

/* ---- event channels and events ------------------------------------------ */
struct cm_channel {
	struct rdma_event_channel ch;  /* public part: ch.fd is an eventfd */
	pthread_mutex_t lock;          /* guards queue, readers, closing */
	pthread_cond_t cond;           /* readers left */
	struct sv_list queue;          /* struct cm_event, oldest first */
	bool sync_private;             /* owned by one synchronous id */
	int readers;                   /* threads inside rdma_get_cm_event */
	bool closing;                  /* rdma_destroy_event_channel under way */
};

struct cm_id;

struct cm_event {
	struct rdma_cm_event ev;       /* public part, must stay first */
	struct sv_list node;           /* in channel queue while unretrieved */
	struct cm_id *owner;           /* whose outstanding count it holds */
	uint8_t pdata[CMW_PDATA_MAX];
};

/* ---- the id state machine ------------------------------------------------ */
enum cm_state {
	CM_IDLE,            /* created, nothing bound */
	CM_ADDR_BOUND,      /* rdma_bind_addr done (or implicit bind) */
	CM_ADDR_RESOLVED,   /* ADDR_RESOLVED queued */
	CM_ROUTE_RESOLVED,  /* ROUTE_RESOLVED queued */
	CM_LISTEN,          /* TCP listening socket open */
	CM_REQ_WAIT,        /* internal: accepted TCP, REQ not read yet */
	CM_CONNECTING,      /* active: TCP connect / REQ sent, awaiting REP */
	CM_REP_RCVD,        /* active, no QP: CONNECT_RESPONSE, awaiting establish */
	CM_REQ_RCVD,        /* passive: CONNECT_REQUEST, awaiting accept/reject */
	CM_REP_SENT,        /* passive RC: REP sent, awaiting RTU */
	CM_ESTABLISHED,     /* connected (UD: service lookup done) */
	CM_DISCONNECTING,   /* DREQ sent, awaiting DREP */
	CM_DISCONNECTED,    /* connection over (DISCONNECTED / REJECTED / ...) */
	CM_DESTROYING,      /* rdma_destroy_id in progress */
};
const char *cm_state_str(enum cm_state s);

enum cm_timer {
	CM_TIMER_NONE,
	CM_TIMER_REQ_READ,      /* REQ_WAIT: peer must send REQ */
	CM_TIMER_RESPONSE,      /* CONNECTING: TCP connect + MRA/REP/REJ */
	CM_TIMER_SERVICE,       /* CONNECTING after MRA: user accept/reject */
	CM_TIMER_RTU,           /* REP_SENT: RTU must come */
	CM_TIMER_DREP,          /* DISCONNECTING: DREP must come */
	CM_TIMER_TIMEWAIT,      /* DISCONNECTED: then TIMEWAIT_EXIT */
	CM_TIMER_REFUSED,       /* CONNECTING: connect again after a refusal */
};

/*
 * Resolving an address and a route takes no time here, while on hardware it
 * takes long enough that a server may publish its port just before it calls
 * rdma_listen (Debian's qperf 0.4.11 does): a refused TCP connect is tried
 * again for this long before the REQ counts as rejected.
 */
#define CM_REFUSED_GRACE_MS 300
#define CM_REFUSED_RETRY_MS 10

struct cm_mcast {
	struct sv_list node;           /* in cm_id.mcasts */
	struct sockaddr_storage addr;
	void *context;
	union ibv_gid mgid;
	uint16_t mlid;
	bool attached;                 /* ibv_attach_mcast done on id->qp */
	bool send_only;
};

struct cm_id {
	struct rdma_cm_id id;          /* public part, must stay first */
	/* All fields below: [G] guarded by cm.lock. */
	struct sv_list node;           /* in cm.ids */
	uint64_t serial;               /* handle used in epoll data */
	enum cm_state state;
	bool sync;                     /* created with NULL channel */
	int outstanding;               /* events queued or retrieved, not acked */
	pthread_cond_t cond;           /* signalled when outstanding drops */
	struct cm_device *dev;         /* bound device, NULL until bound */

	int sock;                      /* TCP socket: bound/listening/connection */
	uint32_t sock_events;          /* epoll mask registered, 0 = none */
	uint8_t rbuf[CMW_MSG_MAX];     /* partial inbound message */
	size_t rlen;

	enum cm_timer timer;
	uint64_t deadline_ms;          /* CLOCK_MONOTONIC ms, valid if timer */

	/* listener bookkeeping */
	uint64_t listen_serial;        /* passive ids: listener that made it */

	/* connection parameters: local choice and what the peer sent */
	uint32_t psn;                  /* our first send PSN */
	uint32_t qp_num;               /* our QPN (QP or conn_param->qp_num) */
	bool srq;
	uint8_t resp_res;              /* local responder resources */
	uint8_t init_depth;            /* local initiator depth */
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t flow_control;
	struct cmw_endpoint remote;    /* host byte order copy of peer's endpoint */
	struct cmw_conn remote_conn;
	bool peer_lost;                /* TCP connection gone while REQ_RCVD */
	bool tcp_pending;              /* CONNECTING: TCP connect in progress */
	uint64_t refused_until_ms;     /* CONNECTING: refusals retried until */
	struct cmw_req req;            /* CONNECTING: REQ to send once connected */

	/* rdma_set_option */
	uint8_t tos;
	bool tos_set;
	bool reuseaddr;
	int afonly;                    /* -1: default */
	uint8_t ack_timeout;
	bool ack_timeout_set;

	/* ECE */
	struct ibv_ece local_ece;
	struct ibv_ece remote_ece;

	/* rdma_create_ep on a passive id: QP made for each rdma_get_request */
	struct ibv_qp_init_attr *ep_qp_attr;
	struct ibv_pd *ep_pd;

	struct ibv_sa_path_rec path;   /* route.path_rec points here */
	struct sv_list mcasts;         /* struct cm_mcast */
	bool own_cqs;                  /* send/recv CQs made by rdma_create_qp */
};

static inline struct cm_id *cm_id_of(struct rdma_cm_id *id)
{
	return sv_container_of(id, struct cm_id, id);
}

/* ---- process-wide state (core.c) ---------------------------------------- */
struct cm_global {
	pthread_mutex_t lock;          /* "cm.lock", see top of file */
	struct sv_list ids;            /* [G] every struct cm_id alive */
	uint64_t next_serial;          /* [G] */
	int epfd;                      /* [G] progress thread's epoll */
	int wakefd;                    /* eventfd: wake progress thread */
	bool thread_running;           /* [G] */
	uint32_t resp_timeout_ms;      /* env SOFTVERBS_CM_TIMEOUT_MS */
	uint32_t service_timeout_ms;   /* env SOFTVERBS_CM_SERVICE_TIMEOUT_MS */
	uint32_t timewait_ms;          /* env SOFTVERBS_CM_TIMEWAIT_MS */
};
extern struct cm_global cm;

/* Locks cm.lock, starting the progress thread on first use. */
void cm_lock(void);
void cm_unlock(void);
uint64_t cm_now_ms(void);
/* Debug trace to stderr when SOFTVERBS_CM_DEBUG is set. */
extern int cm_debug;
void cm_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CM_TRACE(...) do { if (cm_debug) cm_trace(__VA_ARGS__); } while (0)
/* explain.c: an error event's reason, one line on stderr when
 * SOFTVERBS_DEBUG (cm_explain_on) or SOFTVERBS_CM_DEBUG is set. */
extern int cm_explain_on;
void cm_explain_event(const struct cm_id *p, enum rdma_cm_event_type type, int status);
int cm_set_errno(int err);        /* errno = err; return -1 */

struct cm_id *cm_id_lookup(uint64_t serial);   /* [G] NULL if gone */
void cm_sock_watch(struct cm_id *p, uint32_t events);  /* [G] 0 = unwatch */
void cm_sock_close(struct cm_id *p);            /* [G] unwatch + close */
void cm_timer_set(struct cm_id *p, enum cm_timer t, uint32_t ms); /* [G] */
void cm_timer_clear(struct cm_id *p);           /* [G] */

/* ---- events (event.c) ---------------------------------------------------- */
struct cm_channel *cm_channel_new(bool sync_private);
void cm_channel_free(struct cm_channel *ch);
/* [G] Queue an event about p on p's channel.  Returns the event so the
 * caller could fill param before... no: fill via the arguments. */
struct cm_event *cm_event_alloc(struct cm_id *p, enum rdma_cm_event_type type,
				int status);
void cm_event_queue(struct cm_event *e, struct cm_channel *ch);   /* [G] */
void cm_event_post(struct cm_id *p, enum rdma_cm_event_type type, int status); /* [G] */
void cm_event_set_pdata(struct cm_event *e, bool ud, const void *data,
			size_t len, size_t report_len);
/* [G] Drop unretrieved events whose ev.id or owner is p. */
void cm_channel_purge_id(struct cm_channel *ch, struct cm_id *p);
/* [G] Move p's unretrieved events from one channel to another. */
void cm_channel_move_id(struct cm_channel *from, struct cm_channel *to,
			struct cm_id *p);
bool cm_channel_has_event_for(struct cm_channel *ch, struct cm_id *p,
			      enum rdma_cm_event_type type);   /* [G] */
/* Synchronous ids: ack the event last waited for; wait for the next one
 * (no lock held). */
void cm_sync_ack(struct cm_id *p);
int cm_sync_wait(struct cm_id *p);

/* ---- ids (id.c) ---------------------------------------------------------- */
struct cm_id *cm_id_new(struct rdma_event_channel *channel, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qpt); /* [G] */
void cm_id_free_locked(struct cm_id *p);        /* [G] after outstanding==0 */
void cm_id_set_state(struct cm_id *p, enum cm_state s);   /* [G] */
bool cm_ps_is_ud(enum rdma_port_space ps);
int cm_ps_valid(enum rdma_port_space ps);

/* ---- addresses (addr.c) ------------------------------------------------- */
socklen_t cm_sa_len(const struct sockaddr *sa);
uint16_t cm_sa_port(const struct sockaddr *sa);          /* host order */
void cm_sa_set_port(struct sockaddr *sa, uint16_t port); /* host order */
bool cm_sa_is_any(const struct sockaddr *sa);
bool cm_sa_is_loopback(const struct sockaddr *sa);
bool cm_sa_is_multicast(const struct sockaddr *sa);
/* [G] Open the id's TCP socket bound to sa (port 0 = ephemeral). */
int cm_bind_socket(struct cm_id *p, const struct sockaddr *sa);
/* [G] Attach p to dev: verbs, port_num, sgid. */
void cm_id_attach_device(struct cm_id *p, struct cm_device *dev);
/* [G] Fill p->path / route from its addresses and the peer endpoint. */
void cm_route_fill(struct cm_id *p);
void cm_gid_from_sa(union ibv_gid *gid, const struct sockaddr *sa);

/* ---- connections (connect.c, listen.c, ud.c) ----------------------------- */
void cm_sock_event(struct cm_id *p, uint32_t events);   /* [G] */
void cm_timer_fired(struct cm_id *p);                    /* [G] */
void cm_listen_readable(struct cm_id *p);                /* [G] */
void cm_handle_req(struct cm_id *p, const struct cmw_req *req);   /* [G] */
void cm_handle_rep(struct cm_id *p, const struct cmw_rep *rep);   /* [G] */
void cm_handle_ud_rep(struct cm_id *p, const struct cmw_rep *rep);/* [G] */
int cm_send_msg(struct cm_id *p, enum cmw_type type, const void *body,
		size_t len);                               /* [G] */
int cm_send_rej(struct cm_id *p, uint32_t reason, const void *pdata,
		uint8_t len);                              /* [G] */
void cm_peer_lost(struct cm_id *p, int err);             /* [G] */
/* [G] A connection attempt is over: timer, socket, QP to error, then e. */
void cm_conn_failed(struct cm_id *p, struct cm_event *e);
/* [G] rdma_destroy_id's courtesy message and socket close. */
void cm_conn_abort(struct cm_id *p);
void cm_listener_gone(struct cm_id *listener);           /* [G] */
void cm_tcp_connected(struct cm_id *p, int err);           /* [G] */
void cm_connect_again(struct cm_id *p);                    /* [G] */
void cm_ep_encode(struct cm_id *p, struct cmw_endpoint *w, uint32_t qpn,
		  uint32_t qkey);
void cm_ep_decode(struct cmw_endpoint *host, const struct cmw_endpoint *w);
int cm_apply_rd_atomic(struct cm_id *p, const struct rdma_conn_param *param);
void cm_ud_fill_param(struct cm_id *p, struct rdma_ud_param *ud);
int cm_reject_locked(struct cm_id *p, const void *pdata, uint8_t len,
		     uint32_t reason);
/* The public reject: takes the lock, sets errno. */
int cm_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len,
	      uint32_t reason);

/* ---- QPs (qp.c) ---------------------------------------------------------- */
int cm_qp_attr(struct cm_id *p, struct ibv_qp_attr *attr, int *mask); /* [G] */
int cm_qp_modify(struct cm_id *p, struct ibv_qp *qp, enum ibv_qp_state s); /* [G] */
void cm_qp_to_error(struct cm_id *p);                    /* [G] */
uint32_t cm_random_psn(void);
int cm_conn_param_qpn(struct cm_id *p, const struct rdma_conn_param *param, size_t max,
		      bool none_ok, uint32_t *qpn);

/* ---- multicast (mcast.c) -------------------------------------------------- */
void cm_mcast_leave_all(struct cm_id *p);                /* [G] */

#endif
