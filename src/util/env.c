#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/env.h"
#include "util/sys.h"

const char *sv_env_str(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int sv_env_int(const char *name, int dflt)
{
	const char *v = sv_env_str(name);

	return v ? atoi(v) : dflt;
}

bool sv_force_tcp(void)
{
	const char *t = sv_env_str("SOFTVERBS_TRANSPORT");

	return t && !strcmp(t, "tcp");
}

bool sv_cma_disabled(void)
{
	return sv_env_int("SOFTVERBS_NO_CMA", 0);
}

/* At least one: a port group that refused every connection could never be
 * reached at all. */
int sv_pending_max(void)
{
	int n = sv_env_int("SOFTVERBS_PENDING_MAX", 256);

	return n < 1 ? 1 : n;
}

const char *sv_pcap_dir(void)
{
	return sv_env_str("SOFTVERBS_PCAP");
}

bool sv_batch_enabled(void)
{
	return sv_env_int("SOFTVERBS_BATCH", 1) != 0;
}

bool sv_lane_enabled(void)
{
	return sv_env_int("SOFTVERBS_LANE", 1) != 0;
}

/* A non-negative knob read once into *cache (-1: not yet; a negative
 * value counts as 0): hot paths ask for it. */
static uint32_t env_once(int *cache, const char *name, int dflt)
{
	int v = __atomic_load_n(cache, __ATOMIC_RELAXED);

	if (v < 0) {
		v = sv_env_int(name, dflt);
		if (v < 0)
			v = 0;
		__atomic_store_n(cache, v, __ATOMIC_RELAXED);
	}
	return (uint32_t)v;
}

/* A CQ asks at each channel it gains. */
uint32_t sv_board_after(void)
{
	static int after = -1;

	return env_once(&after, "SOFTVERBS_BOARD_AFTER", 32);
}

/* The progress thread asks before it sleeps; 0: never (the board tests). */
uint32_t sv_ring_look_ms(void)
{
	static int ms = -1;

	return env_once(&ms, "SOFTVERBS_RING_LOOK_MS", 1000);
}

/* The progress thread asks after each lone request it serves. */
uint64_t sv_busy_poll_ns(void)
{
	static int us = -1;

	return (uint64_t)env_once(&us, "SOFTVERBS_BUSY_POLL_US", 50) * 1000;
}

/* Each post on a socket channel asks. */
uint64_t sv_batch_gap_ns(void)
{
	static int us = -1;

	return (uint64_t)env_once(&us, "SOFTVERBS_BATCH_GAP_US", 2) * 1000;
}

/* ---- SOFTVERBS_FAULT ---- */

static const char *const fault_kind_name[SV_FAULT_NKINDS] = {
	[SV_FAULT_TCP] = "tcp", [SV_FAULT_UNIX] = "unix", [SV_FAULT_UDP] = "udp",
};

/* A probability: a whole decimal number from 0 to 1. */
static bool parse_prob(const char *v, uint64_t *thr)
{
	char *end;
	double p;

	errno = 0;
	p = strtod(v, &end);
	if (end == v || *end || errno || !(p >= 0.0 && p <= 1.0))
		return false;
	*thr = (uint64_t)(p * 4294967296.0);
	return true;
}

/* KINDS (the part before ':'): a mask of kinds. */
static int parse_kinds(char *s, unsigned int *mask, char *err, size_t errlen)
{
	char *save, *k;

	*mask = 0;
	for (k = strtok_r(s, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
		int i;

		for (i = 0; i < SV_FAULT_NKINDS && strcmp(k, fault_kind_name[i]); i++)
			;
		if (i == SV_FAULT_NKINDS) {
			snprintf(err, errlen, "unknown channel kind '%s' (tcp, unix, udp)", k);
			return -1;
		}
		*mask |= 1u << i;
	}
	if (!*mask) {
		snprintf(err, errlen, "empty channel kind before ':'");
		return -1;
	}
	return 0;
}

/* One KEY=VALUE into c. */
static int parse_item(char *item, struct sv_fault_conf *c, char *err, size_t errlen)
{
	char *v = strchr(item, '='), *end;

	if (!v || v == item || !v[1]) {
		snprintf(err, errlen, "'%s' is not KEY=VALUE", item);
		return -1;
	}
	*v++ = '\0';
	if (!strcmp(item, "seed")) {
		errno = 0;
		c->seed = strtoull(v, &end, 0);
		if (*end || errno || *v == '-') {
			snprintf(err, errlen, "seed '%s' is not an unsigned integer", v);
			return -1;
		}
		return 0;
	}
	uint64_t *dst = !strcmp(item, "drop") ? &c->drop : !strcmp(item, "dup") ? &c->dup :
			!strcmp(item, "corrupt") ? &c->corrupt : !strcmp(item, "delay") ? &c->delay :
			NULL;

	if (!dst) {
		snprintf(err, errlen, "unknown key '%s' (drop, dup, corrupt, delay, seed)", item);
		return -1;
	}
	if (!parse_prob(v, dst)) {
		snprintf(err, errlen, "%s '%s' is not a probability from 0 to 1", item, v);
		return -1;
	}
	return 0;
}

/* One group: [KINDS:]KEY=VALUE,... */
static int parse_group(char *g, struct sv_fault_conf conf[SV_FAULT_NKINDS], unsigned int *seen,
		       char *err, size_t errlen)
{
	struct sv_fault_conf c = { .on = true };
	char *colon = strchr(g, ':'), *items = g, *save, *it;
	unsigned int mask = (1u << SV_FAULT_NKINDS) - 1;

	if (colon) {
		*colon = '\0';
		items = colon + 1;
		if (parse_kinds(g, &mask, err, errlen))
			return -1;
	}
	if (!*items) {
		snprintf(err, errlen, "a group without KEY=VALUE");
		return -1;
	}
	for (it = strtok_r(items, ",", &save); it; it = strtok_r(NULL, ",", &save))
		if (parse_item(it, &c, err, errlen))
			return -1;
	for (int i = 0; i < SV_FAULT_NKINDS; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (*seen & (1u << i)) {
			snprintf(err, errlen, "channel kind '%s' named twice", fault_kind_name[i]);
			return -1;
		}
		*seen |= 1u << i;
		conf[i] = c;
	}
	return 0;
}

int sv_fault_parse(const char *spec, struct sv_fault_conf conf[SV_FAULT_NKINDS],
		   char *err, size_t errlen)
{
	char *copy = strdup(spec), *save, *g;
	unsigned int seen = 0;
	int rc = 0;

	memset(conf, 0, sizeof(*conf) * SV_FAULT_NKINDS);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* strtok_r would skip empty groups: look for them first */
	if (!*spec || spec[0] == ';' || strstr(spec, ";;") || spec[strlen(spec) - 1] == ';') {
		snprintf(err, errlen, "an empty group");
		rc = -1;
	}
	for (g = strtok_r(copy, ";", &save); g && !rc; g = strtok_r(NULL, ";", &save))
		rc = parse_group(g, conf, &seen, err, errlen);
	free(copy);
	if (rc)
		memset(conf, 0, sizeof(*conf) * SV_FAULT_NKINDS);
	return rc;
}

static struct sv_fault_conf fault_env[SV_FAULT_NKINDS];
static bool fault_env_bad;

static void fault_env_read(void)
{
	const char *s = sv_env_str("SOFTVERBS_FAULT");
	char err[160];

	if (s && sv_fault_parse(s, fault_env, err, sizeof(err))) {
		/* always said: a test that meant faults must not run without */
		char line[512];
		int n = snprintf(line, sizeof(line), "softverbs: SOFTVERBS_FAULT=\"%s\": %s\n", s, err);

		(void)!sv_write(STDERR_FILENO, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
		fault_env_bad = true;
	}
}

const struct sv_fault_conf *sv_fault_env(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fault_env_read);
	return fault_env_bad ? NULL : fault_env;
}
