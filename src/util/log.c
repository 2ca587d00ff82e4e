#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/env.h"
#include "util/log.h"
#include "util/sys.h"

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
	vsnprintf(buf + n, sizeof(buf) - 1 - n, fmt, ap);
	va_end(ap);
	/* one write, not stdio's (a cancellation point; util/sys.h) */
	n = (int)strlen(buf);
	buf[n++] = '\n';
	(void)!sv_write(STDERR_FILENO, buf, (size_t)n);
}
