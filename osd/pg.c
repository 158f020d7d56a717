/*
 * pg.c - the placement groups an OSD holds: their table, creation,
 * loading at startup, and what a new map does to them.
 *
 * A PG exists on an OSD as a store collection pg_coll(pool, pg) holding
 * the PG's objects plus its meta object (PG_META_OID, pglog.h) whose
 * omap keeps the info and the log.  The OSD creates a PG as soon as a map
 * puts it in the PG's acting set, and keeps it afterwards (moving data
 * away is the recovery issue's job).
 *
 * Intervals: a PG's interval is the run of map epochs with the same
 * acting set, primary, and incarnation (up_from) of every member.  When a
 * map starts a new interval, the old one is appended to the info's past
 * intervals (with maybe_went_rw when it had min_size members, so could
 * have accepted writes), every op of the PG is answered -ESTALE, and the
 * new primary peers (peering.c).  A map that jumps over epochs the
 * monitors trimmed also starts a new interval, and leaves the epochs
 * skipped in the past intervals as a hole (pglog.h): the PG then goes
 * active only once a peer that knows that stretch answers.
 *
 * All of this runs on the loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll_assert.h"
#include "log.h"
#include "pg.h"
#include "placement.h"
#include "store.h"

void osd_post(struct osd *osd, void (*fn)(void *), void *arg)
{
	uint64_t id = osd->msgr ? msgr_timer(osd->msgr, 0, fn, arg) : 0;

	if (!id && atomic_load(&osd->closing)) {
		fn(arg);	/* the loop is gone or going */
		return;
	}
	ATOLL_ASSERT(id != 0, "out of memory posting work to the loop thread");
}

/* True once the monitor marked this incarnation up and our map shows it:
 * before that the map may still list a previous incarnation of us as up,
 * and we must neither serve nor peer. */
bool osd_is_up(const struct osd *osd)
{
	const struct osdmap_osd *me;

	if (!osd->map || !osd->booted || osd->stopping || osd->map->epoch < osd->up_epoch)
		return false;
	me = osdmap_osd(osd->map, osd->whoami);
	return me && (me->state & OSD_ST_UP) && !strcmp(me->addr, osd->addr);
}

/* ---- the table ------------------------------------------------------- */

static uint32_t pg_hash(uint64_t coll, uint32_t nb)
{
	return (uint32_t)((coll * 0x9e3779b97f4a7c15ull) >> 40) & (nb - 1);
}

struct pg *osd_pg_find(struct osd *osd, uint32_t pool, uint32_t pgid)
{
	uint64_t coll = pg_coll(pool, pgid);

	if (!osd->pgs)
		return NULL;
	for (struct pg *pg = osd->pgs[pg_hash(coll, osd->pg_buckets)]; pg; pg = pg->hnext)
		if (pg->coll == coll)
			return pg;
	return NULL;
}

