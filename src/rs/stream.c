// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: the data path of stream rsockets.
 *
 * Each side posts receives into rslots slots of rslot_size bytes and tells
 * the peer both numbers when connecting.  A message is one SEND_WITH_IMM of
 * at most the peer's slot size; its immediate data carries the op and the
 * slots its sender has reposted since it last said so (credits).  A sender
 * may fill a peer slot only with a credit, and keeps its last credit for
 * control messages (CREDIT, FIN): whatever the two applications do, each
 * side can always hand the other its credits back.  The receiver reposts a
 * slot when the application has read all of it, and sends a CREDIT message
 * once half of its slots wait to be reported and no data carried them.
 * riowrite is an RDMA WRITE into a buffer the peer announced with IOMAP
 * (rs/iomap.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <endian.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "rs/rs.h"

#define RS_SLOT_MAX (16u << 10)
#define RS_SLOT_MIN 256u
#define RS_SLOTS_MAX 1024u
#define RS_WR_SLOT (1ull << 32)	/* wr_id: a send slot to free on completion */
#define RS_WR_RECV (1ull << 33)	/* wr_id: a receive (opcode is undefined in errors) */
#define RS_CQ_BATCH 16

static void recv_geometry(struct rsock *rs)
{
	uint32_t buf = (uint32_t)rs->rcvbuf, size = RS_SLOT_MAX, n;

	while (size > RS_SLOT_MIN && buf / size < 8)
		size /= 2;
	n = buf / size;
	if (n > (uint32_t)rs->rqsize && rs->rqsize >= 4)
		n = (uint32_t)rs->rqsize;
	if (n < 4)
		n = 4;
	if (n > RS_SLOTS_MAX)
		n = RS_SLOTS_MAX;
	rs->rslot_size = size;
	rs->rslots = n;
}

void rs_conn_data_init(struct rsock *rs, struct rs_conn_data *cd)
{
	memset(cd, 0, sizeof(*cd));
	cd->version = RS_PROTO_VERSION;
	cd->slot_size = htobe32(rs->rslot_size);
	cd->slots = htobe32(rs->rslots);
}

static int post_recv(struct rsock *rs, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rs->rbuf + (size_t)slot * rs->rslot_size),
		.length = rs->rslot_size,
		.lkey = rs->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = RS_WR_RECV | slot, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(rs->id->qp, &wr, &bad);
}

