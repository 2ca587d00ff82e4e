/* Device contexts: open/close, the ops tables, and device/port queries. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/api.h"
#include "util/sys.h"
#include "util/time.h"
#include "verbs/ops.h"
#include "verbs/sv.h"

bool sv_is_our_device(struct ibv_device *device);

/* The legacy ops table that the header's inline functions call through. */
static const struct ibv_context_ops sv_ctx_ops = {
	.poll_cq = sv_poll_cq,
	.req_notify_cq = sv_req_notify_cq,
	.post_srq_recv = sv_post_srq_recv,
	.post_send = sv_post_send,
	.post_recv = sv_post_recv,
	.alloc_mw = sv_alloc_mw,
	.dealloc_mw = sv_dealloc_mw,
	.bind_mw = sv_bind_mw,
};

static void fill_device_attr(struct ibv_device_attr *a)
{
	const struct sv_addr_plan *p = sv_engine_addr_plan();

	memset(a, 0, sizeof(*a));
	strcpy(a->fw_ver, "1.0.0");
	a->node_guid = p->guid;
	a->sys_image_guid = p->guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = SV_VENDOR_ID;
	a->vendor_part_id = SV_VENDOR_PART_ID;
	a->hw_ver = 1;
	a->max_qp = SV_MAX_QP;
	a->max_qp_wr = SV_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SHUTDOWN_PORT |
			      IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_N_NOTIFY_CQ |
			      IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_MEM_MGT_EXTENSIONS | IBV_DEVICE_XRC;
	a->max_sge = SV_MAX_SGE;
	a->max_sge_rd = SV_MAX_SGE;
	a->max_cq = 1 << 16;
	a->max_cqe = SV_MAX_CQE;
	a->max_mr = 1 << 20;
	a->max_mw = 1 << 20;                   /* windows share the MRs' key table */
	a->max_pd = 1 << 16;
	a->max_qp_rd_atom = SV_MAX_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = SV_MAX_RD_ATOM << 16;
	a->max_qp_init_rd_atom = SV_MAX_RD_ATOM;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ah = 1 << 16;
	a->max_srq = 1 << 16;
	a->max_srq_wr = SV_MAX_QP_WR;
	a->max_srq_sge = SV_MAX_SGE;
	a->max_mcast_grp = SV_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SV_MAX_QP;
	a->max_total_mcast_qp_attach = SV_MAX_MCAST_GRP * SV_MAX_QP;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	fill_device_attr(device_attr);
	return 0;
}

static int sv_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex ex;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(ex.orig_attr))
		return EINVAL;
	memset(&ex, 0, sizeof(ex));
	fill_device_attr(&ex.orig_attr);
	ex.completion_timestamp_mask = UINT64_MAX;
	ex.hca_core_clock = 1000000;           /* kHz: timestamps are nanoseconds */
	ex.device_cap_flags_ex = ex.orig_attr.device_cap_flags;
	ex.max_dm_size = SV_DM_MAX_SIZE;     /* per process (verbs/dm.c) */
	ex.raw_packet_caps = 0;
	/* Every MR follows the page tables (verbs/mr.c): ODP, implicit too, for
	 * every operation of every transport. */
	ex.xrc_odp_caps = SV_ODP_XRC;
	ex.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	ex.odp_caps.per_transport_caps.rc_odp_caps = SV_ODP_RC;
	ex.odp_caps.per_transport_caps.uc_odp_caps = SV_ODP_UC;
	ex.odp_caps.per_transport_caps.ud_odp_caps = SV_ODP_UD;
	ex.phys_port_cnt_ex = ex.orig_attr.phys_port_cnt;
	ex.pci_atomic_caps.fetch_add = 0;
	memcpy(attr, &ex, attr_size < sizeof(ex) ? attr_size : sizeof(ex));
	return 0;
}

