/*
 * placement.h - where an object lives, computed from the map.
 *
 *   name --placement_hash--> u32 --placement_pg--> pg (stable mod pg_num)
 *   pg --straw2 over the OSDs that are in--> raw set (size OSDs, each in
 *   its own failure domain) --minus down OSDs--> up set; the first OSD of
 *   the up set is the primary.  A pg_temp entry of the map overrides the
 *   acting set.
 *
 * Everything is integer arithmetic (a fixed-point log), so every machine
 * computes the same answer; tests/unit/test_placement.c pins golden
 * vectors, and any change to them is a format change.
 */
#ifndef ATOLL_PLACEMENT_H
#define ATOLL_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

struct osdmap;
struct osdmap_pool;

/* The frozen object-name hash: XXH32(name, len, seed 0). */
uint32_t placement_hash(const void *name, size_t len);
/* Ceph's stable mod: x mod b where bmask is the next power of two minus
 * one; growing b moves only the PGs that split. */
uint32_t placement_stable_mod(uint32_t x, uint32_t b, uint32_t bmask);
/* The PG of a hash in pool p. */
uint32_t placement_pg(const struct osdmap_pool *p, uint32_t hash);
/* The PG of an object name in pool p. */
uint32_t placement_object_pg(const struct osdmap_pool *p, const char *name, size_t len);

/* 2^44 * log2(x) for 1 <= x <= 65536 (0 outside), from a table built
 * once with integer arithmetic only; straw2's "ln".  Exposed for tests. */
uint64_t placement_log2_fixed(uint32_t x);

/* The raw set of pg: up to p->size OSD ids in out[] (positions are kept;
 * a slot that no failure domain can fill is -1, and so is every slot from
 * p->size to OSDMAP_SIZE_MAX).  Returns the number of slots filled (not
 * counting -1); -EINVAL if pg >= p->pg_num or the pool is malformed,
 * -ENOMEM.  out must hold OSDMAP_SIZE_MAX.
 *
 * Rules: an OSD is a candidate if it exists and weight > 0; it is accepted
 * if it is in, with probability reweight (a hash of pg and OSD decides, as
 * in Ceph).  Host weights are the sums of their candidates' weights and do
 * not depend on in/out, so marking an OSD out (or lowering its reweight)
 * moves only the PGs that had it: they retry.  Down OSDs stay in the raw
 * set. */
int placement_raw(const struct osdmap *m, const struct osdmap_pool *p,
		  uint32_t pg, int32_t *out);
/* The acting set: pg_temp if the map has one (without down OSDs; if none
 * of them is up, the up set instead), else the raw set without down OSDs,
 * compacted; *primary gets out[0] or -1.  Returns the count, or the errors
 * of placement_raw(). */
int placement_acting(const struct osdmap *m, const struct osdmap_pool *p,
		     uint32_t pg, int32_t *out, int32_t *primary);

/* placement_raw() groups the map's OSDs by host on every call, O(max_osd).
 * Code that places many PGs against one map (an OSD scanning its PGs,
 * tests, tools) builds that once: a context borrows m, which must stay
 * unchanged and alive until placement_ctx_free().  A context is read-only
 * once built, so threads may share it.  Results are the same as
 * placement_raw()/placement_acting(). */
struct placement_ctx;
struct placement_ctx *placement_ctx_new(const struct osdmap *m);	/* NULL: ENOMEM */
void placement_ctx_free(struct placement_ctx *c);
int placement_ctx_raw(const struct placement_ctx *c, const struct osdmap_pool *p,
		      uint32_t pg, int32_t *out);
int placement_ctx_acting(const struct placement_ctx *c, const struct osdmap_pool *p,
			 uint32_t pg, int32_t *out, int32_t *primary);

#endif
