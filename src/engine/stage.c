/*
 * Staging buffers of the channels' receive machines (recv.c) and of socket
 * channels' writes (xmit.c), lent only while a channel holds bytes in one:
 * an idle channel holds none, so connected QPs do not each keep one.  Each
 * thread keeps one spare, so that a batch takes and gives back its buffer
 * without a lock.
 */
#include <pthread.h>
#include <stdlib.h>

#include "engine/engine.h"

static __thread uint8_t *spare __attribute__((tls_model("initial-exec")));
static __thread bool spare_known __attribute__((tls_model("initial-exec")));
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static bool spare_key_ok;

/* A thread that ends frees its spare (the key's value is its slot). */
static void thread_gone(void *slot)
{
	uint8_t **s = slot;

	free(*s);
	*s = NULL;
}

static void init_once(void)
{
	spare_key_ok = !pthread_key_create(&spare_key, thread_gone);
}

uint8_t *sv_stage_take(void)
{
	uint8_t *b = spare;

	if (b) {
		spare = NULL;
		return b;
	}
	return malloc(SV_RBUF_LEN);
}

void sv_stage_give(uint8_t *b)
{
	if (!b)
		return;
	if (!spare_known) {
		pthread_once(&spare_once, init_once);
		spare_known = spare_key_ok && !pthread_setspecific(spare_key, &spare);
	}
	if (spare || !spare_known) {
		free(b);
		return;
	}
	spare = b;
}
