/*
 * libFuzzer harness for the connection manager's message stream
 * (src/cm/msg.c: read_messages and dispatch, and what they call).  Built
 * with the CM's and the verbs library's sources compiled in
 * (tests/fuzz/CMakeLists.txt).
 *
 * The input's first byte chooses the role of the harness; the rest is what
 * it sends on the CM's TCP connection, as a peer's CM would:
 *   bit 0 clear: passive.  The harness connects to a listening id of ours
 *     (rdma_listen on 127.0.0.1), so the bytes reach an internal id in
 *     REQ_WAIT, and, after a REQ, an id in REQ_RCVD.
 *   bit 0 set: active.  An id of ours connects (rdma_resolve_addr,
 *     rdma_resolve_route, rdma_connect without a QP) to the harness's own
 *     listener; the harness reads its REQ and answers with the bytes, so
 *     they reach an id in CONNECTING (REP, MRA, REJ ...).  Bit 1 makes it a
 *     UD id (a service lookup: REP carries a SIDR status).
 * The CM's progress thread does the reading, as in a real process.  The
 * harness then closes its end and waits for the CM to close its own: every
 * state ends the connection on EOF.
 *
 * After each input: no sanitizer report; every event is one the role
 * allows (checked against the id's state); the active id ends
 * DISCONNECTED (or ESTABLISHED for a UD lookup) without a socket; an id
 * that got a CONNECT_REQUEST is in REQ_RCVD; no internal id is left behind
 * (the ids alive are those before the input); the listener still listens;
 * no descriptor is left open.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "cm/cm.h"
#include "fuzz.h"

#define FZ_ROLE_ACTIVE 1u
#define FZ_ROLE_UD     2u
#define FZ_WAIT_MS     5000
#define FZ_MAX_INPUT   4096

#define DIE(...) do { fprintf(stderr, "fuzz_cm: " __VA_ARGS__); fputc('\n', stderr); abort(); } while (0)

static struct {
	struct rdma_event_channel *ch;   /* the listener's */
	struct rdma_event_channel *ach;  /* the active ids' (destroyed channels linger: event.c) */
	struct rdma_cm_id *listener;
	struct sockaddr_in listen_sa;    /* where the listener listens */
	int peer_lfd;                    /* the harness's listener (active role) */
	struct sockaddr_in peer_sa;
} F;

/* libFuzzer's timers interrupt system calls (SIGALRM): start again. */
static bool wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;

	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r == 1;
}

static int count_ids(void)
{
	struct sv_list *pos, *tmp;
	int n = 0;

	cm_lock();
	sv_list_for_each_safe(pos, tmp, &cm.ids)
		n++;
	cm_unlock();
	return n;
}

static enum cm_state state_of(struct rdma_cm_id *id, int *sock)
{
	enum cm_state s;

	cm_lock();
	s = cm_id_of(id)->state;
	if (sock)
		*sock = cm_id_of(id)->sock;
	cm_unlock();
	return s;
}

