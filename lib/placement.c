/*
 * placement.c - where an object lives: name -> PG -> OSDs, from the map.
 *
 * The name hash is XXH32 (seed 0) and the PG is Ceph's stable mod of it,
 * so growing pg_num only splits PGs.  A PG's OSDs are chosen by straw2
 * (weighted rendezvous hashing): every candidate draws
 *	log2((u + 1) / 65536) / weight
 * from a 16-bit hash u of (pg, pool, candidate, attempt) and the largest
 * draw wins.  A candidate's draw depends only on itself, so adding,
 * removing or reweighting one candidate moves only the PGs it wins or
 * loses, about its share.  With failure domain host, straw2 runs first
 * over hosts (weight = sum of their OSDs' weights) and then over the OSDs
 * of the chosen host.
 *
 * Each slot r of the set is filled by attempts 0, 1, ... (bounded): an
 * attempt whose host (or OSD) is already used, or whose OSD is out or
 * rejected by its reweight, is discarded and the next attempt draws
 * afresh.  Candidates and weights never depend on in/out (Ceph's way),
 * so marking an OSD out changes only the attempts that picked it: only
 * its PGs move, and they spread over the whole cluster rather than onto
 * the OSD's host neighbours.  reweight is a probabilistic rejection keyed
 * by (pg, OSD), again as in Ceph, which keeps reweighting equally stable.
 * The failure domain is never relaxed: a slot no attempt can fill is -1.
 *
 * Everything is integer arithmetic so every machine gets the same bits:
 * the log is a table of 2^44 * log2(x) computed at build time by exact
 * repeated squaring in 64-bit fixed point (placement_log.h; no floating
 * point anywhere, and no start-up cost: a client's first placement once
 * spent ~15 ms filling it), and the
 * candidate hash is a small xxh32-style mix written out here so that it
 * cannot change with a library version.
 */
#include "placement.h"
#include "placement_log.h"
#include "osdmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* Attempts per slot before it is left -1 (Ceph's choose_total_tries). */
#define PLACEMENT_TRIES		50

/* Draw salts, so the levels and the reweight test hash independently. */
#define PLACEMENT_SALT_HOST	0x686f7374u	/* "host" */
#define PLACEMENT_SALT_OSD	0x6f736421u	/* "osd!" */
#define PLACEMENT_SALT_REWEIGHT	0x72776774u	/* "rwgt" */

/* ---- object -> PG ---- */

uint32_t placement_hash(const void *name, size_t len)
{
	static const char empty[1];

	return XXH32(len ? name : empty, len, 0);
}

uint32_t placement_stable_mod(uint32_t x, uint32_t b, uint32_t bmask)
{
	if ((x & bmask) < b)
		return x & bmask;
	return x & (bmask >> 1);
}

/* The next power of two at or above n, minus one (0 for n <= 1). */
static uint32_t placement_pg_mask(uint32_t n)
{
	uint32_t m = 0;

	if (n <= 1)
		return 0;
	while (m < n - 1)
		m = (m << 1) | 1;
	return m;
}

uint32_t placement_pg(const struct osdmap_pool *p, uint32_t hash)
{
	if (p->pg_num == 0)
		return 0;
	return placement_stable_mod(hash, p->pg_num, placement_pg_mask(p->pg_num));
}

uint32_t placement_object_pg(const struct osdmap_pool *p, const char *name, size_t len)
{
	return placement_pg(p, placement_hash(name, len));
}

/* ---- fixed-point log ---- */

/* placement_log_tab (placement_log.h) is made at build time by
 * placement_log_gen.c. */

uint64_t placement_log2_fixed(uint32_t x)
{
	if (x == 0 || x > 65536)
		return 0;
	if (x == 65536)
		return 16ull << PLACEMENT_LOG_FRAC;
	return placement_log_tab[x - 1];
}

/* ---- candidate hash and straw2 ---- */

#define PLACEMENT_P1	2654435761u
#define PLACEMENT_P2	2246822519u
#define PLACEMENT_P3	3266489917u
#define PLACEMENT_P4	668265263u
#define PLACEMENT_P5	374761393u

static inline uint32_t placement_rotl(uint32_t x, unsigned int r)
{
	return (x << r) | (x >> (32 - r));
}

static inline uint32_t placement_round(uint32_t h, uint32_t w)
{
	h += w * PLACEMENT_P3;
	return placement_rotl(h, 17) * PLACEMENT_P4;
}

