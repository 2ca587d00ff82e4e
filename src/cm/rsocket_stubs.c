// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: rsocket entry points.
 *
 * rsockets are not implemented yet.  The symbols exist because the ABI has
 * them (the rdma_cm tools link against rpoll and friends); every call fails
 * with EOPNOTSUPP and touches nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "cm/cm.h"

#define NOSUP(ret_type) do { errno = EOPNOTSUPP; return (ret_type)-1; } while (0)

CM_EXPORT int rsocket(int domain, int type, int protocol) { (void)domain; (void)type; (void)protocol; NOSUP(int); }
CM_EXPORT int rbind(int s, const struct sockaddr *a, socklen_t l) { (void)s; (void)a; (void)l; NOSUP(int); }
CM_EXPORT int rlisten(int s, int backlog) { (void)s; (void)backlog; NOSUP(int); }
CM_EXPORT int raccept(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; NOSUP(int); }
CM_EXPORT int rconnect(int s, const struct sockaddr *a, socklen_t l) { (void)s; (void)a; (void)l; NOSUP(int); }
CM_EXPORT int rshutdown(int s, int how) { (void)s; (void)how; NOSUP(int); }
CM_EXPORT int rclose(int s) { (void)s; NOSUP(int); }
CM_EXPORT ssize_t rrecv(int s, void *b, size_t n, int f) { (void)s; (void)b; (void)n; (void)f; NOSUP(ssize_t); }
CM_EXPORT ssize_t rrecvfrom(int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; NOSUP(ssize_t); }
CM_EXPORT ssize_t rrecvmsg(int s, struct msghdr *m, int f) { (void)s; (void)m; (void)f; NOSUP(ssize_t); }
CM_EXPORT ssize_t rsend(int s, const void *b, size_t n, int f) { (void)s; (void)b; (void)n; (void)f; NOSUP(ssize_t); }
CM_EXPORT ssize_t rsendto(int s, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l)
{ (void)s; (void)b; (void)n; (void)f; (void)a; (void)l; NOSUP(ssize_t); }
CM_EXPORT ssize_t rsendmsg(int s, const struct msghdr *m, int f) { (void)s; (void)m; (void)f; NOSUP(ssize_t); }
CM_EXPORT ssize_t rread(int s, void *b, size_t n) { (void)s; (void)b; (void)n; NOSUP(ssize_t); }
CM_EXPORT ssize_t rreadv(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; NOSUP(ssize_t); }
CM_EXPORT ssize_t rwrite(int s, const void *b, size_t n) { (void)s; (void)b; (void)n; NOSUP(ssize_t); }
CM_EXPORT ssize_t rwritev(int s, const struct iovec *v, int c) { (void)s; (void)v; (void)c; NOSUP(ssize_t); }
CM_EXPORT int rpoll(struct pollfd *f, nfds_t n, int t) { (void)f; (void)n; (void)t; NOSUP(int); }
CM_EXPORT int rselect(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t)
{ (void)n; (void)r; (void)w; (void)e; (void)t; NOSUP(int); }
CM_EXPORT int rgetpeername(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; NOSUP(int); }
CM_EXPORT int rgetsockname(int s, struct sockaddr *a, socklen_t *l) { (void)s; (void)a; (void)l; NOSUP(int); }
CM_EXPORT int rsetsockopt(int s, int lv, int o, const void *v, socklen_t l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; NOSUP(int); }
CM_EXPORT int rgetsockopt(int s, int lv, int o, void *v, socklen_t *l)
{ (void)s; (void)lv; (void)o; (void)v; (void)l; NOSUP(int); }
CM_EXPORT int rfcntl(int s, int cmd, ...) { (void)s; (void)cmd; NOSUP(int); }
CM_EXPORT off_t riomap(int s, void *b, size_t n, int prot, int f, off_t o)
{ (void)s; (void)b; (void)n; (void)prot; (void)f; (void)o; NOSUP(off_t); }
CM_EXPORT int riounmap(int s, void *b, size_t n) { (void)s; (void)b; (void)n; NOSUP(int); }
CM_EXPORT size_t riowrite(int s, const void *b, size_t n, off_t o, int f)
{ (void)s; (void)b; (void)n; (void)o; (void)f; NOSUP(size_t); }