/* The next event of a channel, or NULL if none comes within `ms`. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, int ms)
{
	struct rdma_cm_event *ev;

	if (!wait_fd(ch->fd, POLLIN, ms))
		return NULL;
	if (rdma_get_cm_event(ch, &ev)) {
		if (errno != EAGAIN)
			DIE("rdma_get_cm_event: %s", strerror(errno));
		return NULL;
	}
	return ev;
}

static void expect_event(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next_event(ch, FZ_WAIT_MS);

	if (!ev || ev->event != type)
		DIE("waited for %s, got %s", rdma_event_str(type),
		    ev ? rdma_event_str(ev->event) : "nothing");
	rdma_ack_cm_event(ev);
}

static void nonblocking(int fd)
{
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
		DIE("fcntl: %s", strerror(errno));
}

static void setup(void)
{
	socklen_t sl = sizeof(F.peer_sa);

	setenv("SOFTVERBS_DEBUG", "0", 0);
	F.ch = rdma_create_event_channel();
	F.ach = rdma_create_event_channel();
	if (!F.ch || !F.ach || rdma_create_id(F.ch, &F.listener, NULL, RDMA_PS_TCP))
		DIE("listener: %s", strerror(errno));
	nonblocking(F.ch->fd);
	nonblocking(F.ach->fd);
	F.listen_sa = (struct sockaddr_in){ .sin_family = AF_INET,
					    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (rdma_bind_addr(F.listener, (struct sockaddr *)&F.listen_sa) ||
	    rdma_listen(F.listener, 16))
		DIE("rdma_listen: %s", strerror(errno));
	F.listen_sa.sin_port = rdma_get_src_port(F.listener);

	F.peer_sa = (struct sockaddr_in){ .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	F.peer_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (F.peer_lfd < 0 || bind(F.peer_lfd, (struct sockaddr *)&F.peer_sa, sizeof(F.peer_sa)) ||
	    getsockname(F.peer_lfd, (struct sockaddr *)&F.peer_sa, &sl) || listen(F.peer_lfd, 16))
		DIE("harness listener: %s", strerror(errno));
}

/* What a hang report shows: the ids, and what the CM's epoll set watches. */
static void show_ids(void)
{
	struct sv_list *pos, *tmp;
	char path[64], line[256];
	FILE *f;

	cm_lock();
	sv_list_for_each_safe(pos, tmp, &cm.ids) {
		struct cm_id *p = sv_container_of(pos, struct cm_id, node);

		fprintf(stderr, "  id %llu: %s sock %d events 0x%x tcp_pending %d rlen %zu\n",
			(unsigned long long)p->serial, cm_state_str(p->state), p->sock,
			p->sock_events, p->tcp_pending, p->rlen);
	}
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", cm.epfd);
	cm_unlock();
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  epoll: %s", line);
	if (f)
		fclose(f);
}

/* Send the input on fd, then our EOF, and wait for the CM's: every state
 * closes the connection when its peer does. */
static void send_and_finish(int fd, const uint8_t *buf, size_t n)
{
	static const size_t chunks[] = { 1, 7, 8, 64, 244, 3, 1000 };
	uint8_t sink[4096];
	size_t off = 0;

	for (size_t k = 0; off < n; k++) {
		size_t want = chunks[k % (sizeof(chunks) / sizeof(chunks[0]))];
		ssize_t w = send(fd, buf + off, want < n - off ? want : n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR) {
			k--;
			continue;
		}
		if (w <= 0)
			break;                   /* the CM closed already */
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t r;

		if (!wait_fd(fd, POLLIN, FZ_WAIT_MS)) {
			show_ids();
			DIE("the CM did not close its connection within %d ms of our EOF", FZ_WAIT_MS);
		}
		r = read(fd, sink, sizeof(sink));
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			break;
	}
	close(fd);
	/* The progress thread closes the socket and then posts its events,
	 * under cm.lock: once we hold it, it is done. */
	cm_lock();
	cm_unlock();
}

/* ---- passive: the bytes go to our listener ---- */

static void run_passive(const uint8_t *buf, size_t n)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id = NULL;

	int err = 0;
	socklen_t el = sizeof(err);

	/* An interrupted connect goes on: wait until it is done. */
	if (fd < 0 || (connect(fd, (struct sockaddr *)&F.listen_sa, sizeof(F.listen_sa)) &&
		       (errno != EINTR || !wait_fd(fd, POLLOUT, FZ_WAIT_MS) ||
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)))
		DIE("connect to the listener: %s", strerror(err ? err : errno));
	send_and_finish(fd, buf, n);
	/* One request at most; then only its end (the peer rejected or left). */
	while ((ev = next_event(F.ch, 0))) {
		bool ok = id ? ev->id == id && (ev->event == RDMA_CM_EVENT_REJECTED ||
						ev->event == RDMA_CM_EVENT_DISCONNECTED) :
			       ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
			       ev->listen_id == F.listener;

		if (!ok)
			DIE("listener got %s%s", rdma_event_str(ev->event),
			    id ? " after a CONNECT_REQUEST" : "");
		id = ev->id;
		rdma_ack_cm_event(ev);
	}
	if (id) {
		enum cm_state s = state_of(id, NULL);

		if (s != CM_REQ_RCVD && s != CM_DISCONNECTED)
			DIE("a CONNECT_REQUEST's id is %s", cm_state_str(s));
		rdma_destroy_id(id);
	}
	if (state_of(F.listener, NULL) != CM_LISTEN)
		DIE("the listener stopped listening");
}

