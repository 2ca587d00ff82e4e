// SPDX-License-Identifier: MIT
/*
 * librdmacm API without a connection: event channels, ids, options,
 * getaddrinfo, bind/listen (a real TCP listener), address/route resolution
 * and its errors, devices, rsockets in one process, event strings.
 * Port block: 27100-27119 (below the kernel's ephemeral range, where
 * softverbs' own connections could hold a port in TIME_WAIT).
 */
#include "cmtest.h"

#include <netdb.h>
#include <sched.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#define PORT 27100

static void test_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct pollfd pfd;
	struct rdma_cm_event *ev;

	CHECK(ch);
	CHECK(ch->fd >= 0);
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 50), 0);		/* nothing queued: not readable */
	CHECK(fcntl(ch->fd, F_SETFL, O_NONBLOCK) == 0);
	CHECK_ERR(rdma_get_cm_event(ch, &ev), EAGAIN);
	CHECK_ERR(rdma_get_cm_event(NULL, &ev), EINVAL);
	CHECK_ERR(rdma_ack_cm_event(NULL), EINVAL);
	rdma_destroy_event_channel(ch);
}

static void test_event_str(void)
{
	static const char *const names[] = {
		"RDMA_CM_EVENT_ADDR_RESOLVED", "RDMA_CM_EVENT_ADDR_ERROR",
		"RDMA_CM_EVENT_ROUTE_RESOLVED", "RDMA_CM_EVENT_ROUTE_ERROR",
		"RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
		"RDMA_CM_EVENT_CONNECT_ERROR", "RDMA_CM_EVENT_UNREACHABLE",
		"RDMA_CM_EVENT_REJECTED", "RDMA_CM_EVENT_ESTABLISHED",
		"RDMA_CM_EVENT_DISCONNECTED", "RDMA_CM_EVENT_DEVICE_REMOVAL",
		"RDMA_CM_EVENT_MULTICAST_JOIN", "RDMA_CM_EVENT_MULTICAST_ERROR",
		"RDMA_CM_EVENT_ADDR_CHANGE", "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(!strcmp(rdma_event_str((enum rdma_cm_event_type)i), names[i]));
	CHECK(!strcmp(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT"));
}

static void test_ids(void)
{
	static const enum rdma_port_space ps[] = {
		RDMA_PS_TCP, RDMA_PS_UDP, RDMA_PS_IB, RDMA_PS_IPOIB,
	};
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2;
	struct rdma_cm_id *id;
	unsigned i;
	int one = 1;
	uint8_t tos = 32;

	CHECK(ch);
	for (i = 0; i < 4; i++) {
		CHECK_OK(rdma_create_id(ch, &id, &one, ps[i]));
		CHECK(id->context == &one);
		CHECK(id->channel == ch);
		CHECK_EQ(id->ps, ps[i]);
		CHECK_EQ(id->qp_type, (ps[i] == RDMA_PS_UDP || ps[i] == RDMA_PS_IPOIB) ?
			 IBV_QPT_UD : IBV_QPT_RC);
		CHECK(id->verbs == NULL && id->qp == NULL);
		CHECK_EQ(rdma_get_src_port(id), 0);
		CHECK_EQ(rdma_get_dst_port(id), 0);
		CHECK_OK(rdma_destroy_id(id));
	}
	CHECK_ERR(rdma_create_id(ch, &id, NULL, (enum rdma_port_space)0x999), EINVAL);
	CHECK_ERR(rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP), EINVAL);

	/* options */
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)));
	CHECK_ERR(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, 4), EINVAL);
	CHECK_OK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	CHECK_OK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)));
	CHECK_OK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &tos, 1));
	CHECK_ERR(rdma_set_option(id, RDMA_OPTION_ID, 77, &one, sizeof(one)), ENOSYS);
	CHECK_ERR(rdma_set_option(id, 42, 0, &one, sizeof(one)), ENOSYS);
	CHECK_ERR(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &one, 3), EINVAL);

	/* migrate to another channel, to synchronous and back */
	ch2 = rdma_create_event_channel();
	CHECK(ch2);
	CHECK_OK(rdma_migrate_id(id, ch2));
	CHECK(id->channel == ch2);
	CHECK_OK(rdma_migrate_id(id, NULL));
	CHECK(id->channel != ch2 && id->channel != ch);
	CHECK_OK(rdma_migrate_id(id, ch));
	CHECK(id->channel == ch);
	CHECK_OK(rdma_destroy_id(id));

	/* ids not bound yet cannot connect, listen to nothing, disconnect */
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_ERR(rdma_connect(id, NULL), EINVAL);
	CHECK_ERR(rdma_disconnect(id), EINVAL);
	CHECK_ERR(rdma_accept(id, NULL), EINVAL);
	CHECK_ERR(rdma_reject(id, NULL, 0), EINVAL);
	CHECK_ERR(rdma_resolve_route(id, 100), EINVAL);
	CHECK_ERR(rdma_establish(id), EINVAL);
	CHECK_ERR(rdma_notify(id, IBV_EVENT_COMM_EST), EINVAL);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
}

