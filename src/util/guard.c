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

/* The reader-writer guard (guard.h).  TSan cannot see membarrier's
 * fences: that build takes an ordinary rwlock. */
static struct {
	uint32_t writer;             /* a writer is active (or waits for readers) */
	struct sv_guard_slot *owner; /* its slot */
	pthread_mutex_t wmutex;      /* held by the writer throughout */
#ifdef SV_TSAN
	pthread_rwlock_t rw;
#endif
} rwg = {
	.wmutex = PTHREAD_MUTEX_INITIALIZER,
#ifdef SV_TSAN
	.rw = PTHREAD_RWLOCK_INITIALIZER,
#endif
};

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
	/* another thread may take the slot now: a later destructor of ours
	 * that enters a guard registers again (and is called again for it) */
	sv_guard_self = NULL;
}

/* The child of fork() has one thread, the forking one: the others' slots
 * are free, and the child's address space needs its own registration. */
static void atfork_child(void)
{
	pthread_mutex_init(&reg.lock, NULL);
	for (struct sv_guard_slot *s = reg.slots; s; s = s->next)
		if (s != sv_guard_self) {
			s->inside = 0;
			s->reading = 0;
			s->taken = 0;
		}
	if (rwg.owner != sv_guard_self) {        /* a writer that is gone here */
		pthread_mutex_init(&rwg.wmutex, NULL);
		rwg.writer = 0;
		rwg.owner = NULL;
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

void sv_guard_fence_all(void)
{
#ifndef SV_TSAN            /* (there entering is a seq_cst read-modify-write) */
	if (__atomic_load_n(&sv_guard_fence_on_entry, __ATOMIC_RELAXED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

bool sv_guard_quiet(void)
{
	bool quiet = true;

	sv_guard_fence_all();
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

#ifdef SV_TSAN
void sv_guard_rdlock(void) { pthread_rwlock_rdlock(&rwg.rw); }
void sv_guard_wrlock(void) { pthread_rwlock_wrlock(&rwg.rw); }
void sv_guard_unlock(void) { pthread_rwlock_unlock(&rwg.rw); }
#else
static struct sv_guard_slot *self(void)
{
	return sv_guard_self ? sv_guard_self : sv_guard_register();
}

void sv_guard_rdlock(void)
{
	struct sv_guard_slot *s = self();
	uint32_t r = s->reading;

	__atomic_store_n(&s->reading, r + 1, __ATOMIC_RELAXED);
	sv_guard_entry_fence();
	/* a nested read needs no look: a writer waits for the outer one */
	if (r || !__atomic_load_n(&rwg.writer, __ATOMIC_ACQUIRE))
		return;
	/* A writer is active: count ourselves again under its mutex, which it
	 * holds until it is done; the next writer then sees us. */
	__atomic_store_n(&s->reading, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&rwg.wmutex);
	__atomic_store_n(&s->reading, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&rwg.wmutex);
}

void sv_guard_wrlock(void)
{
	struct sv_guard_slot *me = self();

	pthread_mutex_lock(&rwg.wmutex);
	__atomic_store_n(&rwg.writer, 1, __ATOMIC_RELAXED);
	sv_guard_fence_all();
	pthread_mutex_lock(&reg.lock);
	for (struct sv_guard_slot *s = reg.slots; s; s = s->next)
		while (__atomic_load_n(&s->reading, __ATOMIC_ACQUIRE))
			sched_yield();
	pthread_mutex_unlock(&reg.lock);
	__atomic_store_n(&rwg.owner, me, __ATOMIC_RELAXED);
}

void sv_guard_unlock(void)
{
	struct sv_guard_slot *s = self();

	if (__atomic_load_n(&rwg.owner, __ATOMIC_RELAXED) == s) {
		__atomic_store_n(&rwg.owner, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&rwg.writer, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&rwg.wmutex);
		return;
	}
	__atomic_store_n(&s->reading, s->reading - 1, __ATOMIC_RELEASE);
}
#endif
