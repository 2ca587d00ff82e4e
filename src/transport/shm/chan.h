/* Shared-memory rings in a memfd: a same-host channel's two, a UD ring's
 * one (dgring.c). */
#ifndef SV_SHM_CHAN_H
#define SV_SHM_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/shm/mirror.h"
#include "transport/shm/ring.h"

/* Rings of one size in one memfd, mapped: their headers first, side by
 * side, then their data, so that the headers and the first lines of ring
 * 0 share one page (all that an idle channel's rings touch). */
struct sv_shm_map {
	void *base;
	size_t len;
	uint32_t size;               /* each ring's data bytes, validated at attach */
	unsigned n;                  /* rings */
};

uint32_t sv_shm_ring_bytes(void);            /* SOFTVERBS_RING_KB */
/* n new rings in a new memfd (returned), or a peer's n rings in its memfd. */
int sv_shm_rings_create(struct sv_shm_map *m, unsigned n, const char *name);
int sv_shm_rings_attach(struct sv_shm_map *m, int fd, unsigned n);
struct sv_ring *sv_shm_ring_at(const struct sv_shm_map *m, unsigned i);
uint8_t *sv_shm_ring_data(const struct sv_shm_map *m, unsigned i);
void sv_shm_rings_unmap(struct sv_shm_map *m);

struct sv_shm_chan {
	struct sv_shm_map map;
	struct sv_ring *tx, *rx;
	uint8_t *tx_data, *rx_data;  /* their bytes */
	uint32_t size;               /* ring data size, validated at attach */
	uint64_t tx_head_seen;       /* the consumer's position, as we last read it */
	uint32_t rx_ack_seen;        /* the responder's ACK word, as we last took it */
	struct sv_ring_rd rx_rd;     /* how far we read the record at rx->head */
	uint32_t slot;               /* ours on our board (shm/board.h), 0: none */
	struct sv_mirror *mirror;    /* ring 0's consumer's receives (shm/mirror.h) */
};

/* The connecting side creates it (returns the memfd to pass on); ring 0
 * carries connector -> acceptor, ring 1 the other way. */
int sv_shm_chan_create(struct sv_shm_chan *ch);
int sv_shm_chan_attach(struct sv_shm_chan *ch, int fd);
void sv_shm_chan_destroy(struct sv_shm_chan *ch);

#endif
