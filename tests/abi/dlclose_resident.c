/*
 * abi_dlclose_resident LIB: a softverbs library stays loaded after its last
 * dlclose (-z nodelete).  It runs threads (libibverbs' progress thread,
 * librdmacm's event thread) that a program may leave running: Open MPI
 * dlcloses the components that loaded libfabric, and so us, at
 * MPI_Finalize without closing the device; unmapped, the library's code
 * was gone under a thread that woke later (SIGSEGV in mpi_ofi).
 *
 * Loads LIB, opens the first device when LIB is libibverbs (the progress
 * thread starts), dlcloses it, and checks it is still there (RTLD_NOLOAD)
 * and that the process survives its threads' next wake-ups.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "FAIL: dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	if (strstr(argv[1], "libibverbs")) {
		void **(*get_list)(int *) = (void **(*)(int *))dlsym(h, "ibv_get_device_list");
		void *(*open_dev)(void *) = (void *(*)(void *))dlsym(h, "ibv_open_device");
		void **list;

		if (!get_list || !open_dev || !(list = get_list(NULL)) || !list[0] ||
		    !open_dev(list[0])) {
			fprintf(stderr, "FAIL: could not open a device through %s\n", argv[1]);
			return 1;
		}
	}
	if (dlclose(h)) {
		fprintf(stderr, "FAIL: dlclose: %s\n", dlerror());
		return 1;
	}
	if (!dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD)) {
		fprintf(stderr, "FAIL: %s was unloaded by dlclose (link it with -z nodelete)\n",
			argv[1]);
		return 1;
	}
	usleep(300 * 1000);          /* its threads wake meanwhile (timers, rings) */
	return 0;
}