/* A fixed 32-bit hash of five words: XXH32's word step and avalanche.
 * Part of the placement format: changing it moves every PG. */
static inline uint32_t placement_mix(uint32_t salt, uint32_t a, uint32_t b,
				     uint32_t c, uint32_t d)
{
	uint32_t h = PLACEMENT_P5 + 20;

	h = placement_round(h, salt);
	h = placement_round(h, a);
	h = placement_round(h, b);
	h = placement_round(h, c);
	h = placement_round(h, d);
	h ^= h >> 15;
	h *= PLACEMENT_P2;
	h ^= h >> 13;
	h *= PLACEMENT_P3;
	h ^= h >> 16;
	return h;
}

/* straw2's draw: (log2(u + 1) - log2(65536)) / weight, <= 0; larger wins.
 * Truncating signed division is exactly specified by C99. */
static inline int64_t placement_draw(uint32_t salt, uint32_t pg, uint32_t pool,
				     uint32_t item, uint32_t r, uint64_t weight)
{
	uint32_t u = placement_mix(salt, pg, pool, item, r) & 0xffffu;
	int64_t ln = (int64_t)placement_log_tab[u] - ((int64_t)16 << PLACEMENT_LOG_FRAC);

	return ln / (int64_t)weight;
}

/* ---- context: the map's candidates grouped by host ---- */

struct placement_osd {
	int32_t id;
	uint32_t weight;		/* 16.16, > 0 */
	uint32_t reweight;		/* 0 = out */
};

struct placement_host {
	const char *name;		/* borrowed from the map */
	size_t name_len;
	uint32_t item;			/* hash of the name: its straw2 id */
	uint64_t weight;		/* sum of its OSDs' weights */
	uint32_t first, n;		/* its OSDs: host_osds[first .. first+n) */
	bool any_in;
};

struct placement_ctx {
	const struct osdmap *m;
	uint32_t nosds;
	struct placement_osd *osds;	/* candidates, by id */
	uint32_t nosds_in;
	uint32_t nhosts;
	struct placement_host *hosts;	/* in order of their lowest OSD id */
	uint32_t nhosts_in;
	uint32_t *host_osds;		/* indices into osds[], grouped by host */
};

void placement_ctx_free(struct placement_ctx *c)
{
	if (!c)
		return;
	free(c->osds);
	free(c->hosts);
	free(c->host_osds);
	free(c);
}

/* Assigns each candidate to its host (hosts are told apart by name,
 * through an open-addressing table keyed by the name's hash). */
static int placement_ctx_group(struct placement_ctx *c, uint32_t *osd_host)
{
	const struct osdmap *m = c->m;
	uint32_t tsize = 16, *table, i, *fill;

	while (tsize < 2 * c->nosds)
		tsize <<= 1;
	table = malloc(tsize * sizeof(*table));	/* host index + 1; 0 empty */
	if (!table)
		return -ENOMEM;
	memset(table, 0, tsize * sizeof(*table));

	for (i = 0; i < c->nosds; i++) {
		const char *name = m->osds[c->osds[i].id].host;
		size_t len = strnlen(name, sizeof(m->osds[0].host));
		uint32_t item = placement_hash(name, len);
		uint32_t slot = item & (tsize - 1);
		struct placement_host *h;

		for (;;) {
			if (!table[slot]) {
				h = &c->hosts[c->nhosts];
				memset(h, 0, sizeof(*h));
				h->name = name;
				h->name_len = len;
				h->item = item;
				table[slot] = ++c->nhosts;
				break;
			}
			h = &c->hosts[table[slot] - 1];
			if (h->item == item && h->name_len == len &&
			    memcmp(h->name, name, len) == 0)
				break;
			slot = (slot + 1) & (tsize - 1);
		}
		osd_host[i] = (uint32_t)(h - c->hosts);
		h->weight += c->osds[i].weight;
		h->n++;
		if (c->osds[i].reweight) {
			if (!h->any_in)
				c->nhosts_in++;
			h->any_in = true;
		}
	}

	/* Counting sort of the candidates by host, keeping id order. */
	fill = table;	/* reuse: tsize >= nhosts */
	for (i = 0; i < c->nhosts; i++) {
		c->hosts[i].first = i ? c->hosts[i - 1].first + c->hosts[i - 1].n : 0;
		fill[i] = c->hosts[i].first;
	}
	for (i = 0; i < c->nosds; i++)
		c->host_osds[fill[osd_host[i]]++] = i;
	free(table);
	return 0;
}

