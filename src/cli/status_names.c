/* softverbs status: the names of the numbers a status file holds (the
 * verbs' own enums, and status/format.h's). */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>

#include "cli/status.h"

#define NAME_AT(tab, i) ((i) < sizeof(tab) / sizeof(tab[0]) && (tab)[i] ? (tab)[i] : "?")

const char *st_qp_type(uint32_t t)
{
	static const char *const names[] = {
		[IBV_QPT_RC] = "RC", [IBV_QPT_UC] = "UC", [IBV_QPT_UD] = "UD",
		[IBV_QPT_RAW_PACKET] = "RAW_PACKET", [IBV_QPT_XRC_SEND] = "XRC_SEND",
		[IBV_QPT_XRC_RECV] = "XRC_RECV",
	};

	return NAME_AT(names, t);
}

const char *st_qp_state(uint32_t s)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return NAME_AT(names, s);
}

const char *st_chan_state(uint32_t s)
{
	static const char *const names[SVST_CHAN_NSTATES] = {
		[SVST_CHAN_NONE] = "NONE", [SVST_CHAN_CONNECTING] = "CONNECTING",
		[SVST_CHAN_HELLO] = "HELLO", [SVST_CHAN_UP] = "UP",
		[SVST_CHAN_BACKOFF] = "BACKOFF", [SVST_CHAN_IDLE] = "IDLE",
	};

	return NAME_AT(names, s);
}

const char *st_op_name(unsigned op)
{
	static const char *const names[SVST_NOPS] = {
		[SVST_OP_SEND] = "SEND", [SVST_OP_SEND_IMM] = "SEND_IMM",
		[SVST_OP_SEND_INV] = "SEND_INV", [SVST_OP_WRITE] = "WRITE",
		[SVST_OP_WRITE_IMM] = "WRITE_IMM", [SVST_OP_READ_REQ] = "READ_REQ",
		[SVST_OP_READ_RESP] = "READ_RESP", [SVST_OP_CMP_SWP] = "CMP_SWP",
		[SVST_OP_FETCH_ADD] = "FETCH_ADD", [SVST_OP_ATOMIC_RESP] = "ATOMIC_RESP",
		[SVST_OP_ATOMIC_WRITE] = "ATOMIC_WRITE", [SVST_OP_ACK] = "ACK",
		[SVST_OP_NAK] = "NAK", [SVST_OP_CTRL] = "CTRL",
	};

	return NAME_AT(names, op);
}

const char *st_kind_name(unsigned kind)
{
	static const char *const names[SVST_NKINDS] = {
		[SVST_FREE] = "free", [SVST_QP] = "qp", [SVST_CQ] = "cq", [SVST_SRQ] = "srq",
		[SVST_MR] = "mr",
	};

	return NAME_AT(names, kind);
}

const char *st_access(uint32_t access, char *buf, size_t size)
{
	static const struct { uint32_t bit; const char *name; } flags[] = {
		{ IBV_ACCESS_LOCAL_WRITE, "LOCAL_WRITE" }, { IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE" },
		{ IBV_ACCESS_REMOTE_READ, "REMOTE_READ" }, { IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC" },
		{ IBV_ACCESS_MW_BIND, "MW_BIND" }, { IBV_ACCESS_ZERO_BASED, "ZERO_BASED" },
		{ IBV_ACCESS_ON_DEMAND, "ON_DEMAND" }, { IBV_ACCESS_HUGETLB, "HUGETLB" },
		{ IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING" },
	};
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		if ((access & flags[i].bit) && n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "", flags[i].name);
	if (!buf[0])
		snprintf(buf, size, "-");
	return buf;
}

const char *st_ipv4(uint32_t addr_be, char *buf, size_t size)
{
	struct in_addr a = { .s_addr = addr_be };

	if (!inet_ntop(AF_INET, &a, buf, (socklen_t)size))
		snprintf(buf, size, "?");
	return buf;
}
