/*
 * Memory regions and the key table.
 *
 * A key is (slot << 8) | tag: lkey == rkey.  The tag is random per
 * registration (never 0, never the slot's previous one), as a NIC's key
 * variant, so a key guessed from another one fails 254 times in 255.
 *
 * The table is per process and guarded by one rwlock: the engine holds it
 * for reading while it copies into or out of registered memory, so
 * ibv_dereg_mr (write lock) returns only once no copy into that region is
 * in progress; later accesses fail the lookup, and translations the engine
 * kept from before see the epoch moved and look again (engine/place.c).
 *
 * Memory windows (verbs/mw.c) take slots of the same table: a window's
 * entry is its view of the MR it is bound to, reached by remote accesses
 * only.
 *
 * On-demand paging: a software device never pins, so every MR already
 * follows the process's page tables as an ODP MR must, except one whose
 * pages same-host peers map (mrmap): ODP MRs are never moved there.  An
 * implicit ODP MR (addr NULL, length SIZE_MAX) covers the whole address
 * space.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "engine/api.h"
#include "status/publish.h"
#include "verbs/sv.h"

static struct sv_mr **mr_table;
static uint32_t mr_slots;
static uint8_t *mr_tag;
uint32_t sv_mr_epoch;

#define SV_MR_MANDATORY_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | \
	IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB)

/* Kernels without getrandom(2): the clock's low bits, weak but never 0-only. */
static void fallback_random(uint8_t *p, size_t n)
{
	struct timespec ts;

	for (size_t i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		p[i] = (uint8_t)(ts.tv_nsec ^ (ts.tv_nsec >> 8) ^ (p[i] * 31));
	}
}

/* A fresh tag for `slot`, with the write lock held: random bytes are
 * taken from getrandom(2) a batch at a time. */
static uint8_t next_tag(uint32_t slot)
{
	static uint8_t pool[64];
	static size_t left;
	uint8_t prev = mr_tag[slot], r;

	if (!left) {
		if (getrandom(pool, sizeof(pool), 0) != (ssize_t)sizeof(pool))
			fallback_random(pool, sizeof(pool));
		left = sizeof(pool);
	}
	r = pool[--left];
	if (!prev)
		return (uint8_t)(1 + r % 255);
	r = (uint8_t)(1 + r % 254);               /* 1..254, then skip prev */
	return r >= prev ? r + 1 : r;
}

static void new_key(struct sv_mr *mr)
{
	mr_tag[mr->index] = next_tag(mr->index);
	mr->ibmr.lkey = mr->ibmr.rkey = (mr->index << 8) | mr_tag[mr->index];
}

/* The MR table's lock: the process's reader-writer guard (util/guard.h),
 * whose read side costs no locked instruction. */
void sv_mr_rdlock(void) { sv_guard_rdlock(); }
void sv_mr_wrlock(void) { sv_guard_wrlock(); }
void sv_mr_unlock(void) { sv_guard_unlock(); }

static bool access_ok(unsigned int have, enum sv_access_dir dir)
{
	switch (dir) {
	case SV_LOCAL_READ:    return true;
	case SV_LOCAL_WRITE:   return have & IBV_ACCESS_LOCAL_WRITE;
	case SV_REMOTE_READ:   return have & IBV_ACCESS_REMOTE_READ;
	case SV_REMOTE_WRITE:  return have & IBV_ACCESS_REMOTE_WRITE;
	case SV_REMOTE_ATOMIC: return have & IBV_ACCESS_REMOTE_ATOMIC;
	}
	return false;
}

struct sv_mr *sv_key_at(uint32_t slot) { return slot < mr_slots ? mr_table[slot] : NULL; }
uint32_t sv_key_slots(void) { return mr_slots; }

struct sv_mr *sv_key_find(uint32_t key)
{
	uint32_t slot = key >> 8;

	if (slot >= mr_slots || mr_tag[slot] != (key & 0xff))
		return NULL;
	return mr_table[slot];
}

/* Why an access fails (sv_mr_why says it in words). */
enum key_fault { KEY_OK, KEY_NONE, KEY_OTHER_PD, KEY_WINDOW, KEY_RIGHT, KEY_RANGE };

/* With the MR lock held: the one place the key rules are checked.  The
 * entry `key` names must be one of `pd`'s (a parent domain is its
 * protection domain's: they share the id), serve an access through `qpn`
 * (a window: remote, and a type 2 one only its QP's), have the right and
 * cover the range.  *out: the entry, whenever there is one. */