/* ---- active: our id connects to the harness ---- */

static struct rdma_cm_id *connect_to_harness(struct rdma_event_channel *ch, bool ud)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7, .qp_num = 0x4242 };
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ud ? RDMA_PS_UDP : RDMA_PS_TCP))
		DIE("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&F.peer_sa, 1000))
		DIE("rdma_resolve_addr: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 1000))
		DIE("rdma_resolve_route: %s", strerror(errno));
	expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rdma_connect(id, &cp))
		DIE("rdma_connect: %s", strerror(errno));
	return id;
}

/* Accept the id's connection and read its REQ: it is in CONNECTING then. */
static int accept_req(void)
{
	uint8_t req[sizeof(struct cmw_hdr) + sizeof(struct cmw_req)];
	size_t got = 0;
	int fd;

	if (!wait_fd(F.peer_lfd, POLLIN, FZ_WAIT_MS))
		DIE("our id did not connect within %d ms", FZ_WAIT_MS);
	while ((fd = accept4(F.peer_lfd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (fd < 0)
		DIE("accept: %s", strerror(errno));
	while (got < sizeof(req)) {
		ssize_t r;

		if (!wait_fd(fd, POLLIN, FZ_WAIT_MS))
			DIE("no REQ from our id within %d ms", FZ_WAIT_MS);
		r = read(fd, req + got, sizeof(req) - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			DIE("our id's connection ended before its REQ");
		got += (size_t)r;
	}
	return fd;
}

static bool active_event_ok(enum rdma_cm_event_type t, bool ud)
{
	switch (t) {
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return true;
	case RDMA_CM_EVENT_ESTABLISHED:
		return ud;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return !ud;
	default:
		return false;
	}
}

static void run_active(const uint8_t *buf, size_t n, bool ud)
{
	struct rdma_event_channel *ch = F.ach;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	enum cm_state s;
	int sock;

	id = connect_to_harness(ch, ud);
	send_and_finish(accept_req(), buf, n);
	while ((ev = next_event(ch, 0))) {
		if (!active_event_ok(ev->event, ud))
			DIE("%s id got %s", ud ? "a UD" : "an RC", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	s = state_of(id, &sock);
	if (sock >= 0 || (s != CM_DISCONNECTED && !(ud && s == CM_ESTABLISHED)))
		DIE("after its peer left, our id is %s with%s a socket", cm_state_str(s),
		    sock >= 0 ? "" : "out");
	if (rdma_destroy_id(id))
		DIE("rdma_destroy_id: %s", strerror(errno));
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setup();
	/* The CM opens its devices (and their descriptors) on first use, for
	 * good: once in each role before any input is counted. */
	run_passive(NULL, 0);
	run_active(NULL, 0, false);
	run_active(NULL, 0, true);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fds = fz_count_fds(), ids = count_ids();

	if (size < 1 || size > FZ_MAX_INPUT)
		return -1;
	if (data[0] & FZ_ROLE_ACTIVE)
		run_active(data + 1, size - 1, data[0] & FZ_ROLE_UD);
	else
		run_passive(data + 1, size - 1);
	if (count_ids() != ids)
		DIE("%d id(s) alive after the input, %d before", count_ids(), ids);
	if (fz_count_fds() > fds) {
		fz_list_fds();
		DIE("%d descriptor(s) leaked by the input", fz_count_fds() - fds);
	}
	return 0;
}
