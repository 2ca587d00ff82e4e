/*
 * UD multicast on one host.  Each attached (MGID, QP) binds an abstract unix
 * datagram socket "softverbs.mc.<mgid>.<qpn>"; a sender finds the group's
 * members in /proc/net/unix and sends each one a copy.  Nothing to set up,
 * nothing leaves the host, and membership ends with the socket.
 */
#ifndef SV_UNIX_MCAST_H
#define SV_UNIX_MCAST_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/uio.h>

int sv_mcast_bind(const union ibv_gid *mgid, uint32_t qpn);
/* Returns the number of members reached, or -errno. */
int sv_mcast_send(const union ibv_gid *mgid, const struct iovec *iov, int n);

#endif
