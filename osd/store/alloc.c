/*
 * alloc.c - the data-area block allocator.
 *
 * A bitmap with one bit per 4 KiB block (1 = free) and a summary bitmap
 * with one bit per 64-bit word of it (1 = that word has a free block), so
 * that a search skips full regions 4096 blocks at a time.  Single-block
 * and small requests take the lowest free blocks (so blocks freed by
 * overwrites are reused first and the device's written area stays
 * compact); large requests look for a contiguous run first, starting at a
 * roving cursor, and fall back to several runs.
 *
 * The allocator is not persisted: store_open() rebuilds it from the chunk
 * records, which are the truth (see doc/store-format.md).  Only the commit
 * thread changes it (under the store's alloc_lock).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store-int.h"

int runvec_push(struct runvec *rv, uint64_t start, uint64_t len)
{
	if (rv->n && rv->v[rv->n - 1].start + rv->v[rv->n - 1].len == start) {
		rv->v[rv->n - 1].len += len;
		return 0;
	}
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 8;
		struct run *v = realloc(rv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n].start = start;
	rv->v[rv->n].len = len;
	rv->n++;
	return 0;
}

void runvec_free(struct runvec *rv)
{
	free(rv->v);
	rv->v = NULL;
	rv->n = rv->cap = 0;
}

static void sum_update(struct alloc *a, uint64_t w)
{
	uint64_t bit = 1ull << (w & 63);

	if (a->bits[w])
		a->sum[w >> 6] |= bit;
	else
		a->sum[w >> 6] &= ~bit;
}

int alloc_init(struct alloc *a, uint64_t base, uint64_t nblocks)
{
	memset(a, 0, sizeof(*a));
	a->base = base;
	a->nblocks = nblocks;
	a->nwords = (nblocks + 63) / 64;
	a->bits = calloc(a->nwords ? a->nwords : 1, sizeof(uint64_t));
	a->sum = calloc((a->nwords + 63) / 64 + 1, sizeof(uint64_t));
	if (!a->bits || !a->sum) {
		alloc_destroy(a);
		return -ENOMEM;
	}
	for (uint64_t w = 0; w < a->nwords; w++) {
		uint64_t left = nblocks - w * 64;

		a->bits[w] = left >= 64 ? ~0ull : ((1ull << left) - 1);
		sum_update(a, w);
	}
	a->nfree = nblocks;
	return 0;
}

void alloc_destroy(struct alloc *a)
{
	free(a->bits);
	free(a->sum);
	a->bits = a->sum = NULL;
}

bool alloc_is_free(const struct alloc *a, uint64_t blk)
{
	uint64_t i = blk - a->base;

	return a->bits[i >> 6] & (1ull << (i & 63));
}

/* Sets bits [i, i+n) of the bitmap to free or used; returns how many of
 * them were already in the target state. */
static uint64_t set_range(struct alloc *a, uint64_t i, uint64_t n, bool make_free)
{
	uint64_t already = 0;

	while (n) {
		uint64_t w = i >> 6, b = i & 63;
		uint64_t take = min_u64(64 - b, n);
		uint64_t mask = (take == 64 ? ~0ull : ((1ull << take) - 1)) << b;
		uint64_t cur = a->bits[w] & mask;

		if (make_free) {
			already += (uint64_t)__builtin_popcountll(cur);
			a->bits[w] |= mask;
		} else {
			already += take - (uint64_t)__builtin_popcountll(cur);
			a->bits[w] &= ~mask;
		}
		sum_update(a, w);
		i += take;
		n -= take;
	}
	return already;
}

uint64_t alloc_mark_used(struct alloc *a, uint64_t start, uint64_t len)
{
	uint64_t already = set_range(a, start - a->base, len, false);

	a->nfree -= len - already;
	return already;
}

void alloc_put(struct alloc *a, uint64_t start, uint64_t len)
{
	uint64_t already = set_range(a, start - a->base, len, true);

	a->nfree += len - already;
}

