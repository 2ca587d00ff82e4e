/*
 * A socket channel's fault filter (fault.h), between the engine and the
 * channel's ops.  Store and forward, as a NIC: the frame the engine writes
 * is taken whole, then dropped, sealed (CRC32C), corrupted, duplicated into
 * the bytes the socket gets; read bytes are cut into frames, and only
 * checked ones reach the engine.  Whole frames only: the stream's framing
 * stays intact.  Lives under its QP's lock, as the channel's reads and
 * writes do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/fault/fault.h"
#include "transport/transport.h"
#include "util/log.h"

#define SV_FAULT_SOCKBUF (256 * 1024)   /* a lossy channel's socket buffers */

struct sv_fault_buf {
	uint8_t *p;
	size_t off, len, cap;        /* bytes [off, len) are the buffer's */
};

struct sv_fault_stream {
	struct sv_fault_rng rng;
	struct sv_fault_buf cur;     /* the frame the engine is writing */
	struct sv_fault_buf out;     /* what the socket has yet to take */
	bool owed;                   /* the last byte of a frame not yet confirmed */
	struct sv_fault_buf held;    /* a delayed frame: it goes after the next one */
	struct sv_fault_buf raw;     /* read, not yet a whole frame */
	struct sv_fault_buf ready;   /* whole checked frames for the engine */
};

static int buf_reserve(struct sv_fault_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *p;

	if (b->off && b->off == b->len)
		b->off = b->len = 0;
	if (b->len + more <= b->cap)
		return 0;
	if (b->off) {                       /* move what is left to the front */
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->len + more <= b->cap)
			return 0;
	}
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_put(struct sv_fault_buf *b, const void *src, size_t len)
{
	if (buf_reserve(b, len))
		return -ENOMEM;
	memcpy(b->p + b->len, src, len);
	b->len += len;
	return 0;
}

static size_t buf_used(const struct sv_fault_buf *b) { return b->len - b->off; }

