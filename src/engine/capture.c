/*
 * Packet capture (SOFTVERBS_PCAP=DIR): each message this process sends or
 * receives, written to DIR/softverbs-<program>-<pid>.pcap as the RoCEv2
 * packets a NIC would put on the wire for it (wire/roce.h).  Our frames
 * carry one PSN per message; a NIC's message of N MTU packets takes PSNs
 * p..p+N-1.  So each QP keeps, per direction of requests, a "wire PSN"
 * counter (from the QP's first PSN) and a map from our PSNs to the wire
 * PSNs they were given, which responses (ACK, NAK, READ and atomic
 * responses) look up.  What never becomes a frame here is written as the
 * packets it stands for: ring ACK words as ACKs, direct one-sided accesses
 * as their request and response, pulled SENDs as SENDs of their data.
 * A debugging tool: one mutex serializes it, and each message is flushed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/engine.h"
#include "util/env.h"
#include "util/log.h"
#include "util/pcap.h"
#include "util/tsan.h"
#include "wire/roce.h"

#define CAP_MAP     1024          /* messages a direction remembers (> any window) */
#define CAP_BUCKETS 64
#define PSN_MASK    0xffffffu

bool sv_capture_on;

struct cap_ent {                  /* one message: our PSN -> its wire PSNs */
	uint32_t epsn, wire, npkt, msn;
	bool used;
};

struct cap_dir {                  /* the requests of one direction of a QP */
	bool started;
	uint32_t next, last_e, msn;
	struct cap_ent map[CAP_MAP];
};

struct cap_qp {
	uint32_t qpn;
	struct cap_dir sq, rq;        /* our requests; the peer's */
	uint32_t ud_tx, ud_rx;        /* UD: PSNs of the datagrams */
	bool ud_started;              /* ud_tx began at the QP's sq_psn */
	bool pull_pending;            /* a pulled SEND in, its data not yet copied */
	struct sv_wire_hdr pull_hdr;
	struct cap_qp *next;
};

static struct {
	pthread_mutex_t lock;
	const char *dir;
	FILE *file;
	bool failed;                  /* the file could not be made: said once */
	pid_t pid;                    /* the file's process (a fork opens its own) */
	int cancel_old;               /* the holder's cancel state (cap_begin) */
	struct cap_qp *qps[CAP_BUCKETS];
	uint8_t pkt[SV_ROCE_MAX_PKT];
} cap = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t cap_once = PTHREAD_ONCE_INIT;

static void cap_init_once(void)
{
	cap.dir = sv_pcap_dir();
	sv_capture_on = cap.dir != NULL;
}

void sv_capture_init(void)
{
	pthread_once(&cap_once, cap_init_once);
}

/* ---- the file and the per-QP state (cap.lock held) ---- */

static FILE *cap_file(void)
{
	char name[96];

	if ((cap.file || cap.failed) && cap.pid == getpid())
		return cap.file;
	if (cap.file)                  /* the parent's, flushed: a forked child writes its own */
		fclose(cap.file);
	cap.pid = getpid();
	snprintf(name, sizeof(name), "softverbs-%s-%d.pcap", program_invocation_short_name, (int)cap.pid);
	cap.file = sv_pcap_create(cap.dir, name);
	cap.failed = !cap.file;
	if (cap.failed)
		sv_err("packet capture: cannot create %s/%s: %s", cap.dir, name, strerror(errno));
	return cap.file;
}

static struct cap_qp *cap_qp(uint32_t qpn)
{
	struct cap_qp **b = &cap.qps[qpn % CAP_BUCKETS], *q;

	for (q = *b; q; q = q->next)
		if (q->qpn == qpn)
			return q;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->qpn = qpn;
	q->next = *b;
	*b = q;
	return q;
}

static void dir_start(struct cap_dir *d, uint32_t first)
{
	memset(d->map, 0, sizeof(d->map));
	d->started = true;
	d->next = first;
	d->last_e = (first - 1) & PSN_MASK;
	d->msn = 0;
}

/* The wire PSNs of request `e` of npkt packets: those it had if it was seen
 * before (a retransmission), else the next ones.  A PSN out of sequence
 * starts the direction again (the QP number was reused). */
