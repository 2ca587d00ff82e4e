/*
 * What a connected QP costs in file descriptors.  On one host a ring
 * channel closes its socket once its handshake is done, and a peer process
 * is one bell and one life line however many channels (transport/shm/
 * peer.h): connecting many QPs adds a handful of descriptors, not two per
 * QP.  Over TCP (verbs_tcp_qp_fds) each QP keeps its two channels' sockets,
 * both ends of each in this one process.  Counted with every endpoint's
 * objects made (their MRs hold descriptors of their own), then again once
 * every pair has carried a SEND each way; then once more with all CQs on
 * one completion channel, whose wake descriptor each channel's peer takes
 * in the handshake: one copy per peer process and completion channel.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define PAIRS 50

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	CHECK(d != NULL);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void send_each_way(struct t_ep *a, struct t_ep *b)
{
	for (int dir = 0; dir < 2; dir++) {
		struct t_ep *from = dir ? b : a, *to = dir ? a : b;

		CHECK_OK(t_post_recv(to->qp, 1, to->buf, 64, to->mr->lkey));
		CHECK_OK(t_post_send(from->qp, IBV_WR_SEND, 2, from->buf + 64, 8, from->mr->lkey,
				     IBV_SEND_SIGNALED));
		CHECK_STATUS(t_wc(from->cq, 5000), IBV_WC_SUCCESS);
		CHECK_STATUS(t_wc(to->cq, 5000), IBV_WC_SUCCESS);
	}
}

static void run(struct ibv_context *ctx, struct ibv_comp_channel *ch, bool tcp)
{
	static struct t_ep a[PAIRS], b[PAIRS];
	struct t_opts o;
	int before, after, limit;

	t_opts_default(&o, IBV_QPT_RC);
	o.channel = ch;
	for (int i = 0; i < PAIRS; i++) {
		t_ep_create(&a[i], ctx, &o);
		t_ep_create(&b[i], ctx, &o);
	}
	before = count_fds();
	for (int i = 0; i < PAIRS; i++) {
		struct t_info ia, ib;

		t_ep_info(&a[i], &ia);
		t_ep_info(&b[i], &ib);
		t_ep_connect(&a[i], &o, &ib);
		t_ep_connect(&b[i], &o, &ia);
	}
	for (int i = 0; i < PAIRS; i++)
		send_each_way(&a[i], &b[i]);
	after = count_fds();
	/* TCP: per pair two channels, both ends of each here; one host: a
	 * bell and a life line (of this very process) and some slack */
	limit = tcp ? 4 * PAIRS + 16 : 16;
	fprintf(stderr, "%d connected QPs%s: %d descriptors more (at most %d)\n", 2 * PAIRS,
		ch ? " on a completion channel" : "", after - before, limit);
	CHECK(after - before <= limit);
	for (int i = 0; i < PAIRS; i++) {
		t_ep_destroy(&a[i]);
		t_ep_destroy(&b[i]);
	}
}

int main(void)
{
	bool tcp = t_transport_tcp();
	struct ibv_context *ctx = t_open();
	struct ibv_comp_channel *ch;

	t_alarm(60);
	run(ctx, NULL, tcp);
	ch = CHECK_PTR(ibv_create_comp_channel(ctx));
	run(ctx, ch, tcp);
	CHECK_OK(ibv_destroy_comp_channel(ch));
	CHECK_OK(ibv_close_device(ctx));
	return 0;
}
