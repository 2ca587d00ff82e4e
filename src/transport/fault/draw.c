/* The faults' dice and the frames' checksum (fault.h). */
#include <string.h>

#include "transport/fault/fault.h"
#include "util/crc32c.h"
#include "wire/proto.h"

#define SV_FAULT_CRC_LEN 4u

/* splitmix64: spreads a seed and a channel's identity over 64 bits */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* xorshift64*: one 32-bit draw */
static uint32_t next32(struct sv_fault_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return (uint32_t)((r->s * 0x2545f4914f6cdd1dull) >> 32);
}

bool sv_fault_rng_init(struct sv_fault_rng *r, enum sv_fault_kind kind, bool outbound)
{
	/* channels of a kind and direction, counted in the order they are made */
	static uint64_t rank[SV_FAULT_NKINDS][2];
	const struct sv_fault_conf *all = sv_fault_env();
	uint64_t n;

	memset(r, 0, sizeof(*r));
	if (!all || !all[kind].on)
		return false;
	n = __atomic_fetch_add(&rank[kind][outbound], 1, __ATOMIC_RELAXED);
	r->conf = &all[kind];
	r->s = mix(mix(r->conf->seed) ^ ((uint64_t)kind << 56 | (uint64_t)outbound << 48 | n));
	if (!r->s)
		r->s = 1;       /* xorshift's one fixed point */
	return true;
}

/* Five draws a frame, whatever they decide: the n-th frame of a channel
 * meets the same dice in every run. */
struct sv_fault_verdict sv_fault_draw(struct sv_fault_rng *r)
{
	struct sv_fault_verdict v;

	v.drop = next32(r) < r->conf->drop;
	v.corrupt = next32(r) < r->conf->corrupt;
	v.dup = next32(r) < r->conf->dup;
	v.delay = next32(r) < r->conf->delay;
	v.flip = next32(r);
	r->frames++;
	r->dropped += v.drop;
	if (v.drop)
		v.corrupt = v.dup = v.delay = false;
	r->corrupted += v.corrupt;
	r->duplicated += v.dup;
	r->delayed += v.delay;
	return v;
}

bool sv_fault_applies(const uint8_t *frame)
{
	/* a byte: either order */
	const struct sv_opinfo *oi = sv_op_info(frame[offsetof(struct sv_wire_hdr, opcode)]);

	return oi && !(oi->flags & SV_OPF_CTRL);
}

size_t sv_fault_seal(uint8_t *frame, size_t len)
{
	uint32_t crc;

	frame[offsetof(struct sv_wire_hdr, flags)] |= SV_WF_CRC;
	crc = SV_WIRE_PUT32(sv_crc32c(0, frame, len));
	memcpy(frame + len, &crc, SV_FAULT_CRC_LEN);
	return len + SV_FAULT_CRC_LEN;
}

bool sv_fault_check(uint8_t *frame, size_t len)
{
	uint32_t crc;

	if (len < sizeof(struct sv_wire_hdr) + SV_FAULT_CRC_LEN)
		return false;
	memcpy(&crc, frame + len - SV_FAULT_CRC_LEN, SV_FAULT_CRC_LEN);
	if (SV_WIRE_GET32(crc) != sv_crc32c(0, frame, len - SV_FAULT_CRC_LEN))
		return false;
	frame[offsetof(struct sv_wire_hdr, flags)] &= (uint8_t)~SV_WF_CRC;
	return true;
}

/* On a stream the flags (the trailer's mark, the header's length) and len
 * delimit the frame, as a link layer's framing would: a corruption there
 * would lose the stream's framing, not a frame, so its bit moves on. */
void sv_fault_flip(uint8_t *frame, size_t len, uint32_t bit, bool stream)
{
	size_t at = len ? bit % (len * 8) : 0;
	size_t byte = at / 8;

	if (!len)
		return;
	if (stream && byte == offsetof(struct sv_wire_hdr, flags))
		byte++;
	else if (stream && byte >= offsetof(struct sv_wire_hdr, len) &&
		 byte < offsetof(struct sv_wire_hdr, len) + 4)
		byte = offsetof(struct sv_wire_hdr, len) + 4;
	frame[byte] ^= (uint8_t)(1u << (at % 8));
}
