// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: datagram rsockets, one UD QP each.
 *
 * A socket's address is a port of the CM's UDP port space: rbind (or the
 * first send, with an ephemeral port) binds an RDMA_PS_UDP id there and
 * listens, so peers can resolve it.  A destination is resolved once by
 * SIDR (rdma_connect on a PS_UDP id: its answer is the peer's QP number and
 * an address handle) and kept in a table of destinations; only a blocking
 * call waits for that lookup.  Every datagram
 * starts with a header naming the sender's address, which is what
 * rrecvfrom reports; a received datagram also enters its sender in the
 * table (address handle from the work completion), so a reply needs no
 * resolution.  As UDP, nothing is reliable and nothing is fragmented: a
 * datagram larger than the path MTU allows is EMSGSIZE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <endian.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <netinet/in.h>

#include "rs/rs.h"
#include "util/time.h"

#define DG_RECVS 128
#define DG_SENDS 64
#define DG_GRH 40
#define DG_RESOLVE_MS 2000
#define DG_WR_RECV (1ull << 32)

/* What rrecvfrom reports: the sender's address, carried by each datagram. */
struct dg_hdr {
	uint8_t version;	/* RS_PROTO_VERSION */
	uint8_t family;		/* AF_INET or AF_INET6 */
	uint16_t port;		/* network order, as in sockaddr */
	uint8_t addr[16];
};

struct dg_key {
	uint16_t family, port;
	uint8_t addr[16];
};

enum dg_dest_state { DG_RESOLVING, DG_READY, DG_FAILED };

struct dg_dest {
	struct dg_key key;
	enum dg_dest_state state;
	int err;
	bool reported;		/* the failure was told to a caller: the next one starts over */
	struct rdma_cm_id *id;	/* while resolving */
	struct ibv_ah *ah;
	uint32_t qpn, qkey;
	struct dg_hdr src;	/* what we say we are, to this destination */
};

struct dg_rx {
	uint32_t slot, len;	/* len: payload after GRH and header */
	struct dg_hdr from;
};

struct rs_dgram {
	struct ibv_context *ctx;
	struct rdma_cm_id *bound;	/* our port, listening */
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *buf;			/* DG_RECVS receive slots, DG_SENDS send slots */
	struct ibv_mr *mr;
	uint32_t slot_size, mtu;
	struct dg_rx rx[DG_RECVS];
	uint32_t rx_head, rx_count;
	uint32_t sfree[DG_SENDS], sfree_count;
	struct dg_dest *dests;
	int ndests;
	struct dg_key peer;		/* rconnect's destination */
	uint32_t progress_calls;
	bool connected;
};

static size_t buf_len(const struct rs_dgram *d)
{
	return (size_t)(DG_RECVS + DG_SENDS) * d->slot_size;
}

static uint8_t *slot_addr(const struct rs_dgram *d, uint32_t slot)
{
	return d->buf + (size_t)slot * d->slot_size;
}

static int key_of(const struct sockaddr *sa, socklen_t len, struct dg_key *k)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *s = (const void *)sa;

		k->port = s->sin_port;
		memcpy(k->addr, &s->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s = (const void *)sa;

		k->port = s->sin6_port;
		memcpy(k->addr, &s->sin6_addr, 16);
	} else {
		return rs_errno(EAFNOSUPPORT);
	}
	k->family = sa->sa_family;
	return 0;
}

