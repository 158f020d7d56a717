/*
 * backfill.c - bringing a PG member up to date by a full scan, when the
 * PG log does not reach back to what it has (doc/recovery.md, "Backfill").
 *
 * Targets are members of the PG's up set that are not complete: an OSD
 * that was away longer than the log covers, or a new one.  Peering keeps
 * them out of the acting set (the monitor's pg_temp), so they are never
 * primary, never count toward min_size and get no replicated writes;
 * the primary copies the PG to them while it serves:
 *
 *   1. SCAN: the target lists its objects after its backfill position
 *      (MT_PG_SCAN, at most BF_BATCH, name order, with the versions of
 *      their object info); the primary lists its own after the same
 *      position.  Up to the smaller last name of the two (or to the end
 *      when both are done) every object that differs is queued: present
 *      here and missing or of another version there is pushed, present
 *      only there is pushed as a delete (objcopy.c's copy sees it
 *      missing here).  The position moves to that name at once.
 *   2. Writes: an object at or below the position is the target's from
 *      then on.  Every write to one (replication.c calls
 *      pg_backfill_note_write) marks it dirty, and so does every write in
 *      flight when the position moves past its object; a dirty object is
 *      pushed again, whole, once no write to it is in flight.  An object
 *      is never pushed while a write to it is in flight, so a push reads
 *      at least what every write submitted before it left, and a later
 *      write is caught by the dirty mark.  Writes above the position are
 *      not sent: the scan will find them.
 *   3. DONE: past the end, with nothing queued, dirty or busy (so no
 *      write is in flight), the target has every object as of our
 *      last_update; PGL_BACKFILL_DONE gives it our log (tail and entries)
 *      and last_epoch_started.  When every target is done the primary asks
 *      the monitor to drop the pg_temp; the next interval has the targets
 *      in the acting set and log recovery covers the writes since.
 *
 * Deletes cannot come back: an object deleted here is missing here, so
 * the scan or the dirty push removes it there.  Nothing is persisted on
 * the target until DONE: a backfill cut short by a new interval starts
 * over (objects already equal are skipped by the comparison).
 *
 * Copies use recovery.c's machinery and its osd_recovery_max_active
 * slots.  Everything runs on the loop thread; pg->peer_gen ends a round.
 *
 * The member's side is here too: answering scans and taking the log.
 * Copies left on OSDs the PG moved away from are dropped by stray.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "objcopy.h"
#include "pg.h"
#include "store.h"

#define BF_BATCH	256u
#define BF_TIMEOUT_MS	60000
#define BF_RETRY_MS	1000
#define BF_CLEAR_RETRY_MS	5000

enum { BF_TODO = 0, BF_BUSY = 1, BF_DONE = 2 };

struct bf_item {
	char *oid;
	uint8_t state;
};

/* An object to push again (a write reached it after it was covered). */
struct bf_dirty {
	struct bf_dirty *next;
	char *oid;
	bool busy;
};

struct bf_target {
	int32_t osd;
	bool started;		/* pos means something */
	bool end;		/* the position is past every name */
	char pos[STORE_NAME_MAX + 1];	/* objects <= pos are covered */
	bool scanning;
	bool finishing;
	bool complete;
	struct bf_item *items;	/* the batch being copied */
	uint32_t nitems, ndone;
	struct bf_dirty *dirty;
	uint64_t pushed;	/* objects copied or removed, for the log */
};

struct pg_backfill {
	uint64_t gen;		/* pg->peer_gen */
	uint64_t backoff_ms;
	uint32_t ntargets;
	struct bf_target t[OSDMAP_SIZE_MAX];
};

struct bf_ctx {
	struct pg *pg;
	uint64_t gen;
	uint32_t ti;
	uint32_t item;		/* UINT32_MAX: dirty */
	struct bf_dirty *d;
};

static struct pg_backfill *bf_live(struct pg *pg, uint64_t gen)
{
	if (gen != pg->peer_gen || !pg->bf || pg->bf->gen != gen)
		return NULL;
	return pg->bf;
}

static void items_clear(struct bf_target *t)
{
	for (uint32_t i = 0; i < t->nitems; i++)
		free(t->items[i].oid);
	free(t->items);
	t->items = NULL;
	t->nitems = t->ndone = 0;
}

