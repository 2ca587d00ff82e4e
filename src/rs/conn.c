// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: connection management of stream rsockets.
 *
 * States (rs_state_name): an active socket goes IDLE -> RESOLVING_ADDR ->
 * RESOLVING_ROUTE -> CONNECTING -> CONNECTED, a passive one IDLE ->
 * LISTENING; raccept makes CONNECTED sockets from the listener's requests.
 * CONNECTED ends in DISCONNECTED (peer or local close) or ERROR.  Every
 * transition happens in rs_cm_progress, which the blocking calls, rpoll
 * and the data path call; only a nonblocking rclose's lingering runs in the
 * background (rs/linger.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>

#include "rs/rs.h"
#include "util/time.h"

#define RS_RESOLVE_MS 2000

static void fail(struct rsock *rs, int err)
{
	rs->state = RS_ERROR;
	rs->err = err;
	rs_wake(rs);
}

static int event_errno(enum rdma_cm_event_type t, int status)
{
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
		return ECONNREFUSED;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		return status == -ETIMEDOUT || status == ETIMEDOUT ? ETIMEDOUT : EHOSTUNREACH;
	default:
		return ECONNRESET;
	}
}

static bool parse_peer(const void *data, uint8_t len, struct rs_conn_data *out)
{
	if (!data || len < sizeof(*out))
		return false;
	memcpy(out, data, sizeof(*out));
	out->slot_size = be32toh(out->slot_size);
	out->slots = be32toh(out->slots);
	return out->version == RS_PROTO_VERSION && out->slot_size >= 64 && out->slots >= 2;
}

static void conn_param(struct rsock *rs, struct rdma_conn_param *p, struct rs_conn_data *cd)
{
	rs_conn_data_init(rs, cd);
	memset(p, 0, sizeof(*p));
	p->private_data = cd;
	p->private_data_len = sizeof(*cd);
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

static void route_resolved(struct rsock *rs)
{
	struct rdma_conn_param p;
	struct rs_conn_data cd;

	if (rs_stream_setup(rs, NULL)) {
		fail(rs, errno);
		return;
	}
	conn_param(rs, &p, &cd);
	if (rdma_connect(rs->id, &p)) {
		fail(rs, errno);
		return;
	}
	rs->state = RS_CONNECTING;
}

static void established(struct rsock *rs, const struct rdma_cm_event *ev)
{
	struct rs_conn_data peer;

	if (rs->state != RS_CONNECTING)
		return;		/* the accepting side is connected already */
	if (!parse_peer(ev->param.conn.private_data, ev->param.conn.private_data_len, &peer)) {
		rdma_disconnect(rs->id);
		fail(rs, ECONNREFUSED);
		return;
	}
	if (rs_stream_setup(rs, &peer)) {
		rdma_disconnect(rs->id);
		fail(rs, errno);
		return;
	}
	rs->state = RS_CONNECTED;
	rs_wake(rs);
}

static void disconnected(struct rsock *rs)
{
	rs_cq_progress(rs);	/* what arrived before the disconnect is data */
	if (rs->state == RS_CONNECTED || rs->state == RS_CONNECTING)
		rs->state = RS_DISCONNECTED;
	rs_wake(rs);
}

static void backlog_add(struct rsock *rs, struct rdma_cm_event *ev)
{
	struct rs_conn_data peer;
	struct rs_pending *b;

	if (!parse_peer(ev->param.conn.private_data, ev->param.conn.private_data_len, &peer)) {
		rdma_reject(ev->id, NULL, 0);
		return;
	}
	if (rs->backlog_len == rs->backlog_max) {
		int n = rs->backlog_max ? rs->backlog_max * 2 : 8;

		b = realloc(rs->backlog, (size_t)n * sizeof(*b));
		if (!b) {
			rdma_reject(ev->id, NULL, 0);
			return;
		}
		rs->backlog = b;
		rs->backlog_max = n;
	}
	rs->backlog[rs->backlog_len++] = (struct rs_pending){ .id = ev->id, .peer = peer };
	rs_wake(rs);
}

/* A request that ended before raccept took it: forget it. */
static struct rdma_cm_id *backlog_drop(struct rsock *rs, struct rdma_cm_id *id)
{
	for (int i = 0; i < rs->backlog_len; i++) {
		if (rs->backlog[i].id != id)
			continue;
		memmove(&rs->backlog[i], &rs->backlog[i + 1],
			(size_t)(rs->backlog_len - i - 1) * sizeof(*rs->backlog));
		rs->backlog_len--;
		return id;
	}
	return NULL;
}

static void handle_event(struct rsock *rs, struct rdma_cm_event *ev, struct rdma_cm_id **destroy)
{
	if (rs->state == RS_LISTENING) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			backlog_add(rs, ev);
		else if (ev->id != rs->id && (ev->event == RDMA_CM_EVENT_DISCONNECTED ||
					      ev->event == RDMA_CM_EVENT_REJECTED))
			*destroy = backlog_drop(rs, ev->id);
		return;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RS_RESOLVING_ADDR)
			break;
		if (rdma_resolve_route(rs->id, RS_RESOLVE_MS))
			fail(rs, errno);
		else
			rs->state = RS_RESOLVING_ROUTE;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state == RS_RESOLVING_ROUTE)
			route_resolved(rs);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		established(rs, ev);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		disconnected(rs);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (rs->state < RS_CONNECTED)
			fail(rs, event_errno(ev->event, ev->status));
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		fail(rs, ENODEV);
		break;
	default:
		break;
	}
}

