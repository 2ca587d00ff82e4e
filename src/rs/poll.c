// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: waiting.  rs_wait sleeps one thread on its rsocket's
 * epoll fd; rpoll and rselect sleep on many, mixed with ordinary
 * descriptors.  Both spin on the completion queues for polling_time first
 * (rsocket(7)), then arm the queues, look once more (a completion that
 * came between the last look and the arming raises no event), and sleep.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/select.h>

#include "rs/rs.h"
#include "util/time.h"

int rs_progress(struct rsock *rs)
{
	if (rs->type == SOCK_DGRAM)
		return rs_dgram_progress(rs);
	return rs_cm_progress(rs) + rs_cq_progress(rs);
}

short rs_revents(struct rsock *rs)
{
	short ev = 0;

	if (rs->type == SOCK_DGRAM)
		return rs_dgram_revents(rs);
	switch (rs->state) {
	case RS_IDLE:
		return POLLOUT | POLLHUP;
	case RS_LISTENING:
		return rs->backlog_len ? POLLIN : 0;
	case RS_CONNECTED:
		if (rs->rx_count || rs->peer_fin || rs->shut_rd)
			ev |= POLLIN;
		if (rs_can_send(rs))
			ev |= POLLOUT;
		if (rs->peer_fin)
			ev |= POLLRDHUP;
		return ev;
	case RS_DISCONNECTED:
		/* as TCP after the peer's FIN: hung up only once all is read */
		return POLLIN | POLLOUT | POLLRDHUP | (rs->rx_count ? 0 : POLLHUP);
	case RS_ERROR:
		return POLLIN | POLLOUT | POLLERR | POLLHUP;
	default:
		return 0;	/* connecting */
	}
}

/* Takes what woke the epoll fd: completion events and wake-ups. */
static void drain(struct rsock *rs)
{
	struct ibv_cq *cq;
	uint64_t v;
	void *ctx;

	/* a closed rsocket's stays readable: each sleeper it woke must see it */
	if (!rs->closed && read(rs->evfd, &v, sizeof(v)) < 0) {
		/* nothing was written: EAGAIN */
	}
	while (rs->cc && !ibv_get_cq_event(rs->cc, &cq, &ctx)) {
		rs->cq_armed = false;
		if (++rs->cq_events >= 64) {
			ibv_ack_cq_events(rs->cq, rs->cq_events);
			rs->cq_events = 0;
		}
	}
}

/* Arms the completion queue: its next completion wakes the epoll fd.
 * Every time, even if armed already: arming also tells the device that
 * nobody polls now, so it must not wait for a poller to come back. */
static void arm(struct rsock *rs)
{
	if (rs->cq && !ibv_req_notify_cq(rs->cq, 0))
		rs->cq_armed = true;
}

/* What a sleeper polls: the epoll fd, but a closed rsocket's is always
 * readable (its evfd), so its closer polls what can make progress. */
static nfds_t sleep_fds(struct rsock *rs, struct pollfd *p)
{
	nfds_t n = 0;

	if (!rs->closed) {
		p[n++] = (struct pollfd){ .fd = rs->fd, .events = POLLIN };
		return n;
	}
	if (rs->cm_ch)
		p[n++] = (struct pollfd){ .fd = rs->cm_ch->fd, .events = POLLIN };
	if (rs->cc)
		p[n++] = (struct pollfd){ .fd = rs->cc->fd, .events = POLLIN };
	return n;
}

int rs_sleep(struct rsock *rs, int timeout_ms)
{
	struct pollfd p[2];
	nfds_t np;
	uint64_t spin_end = sv_now_ns() + (uint64_t)rs_polling_us() * 1000;
	int n, err;

	do {
		if (rs_progress(rs))
			return 0;
	} while (sv_now_ns() < spin_end);
	arm(rs);
	if (rs_progress(rs))
		return 0;
	np = sleep_fds(rs, p);
	rs->sleepers++;
	pthread_mutex_unlock(&rs->lock);
	n = poll(p, np, timeout_ms);
	err = errno;		/* drain's reads must not hide an EINTR */
	pthread_mutex_lock(&rs->lock);
	rs->sleepers--;
	drain(rs);
	if (n == 0)
		return rs_errno(ETIMEDOUT);
	return n < 0 ? rs_errno(err) : 0;
}

int rs_wait(struct rsock *rs, int timeout_ms)
{
	int ret;

	if (rs->closed)
		return rs_errno(EBADF);
	ret = rs_sleep(rs, timeout_ms);
	/* EBADF as for any call on a closed number (Linux's recv(2) would sleep on) */
	return rs->closed ? rs_errno(EBADF) : ret;
}

/* ---- rpoll ------------------------------------------------------------ */

/* One rsocket's revents (lock held); rclosed meanwhile, it is POLLNVAL as
 * poll(2) says of a descriptor that is not open. */
static short look(struct rsock *rs, short events, bool do_arm)
{
	if (rs->closed)
		return POLLNVAL;
	rs_progress(rs);
	if (do_arm) {
		drain(rs);
		arm(rs);
		rs_progress(rs);
	}
	return rs_revents(rs) & (events | POLLERR | POLLHUP | POLLNVAL);
}