void pg_backfill_free(struct pg *pg)
{
	if (!pg->bf)
		return;
	for (uint32_t i = 0; i < pg->bf->ntargets; i++) {
		struct bf_target *t = &pg->bf->t[i];

		items_clear(t);
		while (t->dirty) {
			struct bf_dirty *d = t->dirty;

			t->dirty = d->next;
			free(d->oid);
			free(d);
		}
	}
	free(pg->bf);
	pg->bf = NULL;
}

bool pg_backfill_complete(const struct pg *pg)
{
	if (!pg->bf)
		return true;
	for (uint32_t i = 0; i < pg->bf->ntargets; i++)
		if (!pg->bf->t[i].complete)
			return false;
	return true;
}

static bool covered(const struct bf_target *t, const char *oid)
{
	return t->end || (t->started && strcmp(oid, t->pos) <= 0);
}

static void mark_dirty(struct bf_target *t, const char *oid)
{
	struct bf_dirty *d;

	for (d = t->dirty; d; d = d->next)
		if (!d->busy && !strcmp(d->oid, oid))
			return;		/* already queued */
	d = calloc(1, sizeof(*d));
	if (!d || !(d->oid = strdup(oid))) {
		/* without the mark the target could miss the write: give up
		 * on this round rather than finish wrong */
		free(d);
		log_error("backfill", "out of memory marking '%s' dirty; the backfill of "
			  "osd.%d restarts with the next interval", oid, t->osd);
		t->finishing = true;	/* never completes */
		return;
	}
	d->next = t->dirty;
	t->dirty = d;
}

void pg_backfill_note_write(struct pg *pg, const char *oid)
{
	if (!pg->bf || !oid[0])
		return;
	for (uint32_t i = 0; i < pg->bf->ntargets; i++) {
		struct bf_target *t = &pg->bf->t[i];

		if (!t->complete && covered(t, oid))
			mark_dirty(t, oid);
	}
}

/* ---- listing with versions (both sides) ------------------------------------- */

struct name_list {
	char (*names)[STORE_NAME_MAX + 1];
	uint32_t n, max;
};

static int collect(void *arg, const char *oid)
{
	struct name_list *nl = arg;

	if (nl->n < nl->max)
		snprintf(nl->names[nl->n++], STORE_NAME_MAX + 1, "%s", oid);
	return 0;
}

/* The version in oid's object info; 0'0 when it has none. */
static struct pg_version obj_version(struct pg *pg, const char *oid)
{
	struct pg_version v = { 0, 0 };
	void *val = NULL;
	size_t vlen = 0;

	if (store_getattr(pg->osd->store, pg->coll, oid, OSD_OI_ATTR, &val, &vlen) == 0) {
		struct osd_oi oi;

		(void)osd_oi_decode(val, vlen, &oi);	/* malformed: 0'0 */
		v = oi.version;
	}
	free(val);
	return v;
}

/*
 * Up to max objects of pg after `after` (NULL: from the start), meta
 * object left out, into *out (malloc'd, with malloc'd names:
 * versions_free); *end when nothing follows them.  Names are read first,
 * then versions: a store read inside a listing callback would nest
 * snapshots.
 */
static int list_versions(struct pg *pg, const char *after, uint32_t max,
			 struct osd_scan_obj **out, uint32_t *n, bool *end)
{
	struct name_list nl = { .max = max + 1 };
	struct osd_scan_obj *v;
	int r;

	*out = NULL;
	*n = 0;
	nl.names = malloc((size_t)nl.max * sizeof(*nl.names));
	if (!nl.names)
		return -ENOMEM;
	/* one more than asked: the meta object does not shorten a batch, and
	 * fewer names than that means the end */
	r = store_list(pg->osd->store, pg->coll, after, nl.max, collect, &nl);
	if (r < 0) {
		free(nl.names);
		return r;
	}
	*end = nl.n < nl.max;
	v = calloc(nl.n ? nl.n : 1, sizeof(*v));
	if (!v) {
		free(nl.names);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nl.n && *n < max; i++) {
		if (nl.names[i][0] == PG_RESERVED_PREFIX)
			continue;
		v[*n].oid = strdup(nl.names[i]);
		if (!v[*n].oid) {
			r = -ENOMEM;
			break;
		}
		v[*n].oid_len = (uint32_t)strlen(nl.names[i]);
		v[*n].version = obj_version(pg, nl.names[i]);
		(*n)++;
	}
	free(nl.names);
	if (r < 0) {
		for (uint32_t i = 0; i < *n; i++)
			free((char *)v[i].oid);
		free(v);
		*n = 0;
		return r;
	}
	*out = v;
	return 0;
}

static void versions_free(struct osd_scan_obj *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free((char *)v[i].oid);
	free(v);
}