static int pg_table_add(struct osd *osd, struct pg *pg)
{
	if (!osd->pgs || osd->npgs >= osd->pg_buckets) {
		uint32_t nb = osd->pg_buckets ? osd->pg_buckets * 2 : 256;
		struct pg **t = calloc(nb, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (uint32_t i = 0; i < osd->pg_buckets; i++) {
			struct pg *p = osd->pgs[i], *n;

			for (; p; p = n) {
				n = p->hnext;
				uint32_t h = pg_hash(p->coll, nb);

				p->hnext = t[h];
				t[h] = p;
			}
		}
		free(osd->pgs);
		osd->pgs = t;
		osd->pg_buckets = nb;
	}
	uint32_t h = pg_hash(pg->coll, osd->pg_buckets);

	pg->hnext = osd->pgs[h];
	osd->pgs[h] = pg;
	osd->npgs++;
	return 0;
}

static struct pg *pg_alloc(struct osd *osd, uint32_t pool, uint32_t pgid)
{
	struct pg *pg = calloc(1, sizeof(*pg));

	if (!pg)
		return NULL;
	pg->osd = osd;
	pg->pool = pool;
	pg->pgid = pgid;
	pg->coll = pg_coll(pool, pgid);
	pg->info.pool = pool;
	pg->info.pg = pgid;
	pg->info.primary = -1;
	pg->waiting_tail = &pg->waiting;
	if (pglog_init(&pg->log, osd->log_max, osd->dups_max)) {
		free(pg);
		return NULL;
	}
	return pg;
}

static void pg_free(struct pg *pg)
{
	pg_recovery_free(pg);
	pg_backfill_free(pg);
	pglog_destroy(&pg->log);
	pg_info_clear(&pg->info);
	for (uint32_t i = 0; i < pg->nprobes; i++)
		pg_info_clear(&pg->probes[i].info);
	free(pg->rep_lost);	/* its timer no longer runs: the messenger stopped */
	free(pg);
}

void osd_pgs_free(struct osd *osd)
{
	for (uint32_t i = 0; i < osd->pg_buckets; i++) {
		struct pg *p = osd->pgs[i], *n;

		for (; p; p = n) {
			n = p->hnext;
			pg_free(p);
		}
	}
	free(osd->pgs);
	osd->pgs = NULL;
	osd->npgs = 0;
	osd->pg_buckets = 0;
	while (osd->pg_graveyard) {
		struct pg *pg = osd->pg_graveyard;

		osd->pg_graveyard = pg->hnext;
		pg_free(pg);
	}
}

/* The struct stays allocated until exit: late callbacks of its peering or
 * its queued transactions may still look at it (they find its peer_gen
 * moved on). */
void osd_pg_forget(struct osd *osd, struct pg *pg)
{
	struct pg **pp = &osd->pgs[pg_hash(pg->coll, osd->pg_buckets)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == pg) {
			*pp = pg->hnext;
			osd->npgs--;
			break;
		}
	}
	pg_recovery_free(pg);
	pg_backfill_free(pg);
	pg->hnext = osd->pg_graveyard;
	osd->pg_graveyard = pg;
}

void pg_set_state(struct pg *pg, uint32_t state)
{
	char a[160], b[160];

	if (pg->state == state)
		return;
	log_info("pg", "pg %u.%x: %s -> %s", pg->pool, pg->pgid,
		 pg_state_str(pg->state, a, sizeof(a)), pg_state_str(state, b, sizeof(b)));
	pg->state = state;
}

/* ---- transactions completing on the loop thread ----------------------- */

struct txn_cb {
	struct osd *osd;
	void (*done)(void *arg);	/* success, on the store's thread */
	void (*fn)(void *arg, int r);
	void *arg;
	int r;
};

static void txn_cb_loop(void *arg)
{
	struct txn_cb *c = arg;

	if (c->fn)
		c->fn(c->arg, c->r);
	free(c);
}

/* The store's completion (commit or flusher thread): hand the result to
 * the loop.  Only -EIO is the store's own failure (a device error, a
 * store that stopped writing): a transaction refused for what it asked
 * (-ENOENT, -ENOSPC, ...) is the caller's to handle, not STORE_ERRORS. */
static void txn_cb_store(void *arg, int r)
{
	struct txn_cb *c = arg;

	c->r = r;
	if (r == -EIO)
		atomic_fetch_add(&c->osd->store_errors, 1);
	if (!r && c->done) {
		c->done(c->arg);
		free(c);
		return;
	}
	osd_post(c->osd, txn_cb_loop, c);
}

int pg_queue_txn(struct pg *pg, struct store_txn *txn, void (*fn)(void *arg, int r), void *arg)
{
	return pg_queue_txn_direct(pg, txn, NULL, fn, arg);
}

int pg_queue_txn_direct(struct pg *pg, struct store_txn *txn, void (*done)(void *arg),
			void (*fn)(void *arg, int r), void *arg)
{
	struct osd *osd = pg->osd;
	struct txn_cb *c;
	int r;

	if (atomic_load(&osd->closing)) {
		store_txn_free(txn);
		return -ESHUTDOWN;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		store_txn_free(txn);
		return -ENOMEM;
	}
	c->osd = osd;
	c->done = done;
	c->fn = fn;
	c->arg = arg;
	c->r = 0;
	r = store_queue(osd->store, txn, txn_cb_store, c);
	if (r < 0) {
		log_error("pg", "pg %u.%x: cannot queue a store transaction: %s; "
			  "check the store with atoll-store-tool fsck", pg->pool, pg->pgid,
			  strerror(-r));
		if (r == -EIO)
			atomic_fetch_add(&osd->store_errors, 1);
		c->r = r;
		osd_post(osd, txn_cb_loop, c);
	}
	return 0;
}

