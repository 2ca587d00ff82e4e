/*
 * The stranger of tests/security/forge.c and shm_offer.c: runs as another
 * user and speaks the wire format itself (no libibverbs).
 *
 *   forge_attacker hello PORT DST SRC RKEY VA
 *     Connect to PORT as the QP SRC would, say HELLO to QP DST, then try a
 *     RDMA WRITE of 4 KiB of 0xee and a RDMA READ of 64 bytes at VA with
 *     RKEY and with a few guessed keys, and answer nothing.  Prints
 *     "hello_ack N read_resp N closed N": what the victim granted.
 *   forge_attacker ask PORT DST SRC
 *     Ask QP DST, claiming to be SRC, whether it opened a channel with a
 *     guessed nonce; prints "verify_yes N closed N".
 *   forge_attacker listen PORT [ud]
 *     Bind the softverbs unix name of PORT, as if a QP lived there, accept
 *     one channel, read its HELLO and print "fds N" (descriptors it passed;
 *     -1: none, it closed).  With "ud", the name where UD rings are offered.
 *   forge_attacker udoffer PORT
 *     Offer the port group PORT a UD ring, as a process of its own user
 *     would, and print "answered N" (1: it took the ring).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sec.h"
#include "transport/shm/ring.h"

static unsigned long arg(char **argv, int i)
{
	return strtoul(argv[i], NULL, 0);
}

static void frame(struct sv_wire_hdr *h, uint8_t op, uint32_t dst, uint32_t src, uint32_t psn)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	h->dst_qpn = dst;
	h->src_qpn = src;
	h->psn = psn;
}

/* Read what the victim says within `ms`: counts of HELLO_ACKs and READ
 * responses; true if it closed the connection. */
static bool watch(int fd, int ms, int *hello_ack, int *read_resp)
{
	uint8_t buf[4096];
	struct sv_wire_hdr h;

	for (;;) {
		if (sec_recv_frame(fd, &h, buf, sizeof(buf), ms))
			return sec_closed_within(fd, 10);
		if (h.opcode == SV_OP_HELLO_ACK)
			(*hello_ack)++;
		if (h.opcode == SV_OP_READ_RESP)
			(*read_resp)++;
	}
}

static int do_hello(char **argv)
{
	uint16_t port = (uint16_t)arg(argv, 2);
	uint32_t dst = (uint32_t)arg(argv, 3), src = (uint32_t)arg(argv, 4);
	uint32_t rkey = (uint32_t)arg(argv, 5);
	uint64_t va = arg(argv, 6);
	static uint8_t junk[4096];
	int fd = sec_connect_port(port, sec_tcp()), hello_ack = 0, read_resp = 0;
	struct sv_wire_hdr h;
	bool closed;

	if (fd < 0) {
		printf("connect failed %d\n", errno);
		return 1;
	}
	frame(&h, SV_OP_HELLO, dst, src, 0);
	h.data0 = 0x1234567890abcdefull;
	h.flags = SV_WF_TURN;
	sec_send_frame(fd, &h, NULL, 0);
	memset(junk, 0xee, sizeof(junk));
	/* without waiting for an answer, as a blind attacker would */
	for (uint32_t psn = 0; psn < 24; psn++) {
		uint32_t keys[] = { rkey, 0x101, 0x201, rkey ^ 1 };

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			frame(&h, SV_OP_WRITE, dst, src, psn);
			h.rkey = keys[k];
			h.va = va;
			if (sec_send_frame(fd, &h, junk, sizeof(junk)))
				break;
			frame(&h, SV_OP_READ_REQ, dst, src, psn);
			h.rkey = keys[k];
			h.va = va;
			h.rlen = 64;
			if (sec_send_frame(fd, &h, NULL, 0))
				break;
		}
	}
	closed = watch(fd, 1500, &hello_ack, &read_resp);
	printf("hello_ack %d read_resp %d closed %d\n", hello_ack, read_resp, closed);
	return 0;
}

