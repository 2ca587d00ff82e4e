/* Diagnostics: SOFTVERBS_DEBUG=1 (errors), 2 (state changes), 3 (every frame). */
#ifndef SV_UTIL_LOG_H
#define SV_UTIL_LOG_H

extern int sv_debug_level;

void sv_log_init(void);
/* cold: out of the per-message path's code, whose branches around it are
 * laid out as not taken (docs/measurements.md, 'Build: cold error paths') */
void sv_log_print(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3), cold));

#define sv_log(level, ...) do {                                  \
		if (__builtin_expect(sv_debug_level >= (level), 0))     \
			sv_log_print(level, __VA_ARGS__);               \
	} while (0)
#define sv_err(...)   sv_log(1, __VA_ARGS__)
#define sv_info(...)  sv_log(2, __VA_ARGS__)
#define sv_trace(...) sv_log(3, __VA_ARGS__)

#endif