static void persist_done(void *arg, int r)
{
	struct pg *pg = arg;

	if (r < 0)
		log_error("pg", "pg %u.%x: writing its info failed: %s", pg->pool, pg->pgid,
			  strerror(-r));
}

static int pg_persist_info(struct pg *pg)
{
	struct store_txn *t = store_txn_new();
	int r;

	if (!t)
		return -ENOMEM;
	r = pglog_write_info(&pg->info, t, pg->coll);
	if (r) {
		store_txn_free(t);
		return r;
	}
	return pg_queue_txn(pg, t, persist_done, pg);
}

/* ---- recovering from a failed transaction ------------------------------ */

static void reload_done(void *arg, int r)
{
	struct pg *pg = arg;
	struct osd *osd = pg->osd;
	struct pg_info old = pg->info, info;
	struct pglog log;

	(void)r;
	pg->reloading = false;
	if (pglog_init(&log, osd->log_max, osd->dups_max) == 0 &&
	    pglog_read(osd->store, pg->coll, &info, &log) == 0) {
		/* the interval is the map's, whatever the store got of it */
		info.same_interval_since = old.same_interval_since;
		info.nacting = old.nacting;
		memcpy(info.acting, old.acting, sizeof(info.acting));
		info.primary = old.primary;
		pg_info_clear(&info);
		info.past = old.past;
		info.npast = old.npast;
		old.past = NULL;
		pg_info_clear(&old);
		pglog_destroy(&pg->log);
		pg->log = log;
		pg->info = info;
		log_info("pg", "pg %u.%x: log re-read, last_update %llu'%llu", pg->pool, pg->pgid,
			 (unsigned long long)info.last_update.epoch,
			 (unsigned long long)info.last_update.seq);
	} else {
		pglog_destroy(&log);
		log_error("pg", "pg %u.%x: cannot re-read its log; it stays inactive until the "
			  "OSD restarts", pg->pool, pg->pgid);
		return;
	}
	pg->peered_sis = 0;
	if (pg->is_primary && osd_is_up(osd))
		pg_start_peering(pg);
}

void pg_fail(struct pg *pg, int r)
{
	char why[96];

	if (pg->reloading)
		return;
	snprintf(why, sizeof(why), "a write failed in the store (%s)", strerror(-r));
	pg_repeer(pg, why, true);
}

void pg_repeer(struct pg *pg, const char *why, bool error)
{
	struct store_txn *t;

	if (pg->reloading)
		return;
	if (error)
		log_error("pg", "pg %u.%x: %s; re-reading its log", pg->pool, pg->pgid, why);
	else
		log_warn("pg", "pg %u.%x: %s; peering again", pg->pool, pg->pgid, why);
	pg->reloading = true;
	pg->peer_gen++;
	pg_abort_ops(pg);
	pg_set_state(pg, PG_ST_INCOMPLETE | PG_ST_INACTIVE);
	/* a barrier: once it is done, everything queued before is too */
	t = store_txn_new();
	if (!t || store_txn_touch(t, pg->coll, PG_META_OID)) {
		store_txn_free(t);
		reload_done(pg, -ENOMEM);
		return;
	}
	pg_queue_txn(pg, t, reload_done, pg);
}

/* ---- loading at startup ----------------------------------------------- */

struct coll_list {
	uint64_t *ids;
	uint32_t n, cap;
};

