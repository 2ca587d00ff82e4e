/*
 * dlopen_check LIB...: dlopen each LIB with RTLD_NOW (every symbol bound
 * immediately, constructors run), as libfabric and rdma-core do with their
 * plugins, then report which libibverbs.so.1 / librdmacm.so.1 the process
 * ended up with.  This program does not link libibverbs itself, so the first
 * LIB that needs it pulls it in through the normal search path
 * (LD_LIBRARY_PATH).
 *
 * Output, one line each:
 *   ok LIB
 *   FAIL LIB: <dlerror text>
 *   loaded libibverbs.so.1 => PATH     (or "not loaded")
 *   loaded librdmacm.so.1 => PATH      (or "not loaded")
 * Exit status: 0 if every LIB loaded, 1 otherwise.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>

static void report(const char *soname)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
	struct link_map *map = NULL;

	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || !map) {
		printf("loaded %s => not loaded\n", soname);
	} else {
		printf("loaded %s => %s\n", soname, map->l_name);
	}
	if (h)
		dlclose(h);
}

int main(int argc, char **argv)
{
	int bad = 0;

	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		if (h) {
			printf("ok %s\n", argv[i]);
		} else {
			printf("FAIL %s: %s\n", argv[i], dlerror());
			bad = 1;
		}
		fflush(stdout);
	}
	report("libibverbs.so.1");
	report("librdmacm.so.1");
	return bad;
}
