/*
 * Forged handshake across hosts (tests/net: case security_forge).
 *
 *   security_forge_net server            in test host h1: QP b, the victim
 *   security_forge_net client ADDR       in test host h2: QP a, its peer
 *
 * The client connects a to b, then starts a stranger (forge_attacker as
 * uid 65534) on its own host, so that the stranger's connections come from
 * the very address of b's real peer, and writes to b meanwhile, reading
 * every piece back.  The stranger says HELLO to b claiming to be a and
 * fires WRITEs and READs at b's secret.  Invariants: the stranger is
 * granted nothing and disconnected, every acknowledged WRITE reads back,
 * and b's secret is unchanged (the server checks it at the end).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "sec.h"
#include "common.h"

#define OOB_PORT 18515
#define DATA_LEN (64 * 1024)
#define SECRET_OFF DATA_LEN
#define CHUNK 4096

static int oob(const char *addr)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(OOB_PORT) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), c;

	CHECK(fd >= 0);
	if (addr) {
		CHECK_EQ(inet_pton(AF_INET, addr, &a.sin_addr), 1);
		for (int i = 0; i < 100 && connect(fd, (struct sockaddr *)&a, sizeof(a)); i++)
			t_sleep_ms(100);
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK_OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(listen(fd, 1));
	c = accept(fd, NULL, NULL);
	CHECK(c >= 0);
	close(fd);
	return c;
}

static void endpoint(struct t_ep *e, struct t_opts *o, struct t_info *mine)
{
	t_opts_default(o, IBV_QPT_RC);
	o->buf_len = 2 * DATA_LEN;
	o->mr_access = T_ALL_ACCESS;
	o->qp_access = T_ALL_REMOTE;
	t_ep_create(e, t_open(), o);
	t_ep_info(e, mine);
}

static int server(void)
{
	struct t_opts o;
	struct t_ep b;
	struct t_info ib, ia;
	int fd;

	endpoint(&b, &o, &ib);
	t_fill(b.buf + SECRET_OFF, DATA_LEN, 0x5e);
	fd = oob(NULL);
	t_xchg(fd, &ib, &ia);
	t_ep_connect(&b, &o, &ia);
	t_sync(fd);                  /* the client is done */
	if (!t_check_fill(b.buf + SECRET_OFF, DATA_LEN, 0x5e))
		T_FAIL("the stranger changed b's memory");
	CHECK_EQ(t_qp_state(b.qp), IBV_QPS_RTS);
	printf("server: secret intact\n");
	t_sync(fd);
	return 0;
}

/* WRITE a piece, READ it back: an acknowledged WRITE must have landed. */
static void write_read(struct t_ep *a, const struct t_info *ib, int i)
{
	size_t off = (size_t)(i % (DATA_LEN / CHUNK)) * CHUNK;
	uint8_t *back = a->buf + DATA_LEN + off;

	t_fill(a->buf + off, CHUNK, (uint8_t)i);
	memset(back, 0, CHUNK);
	CHECK_OK(t_post_rdma(a->qp, IBV_WR_RDMA_WRITE, 1, a->buf + off, CHUNK, a->mr->lkey,
			     ib->addr + off, ib->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a->cq, 5000), IBV_WC_SUCCESS);
	CHECK_OK(t_post_rdma(a->qp, IBV_WR_RDMA_READ, 2, back, CHUNK, a->mr->lkey,
			     ib->addr + off, ib->rkey, IBV_SEND_SIGNALED));
	CHECK_STATUS(t_wc(a->cq, 5000), IBV_WC_SUCCESS);
	if (!t_check_fill(back, CHUNK, (uint8_t)i))
		T_FAIL("acknowledged WRITE %d did not land", i);
}

static int client(const char *addr)
{
	struct t_opts o;
	struct t_ep a;
	struct t_info ia, ib;
	char port[16], dst[16], src[16], rkey[16], va[32], line[256] = "";
	int fd, out, hello_ack = -1, read_resp = -1, closed = -1;
	pid_t pid;
	FILE *f;

	endpoint(&a, &o, &ia);
	fd = oob(addr);
	t_xchg(fd, &ia, &ib);
	t_ep_connect(&a, &o, &ib);
	write_read(&a, &ib, 0);

	snprintf(port, sizeof(port), "%u", ib.qpn >> 8);
	snprintf(dst, sizeof(dst), "%u", ib.qpn);
	snprintf(src, sizeof(src), "%u", ia.qpn);
	snprintf(rkey, sizeof(rkey), "%u", ib.rkey);
	snprintf(va, sizeof(va), "%llu", (unsigned long long)(ib.addr + SECRET_OFF));
	setenv("SEC_TARGET_IP", addr, 1);
	{
		char *args[] = { "hello", port, dst, src, rkey, va, NULL };

		pid = sec_spawn("security_forge_attacker", args, &out);
	}
	for (int i = 1; i < 200; i++)
		write_read(&a, &ib, i);
	f = fdopen(out, "r");
	CHECK(f);
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	CHECK_EQ(t_wait_child(pid, 20000), 0);
	printf("attacker: %s", line);
	CHECK_EQ(sscanf(line, "hello_ack %d read_resp %d closed %d", &hello_ack, &read_resp,
			&closed), 3);
	CHECK_EQ(hello_ack, 0);
	CHECK_EQ(read_resp, 0);
	CHECK_EQ(closed, 1);
	for (int i = 200; i < 250; i++)
		write_read(&a, &ib, i);
	CHECK_EQ(t_qp_state(a.qp), IBV_QPS_RTS);
	t_sync(fd);
	t_sync(fd);                  /* the server checked its secret */
	printf("client: end 0\n");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_alarm(50);
	if (argc == 2 && !strcmp(argv[1], "server"))
		return server();
	if (argc == 3 && !strcmp(argv[1], "client"))
		return client(argv[2]);
	fprintf(stderr, "usage: %s server | client ADDR\n", argv[0]);
	return 2;
}