static void *alloc_buf(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int create_qp(struct rsock *rs)
{
	struct ibv_qp_init_attr a = {
		.send_cq = rs->cq,
		.recv_cq = rs->cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = {
			.max_send_wr = rs->sq_size,
			.max_recv_wr = rs->rslots,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = (uint32_t)rs->inline_size,
		},
	};

	/* The device may take less inline data than asked: halve until it fits. */
	while (rdma_create_qp(rs->id, rs->pd, &a)) {
		if (errno != EINVAL || !a.cap.max_inline_data)
			return -1;
		a.cap.max_inline_data /= 2;
	}
	rs->inline_size = (int)a.cap.max_inline_data;
	return 0;
}

/* The receive side and the QP: before connecting, or when accepting. */
static int setup_recv(struct rsock *rs)
{
	struct ibv_context *ctx = rs->id->verbs;
	size_t len;

	recv_geometry(rs);
	rs->sq_size = (uint32_t)(rs->sqsize < 4 ? 4 : rs->sqsize);
	rs->pd = ibv_alloc_pd(ctx);
	rs->own_pd = true;
	rs->cc = rs->pd ? ibv_create_comp_channel(ctx) : NULL;
	if (!rs->cc)
		return -1;
	if (rs_nonblock(rs->cc->fd) || rs_epoll_add(rs, rs->cc->fd))
		return -1;
	rs->cq = ibv_create_cq(ctx, (int)(rs->sq_size + rs->rslots), rs, rs->cc, 0);
	if (!rs->cq)
		return -1;
	len = (size_t)rs->rslots * rs->rslot_size;
	rs->rbuf = alloc_buf(len);
	rs->rx = calloc(rs->rslots, sizeof(*rs->rx));
	if (!rs->rbuf || !rs->rx)
		return rs_errno(ENOMEM);
	rs->rmr = ibv_reg_mr(rs->pd, rs->rbuf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!rs->rmr || create_qp(rs))
		return -1;
	for (uint32_t i = 0; i < rs->rslots; i++)
		if (post_recv(rs, i))
			return -1;
	rs->sq_avail = rs->sq_size;
	return 0;
}

/* The send side, once the peer's slots are known. */
static int setup_send(struct rsock *rs, const struct rs_conn_data *peer)
{
	uint32_t n = (uint32_t)rs->sndbuf / peer->slot_size;
	size_t len;

	if (n < 2)
		n = 2;
	if (n > rs->sq_size)
		n = rs->sq_size;
	rs->sslot_size = peer->slot_size;
	rs->sslots = n;
	rs->credits = peer->slots;
	rs->peer_slots = peer->slots;
	len = (size_t)n * rs->sslot_size;
	rs->sbuf = alloc_buf(len);
	rs->sfree = calloc(n, sizeof(*rs->sfree));
	if (!rs->sbuf || !rs->sfree)
		return rs_errno(ENOMEM);
	rs->smr = ibv_reg_mr(rs->pd, rs->sbuf, len, 0);
	if (!rs->smr)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		rs->sfree[rs->sfree_count++] = n - 1 - i;
	if (rs->iomap_size > 0) {
		rs->lmap = calloc((size_t)rs->iomap_size, sizeof(*rs->lmap));
		if (!rs->lmap)
			return rs_errno(ENOMEM);
	}
	return 0;
}

int rs_stream_setup(struct rsock *rs, const struct rs_conn_data *peer)
{
	if (!rs->id->qp && setup_recv(rs))
		return -1;
	return peer ? setup_send(rs, peer) : 0;
}

void rs_stream_free(struct rsock *rs)
{
	if (rs->cq) {
		if (rs->cq_events)
			ibv_ack_cq_events(rs->cq, rs->cq_events);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cc)
		ibv_destroy_comp_channel(rs->cc);
	for (int i = 0; rs->lmap && i < rs->iomap_size; i++)
		if (rs->lmap[i].mr)
			ibv_dereg_mr(rs->lmap[i].mr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->pd && rs->own_pd)
		ibv_dealloc_pd(rs->pd);
	if (rs->rbuf)
		munmap(rs->rbuf, (size_t)rs->rslots * rs->rslot_size);
	if (rs->sbuf)
		munmap(rs->sbuf, (size_t)rs->sslots * rs->sslot_size);
	free(rs->rx);
	free(rs->sfree);
	free(rs->lmap);
	free(rs->rmap);
	rs->cq = NULL;
	rs->cc = NULL;
	rs->rmr = rs->smr = NULL;
	rs->pd = NULL;
	rs->rbuf = rs->sbuf = NULL;
	rs->rx = NULL;
	rs->sfree = NULL;
	rs->lmap = rs->rmap = NULL;
}

/* ---- messages --------------------------------------------------------- */

static uint32_t take_credits(struct rsock *rs)
{
	uint32_t n = rs->unreported > RS_IMM_CREDITS ? RS_IMM_CREDITS : rs->unreported;

	rs->unreported -= n;
	return n;
}

/* One SEND_WITH_IMM of op, from a send slot (slot >= 0) or inline data. */
int rs_post_msg(struct rsock *rs, enum rs_op op, int slot, const void *data, uint32_t len)
{
	struct ibv_sge sge = { .length = len };
	struct ibv_send_wr wr = {
		.opcode = IBV_WR_SEND_WITH_IMM,
		.sg_list = &sge,
		.num_sge = len ? 1 : 0,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	uint32_t credits = take_credits(rs);

	if (slot >= 0) {
		sge.addr = (uintptr_t)(rs->sbuf + (size_t)slot * rs->sslot_size);
		sge.lkey = rs->smr->lkey;
		wr.wr_id = RS_WR_SLOT | (uint32_t)slot;
	} else {
		sge.addr = (uintptr_t)data;
		if (len)
			wr.send_flags |= IBV_SEND_INLINE;
	}
	wr.imm_data = htobe32((uint32_t)op << RS_IMM_OP_SHIFT | credits);
	if (ibv_post_send(rs->id->qp, &wr, &bad)) {
		rs->unreported += credits;
		if (slot >= 0)
			rs->sfree[rs->sfree_count++] = (uint32_t)slot;
		return -1;
	}
	rs->credits--;
	rs->sq_avail--;
	return 0;
}

void rs_send_control(struct rsock *rs)
{
	if (rs->state != RS_CONNECTED || !rs->smr)
		return;
	rs_iomap_flush(rs);
	if (rs->fin_pending && rs->credits >= 1 && rs->sq_avail >= 1 &&
	    !rs_post_msg(rs, RS_OP_FIN, -1, NULL, 0)) {
		rs->fin_pending = false;
		rs->fin_sent = true;
	}
	if (rs->unreported >= (rs->rslots + 1) / 2 && rs->credits >= 1 && rs->sq_avail >= 1)
		rs_post_msg(rs, RS_OP_CREDIT, -1, NULL, 0);
}

bool rs_can_send(struct rsock *rs)
{
	return rs->state == RS_CONNECTED && !rs->shut_wr && rs->smr && rs->credits >= 2 &&
	       rs->sq_avail >= 1 && rs->sfree_count >= 1 && !rs->iomap_unsent;
}

static void repost(struct rsock *rs, uint32_t slot)
{
	if (post_recv(rs, slot)) {
		rs->state = RS_ERROR;
		rs->err = ECONNRESET;
		return;
	}
	rs->unreported++;
}

static void got_recv(struct rsock *rs, const struct ibv_wc *wc)
{
	uint32_t imm = (wc->wc_flags & IBV_WC_WITH_IMM) ? be32toh(wc->imm_data) : 0;
	uint32_t slot = (uint32_t)wc->wr_id;

	rs->credits += imm & RS_IMM_CREDITS;
	switch (imm >> RS_IMM_OP_SHIFT) {
	case RS_OP_DATA:
		if (wc->byte_len) {
			uint32_t tail = (rs->rx_head + rs->rx_count) % rs->rslots;

			rs->rx[tail] = (struct rs_rx){ .slot = slot, .len = wc->byte_len };
			rs->rx_count++;
			return;
		}
		break;
	case RS_OP_FIN:
		rs->peer_fin = true;
		break;
	case RS_OP_IOMAP:
		if (wc->byte_len >= sizeof(struct rs_iomap_wire))
			rs_iomap_remote(rs, (const void *)(rs->rbuf + (size_t)slot * rs->rslot_size));
		break;
	default:
		break;
	}
	repost(rs, slot);
}

static void got_error(struct rsock *rs, const struct ibv_wc *wc)
{
	if (wc->status == IBV_WC_WR_FLUSH_ERR) {
		if (rs->state == RS_CONNECTED)
			rs->state = RS_DISCONNECTED;
		return;
	}
	if (rs->state == RS_CONNECTED || rs->state == RS_DISCONNECTED) {
		rs->state = RS_ERROR;
		rs->err = ECONNRESET;
	}
}

static int poll_cq_once(struct rsock *rs)
{
	struct ibv_wc wc[RS_CQ_BATCH];
	int n = ibv_poll_cq(rs->cq, RS_CQ_BATCH, wc);

	for (int i = 0; i < n; i++) {
		bool recv = wc[i].wr_id & RS_WR_RECV;

		if (!recv) {
			rs->sq_avail++;
			if (wc[i].wr_id & RS_WR_SLOT)
				rs->sfree[rs->sfree_count++] = (uint32_t)wc[i].wr_id;
		}
		if (wc[i].status != IBV_WC_SUCCESS)
			got_error(rs, &wc[i]);
		else if (recv)
			got_recv(rs, &wc[i]);
	}
	return n < 0 ? 0 : n;
}

int rs_cq_progress(struct rsock *rs)
{
	int n, total = 0;

	if (!rs->cq)
		return 0;
	while ((n = poll_cq_once(rs)) > 0)
		total += n;
	if (total) {
		rs_send_control(rs);
		rs_wake(rs);
	}
	return total;
}

/* ---- reading ---------------------------------------------------------- */

/* Copies up to the iovec's room from the received messages. */
static size_t copy_out(struct rsock *rs, const struct iovec *iov, int iovcnt, size_t done,
		       bool peek)
{
	uint32_t idx = rs->rx_head, left = rs->rx_count, skip = 0;
	size_t n = 0, pos = done;
	int v = 0;

	while (v < iovcnt && pos >= iov[v].iov_len)
		pos -= iov[v++].iov_len;
	while (left && v < iovcnt) {
		struct rs_rx *m = &rs->rx[idx];
		uint32_t off = m->off + (peek ? skip : 0);
		size_t room = iov[v].iov_len - pos, take = m->len - off;

		if (take > room)
			take = room;
		memcpy((char *)iov[v].iov_base + pos,
		       rs->rbuf + (size_t)m->slot * rs->rslot_size + off, take);
		n += take;
		pos += take;
		if (pos == iov[v].iov_len)
			v++, pos = 0;
		if (peek) {
			skip += (uint32_t)take;
			if (off + take == m->len)
				idx = (idx + 1) % rs->rslots, left--, skip = 0;
			continue;
		}
		m->off += (uint32_t)take;
		if (m->off == m->len) {
			uint32_t slot = m->slot;

			rs->rx_head = (rs->rx_head + 1) % rs->rslots;
			rs->rx_count--;
			idx = rs->rx_head;
			left--;
			repost(rs, slot);
		}
	}
	if (!peek && n)
		rs_send_control(rs);
	return n;
}

ssize_t rs_stream_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t want = rs_iov_len(iov, iovcnt), done = 0;
	bool block = !rs->nonblock && !(flags & MSG_DONTWAIT);

	/* a connection on its way may be waited for; an idle or listening
	 * socket has none, as recv(2) says */
	if (rs->state < RS_RESOLVING_ADDR)
		return rs_errno(ENOTCONN);
	for (;;) {
		rs_cq_progress(rs);
		done += copy_out(rs, iov, iovcnt, done, flags & MSG_PEEK);
		if (done == want || (done && !(flags & MSG_WAITALL)) || (flags & MSG_PEEK && done))
			return (ssize_t)done;
		if (rs->shut_rd || rs->peer_fin || rs->state == RS_DISCONNECTED)
			return (ssize_t)done;
		if (rs->state == RS_ERROR) {
			if (done)
				return (ssize_t)done;
			return rs_errno(rs->err ? rs->err : ECONNRESET);
		}
		if (!block)
			return done ? (ssize_t)done : rs_errno(EAGAIN);
		if (rs_wait(rs, -1))
			return done ? (ssize_t)done : -1;
		rs_progress(rs);
	}
}

/* ---- writing ---------------------------------------------------------- */

/* Gathers len bytes from the iovec, starting `off` bytes in. */
static void gather(void *dst, const struct iovec *iov, int iovcnt, size_t off, size_t len)
{
	char *d = dst;
	int v = 0;

	while (v < iovcnt && off >= iov[v].iov_len)
		off -= iov[v++].iov_len;
	while (len && v < iovcnt) {
		size_t take = iov[v].iov_len - off;

		if (take > len)
			take = len;
		memcpy(d, (const char *)iov[v].iov_base + off, take);
		d += take;
		len -= take;
		off = 0;
		v++;
	}
}

/* Why a send cannot go on now: 0 (it can), EAGAIN (wait), or an errno. */
static int send_block(struct rsock *rs, bool need_credit)
{
	if (rs->state == RS_ERROR)
		return rs->err ? rs->err : ECONNRESET;
	if (rs->state == RS_DISCONNECTED || rs->shut_wr)
		return EPIPE;
	if (rs->state != RS_CONNECTED)
		return rs->state > RS_IDLE ? EAGAIN : ENOTCONN;
	if (rs->sq_avail < 1 || rs->sfree_count < 1 || (need_credit && rs->credits < 2))
		return EAGAIN;
	/* data must not overtake a map riomap has returned */
	if (need_credit && rs->iomap_unsent)
		return EAGAIN;
	return 0;
}

/* Runs one chunk at a time while resources last; blocks as a socket does. */
typedef int (*rs_chunk_fn)(struct rsock *rs, const struct iovec *iov, int iovcnt, size_t off,
			   size_t len, void *arg);

static ssize_t send_loop(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
			 bool need_credit, rs_chunk_fn chunk, void *arg)
{
	size_t total = rs_iov_len(iov, iovcnt), sent = 0;
	bool block = !rs->nonblock && !(flags & MSG_DONTWAIT);
	int why0 = total ? 0 : send_block(rs, false);

	/* nothing to send still needs a connection (send(2) of 0 bytes) */
	if (why0 && why0 != EAGAIN)
		return rs_errno(why0);
	while (sent < total) {
		size_t len = total - sent;
		int why;

		if (need_credit)
			rs_iomap_flush(rs);
		why = send_block(rs, need_credit);

		if (why == EAGAIN) {
			rs_cq_progress(rs);
			why = send_block(rs, need_credit);
		}
		if (why && why != EAGAIN)
			return sent ? (ssize_t)sent : rs_errno(why);
		if (why == EAGAIN) {
			if (!block)
				return sent ? (ssize_t)sent : rs_errno(EAGAIN);
			if (rs_wait(rs, -1))
				return sent ? (ssize_t)sent : -1;
			rs_progress(rs);
			continue;
		}
		if (len > rs->sslot_size)
			len = rs->sslot_size;
		if (chunk(rs, iov, iovcnt, sent, len, arg))
			return sent ? (ssize_t)sent : -1;
		sent += len;
	}
	return (ssize_t)sent;
}

static int send_chunk(struct rsock *rs, const struct iovec *iov, int iovcnt, size_t off,
		      size_t len, void *arg)
{
	int slot;

	(void)arg;
	if (len <= (size_t)rs->inline_size) {
		char tmp[len ? len : 1];

		gather(tmp, iov, iovcnt, off, len);
		return rs_post_msg(rs, RS_OP_DATA, -1, tmp, (uint32_t)len);
	}
	slot = (int)rs->sfree[--rs->sfree_count];
	gather(rs->sbuf + (size_t)slot * rs->sslot_size, iov, iovcnt, off, len);
	return rs_post_msg(rs, RS_OP_DATA, slot, NULL, (uint32_t)len);
}

ssize_t rs_stream_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags)
{
	return send_loop(rs, iov, iovcnt, flags, true, send_chunk, NULL);
}

