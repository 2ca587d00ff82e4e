/*
 * softverbs: public verbs the software device cannot provide, and the sysfs
 * helpers.
 *
 * ECE negotiation, dma-buf registration and resolving Ethernet L2
 * addresses from a RoCE GID all need a kernel uverbs device; softverbs has
 * none.  Pointer-returning calls give NULL with errno = EOPNOTSUPP,
 * int-returning ones return EOPNOTSUPP (and set errno).
 */
#define _GNU_SOURCE /* secure_getenv */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stubs ignore their arguments by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Not in the installed headers (rdma-core declares them for providers). */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

static int sv_enotsup(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

static void *sv_enotsup_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return sv_enotsup();
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return sv_enotsup();
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
				struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE],
				uint16_t *vid)
{
	return sv_enotsup();
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd,
				 int access)
{
	return sv_enotsup_null();
}

/*
 * sysfs root: "/sys", or $SYSFS_PATH without trailing slashes when set
 * (the override rdma-core honours, used for testing against fake trees).
 * Computed once; the returned string lives for the life of the process.
 */
static char sv_sysfs_path[PATH_MAX] = "/sys";
static pthread_once_t sv_sysfs_once = PTHREAD_ONCE_INIT;

static void sv_sysfs_path_init(void)
{
	const char *env = secure_getenv("SYSFS_PATH");
	size_t len;

	if (!env || !*env)
		return;
	len = strnlen(env, sizeof(sv_sysfs_path) - 1);
	while (len > 1 && env[len - 1] == '/')
		len--;
	memcpy(sv_sysfs_path, env, len);
	sv_sysfs_path[len] = '\0';
}

const char *ibv_get_sysfs_path(void)
{
	pthread_once(&sv_sysfs_once, sv_sysfs_path_init);
	return sv_sysfs_path;
}

/*
 * Reads <dir>/<file> into buf as a string.  A single trailing newline is
 * dropped.  Returns the string length, or -1 (errno set) if the file cannot
 * be read or its contents do not fit in buf together with the terminating
 * NUL.
 */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size)
{
	char path[PATH_MAX];
	size_t len = 0;
	int n, fd;

	if (!dir || !file || (!buf && size)) {
		errno = EINVAL;
		return -1;
	}
	n = snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}

	fd = open(path, O_RDONLY | O_CLOEXEC);    /* cancellation point, as rdma-core's */
	if (fd < 0)
		return -1;
	while (len < size) {
		ssize_t r = read(fd, buf + len, size - len);    /* cancellation point */

		if (r < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;

			close(fd);    /* cancellation point */
			errno = saved;
			return -1;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);    /* cancellation point */

	if (len == 0)
		return 0;
	if (buf[len - 1] == '\n') {
		buf[--len] = '\0';
	} else if (len < size) {
		buf[len] = '\0';
	} else {
		/* No room for the terminator: truncated contents are useless. */
		errno = EOVERFLOW;
		return -1;
	}
	if (len > INT_MAX) {
		errno = EOVERFLOW;
		return -1;
	}
	return (int)len;
}
