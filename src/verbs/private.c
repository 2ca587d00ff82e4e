/*
 * softverbs: the IBVERBS_PRIVATE_34 interface (libibverbs <-> providers).
 *
 * rdma-core's hardware providers (libmlx5.so.1, libefa.so.1, ...) are linked
 * against these symbols, and programs such as perftest (ib_send_bw) and
 * libfabric (fi_info) link those providers directly, so the dynamic loader
 * must find every one of them in our libibverbs.so.1 at load time.  softverbs
 * does not load providers and never hands one a device, so none of these is
 * ever reached through a softverbs object:
 *
 *   - verbs_register_driver_34(), called from every provider's constructor,
 *     accepts the registration and ignores it;
 *   - the kernel-command helpers (ibv_cmd_*, execute_ioctl) report
 *     EOPNOTSUPP the way they report kernel errors: as a positive errno
 *     return value (ibv_cmd_poll_cq, which returns a completion count,
 *     returns -1 instead so it cannot be mistaken for completions);
 *   - pointer-returning functions return NULL with errno = EOPNOTSUPP;
 *   - void functions do nothing.
 *
 * The prototypes are our own and deliberately loose: every pointer type is
 * `void *`.  On the supported ABIs an implementation that ignores its
 * arguments is safe to call with the provider's exact argument list.
 * ibv_query_gid_type, the remaining IBVERBS_PRIVATE_34 function, is part of
 * the GID code elsewhere in src/verbs/.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stubs ignore their arguments by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define SV_EXPORT __attribute__((visibility("default")))

/*
 * Data object: rdma-core's providers read it to decide whether destroying
 * objects of a disassociated device should report success.  A 1-byte bool,
 * like the original (size matters for copy relocations).
 */
SV_EXPORT bool verbs_allow_disassociate_destroy;

static int sv_unsupported(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* Declares and defines an errno-returning ibv_cmd_* style stub. */
#define SV_CMD(name, ...)                                    \
	SV_EXPORT int name(__VA_ARGS__);                     \
	SV_EXPORT int name(__VA_ARGS__)                      \
	{                                                    \
		return sv_unsupported();                     \
	}

/* ---- Provider registration and context plumbing ---- */

SV_EXPORT void verbs_register_driver_34(const void *ops);
SV_EXPORT void verbs_register_driver_34(const void *ops)
{
	/* softverbs drives its own device; provider drivers are ignored. */
}

SV_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd,
					      size_t alloc_size,
					      void *context_offset,
					      uint32_t driver_id);
SV_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd,
					      size_t alloc_size,
					      void *context_offset,
					      uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT void verbs_uninit_context(void *context);
SV_EXPORT void verbs_uninit_context(void *context)
{
}

SV_EXPORT void verbs_set_ops(void *vctx, const void *ops);
SV_EXPORT void verbs_set_ops(void *vctx, const void *ops)
{
}

SV_EXPORT void *verbs_open_device(void *device, void *private_data);
SV_EXPORT void *verbs_open_device(void *device, void *private_data)
{
	errno = EOPNOTSUPP;
	return NULL;
}

SV_EXPORT void verbs_init_cq(void *cq, void *context, void *channel,
			     void *cq_context);
SV_EXPORT void verbs_init_cq(void *cq, void *context, void *channel,
			     void *cq_context)
{
}

SV_EXPORT void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
SV_EXPORT void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...)
{
}

/* Returns a length, so failure is -1 (like ibv_read_sysfs_file). */
SV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					void *sysfs_dev, const char *fnfmt,
					...);
SV_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					void *sysfs_dev, const char *fnfmt,
					...)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* ---- ioctl command-buffer machinery ---- */

/*
 * Used by providers to size an on-stack attribute array; never shrink the
 * caller's own count (a zero-length VLA would be worse than a no-op).
 */
SV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       void *link);
SV_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       void *link)
{
	return num_attrs;
}

SV_CMD(execute_ioctl, void *context, void *cmd)

/* ---- Device and port ---- */

SV_CMD(ibv_cmd_get_context, void *context, void *cmd, size_t cmd_size,
       void *resp, size_t resp_size)
SV_CMD(ibv_cmd_query_context, void *context, void *driver)
SV_CMD(ibv_cmd_query_device_any, void *context, const void *input,
       void *attr, size_t attr_size, void *resp, size_t *resp_size)
SV_CMD(ibv_cmd_query_port, void *context, uint8_t port_num, void *port_attr,
       void *cmd, size_t cmd_size)

/* ---- PD, XRCD, MR, MW, DM ---- */

SV_CMD(ibv_cmd_alloc_pd, void *context, void *pd, void *cmd, size_t cmd_size,
       void *resp, size_t resp_size)
SV_CMD(ibv_cmd_dealloc_pd, void *pd)
SV_CMD(ibv_cmd_open_xrcd, void *context, void *xrcd, int vxrcd_size,
       void *attr, void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_close_xrcd, void *xrcd)
SV_CMD(ibv_cmd_reg_mr, void *pd, void *addr, size_t length, uint64_t hca_va,
       int access, void *vmr, void *cmd, size_t cmd_size, void *resp,
       size_t resp_size)
SV_CMD(ibv_cmd_rereg_mr, void *vmr, uint32_t flags, void *addr, size_t length,
       uint64_t hca_va, int access, void *pd, void *cmd, size_t cmd_size,
       void *resp, size_t resp_size)
SV_CMD(ibv_cmd_dereg_mr, void *vmr)
SV_CMD(ibv_cmd_query_mr, void *pd, void *vmr, uint32_t mr_handle)
SV_CMD(ibv_cmd_advise_mr, void *pd, int advice, uint32_t flags, void *sg_list,
       uint32_t num_sge)
