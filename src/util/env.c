#include <stdlib.h>
#include <string.h>

#include "util/env.h"

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
