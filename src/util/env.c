#include <stdlib.h>

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
