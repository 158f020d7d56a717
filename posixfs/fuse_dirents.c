/*
 * fuse_dirents.c - a cached directory listing in sorted chunks
 * (fuse_dirents.h).
 *
 * Every name of chunk i sorts before every name of chunk i+1, and no
 * chunk is empty.  A name belongs to the first chunk whose last name
 * sorts at or after it (the last chunk when none does): one binary search
 * over the chunks' last names, one inside the chunk.  A chunk grows by
 * doubling up to DENTS_CHUNK_MAX entries and then splits in two; one that
 * falls under a quarter of its room shrinks by half, one that empties is
 * dropped.  A listing adopted from the MDS fills its chunks to three
 * quarters, so that names added to it rarely split one at once; a small
 * one takes a single chunk of its own size, and so does a short last
 * chunk.
 */
#include "fuse_dirents.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_FIRST 4u		/* room of a listing's first chunk */
#define CHUNK_MIN_SHRINK 8u	/* a chunk this small keeps its room */

void lc_ents_free(struct lc_ent *ents, size_t n)
{
	for (size_t i = 0; ents && i < n; i++)
		free(ents[i].name);
	free(ents);
}

static struct dents_chunk *chunk_new(uint32_t cap)
{
	struct dents_chunk *k = malloc(sizeof(*k) + cap * sizeof(k->e[0]));

	if (k) {
		k->n = 0;
		k->cap = cap;
	}
	return k;
}

/* Puts chunk k at position i of d's chunks. */
static int chunks_insert(struct dents *d, size_t i, struct dents_chunk *k)
{
	if (d->nc == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 4;
		struct dents_chunk **c = realloc(d->c, ncap * sizeof(*c));

		if (!c)
			return -ENOMEM;
		d->c = c;
		d->cap = ncap;
	}
	memmove(&d->c[i + 1], &d->c[i], (d->nc - i) * sizeof(*d->c));
	d->c[i] = k;
	d->nc++;
	return 0;
}

static void chunks_drop(struct dents *d, size_t i)
{
	free(d->c[i]);
	memmove(&d->c[i], &d->c[i + 1], (d->nc - i - 1) * sizeof(*d->c));
	d->nc--;
}

/* The chunk that holds name, or would (d has one at least; only a lone
 * first chunk, just made, may be empty). */
