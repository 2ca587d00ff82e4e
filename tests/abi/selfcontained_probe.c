/*
 * Probe of the self-contained parts of a libibverbs.so.1, loaded with dlopen
 * from an explicit path so that the same binary can examine both the system
 * library and ours (see selfcontained_diff.sh).
 *
 *   selfcontained_probe dump LIB SYSFS_DIR
 *       Print, deterministically, what the string tables, rate conversions,
 *       kernel-ABI copies and sysfs helpers of LIB return.  SYSFS_DIR holds
 *       the files written by selfcontained_diff.sh.  Run once per library and
 *       diff the outputs.
 *
 *   selfcontained_probe stubs LIB
 *       Call every @IBVERBS_1.0 compat entry point, ibv_register_driver
 *       @IBVERBS_1.1, the IBVERBS_PRIVATE_34 stubs and the unsupported verbs
 *       with NULL/dummy arguments and check that each fails cleanly.  Only
 *       meaningful for softverbs (the real ones would dereference NULL).
 *
 * Exit status: 0 success, 1 failure, 2 usage or load error.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *lib;
static int failures;

static void *sym(const char *name)
{
	void *p = dlsym(lib, name);

	if (!p) {
		printf("MISSING %s\n", name);
		failures++;
	}
	return p;
}

static void *vsym(const char *name, const char *version)
{
	void *p = dlvsym(lib, name, version);

	if (!p) {
		printf("MISSING %s@%s\n", name, version);
		failures++;
	}
	return p;
}

static void hexdump(const char *tag, const void *p, size_t len)
{
	const unsigned char *c = p;

	printf("%s:", tag);
	for (size_t i = 0; i < len; i++)
		printf("%02x", c[i]);
	printf("\n");
}

static void pattern(void *p, size_t len, unsigned mul, unsigned add)
{
	unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		c[i] = (unsigned char)(i * mul + add);
}

typedef const char *(*str_fn)(int);

static void dump_strings(const char *name, int hi)
{
	str_fn f = (str_fn)sym(name);

	if (!f)
		return;
	for (int i = -3; i <= hi; i++)
		printf("%s(%d) = \"%s\"\n", name, i, f(i));
	printf("%s(INT_MAX) = \"%s\"\n", name, f(0x7fffffff));
}

static void dump_rates(void)
{
	int (*to_mult)(int) = (int (*)(int))sym("ibv_rate_to_mult");
	int (*to_mbps)(int) = (int (*)(int))sym("ibv_rate_to_mbps");
	int (*from_mult)(int) = (int (*)(int))sym("mult_to_ibv_rate");
	int (*from_mbps)(int) = (int (*)(int))sym("mbps_to_ibv_rate");

	if (!to_mult || !to_mbps || !from_mult || !from_mbps)
		return;
	for (int r = -3; r <= 40; r++)
		printf("rate %d: mult %d mbps %d\n", r, to_mult(r), to_mbps(r));
	for (int m = -3; m <= 1000; m++)
		if (from_mult(m) != 0 || m <= 0)
			printf("mult_to_ibv_rate(%d) = %d\n", m, from_mult(m));
	/* Every Mb/s value up to well past the fastest rate. */
	for (int v = -3; v <= 1400000; v++) {
		int r = from_mbps(v);

		if (r != 0 || v <= 0)
			printf("mbps_to_ibv_rate(%d) = %d\n", v, r);
	}
	printf("mbps_to_ibv_rate(INT_MAX) = %d\n", from_mbps(0x7fffffff));
}