static int collect_coll(void *arg, uint64_t coll, uint32_t flags)
{
	struct coll_list *cl = arg;

	(void)flags;
	if (cl->n == cl->cap) {
		uint32_t cap = cl->cap ? cl->cap * 2 : 256;
		uint64_t *ids = realloc(cl->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		cl->ids = ids;
		cl->cap = cap;
	}
	cl->ids[cl->n++] = coll;
	return 0;
}

struct name_page {
	char names[256][STORE_NAME_MAX + 1];
	uint32_t n;
};

static int collect_name(void *arg, const char *oid)
{
	struct name_page *np = arg;

	snprintf(np->names[np->n++], STORE_NAME_MAX + 1, "%s", oid);
	return 0;
}

/* Objects and bytes of a PG, for its stats (listing in pages, then
 * stat: a store read inside a listing callback would nest snapshots). */
void pg_count_objects(struct pg *pg)
{
	struct name_page *np = malloc(sizeof(*np));
	char after[STORE_NAME_MAX + 1];
	bool first = true;

	if (!np)
		return;
	pg->objects = 0;
	pg->bytes = 0;
	for (;;) {
		np->n = 0;
		if (store_list(pg->osd->store, pg->coll, first ? NULL : after, 256,
			       collect_name, np) < 0 || np->n == 0)
			break;
		first = false;
		for (uint32_t i = 0; i < np->n; i++) {
			struct store_stat st;

			if (np->names[i][0] == PG_RESERVED_PREFIX)
				continue;
			if (store_stat(pg->osd->store, pg->coll, np->names[i], &st) == 0) {
				pg->objects++;
				pg->bytes += st.size;
			}
		}
		memcpy(after, np->names[np->n - 1], sizeof(after));
		if (np->n < 256)
			break;
	}
	free(np);
}

static int load_one(struct osd *osd, uint64_t coll)
{
	struct pg *pg = pg_alloc(osd, (uint32_t)(coll >> 32), (uint32_t)coll);
	int r;

	if (!pg)
		return -ENOMEM;
	pg_info_clear(&pg->info);
	r = pglog_read(osd->store, coll, &pg->info, &pg->log);
	if (r == -ENOENT) {
		pg_free(pg);
		return 0;	/* not a PG collection */
	}
	if (r) {
		log_error("pg", "collection 0x%llx: cannot read its PG log: %s; check the "
			  "store with: atoll-store-tool --data %s fsck",
			  (unsigned long long)coll, strerror(-r), osd->data_dir);
		pg_free(pg);
		return r;
	}
	pg_count_objects(pg);
	pg->sis_watch_from = UINT64_MAX;
	r = pg_table_add(osd, pg);
	if (r) {
		pg_free(pg);
		return r;
	}
	log_debug("pg", "pg %u.%x loaded: last_update %llu'%llu, %llu objects",
		  pg->pool, pg->pgid, (unsigned long long)pg->info.last_update.epoch,
		  (unsigned long long)pg->info.last_update.seq,
		  (unsigned long long)pg->objects);
	return 0;
}

int osd_pgs_load(struct osd *osd)
{
	struct coll_list cl = { 0 };
	int r;

	/* list first, read after: a store read inside a listing callback
	 * would nest two read snapshots in one thread */
	r = store_colls(osd->store, collect_coll, &cl);
	for (uint32_t i = 0; r >= 0 && i < cl.n; i++)
		r = load_one(osd, cl.ids[i]);
	free(cl.ids);
	if (r < 0)
		return r;
	log_info("osd", "loaded %u placement groups", osd->npgs);
	return 0;
}

/* ---- map changes ------------------------------------------------------- */

static bool in_set(const int32_t *set, int n, int32_t id)
{
	for (int i = 0; i < n; i++)
		if (set[i] == id)
			return true;
	return false;
}

/* Did any member come up again (a new incarnation) between the maps? */
static bool incarnation_changed(const struct osdmap *prev, const struct osdmap *cur,
				const int32_t *acting, int n)
{
	if (!prev)
		return false;
	for (int i = 0; i < n; i++) {
		const struct osdmap_osd *a = osdmap_osd(prev, acting[i]);
		const struct osdmap_osd *b = osdmap_osd(cur, acting[i]);

		if (!a || !b || a->up_from != b->up_from)
			return true;
	}
	return false;
}

/* The up set: the raw set without down OSDs, compacted (placement without
 * pg_temp).  Returns the count, or a negative errno. */
static int up_set(const struct osdmap *m, const struct osdmap_pool *pool, uint32_t pgid,
		  int32_t *out)
{
	int32_t raw[OSDMAP_SIZE_MAX];
	int n = placement_raw(m, pool, pgid, raw), k = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < OSDMAP_SIZE_MAX; i++)
		if (raw[i] >= 0 && osdmap_osd_up(m, raw[i]))
			out[k++] = raw[i];
	return k;
}

