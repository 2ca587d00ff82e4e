/* softverbs status --json: the same snapshot as the table, as one JSON
 * document (docs/observability.md lists the fields). */
#include <stdio.h>

#include "cli/status.h"

static void json_str(FILE *f, const char *s, size_t max)
{
	fputc('"', f);
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_ctr(FILE *f, const char *name, const struct svst_ctr *k)
{
	fprintf(f, "\"%s\": {\"msgs\": %llu, \"bytes\": %llu}", name, (unsigned long long)k->msgs,
		(unsigned long long)k->bytes);
}

static void json_ops(FILE *f, const char *name, const struct svst_ctr *tab)
{
	bool first = true;

	fprintf(f, "\"%s\": {", name);
	for (unsigned op = 0; op < SVST_NOPS; op++) {
		fprintf(f, "%s", first ? "" : ", ");
		json_ctr(f, st_op_name(op), &tab[op]);
		first = false;
	}
	fprintf(f, "}");
}

static void json_chan(FILE *f, const char *dir, const struct svst_chan *ch, uint64_t tx,
		      uint64_t rx)
{
	char addr[ST_ADDR_LEN];

	fprintf(f, "{\"dir\": \"%s\", \"kind\": ", dir);
	json_str(f, ch->kind, sizeof(ch->kind));
	fprintf(f, ", \"state\": \"%s\", \"peer_addr\": \"%s\", \"peer_pid\": %u, "
		"\"tx_frames\": %llu, \"rx_frames\": %llu}", st_chan_state(ch->state),
		st_ipv4(ch->peer_addr, addr, sizeof(addr)), ch->peer_pid, (unsigned long long)tx,
		(unsigned long long)rx);
}

static void json_qp(FILE *f, const struct svst_qp *q)
{
	bool first = true;

	fprintf(f, "{\"qpn\": %u, \"type\": \"%s\", \"state\": \"%s\", \"pd\": %u, "
		"\"peer_qpn\": %u, \"srqn\": %u, \"sq_psn\": %u, \"rq_psn\": %u, "
		"\"send_wr_outstanding\": %u, \"max_send_wr\": %u, "
		"\"recv_wr_outstanding\": %u, \"max_recv_wr\": %u, \"last_error\": ",
		q->qpn, st_qp_type(q->type), st_qp_state(q->state), q->pd, q->peer_qpn, q->srqn,
		q->sq_psn, q->rq_psn, q->sq.posted - q->sq.done, q->max_send_wr,
		q->rq.posted - q->rq.done, q->max_recv_wr);
	json_str(f, q->last_err, sizeof(q->last_err));
	fprintf(f, ", \"channels\": [");
	for (int i = 0; i < 2; i++) {
		if (!q->chan[i].kind[0])
			continue;
		fprintf(f, "%s", first ? "" : ", ");
		json_chan(f, i ? "in" : "out", &q->chan[i], q->chan_tx[i], q->chan_rx[i]);
		first = false;
	}
	fprintf(f, "], \"counters\": {\"retries\": %llu, \"rnr_naks_received\": %llu, "
		"\"rnr_naks_sent\": %llu, \"error_completions\": %llu, \"direct\": %llu, "
		"\"placed\": %llu, \"lane_tx\": %llu, \"lane_rx\": %llu, ",
		(unsigned long long)q->retries, (unsigned long long)q->rnr_naks_rcvd,
		(unsigned long long)q->rnr_naks_sent, (unsigned long long)q->err_comps,
		(unsigned long long)q->direct, (unsigned long long)q->placed,
		(unsigned long long)q->lane_tx, (unsigned long long)q->lane_rx);
	json_ops(f, "tx", q->tx);
	fprintf(f, ", ");
	json_ops(f, "rx", q->rx);
	fprintf(f, "}}");
}

static void json_other(FILE *f, const struct st_proc *p, uint32_t i)
{
	const void *r = st_slot(p, i);
	char acc[160];

	if (st_kind(p, i) == SVST_CQ) {
		const struct svst_cq *c = r;

		fprintf(f, "{\"cqe\": %u, \"pending\": %u, \"error_completions\": %llu, "
			"\"overruns\": %llu, \"channel\": %s}", c->cqe, c->pushed - c->polled,
			(unsigned long long)c->err_comps, (unsigned long long)c->overruns,
			c->has_channel ? "true" : "false");
	} else if (st_kind(p, i) == SVST_SRQ) {
		const struct svst_srq *s = r;

		fprintf(f, "{\"srqn\": %u, \"xrc\": %s, \"max_wr\": %u, \"limit\": %u, "
			"\"recv_wr_outstanding\": %u}", s->srqn, s->xrc ? "true" : "false",
			s->max_wr, s->limit, s->rq.posted - s->rq.done);
	} else {
		const struct svst_mr *m = r;

		fprintf(f, "{\"addr\": %llu, \"length\": %llu, \"access\": \"%s\", \"pd\": %u",
			(unsigned long long)m->addr, (unsigned long long)m->length,
			st_access(m->access, acc, sizeof(acc)), m->pd);
		if (p->keys)
			fprintf(f, ", \"lkey\": %u, \"rkey\": %u", m->lkey, m->rkey);
		fprintf(f, "}");
	}
}

static void json_proc(FILE *f, const struct st_proc *p)
{
	char addr[ST_ADDR_LEN];

	fprintf(f, "{\"pid\": %u, \"comm\": ", p->hdr.pid);
	json_str(f, p->hdr.comm, sizeof(p->hdr.comm));
	fprintf(f, ", \"uid\": %u, \"device\": ", p->hdr.uid);
	json_str(f, p->hdr.device, sizeof(p->hdr.device));
	fprintf(f, ", \"addr\": \"%s\", \"start_ns\": %llu, \"keys_shown\": %s",
		st_ipv4(p->hdr.addr, addr, sizeof(addr)), (unsigned long long)p->hdr.start_ns,
		p->keys ? "true" : "false");
	for (unsigned kind = SVST_QP; kind < SVST_NKINDS; kind++) {
		bool first = true;

		fprintf(f, ", \"%ss\": [", st_kind_name(kind));
		for (uint32_t i = 0; i < p->hdr.hwm; i++) {
			if (st_kind(p, i) != kind)
				continue;
			fprintf(f, "%s", first ? "" : ", ");
			if (kind == SVST_QP)
				json_qp(f, st_slot(p, i));
			else
				json_other(f, p, i);
			first = false;
		}
		fprintf(f, "]");
	}
	fprintf(f, ", \"not_shown\": {");
	for (unsigned kind = SVST_QP; kind < SVST_NKINDS; kind++)
		fprintf(f, "%s\"%ss\": %u", kind == SVST_QP ? "" : ", ", st_kind_name(kind),
			p->hdr.unshown[kind]);
	fprintf(f, "}, \"busy\": %u}", p->busy);
}

void st_print_json(FILE *f, const struct st_snap *s)
{
	fprintf(f, "{\"version\": %u, \"processes\": [", SVST_VERSION);
	for (size_t i = 0; i < s->n; i++) {
		fprintf(f, "%s", i ? ",\n" : "\n");
		json_proc(f, &s->procs[i]);
	}
	fprintf(f, "\n]}\n");
}
