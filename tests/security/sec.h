/*
 * Helpers for the security tests (tests/security/): run an attacker as
 * another user and talk the wire format without the library.
 *
 * The victim side uses tests/verbs/common.h as the verbs tests do.  The
 * attacker runs as uid/gid 65534 through setpriv(1), as a stranger on the
 * host would; sec_spawn() skips the test (77) where that cannot be done.
 */
#ifndef TESTS_SECURITY_SEC_H
#define TESTS_SECURITY_SEC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire/proto.h"

#define SEC_UID 65534

/* ---- victim side (sec.c; with tests/verbs/common.h) ---- */

/* Start `prog` (a program next to this test's binary, e.g.
 * "security_forge_attacker") as uid SEC_UID with `argv` (NULL-terminated,
 * without the program name); its stdout is a pipe returned in *out_fd
 * (NULL: inherited).  With SEC_ATTACKER_NS set, in that network namespace
 * (another test host; set SEC_TARGET_IP too).  Skips the test (77) unless
 * root and setpriv. */
pid_t sec_spawn(const char *prog, char *const argv[], int *out_fd);

/* ---- both sides (sec_wire.c; no libibverbs) ---- */

/* Is SOFTVERBS_TRANSPORT=tcp set (the network path on loopback)? */
bool sec_tcp(void);
/* Connect to a softverbs port the way a peer would: on this host the
 * abstract unix socket @softverbs.PORT, or TCP 127.0.0.1:PORT; on another
 * host (SEC_TARGET_IP set) TCP to that address.  Blocking; -1 on failure. */
int sec_connect_port(uint16_t port, bool tcp);
/* A header in host order, then encoded and written whole; 0 or -1. */
int sec_send_frame(int fd, struct sv_wire_hdr *h, const void *payload, size_t len);
/* Read one frame's header (decoded, host order) within timeout_ms; its
 * payload, up to `cap` bytes, into `payload`.  0, or -1 (EOF, timeout, bad). */
int sec_recv_frame(int fd, struct sv_wire_hdr *h, void *payload, size_t cap, int timeout_ms);
/* Did the peer close `fd` within timeout_ms (EOF or reset)? */
bool sec_closed_within(int fd, int timeout_ms);

#endif