static struct cap_ent *dir_assign(struct cap_dir *d, uint32_t e, uint32_t npkt)
{
	struct cap_ent *m = &d->map[e % CAP_MAP];

	if (d->started && m->used && m->epsn == e)
		return m;
	if (!d->started || e != ((d->last_e + 1) & PSN_MASK))
		dir_start(d, e);
	d->last_e = e;
	d->msn = (d->msn + 1) & PSN_MASK;
	*m = (struct cap_ent){ .epsn = e, .wire = d->next, .npkt = npkt, .msn = d->msn, .used = true };
	d->next = (d->next + npkt) & PSN_MASK;
	return m;
}

/* A request that took no PSN of ours (a direct access) still takes wire PSNs. */
static struct cap_ent dir_advance(struct cap_dir *d, uint32_t next_e, uint32_t npkt)
{
	struct cap_ent m;

	if (!d->started)
		dir_start(d, next_e);
	d->msn = (d->msn + 1) & PSN_MASK;
	m = (struct cap_ent){ .wire = d->next, .npkt = npkt, .msn = d->msn, .used = true };
	d->next = (d->next + npkt) & PSN_MASK;
	return m;
}

/* What a response to request `e` names; our PSN itself if it was never seen. */
static struct cap_ent dir_lookup(struct cap_dir *d, uint32_t e)
{
	struct cap_ent *m = &d->map[e % CAP_MAP];

	if (d->started && m->used && m->epsn == e)
		return *m;
	return (struct cap_ent){ .epsn = e, .wire = e, .npkt = 1, .msn = e };
}

/* ---- packets ---- */

/* One direction of one QP's traffic: who sends, to whom. */
struct cap_ctx {
	struct sv_qp *qp;
	struct cap_qp *q;
	bool tx;
	uint8_t base;                 /* RC, UC or UD */
	uint32_t mtu;
	struct sv_roce_pkt t;         /* the template: addresses, QPN, fields */
};

static void pull_flush(struct sv_qp *qp, struct cap_qp *q, const struct iovec *dst, int n);

static void ctx_init(struct cap_ctx *x, struct sv_qp *qp, bool tx)
{
	struct sv_node *node = to_sctx(qp->ibqp.qp_base.context)->node;
	uint32_t me = node->addr.s_addr, peer = qp->peer.sin_addr.s_addr;
	enum ibv_qp_type t = qp->ibqp.qp_base.qp_type;
	uint32_t src_qpn = tx ? qp->ibqp.qp_base.qp_num : qp->peer_qpn;

	/* a same-host peer is reached through loopback: it has our device's address */
	if (!peer || (ntohl(peer) >> 24) == 127)
		peer = me;
	memset(x, 0, sizeof(*x));
	x->qp = qp;
	x->q = cap_qp(qp->ibqp.qp_base.qp_num);
	x->tx = tx;
	x->base = t == IBV_QPT_UD ? SV_ROCE_UD : t == IBV_QPT_UC ? SV_ROCE_UC : SV_ROCE_RC;
	x->mtu = qp->attr.path_mtu >= IBV_MTU_256 && qp->attr.path_mtu <= IBV_MTU_4096 ?
		 128u << qp->attr.path_mtu : SV_WIRE_MTU;
	x->t.sip = tx ? me : peer;
	x->t.dip = tx ? peer : me;
	x->t.dqpn = tx ? qp->peer_qpn : qp->ibqp.qp_base.qp_num;
	x->t.sport = 0xc000 | (src_qpn & 0x3fff);     /* RoCEv2: the flow's entropy */
	if (x->q && x->q->pull_pending)
		pull_flush(qp, x->q, NULL, 0);
}

static void emit_request(struct cap_ctx *x, const struct sv_wire_hdr *h, const struct iovec *iov,
			 int n, uint64_t len);

/* The pulled SEND that came in: with its data once copied (dst), else
 * (no receive, an error, a duplicate) with zeros before what follows. */
static void pull_flush(struct sv_qp *qp, struct cap_qp *q, const struct iovec *dst, int n)
{
	struct sv_wire_hdr h = q->pull_hdr;
	struct cap_ctx x;

	q->pull_pending = false;
	h.flags &= ~SV_WF_PULL;
	ctx_init(&x, qp, false);
	emit_request(&x, &h, dst, n, h.rlen);
}