static void test_getaddrinfo(void)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_OK(rdma_getaddrinfo(NULL, "27101", &hints, &res));
	CHECK(res->ai_src_addr && !res->ai_dst_addr);
	CHECK_EQ(res->ai_flags & RAI_PASSIVE, RAI_PASSIVE);
	CHECK_EQ(res->ai_port_space, RDMA_PS_TCP);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_RC);
	rdma_freeaddrinfo(res);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
	hints.ai_family = AF_INET;
	hints.ai_qp_type = IBV_QPT_UD;
	CHECK_OK(rdma_getaddrinfo("127.0.0.1", "27102", &hints, &res));
	CHECK(res->ai_dst_addr && res->ai_dst_len == sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK_EQ(sin->sin_family, AF_INET);
	CHECK_EQ(ntohs(sin->sin_port), 27102);
	CHECK_EQ(ntohl(sin->sin_addr.s_addr), INADDR_LOOPBACK);
	CHECK_EQ(res->ai_port_space, RDMA_PS_UDP);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_UD);
	rdma_freeaddrinfo(res);

	/* RAI_FAMILY AF_INET6 with an IPv6 literal */
	hints.ai_family = AF_INET6;
	hints.ai_qp_type = 0;
	CHECK_OK(rdma_getaddrinfo("::1", "27103", &hints, &res));
	CHECK_EQ(res->ai_family, AF_INET6);
	CHECK_EQ(res->ai_dst_addr->sa_family, AF_INET6);
	rdma_freeaddrinfo(res);

	/* numeric host required: a name is refused */
	hints.ai_family = AF_INET;
	CHECK(rdma_getaddrinfo("localhost", "1", &hints, &res) != 0);
	CHECK(rdma_getaddrinfo(NULL, NULL, NULL, &res) != 0);
	hints.ai_flags = 0x1000;
	CHECK(rdma_getaddrinfo("127.0.0.1", "1", &hints, &res) == EAI_BADFLAGS);
	rdma_freeaddrinfo(NULL);
}

static int proc_tcp_listening(uint16_t port)
{
	char line[512];
	FILE *f = fopen("/proc/net/tcp", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned lport, st;

		if (sscanf(line, " %*d: %*8x:%4x %*8x:%*4x %2x", &lport, &st) == 2 &&
		    lport == port && st == 0x0a)
			found = 1;
	}
	fclose(f);
	return found;
}

