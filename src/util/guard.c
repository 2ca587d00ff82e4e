/* Guards (guard.h): the registry of the threads' slots, and the look at
 * them that tells whether what was unlinked may be freed. */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/guard.h"

__thread struct sv_guard_slot *sv_guard_self __attribute__((tls_model("initial-exec")));
bool sv_guard_fence_on_entry = true;

static struct {
	pthread_mutex_t lock;
	struct sv_guard_slot *slots;
	pthread_key_t key;           /* its destructor frees a dead thread's slot */
	pthread_once_t once;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT };

static bool membarrier_register(void)
{
	return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static void thread_gone(void *p)
{
	struct sv_guard_slot *s = p;

	pthread_mutex_lock(&reg.lock);
	__atomic_store_n(&s->inside, 0, __ATOMIC_RELEASE);
	s->taken = 0;
	pthread_mutex_unlock(&reg.lock);
}

/* The child of fork() has one thread, the forking one: the others' slots
 * are free, and the child's address space needs its own registration. */
static void atfork_child(void)
{
	pthread_mutex_init(&reg.lock, NULL);
	for (struct sv_guard_slot *s = reg.slots; s; s = s->next)
		if (s != sv_guard_self) {
			s->inside = 0;
			s->taken = 0;
		}
	if (!sv_guard_fence_on_entry && !membarrier_register())
		__atomic_store_n(&sv_guard_fence_on_entry, true, __ATOMIC_SEQ_CST);
}

static void init_once(void)
{
	pthread_key_create(&reg.key, thread_gone);
	pthread_atfork(NULL, NULL, atfork_child);
#ifndef SV_TSAN
	if (membarrier_register())
		__atomic_store_n(&sv_guard_fence_on_entry, false, __ATOMIC_SEQ_CST);
#endif
}

struct sv_guard_slot *sv_guard_register(void)
{
	struct sv_guard_slot *s;

	pthread_once(&reg.once, init_once);
	pthread_mutex_lock(&reg.lock);
	for (s = reg.slots; s && s->taken; s = s->next)
		;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			abort();         /* 16 bytes, once per thread */
		s->next = reg.slots;
		reg.slots = s;
	}
	s->taken = 1;
	pthread_mutex_unlock(&reg.lock);
	pthread_setspecific(reg.key, s);
	sv_guard_self = s;
	return s;
}

bool sv_guard_quiet(void)
{
	bool quiet = true;

#ifndef SV_TSAN            /* (there entering is a seq_cst read-modify-write) */
	if (__atomic_load_n(&sv_guard_fence_on_entry, __ATOMIC_RELAXED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	pthread_mutex_lock(&reg.lock);
	for (struct sv_guard_slot *s = reg.slots; s && quiet; s = s->next)
		quiet = !__atomic_load_n(&s->inside, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&reg.lock);
	return quiet;
}

void sv_guard_wait(void)
{
	while (!sv_guard_quiet())
		sched_yield();
}