/* Fills the rsockets' revents; returns how many are ready. */
static int scan(struct pollfd *fds, nfds_t nfds, struct rsock **rss, bool do_arm)
{
	int ready = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rss[i];

		if (!rs)
			continue;
		pthread_mutex_lock(&rs->lock);
		fds[i].revents = look(rs, fds[i].events, do_arm);
		pthread_mutex_unlock(&rs->lock);
		if (fds[i].revents)
			ready++;
	}
	return ready;
}

/* One poll(2) of every descriptor: rsockets as their epoll fds. */
static int poll_all(struct pollfd *fds, nfds_t nfds, struct rsock **rss, int timeout,
		    int *ready_rs)
{
	struct pollfd *p = calloc(nfds ? nfds : 1, sizeof(*p));
	int n, ready = 0;

	if (!p)
		return rs_errno(ENOMEM);
	for (nfds_t i = 0; i < nfds; i++) {
		p[i].fd = rss[i] ? rss[i]->fd : fds[i].fd;
		p[i].events = rss[i] ? POLLIN : fds[i].events;
	}
	n = poll(p, nfds, timeout);
	*ready_rs = 0;
	for (nfds_t i = 0; n > 0 && i < nfds; i++) {
		if (rss[i]) {
			*ready_rs += !!p[i].revents;
		} else {
			fds[i].revents = p[i].revents;
			ready += !!p[i].revents;
		}
	}
	free(p);
	return n < 0 ? -1 : ready;
}

RS_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct rsock **rss = calloc(nfds ? nfds : 1, sizeof(*rss));
	uint64_t start = sv_now_ns(), spin_end = start + (uint64_t)rs_polling_us() * 1000;
	int ret = 0, nrs = 0;

	if (!rss)
		return rs_errno(ENOMEM);
	for (nfds_t i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		rss[i] = fds[i].fd >= 0 ? rs_get(fds[i].fd) : NULL;
		nrs += !!rss[i];
	}
	for (bool sleep_next = false;;) {
		int others, ready_rs, left = timeout;

		ret = scan(fds, nfds, rss, sleep_next);
		/* a look at the other descriptors, without waiting */
		others = nrs < (int)nfds ? poll_all(fds, nfds, rss, 0, &ready_rs) : 0;
		if (others < 0) {
			ret = -1;
			break;
		}
		ret += others;
		if (ret || timeout == 0)
			break;
		if (!sleep_next) {
			sleep_next = sv_now_ns() >= spin_end;
			continue;
		}
		if (timeout > 0) {
			uint64_t spent = (sv_now_ns() - start) / 1000000;

			if (spent >= (uint64_t)timeout)
				break;
			left = timeout - (int)spent;
		}
		others = poll_all(fds, nfds, rss, left, &ready_rs);
		if (others < 0) {
			ret = -1;
			break;
		}
		if (others) {
			ret = others + scan(fds, nfds, rss, false);
			break;
		}
		if (!ready_rs && timeout > 0 && (sv_now_ns() - start) / 1000000 >= (uint64_t)timeout)
			break;
	}
	for (nfds_t i = 0; i < nfds; i++)
		if (rss[i])
			rs_put(rss[i]);
	free(rss);
	return ret;
}

RS_EXPORT int rselect(int nfds, fd_set *rfds, fd_set *wfds, fd_set *efds, struct timeval *tv)
{
	struct pollfd *p = calloc(nfds > 0 ? (size_t)nfds : 1, sizeof(*p));
	int n = 0, ret;

	if (!p)
		return rs_errno(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = (rfds && FD_ISSET(fd, rfds) ? POLLIN : 0) |
			   (wfds && FD_ISSET(fd, wfds) ? POLLOUT : 0) |
			   (efds && FD_ISSET(fd, efds) ? POLLPRI : 0);

		if (ev)
			p[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	ret = rpoll(p, (nfds_t)n, tv ? (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000) : -1);
	for (int i = 0; ret > 0 && i < n; i++)
		if (p[i].revents & POLLNVAL)
			ret = rs_errno(EBADF);	/* as select(2) for a descriptor not open */
	if (rfds)
		FD_ZERO(rfds);
	if (wfds)
		FD_ZERO(wfds);
	if (efds)
		FD_ZERO(efds);
	if (ret > 0) {
		ret = 0;
		for (int i = 0; i < n; i++) {
			if (rfds && (p[i].revents & (POLLIN | POLLHUP | POLLERR)) && (p[i].events & POLLIN))
				FD_SET(p[i].fd, rfds), ret++;
			if (wfds && (p[i].revents & (POLLOUT | POLLERR)) && (p[i].events & POLLOUT))
				FD_SET(p[i].fd, wfds), ret++;
			if (efds && (p[i].revents & POLLPRI))
				FD_SET(p[i].fd, efds), ret++;
		}
	}
	free(p);
	return ret;
}