static enum key_fault key_check(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr,
				uint64_t len, enum sv_access_dir dir, struct sv_mr **out)
{
	struct sv_mr *mr = *out = sv_key_find(key);

	if (!mr)
		return KEY_NONE;
	if (!sv_same_pd(mr->ibmr.pd, pd))
		return KEY_OTHER_PD;
	if (mr->mw && !sv_mw_serves(mr->mw, dir >= SV_REMOTE_READ ? qpn : 0))
		return KEY_WINDOW;
	if (!access_ok(mr->access, dir))
		return KEY_RIGHT;
	if (addr < mr->iova || len > mr->ibmr.length || addr - mr->iova > mr->ibmr.length - len)
		return KEY_RANGE;
	return KEY_OK;
}

void *sv_mr_translate(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr, uint64_t len,
		      enum sv_access_dir dir)
{
	struct sv_mr *mr;

	if (!len)
		return (void *)(uintptr_t)1;    /* nothing is touched */
	if (key_check(pd, qpn, key, addr, len, dir, &mr) != KEY_OK)
		return NULL;
	/* (an implicit ODP MR's base is NULL: no pointer arithmetic on it) */
	return (void *)((uintptr_t)mr->base + (addr - mr->iova));
}

static const char *const right_name[] = {
	[SV_LOCAL_READ] = "local read", [SV_LOCAL_WRITE] = "IBV_ACCESS_LOCAL_WRITE",
	[SV_REMOTE_READ] = "IBV_ACCESS_REMOTE_READ", [SV_REMOTE_WRITE] = "IBV_ACCESS_REMOTE_WRITE",
	[SV_REMOTE_ATOMIC] = "IBV_ACCESS_REMOTE_ATOMIC",
};

/* Why sv_mr_translate refuses this access, in one phrase naming the rule
 * ("" if it does not).  Takes the MR lock. */
void sv_mr_why(struct ibv_pd *pd, uint32_t qpn, uint32_t key, uint64_t addr, uint64_t len,
	       enum sv_access_dir dir, char *buf, size_t size)
{
	const char *what = dir >= SV_REMOTE_READ ? "rkey" : "lkey";
	struct sv_mr *mr;
	enum key_fault f;

	sv_mr_rdlock();
	f = len ? key_check(pd, qpn, key, addr, len, dir, &mr) : KEY_OK;
	switch (f) {
	case KEY_OK:
		snprintf(buf, size, "%s", "");
		break;
	case KEY_NONE:
		snprintf(buf, size, "%s %#x names no registered memory", what, key);
		break;
	case KEY_OTHER_PD:
		snprintf(buf, size, "%s %#x is of PD %u, the QP's is PD %u", what, key,
			 to_spd(mr->ibmr.pd)->id, to_spd(pd)->id);
		break;
	case KEY_WINDOW:
		snprintf(buf, size, "%s %#x is a memory window that is %s", what, key,
			 dir < SV_REMOTE_READ ? "never used locally" :
			 mr->mw->state != SV_MW_VALID ? "not bound" : "bound to another QP");
		break;
	case KEY_RIGHT:
		snprintf(buf, size, "%s %#x covers [%#" PRIx64 ", +%" PRIu64 ") without %s", what,
			 key, mr->iova, (uint64_t)mr->ibmr.length, right_name[dir]);
		break;
	case KEY_RANGE:
		snprintf(buf, size, "%s %#x covers [%#" PRIx64 ", +%" PRIu64 "), the access asks "
			 "[%#" PRIx64 ", +%" PRIu64 ")", what, key, mr->iova,
			 (uint64_t)mr->ibmr.length, addr, len);
		break;
	}
	sv_mr_unlock();
}

/* Memory same-host peers may map: with remote rights for one-sided
 * operations, without them for the large SENDs they pull from us.  Not an
 * ODP MR's: the application may remap its pages, which the MR follows. */
static struct sv_mrmap *share(void *addr, size_t length, unsigned int access)
{
	return (access & IBV_ACCESS_ON_DEMAND) ? NULL : sv_engine_mr_share(addr, length);
}

static bool is_implicit(const void *addr, size_t length, unsigned int access)
{
	return (access & IBV_ACCESS_ON_DEMAND) && !addr && length == SIZE_MAX;
}

static int table_insert(struct sv_mr *mr)
{
	uint32_t slot;

	for (slot = 1; slot < mr_slots; slot++)
		if (!mr_table[slot])
			break;
	if (slot >= mr_slots) {
		uint32_t n = mr_slots ? mr_slots * 2 : 64;
		struct sv_mr **t = realloc(mr_table, n * sizeof(*t));
		uint8_t *g;

		if (!t)
			return ENOMEM;
		mr_table = t;
		g = realloc(mr_tag, n);
		if (!g)
			return ENOMEM;
		mr_tag = g;
		memset(mr_table + mr_slots, 0, (n - mr_slots) * sizeof(*t));
		memset(mr_tag + mr_slots, 0, n - mr_slots);
		if (!mr_slots)
			slot = 1;                      /* key 0 is never valid */
		mr_slots = n;
	}
	if (slot >= (1u << 24))
		return ENOMEM;
	mr_table[slot] = mr;
	mr->index = slot;
	mr->ibmr.handle = slot;
	new_key(mr);
	if (!mr->mw)
		sv_engine_mr_publish(mr);       /* a window is published when bound */
	return 0;
}