static void emit(struct cap_ctx *x, struct sv_roce_pkt *p)
{
	size_t n = sv_roce_encode(p, cap.pkt);
	FILE *f = n ? cap_file() : NULL;

	if (f)
		sv_pcap_record(f, cap.pkt, n);
}

/* Copy len bytes at offset off of iov[0..n) (zeros without iov). */
static void gather(uint8_t *dst, const struct iovec *iov, int n, size_t off, size_t len)
{
	if (!iov) {
		memset(dst, 0, len);
		return;
	}
	sv_dma_begin();     /* application memory (util/tsan.h) */
	for (int i = 0; i < n && len; i++) {
		size_t k;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		k = iov[i].iov_len - off < len ? iov[i].iov_len - off : len;
		memcpy(dst, (const uint8_t *)iov[i].iov_base + off, k);
		dst += k;
		len -= k;
		off = 0;
	}
	sv_dma_end();
	memset(dst, 0, len);
}

static uint32_t npkts(const struct cap_ctx *x, uint64_t len)
{
	return len ? (uint32_t)((len + x->mtu - 1) / x->mtu) : 1;
}

/* Opcodes of a segmented message: first, middle, last, only. */
struct seg_ops { uint8_t first, middle, last, only; };
static const struct seg_ops seg_send = { SV_ROCE_SEND_FIRST, SV_ROCE_SEND_MIDDLE, SV_ROCE_SEND_LAST, SV_ROCE_SEND_ONLY };
static const struct seg_ops seg_send_imm = { SV_ROCE_SEND_FIRST, SV_ROCE_SEND_MIDDLE, SV_ROCE_SEND_LAST_IMM, SV_ROCE_SEND_ONLY_IMM };
static const struct seg_ops seg_send_inv = { SV_ROCE_SEND_FIRST, SV_ROCE_SEND_MIDDLE, SV_ROCE_SEND_LAST_INV, SV_ROCE_SEND_ONLY_INV };
static const struct seg_ops seg_write = { SV_ROCE_WRITE_FIRST, SV_ROCE_WRITE_MIDDLE, SV_ROCE_WRITE_LAST, SV_ROCE_WRITE_ONLY };
static const struct seg_ops seg_write_imm = { SV_ROCE_WRITE_FIRST, SV_ROCE_WRITE_MIDDLE, SV_ROCE_WRITE_LAST_IMM, SV_ROCE_WRITE_ONLY_IMM };
static const struct seg_ops seg_read = { SV_ROCE_READ_RESP_FIRST, SV_ROCE_READ_RESP_MIDDLE, SV_ROCE_READ_RESP_LAST, SV_ROCE_READ_RESP_ONLY };

/* A message of len bytes from iov, one packet per MTU from wire PSN psn;
 * the encoder's table keeps each header on the packets that carry it. */
static void emit_message(struct cap_ctx *x, struct sv_roce_pkt *p, const struct seg_ops *ops,
			 const struct iovec *iov, int n, uint64_t len, bool ackreq)
{
	uint32_t np = npkts(x, len), psn = p->psn;
	uint8_t data[SV_WIRE_MTU];

	for (uint32_t i = 0; i < np; i++) {
		uint64_t off = (uint64_t)i * x->mtu;
		uint32_t k = len - off < x->mtu ? (uint32_t)(len - off) : x->mtu;
		bool first = i == 0, last = i == np - 1;

		p->opcode = x->base | (np == 1 ? ops->only : first ? ops->first : last ? ops->last : ops->middle);
		p->psn = (psn + i) & PSN_MASK;
		p->ackreq = ackreq && last;
		gather(data, iov, n, off, k);
		p->payload = data;
		p->len = k;
		emit(x, p);
	}
}

static void emit_aeth(struct cap_ctx *x, uint8_t op, uint32_t psn, uint8_t syndrome, uint32_t msn,
		      uint64_t orig)
{
	struct sv_roce_pkt p = x->t;

	if (x->base != SV_ROCE_RC)
		return;                    /* UC: no acknowledgements on the wire */
	p.opcode = x->base | op;
	p.psn = psn;
	p.syndrome = syndrome;
	p.msn = msn;
	p.orig = orig;
	emit(x, &p);
}

