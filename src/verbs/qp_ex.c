/*
 * The extended send API (ibv_qp_ex, ibv_wr_*(3)): builders fill one work
 * request at a time and hand it to the same queueing path as ibv_post_send.
 */
#include <errno.h>
#include <string.h>

#include "engine/api.h"
#include "verbs/sv.h"

static struct sv_qp *xqp(struct ibv_qp_ex *q) { return to_sqp_ex(q); }

/* Queue the WR being built, if any. */
static void commit_pending(struct sv_qp *qp)
{
	int ret;

	if (!qp->ex_pending)
		return;
	qp->ex_pending = false;
	if (qp->wr_err)
		return;
	ret = sv_sq_enqueue(qp, &qp->ex->wr);
	if (ret)
		qp->wr_err = ret;
}

static void begin(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
	struct sv_qp *qp = xqp(q);

	commit_pending(qp);
	memset(&qp->ex->wr, 0, sizeof(qp->ex->wr));
	qp->ex->wr.wr_id = q->wr_id;
	qp->ex->wr.send_flags = q->wr_flags;
	qp->ex->wr.opcode = op;
	qp->ex->wr.sg_list = qp->ex->sge;
	qp->ex_pending = true;
}

static void x_send(struct ibv_qp_ex *q) { begin(q, IBV_WR_SEND); }

static void x_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	begin(q, IBV_WR_SEND_WITH_IMM);
	xqp(q)->ex->wr.imm_data = imm;
}

static void rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr)
{
	begin(q, op);
	xqp(q)->ex->wr.wr.rdma.rkey = rkey;
	xqp(q)->ex->wr.wr.rdma.remote_addr = addr;
}

static void x_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	rdma(q, IBV_WR_RDMA_WRITE, rkey, addr);
}

static void x_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr);
	xqp(q)->ex->wr.imm_data = imm;
}

static void x_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	rdma(q, IBV_WR_RDMA_READ, rkey, addr);
}

static void atomic(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct sv_qp *qp = xqp(q);

	begin(q, op);
	qp->ex->wr.wr.atomic.rkey = rkey;
	qp->ex->wr.wr.atomic.remote_addr = addr;
	qp->ex->wr.wr.atomic.compare_add = compare_add;
	qp->ex->wr.wr.atomic.swap = swap;
}

static void x_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t compare,
		      uint64_t swap)
{
	atomic(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void x_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add)
{
	atomic(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

/* Operations the device does not have: the WR list fails at wr_complete. */
static void x_unsupported(struct sv_qp *qp)
{
	commit_pending(qp);
	qp->wr_err = EOPNOTSUPP;
}

static void x_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
		      const struct ibv_mw_bind_info *info)
{
	begin(q, IBV_WR_BIND_MW);
	xqp(q)->ex->wr.bind_mw.mw = mw;
	xqp(q)->ex->wr.bind_mw.rkey = rkey;
	xqp(q)->ex->wr.bind_mw.bind_info = *info;
}

static void x_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	begin(q, IBV_WR_LOCAL_INV);
	xqp(q)->ex->wr.invalidate_rkey = rkey;
}

static void x_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	begin(q, IBV_WR_SEND_WITH_INV);
	xqp(q)->ex->wr.invalidate_rkey = rkey;
}
static void x_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t sz, uint16_t mss)
{
	x_unsupported(xqp(q));
}
static void x_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
	xqp(q)->ex->wr.qp_type.xrc.remote_srqn = srqn;
}
/* ibv_wr_atomic_write(3): the 8 bytes at `wr` are copied now. */
static void x_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, const void *wr)
{
	struct sv_qp *qp = xqp(q);

	rdma(q, IBV_WR_ATOMIC_WRITE, rkey, addr);
	memcpy(qp->ex->inline_data, wr, 8);
	qp->ex->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)qp->ex->inline_data, .length = 8 };
	qp->ex->wr.num_sge = 1;
}

