// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: the CM message stream of one id, its dispatch by
 * state, timers and the loss of the peer.  Runs on the progress thread
 * (and on API threads that send), always under cm.lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "cm/cm.h"

/* Messages are a few hundred bytes on a socket whose send buffer is nearly
 * always empty; if it is not, wait a little rather than queue. */
static int send_all(int fd, const uint8_t *buf, size_t len)
{
	uint64_t deadline = cm_now_ms() + 1000;

	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && cm_now_ms() < deadline) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			poll(&pfd, 1, 50);
			continue;
		}
		return n < 0 ? errno : EIO;
	}
	return 0;
}

int cm_send_msg(struct cm_id *p, enum cmw_type type, const void *body,
		size_t len)
{
	uint8_t buf[CMW_MSG_MAX];
	struct cmw_hdr h = {
		.magic = htonl(CMW_MAGIC),
		.version = CMW_VERSION,
		.type = (uint8_t)type,
		.body_len = htons((uint16_t)len),
	};

	CM_TRACE("id %llu: send msg %u in state %s", (unsigned long long)p->serial,
		 type, cm_state_str(p->state));
	if (p->sock < 0)
		return ENOTCONN;
	if (len > CMW_BODY_MAX)
		return EINVAL;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(h), body, len);
	return send_all(p->sock, buf, sizeof(h) + len);
}

int cm_send_rej(struct cm_id *p, uint32_t reason, const void *pdata, uint8_t len)
{
	struct cmw_rej rej;

	memset(&rej, 0, sizeof(rej));
	rej.reason = htonl(reason);
	rej.pdata_len = len;
	if (pdata && len)
		memcpy(rej.pdata, pdata, len);
	return cm_send_msg(p, CMW_REJ, &rej, sizeof(rej));
}

static void send_empty(struct cm_id *p, enum cmw_type type)
{
	struct cmw_empty e = { 0 };

	cm_send_msg(p, type, &e, sizeof(e));
}

/* Connection over: no more socket, QP in error, DISCONNECTED, timewait. */
static void to_disconnected(struct cm_id *p, int status)
{
	cm_sock_close(p);
	cm_id_set_state(p, CM_DISCONNECTED);
	cm_event_post(p, RDMA_CM_EVENT_DISCONNECTED, status);
	cm_timer_set(p, CM_TIMER_TIMEWAIT, cm.timewait_ms);
}

/* Connection attempt failed: event, QP to error, socket closed. */
void cm_conn_failed(struct cm_id *p, struct cm_event *e)
{
	cm_timer_clear(p);
	cm_sock_close(p);
	cm_qp_to_error(p);
	cm_id_set_state(p, CM_DISCONNECTED);
	if (e)
		cm_event_queue(e, sv_container_of(p->id.channel, struct cm_channel, ch));
}

static void free_internal(struct cm_id *p)
{
	cm_timer_clear(p);
	cm_sock_close(p);
	if (p->outstanding == 0)
		cm_id_free_locked(p);
	else
		cm_id_set_state(p, CM_DESTROYING);
}

static void post_rejected(struct cm_id *p, uint32_t reason, const void *pdata,
			  size_t len)
{
	struct cm_event *e = cm_event_alloc(p, RDMA_CM_EVENT_REJECTED, (int)reason);

	if (e)
		cm_event_set_pdata(e, false, pdata, len, CMW_REJ_PDATA);
	cm_conn_failed(p, e);
}

void cm_peer_lost(struct cm_id *p, int err)
{
	CM_TRACE("id %llu: peer lost (%d) in state %s", (unsigned long long)p->serial,
		 err, cm_state_str(p->state));
	switch (p->state) {
	case CM_REQ_WAIT:
		free_internal(p);
		return;
	case CM_CONNECTING:
	case CM_REP_SENT:
		cm_conn_failed(p, cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE, -err));
		return;
	case CM_REQ_RCVD:
		cm_sock_close(p);
		p->peer_lost = true;
		return;
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
		/* The peer process is gone.  Its QP is not touched here: the
		 * application may already have destroyed it with ibv_destroy_qp
		 * (perftest does; rdma-core never modifies a connected QP behind
		 * the application's back), and the device itself flushes a QP
		 * whose peer stays unreachable for its retry budget. */
		cm_timer_clear(p);
		to_disconnected(p, 0);
		return;
	case CM_DISCONNECTING:
		cm_timer_clear(p);
		to_disconnected(p, 0);
		return;
	default:
		cm_sock_close(p);
		return;
	}
}

void cm_timer_fired(struct cm_id *p)
{
	enum cm_timer t = p->timer;

	p->timer = CM_TIMER_NONE;
	switch (t) {
	case CM_TIMER_REQ_READ:
		if (p->state == CM_REQ_WAIT)
			free_internal(p);
		break;
	case CM_TIMER_RESPONSE:
	case CM_TIMER_SERVICE:
		if (p->state == CM_CONNECTING) {
			if (!p->tcp_pending)
				cm_send_rej(p, CMW_REJ_TIMEOUT, NULL, 0);
			cm_conn_failed(p, cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE,
							 -ETIMEDOUT));
		}
		break;
	case CM_TIMER_RTU:
		if (p->state == CM_REP_SENT) {
			cm_send_rej(p, CMW_REJ_TIMEOUT, NULL, 0);
			cm_conn_failed(p, cm_event_alloc(p, RDMA_CM_EVENT_UNREACHABLE,
							 -ETIMEDOUT));
		}
		break;
	case CM_TIMER_DREP:
		if (p->state == CM_DISCONNECTING)
			to_disconnected(p, -ETIMEDOUT);
		break;
	case CM_TIMER_TIMEWAIT:
		if (p->state == CM_DISCONNECTED)
			cm_event_post(p, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		break;
	case CM_TIMER_REFUSED:
		if (p->state == CM_CONNECTING)
			cm_connect_again(p);
		break;
	case CM_TIMER_NONE:
		break;
	}
}

