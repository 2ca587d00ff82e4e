/*
 * softverbs: fork() support.
 *
 * Hardware verbs pin registered memory for DMA, so after fork() the child's
 * copy-on-write could move pages under the device; rdma-core's ibv_fork_init
 * marks registered ranges MADV_DONTFORK to prevent that.  softverbs never
 * pins pages; registered memory that same-host peers map is a shared memfd
 * mapping, which a forked child gets as a private copy
 * (transport/shm/mrmap.c, an atfork handler), as a fork-safe kernel gives a
 * child copies of pinned pages.  So fork() is always safe: there is nothing
 * to initialise, and the per-range hooks used by providers have nothing to do.
 */
#include <infiniband/verbs.h>
#include <stddef.h>

/* Stubs ignore their arguments by design. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/* Not in the installed headers (rdma-core declares them for providers). */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}