static void test_bind_listen(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id, *id2;
	struct sockaddr_in a = loop_addr(PORT + 4), any = loop_addr(0);
	struct sockaddr_in *src;
	struct sockaddr_in6 ib = { .sin6_family = AF_IB };
	int fd;

	CHECK(ch);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_ERR(rdma_bind_addr(id, (struct sockaddr *)&ib), EAFNOSUPPORT);
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&a));
	CHECK(id->verbs == NULL);	/* loopback belongs to no device, as in the kernel */
	CHECK_EQ(ntohs(rdma_get_src_port(id)), PORT + 4);
	src = (struct sockaddr_in *)rdma_get_local_addr(id);
	CHECK_EQ(ntohl(src->sin_addr.s_addr), INADDR_LOOPBACK);
	CHECK_ERR(rdma_bind_addr(id, (struct sockaddr *)&a), EINVAL);	/* twice */

	/* the same port for another id of this process */
	CHECK_OK(rdma_create_id(ch, &id2, NULL, RDMA_PS_TCP));
	CHECK_ERR(rdma_bind_addr(id2, (struct sockaddr *)&a), EADDRINUSE);
	CHECK_OK(rdma_destroy_id(id2));

	CHECK_EQ(proc_tcp_listening(PORT + 4), 0);
	CHECK_OK(rdma_listen(id, 4));
	CHECK_EQ(proc_tcp_listening(PORT + 4), 1);	/* a real TCP listener */
	MSG("listener on 127.0.0.1:%d is a TCP LISTEN socket", PORT + 4);
	/* ... that accepts TCP connections */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(fd);
	CHECK_OK(rdma_destroy_id(id));
	CHECK_EQ(proc_tcp_listening(PORT + 4), 0);

	/* wildcard bind: no device yet, port chosen by the system */
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	any.sin_addr.s_addr = htonl(INADDR_ANY);
	CHECK_OK(rdma_bind_addr(id, (struct sockaddr *)&any));
	CHECK(id->verbs == NULL);
	CHECK(rdma_get_src_port(id) != 0);
	CHECK_OK(rdma_listen(id, 0));
	CHECK_EQ(proc_tcp_listening(ntohs(rdma_get_src_port(id))), 1);
	CHECK_OK(rdma_destroy_id(id));

	/* listen on an unbound id binds to any address */
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_listen(id, 1));
	CHECK(rdma_get_src_port(id) != 0);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void test_resolve(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = loop_addr(PORT + 5);
	long long t0;

	CHECK(ch);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	t0 = now_ms();
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	ev = expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CHECK_EQ(ev->status, 0);
	CHECK(ev->id == id);
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK(now_ms() - t0 < 2000);
	CHECK(id->verbs != NULL);
	CHECK_EQ(id->port_num, 1);
	CHECK(rdma_get_src_port(id) != 0);		/* implicit bind */
	CHECK_EQ(ntohs(rdma_get_dst_port(id)), PORT + 5);
	CHECK_EQ(((struct sockaddr_in *)rdma_get_peer_addr(id))->sin_addr.s_addr,
		 htonl(INADDR_LOOPBACK));
	CHECK_OK(rdma_resolve_route(id, 2000));
	expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, 2000);
	CHECK(id->route.path_rec != NULL);
	CHECK_EQ(id->route.num_paths, 1);
	CHECK(!memcmp(&id->route.addr.addr.ibaddr.sgid, &id->route.path_rec->sgid, 16));
	/* the loopback destination is this device */
	CHECK(!memcmp(&id->route.addr.addr.ibaddr.sgid, &id->route.addr.addr.ibaddr.dgid, 16));
	CHECK_OK(rdma_destroy_id(id));

	/* synchronous id: the call itself returns the result */
	CHECK_OK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000));
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_OK(rdma_resolve_route(id, 2000));
	CHECK(id->event && id->event->event == RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK_OK(rdma_destroy_id(id));

	/* IPv6 loopback */
	{
		struct sockaddr_in6 d6 = { .sin6_family = AF_INET6, .sin6_port = htons(PORT + 6),
					   .sin6_addr = IN6ADDR_LOOPBACK_INIT };

		CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
		CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d6, 2000));
		expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 2000);
		CHECK_EQ(rdma_get_local_addr(id)->sa_family, AF_INET6);
		CHECK_OK(rdma_destroy_id(id));
	}
	rdma_destroy_event_channel(ch);
}

