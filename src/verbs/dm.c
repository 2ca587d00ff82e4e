/*
 * Device memory (ibv_alloc_dm(3), ibv_reg_dm_mr(3)).  A NIC has a little
 * memory of its own that the host reaches through MMIO; here "the device"
 * is the process, so DM is pages of it, and what makes it device memory is
 * the API's rules: a budget (max_dm_size, per process), copies in 4-byte
 * units (DM is written and read a word at a time), and zero-based MRs over
 * it, whose SGEs carry offsets into the MR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "verbs/sv.h"

#define SV_DM_GRAIN 4                 /* offsets and lengths of copies */
#define SV_DM_MAX_LOG_ALIGN 12        /* a page: what the mapping gives */

struct sv_dm {
	struct ibv_dm ibdm;
	uint8_t *buf;
	size_t len, span;             /* asked, and mapped */
	int mrs;                      /* MRs and imports on it (dm_lock) */
	struct sv_dm *origin;         /* ibv_import_dm's view of that DM */
	struct sv_list link;          /* the process's DMs, to import */
};

static pthread_mutex_t dm_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t dm_used;                /* bytes of every DM of the process */
static uint32_t dm_handles;
static struct sv_list dms = SV_LIST_INIT(dms);

static struct sv_dm *to_sdm(struct ibv_dm *dm) { return (struct sv_dm *)dm; }

static bool range_ok(const struct sv_dm *dm, uint64_t offset, size_t length)
{
	return offset <= dm->len && length <= dm->len - offset;
}

static int copy_check(const struct sv_dm *dm, uint64_t offset, size_t length)
{
	if (offset % SV_DM_GRAIN || length % SV_DM_GRAIN || !range_ok(dm, offset, length))
		return EINVAL;
	return 0;
}

static int to_dm(struct ibv_dm *ibdm, uint64_t offset, const void *host, size_t length)
{
	struct sv_dm *dm = to_sdm(ibdm);
	int err = copy_check(dm, offset, length);

	if (!err)
		memcpy(dm->buf + offset, host, length);
	return err;
}

static int from_dm(void *host, struct ibv_dm *ibdm, uint64_t offset, size_t length)
{
	struct sv_dm *dm = to_sdm(ibdm);
	int err = copy_check(dm, offset, length);

	if (!err)
		memcpy(host, dm->buf + offset, length);
	return err;
}

/* Take `len` bytes of the budget: false when the device has no more. */
static bool budget_take(size_t len)
{
	bool ok;

	pthread_mutex_lock(&dm_lock);
	ok = len <= SV_DM_MAX_SIZE - dm_used;
	if (ok)
		dm_used += len;
	pthread_mutex_unlock(&dm_lock);
	return ok;
}

static void budget_give(size_t len)
{
	pthread_mutex_lock(&dm_lock);
	dm_used -= len;
	pthread_mutex_unlock(&dm_lock);
}

struct ibv_dm *sv_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	struct sv_dm *dm;

	if (!attr || attr->comp_mask || !attr->length || attr->log_align_req > SV_DM_MAX_LOG_ALIGN) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->length > SV_DM_MAX_SIZE || !budget_take(attr->length)) {
		errno = ENOMEM;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (dm) {
		dm->len = attr->length;
		dm->span = (attr->length + 4095) & ~(size_t)4095;
		dm->buf = mmap(NULL, dm->span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (!dm || dm->buf == MAP_FAILED) {
		free(dm);
		budget_give(attr->length);
		errno = ENOMEM;
		return NULL;
	}
	dm->ibdm.context = ctx;
	dm->ibdm.memcpy_to_dm = to_dm;
	dm->ibdm.memcpy_from_dm = from_dm;
	dm->ibdm.comp_mask = IBV_DM_MASK_HANDLE;
	pthread_mutex_lock(&dm_lock);
	dm->ibdm.handle = ++dm_handles;
	sv_list_add_tail(&dms, &dm->link);
	pthread_mutex_unlock(&dm_lock);
	return &dm->ibdm;
}

/* ibv_import_dm(3): a DM of `ctx`'s device context, the same memory; the
 * DM cannot be freed while imported. */
struct ibv_dm *ibv_import_dm(struct ibv_context *ctx, uint32_t handle)
{
	struct sv_dm *dm = NULL, *imp = calloc(1, sizeof(*imp));
	struct sv_list *pos;

	if (!imp) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dm_lock);
	sv_list_for_each(pos, &dms) {
		struct sv_dm *d = sv_container_of(pos, struct sv_dm, link);

		if (d->ibdm.handle == handle && sv_same_dev_ctx(d->ibdm.context, ctx))
			dm = d;
	}
	if (dm) {
		*imp = *dm;
		imp->origin = dm;
		imp->mrs = 0;
		imp->ibdm.context = ctx;
		dm->mrs++;
	}
	pthread_mutex_unlock(&dm_lock);
	if (!dm) {
		free(imp);
		errno = EINVAL;
		return NULL;
	}
	return &imp->ibdm;
}

void ibv_unimport_dm(struct ibv_dm *ibdm)
{
	if (to_sdm(ibdm)->origin)
		sv_free_dm(ibdm);
}

int sv_free_dm(struct ibv_dm *ibdm)
{
	struct sv_dm *dm = to_sdm(ibdm);

	pthread_mutex_lock(&dm_lock);
	if (dm->origin && !dm->mrs) {
		dm->origin->mrs--;            /* an import only goes away */
		pthread_mutex_unlock(&dm_lock);
		free(dm);
		return 0;
	}
	if (dm->mrs) {
		pthread_mutex_unlock(&dm_lock);
		return EBUSY;                     /* an MR is still on it */
	}
	dm_used -= dm->len;
	sv_list_del(&dm->link);
	pthread_mutex_unlock(&dm_lock);
	munmap(dm->buf, dm->span);
	free(dm);
	return 0;
}

/* ibv_reg_dm_mr(3): zero-based, within the DM (empty too, as mlx5 takes it). */
struct ibv_mr *sv_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t offset, size_t length,
			    unsigned int access)
{
	struct sv_dm *dm = to_sdm(ibdm);
	struct ibv_mr *mr;

	if (!dm || !(access & IBV_ACCESS_ZERO_BASED) || (access & IBV_ACCESS_ON_DEMAND) ||
	    !range_ok(dm, offset, length)) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&dm_lock);
	dm->mrs++;
	pthread_mutex_unlock(&dm_lock);
	mr = sv_reg_mr_at(pd, NULL, dm->buf + offset, length, 0, access);
	if (!mr) {
		int err = errno;

		sv_dm_put(dm);
		errno = err;
		return NULL;
	}
	to_smr(mr)->dm = dm;
	return mr;
}

void sv_dm_put(struct sv_dm *dm)
{
	pthread_mutex_lock(&dm_lock);
	dm->mrs--;
	pthread_mutex_unlock(&dm_lock);
}