int sv_key_add(struct sv_mr *entry)
{
	int err;

	sv_mr_wrlock();
	err = table_insert(entry);
	sv_mr_unlock();
	return err;
}

void sv_key_retag(struct sv_mr *entry, uint8_t tag)
{
	mr_tag[entry->index] = tag;
	entry->ibmr.lkey = entry->ibmr.rkey = (entry->index << 8) | tag;
}

static int check_access(unsigned int access)
{
	unsigned int mandatory = access & ~IBV_ACCESS_OPTIONAL_RANGE;

	if (mandatory & ~SV_MR_MANDATORY_ACCESS)
		return EINVAL;
	/* Remote write or atomic rights need local write (ibv_reg_mr(3)). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	return 0;
}

/* An MR over `length` bytes at `base`, shown to the application at `addr`
 * (a DM MR shows NULL: its SGEs are offsets). */
struct ibv_mr *sv_reg_mr_at(struct ibv_pd *pd, void *addr, void *base, size_t length,
			    uint64_t iova, unsigned int access)
{
	struct sv_mr *mr;
	int err = check_access(access);
	bool implicit = is_implicit(base, length, access);

	if (!err && !base && length && !implicit)
		err = EFAULT;
	/* huge pages are for explicit ODP only; an implicit MR has no base */
	if (!err && implicit && (access & (IBV_ACCESS_HUGETLB | IBV_ACCESS_ZERO_BASED)))
		err = EINVAL;
	if (err) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = addr;
	mr->base = base;
	mr->ibmr.length = length;
	mr->access = access;
	mr->iova = (access & IBV_ACCESS_ZERO_BASED) || implicit ? 0 : iova;
	mr->share = share(base, length, access);
	sv_mr_wrlock();
	err = table_insert(mr);
	sv_mr_unlock();
	if (err) {
		sv_engine_mr_unshare(mr->share);
		free(mr);
		errno = err;
		return NULL;
	}
	mr->st = svst_alloc(SVST_MR);
	sv_status_mr(mr);
	sv_pd_get(pd);
	return &mr->ibmr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return sv_reg_mr_at(pd, addr, addr, length, iova, access);
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

/* Same-host peers stop: the MR leaves the published table, and copies by
 * cross-memory attach that had passed its check end (bounded).  Memory
 * they map is taken back from the mapping when it is unshared. */
static void withdraw(struct sv_mr *mr)
{
	sv_engine_mr_retract(to_sctx(mr->ibmr.context)->node, mr->index);
}

int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *pd, void *addr,
		 size_t length, int access)
{
	struct sv_mr *mr = to_smr(ibmr);
	bool odp_changed = (flags & IBV_REREG_MR_CHANGE_ACCESS) &&
			   ((unsigned int)access ^ mr->access) & IBV_ACCESS_ON_DEMAND;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED || !flags)
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) && check_access(access))
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && !addr && length)
		return IBV_REREG_MR_ERR_INPUT;
	if ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)
		return IBV_REREG_MR_ERR_INPUT;
	if (((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && mr->dm) || mr->imported)
		return IBV_REREG_MR_ERR_INPUT;      /* device memory stays device memory */

	/* The write lock keeps our own engine out while memory moves; peers
	 * are out first, whatever changes.  Windows pin what they were bound
	 * to, as they pin it against deregistration. */
	sv_mr_wrlock();
	if (mr->windows) {
		sv_mr_unlock();
		errno = EBUSY;
		return IBV_REREG_MR_ERR_CMD;
	}
	withdraw(mr);
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->ibmr.addr = mr->base = addr;
		mr->ibmr.length = length;
		mr->iova = (mr->access & IBV_ACCESS_ZERO_BASED) ? 0 : (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access;
	/* memory that moved, or became ODP (never shared) or stopped being it */
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) || odp_changed) {
		sv_engine_mr_unshare(mr->share);
		mr->share = share(mr->base, mr->ibmr.length, mr->access);
	}
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		sv_pd_put(mr->ibmr.pd);
		sv_pd_get(pd);
		mr->ibmr.pd = pd;
	}
	/* Memory that moved gets a new key, so old rkeys never reach it; an
	 * access or PD change keeps it, as hardware does (rdma-core's tests
	 * rely on it), since the epoch makes every use check them again. */
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		new_key(mr);
	sv_mr_epoch++;
	sv_engine_mr_publish(mr);
	sv_status_mr(mr);
	sv_mr_unlock();
	return 0;
}

