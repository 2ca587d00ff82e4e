/*
 * The address plan: how softverbs names a host.  A port's GID is the
 * IPv4-mapped address of the host (::ffff:a.b.c.d), its LID is derived
 * from the same address (its low 16 bits), and so is its GUID; peers find each other
 * by turning a LID or GID back into that address (transport/node.c).
 */
#ifndef SV_WIRE_ADDR_H
#define SV_WIRE_ADDR_H

#include <stdint.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>

/* The device's identity, computed once per process. */
struct sv_addr_plan {
	struct in_addr addr;
	uint16_t lid;
	union ibv_gid gid;
	uint64_t guid;               /* network order */
};

#endif
