// SPDX-License-Identifier: MIT
/*
 * softverbs librdmacm: enhanced connection establishment (ECE).
 *
 * The local ECE is sent in the REQ/REP, the peer's is kept from the one it
 * received; both are opaque to this CM (the software device has no vendor
 * options), which is what an external-QP user of these calls needs.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "cm/cm.h"

CM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return cm_set_errno(EINVAL);
	cm_lock();
	cm_id_of(id)->local_ece = *ece;
	cm_unlock();
	return 0;
}

CM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	if (!id || id->qp || !ece)
		return cm_set_errno(EINVAL);
	cm_lock();
	*ece = cm_id_of(id)->remote_ece;
	cm_unlock();
	return 0;
}

CM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	return cm_reject(id, private_data, private_data_len,
			 CMW_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}
