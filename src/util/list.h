/* Intrusive doubly linked list (circular, with a head node). */
#ifndef SV_UTIL_LIST_H
#define SV_UTIL_LIST_H

#include <stddef.h>
#include <stdbool.h>

struct sv_list {
	struct sv_list *next, *prev;
};

#define SV_LIST_INIT(name) { &(name), &(name) }
#define sv_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

static inline void sv_list_init(struct sv_list *l) { l->next = l->prev = l; }
static inline bool sv_list_empty(const struct sv_list *l) { return l->next == l; }

static inline void sv_list_add_tail(struct sv_list *head, struct sv_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void sv_list_del(struct sv_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

static inline size_t sv_list_count(const struct sv_list *head)
{
	size_t n = 0;

	for (const struct sv_list *pos = head->next; pos != head; pos = pos->next)
		n++;
	return n;
}

#define sv_list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#define sv_list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