/* In a private network namespace with lo down nothing is routable:
 * ADDR_ERROR must come at once, with the route error as status. */
static int addr_error_child(void *arg)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst = loop_addr(PORT + 7);
	long long t0;

	(void)arg;
	if (unshare(CLONE_NEWNET) != 0)
		return SKIP;
	ch = rdma_create_event_channel();
	CHECK(ch);
	CHECK_OK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	t0 = now_ms();
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000));
	ev = expect_event(ch, RDMA_CM_EVENT_ADDR_ERROR, 1500);
	CHECK_EQ(ev->status, -ENETUNREACH);
	CHECK_OK(rdma_ack_cm_event(ev));
	CHECK(now_ms() - t0 <= 1000);
	/* the id can try again */
	CHECK_OK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000));
	expect_ack(ch, RDMA_CM_EVENT_ADDR_ERROR, -ENETUNREACH, 1500);
	CHECK_OK(rdma_destroy_id(id));
	/* synchronous: the error is the return value */
	CHECK_OK(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP));
	CHECK_ERR(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 1000), ENETUNREACH);
	CHECK_OK(rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	MSG("unroutable destination: ADDR_ERROR status -ENETUNREACH in %lld ms", now_ms() - t0);
	return 0;
}

static void test_devices(void)
{
	int n = -1, i;
	struct ibv_context **l = rdma_get_devices(&n);

	CHECK(l);
	CHECK(n >= 1);
	for (i = 0; i < n; i++)
		CHECK(l[i] != NULL);
	CHECK(l[n] == NULL);
	CHECK(!strcmp(ibv_get_device_name(l[0]->device), "softverbs0"));
	rdma_free_devices(l);
}

/* Waits (bounded) until fd shows one of events. */
static short rs_wait_for(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	CHECK(rpoll(&p, 1, 5000) == 1);
	return p.revents;
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void *send_usr1(void *main_thread)
{
	usleep(100 * 1000);
	pthread_kill(*(pthread_t *)main_thread, SIGUSR1);
	return NULL;
}

/* A signal ends a blocking rrecv with EINTR, as recv(2) without SA_RESTART. */
static void rsocket_eintr(int s)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t self = pthread_self(), t;
	char buf[4];

	CHECK(!rfcntl(s, F_SETFL, 0));
	CHECK(!sigaction(SIGUSR1, &sa, NULL));
	CHECK(!pthread_create(&t, NULL, send_usr1, &self));
	CHECK_ERR(rrecv(s, buf, 4, 0), EINTR);
	CHECK(!pthread_join(t, NULL));
}

/* rsockets in one process: errors, a nonblocking connect and accept,
 * a verified stream both ways, half-close, names and options. */
