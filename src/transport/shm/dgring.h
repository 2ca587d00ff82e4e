/*
 * UD between processes of one host through shared memory.  A port group
 * that sends a datagram to a port group of this host asks it, on the
 * abstract SOCK_SEQPACKET name "softverbs.ud.<port>", for a ring of its
 * own: one memfd with one ring, sender -> receiver, given only to a peer of
 * our own user (SO_PEERCRED, both ways).  The socket stays open to carry
 * doorbells and to tell each end that the other left.  Until the receiver
 * answers, and for every peer it refuses, datagrams go over UDP as across
 * hosts (udp/dgram.c); the ring's records are the very frames UDP carries,
 * checked the same way before they go up.
 */
#ifndef SV_SHM_DGRING_H
#define SV_SHM_DGRING_H

#include <stdint.h>
#include <sys/uio.h>

struct sv_node;
struct sv_pgroup;

/* The sender's side of one ring, from its port group to another. */
enum sv_dgring_state {
	SV_DGRING_NONE,      /* never asked */
	SV_DGRING_ASKED,     /* hello sent with the ring, no answer yet */
	SV_DGRING_UP,        /* the receiver took the ring */
	SV_DGRING_GONE,      /* refused, or the receiver left: UDP, asked again later */
	SV_DGRING_NSTATES
};
const char *sv_dgring_state_name(enum sv_dgring_state s);

struct sv_dgrings *sv_dgrings_new(void);
/* At node destruction, once the progress thread is gone. */
void sv_dgrings_free(struct sv_node *node);

/* The group's listener (its `ud_h`), watched by the progress thread. */
int sv_dgring_listen(struct sv_pgroup *g);

/* Send one datagram from group `src_port` to the group `dst_port` of this
 * host: 1 if the ring took it (or dropped it, full, as a fabric would), 0
 * if there is no ring (yet): then UDP carries it. */
int sv_dgring_send(struct sv_node *node, uint16_t src_port, uint16_t dst_port,
		   const struct iovec *iov, int n);

/* Progress thread, before it sleeps: unless a poller drains the rings,
 * ask their writers for a doorbell and drain them; returns `timeout`,
 * shortened when a poller is left to do it. */
int sv_dgring_before_sleep(struct sv_node *node, int timeout);

#endif
