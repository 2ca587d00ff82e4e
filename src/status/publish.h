/* The library's side of status/format.h: this process's file, and a slot
 * (record) for each object it publishes. */
#ifndef SV_STATUS_PUBLISH_H
#define SV_STATUS_PUBLISH_H

#include <stdint.h>

#include "status/format.h"

/* Publish this process (once; later calls do nothing): its file in its
 * uid's directory, the device's name and IPv4 address (network order).
 * Without it, or when the directory is not safely ours, records are
 * private memory that nobody reads. */
void svst_open(const char *device, uint32_t addr);

/* A zeroed record of `kind` (its seqlock header set), in the file if a
 * slot is free, else in private memory (counted as not shown).  Never
 * NULL: the object's fast paths store into it unconditionally. */
void *svst_alloc(enum svst_kind kind);
void svst_free(void *rec);

#endif