/* Adds to pg's past intervals those of the maps held in osd->hist, from
 * last (a map before the PG's first interval here) back to the pool's
 * creation or the oldest map held. */
static void pg_add_history(struct pg *pg, const struct osdmap *last, uint32_t pool_id,
			   uint32_t pgid)
{
	const struct osdmap *m = last;
	const struct osdmap_pool *pp = osdmap_pool(m, pool_id);
	struct pg_interval iv = { .first = m->epoch, .last = m->epoch };
	int32_t acting[OSDMAP_SIZE_MAX], primary;
	int n = placement_acting(m, pp, pgid, acting, &primary);

	for (;;) {
		const struct osdmap *older = m->epoch > 1 ? osd_map_at(pg->osd, m->epoch - 1) : NULL;
		const struct osdmap_pool *op = older ? osdmap_pool(older, pool_id) : NULL;
		int32_t oacting[OSDMAP_SIZE_MAX], oprimary = -1;
		int on = op && op->created == pp->created ?
			placement_acting(older, op, pgid, oacting, &oprimary) : -1;
		bool same = on >= 0 && on == n && oprimary == primary &&
			    !memcmp(oacting, acting, (size_t)(n > 0 ? n : 0) * sizeof(int32_t)) &&
			    !incarnation_changed(older, m, acting, n);

		if (same) {
			iv.first = older->epoch;
			m = older;
			continue;
		}
		if (n > 0) {
			iv.nacting = (uint8_t)n;
			memcpy(iv.acting, acting, (size_t)n * sizeof(int32_t));
			iv.primary = primary;
			iv.maybe_went_rw = n >= pp->min_size;
			pg_info_add_past(&pg->info, &iv);
		}
		if (on < 0)
			return;
		m = older;
		pp = op;
		n = on;
		primary = oprimary;
		memcpy(acting, oacting, sizeof(acting));
		iv = (struct pg_interval){ .first = m->epoch, .last = m->epoch };
	}
}

static struct pg *pg_create(struct osd *osd, const struct osdmap *prev,
			    const struct osdmap *cur, const struct osdmap_pool *pool,
			    uint32_t pgid)
{
	struct pg *pg = pg_alloc(osd, pool->id, pgid);
	struct store_txn *t;
	int r;

	if (!pg)
		return NULL;
	pg->info.same_interval_since = cur->epoch;
	pg->sis_watch_from = cur->epoch;
	/* What we can see of the history: the intervals of the maps this
	 * OSD still holds, back to the pool's creation (its members will
	 * tell us older ones).  Not only the previous map's: when the last
	 * interval before ours could not take writes (one member left), the
	 * one before it may have, and if all its members are gone nobody
	 * else would tell us of it (tests/recovery/interval.sh). */
	if (prev && osdmap_pool(prev, pool->id) && pool->created < cur->epoch)
		pg_add_history(pg, prev, pool->id, pgid);
	t = store_txn_new();
	if (!t)
		goto fail;
	r = store_txn_coll_create(t, pg->coll, (pool->flags & POOL_F_COMPRESS) ?
				  STORE_COLL_COMPRESS : 0);
	if (!r)
		r = store_txn_touch(t, pg->coll, PG_META_OID);
	if (!r)
		r = pglog_write_info(&pg->info, t, pg->coll);
	if (r) {
		store_txn_free(t);
		goto fail;
	}
	if (pg_table_add(osd, pg)) {
		store_txn_free(t);
		goto fail;
	}
	pg_queue_txn(pg, t, persist_done, pg);
	log_info("pg", "pg %u.%x created", pool->id, pgid);
	return pg;
fail:
	log_error("pg", "pg %u.%x: cannot create it (out of memory)", pool->id, pgid);
	pg_free(pg);
	return NULL;
}

/* Whether an OSD of a past interval that may have taken writes is up in
 * cur and was not asked when the PG last peered (it was down then). */