int rs_cm_progress(struct rsock *rs)
{
	struct rdma_cm_event *ev;
	int n = 0;

	if (!rs->cm_ch)
		return 0;
	while (!rdma_get_cm_event(rs->cm_ch, &ev)) {
		n++;
		struct rdma_cm_id *destroy = NULL;

		handle_event(rs, ev, &destroy);
		rdma_ack_cm_event(ev);
		if (destroy)
			rdma_destroy_id(destroy);
	}
	return n;
}

/* The rsocket s, locked, for a call that names an address. */
static struct rsock *lock_with_addr(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = rs_enter(s);

	if (!rs)
		return NULL;
	if (!addr || len < sizeof(sa_family_t)) {
		rs_leave(rs);
		errno = EINVAL;
		return NULL;
	}
	return rs;
}

RS_EXPORT int rbind(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = lock_with_addr(s, addr, len);
	int ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		ret = rs_dgram_bind(rs, addr, len);
	else if (rs->state != RS_IDLE)
		ret = rs_errno(EINVAL);
	else
		ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
	rs_leave(rs);
	return ret;
}

RS_EXPORT int rlisten(int s, int backlog)
{
	struct rsock *rs = rs_enter(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type != SOCK_STREAM)
		ret = rs_errno(EOPNOTSUPP);
	else if (rs->state == RS_LISTENING)
		ret = 0;
	else if (rs->state != RS_IDLE)
		ret = rs_errno(EINVAL);
	else if (rdma_listen(rs->id, backlog > 0 ? backlog : 1))
		ret = -1;
	else
		rs->state = RS_LISTENING;
	rs_leave(rs);
	return ret;
}

/* A connected rsocket for a request: its own channel, buffers and QP. */
static struct rsock *accept_one(struct rsock *l, const struct rs_pending *req)
{
	struct rsock *rs = rs_alloc(SOCK_STREAM, l->domain);
	struct rdma_conn_param p;
	struct rs_conn_data cd;

	if (!rs)
		goto reject;
	rs->rcvbuf = l->rcvbuf;
	rs->sndbuf = l->sndbuf;
	rs->sqsize = l->sqsize;
	rs->rqsize = l->rqsize;
	rs->inline_size = l->inline_size;
	rs->iomap_size = l->iomap_size;
	rs->nodelay = l->nodelay;
	rs->keepalive = l->keepalive;
	rs->cm_ch = rdma_create_event_channel();
	if (!rs->cm_ch || rs_nonblock(rs->cm_ch->fd) || rs_epoll_add(rs, rs->cm_ch->fd) ||
	    rdma_migrate_id(req->id, rs->cm_ch))
		goto reject;
	rs->id = req->id;
	rs->id->context = rs;
	if (rs_stream_setup(rs, &req->peer))
		goto reject;
	conn_param(rs, &p, &cd);
	if (rdma_accept(rs->id, &p))
		goto fail;
	rs->state = RS_CONNECTED;
	return rs;
reject:
	rdma_reject(req->id, NULL, 0);
fail:;
	int e = errno;

	if (rs) {
		if (!rs->id)
			rdma_destroy_id(req->id);
		rs_unregister(rs);
	} else {
		rdma_destroy_id(req->id);
	}
	errno = e;
	return NULL;
}

/* Takes the first connect request, waiting for one (lock held): 0, or -1. */
static int next_request(struct rsock *l, struct rs_pending *req)
{
	for (;;) {
		if (l->state != RS_LISTENING)
			return rs_errno(EINVAL);
		rs_cm_progress(l);
		if (l->backlog_len)
			break;
		if (l->nonblock)
			return rs_errno(EAGAIN);
		if (rs_wait(l, -1))
			return -1;
	}
	*req = l->backlog[0];
	memmove(&l->backlog[0], &l->backlog[1], (size_t)(l->backlog_len - 1) * sizeof(*req));
	l->backlog_len--;
	return 0;
}

RS_EXPORT int raccept(int s, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *l = rs_enter(s), *rs;
	struct rs_pending req;
	int fd;

	if (!l)
		return -1;
	if (next_request(l, &req)) {
		rs_leave(l);
		return -1;
	}
	pthread_mutex_unlock(&l->lock);
	rs = accept_one(l, &req);	/* reads l's options: our reference keeps it */
	rs_put(l);
	if (!rs)
		return -1;
	fd = rs->fd;
	if (addr && len)
		rgetpeername(fd, addr, len);
	return fd;
}