/* An ACK of our PSN e of direction d: the wire PSN of its last packet. */
static void emit_ack(struct cap_ctx *x, struct cap_dir *d, uint32_t e)
{
	struct cap_ent m = dir_lookup(d, e);

	emit_aeth(x, SV_ROCE_ACK, (m.wire + m.npkt - 1) & PSN_MASK, SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT,
		  m.msn, 0);
}

static const uint8_t nak_syndrome[] = {
	[SV_NAK_INV_REQ] = SV_ROCE_AETH_NAK | 1,
	[SV_NAK_REM_ACCESS] = SV_ROCE_AETH_NAK | 2,
	[SV_NAK_REM_OP] = SV_ROCE_AETH_NAK | 3,
};

static void emit_nak(struct cap_ctx *x, struct cap_dir *d, const struct sv_wire_hdr *h)
{
	struct cap_ent m = dir_lookup(d, h->psn);
	uint8_t syn = h->imm == SV_NAK_RNR ? SV_ROCE_AETH_RNR | (h->data0 & 0x1f) :
		      h->imm < sizeof(nak_syndrome) ? nak_syndrome[h->imm] : SV_ROCE_AETH_NAK | 3;

	emit_aeth(x, SV_ROCE_ACK, m.wire, syn, (m.msn - 1) & PSN_MASK, 0);
}

static const struct seg_ops *send_ops(uint8_t op)
{
	return op == SV_OP_SEND_IMM ? &seg_send_imm : op == SV_OP_SEND_INV ? &seg_send_inv : &seg_send;
}

/* A request of ours (tx) or the peer's (rx), in host order; its payload
 * iov[0..n) (NULL: unknown, written as zeros), len bytes. */
static void emit_request(struct cap_ctx *x, const struct sv_wire_hdr *h, const struct iovec *iov,
			 int n, uint64_t len)
{
	struct cap_dir *d = x->tx ? &x->q->sq : &x->q->rq;
	uint64_t span = h->opcode == SV_OP_READ_REQ ? h->rlen : len;
	bool rc = x->base == SV_ROCE_RC;
	struct cap_ent *m;
	struct sv_roce_pkt p = x->t;

	if (h->flags & SV_WF_ACK)          /* a carried ACK is a packet of its own */
		emit_ack(x, x->tx ? &x->q->rq : &x->q->sq, h->ack_psn);
	m = dir_assign(d, h->psn, h->opcode == SV_OP_CMP_SWP || h->opcode == SV_OP_FETCH_ADD ? 1 : npkts(x, span));
	p.psn = m->wire;
	p.se = h->flags & SV_WF_SOLICITED;
	p.imm = h->imm;
	p.ieth = h->imm;
	p.va = h->va;
	p.rkey = h->rkey;
	p.dmalen = (uint32_t)span;
	switch (h->opcode) {
	case SV_OP_SEND: case SV_OP_SEND_IMM: case SV_OP_SEND_INV:
		emit_message(x, &p, send_ops(h->opcode), iov, n, len, rc);
		break;
	case SV_OP_WRITE: case SV_OP_WRITE_IMM:
		emit_message(x, &p, h->opcode == SV_OP_WRITE_IMM ? &seg_write_imm : &seg_write, iov, n,
			     len, rc);
		break;
	case SV_OP_READ_REQ: case SV_OP_CMP_SWP: case SV_OP_FETCH_ADD: case SV_OP_ATOMIC_WRITE: {
		uint64_t v = h->data0;     /* ATOMIC_WRITE: its 8 bytes, as the application gave them */

		p.opcode = x->base | (h->opcode == SV_OP_READ_REQ ? SV_ROCE_READ_REQ :
				      h->opcode == SV_OP_CMP_SWP ? SV_ROCE_CMP_SWP :
				      h->opcode == SV_OP_FETCH_ADD ? SV_ROCE_FETCH_ADD : SV_ROCE_ATOMIC_WRITE);
		p.ackreq = true;
		p.swap_add = h->data0;
		p.compare = h->data1;
		if (h->opcode == SV_OP_ATOMIC_WRITE) {
			p.dmalen = 8;
			p.payload = (const uint8_t *)&v;
			p.len = 8;
		}
		emit(x, &p);
		break;
	}
	}
}