static int do_ask(char **argv)
{
	uint16_t port = (uint16_t)arg(argv, 2);
	uint32_t dst = (uint32_t)arg(argv, 3), src = (uint32_t)arg(argv, 4);
	int fd = sec_connect_port(port, sec_tcp()), yes = 0;
	struct sv_wire_hdr h;

	if (fd < 0) {
		printf("connect failed %d\n", errno);
		return 1;
	}
	frame(&h, SV_OP_HELLO, dst, src, 0);
	h.data0 = 42;
	sec_send_frame(fd, &h, NULL, 0);
	for (uint64_t guess = 1; guess <= 64; guess++) {
		frame(&h, SV_OP_VERIFY, dst, src, 0);
		h.data0 = guess;
		if (sec_send_frame(fd, &h, NULL, 0))
			break;
	}
	while (!sec_recv_frame(fd, &h, NULL, 0, 1000))
		if (h.opcode == SV_OP_VERIFY_ACK && h.imm == 1)
			yes++;
	printf("verify_yes %d closed %d\n", yes, sec_closed_within(fd, 2500));
	return 0;
}

/* Descriptors that came with the first bytes of `fd`. */
static int recv_fds(int fd, void *buf, size_t len)
{
	union { char b[CMSG_SPACE(8 * sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n = 0;

	if (poll(&p, 1, 10000) != 1 || recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) <= 0)
		return -1;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			n += (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
	return n;
}

static int do_listen(char **argv)
{
	uint16_t port = (uint16_t)arg(argv, 2);
	bool ud = argv[3] && !strcmp(argv[3], "ud");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, ud ? "softverbs.ud.%u" : "softverbs.%u",
			 port);
	int lfd = socket(AF_UNIX, (ud ? SOCK_SEQPACKET : SOCK_STREAM) | SOCK_CLOEXEC, 0), fd, n;
	struct sv_wire_hdr h;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a,
			    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l)) ||
	    listen(lfd, 4)) {
		printf("bind failed %d\n", errno);
		return 0;
	}
	printf("listening\n");
	fflush(stdout);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		printf("accept failed %d\n", errno);
		return 1;
	}
	n = recv_fds(fd, &h, sizeof(h));
	printf("fds %d\n", n);
	return 0;
}

/* A memfd that maps as one valid UD ring of 4 KiB. */
static int ring_memfd(void)
{
	size_t len = (sizeof(struct sv_ring) + 4096 + 4095) & ~(size_t)4095;
	int fd = memfd_create("stranger-ring", MFD_CLOEXEC);
	struct sv_ring *r;

	if (fd < 0 || ftruncate(fd, (off_t)len))
		return -1;
	r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r == MAP_FAILED)
		return -1;
	r->magic = SV_RING_MAGIC;
	r->size = 4096;
	r->cleared = 4096;
	munmap(r, len);
	return fd;
}

static int do_udoffer(char **argv)
{
	uint16_t port = (uint16_t)arg(argv, 2);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int l = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "softverbs.ud.%u", port);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), mfd = ring_memfd();
	uint32_t hello[2] = { 0x53564447u, port }, ack[2];
	union { char b[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct iovec iov = { hello, sizeof(hello) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	memset(&u, 0, sizeof(u));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
	if (fd < 0 || mfd < 0 ||
	    connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + l))) {
		printf("connect failed %d\n", errno);
		return 0;
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		/* closed at once: refused before it read anything */
		if (errno == EPIPE || errno == ECONNRESET)
			printf("answered 0\n");
		else
			printf("send failed %d\n", errno);
		return 0;
	}
	printf("answered %d\n", poll(&p, 1, 5000) == 1 && recv(fd, ack, sizeof(ack), 0) == sizeof(ack));
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(30);
	if (argc >= 7 && !strcmp(argv[1], "hello"))
		return do_hello(argv);
	if (argc >= 5 && !strcmp(argv[1], "ask"))
		return do_ask(argv);
	if (argc >= 3 && !strcmp(argv[1], "listen"))
		return do_listen(argv);
	if (argc >= 3 && !strcmp(argv[1], "udoffer"))
		return do_udoffer(argv);
	fprintf(stderr, "usage: see the comment at the top of forge_attacker.c\n");
	return 2;
}
