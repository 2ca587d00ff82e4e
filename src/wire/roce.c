/*
 * RoCEv2 packet encoding (wire/roce.h): the headers each opcode carries
 * come from one table; the ICRC covers the packet with the fields routers
 * may change masked, as the RoCEv2 annex says.
 */
#include <string.h>

#include "wire/roce.h"

enum {
	H_RETH = 1 << 0,     /* 16: VA, R_Key, DMA length */
	H_AETH = 1 << 1,     /* 4: syndrome, MSN */
	H_IMM = 1 << 2,      /* 4: immediate data */
	H_IETH = 1 << 3,     /* 4: R_Key to invalidate */
	H_ATOMIC = 1 << 4,   /* 28: VA, R_Key, swap or add, compare */
	H_ATOMACK = 1 << 5,  /* 8: original value */
	H_PAYLOAD = 1 << 6,
	H_KNOWN = 1 << 7,
};

static const uint8_t op_hdrs[SV_ROCE_NOPS] = {
	[SV_ROCE_SEND_FIRST] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_SEND_MIDDLE] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_SEND_LAST] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_SEND_LAST_IMM] = H_KNOWN | H_IMM | H_PAYLOAD,
	[SV_ROCE_SEND_ONLY] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_SEND_ONLY_IMM] = H_KNOWN | H_IMM | H_PAYLOAD,
	[SV_ROCE_WRITE_FIRST] = H_KNOWN | H_RETH | H_PAYLOAD,
	[SV_ROCE_WRITE_MIDDLE] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_WRITE_LAST] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_WRITE_LAST_IMM] = H_KNOWN | H_IMM | H_PAYLOAD,
	[SV_ROCE_WRITE_ONLY] = H_KNOWN | H_RETH | H_PAYLOAD,
	[SV_ROCE_WRITE_ONLY_IMM] = H_KNOWN | H_RETH | H_IMM | H_PAYLOAD,
	[SV_ROCE_READ_REQ] = H_KNOWN | H_RETH,
	[SV_ROCE_READ_RESP_FIRST] = H_KNOWN | H_AETH | H_PAYLOAD,
	[SV_ROCE_READ_RESP_MIDDLE] = H_KNOWN | H_PAYLOAD,
	[SV_ROCE_READ_RESP_LAST] = H_KNOWN | H_AETH | H_PAYLOAD,
	[SV_ROCE_READ_RESP_ONLY] = H_KNOWN | H_AETH | H_PAYLOAD,
	[SV_ROCE_ACK] = H_KNOWN | H_AETH,
	[SV_ROCE_ATOMIC_ACK] = H_KNOWN | H_AETH | H_ATOMACK,
	[SV_ROCE_CMP_SWP] = H_KNOWN | H_ATOMIC,
	[SV_ROCE_FETCH_ADD] = H_KNOWN | H_ATOMIC,
	[SV_ROCE_SEND_LAST_INV] = H_KNOWN | H_IETH | H_PAYLOAD,
	[SV_ROCE_SEND_ONLY_INV] = H_KNOWN | H_IETH | H_PAYLOAD,
	[SV_ROCE_ATOMIC_WRITE] = H_KNOWN | H_RETH | H_PAYLOAD,
};

enum { ETH_LEN = 14, IP_LEN = 20, UDP_LEN = 8, BTH_LEN = 12, ICRC_LEN = 4 };

/* The CRC-32 a nibble at a time: 16 constants, no table to build. */
static const uint32_t crc_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
	0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
	0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

uint32_t sv_roce_crc32(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
		crc = (crc >> 4) ^ crc_nibble[crc & 15];
	}
	return ~crc;
}

static uint8_t *put8(uint8_t *b, uint8_t v) { *b = v; return b + 1; }
static uint8_t *put16(uint8_t *b, uint16_t v) { b[0] = v >> 8; b[1] = v; return b + 2; }
static uint8_t *put24(uint8_t *b, uint32_t v) { b[0] = v >> 16; b[1] = v >> 8; b[2] = v; return b + 3; }
static uint8_t *put32(uint8_t *b, uint32_t v) { return put16(put16(b, v >> 16), v); }
static uint8_t *put64(uint8_t *b, uint64_t v) { return put32(put32(b, v >> 32), v); }
static uint8_t *putn(uint8_t *b, const void *v, size_t n) { memcpy(b, v, n); return b + n; }

/* Locally administered MACs made of the IPv4 address: the same address, the same MAC. */
static uint8_t *put_mac(uint8_t *b, uint32_t ip)
{
	b = put16(b, 0x0200);
	return putn(b, &ip, 4);
}

static uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t sum = 0;

	for (int i = 0; i < IP_LEN; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

static uint8_t *put_ip_udp(uint8_t *b, const struct sv_roce_pkt *p, size_t l4len)
{
	uint8_t *ip = b;

	b = put8(b, 0x45);                   /* IPv4, 20-byte header */
	b = put8(b, 0);                      /* DSCP, ECN */
	b = put16(b, IP_LEN + l4len);
	b = put16(b, 0);                     /* identification */
	b = put16(b, 0x4000);                /* don't fragment */
	b = put8(b, 64);                     /* TTL */
	b = put8(b, 17);                     /* UDP */
	b = put16(b, 0);                     /* checksum, below */
	b = putn(b, &p->sip, 4);
	b = putn(b, &p->dip, 4);
	put16(ip + 10, ip_checksum(ip));
	b = put16(b, p->sport);
	b = put16(b, SV_ROCE_PORT);
	b = put16(b, l4len);
	return put16(b, 0);                  /* no UDP checksum (IPv4 allows it) */
}

static uint8_t *put_bth(uint8_t *b, const struct sv_roce_pkt *p, unsigned pad)
{
	b = put8(b, p->opcode);
	b = put8(b, (p->se ? 0x80 : 0) | pad << 4);   /* SE, M = 0, pad count, TVer = 0 */
	b = put16(b, 0xffff);                         /* default P_Key */
	b = put8(b, 0);
	b = put24(b, p->dqpn);
	b = put8(b, p->ackreq ? 0x80 : 0);
	return put24(b, p->psn);
}

static uint8_t *put_ext(uint8_t *b, const struct sv_roce_pkt *p, uint8_t hdrs)
{
	if ((p->opcode & 0xe0) == SV_ROCE_UD) {      /* DETH */
		b = put32(b, p->qkey);
		b = put8(b, 0);
		b = put24(b, p->sqpn);
	}
	if (hdrs & H_RETH) {
		b = put64(b, p->va);
		b = put32(b, p->rkey);
		b = put32(b, p->dmalen);
	}
	if (hdrs & H_AETH) {
		b = put8(b, p->syndrome);
		b = put24(b, p->msn);
	}
	if (hdrs & H_ATOMACK)
		b = put64(b, p->orig);
	if (hdrs & H_ATOMIC) {
		b = put64(b, p->va);
		b = put32(b, p->rkey);
		b = put64(b, p->swap_add);
		b = put64(b, p->compare);
	}
	if (hdrs & H_IMM)
		b = putn(b, &p->imm, 4);
	if (hdrs & H_IETH)
		b = put32(b, p->ieth);
	return b;
}

/* The invariant CRC: 8 bytes of ones for the absent LRH, then IP, UDP and
 * BTH with what may change on the way masked (TOS, TTL, checksums, BTH's
 * reserved byte), then the rest as it is.  Stored little-endian. */
static uint32_t icrc(const uint8_t *ip, size_t len)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t masked[IP_LEN + UDP_LEN + BTH_LEN];
	uint32_t crc;

	memcpy(masked, ip, sizeof(masked));
	masked[1] = 0xff;                               /* TOS */
	masked[8] = 0xff;                               /* TTL */
	masked[10] = masked[11] = 0xff;                 /* IP checksum */
	masked[IP_LEN + 6] = masked[IP_LEN + 7] = 0xff; /* UDP checksum */
	masked[IP_LEN + UDP_LEN + 4] = 0xff;            /* BTH reserved (FECN, BECN) */
	crc = sv_roce_crc32(0, ones, sizeof(ones));
	crc = sv_roce_crc32(crc, masked, sizeof(masked));
	return sv_roce_crc32(crc, ip + sizeof(masked), len - sizeof(masked));
}

size_t sv_roce_encode(const struct sv_roce_pkt *p, uint8_t *buf)
{
	uint8_t hdrs = op_hdrs[p->opcode & 0x1f];
	uint8_t ext[64], *e;
	size_t elen, l4len, len = (hdrs & H_PAYLOAD) ? p->len : 0;
	unsigned pad = -len & 3;
	uint8_t *b = buf, *ip;
	uint32_t crc;

	if (!(hdrs & H_KNOWN) || len > 4096)
		return 0;
	e = put_ext(ext, p, hdrs);
	elen = e - ext;
	l4len = UDP_LEN + BTH_LEN + elen + len + pad + ICRC_LEN;
	b = put_mac(b, p->dip);
	b = put_mac(b, p->sip);
	b = put16(b, 0x0800);
	ip = b;
	b = put_ip_udp(b, p, l4len);
	b = put_bth(b, p, pad);
	b = putn(b, ext, elen);
	if (len)
		b = putn(b, p->payload, len);
	memset(b, 0, pad);
	b += pad;
	crc = icrc(ip, b - ip);
	b = put8(b, crc);
	b = put8(b, crc >> 8);
	b = put8(b, crc >> 16);
	b = put8(b, crc >> 24);
	return b - buf;
}
