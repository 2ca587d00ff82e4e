/* Address handles: (LID or GID) resolved to a host through the address plan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api.h"
#include "verbs/sv.h"

int sv_ah_resolve(struct ibv_context *ctx, const struct ibv_ah_attr *attr,
		  struct sockaddr_in *dst)
{
	if (attr->port_num != 1)
		return EINVAL;
	return sv_engine_ah_resolve(to_sctx(ctx)->node, attr, dst);
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct sv_ah *ah;
	struct sockaddr_in dst;
	int err = sv_ah_resolve(pd->context, attr, &dst);

	if (err) {
		errno = err;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	ah->attr = *attr;
	ah->dst = dst;
	sv_pd_get(pd);
	return &ah->ibah;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	sv_pd_put(ah->pd);
	free(to_sah(ah));
	return 0;
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	if (wc->wc_flags & IBV_WC_GRH) {
		if (!grh) {
			errno = EINVAL;
			return -1;
		}
		ah_attr->is_global = 1;
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.sgid_index = 0;
		ah_attr->grh.hop_limit = 0xff;
		ah_attr->grh.traffic_class = (be32toh(grh->version_tclass_flow) >> 20) & 0xff;
		ah_attr->grh.flow_label = be32toh(grh->version_tclass_flow) & 0xfffff;
	}
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