struct placement_ctx *placement_ctx_new(const struct osdmap *m)
{
	struct placement_ctx *c;
	uint32_t *osd_host = NULL;
	uint32_t i, n = 0;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->m = m;
	for (i = 0; i < m->max_osd; i++)
		if ((m->osds[i].state & OSD_ST_EXISTS) && m->osds[i].weight)
			n++;
	/* +1: never a zero-size malloc, whose NULL would look like ENOMEM */
	c->osds = malloc((n + 1) * sizeof(*c->osds));
	c->hosts = malloc((n + 1) * sizeof(*c->hosts));
	c->host_osds = malloc((n + 1) * sizeof(*c->host_osds));
	osd_host = malloc((n + 1) * sizeof(*osd_host));
	if (!c->osds || !c->hosts || !c->host_osds || !osd_host)
		goto out_free_ctx;

	for (i = 0; i < m->max_osd; i++) {
		const struct osdmap_osd *o = &m->osds[i];
		struct placement_osd *po;

		if (!(o->state & OSD_ST_EXISTS) || !o->weight)
			continue;
		po = &c->osds[c->nosds++];
		po->id = (int32_t)i;
		po->weight = o->weight;
		po->reweight = o->reweight > OSD_WEIGHT_ONE ? OSD_WEIGHT_ONE : o->reweight;
		if (po->reweight)
			c->nosds_in++;
	}
	if (placement_ctx_group(c, osd_host))
		goto out_free_ctx;
	free(osd_host);
	return c;

out_free_ctx:
	free(osd_host);
	placement_ctx_free(c);
	return NULL;
}

/* ---- choosing ---- */

/* Whether the OSD takes this PG: in, and past its reweight (a hash of
 * the PG and the OSD, not of the attempt, so a PG rejected by an OSD is
 * rejected by it on every attempt). */
static bool placement_accept(const struct placement_osd *o, uint32_t pg, uint32_t pool)
{
	uint32_t u;

	if (o->reweight >= OSD_WEIGHT_ONE)
		return true;
	if (!o->reweight)
		return false;
	u = placement_mix(PLACEMENT_SALT_REWEIGHT, pg, pool, (uint32_t)o->id, 0) & 0xffffu;
	return u < o->reweight;
}

/* straw2 over the OSDs host_osds[first .. first+n) (or, with host_osds
 * NULL, over osds[0 .. n)); returns an index into c->osds. */
static uint32_t placement_straw2_osds(const struct placement_ctx *c,
				      const uint32_t *idx, uint32_t n,
				      uint32_t pg, uint32_t pool, uint32_t r)
{
	uint32_t i, best = 0;
	int64_t best_draw = INT64_MIN;

	for (i = 0; i < n; i++) {
		uint32_t k = idx ? idx[i] : i;
		const struct placement_osd *o = &c->osds[k];
		int64_t d = placement_draw(PLACEMENT_SALT_OSD, pg, pool,
					   (uint32_t)o->id, r, o->weight);

		if (i == 0 || d > best_draw) {
			best = k;
			best_draw = d;
		}
	}
	return best;
}

static uint32_t placement_straw2_hosts(const struct placement_ctx *c,
				       uint32_t pg, uint32_t pool, uint32_t r)
{
	uint32_t i, best = 0;
	int64_t best_draw = INT64_MIN;

	for (i = 0; i < c->nhosts; i++) {
		const struct placement_host *h = &c->hosts[i];
		int64_t d = placement_draw(PLACEMENT_SALT_HOST, pg, pool,
					   h->item, r, h->weight);

		if (i == 0 || d > best_draw) {
			best = i;
			best_draw = d;
		}
	}
	return best;
}

static bool placement_pool_ok(const struct osdmap_pool *p, uint32_t pg)
{
	return p->size >= 1 && p->size <= OSDMAP_SIZE_MAX &&
	       p->failure_domain <= POOL_FD_OSD && pg < p->pg_num;
}