static socklen_t addr_of(const struct dg_key *k, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (k->family == AF_INET6) {
		struct sockaddr_in6 *s = (void *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = k->port;
		memcpy(&s->sin6_addr, k->addr, 16);
		return sizeof(*s);
	}
	struct sockaddr_in *s = (void *)ss;

	s->sin_family = AF_INET;
	s->sin_port = k->port;
	memcpy(&s->sin_addr, k->addr, 4);
	return sizeof(*s);
}

static struct dg_key hdr_key(const struct dg_hdr *h)
{
	struct dg_key k = { .family = h->family, .port = h->port };

	memcpy(k.addr, h->addr, sizeof(k.addr));
	return k;
}

/* ---- the QP ------------------------------------------------------------ */

static int post_recv(struct rs_dgram *d, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot_addr(d, slot), .length = d->slot_size, .lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = DG_WR_RECV | slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(d->qp, &wr, &bad);
}

static int qp_ready(struct rs_dgram *d)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = RDMA_UDP_QKEY,
	};

	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(d->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(d->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int open_device(struct rs_dgram *d)
{
	struct ibv_context **devs = rdma_get_devices(NULL);
	struct ibv_port_attr pa;

	if (!devs || !devs[0]) {
		rdma_free_devices(devs);
		return rs_errno(ENODEV);
	}
	d->ctx = devs[0];
	rdma_free_devices(devs);
	if (ibv_query_port(d->ctx, 1, &pa))
		return -1;
	d->mtu = 128u << pa.active_mtu;
	d->slot_size = DG_GRH + d->mtu;
	return 0;
}

int rs_dgram_init(struct rsock *rs)
{
	struct rs_dgram *d = calloc(1, sizeof(*d));
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = DG_SENDS, .max_recv_wr = DG_RECVS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	if (!d)
		return rs_errno(ENOMEM);
	rs->dg = d;
	rs->cm_ch = rdma_create_event_channel();
	if (!rs->cm_ch || rs_nonblock(rs->cm_ch->fd) || rs_epoll_add(rs, rs->cm_ch->fd) ||
	    open_device(d))
		return -1;
	d->pd = ibv_alloc_pd(d->ctx);
	d->cc = d->pd ? ibv_create_comp_channel(d->ctx) : NULL;
	if (!d->cc || rs_nonblock(d->cc->fd) || rs_epoll_add(rs, d->cc->fd))
		return -1;
	d->cq = ibv_create_cq(d->ctx, DG_RECVS + DG_SENDS, rs, d->cc, 0);
	if (!d->cq)
		return -1;
	rs->cc = d->cc;		/* rs_wait and rpoll drain and arm these */
	rs->cq = d->cq;
	qa.send_cq = qa.recv_cq = d->cq;
	d->qp = ibv_create_qp(d->pd, &qa);
	d->buf = mmap(NULL, buf_len(d), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!d->qp || d->buf == MAP_FAILED || qp_ready(d)) {
		if (d->buf == MAP_FAILED)
			d->buf = NULL;
		return -1;
	}
	d->mr = ibv_reg_mr(d->pd, d->buf, buf_len(d), IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr)
		return -1;
	for (uint32_t i = 0; i < DG_RECVS; i++)
		if (post_recv(d, i))
			return -1;
	for (uint32_t i = 0; i < DG_SENDS; i++)
		d->sfree[d->sfree_count++] = DG_RECVS + DG_SENDS - 1 - i;
	return 0;
}

void rs_dgram_free(struct rsock *rs)
{
	struct rs_dgram *d = rs->dg;

	if (!d)
		goto channel;
	for (int i = 0; i < d->ndests; i++) {
		if (d->dests[i].id)
			rdma_destroy_id(d->dests[i].id);
		if (d->dests[i].ah)
			ibv_destroy_ah(d->dests[i].ah);
	}
	free(d->dests);
	if (d->bound)
		rdma_destroy_id(d->bound);
	if (d->qp)
		ibv_destroy_qp(d->qp);
	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->cq) {
		if (rs->cq_events)
			ibv_ack_cq_events(d->cq, rs->cq_events);
		ibv_destroy_cq(d->cq);
	}
	if (d->cc)
		ibv_destroy_comp_channel(d->cc);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->buf)
		munmap(d->buf, buf_len(d));
	free(d);
	rs->dg = NULL;
	rs->cq = NULL;
	rs->cc = NULL;
channel:
	if (rs->cm_ch)
		rdma_destroy_event_channel(rs->cm_ch);
	rs->cm_ch = NULL;
}

