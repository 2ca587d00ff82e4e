/* Name tables of the state machines: one rule for looking a name up. */
#ifndef SV_UTIL_NAMES_H
#define SV_UTIL_NAMES_H

/* Defines `const char *fn(type s)` returning the name of s from the table
 * given as designated initializers ("?" for a value without one). */
#define SV_NAME_TABLE(fn, type, count, ...)                                  \
	static const char *const fn##_table[count] = { __VA_ARGS__ };          \
	const char *fn(type s)                                                 \
	{                                                                      \
		return (unsigned)s < (count) && fn##_table[s] ? fn##_table[s] : "?"; \
	}

#endif