/* A response of the peer's (rx) or ours (tx) to request h->psn. */
static void emit_response(struct cap_ctx *x, const struct sv_wire_hdr *h, const struct iovec *iov,
			  int n, uint64_t len)
{
	struct cap_dir *d = x->tx ? &x->q->rq : &x->q->sq;
	struct cap_ent m;
	struct sv_roce_pkt p = x->t;

	switch (h->opcode) {
	case SV_OP_ACK:
		emit_ack(x, d, h->psn);
		break;
	case SV_OP_NAK:
		emit_nak(x, d, h);
		break;
	case SV_OP_READ_RESP:
		m = dir_lookup(d, h->psn);
		p.psn = m.wire;
		p.syndrome = SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT;
		p.msn = m.msn;
		emit_message(x, &p, &seg_read, iov, n, len, false);
		break;
	case SV_OP_ATOMIC_RESP:
		m = dir_lookup(d, h->psn);
		emit_aeth(x, SV_ROCE_ATOMIC_ACK, m.wire, SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT, m.msn,
			  h->data0);
		break;
	}
}

static void emit_frame(struct cap_ctx *x, const struct sv_wire_hdr *h, const struct iovec *iov,
		       int n, uint64_t len)
{
	const struct sv_opinfo *oi = sv_op_info(h->opcode);

	/* channel management: no packet stands for it; a placed SEND's were
	 * written when it was placed (sv_capture_placed), and only there */
	if (!oi || (oi->flags & (SV_OPF_CTRL | SV_OPF_PLACED)))
		return;
	if (oi->flags & SV_OPF_RESP)
		emit_response(x, h, iov, n, len);
	else
		emit_request(x, h, iov, n, len);
}

/* The hooks run inside verbs that hold QP locks: stdio's writes must not
 * be cancellation points there (util/sys.h). */
static void cap_begin(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	pthread_mutex_lock(&cap.lock);
	cap.cancel_old = old;
}

static void cap_end(void)
{
	int old = cap.cancel_old;

	if (cap.file)
		fflush(cap.file);    /* cancellation off (cap_begin) */
	pthread_mutex_unlock(&cap.lock);
	pthread_setcancelstate(old, NULL);
}

/* ---- the hooks (engine/capture.h); the QP's lock is held ---- */

void sv_capture_tx(struct sv_conn *c, const struct sv_txframe *f, ssize_t wrote)
{
	struct sv_wire_hdr h = f->hdr;
	struct iovec pulled[SV_WIRE_MAX_SGE];
	const struct iovec *iov = f->seg;
	int n = f->nseg;
	uint64_t len;
	struct cap_ctx x;

	if (wrote <= 0 || f->done + (size_t)wrote != f->total || !c->qc->qp || !sv_wire_decode(&h))
		return;                    /* not its last piece */
	len = h.len;
	if (h.flags & SV_WF_PULL) {        /* the descriptors name our own memory */
		n = h.len / sizeof(struct sv_wire_pull);
		for (int i = 0; i < n; i++)
			pulled[i] = (struct iovec){ (void *)(uintptr_t)c->qc->pull->desc[i].addr,
						    c->qc->pull->desc[i].len };
		iov = pulled;
		len = h.rlen;
	}
	cap_begin();
	ctx_init(&x, c->qc->qp, true);
	if (x.q)
		emit_frame(&x, &h, iov, n, len);
	cap_end();
}

