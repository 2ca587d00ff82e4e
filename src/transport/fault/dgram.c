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
};

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

int sv_fault_dgram_send(struct sv_node *node, const struct iovec *iov, int n,
			int (*send)(void *ctx, const struct iovec *iov, int n), void *ctx)
{
	struct sv_fault_dgram *d = node->fault_dgram;
	uint8_t clean[SV_UDP_BUF], bad[SV_UDP_BUF];
	struct sv_fault_verdict v;
	struct iovec one;
	size_t len = 0;
	int r;

	for (int i = 0; i < n; i++) {
		if (len + iov[i].iov_len > SV_UDP_BUF - 4)
			return send(ctx, iov, n);        /* too large: the sender refuses it */
		memcpy(clean + len, iov[i].iov_base, iov[i].iov_len);
		len += iov[i].iov_len;
	}
	pthread_mutex_lock(&d->lock);
	v = sv_fault_draw(&d->rng);
	pthread_mutex_unlock(&d->lock);
	if (v.drop) {
		sv_trace("fault: datagram dropped");
		return 0;
	}
	len = sv_fault_seal(clean, len);
	one.iov_base = clean;
	one.iov_len = len;
	if (v.corrupt) {
		memcpy(bad, clean, len);
		sv_fault_flip(bad, len, v.flip, false);
		one.iov_base = bad;
	}
	r = send(ctx, &one, 1);
	if (v.dup && !r) {
		one.iov_base = clean;
		r = send(ctx, &one, 1);
	}
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