static bool pg_waits_for_up(const struct pg *pg, const struct osdmap *cur)
{
	for (uint32_t k = 0; k < pg->info.npast; k++) {
		const struct pg_interval *iv = &pg->info.past[k];

		if (!iv->maybe_went_rw)
			continue;
		for (uint8_t i = 0; i < iv->nacting; i++) {
			int32_t id = iv->acting[i];
			bool asked = id == pg->osd->whoami;

			for (uint32_t j = 0; j < pg->nprobes && !asked; j++)
				asked = pg->probes[j].osd == id;
			if (!asked && id >= 0 && osdmap_osd_up(cur, id))
				return true;
		}
	}
	return false;
}

static void pg_map_one(struct osd *osd, const struct osdmap *prev, const struct osdmap *cur,
		       const struct osdmap_pool *pool, uint32_t pgid)
{
	int32_t acting[OSDMAP_SIZE_MAX], primary, up[OSDMAP_SIZE_MAX];
	int n = placement_acting(cur, pool, pgid, acting, &primary);
	int nup = up_set(cur, pool, pgid, up);
	/* an up member outside the acting set (pg_temp) is backfilled into
	 * the PG, so it holds it too */
	bool in = (n > 0 && in_set(acting, n, osd->whoami)) ||
		  (nup > 0 && in_set(up, nup, osd->whoami));
	struct pg *pg = osd_pg_find(osd, pool->id, pgid);

	if (!pg && !in)
		return;
	if (!pg) {
		pg = pg_create(osd, prev, cur, pool, pgid);
		if (!pg)
			return;
		pg->info.nacting = 0;	/* forces the interval set-up below */
		pg->info.primary = -2;
	}
	pg->size = pool->size;
	pg->min_size = pool->min_size;
	if (pg->sis_watch_from == UINT64_MAX)
		pg->sis_watch_from = cur->epoch;

	/* a jump over trimmed epochs (osdmap_client.c): the interval we knew
	 * ended somewhere in them, and what came between is unknown here */
	bool hole = osd->hole_last && prev && osd->hole_last < cur->epoch &&
		    pool->created <= osd->hole_last;	/* a pool made later has no past there */
	bool changed = pg->info.primary != primary || pg->info.nacting != n ||
		       memcmp(pg->info.acting, acting, n * sizeof(int32_t)) ||
		       incarnation_changed(prev, cur, acting, n) || hole;

	if (hole) {
		struct pg_interval h = {
			.first = osd->hole_first,
			.last = osd->hole_last,
			.nacting = 0,
			.primary = osd->whoami,	/* whose history has the hole */
			.maybe_went_rw = 1,
		};

		pg_info_add_past(&pg->info, &h);
	}
	if (changed) {
		if (pg->info.primary != -2 && pg->info.nacting > 0 &&
		    pg->info.same_interval_since < cur->epoch &&
		    (!hole || pg->info.same_interval_since < osd->hole_first)) {
			struct pg_interval iv = {
				.first = pg->info.same_interval_since,
				.last = hole ? osd->hole_first - 1 : cur->epoch - 1,
				.nacting = pg->info.nacting,
				.primary = pg->info.primary,
				.maybe_went_rw = pg->info.nacting >= pool->min_size,
			};

			memcpy(iv.acting, pg->info.acting, sizeof(iv.acting));
			pg_info_add_past(&pg->info, &iv);
		}
		if (pg->info.primary != -2) {
			pg->info.same_interval_since = cur->epoch;
			pg->sis_watch_from = 0;	/* seen it begin */
		}
		pg->info.nacting = (uint8_t)n;
		memset(pg->info.acting, 0xff, sizeof(pg->info.acting));
		memcpy(pg->info.acting, acting, n * sizeof(int32_t));
		pg->info.primary = primary;
		pg->peer_gen++;
		pg_abort_ops(pg);
		if (!pg->is_primary && primary == osd->whoami)
			pg->objects_stale = true;
		pg->is_primary = primary == osd->whoami;
		if (pg->is_primary)
			pg_set_state(pg, PG_ST_PEERING);
		else
			pg_set_state(pg, 0);
		log_debug("pg", "pg %u.%x: new interval at epoch %llu, primary osd.%d",
			  pg->pool, pg->pgid, (unsigned long long)cur->epoch, primary);
		if (!pg->is_primary)
			pg_persist_info(pg);
		/* the primary persists the interval as the first step of
		 * peering */
	}
	pg->is_primary = primary == osd->whoami;
	if (nup < 0)
		nup = 0;
	if (pg->nup != nup || memcmp(pg->up, up, (size_t)nup * sizeof(int32_t))) {
		/* the backfill targets changed: the primary peers again */
		if (!changed && pg->is_primary)
			pg->peered_sis = 0;
		pg->nup = (uint8_t)nup;
		memcpy(pg->up, up, (size_t)nup * sizeof(int32_t));
	}
	/* peering waits for every OSD it asked; one that went down will not
	 * answer: ask again without it */
	if (pg->is_primary && !changed && (pg->state & PG_ST_PEERING)) {
		for (uint32_t i = 0; i < pg->nprobes; i++)
			if (!pg->probes[i].replied && !osdmap_osd_up(cur, pg->probes[i].osd))
				pg->peered_sis = 0;
	}
	/* a down PG waits for an OSD of its past intervals that was not up
	 * when it peered: once one is up, it peers again to hear it */
	if (pg->is_primary && !changed && (pg->state & PG_ST_DOWN) && pg_waits_for_up(pg, cur))
		pg->peered_sis = 0;
	if (pg->is_primary && osd_is_up(osd) && pg->peered_sis != pg->info.same_interval_since)
		pg_start_peering(pg);
	if (!in && !pg->is_primary)
		osd_stray_check_later(osd);	/* a copy it no longer needs */
}