static void test_rsocket(void)
{
	struct sockaddr_in a = loop_addr(0), b;
	socklen_t al = sizeof(a);
	static uint8_t out[200000], in[sizeof(out)];
	int l, c, s, v = 1;
	size_t done = 0, got = 0;
	char buf[4];

	CHECK_ERR(rsocket(AF_UNIX, SOCK_STREAM, 0), ENOTSUP);
	CHECK_ERR(rbind(0, (struct sockaddr *)&a, al), EBADF);
	CHECK_ERR(rrecv(0, buf, 4, 0), EBADF);
	CHECK((l = rsocket(AF_INET, SOCK_STREAM, 0)) >= 0);
	CHECK(!rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)));
	CHECK(!rbind(l, (struct sockaddr *)&a, al));
	CHECK(!rlisten(l, 4));
	CHECK(!rgetsockname(l, (struct sockaddr *)&a, &al));
	CHECK(a.sin_port != 0);
	CHECK(!rfcntl(l, F_SETFL, O_NONBLOCK));
	CHECK_ERR(raccept(l, NULL, NULL), EAGAIN);
	CHECK_ERR(rrecv(l, buf, 4, 0), ENOTCONN);	/* a listener has no stream */

	CHECK((c = rsocket(AF_INET, SOCK_STREAM, 0)) >= 0);
	CHECK(!rfcntl(c, F_SETFL, O_NONBLOCK));
	CHECK(rfcntl(c, F_GETFL) & O_NONBLOCK);
	CHECK_ERR(rsend(c, buf, 4, 0), ENOTCONN);
	CHECK_ERR(rsend(c, buf, 0, 0), ENOTCONN);
	CHECK_ERR(rconnect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
	/* nothing runs in the background: rpoll drives both ends */
	s = -1;
	for (int i = 0; i < 500 && s < 0; i++) {
		struct pollfd p[2] = { { .fd = l, .events = POLLIN }, { .fd = c, .events = POLLOUT } };

		CHECK(rpoll(p, 2, 10) >= 0);
		if (p[0].revents & POLLIN)
			s = raccept(l, NULL, NULL);
	}
	CHECK(s >= 0);
	CHECK(rs_wait_for(c, POLLOUT) & POLLOUT);
	al = sizeof(v);
	CHECK(!rgetsockopt(c, SOL_SOCKET, SO_ERROR, &v, &al) && v == 0);
	al = sizeof(b);
	CHECK(!rgetpeername(s, (struct sockaddr *)&b, &al) && b.sin_family == AF_INET);
	rsocket_eintr(s);

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7 + 3);
	while (got < sizeof(in)) {
		if (done < sizeof(out)) {
			ssize_t n = rsend(c, out + done, sizeof(out) - done, 0);

			CHECK(n > 0 || errno == EAGAIN);
			done += n > 0 ? (size_t)n : 0;
		}
		ssize_t n = rrecv(s, in + got, sizeof(in) - got, MSG_DONTWAIT);

		CHECK(n > 0 || errno == EAGAIN);
		got += n > 0 ? (size_t)n : 0;
		if (n <= 0 && done == sizeof(out))
			rs_wait_for(s, POLLIN);
	}
	CHECK(!memcmp(in, out, sizeof(out)));
	CHECK(!rshutdown(c, SHUT_WR));
	CHECK(rs_wait_for(s, POLLIN) & POLLIN);
	CHECK(rrecv(s, buf, 4, 0) == 0);
	CHECK_ERR(rsend(c, buf, 4, 0), EPIPE);
	CHECK(rsend(s, "pong", 4, 0) == 4);	/* the other half still works */
	CHECK(rs_wait_for(c, POLLIN) & POLLIN);
	CHECK(rrecv(c, buf, 4, 0) == 4 && !memcmp(buf, "pong", 4));
	CHECK(!rclose(s));
	CHECK(!rclose(c));
	CHECK(!rclose(l));
	CHECK_ERR(rclose(l), EBADF);
}

#ifdef __SANITIZE_THREAD__
static const bool tsan_build = true;
#else
static const bool tsan_build = false;
#endif

int main(void)
{
	pid_t pid;
	int rc;

	cmt_init("cm_basic", 60);
	test_channel();
	test_event_str();
	test_ids();
	test_getaddrinfo();
	test_rsocket();
	need_device();
	test_devices();
	test_bind_listen();
	test_resolve();
	/* ThreadSanitizer cannot follow a child of a multi-threaded process
	 * that starts threads; the plain and ASan runs cover this case. */
	if (tsan_build) {
		rc = SKIP;
	} else {
		pid = run_child(addr_error_child, NULL);
		rc = wait_child(pid);
	}
	if (rc == SKIP)
		MSG("unshare(CLONE_NEWNET) not permitted: ADDR_ERROR case skipped");
	else if (rc)
		FAIL("ADDR_ERROR child failed (%d)", rc);
	MSG("all checks passed");
	return 0;
}