static void handle_rej(struct cm_id *p, const struct cmw_rej *rej)
{
	uint32_t reason = ntohl(rej->reason);
	size_t len = rej->pdata_len > CMW_REJ_PDATA ? CMW_REJ_PDATA : rej->pdata_len;

	switch (p->state) {
	case CM_CONNECTING:
	case CM_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		post_rejected(p, reason, rej->pdata, len);
		break;
	default:
		break;
	}
}

static void handle_dreq(struct cm_id *p)
{
	switch (p->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
	case CM_REP_RCVD:
	case CM_DISCONNECTING:
		/* The CM answers at once; the QP is left to the user's own
		 * rdma_disconnect, as with the real CM. */
		send_empty(p, CMW_DREP);
		cm_timer_clear(p);
		to_disconnected(p, 0);
		break;
	default:
		send_empty(p, CMW_DREP);
		break;
	}
}

static void dispatch(struct cm_id *p, uint8_t type, const uint8_t *body,
		     size_t len)
{
	CM_TRACE("id %llu: got msg %u in state %s", (unsigned long long)p->serial,
		 type, cm_state_str(p->state));
	switch (type) {
	case CMW_REQ:
		if (len == sizeof(struct cmw_req) && p->state == CM_REQ_WAIT) {
			struct cmw_req req;

			memcpy(&req, body, sizeof(req));
			cm_handle_req(p, &req);
		}
		break;
	case CMW_MRA:
		if (len == sizeof(struct cmw_mra) && p->state == CM_CONNECTING) {
			struct cmw_mra mra;
			uint32_t ms;

			memcpy(&mra, body, sizeof(mra));
			ms = ntohl(mra.service_timeout_ms);
			cm_timer_set(p, CM_TIMER_SERVICE, ms ? ms : cm.service_timeout_ms);
		}
		break;
	case CMW_REP:
		if (len == sizeof(struct cmw_rep) && p->state == CM_CONNECTING) {
			struct cmw_rep rep;

			memcpy(&rep, body, sizeof(rep));
			if (cm_ps_is_ud(p->id.ps))
				cm_handle_ud_rep(p, &rep);
			else
				cm_handle_rep(p, &rep);
		}
		break;
	case CMW_RTU:
		if (p->state == CM_REP_SENT) {
			cm_timer_clear(p);
			cm_id_set_state(p, CM_ESTABLISHED);
			cm_event_post(p, RDMA_CM_EVENT_ESTABLISHED, 0);
		}
		break;
	case CMW_REJ:
		if (len == sizeof(struct cmw_rej)) {
			struct cmw_rej rej;

			memcpy(&rej, body, sizeof(rej));
			handle_rej(p, &rej);
		}
		break;
	case CMW_DREQ:
		handle_dreq(p);
		break;
	case CMW_DREP:
		if (p->state == CM_DISCONNECTING) {
			cm_timer_clear(p);
			to_disconnected(p, 0);
		}
		break;
	default:
		break;
	}
}

/* Read what is there and hand every complete message to dispatch().
 * Returns false when the id must not be touched any more. */
static void read_messages(struct cm_id *p)
{
	uint64_t serial = p->serial;

	for (;;) {
		struct cmw_hdr h;
		size_t need;
		ssize_t n;

		if (p->rlen >= sizeof(h)) {
			memcpy(&h, p->rbuf, sizeof(h));
			need = sizeof(h) + ntohs(h.body_len);
			if (ntohl(h.magic) != CMW_MAGIC || h.version != CMW_VERSION ||
			    need > sizeof(p->rbuf)) {
				cm_peer_lost(p, EPROTO);
				return;
			}
			if (p->rlen >= need) {
				uint8_t msg[CMW_MSG_MAX];

				memcpy(msg, p->rbuf, need);
				memmove(p->rbuf, p->rbuf + need, p->rlen - need);
				p->rlen -= need;
				dispatch(p, h.type, msg + sizeof(h), need - sizeof(h));
				/* dispatch may free an internal id or close
				 * the socket */
				if (cm_id_lookup(serial) != p || p->sock < 0)
					return;
				continue;
			}
		} else {
			need = sizeof(h);
		}
		n = recv(p->sock, p->rbuf + p->rlen, need - p->rlen, MSG_DONTWAIT);
		if (n > 0) {
			p->rlen += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		cm_peer_lost(p, n == 0 ? ECONNRESET : errno);
		return;
	}
}

void cm_sock_event(struct cm_id *p, uint32_t events)
{
	if (p->state == CM_LISTEN) {
		cm_listen_readable(p);
		return;
	}
	if (p->state == CM_CONNECTING && p->tcp_pending) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(p->sock, SOL_SOCKET, SO_ERROR, &err, &len))
			err = errno;
		if (!err && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		cm_tcp_connected(p, err);
		return;
	}
	read_messages(p);
}
