/* UD datagrams under faults (fault.h): decided where they are sent, for
 * UDP and the same-host UD rings alike; checked where they are read
 * (transport/udp/dgram.c sv_dgram_frame_ok), by every receiver. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "transport/fault/fault.h"
#include "transport/transport.h"
#include "util/crc32c.h"
#include "util/log.h"

struct sv_fault_dgram {
	pthread_mutex_t lock;        /* the process's senders share the dice */
	struct sv_fault_rng rng;
	/* a delayed datagram: sent after the process's next one */
	int (*held_send)(void *ctx, const struct iovec *iov, int n);
	uint8_t held_ctx[SV_FAULT_CTX_MAX];
	uint8_t held[SV_UDP_BUF];
	size_t held_len;
};

/* Take the held datagram, if any, into buf (under the lock). */
static size_t take_held(struct sv_fault_dgram *d, uint8_t *buf, uint8_t *ctx,
			int (**xmit)(void *ctx, const struct iovec *iov, int n))
{
	size_t len = d->held_len;

	if (!len)
		return 0;
	memcpy(buf, d->held, len);
	memcpy(ctx, d->held_ctx, sizeof(d->held_ctx));
	*xmit = d->held_send;
	d->held_len = 0;
	return len;
}

int sv_fault_dgram_attach(struct sv_node *node)
{
	struct sv_fault_rng rng;

	if (!sv_fault_rng_init(&rng, SV_FAULT_UDP, true))
		return 0;
	node->fault_dgram = calloc(1, sizeof(*node->fault_dgram));
	if (!node->fault_dgram)
		return -1;
	pthread_mutex_init(&node->fault_dgram->lock, NULL);
	node->fault_dgram->rng = rng;
	return 0;
}

void sv_fault_dgram_free(struct sv_node *node)
{
	if (!node->fault_dgram)
		return;
	pthread_mutex_destroy(&node->fault_dgram->lock);
	free(node->fault_dgram);
	node->fault_dgram = NULL;
}

/* The datagram as the faults make it: corrupted first if so, then a
 * clean copy if duplicated. */
static int send_faulty(uint8_t *clean, size_t len, const struct sv_fault_verdict *v,
		       int (*xmit)(void *ctx, const struct iovec *iov, int n), void *ctx)
{
	uint8_t bad[SV_UDP_BUF];
	struct iovec one = { clean, len };
	int r;

	if (v->corrupt) {
		memcpy(bad, clean, len);
		sv_fault_flip(bad, len, v->flip, false);
		one.iov_base = bad;
	}
	r = xmit(ctx, &one, 1);
	if (v->dup && !r) {
		one.iov_base = clean;
		r = xmit(ctx, &one, 1);
	}
	return r;
}

int sv_fault_dgram_send(struct sv_node *node, const struct iovec *iov, int n,
			int (*xmit)(void *ctx, const struct iovec *iov, int n), void *ctx,
			size_t ctx_len)
{
	struct sv_fault_dgram *d = node->fault_dgram;
	uint8_t clean[SV_UDP_BUF], late[SV_UDP_BUF], late_ctx[SV_FAULT_CTX_MAX];
	int (*late_send)(void *ctx, const struct iovec *iov, int n) = NULL;
	struct sv_fault_verdict v;
	size_t len = 0, late_len;
	int r = 0;

	for (int i = 0; i < n; i++) {
		if (len + iov[i].iov_len > SV_UDP_BUF - 4 || ctx_len > SV_FAULT_CTX_MAX)
			return xmit(ctx, iov, n);        /* too large: the sender refuses it */
		memcpy(clean + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	len = sv_fault_seal(clean, len);
	pthread_mutex_lock(&d->lock);
	v = sv_fault_draw(&d->rng);
	late_len = v.drop ? 0 : take_held(d, late, late_ctx, &late_send);
	if (v.delay) {              /* held until the next one (it was sent) */
		memcpy(d->held, clean, len);
		memcpy(d->held_ctx, ctx, ctx_len);
		d->held_send = xmit;
		d->held_len = len;
		v.dup = v.corrupt = false;
	}
	pthread_mutex_unlock(&d->lock);
	if (!v.drop && !v.delay)
		r = send_faulty(clean, len, &v, xmit, ctx);
	if (late_len) {
		struct iovec one = { late, late_len };

		late_send(late_ctx, &one, 1);
	}
	if (v.drop)
		sv_trace("fault: datagram dropped");
	return r;
}

bool sv_fault_dgram_check(const uint8_t *buf, size_t len)
{
	uint32_t crc;

	if (len < sizeof(struct sv_wire_hdr) + 4)
		return false;
	memcpy(&crc, buf + len - 4, 4);
	if (SV_WIRE_GET32(crc) == sv_crc32c(0, buf, len - 4))
		return true;
	sv_info("fault: a datagram failed its checksum, dropped");
	return false;
}
