/*
 * Shared memory only for our own user (docs/security.md).
 *
 * A stranger (another uid, forge_attacker) binds the unix name of a port,
 * as if a QP lived there, and a QP of ours is told to connect to it.  Our
 * HELLO would offer rings and our segment (the published MR table) to a
 * peer of our own user: to the stranger it must pass no descriptor.
 */
#include "sec.h"
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_ep e;
	struct t_info peer = { 0 };
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	char line[128] = "", port[16];
	int fds = -1;

	t_alarm(40);
	T_SKIP_IF(sec_tcp(), "descriptors travel only over unix sockets");
	ctx = t_open();
	CHECK_OK(ibv_query_port(ctx, 1, &pa));
	t_opts_default(&o, IBV_QPT_RC);
	t_ep_create(&e, ctx, &o);
	for (int attempt = 0; attempt < 5 && strncmp(line, "listening", 9); attempt++) {
		unsigned int p = 40000 + (unsigned int)((getpid() * 7 + attempt * 997) % 20000);
		char *args[] = { "listen", port, NULL };
		int fd;
		pid_t pid;
		FILE *f;

		snprintf(port, sizeof(port), "%u", p);
		pid = sec_spawn("security_forge_attacker", args, &fd);
		f = fdopen(fd, "r");
		CHECK(f);
		if (!fgets(line, sizeof(line), f) || strncmp(line, "listening", 9)) {
			fclose(f);
			t_wait_child(pid, 10000);
			continue;
		}
		peer.lid = pa.lid;
		peer.qpn = (p << 8) | 1;
		t_ep_connect(&e, &o, &peer);          /* RTR: the QP connects to it */
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
		CHECK_EQ(t_wait_child(pid, 15000), 0);
		fprintf(stderr, "attacker: %s", line);
		CHECK_EQ(sscanf(line, "fds %d", &fds), 1);
		CHECK_EQ(fds, 0);
		t_ep_destroy(&e);
		ibv_close_device(ctx);
		return 0;
	}
	T_FAIL("the stranger could not bind a port name (%s)", line);
}
