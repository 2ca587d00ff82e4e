/* softverbs status / stat: snapshots of what processes publish
 * (status/format.h), and the names their numbers stand for. */
#ifndef SV_CLI_STATUS_H
#define SV_CLI_STATUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status/format.h"

/* One process, as read at one moment. */
struct st_proc {
	struct svst_file hdr;        /* its header (hwm and unshown as read) */
	uint8_t *slots;              /* hdr.hwm copies of SVST_SLOT_SIZE bytes; FREE: unused or unreadable */
	uint32_t busy;               /* slots that kept changing while read (left out) */
	bool keys;                   /* the caller may see MR keys: it is the process's uid */
};

struct st_snap {
	struct st_proc *procs;
	size_t n;
	uint64_t when_ns;            /* CLOCK_MONOTONIC */
};

/* status_read.c: every process the caller may see, in `dir` (NULL: each
 * uid's directory it may read: root all, anyone else its own).  Files of
 * dead processes are removed, files of another format are named on stderr
 * and left out.  0, or -1 with a message printed. */
int st_snap_take(struct st_snap *s, const char *dir);
void st_snap_free(struct st_snap *s);
static inline const void *st_slot(const struct st_proc *p, uint32_t i)
{
	return p->slots + (size_t)i * SVST_SLOT_SIZE;
}
static inline uint16_t st_kind(const struct st_proc *p, uint32_t i)
{
	return ((const struct svst_rec *)st_slot(p, i))->kind;
}

#define ST_ADDR_LEN 16               /* "255.255.255.255" */

/* status_names.c */
const char *st_qp_type(uint32_t t);
const char *st_qp_state(uint32_t s);
const char *st_chan_state(uint32_t s);
const char *st_op_name(unsigned op);
const char *st_kind_name(unsigned kind);
/* access flags as "LOCAL_WRITE,REMOTE_READ" (or "-"), into buf */
const char *st_access(uint32_t access, char *buf, size_t size);
const char *st_ipv4(uint32_t addr_be, char *buf, size_t size);

/* status_json.c: the snapshot as one JSON document. */
void st_print_json(FILE *f, const struct st_snap *s);

/* Shared option parsing: --dir DIR (tests), --json. */
struct st_opts {
	const char *dir;
	bool json;
	double wait_s;               /* stat -w */
	long count;                  /* stat -n (0: forever) */
};
int st_parse(int argc, char **argv, struct st_opts *o, bool stat);

#endif