static void dump_kern_copies(void)
{
	void (*qp)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *) =
		(void (*)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *))sym(
			"ibv_copy_qp_attr_from_kern");
	void (*ah)(struct ibv_ah_attr *, struct ib_uverbs_ah_attr *) =
		(void (*)(struct ibv_ah_attr *, struct ib_uverbs_ah_attr *))sym(
			"ibv_copy_ah_attr_from_kern");
	void (*pfrom)(struct ibv_sa_path_rec *, struct ib_user_path_rec *) =
		(void (*)(struct ibv_sa_path_rec *, struct ib_user_path_rec *))sym(
			"ibv_copy_path_rec_from_kern");
	void (*pto)(struct ib_user_path_rec *, struct ibv_sa_path_rec *) =
		(void (*)(struct ib_user_path_rec *, struct ibv_sa_path_rec *))sym(
			"ibv_copy_path_rec_to_kern");
	struct ib_uverbs_qp_attr kqp;
	struct ibv_qp_attr uqp;
	struct ibv_ah_attr uah;
	struct ib_user_path_rec kpr;
	struct ibv_sa_path_rec upr;

	/* Distinct byte patterns on each side, so that every destination byte
	 * shows where it came from or that it was left alone. */
	for (unsigned seed = 1; seed <= 3; seed++) {
		printf("seed %u\n", seed);
		pattern(&kqp, sizeof(kqp), 7 * seed, 3);
		if (qp) {
			memset(&uqp, 0xee, sizeof(uqp));
			qp(&uqp, &kqp);
			hexdump("qp_attr_from_kern", &uqp, sizeof(uqp));
		}
		if (ah) {
			memset(&uah, 0xee, sizeof(uah));
			ah(&uah, &kqp.alt_ah_attr);
			hexdump("ah_attr_from_kern", &uah, sizeof(uah));
		}
		pattern(&kpr, sizeof(kpr), 5 * seed, 1);
		if (pfrom) {
			memset(&upr, 0xee, sizeof(upr));
			pfrom(&upr, &kpr);
			hexdump("path_rec_from_kern", &upr, sizeof(upr));
		}
		pattern(&upr, sizeof(upr), 11 * seed, 9);
		if (pto) {
			memset(&kpr, 0xee, sizeof(kpr));
			pto(&kpr, &upr);
			hexdump("path_rec_to_kern", &kpr, sizeof(kpr));
		}
	}
}

static void dump_sysfs(const char *dir)
{
	const char *(*path)(void) = (const char *(*)(void))sym("ibv_get_sysfs_path");
	int (*rd)(const char *, const char *, char *, size_t) =
		(int (*)(const char *, const char *, char *, size_t))sym(
			"ibv_read_sysfs_file");
	static const struct {
		const char *file;
		size_t size;
	} cases[] = {
		{ "newline", 64 }, { "no_newline", 64 }, { "exact", 8 },
		{ "exact_newline", 8 }, { "two_newlines", 64 }, { "empty", 64 },
		{ "big", 16 }, { "big", 4096 }, { "missing", 64 },
		{ "newline", 0 }, { "sub/nested", 64 },
	};

	if (path)
		printf("ibv_get_sysfs_path() = \"%s\"\n", path());
	if (!rd)
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[4096 + 1];
		int r;

		memset(buf, 'X', sizeof(buf));
		errno = 0;
		r = rd(dir, cases[i].file, buf, cases[i].size);
		printf("ibv_read_sysfs_file(%s, %zu) = %d", cases[i].file,
		       cases[i].size, r);
		if (r < 0)
			printf(" errno %s", errno == ENOENT ? "ENOENT" : "set");
		if (r >= 0 && (size_t)r < cases[i].size)
			printf(" \"%.*s\" nul %d", r, buf, buf[r] == '\0');
		printf("\n");
	}
}

/* ---- stubs mode ---- */

static void expect(bool ok, const char *what)
{
	if (!ok) {
		printf("FAIL %s\n", what);
		failures++;
	} else {
		printf("ok   %s\n", what);
	}
}

typedef void *(*ptr_fn)(void *, void *, void *, void *, void *, void *);
typedef int (*int_fn)(void *, void *, void *, void *, void *, void *);
typedef void (*void_fn)(void *, void *, void *, void *, void *, void *);

static void check_ptr(void *f, const char *name)
{
	char what[160];
	void *r;

	if (!f)
		return;
	errno = 0;
	r = ((ptr_fn)f)(NULL, NULL, NULL, NULL, NULL, NULL);
	snprintf(what, sizeof(what), "%s -> NULL, EOPNOTSUPP", name);
	expect(!r && errno == EOPNOTSUPP, what);
}

/* want: the return value; errno must be EOPNOTSUPP too. */
static void check_int(void *f, const char *name, int want)
{
	char what[160];
	int r;

	if (!f)
		return;
	errno = 0;
	r = ((int_fn)f)(NULL, NULL, NULL, NULL, NULL, NULL);
	snprintf(what, sizeof(what), "%s -> %d (want %d), errno %d", name, r,
		 want, errno);
	expect(r == want && errno == EOPNOTSUPP, what);
}

static void check_void(void *f, const char *name)
{
	char what[160];

	if (!f)
		return;
	((void_fn)f)(NULL, NULL, NULL, NULL, NULL, NULL);
	snprintf(what, sizeof(what), "%s returns", name);
	expect(true, what);
}