static void fill_port_attr(struct ibv_port_attr *a)
{
	const struct sv_addr_plan *p = sv_engine_addr_plan();

	memset(a, 0, sizeof(*a));
	a->state = IBV_PORT_ACTIVE;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = IBV_MTU_4096;
	a->gid_tbl_len = 1;
	a->port_cap_flags = IBV_PORT_CM_SUP;
	a->max_msg_sz = SV_MAX_MSG;
	a->pkey_tbl_len = 1;
	a->lid = p->lid;
	a->sm_lid = p->lid;
	a->lmc = 0;
	a->max_vl_num = 1;
	a->sm_sl = 0;
	a->subnet_timeout = 18;
	a->active_width = 2;                   /* 4X */
	a->active_speed = 32;                  /* EDR */
	a->phys_state = 5;                     /* LinkUp */
	a->link_layer = IBV_LINK_LAYER_INFINIBAND;
}

static int sv_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr a;

	if (port_num != 1)
		return EINVAL;
	fill_port_attr(&a);
	memcpy(port_attr, &a, port_attr_len < sizeof(a) ? port_attr_len : sizeof(a));
	return 0;
}

/* The exported symbol, used by programs built before the extended op existed:
 * their struct ends at link_layer. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	return sv_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
			     offsetof(struct ibv_port_attr, link_layer) + 1);
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*gid = sv_engine_addr_plan()->gid;
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (flags || entry_size < sizeof(*entry))
		return EINVAL;
	if (port_num != 1)
		return EINVAL;
	if (gid_index != 0)
		return ENODATA;
	memset(entry, 0, sizeof(*entry));
	entry->gid = sv_engine_addr_plan()->gid;
	entry->gid_index = 0;
	entry->port_num = 1;
	entry->gid_type = IBV_GID_TYPE_IB;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	int ret;

	if (!max_entries)
		return -EINVAL;
	ret = _ibv_query_gid_ex(context, 1, 0, entries, flags, entry_size);
	return ret ? -ret : 1;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(SV_PKEY_DEFAULT);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	if (port_num != 1 || (be16toh(pkey) & 0x7fff) != (SV_PKEY_DEFAULT & 0x7fff)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int sv_query_rt_values(struct ibv_context *context, struct ibv_values_ex *values)
{
	uint64_t ns;

	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	ns = sv_now_ns();
	values->raw_clock.tv_sec = 0;
	values->raw_clock.tv_nsec = (long)ns;  /* raw cycles of a 1 GHz clock */
	values->comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	return 0;
}

/* ---- async events ---- */

void sv_async_post(struct sv_context *ctx, const struct ibv_async_event *ev)
{
	struct sv_async_ev *e = calloc(1, sizeof(*e));

	if (!e)
		return;
	e->ev = *ev;
	pthread_mutex_lock(&ctx->async_lock);
	sv_list_add_tail(&ctx->async_q, &e->link);
	sv_evfd_set(&ctx->async_ev);
	pthread_mutex_unlock(&ctx->async_lock);
}

/* ---- open and close ---- */

static void set_verbs_ops(struct verbs_context *v)
{
	v->query_port = sv_query_port;
	v->query_device_ex = sv_query_device_ex;
	v->advise_mr = sv_advise_mr;
	v->alloc_dm = sv_alloc_dm;
	v->alloc_parent_domain = sv_alloc_parent_domain;
	v->alloc_td = sv_alloc_td;
	v->dealloc_td = sv_dealloc_td;
	v->free_dm = sv_free_dm;
	v->reg_dm_mr = sv_reg_dm_mr;
	v->query_rt_values = sv_query_rt_values;
	v->create_cq_ex = sv_create_cq_ex;
	v->create_qp_ex = sv_create_qp_ex;
	v->create_srq_ex = sv_create_srq_ex;
	v->get_srq_num = sv_get_srq_num;
	v->open_xrcd = sv_open_xrcd;
	v->close_xrcd = sv_close_xrcd;
	v->modify_cq = sv_modify_cq;
	v->sz = sizeof(*v);
}

/* There is no uverbs device behind cmd_fd, but callers dup it and hand it to
 * ibv_import_device (verbs/import.c), which knows the context by the
 * descriptor's inode: an empty memfd of its own, sealed so that a command
 * written to it fails. */
