#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "util/env.h"
#include "util/log.h"

int sv_debug_level;

void sv_log_init(void)
{
	sv_debug_level = sv_env_int("SOFTVERBS_DEBUG", 0);
}

void sv_log_print(int level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "softverbs[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", buf);
}