void sv_capture_rx(struct sv_conn *c)
{
	const struct sv_wire_hdr *h = &c->qc->rx_hdr;
	const struct sv_place *pl = &c->qc->place;
	bool have;
	struct cap_ctx x;

	if (!c->qc->qp)
		return;
	/* a pulled SEND is written when pulled (sv_capture_pulled); the flag
	 * means something else on a HELLO_ACK, which is no packet at all */
	if ((h->flags & SV_WF_PULL) && sv_op_info(h->opcode) &&
	    (sv_op_info(h->opcode)->flags & SV_OPF_RECV)) {
		cap_begin();
		ctx_init(&x, c->qc->qp, false);
		if (x.q) {
			x.q->pull_hdr = *h;
			x.q->pull_pending = true;
		}
		cap_end();
		return;
	}
	sv_mr_rdlock();                    /* the payload is in registered memory */
	have = !pl->discard && pl->epoch == sv_mr_epoch;
	cap_begin();
	ctx_init(&x, c->qc->qp, false);
	if (x.q)
		emit_frame(&x, h, have ? pl->seg : NULL, have ? pl->nseg : 0, h->len);
	cap_end();
	sv_mr_unlock();
}

void sv_capture_ack_word(struct sv_qp *qp, uint32_t psn, bool tx)
{
	struct cap_ctx x;

	cap_begin();
	ctx_init(&x, qp, tx);
	if (x.q)
		emit_ack(&x, tx ? &x.q->rq : &x.q->sq, psn);
	cap_end();
}

void sv_capture_pulled(struct sv_qp *qp, const struct iovec *dst, int n)
{
	struct cap_qp *q;

	cap_begin();
	q = cap_qp(qp->ibqp.qp_base.qp_num);
	if (q && q->pull_pending)
		pull_flush(qp, q, dst, n);
	cap_end();
}

/* A direct access as its request, then the response the peer's NIC would
 * send; it took no PSN of ours, so only the wire PSNs advance.  (The peer
 * never sees it: its own capture has nothing of it.) */
void sv_capture_direct(struct sv_qp *qp, const struct sv_direct *d)
{
	struct sv_wire_hdr h = { .va = d->raddr, .rkey = d->rkey, .rlen = (uint32_t)d->len,
				 .data0 = d->cmp_swp ? d->swap : d->compare_add, .data1 = d->compare_add };
	bool atomic = d->need == IBV_ACCESS_REMOTE_ATOMIC;
	struct cap_ctx x, y;
	struct cap_ent m;
	uint64_t orig = 0;
	struct sv_roce_pkt p;

	cap_begin();
	ctx_init(&x, qp, true);
	ctx_init(&y, qp, false);
	if (!x.q)
		goto out;
	m = dir_advance(&x.q->sq, qp->next_psn, atomic ? 1 : npkts(&x, d->len));
	p = x.t;
	p.psn = m.wire;
	p.va = h.va;
	p.rkey = h.rkey;
	p.dmalen = (uint32_t)d->len;
	if (d->to_remote) {
		emit_message(&x, &p, &seg_write, d->iov, d->n, d->len, true);
		emit_aeth(&y, SV_ROCE_ACK, (m.wire + m.npkt - 1) & PSN_MASK,
			  SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT, m.msn, 0);
	} else if (!atomic) {
		p.opcode = x.base | SV_ROCE_READ_REQ;
		p.ackreq = true;
		emit(&x, &p);
		p = y.t;
		p.psn = m.wire;
		p.syndrome = SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT;
		p.msn = m.msn;
		emit_message(&y, &p, &seg_read, d->iov, d->n, d->len, false);
	} else {
		p.opcode = x.base | (d->cmp_swp ? SV_ROCE_CMP_SWP : SV_ROCE_FETCH_ADD);
		p.ackreq = true;
		p.swap_add = h.data0;
		p.compare = d->cmp_swp ? d->compare_add : 0;
		emit(&x, &p);
		gather((uint8_t *)&orig, d->iov, d->n, 0, 8);
		emit_aeth(&y, SV_ROCE_ATOMIC_ACK, m.wire, SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT, m.msn,
			  orig);
	}
out:
	cap_end();
}

/* A placed SEND (engine/placed.c) as its packets (ctx x, wire PSNs of
 * direction d from next_e on, as a direct access's) and the ACK the
 * responder's NIC would send (ctx y).  Both ends write it: the requester
 * when it places it, the responder when it takes it. */
