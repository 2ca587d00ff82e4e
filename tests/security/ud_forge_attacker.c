/*
 * The attacker of tests/security/ud_forge.c: a stranger (uid 65534) that
 * knows a victim UD QP's Q_Key and sends it datagrams claiming to come from
 * a legitimate peer QP (its QPN, and its address in data1), from every
 * socket it can get: unicast to the victim's UDP socket, multicast to the
 * victim's membership socket.  Never loads libibverbs.
 *
 *   security_ud_forge_attacker VICTIM_QPN ADDR PEER_QPN QKEY MGID_HEX
 *
 * ADDR is the device address (the victim's and the peer's: one host).
 * Prints one "name=result" line per socket it tried to bind (ok, or the
 * errno's name), then "honest=QPN": one unicast and one multicast datagram
 * sent last under its own identity (a port it really holds), which the
 * victim must receive, so that the forged ones are known to be well formed.
 * Ends with "done".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sec.h"

static uint32_t victim_qpn, peer_qpn, qkey;
static struct in_addr dev;
static char mgid_hex[33];

static const char *result(int rc)
{
	return rc ? strerrorname_np(errno) : "ok";
}

static struct sv_wire_hdr forged(uint32_t src_qpn, struct in_addr claimed, uint32_t dst_qpn)
{
	struct sv_wire_hdr h = { .magic = SV_WIRE_MAGIC, .version = SV_WIRE_VERSION,
				 .opcode = SV_OP_SEND, .flags = SV_WF_GRH,
				 .dst_qpn = dst_qpn, .src_qpn = src_qpn, .len = 8,
				 .qkey = qkey, .data1 = claimed.s_addr };

	sv_wire_encode(&h);
	return h;
}

/* One frame in one datagram, to `to` (best effort: the victim may not listen there). */
static void send_frame(int fd, const void *to, socklen_t tolen, uint32_t src_qpn,
		       struct in_addr claimed, uint32_t dst_qpn)
{
	struct sv_wire_hdr h = forged(src_qpn, claimed, dst_qpn);
	char payload[8] = "forged!";
	struct iovec iov[2] = { { &h, sizeof(h) }, { payload, sizeof(payload) } };
	struct msghdr mh = { .msg_name = (void *)to, .msg_namelen = tolen,
			     .msg_iov = iov, .msg_iovlen = 2 };

	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 && errno != ECONNREFUSED)
		fprintf(stderr, "attacker: sendmsg: %s\n", strerror(errno));
}

/* ---- unicast: to the victim's UDP socket ---- */

static void send_udp(int fd, uint32_t src_qpn, struct in_addr claimed)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr = dev,
				  .sin_port = htons(victim_qpn >> 8) };

	send_frame(fd, &to, sizeof(to), src_qpn, claimed, victim_qpn);
	if (dev.s_addr == htonl(INADDR_LOOPBACK))
		return;
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);     /* where it listened before */
	send_frame(fd, &to, sizeof(to), src_qpn, claimed, victim_qpn);
}