/* ---- addresses ------------------------------------------------------- */

int rs_dgram_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	struct rs_dgram *d = rs->dg;
	struct dg_key k;

	if (d->bound)
		return rs_errno(EINVAL);
	if (key_of(addr, len, &k))
		return -1;
	if (rdma_create_id(rs->cm_ch, &d->bound, rs, RDMA_PS_UDP))
		return -1;
	if (rdma_bind_addr(d->bound, (struct sockaddr *)addr) || rdma_listen(d->bound, 64)) {
		int e = errno;

		rdma_destroy_id(d->bound);
		d->bound = NULL;
		return rs_errno(e);
	}
	return 0;
}

/* The first send of an unbound socket binds it to an ephemeral port. */
static int implicit_bind(struct rsock *rs, int family)
{
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)family };

	if (rs->dg->bound)
		return 0;
	return rs_dgram_bind(rs, (struct sockaddr *)&ss,
			     family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						  sizeof(struct sockaddr_in));
}

int rs_dgram_name(struct rsock *rs, struct sockaddr *addr, socklen_t *len, bool peer)
{
	struct sockaddr_storage ss;
	socklen_t n;

	if (!addr || !len)
		return rs_errno(EFAULT);
	if (peer) {
		if (!rs->dg->connected)
			return rs_errno(ENOTCONN);
		n = addr_of(&rs->dg->peer, &ss);
	} else if (rs->dg->bound) {
		const struct sockaddr *sa = rdma_get_local_addr(rs->dg->bound);

		n = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						sizeof(struct sockaddr_in);
		memcpy(&ss, sa, n);
	} else {
		memset(&ss, 0, sizeof(ss));
		ss.ss_family = (sa_family_t)rs->domain;
		n = rs->domain == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	}
	memcpy(addr, &ss, *len < n ? *len : n);
	*len = n;
	return 0;
}

/* ---- destinations ----------------------------------------------------- */

static struct dg_dest *find_dest(struct rs_dgram *d, const struct dg_key *k)
{
	for (int i = 0; i < d->ndests; i++)
		if (!memcmp(&d->dests[i].key, k, sizeof(*k)))
			return &d->dests[i];
	return NULL;
}

static struct dg_dest *new_dest(struct rs_dgram *d, const struct dg_key *k)
{
	struct dg_dest *t = realloc(d->dests, (size_t)(d->ndests + 1) * sizeof(*t));

	if (!t)
		return NULL;
	d->dests = t;
	t = &d->dests[d->ndests++];
	memset(t, 0, sizeof(*t));
	t->key = *k;
	return t;
}

/* Our address as a datagram to dest names it: the bound port, and the
 * local address the route to dest took when we are bound to any. */
static void set_src(struct rsock *rs, struct dg_dest *t, const struct sockaddr *local)
{
	const struct sockaddr *bound = rdma_get_local_addr(rs->dg->bound);
	struct dg_key k, b;

	key_of(local, local->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						     sizeof(struct sockaddr_in), &k);
	key_of(bound, bound->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						     sizeof(struct sockaddr_in), &b);
	t->src.version = RS_PROTO_VERSION;
	t->src.family = (uint8_t)k.family;
	t->src.port = b.port;
	memcpy(t->src.addr, k.addr, sizeof(k.addr));
}

static struct dg_dest *dest_by_id(struct rs_dgram *d, struct rdma_cm_id *id)
{
	for (int i = 0; i < d->ndests; i++)
		if (d->dests[i].id == id)
			return &d->dests[i];
	return NULL;
}

static void dest_failed(struct dg_dest *t, int err)
{
	t->state = DG_FAILED;
	t->err = err;
}