int sv_fault_stream_attach(struct sv_conn *c, enum sv_fault_kind kind)
{
	struct sv_fault_stream *s;
	struct sv_fault_rng rng;
	int small = SV_FAULT_SOCKBUF;

	if (!sv_fault_rng_init(&rng, kind, c->outbound))
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rng = rng;
	c->fault = s;
	c->caps |= SV_CAP_LOSSY;
	/* A fabric holds a few packets in flight, not the megabytes of our
	 * sockets (conn.c): a retransmission waits behind what the socket
	 * holds, which must drain within the ack timeout. */
	setsockopt(c->h.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(c->h.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	return 0;
}

/* Bytes of the frame starting at p (of avail bytes), once its header is
 * in; 0 until then.  Sockets never carry short headers (SV_CAP_SHORT_HDR). */
static size_t frame_len(const uint8_t *p, size_t avail)
{
	struct sv_wire_hdr h;

	if (avail < sizeof(h))
		return 0;
	memcpy(&h, p, sizeof(h));
	return sizeof(h) + SV_WIRE_GET32(h.len) + ((h.flags & SV_WF_CRC) ? 4 : 0);
}

/* ---- out ---- */

/* Give the socket what it takes.  <0: the channel died. */
static ssize_t out_drain(struct sv_conn *c, struct sv_fault_stream *s)
{
	while (buf_used(&s->out)) {
		struct iovec v = { s->out.p + s->out.off, buf_used(&s->out) };
		ssize_t r = c->ops->writev(c, &v, 1);

		if (r <= 0)
			return r;
		s->out.off += r;
	}
	return 0;
}

/* The frame held back goes now (after the one just queued). */
static int out_release_held(struct sv_fault_stream *s)
{
	if (!buf_used(&s->held))
		return 0;
	if (buf_put(&s->out, s->held.p + s->held.off, buf_used(&s->held)))
		return -ENOMEM;
	s->held.off = s->held.len = 0;
	return 0;
}

/* A data frame's faults, into b (out, or held when it is delayed). */
static int out_faulty(struct sv_fault_buf *b, const uint8_t *f, size_t len,
		      const struct sv_fault_verdict *v)
{
	size_t at;

	if (buf_reserve(b, 2 * (len + 4)))
		return -ENOMEM;
	at = b->len;
	memcpy(b->p + at, f, len);
	b->len += sv_fault_seal(b->p + at, len);
	if (v->dup)
		buf_put(b, b->p + at, len + 4);    /* reserved: cannot fail */
	if (v->corrupt)                 /* after the checksum: the receiver sees it */
		sv_fault_flip(b->p + at, len + 4, v->flip, true);
	return 0;
}

/* A whole frame from the engine: what the faults make of it goes out.  A
 * delayed one waits for the channel's next frame (if none comes, RC's
 * retransmission is that frame). */
static int out_frame(struct sv_fault_stream *s, uint8_t *f, size_t len)
{
	struct sv_fault_verdict v;

	if (!sv_fault_applies(f))
		return buf_put(&s->out, f, len) ? -ENOMEM : out_release_held(s);
	v = sv_fault_draw(&s->rng);
	if (v.drop) {
		sv_trace("fault: frame psn %u (op %u) dropped",
			 SV_WIRE_GET32(((const struct sv_wire_hdr *)f)->psn), f[3]);
		return 0;
	}
	if (v.delay) {
		if (out_release_held(s))         /* one held at a time */
			return -ENOMEM;
		return out_faulty(&s->held, f, len, &v);
	}
	return out_faulty(&s->out, f, len, &v) ? -ENOMEM : out_release_held(s);
}

/* Whole frames in cur go out. */
static int out_take_frames(struct sv_fault_stream *s)
{
	size_t flen;

	while ((flen = frame_len(s->cur.p + s->cur.off, buf_used(&s->cur))) &&
	       buf_used(&s->cur) >= flen) {
		if (out_frame(s, s->cur.p + s->cur.off, flen))
			return -ENOMEM;
		s->cur.off += flen;
	}
	return 0;
}

/*
 * The engine's writev.  The frame is taken whole; while the socket has
 * not taken all that went before, nothing more is (0: no room, the engine
 * waits for EPOLLOUT).  A frame whose bytes are all here but not all on
 * the socket is confirmed short of its last byte (owed), so that the
 * engine comes back on EPOLLOUT, which drains the rest.
 */
static ssize_t no_memory(struct sv_conn *c)
{
	c->dead = true;
	return -ENOMEM;
}

ssize_t sv_fault_stream_writev(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_fault_stream *s = c->fault;
	size_t total = 0;
	ssize_t r = out_drain(c, s);

	if (r < 0)
		return r;
	if (buf_used(&s->out))
		return 0;
	if (s->owed) {
		s->owed = false;
		return 1;
	}
	for (int i = 0; i < n; i++) {
		if (buf_put(&s->cur, iov[i].iov_base, iov[i].iov_len))
			return no_memory(c);
		total += iov[i].iov_len;
	}
	if (out_take_frames(s))
		return no_memory(c);
	r = out_drain(c, s);
	if (r < 0)
		return r;
	if (buf_used(&s->out) && !buf_used(&s->cur) && total) {
		s->owed = true;
		return (ssize_t)total - 1;
	}
	return (ssize_t)total;
}

/* ---- in ---- */

/* Whole frames in raw go to ready, if intact. */
static int in_take_frames(struct sv_conn *c, struct sv_fault_stream *s)
{
	size_t flen;

	while ((flen = frame_len(s->raw.p + s->raw.off, buf_used(&s->raw))) &&
	       buf_used(&s->raw) >= flen) {
		uint8_t *f = s->raw.p + s->raw.off;
		size_t len = flen;

		s->raw.off += flen;
		if ((f[offsetof(struct sv_wire_hdr, flags)] & SV_WF_CRC)) {
			if (!sv_fault_check(f, len)) {
				s->rng.bad++;
				sv_info("fault: a frame failed its checksum on a %s channel, dropped "
					"(%llu so far)", c->ops->name, (unsigned long long)s->rng.bad);
				continue;
			}
			len -= 4;
		}
		if (buf_put(&s->ready, f, len))
			return -ENOMEM;
	}
	return 0;
}

static size_t ready_give(struct sv_fault_stream *s, const struct iovec *iov, int n)
{
	size_t got = 0;

	for (int i = 0; i < n && buf_used(&s->ready); i++) {
		size_t k = iov[i].iov_len < buf_used(&s->ready) ? iov[i].iov_len : buf_used(&s->ready);

		memcpy(iov[i].iov_base, s->ready.p + s->ready.off, k);
		s->ready.off += k;
		got += k;
		if (k < iov[i].iov_len)
			break;
	}
	return got;
}

/*
 * The engine's readv.  The socket is read one frame at a time, never past
 * the frame's end: the engine stops reading at a frame's end (a paused
 * channel, a fairness limit) and waits for epoll to say the socket has
 * more, so nothing it has not asked for may wait here.  Inside a frame it
 * reads on while bytes wait here (sv_conn_input_pending).
 */
ssize_t sv_fault_stream_readv(struct sv_conn *c, const struct iovec *iov, int n)
{
	struct sv_fault_stream *s = c->fault;

	for (;;) {
		struct iovec v;
		size_t have = buf_used(&s->raw), flen = frame_len(s->raw.p + s->raw.off, have);
		size_t want = flen ? flen - have : sizeof(struct sv_wire_hdr) - have;
		ssize_t r;

		if (buf_used(&s->ready))
			return (ssize_t)ready_give(s, iov, n);
		if (flen > sizeof(struct sv_wire_hdr) + SV_MAX_MSG + 4 || buf_reserve(&s->raw, want))
			return no_memory(c);
		v.iov_base = s->raw.p + s->raw.len;
		v.iov_len = want;
		r = c->ops->readv(c, &v, 1);
		if (r <= 0)
			return r;
		s->raw.len += r;
		if (in_take_frames(c, s))
			return no_memory(c);
	}
}

bool sv_fault_stream_pending(const struct sv_conn *c)
{
	return c->fault && buf_used(&c->fault->ready);
}

void sv_fault_stream_close(struct sv_conn *c)
{
	struct sv_fault_stream *s = c->fault;

	if (!s)
		return;
	if (!c->dead && !out_release_held(s))       /* its next frame will not come */
		out_drain(c, s);
	sv_info("fault: %s channel closed: %llu frames, %llu dropped, %llu duplicated, "
		"%llu corrupted, %llu delayed; %llu received failed their checksum", c->ops->name,
		(unsigned long long)s->rng.frames, (unsigned long long)s->rng.dropped,
		(unsigned long long)s->rng.duplicated, (unsigned long long)s->rng.corrupted,
		(unsigned long long)s->rng.delayed, (unsigned long long)s->rng.bad);
}

void sv_fault_stream_free(struct sv_conn *c)
{
	struct sv_fault_stream *s = c->fault;

	if (!s)
		return;
	free(s->cur.p);
	free(s->out.p);
	free(s->held.p);
	free(s->raw.p);
	free(s->ready.p);
	free(s);
	c->fault = NULL;
}