static void emit_placed(struct cap_ctx *x, struct cap_ctx *y, struct cap_dir *d, uint32_t next_e,
			const struct sv_wire_hdr *h, const struct iovec *iov, int n)
{
	struct cap_ent m = dir_advance(d, next_e, npkts(x, h->rlen));
	struct sv_roce_pkt p = x->t;

	p.psn = m.wire;
	p.se = h->flags & SV_WF_SOLICITED;
	p.imm = h->imm;
	p.dmalen = h->rlen;
	emit_message(x, &p, h->opcode == SV_OP_PLACED_IMM ? &seg_send_imm : &seg_send, iov, n,
		     h->rlen, true);
	emit_aeth(y, SV_ROCE_ACK, (m.wire + m.npkt - 1) & PSN_MASK,
		  SV_ROCE_AETH_ACK | SV_ROCE_AETH_NO_CREDIT, m.msn, 0);
}

void sv_capture_placed(struct sv_qp *qp, const struct sv_wire_hdr *h, const struct iovec *iov,
		       int n)
{
	struct cap_ctx x, y;

	cap_begin();
	ctx_init(&x, qp, true);
	ctx_init(&y, qp, false);
	if (x.q)
		emit_placed(&x, &y, &x.q->sq, qp->next_psn, h, iov, n);
	cap_end();
}

void sv_capture_placed_rx(struct sv_qp *qp, const struct sv_wire_hdr *h)
{
	struct sv_sge sge = qp->rctx.wqe->sge[0];
	struct iovec seg[1];
	struct cap_ctx x, y;
	size_t total;
	int n = 0;

	sge.length = h->rlen;
	sv_mr_rdlock();                    /* the payload is in registered memory */
	if (h->rlen && sv_sges_translate(qp->rctx.pd, &sge, 1, SV_LOCAL_WRITE, seg, &n, &total) !=
	    IBV_WC_SUCCESS)
		n = 0;
	cap_begin();
	ctx_init(&x, qp, false);
	ctx_init(&y, qp, true);
	if (x.q)
		emit_placed(&x, &y, &x.q->rq, qp->epsn, h, n ? seg : NULL, n);
	cap_end();
	sv_mr_unlock();
}

/* ---- UD: one packet per datagram, DETH naming the sender ---- */

static void emit_ud(struct cap_ctx *x, const struct sv_wire_hdr *h, uint32_t psn,
		    const struct iovec *iov, int n)
{
	struct sv_roce_pkt p = x->t;

	p.psn = psn;
	p.se = h->flags & SV_WF_SOLICITED;
	p.imm = h->imm;
	p.qkey = h->qkey;
	p.sqpn = h->src_qpn;
	emit_message(x, &p, h->opcode == SV_OP_SEND_IMM ? &seg_send_imm : &seg_send, iov, n, h->len, false);
}

void sv_capture_ud_tx(struct sv_qp *qp, const struct sv_wire_hdr *h, const struct iovec *seg, int n,
		      struct in_addr dst)
{
	struct sv_wire_hdr s = *h;
	struct cap_ctx x;

	if (n < 0 || !sv_wire_decode(&s))
		return;                    /* not sent */
	cap_begin();
	ctx_init(&x, qp, true);
	if (x.q) {
		x.t.dip = dst.s_addr;
		x.t.dqpn = s.dst_qpn;
		x.mtu = SV_WIRE_MTU;
		if (!x.q->ud_started)
			x.q->ud_tx = qp->attr.sq_psn;
		x.q->ud_started = true;
		emit_ud(&x, &s, x.q->ud_tx, seg, n);
		x.q->ud_tx = (x.q->ud_tx + 1) & PSN_MASK;
	}
	cap_end();
}

void sv_capture_ud_rx(struct sv_qp *qp, const struct sv_wire_hdr *h, const uint8_t *payload,
		      struct in_addr src)
{
	struct iovec one = { (void *)payload, h->len };
	struct cap_ctx x;

	cap_begin();
	ctx_init(&x, qp, false);
	if (x.q) {
		x.t.sip = src.s_addr;
		x.t.sport = 0xc000 | (h->src_qpn & 0x3fff);
		x.mtu = SV_WIRE_MTU;
		emit_ud(&x, h, x.q->ud_rx, &one, 1);
		x.q->ud_rx = (x.q->ud_rx + 1) & PSN_MASK;
	}
	cap_end();
}
