/* Protection domains, and parent domains and thread domains
 * (ibv_alloc_parent_domain(3), ibv_alloc_td(3)). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/sv.h"

static struct sv_pd *pd_new(struct ibv_context *context)
{
	struct sv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	return pd;
}

/* PDs that ibv_import_pd may find: their handle is their id. */
static pthread_mutex_t pds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_list pds = SV_LIST_INIT(pds);

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	static uint32_t next_id = 1;
	struct sv_pd *pd = pd_new(context);

	if (!pd)
		return NULL;
	pd->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	pd->ibpd.handle = pd->id;
	pthread_mutex_lock(&pds_lock);
	sv_list_add_tail(&pds, &pd->link);
	pthread_mutex_unlock(&pds_lock);
	return &pd->ibpd;
}

/* ibv_import_pd(3): a PD of `ctx`'s device context, as a PD of `ctx`
 * (interchangeable with it: the same id). */
struct ibv_pd *ibv_import_pd(struct ibv_context *ctx, uint32_t handle)
{
	struct sv_pd *pd = NULL, *imp;
	struct sv_list *pos;

	pthread_mutex_lock(&pds_lock);
	sv_list_for_each(pos, &pds) {
		struct sv_pd *p = sv_container_of(pos, struct sv_pd, link);

		if (p->id == handle && sv_same_dev_ctx(p->ibpd.context, ctx))
			pd = p;
	}
	pthread_mutex_unlock(&pds_lock);
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	imp = pd_new(ctx);
	if (!imp)
		return NULL;
	imp->id = handle;                  /* (pd may go meanwhile: not read again) */
	imp->ibpd.handle = handle;
	imp->imported = true;
	return &imp->ibpd;
}

/* An imported PD goes as ibv_unimport_pd(3) says; the PD stays its
 * creator's. */
void ibv_unimport_pd(struct ibv_pd *pd)
{
	if (to_spd(pd)->imported)
		ibv_dealloc_pd(pd);
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sv_pd *pd = to_spd(ibpd);

	if (__atomic_load_n(&pd->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (!pd->imported && !pd->protection) {
		pthread_mutex_lock(&pds_lock);
		sv_list_del(&pd->link);
		pthread_mutex_unlock(&pds_lock);
	}
	if (pd->protection)
		sv_pd_put(&pd->protection->ibpd);
	if (pd->td)
		__atomic_sub_fetch(&pd->td->refcnt, 1, __ATOMIC_RELEASE);
	free(pd);
	return 0;
}

void sv_pd_get(struct ibv_pd *pd)
{
	__atomic_add_fetch(&to_spd(pd)->refcnt, 1, __ATOMIC_RELEASE);
}

void sv_pd_put(struct ibv_pd *pd)
{
	__atomic_sub_fetch(&to_spd(pd)->refcnt, 1, __ATOMIC_RELEASE);
}

/* ---- parent domains ---- */

#define SV_PD_ATTR_MASK (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
			 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

struct ibv_pd *sv_alloc_parent_domain(struct ibv_context *ctx,
				      struct ibv_parent_domain_init_attr *attr)
{
	struct sv_pd *pd, *prot;

	if (!attr || !attr->pd || (attr->comp_mask & ~(uint32_t)SV_PD_ATTR_MASK) ||
	    attr->pd->context != ctx || to_spd(attr->pd)->protection ||
	    (attr->td && attr->td->context != ctx) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free))) {
		errno = EINVAL;                   /* a parent of a parent: no */
		return NULL;
	}
	pd = pd_new(ctx);
	if (!pd)
		return NULL;
	prot = to_spd(attr->pd);
	pd->protection = prot;
	pd->id = prot->id;
	sv_pd_get(&prot->ibpd);
	if (attr->td) {
		pd->td = (struct sv_td *)attr->td;
		__atomic_add_fetch(&pd->td->refcnt, 1, __ATOMIC_RELEASE);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	return &pd->ibpd;
}

#define SV_PD_BUF_ALIGN 64

void *sv_pd_buf_alloc(struct ibv_pd *ibpd, size_t size, enum sv_pd_resource type,
		      struct ibv_pd **owner)
{
	struct sv_pd *pd = ibpd ? to_spd(ibpd) : NULL;
	void *p;

	*owner = NULL;
	if (pd && pd->alloc) {
		p = pd->alloc(ibpd, pd->pd_context, size, SV_PD_BUF_ALIGN, type);
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			if (p) {
				memset(p, 0, size);
				*owner = ibpd;
			}
			return p;
		}
	}
	return calloc(1, size);
}

void sv_pd_buf_free(struct ibv_pd *owner, void *buf, enum sv_pd_resource type)
{
	if (owner)
		to_spd(owner)->free(owner, to_spd(owner)->pd_context, buf, type);
	else
		free(buf);
}

/* ---- thread domains: every object here is safe for threads anyway ---- */

struct ibv_td *sv_alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr)
{
	struct sv_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = ctx;
	return &td->ibtd;
}

int sv_dealloc_td(struct ibv_td *ibtd)
{
	struct sv_td *td = (struct sv_td *)ibtd;

	if (__atomic_load_n(&td->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(td);
	return 0;
}
