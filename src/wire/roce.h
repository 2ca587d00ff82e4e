/*
 * RoCEv2 packets as a NIC puts them on the wire (IBTA Annex A17): Ethernet,
 * IPv4, UDP to port 4791, BTH, the extended headers the opcode calls for,
 * payload padded to 4 bytes, ICRC.  softverbs never sends these: the packet
 * capture (engine/capture.c) writes what its frames stand for in this form
 * so that Wireshark dissects it.  One table says which headers each opcode
 * carries.
 */
#ifndef SV_WIRE_ROCE_H
#define SV_WIRE_ROCE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define SV_ROCE_PORT 4791

/* Transport bases of the BTH opcode (its top 3 bits) */
enum { SV_ROCE_RC = 0x00, SV_ROCE_UC = 0x20, SV_ROCE_UD = 0x60 };

/* The operation (low 5 bits of the BTH opcode) */
enum sv_roce_op {
	SV_ROCE_SEND_FIRST = 0x00,
	SV_ROCE_SEND_MIDDLE = 0x01,
	SV_ROCE_SEND_LAST = 0x02,
	SV_ROCE_SEND_LAST_IMM = 0x03,
	SV_ROCE_SEND_ONLY = 0x04,
	SV_ROCE_SEND_ONLY_IMM = 0x05,
	SV_ROCE_WRITE_FIRST = 0x06,
	SV_ROCE_WRITE_MIDDLE = 0x07,
	SV_ROCE_WRITE_LAST = 0x08,
	SV_ROCE_WRITE_LAST_IMM = 0x09,
	SV_ROCE_WRITE_ONLY = 0x0a,
	SV_ROCE_WRITE_ONLY_IMM = 0x0b,
	SV_ROCE_READ_REQ = 0x0c,
	SV_ROCE_READ_RESP_FIRST = 0x0d,
	SV_ROCE_READ_RESP_MIDDLE = 0x0e,
	SV_ROCE_READ_RESP_LAST = 0x0f,
	SV_ROCE_READ_RESP_ONLY = 0x10,
	SV_ROCE_ACK = 0x11,
	SV_ROCE_ATOMIC_ACK = 0x12,
	SV_ROCE_CMP_SWP = 0x13,
	SV_ROCE_FETCH_ADD = 0x14,
	SV_ROCE_SEND_LAST_INV = 0x16,
	SV_ROCE_SEND_ONLY_INV = 0x17,
	SV_ROCE_ATOMIC_WRITE = 0x1d,
	SV_ROCE_NOPS = 0x20
};

/* AETH syndromes (the top 3 bits; the low 5 are the credit count, the RNR
 * timer or the NAK code) */
enum { SV_ROCE_AETH_ACK = 0x00, SV_ROCE_AETH_RNR = 0x20, SV_ROCE_AETH_NAK = 0x60 };
#define SV_ROCE_AETH_NO_CREDIT 0x1f   /* "credits not computed" */

/* One packet to encode; integers in host order, addresses in network order. */
struct sv_roce_pkt {
	uint8_t opcode;             /* base | enum sv_roce_op */
	bool se, ackreq;
	uint32_t dqpn, psn;
	uint32_t sip, dip;          /* IPv4, network order */
	uint16_t sport;             /* UDP source port (the flow) */
	uint64_t va;                /* RETH, AtomicETH */
	uint32_t rkey, dmalen;      /* RETH (AtomicETH: rkey) */
	uint8_t syndrome;           /* AETH */
	uint32_t msn;               /* AETH */
	uint32_t imm;               /* ImmDt: as the application gave it (big-endian bits) */
	uint32_t ieth;              /* IETH: the rkey to invalidate */
	uint32_t qkey, sqpn;        /* DETH */
	uint64_t swap_add, compare; /* AtomicETH */
	uint64_t orig;              /* AtomicAckETH */
	const uint8_t *payload;
	uint32_t len;
};

/* Largest packet sv_roce_encode makes: headers, a 4096-byte MTU, pad, ICRC. */
#define SV_ROCE_MAX_PKT (14 + 20 + 8 + 12 + 28 + 8 + 4096 + 3 + 4)

/* Encode `p` into buf (SV_ROCE_MAX_PKT bytes) as an Ethernet frame; returns
 * its length, 0 if the opcode is unknown or the payload too large. */
size_t sv_roce_encode(const struct sv_roce_pkt *p, uint8_t *buf);

/* The CRC-32 of IEEE 802.3 (reflected 0xEDB88320), continued from `crc`
 * (start with 0; the result is final, not inverted again by the caller). */
uint32_t sv_roce_crc32(uint32_t crc, const void *data, size_t len);

#endif