/* ---- riomap / riowrite ------------------------------------------------ */

static struct rs_iomap *find_rmap(struct rsock *rs, uint64_t offset)
{
	for (int i = 0; i < rs->rmap_count; i++) {
		struct rs_iomap *m = &rs->rmap[i];

		if (m->used && offset >= m->offset && offset < m->offset + m->len)
			return m;
	}
	return NULL;
}

static int write_chunk(struct rsock *rs, const struct iovec *iov, int iovcnt, size_t off,
		       size_t len, void *arg)
{
	uint64_t offset = *(uint64_t *)arg + off;
	struct rs_iomap *m = find_rmap(rs, offset);
	int slot = (int)rs->sfree[--rs->sfree_count];
	struct ibv_sge sge = {
		.addr = (uintptr_t)(rs->sbuf + (size_t)slot * rs->sslot_size),
		.length = (uint32_t)len,
		.lkey = rs->smr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = RS_WR_SLOT | (uint32_t)slot,
		.opcode = IBV_WR_RDMA_WRITE,
		.sg_list = &sge,
		.num_sge = 1,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (!m || offset + len > m->offset + m->len) {
		rs->sfree[rs->sfree_count++] = (uint32_t)slot;
		return rs_errno(EINVAL);
	}
	gather((void *)sge.addr, iov, iovcnt, off, len);
	wr.wr.rdma.remote_addr = m->addr + (offset - m->offset);
	wr.wr.rdma.rkey = m->rkey;
	if (ibv_post_send(rs->id->qp, &wr, &bad)) {
		rs->sfree[rs->sfree_count++] = (uint32_t)slot;
		return -1;
	}
	rs->sq_avail--;
	return 0;
}

RS_EXPORT size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	struct rsock *rs = rs_enter(s);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = count };
	uint64_t off = (uint64_t)offset;
	ssize_t ret;

	if (!rs)
		return (size_t)-1;
	if (rs->type != SOCK_STREAM) {
		ret = rs_errno(EOPNOTSUPP);
	} else {
		rs_cq_progress(rs);
		struct rs_iomap *m = find_rmap(rs, off);

		if (m && off + count > m->offset + m->len)
			iov.iov_len = m->offset + m->len - off;
		ret = m ? send_loop(rs, &iov, 1, flags, false, write_chunk, &off) :
			  rs_errno(EINVAL);
	}
	rs_leave(rs);
	return (size_t)ret;
}
