#include "wire/proto.h"

/* The one table that says what each frame is and where it is legal. */
const struct sv_opinfo sv_opinfo[SV_OP_MAX] = {
	[SV_OP_SEND]        = { "SEND", SV_OPF_REQ | SV_OPF_PAYLOAD | SV_OPF_RECV,
				SV_QPT_RC | SV_QPT_UC | SV_QPT_UD },
	[SV_OP_SEND_IMM]    = { "SEND_IMM", SV_OPF_REQ | SV_OPF_PAYLOAD | SV_OPF_RECV | SV_OPF_IMM,
				SV_QPT_RC | SV_QPT_UC | SV_QPT_UD },
	[SV_OP_WRITE]       = { "WRITE", SV_OPF_REQ | SV_OPF_PAYLOAD | SV_OPF_RKEY,
				SV_QPT_RC | SV_QPT_UC },
	[SV_OP_WRITE_IMM]   = { "WRITE_IMM", SV_OPF_REQ | SV_OPF_PAYLOAD | SV_OPF_RKEY |
				SV_OPF_RECV | SV_OPF_IMM, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_READ_REQ]    = { "READ_REQ", SV_OPF_REQ | SV_OPF_RKEY, SV_QPT_RC },
	[SV_OP_CMP_SWP]     = { "CMP_SWP", SV_OPF_REQ | SV_OPF_RKEY | SV_OPF_ATOMIC, SV_QPT_RC },
	[SV_OP_FETCH_ADD]   = { "FETCH_ADD", SV_OPF_REQ | SV_OPF_RKEY | SV_OPF_ATOMIC, SV_QPT_RC },
	[SV_OP_ACK]         = { "ACK", SV_OPF_RESP, SV_QPT_RC },
	[SV_OP_NAK]         = { "NAK", SV_OPF_RESP, SV_QPT_RC },
	[SV_OP_READ_RESP]   = { "READ_RESP", SV_OPF_RESP | SV_OPF_PAYLOAD, SV_QPT_RC },
	[SV_OP_ATOMIC_RESP] = { "ATOMIC_RESP", SV_OPF_RESP, SV_QPT_RC },
	[SV_OP_HELLO]       = { "HELLO", SV_OPF_CTRL | SV_OPF_PAYLOAD, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_HELLO_ACK]   = { "HELLO_ACK", SV_OPF_CTRL | SV_OPF_PAYLOAD, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_HELLO_NAK]   = { "HELLO_NAK", SV_OPF_CTRL, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_VERIFY]      = { "VERIFY", SV_OPF_CTRL, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_VERIFY_ACK]  = { "VERIFY_ACK", SV_OPF_CTRL, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_SEND_INV]    = { "SEND_INV", SV_OPF_REQ | SV_OPF_PAYLOAD | SV_OPF_RECV | SV_OPF_INV,
				SV_QPT_RC },
	[SV_OP_ATOMIC_WRITE] = { "ATOMIC_WRITE", SV_OPF_REQ | SV_OPF_RKEY, SV_QPT_RC },
	[SV_OP_PLACED]      = { "SEND_PLACED", SV_OPF_RECV | SV_OPF_PLACED, SV_QPT_RC },
	[SV_OP_PLACED_IMM]  = { "SEND_IMM_PLACED", SV_OPF_RECV | SV_OPF_PLACED | SV_OPF_IMM,
				SV_QPT_RC },
	[SV_OP_LANE]        = { "LANE", SV_OPF_CTRL, SV_QPT_RC | SV_QPT_UC },
	[SV_OP_LANE_ACK]    = { "LANE_ACK", SV_OPF_CTRL, SV_QPT_RC | SV_QPT_UC },
};

/* Control frames carry at most this much payload (shared-memory names). */
#define SV_CTRL_MAX_PAYLOAD 256

bool sv_wire_decode(struct sv_wire_hdr *h)
{
	const struct sv_opinfo *oi;

	h->magic = le16toh(h->magic);
	h->dst_qpn = SV_WIRE_GET32(h->dst_qpn);
	h->src_qpn = SV_WIRE_GET32(h->src_qpn);
	h->psn = SV_WIRE_GET32(h->psn);
	h->len = SV_WIRE_GET32(h->len);
	h->imm = SV_WIRE_GET32(h->imm);
	h->rkey = SV_WIRE_GET32(h->rkey);
	h->qkey = SV_WIRE_GET32(h->qkey);
	h->rlen = SV_WIRE_GET32(h->rlen);
	h->va = SV_WIRE_GET64(h->va);
	h->data0 = SV_WIRE_GET64(h->data0);
	h->data1 = SV_WIRE_GET64(h->data1);

	if (h->magic != SV_WIRE_MAGIC || h->version != SV_WIRE_VERSION)
		return false;
	oi = sv_op_info(h->opcode);
	if (!oi)
		return false;
	if (!(oi->flags & SV_OPF_PAYLOAD) && h->len)
		return false;
	if ((oi->flags & SV_OPF_CTRL) && h->len > SV_CTRL_MAX_PAYLOAD)
		return false;
	if (h->len > SV_MAX_MSG)
		return false;
	return true;
}

void sv_wire_encode(struct sv_wire_hdr *h)
{
	h->magic = htole16(SV_WIRE_MAGIC);
	h->version = SV_WIRE_VERSION;
	h->dst_qpn = SV_WIRE_PUT32(h->dst_qpn);
	h->src_qpn = SV_WIRE_PUT32(h->src_qpn);
	h->psn = SV_WIRE_PUT32(h->psn);
	h->len = SV_WIRE_PUT32(h->len);
	h->imm = SV_WIRE_PUT32(h->imm);
	h->rkey = SV_WIRE_PUT32(h->rkey);
	h->qkey = SV_WIRE_PUT32(h->qkey);
	h->rlen = SV_WIRE_PUT32(h->rlen);
	h->va = SV_WIRE_PUT64(h->va);
	h->data0 = SV_WIRE_PUT64(h->data0);
	h->data1 = SV_WIRE_PUT64(h->data1);
}
