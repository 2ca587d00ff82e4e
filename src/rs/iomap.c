// SPDX-License-Identifier: MIT
/*
 * softverbs rsockets: riomap's buffers, which the peer may riowrite, and
 * their announcement to the peer (an IOMAP message).
 *
 * riomap never waits for a credit, blocking rsocket or not: rsocket(7)
 * promises a map only once the peer has received data sent after riomap
 * returned, so an announcement without a credit is queued and goes out
 * as soon as credits allow, ahead of later data (a CREDIT or FIN may pass
 * it on the credit kept for them).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rdma/rsocket.h>

#include "rs/rs.h"

/* The peer's map, from its IOMAP message: a map at the same offset is replaced. */
void rs_iomap_remote(struct rsock *rs, const struct rs_iomap_wire *w)
{
	struct rs_iomap m = {
		.used = true,
		.offset = be64toh(w->offset),
		.addr = be64toh(w->addr),
		.rkey = be32toh(w->rkey),
		.len = be32toh(w->len),
	};
	struct rs_iomap *t;
	int i;

	for (i = 0; i < rs->rmap_count; i++)
		if (!rs->rmap[i].used || rs->rmap[i].offset == m.offset)
			break;
	if (i == rs->rmap_count) {
		t = realloc(rs->rmap, (size_t)(i + 1) * sizeof(*t));
		if (!t)
			return;
		rs->rmap = t;
		rs->rmap_count++;
	}
	rs->rmap[i] = m;
}

/* An announcement takes a credit as data does: the last stays for control. */
static bool can_announce(struct rsock *rs, bool in_slot)
{
	return rs->state == RS_CONNECTED && rs->smr && rs->credits >= 2 && rs->sq_avail >= 1 &&
	       (!in_slot || rs->sfree_count >= 1);
}

/* Sends one IOMAP message for m: 0, or -1 when it must wait. */
static int announce(struct rsock *rs, const struct rs_iomap *m)
{
	struct rs_iomap_wire w = {
		.offset = htobe64(m->offset),
		.addr = htobe64(m->addr),
		.rkey = htobe32(m->rkey),
		.len = htobe32((uint32_t)m->len),
	};
	bool in_slot = sizeof(w) > (size_t)rs->inline_size;
	int slot;

	if (!can_announce(rs, in_slot))
		return -1;
	if (!in_slot)
		return rs_post_msg(rs, RS_OP_IOMAP, -1, &w, sizeof(w));
	slot = (int)rs->sfree[--rs->sfree_count];
	memcpy(rs->sbuf + (size_t)slot * rs->sslot_size, &w, sizeof(w));
	return rs_post_msg(rs, RS_OP_IOMAP, slot, NULL, sizeof(w));
}

static struct rs_iomap *oldest_unsent(struct rsock *rs)
{
	struct rs_iomap *old = NULL;

	for (int i = 0; i < rs->iomap_size; i++)
		if (rs->lmap[i].unsent && (!old || rs->lmap[i].unsent < old->unsent))
			old = &rs->lmap[i];
	return old;
}

void rs_iomap_flush(struct rsock *rs)
{
	while (rs->iomap_unsent) {
		struct rs_iomap *m = oldest_unsent(rs);

		if (announce(rs, m))
			return;
		m->unsent = 0;
		rs->iomap_unsent--;
	}
}

static uint64_t next_offset(struct rsock *rs)
{
	uint64_t end = 0;

	for (int i = 0; i < rs->iomap_size; i++)
		if (rs->lmap[i].used && rs->lmap[i].offset + rs->lmap[i].len > end)
			end = rs->lmap[i].offset + rs->lmap[i].len;
	return (end + 63) & ~63ull;
}

static struct rs_iomap *free_lmap(struct rsock *rs)
{
	for (int i = 0; i < rs->iomap_size; i++)
		if (!rs->lmap[i].used)
			return &rs->lmap[i];
	return NULL;
}

/* Registers buf for the peer's writes and queues its announcement. */
static off_t map_buf(struct rsock *rs, void *buf, size_t len, off_t offset)
{
	struct rs_iomap *m = free_lmap(rs);

	if (!m)
		return rs_errno(ENOMEM);
	m->mr = ibv_reg_mr(rs->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!m->mr)
		return -1;
	m->offset = offset == -1 ? next_offset(rs) : (uint64_t)offset;
	m->addr = (uintptr_t)buf;
	m->len = len;
	m->rkey = m->mr->rkey;
	m->buf = buf;
	m->used = true;
	m->unsent = ++rs->iomap_seq;
	rs->iomap_unsent++;
	rs_cq_progress(rs);
	rs_iomap_flush(rs);
	return (off_t)m->offset;
}

RS_EXPORT off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	struct rsock *rs = rs_enter(s);
	off_t ret = -1;

	(void)flags;
	if (!rs)
		return -1;
	if (!buf || !len || len > UINT32_MAX || (prot & ~(PROT_READ | PROT_WRITE)))
		errno = EINVAL;
	else if (rs->type != SOCK_STREAM || rs->state != RS_CONNECTED)
		errno = rs->type != SOCK_STREAM ? EOPNOTSUPP : ENOTCONN;
	else if (!(prot & PROT_WRITE))
		ret = 0;	/* local use only: our sends copy, nothing to keep */
	else
		ret = map_buf(rs, buf, len, offset);
	rs_leave(rs);
	return ret;
}

RS_EXPORT int riounmap(int s, void *buf, size_t len)
{
	struct rsock *rs = rs_enter(s);
	int ret = rs_errno(EINVAL);

	if (!rs)
		return -1;
	for (int i = 0; rs->lmap && i < rs->iomap_size; i++) {
		struct rs_iomap *m = &rs->lmap[i];

		if (m->used && m->buf == buf && m->len == len) {
			if (m->unsent)
				rs->iomap_unsent--;
			ibv_dereg_mr(m->mr);
			memset(m, 0, sizeof(*m));
			ret = 0;
			break;
		}
	}
	rs_leave(rs);
	return ret;
}