static int stubs(void)
{
	static const char *const compat_ptr[] = {
		"ibv_get_device_list", "ibv_get_device_name", "ibv_open_device",
		"ibv_alloc_pd", "ibv_reg_mr", "ibv_create_cq", "ibv_create_srq",
		"ibv_create_qp", "ibv_create_ah",
	};
	static const char *const compat_errno[] = {
		"ibv_query_device", "ibv_query_port", "ibv_dealloc_pd",
		"ibv_dereg_mr", "ibv_resize_cq", "ibv_destroy_cq",
		"ibv_modify_srq", "ibv_query_srq", "ibv_destroy_srq",
		"ibv_query_qp", "ibv_modify_qp", "ibv_destroy_qp",
		"ibv_destroy_ah", "ibv_attach_mcast", "ibv_detach_mcast",
	};
	static const char *const compat_minus1[] = {
		"ibv_close_device", "ibv_get_async_event", "ibv_get_cq_event",
		"ibv_query_gid", "ibv_query_pkey",
	};
	static const char *const compat_void[] = {
		"ibv_free_device_list", "ibv_ack_async_event",
		"ibv_ack_cq_events",
	};
	static const char *const unsup_ptr[] = {
		"ibv_reg_dmabuf_mr",
		"_verbs_init_and_alloc_context", "verbs_open_device",
	};
	static const char *const unsup_int[] = {
		"ibv_query_ece", "ibv_set_ece", "ibv_resolve_eth_l2_from_gid",
		"execute_ioctl",
		"ibv_cmd_advise_mr", "ibv_cmd_alloc_dm", "ibv_cmd_alloc_mw",
		"ibv_cmd_alloc_pd", "ibv_cmd_attach_mcast", "ibv_cmd_close_xrcd",
		"ibv_cmd_create_ah", "ibv_cmd_create_counters",
		"ibv_cmd_create_cq", "ibv_cmd_create_cq_ex",
		"ibv_cmd_create_flow", "ibv_cmd_create_flow_action_esp",
		"ibv_cmd_create_qp", "ibv_cmd_create_qp_ex",
		"ibv_cmd_create_qp_ex2", "ibv_cmd_create_rwq_ind_table",
		"ibv_cmd_create_srq", "ibv_cmd_create_srq_ex",
		"ibv_cmd_create_wq", "ibv_cmd_dealloc_mw", "ibv_cmd_dealloc_pd",
		"ibv_cmd_dereg_mr", "ibv_cmd_destroy_ah",
		"ibv_cmd_destroy_counters", "ibv_cmd_destroy_cq",
		"ibv_cmd_destroy_flow", "ibv_cmd_destroy_flow_action",
		"ibv_cmd_destroy_qp", "ibv_cmd_destroy_rwq_ind_table",
		"ibv_cmd_destroy_srq", "ibv_cmd_destroy_wq",
		"ibv_cmd_detach_mcast", "ibv_cmd_free_dm",
		"ibv_cmd_get_context", "ibv_cmd_modify_cq",
		"ibv_cmd_modify_flow_action_esp", "ibv_cmd_modify_qp",
		"ibv_cmd_modify_qp_ex", "ibv_cmd_modify_srq",
		"ibv_cmd_modify_wq", "ibv_cmd_open_qp", "ibv_cmd_open_xrcd",
		"ibv_cmd_post_recv", "ibv_cmd_post_send",
		"ibv_cmd_post_srq_recv", "ibv_cmd_query_context",
		"ibv_cmd_query_device_any", "ibv_cmd_query_mr",
		"ibv_cmd_query_port", "ibv_cmd_query_qp", "ibv_cmd_query_srq",
		"ibv_cmd_read_counters", "ibv_cmd_reg_dm_mr",
		"ibv_cmd_reg_dmabuf_mr", "ibv_cmd_reg_mr",
		"ibv_cmd_req_notify_cq", "ibv_cmd_rereg_mr",
		"ibv_cmd_resize_cq",
	};
	static const char *const unsup_void[] = {
		"verbs_register_driver_34", "verbs_set_ops",
		"verbs_uninit_context", "verbs_init_cq", "__verbs_log",
	};
	size_t i;

	for (i = 0; i < sizeof(compat_ptr) / sizeof(*compat_ptr); i++)
		check_ptr(vsym(compat_ptr[i], "IBVERBS_1.0"), compat_ptr[i]);
	for (i = 0; i < sizeof(compat_errno) / sizeof(*compat_errno); i++)
		check_int(vsym(compat_errno[i], "IBVERBS_1.0"), compat_errno[i],
			  EOPNOTSUPP);
	for (i = 0; i < sizeof(compat_minus1) / sizeof(*compat_minus1); i++)
		check_int(vsym(compat_minus1[i], "IBVERBS_1.0"),
			  compat_minus1[i], -1);
	for (i = 0; i < sizeof(compat_void) / sizeof(*compat_void); i++)
		check_void(vsym(compat_void[i], "IBVERBS_1.0"), compat_void[i]);
	{
		uint64_t (*guid)(void *) =
			(uint64_t (*)(void *))vsym("ibv_get_device_guid",
						   "IBVERBS_1.0");

		if (guid) {
			errno = 0;
			expect(guid(NULL) == 0 && errno == EOPNOTSUPP,
			       "ibv_get_device_guid@IBVERBS_1.0 -> 0, EOPNOTSUPP");
		}
	}
	check_void(vsym("ibv_register_driver", "IBVERBS_1.1"),
		   "ibv_register_driver@IBVERBS_1.1");

	for (i = 0; i < sizeof(unsup_ptr) / sizeof(*unsup_ptr); i++)
		check_ptr(sym(unsup_ptr[i]), unsup_ptr[i]);
	for (i = 0; i < sizeof(unsup_int) / sizeof(*unsup_int); i++)
		check_int(sym(unsup_int[i]), unsup_int[i], EOPNOTSUPP);
	for (i = 0; i < sizeof(unsup_void) / sizeof(*unsup_void); i++)
		check_void(sym(unsup_void[i]), unsup_void[i]);

	{
		int (*poll)(void *, int, void *) =
			(int (*)(void *, int, void *))sym("ibv_cmd_poll_cq");
		int (*rd)(char *, size_t, void *, const char *, ...) =
			(int (*)(char *, size_t, void *, const char *, ...))sym(
				"ibv_read_ibdev_sysfs_file");
		unsigned (*nattrs)(unsigned, void *) =
			(unsigned (*)(unsigned, void *))sym("__ioctl_final_num_attrs");
		bool *allow = sym("verbs_allow_disassociate_destroy");
		int (*post)(void *, void *, void **) =
			(int (*)(void *, void *, void **))sym("ibv_cmd_post_send");
		int (*fork_init)(void) = (int (*)(void))sym("ibv_fork_init");
		int (*fork_status)(void) = (int (*)(void))sym("ibv_is_fork_initialized");
		int (*dontfork)(void *, size_t) =
			(int (*)(void *, size_t))sym("ibv_dontfork_range");
		int (*dofork)(void *, size_t) =
			(int (*)(void *, size_t))sym("ibv_dofork_range");

		if (poll) {
			errno = 0;
			expect(poll(NULL, 16, NULL) == -1 && errno == EOPNOTSUPP,
			       "ibv_cmd_poll_cq -> -1, EOPNOTSUPP");
		}
		if (rd) {
			char buf[8];

			errno = 0;
			expect(rd(buf, sizeof(buf), NULL, "%s", "x") == -1 &&
				       errno == EOPNOTSUPP,
			       "ibv_read_ibdev_sysfs_file -> -1, EOPNOTSUPP");
		}
		if (nattrs)
			expect(nattrs(5, NULL) == 5,
			       "__ioctl_final_num_attrs keeps the count");
		if (allow)
			expect(*allow == false,
			       "verbs_allow_disassociate_destroy is false");
		if (post) {
			int wr;
			void *bad = NULL;

			expect(post(NULL, &wr, &bad) == EOPNOTSUPP && bad == &wr,
			       "ibv_cmd_post_send sets *bad_wr");
		}
		if (fork_init)
			expect(fork_init() == 0, "ibv_fork_init -> 0");
		if (fork_status)
			expect(fork_status() == IBV_FORK_UNNEEDED,
			       "ibv_is_fork_initialized -> IBV_FORK_UNNEEDED");
		if (dontfork && dofork)
			expect(dontfork(&failures, sizeof(failures)) == 0 &&
				       dofork(&failures, sizeof(failures)) == 0,
			       "ibv_dontfork_range/ibv_dofork_range -> 0");
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "dump") && strcmp(argv[1], "stubs")) ||
	    (!strcmp(argv[1], "dump") && argc < 4)) {
		fprintf(stderr,
			"usage: %s dump LIB SYSFS_DIR | %s stubs LIB\n",
			argv[0], argv[0]);
		return 2;
	}
	lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
		return 2;
	}
	if (!strcmp(argv[1], "stubs"))
		return stubs();

	dump_strings("ibv_node_type_str", 12);
	dump_strings("ibv_port_state_str", 10);
	dump_strings("ibv_event_type_str", 24);
	dump_strings("ibv_wc_status_str", 30);
	dump_rates();
	dump_kern_copies();
	dump_sysfs(argv[3]);
	fflush(stdout);
	return failures ? 1 : 0;
}