static void resolve_event(struct rsock *rs, struct rdma_cm_event *ev, struct rdma_cm_id **destroy)
{
	struct dg_dest *t = dest_by_id(rs->dg, ev->id);
	struct rdma_conn_param p = { .qp_num = rs->dg->qp->qp_num };

	if (!t)
		return;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ev->id, DG_RESOLVE_MS))
			dest_failed(t, errno);
		return;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rdma_connect(ev->id, &p))
			dest_failed(t, errno);
		return;
	case RDMA_CM_EVENT_ESTABLISHED:
		t->ah = ibv_create_ah(rs->dg->pd, &ev->param.ud.ah_attr);
		t->qpn = ev->param.ud.qp_num;
		t->qkey = ev->param.ud.qkey;
		if (t->ah) {
			set_src(rs, t, rdma_get_local_addr(ev->id));
			t->state = DG_READY;
		} else {
			dest_failed(t, errno);
		}
		break;
	default:
		dest_failed(t, ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED : EHOSTUNREACH);
		break;
	}
	*destroy = t->id;
	t->id = NULL;
	rs_wake(rs);
}

static void cm_events(struct rsock *rs, int *n)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(rs->cm_ch, &ev)) {
		struct rdma_cm_id *destroy = NULL;

		(*n)++;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_conn_param p = { .qp_num = rs->dg->qp->qp_num };

			/* SIDR: answer with our QP; the request's id is done then. */
			if (rdma_accept(ev->id, &p))
				rdma_reject(ev->id, NULL, 0);
			destroy = ev->id;
		} else if (ev->id != rs->dg->bound) {
			resolve_event(rs, ev, &destroy);
		}
		rdma_ack_cm_event(ev);
		if (destroy)
			rdma_destroy_id(destroy);
	}
}

/* Starts looking t up (lock held); a lookup that cannot start has failed. */
static void start_lookup(struct rsock *rs, struct dg_dest *t)
{
	struct sockaddr_storage ss;

	addr_of(&t->key, &ss);
	t->state = DG_RESOLVING;
	t->reported = false;
	if (rdma_create_id(rs->cm_ch, &t->id, rs, RDMA_PS_UDP) ||
	    rdma_resolve_addr(t->id, NULL, (struct sockaddr *)&ss, DG_RESOLVE_MS)) {
		dest_failed(t, errno);
		if (t->id)
			rdma_destroy_id(t->id);
		t->id = NULL;
	}
}

/* What the lookup gives the caller now: t, or NULL with errno (EAGAIN while
 * it runs); a failure is told once, and the next call starts over. */
static struct dg_dest *lookup_result(struct dg_dest *t)
{
	if (t->state == DG_READY)
		return t;
	if (t->state == DG_RESOLVING) {
		errno = EAGAIN;
		return NULL;
	}
	t->reported = true;
	errno = t->err ? t->err : EHOSTUNREACH;
	return NULL;
}

/* Waits up to DG_RESOLVE_MS for the lookup of dests[idx], which may move. */
static struct dg_dest *wait_lookup(struct rsock *rs, ptrdiff_t idx)
{
	struct rs_dgram *d = rs->dg;
	uint64_t end = sv_now_ns() + (uint64_t)DG_RESOLVE_MS * 1000000;

	while (d->dests[idx].state == DG_RESOLVING) {
		uint64_t now = sv_now_ns();

		if (now >= end) {
			errno = ETIMEDOUT;
			return NULL;
		}
		if (rs_wait(rs, (int)((end - now) / 1000000) + 1) && errno == EBADF)
			return NULL;
	}
	return lookup_result(&d->dests[idx]);
}

/* Finds or looks up the destination (lock held); only a blocking caller
 * waits for the lookup, a nonblocking one gets EAGAIN until it is done. */
static struct dg_dest *dest_for(struct rsock *rs, const struct dg_key *k, bool block)
{
	struct rs_dgram *d = rs->dg;
	struct dg_dest *t = find_dest(d, k);
	int n = 0;

	if (!t && !(t = new_dest(d, k))) {
		errno = ENOMEM;
		return NULL;
	}
	if ((t->state == DG_RESOLVING && !t->id) || (t->state == DG_FAILED && t->reported))
		start_lookup(rs, t);
	if (block)
		return wait_lookup(rs, t - d->dests);
	if (t->state == DG_RESOLVING)
		cm_events(rs, &n);	/* creates no destination: t stays put */
	return lookup_result(t);
}