static int udp_bound(const char *name, const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	inet_pton(AF_INET, addr, &sa.sin_addr);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	printf("%s=%s\n", name, result(rc));
	if (rc) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Returns our own honest QPN: a port we hold on the device address. */
static uint32_t attack_udp(void)
{
	char devs[INET_ADDRSTRLEN];
	uint16_t peer_port = peer_qpn >> 8;
	struct in_addr lo = { htonl(INADDR_LOOPBACK) }, lo2 = { htonl(0x7f000002) };
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd;

	inet_ntop(AF_INET, &dev, devs, sizeof(devs));
	/* Any socket of ours: its port is not the peer's. */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	send_udp(fd, peer_qpn, dev);
	close(fd);
	/* The peer's port: held on the device address, so that and the wildcard fail. */
	if ((fd = udp_bound("bind_dev_port", devs, peer_port)) >= 0) {
		send_udp(fd, peer_qpn, dev);
		close(fd);
	}
	if ((fd = udp_bound("bind_any_port", "0.0.0.0", peer_port)) >= 0) {
		send_udp(fd, peer_qpn, dev);
		close(fd);
	}
	/* Other loopback addresses are free with that port: the source address
	 * then is not the device address, whatever data1 claims. */
	if ((fd = udp_bound("bind_lo_port", "127.0.0.1", peer_port)) >= 0) {
		send_udp(fd, peer_qpn, dev);
		send_udp(fd, peer_qpn, lo);
		close(fd);
	}
	if ((fd = udp_bound("bind_lo2_port", "127.0.0.2", peer_port)) >= 0) {
		send_udp(fd, peer_qpn, dev);
		send_udp(fd, peer_qpn, lo2);
		close(fd);
	}
	/* A port of our own on the device address: claiming the peer's QPN from it fails... */
	fd = udp_bound("bind_dev_own", devs, 0);
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &sl))
		exit(1);
	send_udp(fd, peer_qpn, dev);
	/* ... claiming a QPN of our own port is the truth, and is delivered. */
	send_udp(fd, (uint32_t)ntohs(sa.sin_port) << 8 | 1, dev);
	close(fd);
	return (uint32_t)ntohs(sa.sin_port) << 8 | 1;
}

/* ---- multicast: to the victim's membership socket ---- */

/* The abstract name `prefix` + `n`. */
static socklen_t unix_name(struct sockaddr_un *sa, const char *prefix, uint32_t n)
{
	int l;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	l = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%s%u", prefix, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l);
}

static void send_mc(int fd, uint32_t src_qpn, struct in_addr claimed)
{
	char member[64];
	struct sockaddr_un to;
	socklen_t len;

	snprintf(member, sizeof(member), "softverbs.mc.%s.", mgid_hex);
	len = unix_name(&to, member, victim_qpn);

	send_frame(fd, &to, len, src_qpn, claimed, 0xffffff);
}

static int mc_bound(const char *name, uint32_t port)
{
	struct sockaddr_un sa;
	socklen_t len = unix_name(&sa, "softverbs.mcsrc.", port);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc;

	rc = bind(fd, (struct sockaddr *)&sa, len);
	printf("%s=%s\n", name, result(rc));
	if (rc) {
		close(fd);
		return -1;
	}
	return fd;
}

static void attack_mcast(uint32_t honest)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	send_mc(fd, peer_qpn, dev);                 /* an unnamed sender */
	close(fd);
	if ((fd = mc_bound("bind_mc_peer", peer_qpn >> 8)) >= 0) {
		send_mc(fd, peer_qpn, dev);
		close(fd);
	}
	fd = mc_bound("bind_mc_own", honest >> 8);
	if (fd < 0)
		exit(1);
	send_mc(fd, peer_qpn, dev);                 /* our name, the peer's QPN */
	send_mc(fd, honest, (struct in_addr){ htonl(0x0a0b0c0d) });   /* another host */
	send_mc(fd, honest, dev);                   /* the truth */
	close(fd);
}

int main(int argc, char **argv)
{
	uint32_t honest;

	if (argc != 6 || inet_pton(AF_INET, argv[2], &dev) != 1 || strlen(argv[5]) != 32) {
		fprintf(stderr, "usage: %s VICTIM_QPN ADDR PEER_QPN QKEY MGID_HEX\n", argv[0]);
		return 2;
	}
	victim_qpn = (uint32_t)strtoul(argv[1], NULL, 0);
	peer_qpn = (uint32_t)strtoul(argv[3], NULL, 0);
	qkey = (uint32_t)strtoul(argv[4], NULL, 0);
	memcpy(mgid_hex, argv[5], 33);
	honest = attack_udp();
	attack_mcast(honest);
	printf("honest=%u\ndone\n", honest);
	return 0;
}
