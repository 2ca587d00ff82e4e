/*
 * softverbs status: every process using softverbs that the caller may see,
 * with its QPs, CQs, SRQs, MRs, channels and counters, as a table per
 * process (like `rdma res show`) or JSON (docs/observability.md).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/status.h"

int st_parse(int argc, char **argv, struct st_opts *o, bool stat)
{
	static const struct option longs[] = {
		{ "json", no_argument, NULL, 'j' }, { "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((c = getopt_long(argc, argv, stat ? "w:n:" : "", longs, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'j': o->json = true; break;
		case 'd': o->dir = optarg; break;
		case 'w':
			o->wait_s = strtod(optarg, &end);
			if (*end || o->wait_s <= 0 || o->wait_s > 3600)
				goto usage;
			break;
		case 'n':
			o->count = strtol(optarg, &end, 10);
			if (*end || o->count <= 0)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	if (optind == argc && !(stat && o->json))
		return 0;
usage:
	fprintf(stderr, "Usage: %s %s\n", sv_cli_prog,
		stat ? "stat [-w SECONDS] [-n COUNT]" : "status [--json]");
	return -1;
}

static void show_chan(const char *dir, const struct svst_chan *ch, uint64_t tx, uint64_t rx)
{
	char addr[ST_ADDR_LEN];

	if (!ch->kind[0])
		return;
	printf("    chan %-3s %-4.8s %-10s peer %s", dir, ch->kind, st_chan_state(ch->state),
	       st_ipv4(ch->peer_addr, addr, sizeof(addr)));
	if (ch->peer_pid)
		printf(" pid %u", ch->peer_pid);
	printf("  tx %llu frames  rx %llu frames\n", (unsigned long long)tx, (unsigned long long)rx);
}

static void show_ops(const struct svst_qp *q)
{
	bool any = false;

	for (unsigned op = 0; op < SVST_NOPS; op++) {
		if (!q->tx[op].msgs && !q->rx[op].msgs)
			continue;
		if (!any)
			printf("    %-12s %12s %14s %12s %14s\n", "op", "tx-msgs", "tx-bytes",
			       "rx-msgs", "rx-bytes");
		any = true;
		printf("    %-12s %12llu %14llu %12llu %14llu\n", st_op_name(op),
		       (unsigned long long)q->tx[op].msgs, (unsigned long long)q->tx[op].bytes,
		       (unsigned long long)q->rx[op].msgs, (unsigned long long)q->rx[op].bytes);
	}
}

static void show_qp(const struct svst_qp *q)
{
	char addr[ST_ADDR_LEN];

	printf("  qp %#x %s %s pd %u", q->qpn, st_qp_type(q->type), st_qp_state(q->state), q->pd);
	if (q->peer_qpn)
		printf(" peer %s/%#x", st_ipv4(q->chan[0].peer_addr ? q->chan[0].peer_addr :
					       q->chan[1].peer_addr, addr, sizeof(addr)), q->peer_qpn);
	printf(" sq-psn %u rq-psn %u send-wr %u/%u", q->sq_psn, q->rq_psn,
	       q->sq.posted - q->sq.done, q->max_send_wr);
	if (q->srqn)
		printf(" srq %u\n", q->srqn);
	else
		printf(" recv-wr %u/%u\n", q->rq.posted - q->rq.done, q->max_recv_wr);
	show_chan("out", &q->chan[0], q->chan_tx[0], q->chan_rx[0]);
	show_chan("in", &q->chan[1], q->chan_tx[1], q->chan_rx[1]);
	printf("    retries %llu rnr-naks-rcvd %llu rnr-naks-sent %llu error-comps %llu direct %llu "
	       "placed %llu lane-tx %llu lane-rx %llu\n",
	       (unsigned long long)q->retries, (unsigned long long)q->rnr_naks_rcvd,
	       (unsigned long long)q->rnr_naks_sent, (unsigned long long)q->err_comps,
	       (unsigned long long)q->direct, (unsigned long long)q->placed,
	       (unsigned long long)q->lane_tx, (unsigned long long)q->lane_rx);
	show_ops(q);
	if (q->last_err[0])
		printf("    last-error %.*s\n", SVST_ERR_LEN, q->last_err);
}

static void show_other(const struct st_proc *p, uint32_t i)
{
	const void *r = st_slot(p, i);
	char acc[160];

	switch (st_kind(p, i)) {
	case SVST_CQ: {
		const struct svst_cq *c = r;

		printf("  cq cqe %u pending %u error-comps %llu overruns %llu channel %s\n", c->cqe,
		       c->pushed - c->polled, (unsigned long long)c->err_comps,
		       (unsigned long long)c->overruns, c->has_channel ? "yes" : "no");
		break;
	}
	case SVST_SRQ: {
		const struct svst_srq *s = r;

		printf("  srq %u%s max-wr %u limit %u recv-wr %u\n", s->srqn, s->xrc ? " xrc" : "",
		       s->max_wr, s->limit, s->rq.posted - s->rq.done);
		break;
	}
	case SVST_MR: {
		const struct svst_mr *m = r;

		printf("  mr addr %#llx length %llu access %s pd %u", (unsigned long long)m->addr,
		       (unsigned long long)m->length, st_access(m->access, acc, sizeof(acc)), m->pd);
		if (p->keys)
			printf(" lkey %#x rkey %#x\n", m->lkey, m->rkey);
		else
			printf(" keys hidden\n");
		break;
	}
	default:
		break;
	}
}

static void show_proc(const struct st_proc *p)
{
	char addr[ST_ADDR_LEN];

	printf("pid %u comm %.16s uid %u device %.16s addr %s\n", p->hdr.pid, p->hdr.comm,
	       p->hdr.uid, p->hdr.device, st_ipv4(p->hdr.addr, addr, sizeof(addr)));
	for (unsigned kind = SVST_QP; kind < SVST_NKINDS; kind++)
		for (uint32_t i = 0; i < p->hdr.hwm; i++) {
			if (st_kind(p, i) != kind)
				continue;
			if (kind == SVST_QP)
				show_qp(st_slot(p, i));
			else
				show_other(p, i);
		}
	for (unsigned kind = SVST_QP; kind < SVST_NKINDS; kind++)
		if (p->hdr.unshown[kind])
			printf("  %u more %s%s not shown (no slot left)\n", p->hdr.unshown[kind],
			       st_kind_name(kind), p->hdr.unshown[kind] == 1 ? "" : "s");
	if (p->busy)
		printf("  %u records changing while read, not shown\n", p->busy);
}

int sv_cli_status(int argc, char **argv)
{
	struct st_opts o;
	struct st_snap s;

	if (st_parse(argc, argv, &o, false) || st_snap_take(&s, o.dir))
		return 1;
	if (o.json) {
		st_print_json(stdout, &s);
	} else {
		for (size_t i = 0; i < s.n; i++)
			show_proc(&s.procs[i]);
		if (!s.n)
			printf("no process using softverbs that you may see\n");
	}
	st_snap_free(&s);
	return 0;
}
