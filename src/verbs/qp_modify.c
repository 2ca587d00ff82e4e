/*
 * The QP state machine: which transitions exist, which attributes each one
 * requires and allows per QP type (the InfiniBand spec's modify-QP table),
 * and what each transition does.  A wrong mask is EINVAL.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/api.h"
#include "util/cap.h"
#include "util/log.h"
#include "util/names.h"
#include "verbs/sv.h"

/* XI: XRC initiator (XRC_SEND), XT: XRC target (XRC_RECV). */
enum { T_RC, T_UC, T_UD, T_XI, T_XT, T_NTYPES };

struct sv_transition {
	uint32_t req[T_NTYPES];
	uint32_t opt[T_NTYPES];
	bool valid;
};

#define RC_UC(x) { [T_RC] = (x), [T_UC] = (x) }

/* What RESET->INIT requires, INIT->INIT may change. */
#define INIT_ATTRS {								\
	[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,		\
	[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,		\
	[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,			\
	[T_XI] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,		\
	[T_XT] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS }

/* RTS->RTS and SQD->RTS may change the same attributes: the QP is (back) in RTS. */
#define RTS_AGAIN_ATTRS {							\
	[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,			\
	[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		 IBV_QP_PATH_MIG_STATE,						\
	[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,				\
	[T_XI] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		 IBV_QP_PATH_MIG_STATE,						\
	[T_XT] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER }

static const struct sv_transition qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_INIT]  = { .valid = true, .req = INIT_ATTRS },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_INIT]  = { .valid = true, .opt = INIT_ATTRS },
		[IBV_QPS_RTR]   = { .valid = true,
			.req = { [T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER,
				 [T_UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN,
				 [T_XI] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN,
				 [T_XT] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER },
			.opt = { [T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				 [T_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				 [T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				 [T_XI] = IBV_QP_ALT_PATH | IBV_QP_PKEY_INDEX,
				 [T_XT] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX } },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_RTS]   = { .valid = true,
			.req = { [T_RC] = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				 [T_UC] = IBV_QP_SQ_PSN, [T_UD] = IBV_QP_SQ_PSN,
				 [T_XI] = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
				 [T_XT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN },
			.opt = { [T_RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
				 [T_UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_PATH_MIG_STATE,
				 [T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				 [T_XI] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_PATH_MIG_STATE,
				 [T_XT] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE } },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_RTS]   = { .valid = true, .opt = RTS_AGAIN_ATTRS },
		[IBV_QPS_SQD]   = { .valid = true,
			.opt = { [T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY, [T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_XI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [T_XT] = IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_RTS]   = { .valid = true, .opt = RTS_AGAIN_ATTRS },
		[IBV_QPS_SQD]   = { .valid = true,
			.opt = { [T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY | IBV_QP_AV |
					  IBV_QP_ACCESS_FLAGS | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
					  IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE,
				 [T_UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					  IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
				 [T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
		[IBV_QPS_RTS]   = { .valid = true,
			.opt = { [T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				 [T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY } },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR]   = { .valid = true },
	},
};

SV_NAME_TABLE(sv_qp_state_name, enum ibv_qp_state, IBV_QPS_ERR + 1,
	      [IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	      [IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
	      [IBV_QPS_ERR] = "ERR")

SV_NAME_TABLE(sv_qp_type_name, enum ibv_qp_type, IBV_QPT_XRC_RECV + 1,
	      [IBV_QPT_RC] = "RC", [IBV_QPT_UC] = "UC", [IBV_QPT_UD] = "UD",
	      [IBV_QPT_RAW_PACKET] = "RAW_PACKET", [IBV_QPT_XRC_SEND] = "XRC_SEND",
	      [IBV_QPT_XRC_RECV] = "XRC_RECV")

static int type_index(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:       return T_RC;
	case IBV_QPT_UC:       return T_UC;
	case IBV_QPT_XRC_SEND: return T_XI;
	case IBV_QPT_XRC_RECV: return T_XT;
	default:               return T_UD;
	}
}

/* Values the device cannot take, whatever the transition: the rule an
 * attribute breaks, or NULL. */
static const char *bad_value(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	/* What remote peers may do is the REMOTE_* bits; the other access flags
	 * (an MR's, such as ON_DEMAND, as rdma-core's tests pass them) mean
	 * nothing to a QP and are taken as the kernel takes them. */
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
				 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
				 IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE;

	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return "port_num must be 1, the device's only port";
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return "pkey_index must be 0, the only P_Key";
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~acc))
		return "qp_access_flags has bits that are no enum ibv_access_flags";
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return "path_mtu must be an enum ibv_mtu, IBV_MTU_256 to IBV_MTU_4096";
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SV_MAX_RD_ATOM)
		return "max_rd_atomic is above the device's max_qp_init_rd_atom";
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SV_MAX_RD_ATOM)
		return "max_dest_rd_atomic is above the device's max_qp_rd_atom";
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return "min_rnr_timer is a 5-bit code, 0 to 31";
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return "timeout is a 5-bit exponent, 0 to 31";
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return "retry_cnt is 0 to 7";
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return "rnr_retry is 0 to 7 (7: retry forever)";
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return "dest_qp_num is a 24-bit QP number";
	if ((mask & IBV_QP_AV) && qp->ibqp.qp_base.qp_type != IBV_QPT_UD &&
	    sv_ah_resolve(qp->ibqp.qp_base.context, &a->ah_attr, &qp->peer))
		return "ah_attr names no address of a softverbs device (its dlid or, with is_global, "
		       "its dgid)";
	return NULL;
}

/* The attr_mask bits, for explanations. */
static const struct { int bit; const char *name; } mask_names[] = {
	{ IBV_QP_STATE, "STATE" }, { IBV_QP_CUR_STATE, "CUR_STATE" },
	{ IBV_QP_EN_SQD_ASYNC_NOTIFY, "EN_SQD_ASYNC_NOTIFY" }, { IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS" },
	{ IBV_QP_PKEY_INDEX, "PKEY_INDEX" }, { IBV_QP_PORT, "PORT" }, { IBV_QP_QKEY, "QKEY" },
	{ IBV_QP_AV, "AV" }, { IBV_QP_PATH_MTU, "PATH_MTU" }, { IBV_QP_TIMEOUT, "TIMEOUT" },
	{ IBV_QP_RETRY_CNT, "RETRY_CNT" }, { IBV_QP_RNR_RETRY, "RNR_RETRY" },
	{ IBV_QP_RQ_PSN, "RQ_PSN" }, { IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC" },
	{ IBV_QP_ALT_PATH, "ALT_PATH" }, { IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER" },
	{ IBV_QP_SQ_PSN, "SQ_PSN" }, { IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC" },
	{ IBV_QP_PATH_MIG_STATE, "PATH_MIG_STATE" }, { IBV_QP_CAP, "CAP" },
	{ IBV_QP_DEST_QPN, "DEST_QPN" }, { IBV_QP_RATE_LIMIT, "RATE_LIMIT" },
};

/* "IBV_QP_AV|IBV_QP_RQ_PSN" for the bits of mask. */
static const char *mask_str(uint32_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(mask_names) / sizeof(mask_names[0]) && n < len; i++)
		if (mask & (uint32_t)mask_names[i].bit)
			n += (size_t)snprintf(buf + n, len - n, "%sIBV_QP_%s", n ? "|" : "",
					      mask_names[i].name);
	if (!n)
		snprintf(buf, len, "0x%x", mask);
	return buf;
}

/* Why the modify-QP table refuses cur -> next with this mask. */
static void explain_mask(struct sv_qp *qp, const struct sv_transition *t, int ti,
			 enum ibv_qp_state cur, enum ibv_qp_state next, uint32_t mask)
{
	const char *type = sv_qp_type_name(qp->ibqp.qp_base.qp_type);
	uint32_t missing = t->req[ti] & ~mask;
	uint32_t extra = mask & ~(IBV_QP_STATE | t->req[ti] | t->opt[ti]);
	char m[200];

	if (!t->valid)
		sv_qp_explain(qp, "ibv_modify_qp: %s -> %s is no transition of a QP: EINVAL",
			      sv_qp_state_name(cur), sv_qp_state_name(next));
	else if (missing)
		sv_qp_explain(qp, "ibv_modify_qp: %s -> %s (%s QP) requires %s, not in attr_mask: "
			      "EINVAL", sv_qp_state_name(cur), sv_qp_state_name(next), type,
			      mask_str(missing, m, sizeof(m)));
	else
		sv_qp_explain(qp, "ibv_modify_qp: %s -> %s (%s QP) does not take %s: EINVAL",
			      sv_qp_state_name(cur), sv_qp_state_name(next), type,
			      mask_str(extra, m, sizeof(m)));
}

/* As the kernel's uverbs: a controlled Q_Key lets a QP take datagrams meant
 * for privileged services, so only CAP_NET_RAW may set one (checked before
 * the transition itself, so this EPERM wins over an EINVAL). */
static int check_qkey_privilege(const struct ibv_qp_attr *a, int mask)
{
	if (!(mask & IBV_QP_QKEY) || !(a->qkey & SV_QKEY_CONTROLLED))
		return 0;
	return sv_cap_net_raw() ? 0 : EPERM;
}

static void copy_attrs(struct sv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_PKEY_INDEX) q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT) q->port_num = a->port_num;
	if (mask & IBV_QP_QKEY) q->qkey = a->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS) q->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_AV) q->ah_attr = a->ah_attr;
	if (mask & IBV_QP_ALT_PATH) {
		q->alt_ah_attr = a->alt_ah_attr;
		q->alt_pkey_index = a->alt_pkey_index;
		q->alt_port_num = a->alt_port_num;
		q->alt_timeout = a->alt_timeout;
	}
	if (mask & IBV_QP_PATH_MTU) q->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN) q->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN) q->rq_psn = a->rq_psn & 0xffffff;
	if (mask & IBV_QP_SQ_PSN) q->sq_psn = a->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC) q->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER) q->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT) q->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT) q->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY) q->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_PATH_MIG_STATE) q->path_mig_state = a->path_mig_state;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) q->en_sqd_async_notify = a->en_sqd_async_notify;
	qp->attr_mask_set |= mask;
}

/* Back to a freshly created QP: queues emptied without completions, and
 * the completions still in its CQs gone. */
static void qp_reset(struct sv_qp *qp)
{
	sv_engine_qp_teardown(qp);
	sv_cq_clean_qp(qp);
	qp->sq.head = qp->sq.next = qp->sq.tail = 0;
	qp->rq.head = qp->rq.tail = 0;
	qp->publish_due = false;
	qp->peer_rq_next = 0;        /* counted, as the peer's receives, from RESET */
	qp->sent_send = qp->place_refused = false;
	qp->rd_outstanding = qp->rd_bytes = qp->retries = qp->rnr_retries = 0;
	sv_qp_timers_stop(qp);
	qp->rnr_wait = qp->comm_est_sent = false;
	sv_resp_set(qp, SV_RESP_OPEN);
	sv_link_set(qp, SV_LINK_IDLE);
	sv_qp_timer_update(qp);
}

static void set_state(struct sv_qp *qp, enum ibv_qp_state s)
{
	qp->attr.qp_state = s;
	qp->attr.cur_qp_state = s;
	qp->ibqp.qp_base.state = s;
}

static void apply_transition(struct sv_qp *qp, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	set_state(qp, next);
	switch (next) {
	case IBV_QPS_RESET:
		qp_reset(qp);
		break;
	case IBV_QPS_ERR:
		if (cur != IBV_QPS_ERR) {
			qp->attr.qp_state = cur;        /* sv_qp_to_error does the move */
			sv_qp_to_error(qp);
		}
		break;
	case IBV_QPS_RTR:
		if (cur == IBV_QPS_INIT) {
			qp->epsn = qp->attr.rq_psn;
			/* a reused QP answers no duplicate with an old result */
			if (qp->atomic_seen)
				memset(qp->atomic_seen, 0, SV_ATOMIC_SEEN * sizeof(*qp->atomic_seen));
			qp->peer_qpn = qp->attr.dest_qp_num;
			if (qp->ibqp.qp_base.qp_type != IBV_QPT_UD)
				sv_req_start_link(qp);
		}
		sv_engine_qp_ready(qp);
		break;
	case IBV_QPS_RTS:
		if (cur == IBV_QPS_RTR)
			qp->next_psn = qp->attr.sq_psn;
		sv_engine_qp_ready(qp);
		sv_req_kick(qp);
		break;
	default:
		break;
	}
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct sv_qp *qp = to_sqp(ibqp);
	enum ibv_qp_state cur, next;
	const struct sv_transition *t;
	int ti = type_index(ibqp->qp_type), ret;
	uint32_t allowed;
	const char *why;

	ret = check_qkey_privilege(attr, mask);
	if (ret)
		return ret;
	sv_engine_release_all_acks(to_sctx(ibqp->context)->node);
	sv_qlock_lock(&qp->lock);
	cur = qp->attr.qp_state;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		sv_qp_explain(qp, "ibv_modify_qp: IBV_QP_CUR_STATE says %s, the QP is in %s: EINVAL",
			      sv_qp_state_name(attr->cur_qp_state), sv_qp_state_name(cur));
		ret = EINVAL;
		goto out;
	}
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if (next > IBV_QPS_ERR || cur > IBV_QPS_ERR) {
		sv_qp_explain(qp, "ibv_modify_qp: qp_state %d is no enum ibv_qp_state: EINVAL", next);
		ret = EINVAL;
		goto out;
	}
	t = &qp_table[cur][next];
	allowed = IBV_QP_STATE | t->req[ti] | t->opt[ti];
	if (!t->valid || (mask & t->req[ti]) != t->req[ti] || (mask & ~allowed)) {
		explain_mask(qp, t, ti, cur, next, (uint32_t)mask);
		ret = EINVAL;
		goto out;
	}
	why = bad_value(qp, attr, mask);
	if (why) {
		sv_qp_explain(qp, "ibv_modify_qp: %s -> %s: %s: EINVAL", sv_qp_state_name(cur),
			      sv_qp_state_name(next), why);
		ret = EINVAL;
		goto out;
	}
	copy_attrs(qp, attr, mask);
	sv_engine_enter(to_sctx(ibqp->context)->node);
	apply_transition(qp, cur, next);
	sv_engine_status_qp(qp);
	sv_engine_leave(to_sctx(ibqp->context)->node);
	sv_info("qp %u: %d -> %d", ibqp->qp_num, cur, next);
out:
	sv_qp_unlock(qp);
	return ret;
}