void osd_pgs_map_changed(struct osd *osd, const struct osdmap *prev, const struct osdmap *cur)
{
	for (uint32_t i = 0; i < cur->npools; i++) {
		const struct osdmap_pool *pool = &cur->pools[i];

		for (uint32_t p = 0; p < pool->pg_num; p++)
			pg_map_one(osd, prev, cur, pool, p);
	}
}

void osd_pgs_recheck(struct osd *osd)
{
	if (osd->map && !atomic_load(&osd->closing))
		osd_pgs_map_changed(osd, osd->map, osd->map);
}

void osd_pgs_kick(struct osd *osd)
{
	if (!osd_is_up(osd))
		return;
	for (uint32_t i = 0; i < osd->pg_buckets; i++)
		for (struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext)
			if (pg->is_primary && pg->peered_sis != pg->info.same_interval_since)
				pg_start_peering(pg);
}

void osd_pgs_kick_ops(struct osd *osd)
{
	for (uint32_t i = 0; i < osd->pg_buckets; i++)
		for (struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext)
			if (pg->is_primary && pg->waiting)
				pg_kick_ops(pg);
}

uint32_t osd_pgs_stats(struct osd *osd, struct pg_stat **out)
{
	struct pg_stat *s;
	uint32_t n = 0;

	*out = NULL;
	if (!osd->npgs)
		return 0;
	s = calloc(osd->npgs, sizeof(*s));
	if (!s)
		return 0;
	for (uint32_t i = 0; i < osd->pg_buckets; i++) {
		for (struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext) {
			if (!pg->is_primary)
				continue;
			struct pg_stat *st = &s[n++];

			st->pool = pg->pool;
			st->pg = pg->pgid;
			st->state = pg->state | (pg->scrub_errors ? PG_ST_INCONSISTENT : 0);
			st->objects = pg->objects;
			st->bytes = pg->bytes;
			st->last_update_epoch = pg->info.last_update.epoch;
			st->last_update_seq = pg->info.last_update.seq;
			st->nacting = pg->info.nacting;
			memcpy(st->acting, pg->info.acting, sizeof(st->acting));
			pg_stat_fill_extra(pg, st);
			if ((pg->state & (PG_ST_ACTIVE | PG_ST_CLEAN)) ==
			    (PG_ST_ACTIVE | PG_ST_CLEAN) && osd->map)
				pg->last_epoch_clean = osd->map->epoch;
			st->last_epoch_clean = pg->last_epoch_clean;
		}
	}
	*out = s;
	return n;
}
