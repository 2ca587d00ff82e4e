/* Protection domains. */
#include <errno.h>
#include <stdlib.h>

#include "verbs/sv.h"

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	static uint32_t next_id = 1;
	struct sv_pd *pd = calloc(1, sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibpd.context = context;
	pd->id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
	return &pd->ibpd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (__atomic_load_n(&to_spd(pd)->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	free(to_spd(pd));
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
