/* A same-host channel's shared memory: two rings of records in one memfd. */
#ifndef SV_SHM_CHAN_H
#define SV_SHM_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#include "transport/shm/ring.h"

struct sv_shm_chan {
	void *base;
	size_t len;
	struct sv_ring *tx, *rx;
	uint32_t size;               /* ring data size, validated at attach */
	uint64_t tx_head_seen;       /* the consumer's position, as we last read it */
	uint32_t rx_ack_seen;        /* the responder's ACK word, as we last took it */
	struct sv_ring_rd rx_rd;     /* how far we read the record at rx->head */
};

/* The connecting side creates it (returns the memfd to pass on); ring 0
 * carries connector -> acceptor, ring 1 the other way. */
int sv_shm_chan_create(struct sv_shm_chan *ch);
int sv_shm_chan_attach(struct sv_shm_chan *ch, int fd);
void sv_shm_chan_destroy(struct sv_shm_chan *ch);

#endif