static size_t chunk_of(const struct dents *d, const char *name)
{
	size_t lo = 0, hi = d->nc;

	if (d->nc == 1)
		return 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct dents_chunk *k = d->c[mid];

		if (strcmp(k->e[k->n - 1].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nc ? lo : d->nc - 1;
}

/* Position of name in k (found: *hit) or where it would go. */
static uint32_t pos_in(const struct dents_chunk *k, const char *name, bool *hit)
{
	uint32_t lo = 0, hi = k->n;

	*hit = false;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, k->e[mid].name);

		if (!c) {
			*hit = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int dents_adopt(struct dents *d, struct lc_ent *ents, size_t n)
{
	size_t per = n <= DENTS_CHUNK_MAX ? n : DENTS_CHUNK_MAX * 3 / 4;
	size_t nc = n ? (n + per - 1) / per : 0;

	if (nc) {
		d->c = calloc(nc, sizeof(*d->c));
		if (!d->c)
			goto fail;
		d->cap = nc;
		for (size_t i = 0; i < nc; i++) {
			size_t m = n - i * per < per ? n - i * per : per;
			/* room to add, but a short last chunk only its own */
			uint32_t cap = m * 4 < DENTS_CHUNK_MAX || n <= DENTS_CHUNK_MAX
					       ? (uint32_t)m : DENTS_CHUNK_MAX;

			if (!(d->c[i] = chunk_new(cap)))
				goto fail;
			d->nc++;
		}
	}
	for (size_t i = 0; i < nc; i++) {
		size_t from = i * per, m = n - from < per ? n - from : per;

		memcpy(d->c[i]->e, &ents[from], m * sizeof(*ents));
		d->c[i]->n = (uint32_t)m;
	}
	d->n = n;
	free(ents);
	return 0;
fail:
	for (size_t i = 0; i < d->nc; i++)
		free(d->c[i]);
	free(d->c);
	memset(d, 0, sizeof(*d));
	lc_ents_free(ents, n);
	return -ENOMEM;
}

struct lc_ent *dents_find(const struct dents *d, const char *name)
{
	bool hit;

	if (!d->nc)
		return NULL;
	struct dents_chunk *k = d->c[chunk_of(d, name)];
	uint32_t i = pos_in(k, name, &hit);
	return hit ? &k->e[i] : NULL;
}

int dents_set(struct dents *d, const char *name, uint64_t ino, uint32_t mode, bool *added)
{
	bool hit;

	*added = false;
	if (!d->nc) {
		struct dents_chunk *k = chunk_new(CHUNK_FIRST);

		if (!k || chunks_insert(d, 0, k)) {
			free(k);
			return -ENOMEM;
		}
	}
	size_t ci = chunk_of(d, name);
	struct dents_chunk *k = d->c[ci];
	uint32_t i = pos_in(k, name, &hit);

	if (hit) {
		k->e[i].ino = ino;
		k->e[i].mode = mode;
		return 0;
	}
	char *nm = strdup(name);
	if (!nm)
		goto nomem;
	if (k->n == k->cap && k->cap < DENTS_CHUNK_MAX) {
		uint32_t cap = k->cap * 2 < DENTS_CHUNK_MAX ? k->cap * 2 : DENTS_CHUNK_MAX;
		struct dents_chunk *g = realloc(k, sizeof(*k) + cap * sizeof(k->e[0]));

		if (!g)
			goto nomem;
		g->cap = cap;
		d->c[ci] = k = g;
	} else if (k->n == k->cap) {
		/* full: the upper half goes to a new chunk after it */
		struct dents_chunk *r = chunk_new(DENTS_CHUNK_MAX);
		uint32_t h = k->n / 2;

		if (!r || chunks_insert(d, ci + 1, r)) {
			free(r);
			goto nomem;
		}
		memcpy(r->e, &k->e[h], (k->n - h) * sizeof(k->e[0]));
		r->n = k->n - h;
		k->n = h;
		if (i > h) {
			k = r;
			i -= h;
		}
	}
	memmove(&k->e[i + 1], &k->e[i], (k->n - i) * sizeof(k->e[0]));
	k->e[i] = (struct lc_ent){ .name = nm, .ino = ino, .mode = mode };
	k->n++;
	d->n++;
	*added = true;
	return 0;
nomem:
	free(nm);
	if (!d->n)
		dents_free(d);	/* the first chunk made above */
	return -ENOMEM;
}

bool dents_remove(struct dents *d, const char *name)
{
	bool hit;

	if (!d->nc)
		return false;
	size_t ci = chunk_of(d, name);
	struct dents_chunk *k = d->c[ci];
	uint32_t i = pos_in(k, name, &hit);

	if (!hit)
		return false;
	free(k->e[i].name);
	memmove(&k->e[i], &k->e[i + 1], (k->n - i - 1) * sizeof(k->e[0]));
	k->n--;
	d->n--;
	if (!k->n) {
		chunks_drop(d, ci);
		if (!d->nc)
			dents_free(d);
	} else if (k->cap > CHUNK_MIN_SHRINK && k->n < k->cap / 4) {
		struct dents_chunk *s = realloc(k, sizeof(*k) + k->cap / 2 * sizeof(k->e[0]));

		if (s) {
			s->cap /= 2;
			d->c[ci] = s;
		}
	}
	return true;
}

int dents_copy(const struct dents *d, struct lc_ent **out, size_t *n)
{
	struct lc_ent *e = calloc(d->n ? d->n : 1, sizeof(*e));
	size_t m = 0;

	*out = NULL;
	*n = 0;
	if (!e)
		return -ENOMEM;
	for (size_t ci = 0; ci < d->nc; ci++)
		for (uint32_t i = 0; i < d->c[ci]->n; i++, m++) {
			e[m] = d->c[ci]->e[i];
			if (!(e[m].name = strdup(d->c[ci]->e[i].name))) {
				lc_ents_free(e, m);
				return -ENOMEM;
			}
		}
	*out = e;
	*n = m;
	return 0;
}

void dents_free(struct dents *d)
{
	for (size_t ci = 0; ci < d->nc; ci++) {
		for (uint32_t i = 0; i < d->c[ci]->n; i++)
			free(d->c[ci]->e[i].name);
		free(d->c[ci]);
	}
	free(d->c);
	memset(d, 0, sizeof(*d));
}
