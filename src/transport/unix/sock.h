/*
 * Same-host channels use abstract unix stream sockets named after the port
 * group ("softverbs.<port>"): they carry descriptors (SCM_RIGHTS) and tell
 * who the peer is (SO_PEERCRED).  Abstract names live in the network
 * namespace, like the TCP port they mirror.
 */
#ifndef SV_UNIX_SOCK_H
#define SV_UNIX_SOCK_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>

/* The abstract name "<prefix><port>" (no leading NUL in `prefix`); returns
 * the address length to bind or connect with. */
socklen_t sv_unix_name(struct sockaddr_un *sa, const char *prefix, uint32_t port);

/* A listener on, or a connection to, "<prefix><port>" of socket `type`;
 * the two below are the same-host channels' (SOCK_STREAM, "softverbs."). */
int sv_unix_listen_on(const char *prefix, uint16_t port, int type);
int sv_unix_connect_to(const char *prefix, uint16_t port, int type);
int sv_unix_listen(uint16_t port);
int sv_unix_connect(uint16_t port);
/* The most descriptors one message carries (a channel's handshake: its
 * SV_CONN_MAX_FDS; a UD ring's offer: one). */
#define SV_UNIX_MAX_FDS 8
/* sendmsg/recvmsg with up to SV_UNIX_MAX_FDS descriptors; recv stores
 * received fds in fds[*nfds..max) and closes any more. */
ssize_t sv_unix_send(int fd, const struct iovec *iov, int n, const int *fds, int nfds);
ssize_t sv_unix_recv(int fd, const struct iovec *iov, int n, int *fds, int *nfds, int max);
int sv_unix_peer(int fd, pid_t *pid, uid_t *uid);

#endif
