/*
 * fuse_dirents.h - a cached directory listing of atoll-fuse: its entries
 * in strcmp order (the MDS's), kept in sorted chunks of at most
 * DENTS_CHUNK_MAX entries, so that adding or removing one name costs a
 * binary search and a move inside one chunk, not a move of the whole
 * listing (a flat sorted array made rm -rf and creates in a folder of n
 * entries cost O(n) each).
 */
#ifndef ATOLL_FUSE_DIRENTS_H
#define ATOLL_FUSE_DIRENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DENTS_CHUNK_MAX 128u

/* One entry of a cached listing. */
struct lc_ent {
	char *name;
	uint64_t ino;
	uint32_t mode;
};

/* Frees n entries and their array. */
void lc_ents_free(struct lc_ent *ents, size_t n);

struct dents_chunk {
	uint32_t n, cap;
	struct lc_ent e[];	/* sorted; names malloc'd */
};

struct dents {
	struct dents_chunk **c;	/* in order: every name of c[i] sorts before c[i+1]'s */
	size_t nc, cap;
	size_t n;		/* entries in all */
};

/* Takes ents (n entries sorted by strcmp, names malloc'd) into d, which
 * must be empty; 0, or -ENOMEM (then ents is freed, d stays empty). */
int dents_adopt(struct dents *d, struct lc_ent *ents, size_t n);
/* The entry named name, or NULL. */
struct lc_ent *dents_find(const struct dents *d, const char *name);
/* Sets name's entry to (ino, mode), adding it if missing (*added);
 * 0 or -ENOMEM (then d is unchanged). */
int dents_set(struct dents *d, const char *name, uint64_t ino, uint32_t mode, bool *added);
/* Removes name's entry; false if there was none. */
bool dents_remove(struct dents *d, const char *name);
/* A flat copy of every entry in order, names strdup'd (*out NULL when
 * there are none); 0 or -ENOMEM. */
int dents_copy(const struct dents *d, struct lc_ent **out, size_t *n);
/* Frees every entry; d is empty after. */
void dents_free(struct dents *d);

#endif