/* A nonblocking rconnect returns before the lookup is done, as UDP
 * programs expect of connect(2): sends say EAGAIN until it is. */
int rs_dgram_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len)
{
	struct dg_key k;

	if (key_of(addr, len, &k) || implicit_bind(rs, addr->sa_family))
		return -1;
	if (!dest_for(rs, &k, !rs->nonblock) && (!rs->nonblock || errno != EAGAIN))
		return -1;
	rs->dg->peer = k;
	rs->dg->connected = true;
	return 0;
}

/* Whether a lookup is under way: sends to its destination would say EAGAIN. */
static bool looking_up(const struct rs_dgram *d)
{
	for (int i = 0; i < d->ndests; i++)
		if (d->dests[i].state == DG_RESOLVING)
			return true;
	return false;
}

/* ---- the data path ----------------------------------------------------- */

/* A datagram's sender becomes a destination: replies need no resolution. */
static void learn_sender(struct rsock *rs, struct ibv_wc *wc, const struct dg_hdr *h)
{
	struct dg_key k = hdr_key(h);
	struct dg_dest *t = find_dest(rs->dg, &k);
	struct ibv_ah *ah;

	/* known, or a resolution is under way: let it finish */
	if (t && (t->state == DG_READY || t->id))
		return;
	ah = ibv_create_ah_from_wc(rs->dg->pd, wc, (void *)slot_addr(rs->dg, (uint32_t)wc->wr_id),
				   1);
	if (!ah || (!t && !(t = new_dest(rs->dg, &k)))) {
		if (ah)
			ibv_destroy_ah(ah);
		return;
	}
	t->ah = ah;
	t->qpn = wc->src_qp;
	t->qkey = RDMA_UDP_QKEY;
	t->src.version = RS_PROTO_VERSION;
	t->src.family = 0;	/* filled at the first send */
	t->state = DG_READY;
}

static void got_datagram(struct rsock *rs, struct ibv_wc *wc)
{
	struct rs_dgram *d = rs->dg;
	uint32_t slot = (uint32_t)wc->wr_id;
	const struct dg_hdr *h = (const void *)(slot_addr(d, slot) + DG_GRH);

	if (wc->status != IBV_WC_SUCCESS || wc->byte_len < DG_GRH + sizeof(*h) ||
	    h->version != RS_PROTO_VERSION || d->rx_count == DG_RECVS) {
		post_recv(d, slot);
		return;
	}
	learn_sender(rs, wc, h);
	d->rx[(d->rx_head + d->rx_count) % DG_RECVS] = (struct dg_rx){
		.slot = slot, .len = wc->byte_len - DG_GRH - (uint32_t)sizeof(*h), .from = *h,
	};
	d->rx_count++;
}

int rs_dgram_progress(struct rsock *rs)
{
	struct rs_dgram *d = rs->dg;
	struct ibv_wc wc[16];
	int n = 0, k;

	while ((k = ibv_poll_cq(d->cq, 16, wc)) > 0) {
		n += k;
		for (int i = 0; i < k; i++) {
			if (wc[i].wr_id & DG_WR_RECV)
				got_datagram(rs, &wc[i]);
			else
				d->sfree[d->sfree_count++] = (uint32_t)wc[i].wr_id;
		}
	}
	/* The CM's events (peers resolving us, our resolutions) cost a system
	 * call to look for: when idle, and now and then under load. */
	if (!n || !(++d->progress_calls % 64))
		cm_events(rs, &n);
	if (n)
		rs_wake(rs);
	return n;
}

short rs_dgram_revents(struct rsock *rs)
{
	/* no POLLOUT while a lookup runs, so an event loop sleeps until it ends */
	bool out = rs->dg->sfree_count && !looking_up(rs->dg);

	return (short)((rs->dg->rx_count ? POLLIN : 0) | (out ? POLLOUT : 0));
}

