/*
 * UD multicast on one host.  Each attached (MGID, QP) binds an abstract unix
 * datagram socket "softverbs.mc.<mgid>.<qpn>"; a sender finds the group's
 * members in /proc/net/unix and sends each one a copy.  Nothing to set up,
 * nothing leaves the host, and membership ends with the socket.
 *
 * A copy leaves from the sending QP's port group's socket, bound to
 * "softverbs.mcsrc.<port>": only one socket holds a name, and the group
 * holds it from the moment it owns the port (transport/node.c), so a
 * member trusts a frame's source QPN only if the name agrees with it, as
 * a UDP receiver does with the source port (anyone may send to a member).
 */
#ifndef SV_UNIX_MCAST_H
#define SV_UNIX_MCAST_H

#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "wire/proto.h"

int sv_mcast_bind(const union ibv_gid *mgid, uint32_t qpn);
/* The sending socket of port group `port`; fd or -errno. */
int sv_mcast_source(uint16_t port);
/* From `fd` (a sv_mcast_source); returns the number of members reached, or -errno. */
int sv_mcast_send(int fd, const union ibv_gid *mgid, const struct iovec *iov, int n);
/* Did `h` come from the socket of its source QPN's group, on this host
 * (device address `self`)? */
bool sv_mcast_source_ok(const struct sockaddr *from, socklen_t len,
			const struct sv_wire_hdr *h, struct in_addr self);

#endif