static int open_cmd_fd(void)
{
	int fd = memfd_create(SV_CMD_FD_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd >= 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_SHRINK |
			     F_SEAL_WRITE)) {
		sv_close(fd);
		return -1;
	}
	return fd;
}

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_list contexts = SV_LIST_INIT(contexts);

static uint64_t fd_inode(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (uint64_t)st.st_ino;
}

/* The device of this process's contexts on device context `dev_ctx`, if any. */
static struct ibv_device *context_device(uint64_t dev_ctx)
{
	struct ibv_device *dev = NULL;
	struct sv_list *pos;

	pthread_mutex_lock(&ctx_lock);
	sv_list_for_each(pos, &contexts) {
		struct sv_context *c = sv_container_of(pos, struct sv_context, link);

		if (c->dev_ctx == dev_ctx && c->pid == getpid())
			dev = c->vctx.context.device;
	}
	pthread_mutex_unlock(&ctx_lock);
	return dev;
}

/* Is `fd` the cmd_fd of a softverbs context (a memfd of that name)? */
static bool is_cmd_fd(int fd)
{
	char path[64], target[128];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = 0;
	return strstr(target, "memfd:" SV_CMD_FD_NAME) != NULL;
}

/* ibv_import_device(3): a context on the device context whose cmd_fd was
 * dup'd into `cmd_fd`.  Objects are this process's memory: a device
 * context of another process (its cmd_fd passed over SCM_RIGHTS or
 * inherited) cannot be shared, and is EOPNOTSUPP. */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	struct ibv_device *dev;

	if (!is_cmd_fd(cmd_fd)) {
		errno = EINVAL;
		return NULL;
	}
	dev = context_device(fd_inode(cmd_fd));
	if (!dev) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	return sv_context_open(dev, cmd_fd);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (!sv_is_our_device(device)) {
		errno = ENODEV;
		return NULL;
	}
	return sv_context_open(device, -1);
}

/* A context on `device`; cmd_fd -1: a new device context, else the
 * (dup'd) descriptor of an existing one, which the context takes. */
struct ibv_context *sv_context_open(struct ibv_device *device, int cmd_fd)
{
	struct sv_context *ctx;
	struct ibv_context *c;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	c = &ctx->vctx.context;
	ctx->node = sv_engine_open();
	c->cmd_fd = cmd_fd;
	if (sv_evfd_init(&ctx->async_ev) || !ctx->node ||
	    (cmd_fd < 0 && (c->cmd_fd = open_cmd_fd()) < 0)) {
		int e = ctx->node ? errno : ENOMEM;

		if (ctx->node)
			sv_engine_close(ctx->node);
		if (ctx->async_ev.fd >= 0)
			sv_close(ctx->async_ev.fd);
		free(ctx);
		errno = e;
		return NULL;
	}
	pthread_mutex_init(&ctx->async_lock, NULL);
	sv_list_init(&ctx->async_q);
	set_verbs_ops(&ctx->vctx);
	c->device = device;
	c->ops = sv_ctx_ops;
	c->async_fd = ctx->async_ev.fd;
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->dev_ctx = fd_inode(c->cmd_fd);
	ctx->pid = getpid();
	pthread_mutex_lock(&ctx_lock);
	sv_list_add_tail(&contexts, &ctx->link);
	pthread_mutex_unlock(&ctx_lock);
	return c;
}

int ibv_close_device(struct ibv_context *context)
{
	struct sv_context *ctx = to_sctx(context);
	struct sv_list *pos, *tmp;

	pthread_mutex_lock(&ctx_lock);
	sv_list_del(&ctx->link);
	pthread_mutex_unlock(&ctx_lock);
	sv_list_for_each_safe(pos, tmp, &ctx->async_q) {
		sv_list_del(pos);
		free(sv_container_of(pos, struct sv_async_ev, link));
	}
	sv_close(ctx->async_ev.fd);
	sv_close(context->cmd_fd);
	sv_engine_close(ctx->node);
	pthread_mutex_destroy(&ctx->async_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

/* IBVERBS_PRIVATE_34: GID types as sysfs reports them; ours are IB GIDs. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*type = 0;      /* IBV_GID_TYPE_SYSFS_IB_ROCE_V1 */
	return 0;
}