/* Waits until *count is not zero: 0, or -1 (EAGAIN when not blocking). */
static int dg_wait(struct rsock *rs, bool block, const uint32_t *count)
{
	for (;;) {
		rs_dgram_progress(rs);
		if (*count)
			return 0;
		if (!block)
			return rs_errno(EAGAIN);
		if (rs_wait(rs, -1))
			return -1;
	}
}

static void scatter(const uint8_t *src, size_t len, const struct iovec *iov, int iovcnt)
{
	for (int v = 0; v < iovcnt && len; v++) {
		size_t take = iov[v].iov_len < len ? iov[v].iov_len : len;

		memcpy(iov[v].iov_base, src, take);
		src += take;
		len -= take;
	}
}

ssize_t rs_dgram_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		      struct sockaddr *from, socklen_t *fromlen)
{
	struct rs_dgram *d = rs->dg;
	bool block = !rs->nonblock && !(flags & MSG_DONTWAIT);
	struct dg_rx *m;
	size_t want = rs_iov_len(iov, iovcnt), n;

	if (dg_wait(rs, block, &d->rx_count))
		return -1;
	m = &d->rx[d->rx_head];
	n = m->len < want ? m->len : want;
	scatter(slot_addr(d, m->slot) + DG_GRH + sizeof(struct dg_hdr), n, iov, iovcnt);
	if (from && fromlen) {
		struct sockaddr_storage ss;
		struct dg_key k = hdr_key(&m->from);
		socklen_t l = addr_of(&k, &ss);

		memcpy(from, &ss, *fromlen < l ? *fromlen : l);
		*fromlen = l;
	}
	if (!(flags & MSG_PEEK)) {
		uint32_t slot = m->slot;

		d->rx_head = (d->rx_head + 1) % DG_RECVS;
		d->rx_count--;
		if (post_recv(d, slot))
			return -1;
	}
	return (ssize_t)n;	/* as UDP: the rest of a longer datagram is lost */
}

ssize_t rs_dgram_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct rs_dgram *d = rs->dg;
	bool block = !rs->nonblock && !(flags & MSG_DONTWAIT);
	size_t len = rs_iov_len(iov, iovcnt);
	struct dg_dest *t;
	struct dg_key k;
	uint32_t slot;
	uint8_t *p;

	if (!to) {
		if (!d->connected)
			return rs_errno(EDESTADDRREQ);
		k = d->peer;
	} else if (key_of(to, tolen, &k)) {
		return -1;
	}
	if (len + sizeof(struct dg_hdr) > d->mtu)
		return rs_errno(EMSGSIZE);
	if (implicit_bind(rs, k.family) || !(t = dest_for(rs, &k, block)))
		return -1;
	if (!t->src.family) {
		/* learned from a datagram: we answer from the address it reached */
		const struct sockaddr *sa = rdma_get_local_addr(d->bound);

		set_src(rs, t, sa);
	}
	if (dg_wait(rs, block, &d->sfree_count))
		return -1;
	slot = d->sfree[--d->sfree_count];
	p = slot_addr(d, slot);
	memcpy(p, &t->src, sizeof(t->src));
	for (int v = 0, off = sizeof(t->src); v < iovcnt; off += (int)iov[v].iov_len, v++)
		memcpy(p + off, iov[v].iov_base, iov[v].iov_len);

	struct ibv_sge sge = {
		.addr = (uintptr_t)p, .length = (uint32_t)(len + sizeof(t->src)), .lkey = d->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = slot, .opcode = IBV_WR_SEND, .sg_list = &sge, .num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = t->ah, .remote_qpn = t->qpn, .remote_qkey = t->qkey },
	}, *bad;

	if (ibv_post_send(d->qp, &wr, &bad)) {
		d->sfree[d->sfree_count++] = slot;
		return -1;
	}
	return (ssize_t)len;
}
