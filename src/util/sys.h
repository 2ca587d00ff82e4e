/* SPDX-License-Identifier: MIT */
/*
 * System calls our libraries make for their own use, past any interposer.
 *
 * rdma-core's librspreload.so replaces socket() in the whole process so
 * that an application's TCP and UDP sockets become rsockets.  Ours carry
 * the rsockets themselves (the CM's TCP connections, the transports'
 * sockets): one that became an rsocket would recurse into itself.
 */
#ifndef SV_UTIL_SYS_H
#define SV_UTIL_SYS_H

#include <unistd.h>
#include <sys/syscall.h>

static inline int sv_socket(int domain, int type, int protocol)
{
	return (int)syscall(SYS_socket, domain, type, protocol);
}

#endif