/* Out of the table: later lookups fail, translations kept by the engine
 * are checked again, same-host peers stop.  False: windows are bound to it. */
bool sv_key_remove(struct sv_mr *entry)
{
	sv_mr_wrlock();
	if (entry->windows) {
		sv_mr_unlock();
		return false;
	}
	mr_table[entry->index] = NULL;
	sv_mr_epoch++;
	sv_mr_unlock();
	withdraw(entry);
	return true;
}

/* ibv_import_mr(3): an MR of `pd`'s device context and PD, seen from
 * `pd` (its context may be an imported one); its address is not known
 * there (NULL, as the man page says), its keys are the MR's. */
struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t handle)
{
	struct sv_mr *mr = calloc(1, sizeof(*mr)), *e;

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	sv_mr_rdlock();
	e = sv_key_at(handle);
	if (e && !e->mw && !e->imported && sv_same_pd(e->ibmr.pd, pd) &&
	    sv_same_dev_ctx(e->ibmr.context, pd->context)) {
		mr->ibmr = e->ibmr;
		mr->access = e->access;
		mr->iova = e->iova;
		mr->index = e->index;
	}
	sv_mr_unlock();
	if (!mr->ibmr.lkey) {
		free(mr);
		errno = EINVAL;
		return NULL;
	}
	mr->ibmr.context = pd->context;
	mr->ibmr.pd = pd;
	mr->ibmr.addr = NULL;
	mr->imported = true;
	sv_pd_get(pd);
	return &mr->ibmr;
}

void ibv_unimport_mr(struct ibv_mr *ibmr)
{
	if (to_smr(ibmr)->imported)
		ibv_dereg_mr(ibmr);
}

/* ibv_alloc_mw(3): deregistration fails while a window is bound to it.
 * An imported MR only goes away: the registration is its creator's. */
int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sv_mr *mr = to_smr(ibmr);

	if (mr->imported) {
		sv_pd_put(ibmr->pd);
		free(mr);
		return 0;
	}
	if (!sv_key_remove(mr))
		return EBUSY;
	sv_engine_mr_unshare(mr->share);
	sv_pd_put(mr->ibmr.pd);
	if (mr->dm)
		sv_dm_put(mr->dm);
	svst_free(mr->st);
	free(mr);
	return 0;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* Make [addr, addr + len) present, writable too with `write`: 0, or
 * EFAULT where it is not (all) mapped so.  A kernel without
 * MADV_POPULATE_* (before 5.14), or a mapping it cannot populate, gets no
 * prefetch: advice is best effort. */
static int prefetch(uintptr_t addr, uint64_t len, bool write)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = addr & ~(page - 1);
	uint64_t span = (addr - start + len + page - 1) & ~((uint64_t)page - 1);

	if (!len || !madvise((void *)start, span, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return 0;
	return errno == ENOMEM || errno == EFAULT ? EFAULT : 0;
}

/* ibv_advise_mr(3): every SGE in an ODP MR of `pd` (EINVAL otherwise),
 * within it and with the right (EFAULT; EPERM: PREFETCH_WRITE to memory
 * without local write).  Prefetching makes the pages present (readable, or
 * writable), which here is all it can mean; without FLUSH it is done all
 * the same, before the call returns. */
int sv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 struct ibv_sge *sg_list, uint32_t num_sge)
{
	int err = 0;

	if (!pd || (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !num_sge || !sg_list ||
	    (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	     advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	     advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT))
		return EINVAL;
	sv_mr_rdlock();
	for (uint32_t i = 0; i < num_sge && !err; i++) {
		const struct ibv_sge *s = &sg_list[i];
		struct sv_mr *mr;
		enum key_fault f = key_check(pd, 0, s->lkey, s->addr, s->length, SV_LOCAL_READ, &mr);

		/* the key, then the MR's kind and right, then the range */
		if (f == KEY_NONE || f == KEY_OTHER_PD || f == KEY_WINDOW)
			err = EFAULT;
		else if (!(mr->access & IBV_ACCESS_ON_DEMAND))
			err = EINVAL;
		else if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			 !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			err = EPERM;
		else if (f == KEY_RANGE && s->length)
			err = EFAULT;
		else if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
			err = prefetch(s->addr, s->length,
				       advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE);
	}
	sv_mr_unlock();
	return err;
}