int placement_ctx_raw(const struct placement_ctx *c, const struct osdmap_pool *p,
		      uint32_t pg, int32_t *out)
{
	uint32_t used[OSDMAP_SIZE_MAX];		/* hosts or OSDs taken */
	uint32_t filled = 0, avail, s, a, i;
	bool by_host;

	for (s = 0; s < OSDMAP_SIZE_MAX; s++)
		out[s] = -1;
	if (!placement_pool_ok(p, pg))
		return -EINVAL;
	by_host = p->failure_domain == POOL_FD_HOST;
	/* When every domain that has an OSD in is taken, no attempt can
	 * succeed: skip them (the result is the same, only sooner). */
	avail = by_host ? c->nhosts_in : c->nosds_in;

	for (s = 0; s < p->size; s++) {
		for (a = 0; a < PLACEMENT_TRIES && filled < avail; a++) {
			uint32_t r = s | (a << 4);	/* s < 16 */
			uint32_t dom, k;
			bool taken = false;

			if (by_host) {
				const struct placement_host *h;

				dom = placement_straw2_hosts(c, pg, p->id, r);
				for (i = 0; i < filled; i++)
					taken |= used[i] == dom;
				if (taken)
					continue;
				h = &c->hosts[dom];
				k = placement_straw2_osds(c, c->host_osds + h->first,
							  h->n, pg, p->id, r);
			} else {
				k = placement_straw2_osds(c, NULL, c->nosds, pg, p->id, r);
				dom = k;
				for (i = 0; i < filled; i++)
					taken |= used[i] == dom;
				if (taken)
					continue;
			}
			if (!placement_accept(&c->osds[k], pg, p->id))
				continue;
			out[s] = c->osds[k].id;
			used[filled++] = dom;
			break;
		}
	}
	return (int)filled;
}

static bool placement_up(const struct osdmap *m, int32_t id)
{
	return id >= 0 && (uint32_t)id < m->max_osd &&
	       (m->osds[id].state & (OSD_ST_EXISTS | OSD_ST_UP)) ==
	       (OSD_ST_EXISTS | OSD_ST_UP);
}

static const struct osdmap_pg_temp *placement_pg_temp(const struct osdmap *m,
						      uint32_t pool, uint32_t pg)
{
	uint32_t i;

	for (i = 0; i < m->npg_temp; i++)
		if (m->pg_temp[i].pool == pool && m->pg_temp[i].pg == pg)
			return &m->pg_temp[i];
	return NULL;
}

int placement_ctx_acting(const struct placement_ctx *c, const struct osdmap_pool *p,
			 uint32_t pg, int32_t *out, int32_t *primary)
{
	const struct osdmap *m = c->m;
	const struct osdmap_pg_temp *t;
	int32_t raw[OSDMAP_SIZE_MAX];
	int n = 0, ret, i;

	*primary = -1;
	for (i = 0; i < OSDMAP_SIZE_MAX; i++)
		out[i] = -1;
	ret = placement_ctx_raw(c, p, pg, raw);
	if (ret < 0)
		return ret;
	t = placement_pg_temp(m, p->id, pg);
	if (t) {
		for (i = 0; i < t->n && i < OSDMAP_SIZE_MAX; i++)
			if (placement_up(m, t->osds[i]))
				out[n++] = t->osds[i];
	}
	if (n == 0) {
		for (i = 0; i < p->size; i++)
			if (placement_up(m, raw[i]))
				out[n++] = raw[i];
	}
	for (i = n; i < OSDMAP_SIZE_MAX; i++)
		out[i] = -1;
	if (n)
		*primary = out[0];
	return n;
}

int placement_raw(const struct osdmap *m, const struct osdmap_pool *p,
		  uint32_t pg, int32_t *out)
{
	struct placement_ctx *c;
	int ret;

	if (!placement_pool_ok(p, pg)) {
		for (ret = 0; ret < OSDMAP_SIZE_MAX; ret++)
			out[ret] = -1;
		return -EINVAL;
	}
	c = placement_ctx_new(m);
	if (!c)
		return -ENOMEM;
	ret = placement_ctx_raw(c, p, pg, out);
	placement_ctx_free(c);
	return ret;
}

int placement_acting(const struct osdmap *m, const struct osdmap_pool *p,
		     uint32_t pg, int32_t *out, int32_t *primary)
{
	struct placement_ctx *c;
	int ret;

	*primary = -1;
	if (!placement_pool_ok(p, pg)) {
		for (ret = 0; ret < OSDMAP_SIZE_MAX; ret++)
			out[ret] = -1;
		return -EINVAL;
	}
	c = placement_ctx_new(m);
	if (!c)
		return -ENOMEM;
	ret = placement_ctx_acting(c, p, pg, out, primary);
	placement_ctx_free(c);
	return ret;
}