/* ---- the primary: scanning ---------------------------------------------------- */

static int add_item(struct bf_target *t, uint32_t *cap, const char *oid, size_t len)
{
	if (t->nitems == *cap) {
		uint32_t c = *cap ? *cap * 2 : 64;
		struct bf_item *v = realloc(t->items, c * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->items = v;
		*cap = c;
	}
	char *s = malloc(len + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s, oid, len);
	s[len] = 0;
	t->items[t->nitems].oid = s;
	t->items[t->nitems].state = BF_TODO;
	t->nitems++;
	return 0;
}

static int name_cmp(const char *a, uint32_t alen, const char *b, uint32_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/*
 * Compares the target's listing (theirs, their_end) with ours after the
 * same position and queues what differs, up to the bound; moves the
 * position to the bound.
 */
static int compare_batch(struct pg *pg, struct bf_target *t, const struct osd_scan_obj *theirs,
			 uint32_t ntheirs, bool their_end)
{
	struct osd_scan_obj *mine = NULL;
	uint32_t nmine = 0, cap = 0, i = 0, j = 0;
	bool my_end = true, to_end;
	const char *bound = NULL;
	uint32_t bound_len = 0;
	int r;

	r = list_versions(pg, t->started ? t->pos : NULL, BF_BATCH, &mine, &nmine, &my_end);
	if (r)
		return r;
	/* the bound: the smaller of the two last names of batches that did
	 * not reach the end */
	to_end = their_end && my_end;
	if (!their_end && ntheirs) {
		bound = theirs[ntheirs - 1].oid;
		bound_len = theirs[ntheirs - 1].oid_len;
	}
	if (!my_end && nmine &&
	    (!bound || name_cmp(mine[nmine - 1].oid, mine[nmine - 1].oid_len, bound,
				bound_len) < 0)) {
		bound = mine[nmine - 1].oid;
		bound_len = mine[nmine - 1].oid_len;
	}
	if (!to_end && !bound) {
		r = -EIO;	/* a batch that is neither full nor the end */
		goto out;
	}
	items_clear(t);
	while (!r && (i < nmine || j < ntheirs)) {
		const struct osd_scan_obj *a = i < nmine ? &mine[i] : NULL;
		const struct osd_scan_obj *b = j < ntheirs ? &theirs[j] : NULL;
		int c = !a ? 1 : !b ? -1 : name_cmp(a->oid, a->oid_len, b->oid, b->oid_len);
		const struct osd_scan_obj *x = c <= 0 ? a : b;

		if (!to_end && name_cmp(x->oid, x->oid_len, bound, bound_len) > 0)
			break;
		if (c < 0 || c > 0 || pg_version_cmp(a->version, b->version) != 0)
			r = add_item(t, &cap, x->oid, x->oid_len);
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	if (r)
		goto out;
	if (to_end) {
		t->end = true;
	} else {
		memcpy(t->pos, bound, bound_len);
		t->pos[bound_len] = 0;
	}
	t->started = true;
	/* writes in flight to what is covered now: push those again after */
	for (const struct osd_op *o = pg->inflight; o; o = o->next)
		if (o->oid[0] && covered(t, o->oid))
			mark_dirty(t, o->oid);
out:
	versions_free(mine, nmine);
	return r;
}

static void scan_reply(void *arg, struct msg *reply, int err)
{
	struct bf_ctx *cx = arg;
	struct pg *pg = cx->pg;
	struct pg_backfill *bf = bf_live(pg, cx->gen);
	struct osd_pg_scan s = { 0 };
	struct bf_target *t;
	struct dec d;
	int r = err;

	if (!bf) {
		msg_free(reply);
		free(cx);
		return;
	}
	t = &bf->t[cx->ti];
	free(cx);
	t->scanning = false;
	if (reply) {
		dec_init(&d, reply->front, reply->front_len);
		r = osd_pg_scan_decode(&d, &s);
		if (!r && s.kind != PGS_SCAN_REPLY)
			r = -EBADMSG;
		if (!r)
			r = s.rc;
	}
	if (!r)
		r = compare_batch(pg, t, s.objs, s.nobjs, s.end);
	osd_pg_scan_clear(&s);
	msg_free(reply);
	if (r) {
		log_warn("backfill", "pg %u.%x: scanning osd.%d failed: %s; retrying", pg->pool,
			 pg->pgid, t->osd, strerror(-r));
		bf->backoff_ms = mono_now_ms() + BF_RETRY_MS;
		osd_recovery_retry_later(pg->osd);
		return;
	}
	log_debug("backfill", "pg %u.%x: osd.%d scanned up to %s: %u objects to copy",
		  pg->pool, pg->pgid, t->osd, t->end ? "the end" : t->pos, t->nitems);
	osd_recovery_kick(pg->osd);
}

/* Sends m to target ti (busy set while the call runs, fn answers), or
 * backs off and retries later when m could not be built or sent. */
static void bf_call(struct pg *pg, uint32_t ti, struct msg_conn *c, struct msg *m,
		    bool *busy, msg_reply_fn fn)
{
	struct bf_ctx *cx = m ? calloc(1, sizeof(*cx)) : NULL;

	if (cx) {
		cx->pg = pg;
		cx->gen = pg->bf->gen;
		cx->ti = ti;
		*busy = true;
		if (msg_call(c, m, BF_TIMEOUT_MS, fn, cx) == 0)
			return;
		*busy = false;
		m = NULL;	/* msg_call freed it */
	}
	msg_free(m);
	free(cx);
	pg->bf->backoff_ms = mono_now_ms() + BF_RETRY_MS;
	osd_recovery_retry_later(pg->osd);
}

static void scan_send(struct pg *pg, uint32_t ti)
{
	struct bf_target *t = &pg->bf->t[ti];
	struct osd *osd = pg->osd;
	struct osd_pg_scan s = {
		.kind = PGS_SCAN,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.after = t->started ? t->pos : "",
		.after_len = t->started ? (uint32_t)strlen(t->pos) : 0,
		.max = BF_BATCH,
	};
	struct msg_conn *c = osd_peer_conn(osd, t->osd);
	struct msg *m = NULL;
	struct enc e;

	if (c) {
		enc_init(&e);
		osd_pg_scan_encode(&s, &e);
		m = msg_new(MT_PG_SCAN, &e);
		enc_free(&e);
	}
	bf_call(pg, ti, c, m, &t->scanning, scan_reply);
}

/* ---- the primary: copying and finishing ---------------------------------------- */

static void copied(void *arg, int r)
{
	struct bf_ctx *cx = arg;
	struct pg *pg = cx->pg;
	struct pg_backfill *bf = bf_live(pg, cx->gen);

	if (bf) {
		struct bf_target *t = &bf->t[cx->ti];

		if (cx->item != UINT32_MAX) {
			t->items[cx->item].state = r ? BF_TODO : BF_DONE;
			if (!r)
				t->ndone++;
		} else if (r) {
			cx->d->busy = false;
		} else {
			for (struct bf_dirty **pp = &t->dirty; *pp; pp = &(*pp)->next) {
				if (*pp == cx->d) {
					*pp = cx->d->next;
					free(cx->d->oid);
					free(cx->d);
					break;
				}
			}
		}
		if (!r)
			t->pushed++;
		if (r) {
			bf->backoff_ms = mono_now_ms() + BF_RETRY_MS;
			osd_recovery_retry_later(pg->osd);
		}
	}
	free(cx);
}

static bool copy_one(struct pg *pg, uint32_t ti, uint32_t item, struct bf_dirty *d)
{
	struct bf_target *t = &pg->bf->t[ti];
	struct bf_ctx *cx = calloc(1, sizeof(*cx));
	const char *oid = d ? d->oid : t->items[item].oid;

	if (!cx)
		return false;
	cx->pg = pg;
	cx->gen = pg->bf->gen;
	cx->ti = ti;
	cx->item = d ? UINT32_MAX : item;
	cx->d = d;
	if (d)
		d->busy = true;
	else
		t->items[item].state = BF_BUSY;
	if (objcopy_start(pg, t->osd, false, oid, copied, cx)) {
		if (d)
			d->busy = false;
		else
			t->items[item].state = BF_TODO;
		free(cx);
		return false;
	}
	return true;
}

/* The request to drop the pg_temp is one-way: asked again until the map
 * that drops it starts a new interval (which frees the backfill). */
static void clear_retry(void *arg)
{
	struct bf_ctx *cx = arg;

	if (!bf_live(cx->pg, cx->gen) || atomic_load(&cx->pg->osd->closing)) {
		free(cx);
		return;
	}
	pg_request_pg_temp(cx->pg, NULL, 0);
	if (!msgr_timer(cx->pg->osd->msgr, BF_CLEAR_RETRY_MS, clear_retry, cx))
		free(cx);
}

static void done_reply(void *arg, struct msg *reply, int err)
{
	struct bf_ctx *cx = arg;
	struct pg *pg = cx->pg;
	struct pg_backfill *bf = bf_live(pg, cx->gen);
	struct rc_reply rr = { .rc = osd_peermsg_rc_take(reply, err) };

	if (!bf) {
		free(cx);
		return;
	}
	struct bf_target *t = &bf->t[cx->ti];

	free(cx);
	t->finishing = false;
	if (rr.rc < 0) {
		log_warn("backfill", "pg %u.%x: osd.%d did not take the log: %s; retrying",
			 pg->pool, pg->pgid, t->osd, strerror(-rr.rc));
		bf->backoff_ms = mono_now_ms() + BF_RETRY_MS;
		osd_recovery_retry_later(pg->osd);
		return;
	}
	t->complete = true;
	log_info("backfill", "pg %u.%x: osd.%d is backfilled (%llu objects copied or removed)",
		 pg->pool, pg->pgid, t->osd, (unsigned long long)t->pushed);
	if (pg_backfill_complete(pg)) {
		struct bf_ctx *rc = calloc(1, sizeof(*rc));

		/* the next interval has the targets in the acting set */
		pg_request_pg_temp(pg, NULL, 0);
		pg_update_active_state(pg);
		if (rc) {
			rc->pg = pg;
			rc->gen = bf->gen;
			if (!msgr_timer(pg->osd->msgr, BF_CLEAR_RETRY_MS, clear_retry, rc))
				free(rc);
		}
	}
}

/* Every object is in: the target takes our log. */
static void finish(struct pg *pg, uint32_t ti)
{
	struct bf_target *t = &pg->bf->t[ti];
	struct osd *osd = pg->osd;
	struct osd_pg_log l = {
		.kind = PGL_BACKFILL_DONE,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.from = pg->info.last_update,
		.log_tail = pg->info.log_tail,
		.last_epoch_started = pg->info.last_epoch_started,
	};
	struct msg_conn *c = osd_peer_conn(osd, t->osd);
	struct msg *m = NULL;
	struct enc e;
	int r;

	r = c ? pg_read_entries(pg, pg->info.log_tail.seq, &l.entries, &l.nentries) : -ENOTCONN;
	if (!r) {
		enc_init(&e);
		osd_pg_log_encode(&l, &e);
		m = msg_new(MT_PG_LOG, &e);
		enc_free(&e);
		pg_entries_free(l.entries, l.nentries);
	}
	bf_call(pg, ti, c, m, &t->finishing, done_reply);
}

void pg_backfill_kick(struct pg *pg)
{
	struct osd *osd = pg->osd;
	struct pg_backfill *bf = pg->bf;
	uint64_t gen;

	if (!bf || !bf_live(pg, bf->gen) || !(pg->state & PG_ST_ACTIVE) || pg->rec)
		return;
	if (bf->backoff_ms && mono_now_ms() < bf->backoff_ms)
		return;
	gen = bf->gen;
	for (uint32_t ti = 0; ti < bf->ntargets && bf_live(pg, gen); ti++) {
		struct bf_target *t = &bf->t[ti];
		bool waiting = false;

		if (t->complete || t->finishing)
			continue;
		for (uint32_t i = 0; i < t->nitems && osd->rec_active < osd->rec_max; i++) {
			if (t->items[i].state != BF_TODO)
				continue;
			if (pg_write_in_flight(pg, t->items[i].oid)) {
				waiting = true;
				continue;
			}
			if (!copy_one(pg, ti, i, NULL) || !bf_live(pg, gen))
				return;
		}
		for (struct bf_dirty *d = t->dirty; d && osd->rec_active < osd->rec_max;
		     d = d->next) {
			if (d->busy)
				continue;
			if (pg_write_in_flight(pg, d->oid)) {
				waiting = true;
				continue;
			}
			/* copy_one may complete at once and free d: walk no
			 * further this time */
			if (!copy_one(pg, ti, 0, d) || !bf_live(pg, gen))
				return;
			break;
		}
		if (waiting)
			osd_recovery_retry_later(osd);
		if (t->ndone < t->nitems || t->scanning)
			continue;
		if (!t->end) {
			scan_send(pg, ti);
			continue;
		}
		if (!t->dirty)
			finish(pg, ti);
	}
}

int pg_backfill_start(struct pg *pg, const int32_t *osds, uint32_t n)
{
	pg_backfill_free(pg);
	pg->bf = calloc(1, sizeof(*pg->bf));
	if (!pg->bf)
		return -ENOMEM;
	pg->bf->gen = pg->peer_gen;
	for (uint32_t i = 0; i < n && i < OSDMAP_SIZE_MAX; i++) {
		pg->bf->t[pg->bf->ntargets++].osd = osds[i];
		log_info("backfill", "pg %u.%x: backfilling osd.%d (its log does not reach "
			 "back far enough, or it has nothing)", pg->pool, pg->pgid, osds[i]);
	}
	osd_recovery_kick(pg->osd);
	return 0;
}

/* ---- the member's side ------------------------------------------------------------ */

void osd_pg_scan_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct osd_pg_scan q, rep = { .kind = PGS_SCAN_REPLY };
	char after[STORE_NAME_MAX + 1];
	struct osd_scan_obj *v = NULL;
	uint32_t n = 0;
	bool end = true;
	struct msg *rm;
	struct pg *pg;
	struct dec d;
	struct enc e;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = osd_pg_scan_decode(&d, &q);
	if (!r && q.kind != PGS_SCAN)
		r = -EBADMSG;
	if (!osd_peermsg_admit(osd, c, m, r, q.epoch, q.pool, q.pg, "backfill", "PG scan", 0)) {
		osd_pg_scan_clear(&q);
		return;
	}
	pg = osd_pg_find(osd, q.pool, q.pg);
	memcpy(after, q.after, q.after_len);
	after[q.after_len] = 0;
	rep.pool = q.pool;
	rep.pg = q.pg;
	rep.epoch = osd->map->epoch;
	if (!pg || pg->info.same_interval_since != q.same_interval_since || pg->is_primary)
		rep.rc = -ESTALE;
	else if (pg->reloading)
		rep.rc = -EIO;
	else
		rep.rc = list_versions(pg, q.after_len ? after : NULL, q.max, &v, &n, &end);
	if (!rep.rc) {
		rep.same_interval_since = pg->info.same_interval_since;
		rep.end = end;
		rep.nobjs = n;
		rep.objs = v;
	}
	enc_init(&e);
	osd_pg_scan_encode(&rep, &e);
	rm = msg_new(MT_PG_SCAN, &e);
	enc_free(&e);
	if (rm)
		msg_reply(c, m, rm);
	versions_free(v, n);
	msg_free(m);
}

int pg_backfill_take_log(struct pg *pg, const struct osd_pg_log *l, struct store_txn *txn)
{
	struct osd *osd = pg->osd;
	struct pglog fresh;
	int r;

	r = pglog_init(&fresh, osd->log_max, osd->dups_max);
	if (r)
		return r;
	r = store_txn_omap_clear(txn, pg->coll, PG_META_OID);
	if (r) {
		pglog_destroy(&fresh);
		return r;
	}
	/* from here on the log in memory is the new one: on failure the
	 * caller re-reads it (pg_fail) */
	pglog_destroy(&pg->log);
	pg->log = fresh;
	pg->info.log_tail = l->log_tail;
	pg->info.last_update = l->log_tail;
	pg->info.last_complete = l->log_tail;
	r = pg_entries_to_txn(pg, l->entries, l->nentries, txn);
	if (!r)
		log_info("backfill", "pg %u.%x: backfilled, log now %llu'%llu to %llu'%llu",
			 pg->pool, pg->pgid, (unsigned long long)pg->info.log_tail.epoch,
			 (unsigned long long)pg->info.log_tail.seq,
			 (unsigned long long)pg->info.last_update.epoch,
			 (unsigned long long)pg->info.last_update.seq);
	return r;
}

/* ---- progress, for `atoll pg query` and the beacon (scrub.h) ------------- */

uint32_t pg_backfill_progress(const struct pg *pg, struct pgq_target *out, uint32_t max)
{
	const struct pg_backfill *bf = pg->bf;
	uint32_t n = 0;

	if (!bf || bf->gen != pg->peer_gen)
		return 0;
	for (uint32_t i = 0; i < bf->ntargets && n < max; i++) {
		const struct bf_target *t = &bf->t[i];

		memset(&out[n], 0, sizeof(out[n]));
		out[n].osd = t->osd;
		out[n].kind = PGQ_BACKFILL;
		out[n].complete = t->complete;
		out[n].todo = pg->objects > t->pushed ? pg->objects : t->pushed;
		out[n].done = t->pushed;
		if (t->started)
			snprintf(out[n].pos, sizeof(out[n].pos), "%s", t->end ? "(end)" : t->pos);
		n++;
	}
	return n;
}