/* Blocks until connecting ends (lock held): 0 when connected. */
static int connect_wait(struct rsock *rs)
{
	for (;;) {
		rs_progress(rs);
		if (rs->state == RS_CONNECTED)
			return 0;
		if (rs->state == RS_ERROR || rs->state == RS_DISCONNECTED) {
			int e = rs->err ? rs->err : ECONNREFUSED;

			rs->err = 0;
			return rs_errno(e);
		}
		if (rs_wait(rs, -1))
			return -1;
	}
}

RS_EXPORT int rconnect(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = lock_with_addr(s, addr, len);
	int ret;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM) {
		ret = rs_dgram_connect(rs, addr, len);
	} else if (rs->state == RS_CONNECTED) {
		ret = rs_errno(EISCONN);
	} else if (rs->state > RS_IDLE && rs->state < RS_CONNECTED) {
		ret = rs_errno(rs->nonblock ? EALREADY : EINVAL);
		if (!rs->nonblock)
			ret = connect_wait(rs);
	} else if (rs->state != RS_IDLE) {
		ret = rs_errno(EISCONN);
	} else if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr, RS_RESOLVE_MS)) {
		ret = -1;
	} else {
		rs->state = RS_RESOLVING_ADDR;
		ret = rs->nonblock ? rs_errno(EINPROGRESS) : connect_wait(rs);
	}
	rs_leave(rs);
	return ret;
}

/* Waits, at most ms, for every posted send to complete (lock held). */
static void drain_sends(struct rsock *rs, int ms)
{
	uint64_t end = sv_now_ns() + (uint64_t)ms * 1000000;

	while (rs->state == RS_CONNECTED && (rs->sq_avail < rs->sq_size || rs->fin_pending)) {
		uint64_t now = sv_now_ns();

		if (now >= end)
			break;
		rs_progress(rs);
		if (rs->sq_avail < rs->sq_size || rs->fin_pending)
			rs_sleep(rs, (int)((end - now) / 1000000) + 1);
	}
}

/* Waits, at most ms, for the peer's FIN: a disconnect moves its QP to
 * ERR, so it comes once the peer has taken all we sent (lock held). */
static void wait_peer_fin(struct rsock *rs, int ms)
{
	uint64_t end = sv_now_ns() + (uint64_t)ms * 1000000;

	while (rs->state == RS_CONNECTED && !rs->peer_fin) {
		uint64_t now = sv_now_ns();

		if (now >= end)
			break;
		rs_progress(rs);
		if (!rs->peer_fin)
			rs_sleep(rs, (int)((end - now) / 1000000) + 1);
	}
}

void rs_conn_close(struct rsock *rs)
{
	/* SO_LINGER's seconds, clamped so that the milliseconds fit an int */
	int ms = !rs->linger.l_onoff ? RS_CLOSE_MS :
		 rs->linger.l_linger < 0 ? 0 :
		 rs->linger.l_linger > 3600 ? 3600 * 1000 : rs->linger.l_linger * 1000;

	if (rs->state != RS_CONNECTED)
		return;
	if (!rs->fin_sent)
		rs->fin_pending = true;
	rs_send_control(rs);
	drain_sends(rs, ms);
	wait_peer_fin(rs, ms);
	rdma_disconnect(rs->id);
	rs->state = RS_DISCONNECTED;
	rs->shut_rd = rs->shut_wr = true;
	rs_wake(rs);
}

RS_EXPORT int rshutdown(int s, int how)
{
	struct rsock *rs = rs_enter(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		rs_leave(rs);
		return rs_errno(EINVAL);
	}
	if (rs->type == SOCK_DGRAM) {
		ret = 0;
	} else if (rs->state != RS_CONNECTED && rs->state != RS_DISCONNECTED) {
		ret = rs_errno(ENOTCONN);
	} else if (how == SHUT_RDWR) {
		rs_conn_close(rs);
	} else if (how == SHUT_RD) {
		rs->shut_rd = true;
	} else if (!rs->shut_wr) {
		rs->shut_wr = true;
		rs->fin_pending = !rs->fin_sent;
		rs_send_control(rs);
	}
	rs_wake(rs);
	rs_leave(rs);
	return ret;
}

void rs_conn_free(struct rsock *rs)
{
	for (int i = 0; i < rs->backlog_len; i++) {
		rdma_reject(rs->backlog[i].id, NULL, 0);
		rdma_destroy_id(rs->backlog[i].id);
	}
	free(rs->backlog);
	rs->backlog = NULL;
	rs->backlog_len = 0;
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	rs_stream_free(rs);
	if (rs->id)
		rdma_destroy_id(rs->id);
	rs->id = NULL;
	if (rs->cm_ch)
		rdma_destroy_event_channel(rs->cm_ch);
	rs->cm_ch = NULL;
}
