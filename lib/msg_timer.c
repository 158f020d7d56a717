/*
 * msg_timer.c - the messenger's timers: a binary min-heap of deadlines.
 *
 * A heap rather than a sorted list because the messenger arms one timer
 * per call in flight (thousands under load) and most are cancelled by
 * their reply: insert and remove are O(log n) either way round.  Nodes
 * are embedded in their owners and remember their slot.
 */
#include "msg_timer.h"

#include <errno.h>
#include <stdlib.h>

static bool before(const struct tnode *a, const struct tnode *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void place(struct theap *h, size_t i, struct tnode *t)
{
	h->v[i] = t;
	t->idx = i;
}

static void sift_up(struct theap *h, size_t i)
{
	struct tnode *t = h->v[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!before(t, h->v[parent]))
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, t);
}

static void sift_down(struct theap *h, size_t i)
{
	struct tnode *t = h->v[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(h->v[c + 1], h->v[c]))
			c++;
		if (!before(h->v[c], t))
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, t);
}

void theap_init(struct theap *h)
{
	h->v = NULL;
	h->n = 0;
	h->cap = 0;
	h->seq = 0;
}

void theap_free(struct theap *h)
{
	for (size_t i = 0; i < h->n; i++)
		h->v[i]->idx = TNODE_IDLE;
	free(h->v);
	theap_init(h);
}

int theap_add(struct theap *h, struct tnode *t, uint64_t when)
{
	if (tnode_armed(t))
		theap_del(h, t);
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 64;
		struct tnode **nv = realloc(h->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = ncap;
	}
	t->when = when;
	t->seq = h->seq++;
	place(h, h->n++, t);
	sift_up(h, t->idx);
	return 0;
}

bool theap_del(struct theap *h, struct tnode *t)
{
	size_t i = t->idx;
	struct tnode *last;

	if (i == TNODE_IDLE)
		return false;
	t->idx = TNODE_IDLE;
	last = h->v[--h->n];
	if (i == h->n)
		return true;
	place(h, i, last);
	if (i > 0 && before(last, h->v[(i - 1) / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
	return true;
}

struct tnode *theap_pop_due(struct theap *h, uint64_t now)
{
	struct tnode *t = theap_top(h);

	if (!t || t->when > now)
		return NULL;
	theap_del(h, t);
	return t;
}

