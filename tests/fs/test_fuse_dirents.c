/*
 * test_fuse_dirents.c - atoll-fuse's cached listings in sorted chunks
 * (posixfs/fuse_dirents.c), against a model (a flat array of names kept
 * sorted the slow way): random sets, updates and removals, listings
 * adopted small and large, emptied and filled again; after each step the
 * chunks hold exactly the model's entries in strcmp order, none empty,
 * none over DENTS_CHUNK_MAX, and the count is right.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_dirents.h"

#define MODEL_MAX 20000

static struct {
	char *name[MODEL_MAX];
	uint64_t ino[MODEL_MAX];
	size_t n;
} model;

static void model_clear(void)
{
	for (size_t i = 0; i < model.n; i++)
		free(model.name[i]);
	model.n = 0;
}

static size_t model_pos(const char *name, bool *hit)
{
	size_t i = 0;

	while (i < model.n && strcmp(model.name[i], name) < 0)
		i++;
	*hit = i < model.n && !strcmp(model.name[i], name);
	return i;
}

static void model_set(const char *name, uint64_t ino)
{
	bool hit;
	size_t i = model_pos(name, &hit);

	if (hit) {
		model.ino[i] = ino;
		return;
	}
	cr_assert_lt(model.n, MODEL_MAX);
	memmove(&model.name[i + 1], &model.name[i], (model.n - i) * sizeof(model.name[0]));
	memmove(&model.ino[i + 1], &model.ino[i], (model.n - i) * sizeof(model.ino[0]));
	model.name[i] = strdup(name);
	model.ino[i] = ino;
	model.n++;
}

static bool model_rm(const char *name)
{
	bool hit;
	size_t i = model_pos(name, &hit);

	if (!hit)
		return false;
	free(model.name[i]);
	memmove(&model.name[i], &model.name[i + 1], (model.n - i - 1) * sizeof(model.name[0]));
	memmove(&model.ino[i], &model.ino[i + 1], (model.n - i - 1) * sizeof(model.ino[0]));
	model.n--;
	return true;
}

/* d holds exactly the model, in order, in well-formed chunks. */
static void check(const struct dents *d)
{
	size_t m = 0;
	const char *prev = NULL;

	cr_assert_eq(d->n, model.n);
	cr_assert(d->nc <= d->cap);
	for (size_t ci = 0; ci < d->nc; ci++) {
		const struct dents_chunk *k = d->c[ci];

		cr_assert_gt(k->n, 0, "chunk %zu is empty", ci);
		cr_assert_leq(k->n, k->cap);
		cr_assert_leq(k->cap, DENTS_CHUNK_MAX);
		for (uint32_t i = 0; i < k->n; i++, m++) {
			cr_assert_lt(m, model.n);
			cr_assert_str_eq(k->e[i].name, model.name[m]);
			cr_assert_eq(k->e[i].ino, model.ino[m]);
			if (prev)
				cr_assert_lt(strcmp(prev, k->e[i].name), 0);
			prev = k->e[i].name;
		}
	}
	cr_assert_eq(m, model.n);
}

static void name_of(char *buf, size_t len, unsigned v)
{
	snprintf(buf, len, "f%u", v);
}

Test(dents, random_against_model)
{
	struct dents d = { 0 };
	char nm[32];

	srandom(7);
	for (int step = 0; step < 30000; step++) {
		unsigned v = (unsigned)random() % 4000;
		int what = (int)(random() % 10);
		bool added;

		name_of(nm, sizeof(nm), v);
		if (what < 6) {
			cr_assert_eq(dents_set(&d, nm, v + (uint64_t)step, 0100644, &added), 0);
			bool hit;
			(void)model_pos(nm, &hit);
			cr_assert_eq(added, !hit);
			model_set(nm, v + (uint64_t)step);
		} else {
			cr_assert_eq(dents_remove(&d, nm), model_rm(nm));
		}
		const struct lc_ent *e = dents_find(&d, nm);
		bool hit;
		size_t i = model_pos(nm, &hit);
		cr_assert_eq(e != NULL, hit);
		if (e)
			cr_assert_eq(e->ino, model.ino[i]);
		if (step % 997 == 0)
			check(&d);
	}
	check(&d);
	/* empty it in listing order (rm -rf), then fill it again */
	while (model.n) {
		char *first = strdup(model.name[0]);
		cr_assert(dents_remove(&d, first));
		cr_assert(model_rm(first));
		free(first);
	}
	check(&d);
	cr_assert_eq(d.nc, 0);
	cr_assert_null(dents_find(&d, "f1"));
	cr_assert_not(dents_remove(&d, "f1"));
	for (unsigned v = 0; v < 3000; v++) {
		bool added;
		name_of(nm, sizeof(nm), v);
		cr_assert_eq(dents_set(&d, nm, v, 0100644, &added), 0);
		cr_assert(added);
		model_set(nm, v);
	}
	check(&d);
	dents_free(&d);
	cr_assert_eq(d.n, 0);
	model_clear();
}

static struct lc_ent *sorted_ents(size_t n)
{
	struct lc_ent *e = calloc(n ? n : 1, sizeof(*e));
	char nm[32];

	cr_assert_not_null(e);
	for (size_t i = 0; i < n; i++)
		model_set((snprintf(nm, sizeof(nm), "n%06zu", i), nm), i);
	for (size_t i = 0; i < n; i++) {
		e[i].name = strdup(model.name[i]);
		e[i].ino = model.ino[i];
		e[i].mode = 040755;
	}
	return e;
}

Test(dents, adopt_and_copy)
{
	size_t sizes[] = { 0, 1, 5, DENTS_CHUNK_MAX, DENTS_CHUNK_MAX + 1, 10000 };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct dents d = { 0 };
		struct lc_ent *copy;
		size_t n;

		cr_assert_eq(dents_adopt(&d, sorted_ents(sizes[s]), sizes[s]), 0);
		check(&d);
		cr_assert_eq(dents_copy(&d, &copy, &n), 0);
		cr_assert_not_null(copy);
		cr_assert_eq(n, model.n);
		for (size_t i = 0; i < n; i++) {
			cr_assert_str_eq(copy[i].name, model.name[i]);
			cr_assert_eq(copy[i].mode, 040755);
		}
		lc_ents_free(copy, n);
		/* names before, between and after the adopted ones */
		const char *more[] = { "a", "n000000x", "n0000051", "zz" };
		for (size_t i = 0; i < 4; i++) {
			bool added;
			cr_assert_eq(dents_set(&d, more[i], 1, 0100644, &added), 0);
			cr_assert(added);
			model_set(more[i], 1);
		}
		check(&d);
		dents_free(&d);
		model_clear();
	}
}

/* Removal in random order of a large listing: chunks shrink and go. */
Test(dents, shrink_and_drop)
{
	struct dents d = { 0 };
	size_t n = 5000;

	cr_assert_eq(dents_adopt(&d, sorted_ents(n), n), 0);
	srandom(11);
	while (model.n > 0) {
		size_t i = (size_t)random() % model.n;
		char *name = strdup(model.name[i]);
		cr_assert(dents_remove(&d, name));
		cr_assert(model_rm(name));
		free(name);
		if (model.n % 500 == 0)
			check(&d);
		for (size_t ci = 0; ci < d.nc; ci++)
			cr_assert(d.c[ci]->cap <= 8 || d.c[ci]->n >= d.c[ci]->cap / 4);
	}
	check(&d);
	dents_free(&d);
}
