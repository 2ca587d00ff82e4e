/*
 * softverbs stat: the counters of every QP the caller may see (like `rdma
 * stat`), and with -w SECONDS their rates over each interval, -n COUNT
 * intervals (default: until interrupted).  A QP is the same one in two
 * snapshots when its process (pid, start) and its record (slot, gen) are.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/status.h"

struct totals {
	uint64_t tx_msgs, tx_bytes, rx_msgs, rx_bytes;
};

static struct totals qp_totals(const struct svst_qp *q)
{
	struct totals t = { 0 };

	for (unsigned op = 0; op < SVST_NOPS; op++) {
		t.tx_msgs += q->tx[op].msgs;
		t.tx_bytes += q->tx[op].bytes;
		t.rx_msgs += q->rx[op].msgs;
		t.rx_bytes += q->rx[op].bytes;
	}
	return t;
}

static void qp_head(const struct st_proc *p, const struct svst_qp *q)
{
	printf("pid %u %.16s qp %#x %s %s", p->hdr.pid, p->hdr.comm, q->qpn, st_qp_type(q->type),
	       st_qp_state(q->state));
}

static void show_totals(const struct st_proc *p, const struct svst_qp *q)
{
	struct totals t = qp_totals(q);

	qp_head(p, q);
	printf("  tx %llu msgs %llu bytes  rx %llu msgs %llu bytes  retries %llu "
	       "rnr-naks %llu/%llu error-comps %llu\n",
	       (unsigned long long)t.tx_msgs, (unsigned long long)t.tx_bytes,
	       (unsigned long long)t.rx_msgs, (unsigned long long)t.rx_bytes,
	       (unsigned long long)q->retries, (unsigned long long)q->rnr_naks_rcvd,
	       (unsigned long long)q->rnr_naks_sent, (unsigned long long)q->err_comps);
}

/* The same QP in an earlier snapshot, or NULL. */
static const struct svst_qp *find_prev(const struct st_snap *prev, const struct st_proc *p,
				       uint32_t slot)
{
	const struct svst_qp *q = st_slot(p, slot);

	for (size_t i = 0; i < prev->n; i++) {
		const struct st_proc *o = &prev->procs[i];
		const struct svst_qp *oq;

		if (o->hdr.pid != p->hdr.pid || o->hdr.start_ns != p->hdr.start_ns ||
		    slot >= o->hdr.hwm || st_kind(o, slot) != SVST_QP)
			continue;
		oq = st_slot(o, slot);
		return oq->h.gen == q->h.gen ? oq : NULL;
	}
	return NULL;
}

static double rate(uint64_t now, uint64_t before, double secs)
{
	return now >= before ? (double)(now - before) / secs : 0;
}

static void show_rates(const struct st_proc *p, const struct svst_qp *q,
		       const struct svst_qp *o, double secs)
{
	struct totals t = qp_totals(q), b = qp_totals(o);

	qp_head(p, q);
	printf("  tx %.0f msg/s %.2f MB/s  rx %.0f msg/s %.2f MB/s  retries %.0f/s "
	       "rnr-naks %.0f/s error-comps %.0f/s\n",
	       rate(t.tx_msgs, b.tx_msgs, secs), rate(t.tx_bytes, b.tx_bytes, secs) / 1e6,
	       rate(t.rx_msgs, b.rx_msgs, secs), rate(t.rx_bytes, b.rx_bytes, secs) / 1e6,
	       rate(q->retries, o->retries, secs),
	       rate(q->rnr_naks_rcvd + q->rnr_naks_sent, o->rnr_naks_rcvd + o->rnr_naks_sent, secs),
	       rate(q->err_comps, o->err_comps, secs));
	for (unsigned op = 0; op < SVST_NOPS; op++) {
		if (q->tx[op].msgs == o->tx[op].msgs && q->rx[op].msgs == o->rx[op].msgs)
			continue;
		printf("    %-12s tx %.0f msg/s %.2f MB/s  rx %.0f msg/s %.2f MB/s\n",
		       st_op_name(op), rate(q->tx[op].msgs, o->tx[op].msgs, secs),
		       rate(q->tx[op].bytes, o->tx[op].bytes, secs) / 1e6,
		       rate(q->rx[op].msgs, o->rx[op].msgs, secs),
		       rate(q->rx[op].bytes, o->rx[op].bytes, secs) / 1e6);
	}
}

/* Every QP of `cur`: its totals, or (with `prev`) its rates since. */
static void show(const struct st_snap *cur, const struct st_snap *prev)
{
	double secs = prev ? (double)(cur->when_ns - prev->when_ns) / 1e9 : 0;

	for (size_t i = 0; i < cur->n; i++) {
		const struct st_proc *p = &cur->procs[i];

		for (uint32_t s = 0; s < p->hdr.hwm; s++) {
			const struct svst_qp *o;

			if (st_kind(p, s) != SVST_QP)
				continue;
			if (!prev)
				show_totals(p, st_slot(p, s));
			else if ((o = find_prev(prev, p, s)))
				show_rates(p, st_slot(p, s), o, secs);
		}
	}
	fflush(stdout);
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts))
		;
}

int sv_cli_stat(int argc, char **argv)
{
	struct st_opts o;
	struct st_snap prev, cur;

	if (st_parse(argc, argv, &o, true) || st_snap_take(&prev, o.dir))
		return 1;
	if (!o.wait_s) {
		show(&prev, NULL);
		st_snap_free(&prev);
		return 0;
	}
	for (long k = 1; !o.count || k <= o.count; k++) {
		sleep_s(o.wait_s);
		if (st_snap_take(&cur, o.dir)) {
			st_snap_free(&prev);
			return 1;
		}
		printf("--- interval %ld (%.2f s)\n", k, (double)(cur.when_ns - prev.when_ns) / 1e9);
		show(&cur, &prev);
		st_snap_free(&prev);
		prev = cur;
	}
	st_snap_free(&prev);
	return 0;
}