/* First free block at or after i, or nblocks. */
static uint64_t next_free(const struct alloc *a, uint64_t i)
{
	while (i < a->nblocks) {
		uint64_t w = i >> 6;
		uint64_t word = a->bits[w] & (~0ull << (i & 63));

		if (word)
			return min_u64((w << 6) + (uint64_t)__builtin_ctzll(word), a->nblocks);
		/* Skip words with no free block using the summary. */
		w++;
		for (;;) {
			uint64_t sw = w >> 6;

			if ((sw << 6) >= a->nwords)
				return a->nblocks;
			uint64_t s = a->sum[sw] & (~0ull << (w & 63));

			if (s) {
				w = (sw << 6) + (uint64_t)__builtin_ctzll(s);
				break;
			}
			w = (sw + 1) << 6;
		}
		if (w >= a->nwords)
			return a->nblocks;
		i = w << 6;
	}
	return a->nblocks;
}

/* Length of the free run starting at i, at most max. */
static uint64_t run_len(const struct alloc *a, uint64_t i, uint64_t max)
{
	uint64_t n = 0;

	while (n < max && i < a->nblocks) {
		uint64_t w = i >> 6, b = i & 63;
		uint64_t word = ~a->bits[w] >> b;	/* 1 = used */
		uint64_t avail = word ? (uint64_t)__builtin_ctzll(word) : 64 - b;

		avail = min_u64(avail, 64 - b);
		n += avail;
		i += avail;
		if (avail < 64 - b)
			break;
	}
	return min_u64(n, max);	/* bits past nblocks are never free */
}

/* Finds a free run of exactly n blocks from from, wrapping once. */
static bool find_run(struct alloc *a, uint64_t n, uint64_t from, uint64_t *out)
{
	for (int pass = 0; pass < 2; pass++) {
		uint64_t i = pass ? 0 : from;
		uint64_t end = pass ? from : a->nblocks;

		while (i < end) {
			i = next_free(a, i);
			if (i >= end)
				break;
			uint64_t len = run_len(a, i, n);

			if (len >= n) {
				*out = i;
				return true;
			}
			i += len;
		}
	}
	return false;
}

int alloc_get(struct alloc *a, uint64_t n, bool contiguous, struct runvec *out)
{
	size_t first = out->n;
	/* runvec_push may merge into the caller's last run: remember it. */
	uint64_t last_len = first ? out->v[first - 1].len : 0;
	uint64_t i;
	int r;

	if (n == 0)
		return 0;
	if (n > a->nfree)
		return -ENOSPC;
	/* Large requests: one run if there is one, from the roving cursor. */
	if (n >= 16 || contiguous) {
		if (find_run(a, n, n >= 16 ? a->cursor : 0, &i)) {
			r = runvec_push(out, a->base + i, n);
			if (r)
				return r;
			set_range(a, i, n, false);
			a->nfree -= n;
			if (n >= 16)
				a->cursor = i + n;
			return 0;
		}
		if (contiguous)
			return -ENOSPC;
	}
	/* Lowest free blocks first, in as many runs as it takes. */
	uint64_t left = n;

	i = 0;
	while (left) {
		i = next_free(a, i);
		if (i >= a->nblocks)
			goto out_undo;	/* cannot happen: nfree >= n */
		uint64_t len = run_len(a, i, left);

		r = runvec_push(out, a->base + i, len);
		if (r)
			goto out_undo_r;
		set_range(a, i, len, false);
		a->nfree -= len;
		left -= len;
		i += len;
	}
	return 0;

out_undo:
	r = -ENOSPC;
out_undo_r:
	for (size_t k = first; k < out->n; k++)
		alloc_put(a, out->v[k].start, out->v[k].len);
	out->n = first;
	if (first && out->v[first - 1].len > last_len) {
		alloc_put(a, out->v[first - 1].start + last_len,
			  out->v[first - 1].len - last_len);
		out->v[first - 1].len = last_len;
	}
	return r;
}
