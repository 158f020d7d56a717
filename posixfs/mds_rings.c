/*
 * mds_rings.c - a ring of fixed-size entries per client: each client's
 * last MDS_DONE_MAX, whatever the other clients do (the indexes of
 * answered requests, mds_answered.c).  A client's ring starts small and
 * doubles up to MDS_DONE_MAX entries, so an idle client costs little.
 * Every entry starts with two u64s: the client and the request id.  No
 * locking: the caller's.
 */
#include "mds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RING_FIRST 64u

struct mds_ring {
	struct mds_ring *next;	/* hash chain */
	uint64_t client;
	uint8_t *v;		/* cap entries of esize bytes */
	uint32_t cap, n, head;	/* head: the oldest entry */
};

static unsigned ring_bucket(uint64_t client)
{
	return (unsigned)((client * 0x9e3779b97f4a7c15ull) >> (64 - MDS_RINGS_BITS));
}

static struct mds_ring *ring_get(struct mds_rings *rs, uint64_t client, bool add)
{
	struct mds_ring **pp = &rs->ht[ring_bucket(client)], *r;

	for (r = *pp; r; r = r->next)
		if (r->client == client)
			return r;
	if (!add || !(r = calloc(1, sizeof(*r))))
		return NULL;
	r->client = client;
	r->next = *pp;
	*pp = r;
	return r;
}

/* A slot for client's newest entry: its oldest is overwritten once it
 * holds MDS_DONE_MAX; NULL when out of memory. */
void *mds_rings_add(struct mds_rings *rs, uint64_t client)
{
	struct mds_ring *r = ring_get(rs, client, true);

	if (!r)
		return NULL;
	if (r->n == r->cap && r->cap < MDS_DONE_MAX) {
		uint32_t nc = r->cap ? 2 * r->cap : RING_FIRST;
		uint8_t *nv = malloc((size_t)nc * rs->esize);

		if (!nv)
			return NULL;
		/* unrolled: the oldest first */
		for (uint32_t i = 0; i < r->n; i++)
			memcpy(nv + (size_t)i * rs->esize,
			       r->v + (size_t)((r->head + i) % r->cap) * rs->esize, rs->esize);
		free(r->v);
		r->v = nv;
		r->cap = nc;
		r->head = 0;
	}
	uint32_t slot;

	if (r->n == r->cap) {
		slot = r->head;		/* full: the oldest goes */
		r->head = (r->head + 1) % r->cap;
	} else {
		slot = (r->head + r->n++) % r->cap;
	}
	return r->v + (size_t)slot * rs->esize;
}

/* client's entry whose request id (the second u64 of every entry) is
 * reqid, the newest first; NULL if none. */
void *mds_rings_find(struct mds_rings *rs, uint64_t client, uint64_t reqid)
{
	struct mds_ring *r = ring_get(rs, client, false);

	if (!r)
		return NULL;
	for (uint32_t i = r->n; i-- > 0;) {
		uint8_t *e = r->v + (size_t)((r->head + i) % r->cap) * rs->esize;
		uint64_t id;

		memcpy(&id, e + sizeof(uint64_t), sizeof(id));
		if (id == reqid)
			return e;
	}
	return NULL;
}

void mds_rings_forget(struct mds_rings *rs, uint64_t client)
{
	struct mds_ring **pp = &rs->ht[ring_bucket(client)], *r;

	for (; (r = *pp); pp = &r->next)
		if (r->client == client) {
			*pp = r->next;
			free(r->v);
			free(r);
			return;
		}
}

/* Calls fn on every entry, each client's oldest first; stops at fn's
 * first non-zero return and returns it. */
int mds_rings_each(struct mds_rings *rs, int (*fn)(void *arg, const void *e), void *arg)
{
	for (size_t b = 0; b < (1u << MDS_RINGS_BITS); b++)
		for (struct mds_ring *r = rs->ht[b]; r; r = r->next)
			for (uint32_t i = 0; i < r->n; i++) {
				int ret = fn(arg, r->v + (size_t)((r->head + i) % r->cap) * rs->esize);

				if (ret)
					return ret;
			}
	return 0;
}

int mds_rings_init(struct mds_rings *rs, size_t esize)
{
	memset(rs, 0, sizeof(*rs));
	rs->esize = esize;
	rs->ht = calloc(1u << MDS_RINGS_BITS, sizeof(*rs->ht));
	return rs->ht ? 0 : -ENOMEM;
}

void mds_rings_fini(struct mds_rings *rs)
{
	if (!rs->ht)
		return;
	for (size_t b = 0; b < (1u << MDS_RINGS_BITS); b++)
		while (rs->ht[b])
			mds_rings_forget(rs, rs->ht[b]->client);
	free(rs->ht);
	rs->ht = NULL;
}
