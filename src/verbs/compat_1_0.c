/*
 * softverbs: non-default symbol versions kept for binary compatibility.
 *
 * rdma-core's libibverbs.so.1 still exports 33 functions as name@IBVERBS_1.0
 * (the pre-2006 API with different struct layouts) next to the current
 * name@@IBVERBS_1.1, and ibv_register_driver@IBVERBS_1.1 (the pre-provider-ABI
 * way to register a driver).  Only binaries linked against libibverbs 1.0
 * bind to them, and softverbs does not support that API: each entry point
 * fails cleanly without touching its arguments.
 *
 * Conventions (following the documented error style of each verb):
 *   - pointer-returning: NULL, errno = EOPNOTSUPP;
 *   - verbs that report errors by returning an errno value: EOPNOTSUPP
 *     (errno is set as well);
 *   - verbs documented to return -1 on failure (get_async_event,
 *     get_cq_event, query_gid, query_pkey, close_device): -1 with
 *     errno = EOPNOTSUPP, so callers that test "< 0" also see the failure;
 *   - void: nothing.
 *
 * The implementations are named sv_compat_<verb>_1_0; the .symver directives
 * give them their exported versioned names, and the "local: *" of
 * abi/libibverbs.map hides the sv_compat_* names themselves.  No prototypes from <infiniband/verbs.h>
 * are used on purpose: the 1.0 structures differ from the current ones and
 * none of the arguments is ever dereferenced.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/* Stubs ignore their arguments by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define SV_USED __attribute__((used))

/* Export impl as sym@IBVERBS_1.0 (non-default version). */
#define SV_COMPAT_1_0(impl, sym) \
	__asm__(".symver " #impl ", " #sym "@IBVERBS_1.0")

static void *sv_fail_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int sv_fail_errno(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

static int sv_fail_minus1(void)
{
	errno = EOPNOTSUPP;
	return -1;
}

/* Defines a pointer-returning stub with the given parameter list. */
#define SV_PTR_STUB(sym, ...)                                         \
	SV_USED void *sv_compat_##sym##_1_0(__VA_ARGS__);             \
	SV_USED void *sv_compat_##sym##_1_0(__VA_ARGS__)              \
	{                                                             \
		return sv_fail_null();                                \
	}                                                             \
	SV_COMPAT_1_0(sv_compat_##sym##_1_0, sym)

/* Defines an int-returning stub that returns EOPNOTSUPP. */
#define SV_ERRNO_STUB(sym, ...)                                       \
	SV_USED int sv_compat_##sym##_1_0(__VA_ARGS__);               \
	SV_USED int sv_compat_##sym##_1_0(__VA_ARGS__)                \
	{                                                             \
		return sv_fail_errno();                               \
	}                                                             \
	SV_COMPAT_1_0(sv_compat_##sym##_1_0, sym)

/* Defines an int-returning stub that returns -1. */
#define SV_MINUS1_STUB(sym, ...)                                      \
	SV_USED int sv_compat_##sym##_1_0(__VA_ARGS__);               \
	SV_USED int sv_compat_##sym##_1_0(__VA_ARGS__)                \
	{                                                             \
		return sv_fail_minus1();                              \
	}                                                             \
	SV_COMPAT_1_0(sv_compat_##sym##_1_0, sym)

/* Defines a void stub. */
#define SV_VOID_STUB(sym, ...)                                        \
	SV_USED void sv_compat_##sym##_1_0(__VA_ARGS__);              \
	SV_USED void sv_compat_##sym##_1_0(__VA_ARGS__)               \
	{                                                             \
	}                                                             \
	SV_COMPAT_1_0(sv_compat_##sym##_1_0, sym)

/* Devices and contexts. */
SV_PTR_STUB(ibv_get_device_list, int *num_devices);
SV_VOID_STUB(ibv_free_device_list, void *list);
SV_PTR_STUB(ibv_get_device_name, void *device);
SV_PTR_STUB(ibv_open_device, void *device);
SV_MINUS1_STUB(ibv_close_device, void *context);
SV_MINUS1_STUB(ibv_get_async_event, void *context, void *event);
SV_VOID_STUB(ibv_ack_async_event, void *event);

/* The GUID is returned by value (big-endian 64-bit); 0 is "no GUID". */
SV_USED uint64_t sv_compat_ibv_get_device_guid_1_0(void *device);
SV_USED uint64_t sv_compat_ibv_get_device_guid_1_0(void *device)
{
	errno = EOPNOTSUPP;
	return 0;
}
SV_COMPAT_1_0(sv_compat_ibv_get_device_guid_1_0, ibv_get_device_guid);

/* Queries. */
SV_ERRNO_STUB(ibv_query_device, void *context, void *device_attr);
SV_ERRNO_STUB(ibv_query_port, void *context, uint8_t port_num, void *port_attr);
SV_MINUS1_STUB(ibv_query_gid, void *context, uint8_t port_num, int index, void *gid);
SV_MINUS1_STUB(ibv_query_pkey, void *context, uint8_t port_num, int index, void *pkey);

/* Protection domains and memory regions. */
SV_PTR_STUB(ibv_alloc_pd, void *context);
SV_ERRNO_STUB(ibv_dealloc_pd, void *pd);
SV_PTR_STUB(ibv_reg_mr, void *pd, void *addr, size_t length, int access);
SV_ERRNO_STUB(ibv_dereg_mr, void *mr);

/* Completion queues. */
SV_PTR_STUB(ibv_create_cq, void *context, int cqe, void *cq_context, void *channel, int comp_vector);
SV_ERRNO_STUB(ibv_resize_cq, void *cq, int cqe);
SV_ERRNO_STUB(ibv_destroy_cq, void *cq);
SV_MINUS1_STUB(ibv_get_cq_event, void *channel, void *cq, void *cq_context);
SV_VOID_STUB(ibv_ack_cq_events, void *cq, unsigned int nevents);

/* Shared receive queues. */
SV_PTR_STUB(ibv_create_srq, void *pd, void *srq_init_attr);
SV_ERRNO_STUB(ibv_modify_srq, void *srq, void *srq_attr, int srq_attr_mask);
SV_ERRNO_STUB(ibv_query_srq, void *srq, void *srq_attr);
SV_ERRNO_STUB(ibv_destroy_srq, void *srq);

/* Queue pairs. */
SV_PTR_STUB(ibv_create_qp, void *pd, void *qp_init_attr);
SV_ERRNO_STUB(ibv_query_qp, void *qp, void *attr, int attr_mask, void *init_attr);
SV_ERRNO_STUB(ibv_modify_qp, void *qp, void *attr, int attr_mask);
SV_ERRNO_STUB(ibv_destroy_qp, void *qp);

/* Address handles and multicast. */
SV_PTR_STUB(ibv_create_ah, void *pd, void *attr);
SV_ERRNO_STUB(ibv_destroy_ah, void *ah);
SV_ERRNO_STUB(ibv_attach_mcast, void *qp, const void *gid, uint16_t lid);
SV_ERRNO_STUB(ibv_detach_mcast, void *qp, const void *gid, uint16_t lid);

/*
 * ibv_register_driver@IBVERBS_1.1 (there is no default version): the
 * registration hook of libibverbs 1.1-era out-of-tree drivers.  softverbs
 * loads no drivers, so registering one is accepted and ignored.
 */
SV_USED void sv_compat_ibv_register_driver_1_1(const char *name, void *init_func);
SV_USED void sv_compat_ibv_register_driver_1_1(const char *name, void *init_func)
{
}
__asm__(".symver sv_compat_ibv_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");