static void x_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct sv_qp *qp = xqp(q);

	qp->ex->wr.wr.ud.ah = ah;
	qp->ex->wr.wr.ud.remote_qpn = qpn;
	qp->ex->wr.wr.ud.remote_qkey = qkey;
}

static void x_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct sv_qp *qp = xqp(q);

	qp->ex->sge[0] = (struct ibv_sge){ .addr = addr, .length = length, .lkey = lkey };
	qp->ex->wr.num_sge = 1;
}

static void x_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *list)
{
	struct sv_qp *qp = xqp(q);

	if (n > SV_MAX_SGE) {
		qp->wr_err = EINVAL;
		return;
	}
	memcpy(qp->ex->sge, list, n * sizeof(*list));
	qp->ex->wr.num_sge = (int)n;
}

static void x_inline_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *bufs)
{
	struct sv_qp *qp = xqp(q);
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		if (off + bufs[i].length > sizeof(qp->ex->inline_data)) {
			qp->wr_err = EINVAL;
			return;
		}
		memcpy(qp->ex->inline_data + off, bufs[i].addr, bufs[i].length);
		off += bufs[i].length;
	}
	qp->ex->sge[0] = (struct ibv_sge){ .addr = (uintptr_t)qp->ex->inline_data,
					  .length = (uint32_t)off };
	qp->ex->wr.num_sge = 1;
	qp->ex->wr.send_flags |= IBV_SEND_INLINE;
}

static void x_inline(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	x_inline_list(q, 1, &b);
}

static void x_start(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = xqp(q);

	sv_qlock_lock(&qp->lock);
	qp->wr_err = 0;
	qp->ex_pending = false;
	qp->wr_start_tail = qp->sq.tail;
}

static void rollback(struct sv_qp *qp)
{
	qp->sq.tail = qp->wr_start_tail;
	qp->ex_pending = false;
}

static int x_complete(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = xqp(q);
	uint32_t peer = 0;
	bool loop = false;
	int ret;

	commit_pending(qp);
	ret = qp->wr_err;
	if (!ret && qp->attr.qp_state != IBV_QPS_RTS && qp->attr.qp_state != IBV_QPS_SQD &&
	    qp->attr.qp_state != IBV_QPS_ERR)
		ret = EINVAL;
	if (ret) {
		rollback(qp);       /* ibv_wr_complete(3): on error nothing is posted */
	} else {
		sv_sq_doorbell(qp);
		loop = sv_engine_loopback_peer(qp, &peer);
	}
	sv_qp_unlock(qp);
	if (loop)
		sv_engine_loopback(to_sctx(qp->ibqp.qp_base.context)->node, peer);
	return ret;
}

static void x_abort(struct ibv_qp_ex *q)
{
	struct sv_qp *qp = xqp(q);

	rollback(qp);
	sv_qp_unlock(qp);
}

void sv_qp_init_ex_ops(struct sv_qp *qp)
{
	struct ibv_qp_ex *q = &qp->ibqp;

	q->comp_mask = 0;
	q->wr_atomic_cmp_swp = x_cmp_swp;
	q->wr_atomic_fetch_add = x_fetch_add;
	q->wr_bind_mw = x_bind_mw;
	q->wr_local_inv = x_local_inv;
	q->wr_rdma_read = x_read;
	q->wr_rdma_write = x_write;
	q->wr_rdma_write_imm = x_write_imm;
	q->wr_send = x_send;
	q->wr_send_imm = x_send_imm;
	q->wr_send_inv = x_send_inv;
	q->wr_send_tso = x_send_tso;
	q->wr_set_ud_addr = x_ud_addr;
	q->wr_set_xrc_srqn = x_xrc_srqn;
	q->wr_set_inline_data = x_inline;
	q->wr_set_inline_data_list = x_inline_list;
	q->wr_set_sge = x_sge;
	q->wr_set_sge_list = x_sge_list;
	q->wr_start = x_start;
	q->wr_complete = x_complete;
	q->wr_abort = x_abort;
	q->wr_atomic_write = x_atomic_write;
}
