/* SOFTVERBS_FAULT's parts that need no channel (src/util/env.c's spec
 * parser, src/util/crc32c.c, src/transport/fault/draw.c): the syntax and
 * its errors, the checksum, a frame sealed, corrupted and checked, and the
 * dice (p = 0 never, p = 1 always, a seed decides). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/fault/fault.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "wire/proto.h"

static int failures;

#define EXPECT(c)                                                                 \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #c); \
			failures++;                                               \
		}                                                                 \
	} while (0)

#define P(x) ((uint64_t)((x) * 4294967296.0))

static void good_specs(void)
{
	struct sv_fault_conf c[SV_FAULT_NKINDS];
	char err[160];

	EXPECT(!sv_fault_parse("drop=0.01,dup=0.02,corrupt=0.5,delay=0.125,seed=7", c, err,
			       sizeof(err)));
	for (int k = 0; k < SV_FAULT_NKINDS; k++) {
		EXPECT(c[k].on);
		EXPECT(c[k].drop == P(0.01) && c[k].dup == P(0.02) && c[k].corrupt == P(0.5));
		EXPECT(c[k].delay == P(0.125));
		EXPECT(c[k].seed == 7);
	}
	EXPECT(!sv_fault_parse("tcp+unix:drop=1;udp:dup=0,seed=0x10", c, err, sizeof(err)));
	EXPECT(c[SV_FAULT_TCP].on && c[SV_FAULT_TCP].drop == P(1.0) && c[SV_FAULT_TCP].drop == 1ull << 32);
	EXPECT(c[SV_FAULT_UNIX].on && c[SV_FAULT_UNIX].drop == 1ull << 32);
	EXPECT(c[SV_FAULT_UDP].on && c[SV_FAULT_UDP].dup == 0 && c[SV_FAULT_UDP].seed == 16);
	EXPECT(!sv_fault_parse("udp:corrupt=0.25", c, err, sizeof(err)));
	EXPECT(!c[SV_FAULT_TCP].on && !c[SV_FAULT_UNIX].on && c[SV_FAULT_UDP].on);
}

static void bad_specs(void)
{
	static const struct { const char *spec, *why; } bad[] = {
		{ "", "an empty group" },
		{ "drop=0.1;", "an empty group" },
		{ ";drop=0.1", "an empty group" },
		{ "drop=0.1;;dup=0.1", "an empty group" },
		{ "drop", "is not KEY=VALUE" },
		{ "drop=", "is not KEY=VALUE" },
		{ "=0.1", "is not KEY=VALUE" },
		{ "loss=0.1", "unknown key 'loss'" },
		{ "drop=1.5", "not a probability" },
		{ "drop=-0.1", "not a probability" },
		{ "drop=0.1x", "not a probability" },
		{ "drop=nan", "not a probability" },
		{ "delay=2", "not a probability" },
		{ "seed=-1", "not an unsigned integer" },
		{ "seed=12a", "not an unsigned integer" },
		{ "rdma:drop=0.1", "unknown channel kind 'rdma'" },
		{ ":drop=0.1", "empty channel kind" },
		{ "tcp:", "a group without KEY=VALUE" },
		{ "tcp:drop=0.1;tcp+udp:dup=0.1", "'tcp' named twice" },
		{ "drop=0.1;udp:dup=0.1", "'udp' named twice" },
	};
	struct sv_fault_conf c[SV_FAULT_NKINDS];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[160] = "";

		if (!sv_fault_parse(bad[i].spec, c, err, sizeof(err)) || !strstr(err, bad[i].why)) {
			fprintf(stderr, "FAIL: \"%s\": \"%s\", expected \"%s\"\n", bad[i].spec, err,
				bad[i].why);
			failures++;
		}
		for (int k = 0; k < SV_FAULT_NKINDS; k++)
			EXPECT(!c[k].on);
	}
}

static void checksum(void)
{
	uint8_t f[sizeof(struct sv_wire_hdr) + 100 + 4] = { 0 };
	struct sv_wire_hdr *h = (struct sv_wire_hdr *)f;
	size_t len;

	EXPECT(sv_crc32c(0, "123456789", 9) == 0xe3069283);       /* the check value */
	EXPECT(sv_crc32c(sv_crc32c(0, "1234", 4), "56789", 5) == 0xe3069283);
	h->magic = SV_WIRE_MAGIC;
	h->opcode = SV_OP_SEND;
	h->len = SV_WIRE_PUT32(100);
	for (int i = 0; i < 100; i++)
		f[sizeof(*h) + i] = (uint8_t)i;
	len = sv_fault_seal(f, sizeof(*h) + 100);
	EXPECT(len == sizeof(f) && (h->flags & SV_WF_CRC));
	/* every single bit flipped anywhere is caught */
	for (size_t bit = 0; bit < len * 8; bit++) {
		uint8_t g[sizeof(f)];

		memcpy(g, f, len);
		g[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		EXPECT(!sv_fault_check(g, len));
	}
	/* a stream's corruption spares its framing: flags and len */
	for (uint32_t bit = 0; bit < len * 8; bit++) {
		uint8_t g[sizeof(f)];
		struct sv_wire_hdr *gh = (struct sv_wire_hdr *)g;

		memcpy(g, f, len);
		sv_fault_flip(g, len, bit, true);
		EXPECT(memcmp(g, f, len));
		EXPECT(gh->flags == h->flags && gh->len == h->len);
		EXPECT(!sv_fault_check(g, len));
	}
	EXPECT(sv_fault_check(f, len) && !(h->flags & SV_WF_CRC));
}

/* the dice: p = 0 never, p = 1 always, a probability about right */
static void dice(void)
{
	struct sv_fault_conf never = { .on = true },
			     always = { .on = true, .drop = 1ull << 32, .dup = 1ull << 32 },
			     half = { .on = true, .dup = P(0.5), .seed = 3 };
	struct sv_fault_rng r = { .s = 1, .conf = &never };
	int dups = 0;

	for (int i = 0; i < 10000; i++) {
		struct sv_fault_verdict v = sv_fault_draw(&r);

		EXPECT(!v.drop && !v.dup && !v.corrupt && !v.delay);
	}
	r.conf = &always;
	for (int i = 0; i < 10000; i++) {
		struct sv_fault_verdict v = sv_fault_draw(&r);

		EXPECT(v.drop && !v.dup);          /* a dropped frame has no other fault */
	}
	r.conf = &half;
	for (int i = 0; i < 10000; i++)
		dups += sv_fault_draw(&r).dup;
	EXPECT(dups > 4500 && dups < 5500);
}

/* The environment's spec, and the same seed's dice on the same channel
 * (kind, direction, rank) in two runs: here, two processes' first channels. */
static void env_and_seed(void)
{
	struct sv_fault_rng a, b;
	const struct sv_fault_conf *c;

	setenv("SOFTVERBS_FAULT", "tcp:drop=0.5,seed=9", 1);
	c = sv_fault_env();
	EXPECT(c && c[SV_FAULT_TCP].on && !c[SV_FAULT_UDP].on);
	EXPECT(!sv_fault_rng_init(&a, SV_FAULT_UDP, true));
	EXPECT(sv_fault_rng_init(&a, SV_FAULT_TCP, true));
	EXPECT(sv_fault_rng_init(&b, SV_FAULT_TCP, true));
	EXPECT(a.s != b.s);                   /* the second channel has other dice */
}

int main(void)
{
	good_specs();
	bad_specs();
	checksum();
	dice();
	env_and_seed();
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
