// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: waiting.  rs_wait sleeps one thread on its rsocket's
 * epoll fd; rpoll and rselect sleep on many, mixed with ordinary
 * descriptors.  Both spin on the completion queues for polling_time first
 * (rsocket(7)), then arm the queues, look once more (a completion that
 * came between the last look and the arming raises no event), and sleep.
 *
 * Several threads may sleep on one rsocket, and the first one woken takes
 * the completion events and the completions others may be waiting for; so
 * every change anyone may wait for calls rs_wake, which writes the eventfd
 * when someone sleeps, and the eventfd is reset only by the last of the
 * threads that were asleep at that write (`behind`), so each of them sees
 * it; a thread that goes to sleep in between may wake once for nothing.
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
		/* writable when rsend would not block: shut for writing, it fails at once */
		if (rs_can_send(rs) || rs->shut_wr)
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

void rs_wake(struct rsock *rs)
{
	uint64_t one = 1;

	rs->gen++;
	if (!rs->sleepers && !rs->closed)
		return;
	rs->behind = rs->sleepers;
	if (write(rs->evfd, &one, sizeof(one)) < 0) {
		/* the counter is saturated: it is readable anyway */
	}
}

unsigned int rs_sleep_enter(struct rsock *rs)
{
	rs->sleepers++;
	return rs->gen;
}

void rs_sleep_leave(struct rsock *rs, unsigned int gen)
{
	uint64_t v;

	rs->sleepers--;
	if (gen == rs->gen || --rs->behind)
		return;
	/* a closed rsocket's stays readable: each sleeper it woke must see it */
	if (!rs->closed && read(rs->evfd, &v, sizeof(v)) < 0) {
		/* nothing was written: EAGAIN */
	}
}

/* Takes the completion events that woke the epoll fd. */
static void drain(struct rsock *rs)
{
	struct ibv_cq *cq;
	void *ctx;

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
	unsigned int gen;
	int n, err;

	do {
		if (rs_progress(rs))
			return 0;
	} while (sv_now_ns() < spin_end);
	arm(rs);
	if (rs_progress(rs))
		return 0;
	np = sleep_fds(rs, p);
	gen = rs_sleep_enter(rs);
	pthread_mutex_unlock(&rs->lock);
	n = poll(p, np, timeout_ms);
	err = errno;		/* drain's reads must not hide an EINTR */
	pthread_mutex_lock(&rs->lock);
	rs_sleep_leave(rs, gen);
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

/* Fills the rsockets' revents; returns how many are ready.  With gens,
 * arms each and counts the caller asleep on it from that look on. */
static int scan(struct pollfd *fds, nfds_t nfds, struct rsock **rss, unsigned int *gens)
{
	int ready = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct rsock *rs = rss[i];

		if (!rs)
			continue;
		pthread_mutex_lock(&rs->lock);
		fds[i].revents = look(rs, fds[i].events, gens != NULL);
		if (gens)
			gens[i] = rs_sleep_enter(rs);
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

/* The caller no longer sleeps on the rsockets scan counted it on. */
static void leave_all(struct rsock **rss, nfds_t nfds, const unsigned int *gens)
{
	for (nfds_t i = 0; i < nfds; i++) {
		if (!rss[i])
			continue;
		pthread_mutex_lock(&rss[i]->lock);
		rs_sleep_leave(rss[i], gens[i]);
		pthread_mutex_unlock(&rss[i]->lock);
	}
}

/* Milliseconds of rpoll's timeout left: -1 forever, 0 spent. */
static int time_left(uint64_t start, int timeout)
{
	uint64_t spent = (sv_now_ns() - start) / 1000000;

	if (timeout < 0)
		return -1;
	return spent >= (uint64_t)timeout ? 0 : timeout - (int)spent;
}

RS_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct rsock **rss = calloc(nfds ? nfds : 1, sizeof(*rss));
	unsigned int *gens = calloc(nfds ? nfds : 1, sizeof(*gens));
	uint64_t start = sv_now_ns(), spin_end = start + (uint64_t)rs_polling_us() * 1000;
	int ret = 0, nrs = 0;

	if (!rss || !gens) {
		free(rss);
		free(gens);
		return rs_errno(ENOMEM);
	}
	for (nfds_t i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		rss[i] = fds[i].fd >= 0 ? rs_get(fds[i].fd) : NULL;
		nrs += !!rss[i];
	}
	for (bool asleep = false;; asleep = asleep || sv_now_ns() >= spin_end) {
		int others, ready_rs, left;

		ret = scan(fds, nfds, rss, asleep ? gens : NULL);
		/* a look at the other descriptors, without waiting */
		others = nrs < (int)nfds ? poll_all(fds, nfds, rss, 0, &ready_rs) : 0;
		left = time_left(start, timeout);
		if (others || ret || !left) {
			if (asleep)
				leave_all(rss, nfds, gens);
			ret = others < 0 ? -1 : ret + others;
			break;
		}
		if (!asleep)
			continue;
		others = poll_all(fds, nfds, rss, left, &ready_rs);
		leave_all(rss, nfds, gens);
		if (others) {
			ret = others < 0 ? -1 : others + scan(fds, nfds, rss, NULL);
			break;
		}
	}
	for (nfds_t i = 0; i < nfds; i++)
		if (rss[i])
			rs_put(rss[i]);
	free(rss);
	free(gens);
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
