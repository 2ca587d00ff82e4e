#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "transport/shm/procmap.h"

struct procmap {
	struct procmap *next;
	dev_t dev;
	ino_t ino;
	int refs;
	size_t len;
	void *base;
};
static struct procmap *maps;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

static void *map_new(int fd, size_t len, int prot, bool (*valid)(const void *base))
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) || st.st_size < 0 || (size_t)st.st_size < len)
		return NULL;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!valid(p)) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

void *sv_procmap_get(int fd, size_t len, int prot, bool (*valid)(const void *base))
{
	struct procmap *m;
	struct stat st;
	void *base = NULL;

	if (fstat(fd, &st))
		return NULL;
	pthread_mutex_lock(&maps_lock);
	for (m = maps; m; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino && m->len == len)
			break;
	if (m) {
		m->refs++;
		base = m->base;
	} else if ((m = calloc(1, sizeof(*m))) && (m->base = map_new(fd, len, prot, valid))) {
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		m->len = len;
		m->refs = 1;
		m->next = maps;
		maps = m;
		base = m->base;
	} else {
		free(m);
	}
	pthread_mutex_unlock(&maps_lock);
	return base;
}

void sv_procmap_put(const void *base)
{
	struct procmap **pp, *m;

	if (!base)
		return;
	pthread_mutex_lock(&maps_lock);
	for (pp = &maps; (m = *pp); pp = &m->next)
		if (m->base == base)
			break;
	if (m && --m->refs == 0) {
		*pp = m->next;
		munmap(m->base, m->len);
		free(m);
	}
	pthread_mutex_unlock(&maps_lock);
}

void sv_procmap_forget_after_fork(void)
{
	pthread_mutex_init(&maps_lock, NULL);
}