SV_CMD(ibv_cmd_reg_dmabuf_mr, void *pd, uint64_t offset, size_t length,
       uint64_t iova, int fd, int access, void *vmr, void *driver)
SV_CMD(ibv_cmd_alloc_mw, void *pd, int type, void *mw, void *cmd,
       size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_dealloc_mw, void *mw)
SV_CMD(ibv_cmd_alloc_dm, void *ctx, const void *dm_attr, void *dm, void *link)
SV_CMD(ibv_cmd_free_dm, void *dm)
SV_CMD(ibv_cmd_reg_dm_mr, void *pd, void *dm, uint64_t offset, size_t length,
       unsigned int access, void *vmr, void *link)

/* ---- CQ ---- */

SV_CMD(ibv_cmd_create_cq, void *context, int cqe, void *channel,
       int comp_vector, void *cq, void *cmd, size_t cmd_size, void *resp,
       size_t resp_size)
SV_CMD(ibv_cmd_create_cq_ex, void *context, const void *cq_attr, void *cq,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size,
       uint32_t cmd_flags)
SV_CMD(ibv_cmd_req_notify_cq, void *cq, int solicited_only)
SV_CMD(ibv_cmd_resize_cq, void *cq, int cqe, void *cmd, size_t cmd_size,
       void *resp, size_t resp_size)
SV_CMD(ibv_cmd_destroy_cq, void *cq)
SV_CMD(ibv_cmd_modify_cq, void *cq, void *attr, void *cmd, size_t cmd_size)

/* Returns the number of completions polled, or -1 on failure. */
SV_EXPORT int ibv_cmd_poll_cq(void *cq, int ne, void *wc);
SV_EXPORT int ibv_cmd_poll_cq(void *cq, int ne, void *wc)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* ---- SRQ ---- */

SV_CMD(ibv_cmd_create_srq, void *pd, void *srq, void *attr, void *cmd,
       size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_create_srq_ex, void *context, void *srq, void *attr_ex,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_modify_srq, void *srq, void *srq_attr, int srq_attr_mask,
       void *cmd, size_t cmd_size)
SV_CMD(ibv_cmd_query_srq, void *srq, void *srq_attr, void *cmd,
       size_t cmd_size)
SV_CMD(ibv_cmd_destroy_srq, void *srq)

/* ---- QP ---- */

SV_CMD(ibv_cmd_create_qp, void *pd, void *qp, void *attr, void *cmd,
       size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_create_qp_ex, void *context, void *qp, void *attr_ex,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_create_qp_ex2, void *context, void *qp, void *attr_ex,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_open_qp, void *context, void *qp, int vqp_size, void *attr,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_query_qp, void *qp, void *attr, int attr_mask, void *init_attr,
       void *cmd, size_t cmd_size)
SV_CMD(ibv_cmd_modify_qp, void *qp, void *attr, int attr_mask, void *cmd,
       size_t cmd_size)
SV_CMD(ibv_cmd_modify_qp_ex, void *qp, void *attr, int attr_mask, void *cmd,
       size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_destroy_qp, void *qp)

/*
 * Posting helpers: on failure the contract is that *bad_wr names the first
 * request not posted, so point it at the head of the list.
 */
#define SV_POST(name)                                                   \
	SV_EXPORT int name(void *q, void *wr, void **bad_wr);           \
	SV_EXPORT int name(void *q, void *wr, void **bad_wr)            \
	{                                                               \
		if (bad_wr)                                             \
			*bad_wr = wr;                                   \
		return sv_unsupported();                                \
	}

SV_POST(ibv_cmd_post_send)
SV_POST(ibv_cmd_post_recv)
SV_POST(ibv_cmd_post_srq_recv)

/* ---- AH and multicast ---- */

SV_CMD(ibv_cmd_create_ah, void *pd, void *ah, void *attr, void *resp,
       size_t resp_size)
SV_CMD(ibv_cmd_destroy_ah, void *ah)
SV_CMD(ibv_cmd_attach_mcast, void *qp, const void *gid, uint16_t lid)
SV_CMD(ibv_cmd_detach_mcast, void *qp, const void *gid, uint16_t lid)

/* ---- Flows, flow actions, WQs, RSS tables, counters ---- */

SV_CMD(ibv_cmd_create_flow, void *qp, void *flow_id, void *flow_attr,
       void *ucmd, size_t ucmd_size)
SV_CMD(ibv_cmd_destroy_flow, void *flow_id)
SV_CMD(ibv_cmd_create_flow_action_esp, void *ctx, void *attr,
       void *flow_action, void *driver)
SV_CMD(ibv_cmd_modify_flow_action_esp, void *flow_action, void *attr,
       void *driver)
SV_CMD(ibv_cmd_destroy_flow_action, void *action)
SV_CMD(ibv_cmd_create_wq, void *context, void *wq_init_attr, void *wq,
       void *cmd, size_t cmd_size, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_modify_wq, void *wq, void *attr, void *cmd, size_t cmd_size)
SV_CMD(ibv_cmd_destroy_wq, void *wq)
SV_CMD(ibv_cmd_create_rwq_ind_table, void *context, void *init_attr,
       void *rwq_ind_table, void *resp, size_t resp_size)
SV_CMD(ibv_cmd_destroy_rwq_ind_table, void *rwq_ind_table)
SV_CMD(ibv_cmd_create_counters, void *context, void *init_attr,
       void *vcounters, void *link)
SV_CMD(ibv_cmd_destroy_counters, void *vcounters)
SV_CMD(ibv_cmd_read_counters, void *vcounters, uint64_t *counters_value,
       uint32_t ncounters, uint32_t flags, void *link)
