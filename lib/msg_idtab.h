/*
 * msg_idtab.h - an intrusive hash table keyed by a 64-bit id, for the
 * messenger's pending calls (by tid) and timers (by timer id).
 *
 * Ids come from counters, so a multiplicative hash spreads them well.
 * The table grows by doubling when it holds more entries than buckets;
 * when growing fails it keeps working with longer chains, so adding
 * never fails once idtab_init() succeeded.  Not thread-safe.
 */
#ifndef ATOLL_MSG_IDTAB_H
#define ATOLL_MSG_IDTAB_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct idnode {
	uint64_t key;
	struct idnode *next;
};

struct idtab {
	struct idnode **b;
	unsigned int shift;	/* 64 - log2(number of buckets) */
	size_t n;
};

#define IDTAB_INIT_BITS	6

static inline size_t idtab_nb(const struct idtab *t)
{
	return (size_t)1 << (64 - t->shift);
}

static inline size_t idtab_slot(const struct idtab *t, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> t->shift);
}

static inline int idtab_init(struct idtab *t)
{
	t->shift = 64 - IDTAB_INIT_BITS;
	t->n = 0;
	t->b = calloc((size_t)1 << IDTAB_INIT_BITS, sizeof(*t->b));
	return t->b ? 0 : -ENOMEM;
}

static inline void idtab_free(struct idtab *t)
{
	free(t->b);
	t->b = NULL;
	t->n = 0;
}

static inline void idtab_grow(struct idtab *t)
{
	size_t onb = idtab_nb(t);
	struct idnode **ob = t->b, **nb;

	if (t->shift <= 40)
		return;
	nb = calloc(onb * 2, sizeof(*nb));
	if (!nb)
		return;			/* keep the old buckets */
	t->b = nb;
	t->shift--;
	for (size_t i = 0; i < onb; i++) {
		struct idnode *e = ob[i], *next;

		for (; e; e = next) {
			size_t s = idtab_slot(t, e->key);

			next = e->next;
			e->next = nb[s];
			nb[s] = e;
		}
	}
	free(ob);
}

static inline void idtab_add(struct idtab *t, struct idnode *e)
{
	size_t s;

	if (t->n >= idtab_nb(t))
		idtab_grow(t);
	s = idtab_slot(t, e->key);
	e->next = t->b[s];
	t->b[s] = e;
	t->n++;
}

static inline struct idnode *idtab_find(const struct idtab *t, uint64_t key)
{
	struct idnode *e = t->b[idtab_slot(t, key)];

	while (e && e->key != key)
		e = e->next;
	return e;
}

/* Unlinks e, which must be in t. */
static inline void idtab_del(struct idtab *t, struct idnode *e)
{
	struct idnode **pp = &t->b[idtab_slot(t, e->key)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	e->next = NULL;
	t->n--;
}

#endif
