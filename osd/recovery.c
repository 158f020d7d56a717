/*
 * recovery.c - log recovery: bringing the PG members that are behind up
 * to date from the PG log (doc/recovery.md).
 *
 * Peering (peering.c) decides who is behind and whether the log reaches
 * back far enough; this file does the copying.  A target is one member
 * with its last_update ("from") and the log entries after it; its missing
 * set is the newest entry per object among them.  Each missing object is
 * copied whole by objcopy.c (size, attributes, omap, data in chunks,
 * one chunk = one store transaction on the receiver), and only once every object is in do the entries go into the target's
 * log (one transaction), so that last_update never claims data the
 * member lacks.  If the primary itself is behind and no up member has
 * the newest log it first pulls from the authoritative member
 * (MT_PG_PUSH kind PULL) and peering is evaluated again (with such a
 * member, peering hands the PG to it instead); then it pushes to the
 * members that are behind while the PG is active+recovering.  Reads are
 * served; writes go on without the members being recovered once each has
 * recorded that it lacks them (PGL_EXCLUDE) and the others are min_size:
 * each write marks its object to be copied again, and when every object
 * is in, writes pause until none is in flight and the member has the log
 * up to our head (doc/recovery.md, "Client ops while recovering").
 *
 * The copy of one object (objcopy_start) is one path for both ways, push
 * and pull, shared with backfill (backfill.c) and scrub's repair.  At most
 * osd_recovery_max_active objects are being copied by one OSD at a time,
 * recovery and backfill together; a PG's log recovery goes before its
 * backfill.  Everything runs on the loop thread; a new interval bumps
 * pg->peer_gen and every callback of an older round only frees its slot.
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

#define RECOVERY_TIMEOUT_MS	60000
#define RECOVERY_RETRY_MS	1000

enum { OBJ_TODO = 0, OBJ_BUSY = 1, OBJ_DONE = 2 };

struct rec_obj {
	char *oid;
	uint8_t state;
	bool redo;		/* written while being copied: copy again */
};

struct rec_target {
	int32_t osd;		/* the member brought up to date */
	struct pg_version from;	/* its last_update */
	struct pglog_entry *entries;	/* after from; oids malloc'd */
	uint32_t nentries;
	struct rec_obj *objs;	/* in name order */
	uint32_t nobjs, cap;
	uint32_t done;
	bool log_busy;
	bool complete;
	/* Writes go on without the member once it has recorded that it
	 * lacks them (PGL_EXCLUDE answered): each marks its object to be
	 * copied again.  Closing: every object is in; new writes wait
	 * until the log is too. */
	bool excluded;
	bool closing;
};

struct pg_recovery {
	uint64_t gen;		/* pg->peer_gen it belongs to */
	bool pull;		/* t[0] is the primary, copying from src */
	int32_t src;
	uint64_t backoff_ms;	/* after a failure: start nothing before */
	uint32_t ntargets;
	struct rec_target t[OSDMAP_SIZE_MAX];
};

static void rec_kick(struct osd *osd);

static struct pg_recovery *live(struct pg *pg, uint64_t gen)
{
	if (gen != pg->peer_gen || !pg->rec || pg->rec->gen != gen)
		return NULL;
	return pg->rec;
}

static void target_clear(struct rec_target *t)
{
	for (uint32_t i = 0; i < t->nentries; i++)
		free((char *)t->entries[i].oid);
	free(t->entries);
	for (uint32_t i = 0; i < t->nobjs; i++)
		free(t->objs[i].oid);
	free(t->objs);
	memset(t, 0, sizeof(*t));
}

void pg_recovery_free(struct pg *pg)
{
	if (!pg->rec)
		return;
	for (uint32_t i = 0; i < pg->rec->ntargets; i++)
		target_clear(&pg->rec->t[i]);
	free(pg->rec);
	pg->rec = NULL;
}

/* ---- the log --------------------------------------------------------------- */

static int entry_copy(struct pglog_entry *dst, const struct pglog_entry *src)
{
	char *oid = malloc(src->oid_len + 1);

	if (!oid)
		return -ENOMEM;
	memcpy(oid, src->oid, src->oid_len);
	oid[src->oid_len] = 0;
	*dst = *src;
	dst->oid = oid;
	return 0;
}

struct entries_ctx {
	struct pglog_entry *v;
	uint32_t n, cap;
	int err;
};

static int entries_add(struct entries_ctx *c, const struct pglog_entry *le)
{
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		struct pglog_entry *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	int r = entry_copy(&c->v[c->n], le);

	if (!r)
		c->n++;
	return r;
}

static int read_entry(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct entries_ctx *c = arg;
	struct pglog_entry le;
	struct dec d;

	if (klen != PGLOG_KEY_LEN || ((const uint8_t *)key)[0] != 'l')
		return 1;	/* past the log keys */
	dec_init(&d, val, vlen);
	c->err = pglog_entry_decode(&d, &le);
	if (!c->err)
		c->err = entries_add(c, &le);
	return c->err ? 1 : 0;
}

/* The log entries of pg in our store with seq > after, oldest first. */
static int read_entries(struct pg *pg, uint64_t after, struct entries_ctx *c)
{
	uint8_t key[PGLOG_KEY_LEN];
	int r;

	memset(c, 0, sizeof(*c));
	pglog_key('l', after, key);
	r = store_omap_list(pg->osd->store, pg->coll, PG_META_OID, key, sizeof(key), 0,
			    read_entry, c);
	if (r < 0 || c->err) {
		for (uint32_t i = 0; i < c->n; i++)
			free((char *)c->v[i].oid);
		free(c->v);
		memset(c, 0, sizeof(*c));
		return c->err ? c->err : r;
	}
	return 0;
}

int pg_read_entries(struct pg *pg, uint64_t after, struct pglog_entry **v, uint32_t *n)
{
	struct entries_ctx c;
	int r = read_entries(pg, after, &c);

	*v = c.v;
	*n = c.n;
	return r;
}

void pg_entries_free(struct pglog_entry *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free((char *)v[i].oid);
	free(v);
}

bool pg_log_reaches(struct pg *pg, struct pg_version v)
{
	uint8_t key[PGLOG_KEY_LEN];
	struct pglog_entry le;
	void *val = NULL;
	size_t vlen = 0;
	struct dec d;
	bool ok;

	if (pg_version_cmp(v, pg->info.log_tail) == 0)
		return true;
	if (v.seq <= pg->info.log_tail.seq || pg_version_cmp(v, pg->info.last_update) > 0)
		return false;
	pglog_key('l', v.seq, key);
	if (store_omap_get(pg->osd->store, pg->coll, PG_META_OID, key, sizeof(key), &val,
			   &vlen))
		return false;
	dec_init(&d, val, vlen);
	ok = pglog_entry_decode(&d, &le) == 0 && pg_version_cmp(le.version, v) == 0;
	free(val);
	return ok;
}

static int cmp_oid(const void *a, const void *b)
{
	const struct pglog_entry *x = *(const struct pglog_entry *const *)a;
	const struct pglog_entry *y = *(const struct pglog_entry *const *)b;
	int c = strcmp(x->oid, y->oid);

	if (c)
		return c;
	return x->version.seq < y->version.seq ? -1 : x->version.seq > y->version.seq;
}

/* The missing set: every object the entries touch, once. */
static int target_missing(struct rec_target *t)
{
	const struct pglog_entry **s;

	if (!t->nentries)
		return 0;
	s = malloc(t->nentries * sizeof(*s));
	t->objs = calloc(t->nentries, sizeof(*t->objs));
	if (!s || !t->objs) {
		free(s);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < t->nentries; i++)
		s[i] = &t->entries[i];
	qsort(s, t->nentries, sizeof(*s), cmp_oid);
	t->cap = t->nentries;
	for (uint32_t i = 0; i < t->nentries; i++) {
		if (i + 1 < t->nentries && !strcmp(s[i]->oid, s[i + 1]->oid))
			continue;	/* the newest entry of the object counts */
		t->objs[t->nobjs].oid = strdup(s[i]->oid);
		if (!t->objs[t->nobjs].oid) {
			free(s);
			return -ENOMEM;
		}
		t->nobjs++;
	}
	free(s);
	return 0;
}

/* Index of oid in t->objs, or where it would go (*found false). */
static uint32_t obj_find(const struct rec_target *t, const char *oid, bool *found)
{
	uint32_t lo = 0, hi = t->nobjs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(t->objs[mid].oid, oid);

		if (!c) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* A write to oid went to the others only: copy it to t again. */
static int obj_dirty(struct rec_target *t, const char *oid)
{
	bool found;
	uint32_t i = obj_find(t, oid, &found);

	if (found) {
		struct rec_obj *o = &t->objs[i];

		if (o->state == OBJ_BUSY) {
			o->redo = true;
		} else if (o->state == OBJ_DONE) {
			o->state = OBJ_TODO;
			t->done--;
		}
		return 0;
	}
	if (t->nobjs == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 16;
		struct rec_obj *v = realloc(t->objs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->objs = v;
		t->cap = cap;
	}
	char *copy = strdup(oid);

	if (!copy)
		return -ENOMEM;
	memmove(&t->objs[i + 1], &t->objs[i], (t->nobjs - i) * sizeof(*t->objs));
	t->objs[i] = (struct rec_obj){ .oid = copy, .state = OBJ_TODO };
	t->nobjs++;
	return 0;
}

void pg_recovery_note_write(struct pg *pg, const char *oid)
{
	struct pg_recovery *rec = pg->rec;

	if (!rec || rec->pull || !oid[0])
		return;
	for (uint32_t i = 0; i < rec->ntargets; i++) {
		struct rec_target *t = &rec->t[i];

		if (t->excluded && !t->complete && obj_dirty(t, oid)) {
			/* without the mark the member would miss the write:
			 * it is never finished in this interval, and the PG
			 * peers again */
			log_error("recovery", "pg %u.%x: out of memory marking '%s' for osd.%d; "
				  "peering again", pg->pool, pg->pgid, oid, t->osd);
			pg_fail(pg, -ENOMEM);
			return;
		}
	}
}

bool pg_recovery_skips(const struct pg *pg, int32_t id)
{
	const struct pg_recovery *rec = pg->rec;

	if (!rec || rec->pull)
		return false;
	for (uint32_t i = 0; i < rec->ntargets; i++)
		if (rec->t[i].osd == id)
			return rec->t[i].excluded && !rec->t[i].complete;
	return false;
}

bool pg_recovery_blocks_writes(const struct pg *pg)
{
	const struct pg_recovery *rec = pg->rec;
	uint64_t oldest = UINT64_MAX;
	uint32_t left_out = 0;

	if (!rec)
		return (pg->state & PG_ST_RECOVERING) != 0;
	if (rec->pull)
		return true;
	for (uint32_t i = 0; i < rec->ntargets; i++) {
		const struct rec_target *t = &rec->t[i];

		if (t->complete)
			continue;
		if (!t->excluded || t->closing)
			return true;
		left_out++;
		if (t->from.seq < oldest)
			oldest = t->from.seq;
	}
	if (pg->info.nacting < left_out + pg->min_size)
		return true;
	/* the log keeps every entry a member left out still needs */
	return left_out && pg->info.last_update.seq + 2 > oldest + pg->log.log_max;
}

/* ---- log recovery: one object of a target ------------------------------------ */

struct rec_obj_ctx {
	struct pg *pg;
	uint64_t gen;
	uint32_t ti;
	char oid[STORE_NAME_MAX + 1];
};

static void rec_obj_done(void *arg, int r)
{
	struct rec_obj_ctx *cx = arg;
	struct pg_recovery *rec = live(cx->pg, cx->gen);

	if (rec) {
		struct rec_target *t = &rec->t[cx->ti];
		/* by name: writes may have added objects before it */
		bool found;
		uint32_t oi = obj_find(t, cx->oid, &found);
		struct rec_obj *o = found ? &t->objs[oi] : NULL;

		if (o && !r && !o->redo) {
			o->state = OBJ_DONE;
			t->done++;
		} else if (o) {
			o->state = OBJ_TODO;
			o->redo = false;
		}
		if (r) {
			rec->backoff_ms = mono_now_ms() + RECOVERY_RETRY_MS;
			osd_recovery_retry_later(cx->pg->osd);
		}
	}
	free(cx);
}

/* ---- the primary: finishing a target ---------------------------------------- */

static void recovery_done(struct pg *pg)
{
	log_info("recovery", "pg %u.%x: recovered", pg->pool, pg->pgid);
	pg_recovery_free(pg);
	pg_update_active_state(pg);
	pg_kick_ops(pg);
	if (pg->bf)
		rec_kick(pg->osd);	/* backfill's turn */
}

struct log_ctx {
	struct pg *pg;
	uint64_t gen;
	uint32_t ti;
};

static void log_retry(void *arg)
{
	struct log_ctx *lc = arg;

	if (live(lc->pg, lc->gen))
		lc->pg->rec->t[lc->ti].log_busy = false;
	rec_kick(lc->pg->osd);
	free(lc);
}

/* Sends target ti of pg the PG_LOG message l; reply(lc, reply, err) gets
 * the answer, or retry(lc) runs after RECOVERY_RETRY_MS when it cannot be
 * sent. */
static void log_send(struct pg *pg, uint32_t ti, const struct osd_pg_log *l,
		     void (*reply)(void *arg, struct msg *m, int err), void (*retry)(void *arg))
{
	struct osd *osd = pg->osd;
	struct log_ctx *lc = malloc(sizeof(*lc));
	struct msg_conn *c = osd_peer_conn(osd, pg->rec->t[ti].osd);
	struct msg *m;
	struct enc e;

	if (!lc)
		return;		/* the next interval starts over */
	lc->pg = pg;
	lc->gen = pg->rec->gen;
	lc->ti = ti;
	enc_init(&e);
	osd_pg_log_encode(l, &e);
	m = msg_new(MT_PG_LOG, &e);
	enc_free(&e);
	if (!c || !m || msg_call(c, m, RECOVERY_TIMEOUT_MS, reply, lc) < 0) {
		if (!c)
			msg_free(m);
		if (!msgr_timer(osd->msgr, RECOVERY_RETRY_MS, retry, lc))
			free(lc);
	}
}

/* The answer of a log_send: the target's pg_recovery, or NULL (lc freed)
 * when this round is over. */
static struct pg_recovery *log_answer(struct log_ctx *lc, struct msg *reply, int err, int *rc)
{
	struct pg_recovery *rec;

	*rc = osd_peermsg_rc_take(reply, err);
	rec = live(lc->pg, lc->gen);
	if (!rec)
		free(lc);
	return rec;
}

static void apply_reply(void *arg, struct msg *reply, int err)
{
	struct log_ctx *lc = arg;
	struct pg *pg = lc->pg;
	struct pg_recovery *rec;
	int rc;

	if (!(rec = log_answer(lc, reply, err, &rc)))
		return;
	if (rc < 0) {
		log_warn("recovery", "pg %u.%x: osd.%d did not take its log: %s; retrying",
			 pg->pool, pg->pgid, rec->t[lc->ti].osd, strerror(-rc));
		if (!msgr_timer(pg->osd->msgr, RECOVERY_RETRY_MS, log_retry, lc))
			free(lc);
		return;
	}
	rec->t[lc->ti].complete = true;
	rec->t[lc->ti].closing = false;
	log_info("recovery", "pg %u.%x: osd.%d is up to date (%u objects, %u log entries)",
		 pg->pool, pg->pgid, rec->t[lc->ti].osd, rec->t[lc->ti].nobjs,
		 rec->t[lc->ti].nentries);
	free(lc);
	for (uint32_t i = 0; i < rec->ntargets; i++) {
		if (!rec->t[i].complete) {
			pg_kick_ops(pg);	/* writes now go to it too */
			return;
		}
	}
	recovery_done(pg);
}

/* Sends the target its entries (all its objects are in, no write is in
 * flight): every entry of our log after its last_update, the writes it
 * was left out of included. */
static void send_apply(struct pg *pg, uint32_t ti)
{
	struct rec_target *t = &pg->rec->t[ti];
	struct entries_ctx ec;
	int r = pg_log_reaches(pg, t->from) ? read_entries(pg, t->from.seq, &ec) : -ERANGE;

	if (r) {
		/* cannot happen while pg_recovery_blocks_writes keeps the log */
		log_error("recovery", "pg %u.%x: cannot read the log entries osd.%d lacks: %s; "
			  "peering again", pg->pool, pg->pgid, t->osd, strerror(-r));
		pg_fail(pg, r);
		return;
	}
	for (uint32_t i = 0; i < t->nentries; i++)
		free((char *)t->entries[i].oid);
	free(t->entries);
	t->entries = ec.v;
	t->nentries = ec.n;

	struct osd_pg_log l = {
		.kind = PGL_APPLY,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = pg->osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.from = t->from,
		.last_epoch_started = pg->info.last_epoch_started,
		.nentries = t->nentries,
		.entries = t->entries,
	};

	t->log_busy = true;
	log_send(pg, ti, &l, apply_reply, log_retry);
}

/* Appends entries to pg's log in txn (the receiver's side of APPLY and the
 * primary's own after a pull). */
int pg_entries_to_txn(struct pg *pg, const struct pglog_entry *v, uint32_t n,
		      struct store_txn *txn)
{
	for (uint32_t i = 0; i < n; i++) {
		int r;

		if (v[i].version.seq <= pg->info.last_update.seq)
			continue;	/* we have it */
		if (v[i].version.seq != pg->info.last_update.seq + 1)
			pg->info.last_update.seq = v[i].version.seq - 1;	/* a gap */
		r = pglog_append(&pg->log, &pg->info, &v[i], txn, pg->coll);
		if (r)
			return r;
	}
	return 0;
}

static void pull_log_applied(void *arg, int r)
{
	struct log_ctx *lc = arg;
	struct pg *pg = lc->pg;

	if (r < 0) {
		pg_fail(pg, r);
		free(lc);
		return;
	}
	if (live(pg, lc->gen)) {
		log_info("recovery", "pg %u.%x: pulled %u objects from osd.%d; now at %llu'%llu",
			 pg->pool, pg->pgid, pg->rec->t[0].nobjs, pg->rec->src,
			 (unsigned long long)pg->info.last_update.epoch,
			 (unsigned long long)pg->info.last_update.seq);
		pg->objects_stale = true;
		pg_recovery_free(pg);
		pg_peering_evaluate(pg);
	}
	free(lc);
}

static void finish_target(struct pg *pg, uint32_t ti)
{
	struct pg_recovery *rec = pg->rec;
	struct rec_target *t = &rec->t[ti];

	if (!rec->pull) {
		send_apply(pg, ti);
		return;
	}
	struct store_txn *txn = store_txn_new();
	struct log_ctx *lc = malloc(sizeof(*lc));
	int r = txn && lc ? pg_entries_to_txn(pg, t->entries, t->nentries, txn) : -ENOMEM;

	if (r) {
		store_txn_free(txn);
		free(lc);
		log_error("recovery", "pg %u.%x: cannot append the pulled log: %s", pg->pool,
			  pg->pgid, strerror(-r));
		pg_fail(pg, r);
		return;
	}
	t->log_busy = true;
	lc->pg = pg;
	lc->gen = rec->gen;
	lc->ti = ti;
	pg_queue_txn(pg, txn, pull_log_applied, lc);
}

/* ---- the throttle ----------------------------------------------------------- */

static bool start_one(struct pg *pg)
{
	struct pg_recovery *rec = pg->rec;

	if (rec->backoff_ms && mono_now_ms() < rec->backoff_ms)
		return false;
	for (uint32_t ti = 0; ti < rec->ntargets; ti++) {
		struct rec_target *t = &rec->t[ti];

		for (uint32_t oi = 0; oi < t->nobjs; oi++) {
			if (t->objs[oi].state != OBJ_TODO)
				continue;
			/* a copy reads what every write before it left: none
			 * may be in flight (the write marked it again) */
			if (!rec->pull && pg_write_in_flight(pg, t->objs[oi].oid))
				continue;
			struct rec_obj_ctx *cx = malloc(sizeof(*cx));

			if (!cx)
				return false;
			cx->pg = pg;
			cx->gen = rec->gen;
			cx->ti = ti;
			snprintf(cx->oid, sizeof(cx->oid), "%s", t->objs[oi].oid);
			t->objs[oi].state = OBJ_BUSY;
			if (objcopy_start(pg, rec->pull ? rec->src : t->osd, rec->pull,
					  t->objs[oi].oid, rec_obj_done, cx)) {
				t->objs[oi].state = OBJ_TODO;
				free(cx);
				return false;
			}
			return true;
		}
	}
	return false;
}

/* Whether every object t still lacks has a write in flight (none is being
 * copied): under a steady stream of writes to the same objects that could
 * last forever, so new writes wait until these drain (closing). */
static bool only_written_left(const struct pg *pg, const struct rec_target *t)
{
	for (uint32_t i = 0; i < t->nobjs; i++) {
		const struct rec_obj *o = &t->objs[i];

		if (o->state == OBJ_BUSY ||
		    (o->state == OBJ_TODO && !pg_write_in_flight(pg, o->oid)))
			return false;
	}
	return true;
}

/* Log recovery first; backfill (backfill.c) once no member is behind. */
static void kick_pg(struct pg *pg)
{
	struct osd *osd = pg->osd;

	if (!pg->rec) {
		if (pg->bf)
			pg_backfill_kick(pg);
		return;
	}
	if (!live(pg, pg->rec->gen))
		return;
	while (osd->rec_active < osd->rec_max && pg->rec && start_one(pg))
		;
	struct pg_recovery *rec = pg->rec;
	uint64_t gen = rec ? rec->gen : 0;

	for (uint32_t ti = 0; rec && ti < rec->ntargets; ti++) {
		struct rec_target *t = &rec->t[ti];

		if (!rec->pull && !t->closing && !t->complete && t->done != t->nobjs &&
		    osd->rec_active < osd->rec_max && only_written_left(pg, t))
			t->closing = true;	/* let the writes drain, then copy */
		if (t->done != t->nobjs || t->log_busy || t->complete)
			continue;
		if (!rec->pull) {
			/* Every object is in: new writes wait, and once none is
			 * in flight the member gets the log up to our head (a
			 * write in flight now marked its object again). */
			t->closing = true;
			if (pg->inflight)
				continue;
		}
		finish_target(pg, ti);
		rec = live(pg, gen);
	}
}

void pg_recovery_kick_pg(struct pg *pg)
{
	struct osd *osd = pg->osd;

	if (atomic_load(&osd->closing))
		return;
	if (osd->rec_kicking) {
		osd->rec_again = true;
		return;
	}
	osd->rec_kicking = true;
	osd->rec_again = false;
	kick_pg(pg);
	osd->rec_kicking = false;
	if (osd->rec_again)
		rec_kick(osd);	/* a slot freed meanwhile: every PG's turn */
}

static void rec_kick(struct osd *osd)
{
	if (atomic_load(&osd->closing))
		return;
	if (osd->rec_kicking) {
		osd->rec_again = true;	/* a slot freed while we were at it */
		return;
	}
	osd->rec_kicking = true;
	do {
		osd->rec_again = false;
		for (uint32_t b = 0; b < osd->pg_buckets; b++)
			for (struct pg *pg = osd->pgs[b]; pg; pg = pg->hnext)
				kick_pg(pg);
	} while (osd->rec_again);
	osd->rec_kicking = false;
}

void osd_recovery_kick(struct osd *osd)
{
	rec_kick(osd);
}

static void retry_timer(void *arg)
{
	struct osd *osd = arg;

	osd->rec_retry_armed = false;
	rec_kick(osd);
}

void osd_recovery_retry_later(struct osd *osd)
{
	if (osd->rec_retry_armed)
		return;
	if (msgr_timer(osd->msgr, RECOVERY_RETRY_MS, retry_timer, osd))
		osd->rec_retry_armed = true;
}

/* ---- writes without a member: PGL_EXCLUDE ---------------------------------- */

static void send_exclude(struct pg *pg, uint32_t ti);

static void exclude_retry(void *arg)
{
	struct log_ctx *lc = arg;

	if (live(lc->pg, lc->gen) && !lc->pg->rec->t[lc->ti].complete)
		send_exclude(lc->pg, lc->ti);
	free(lc);
}

static void exclude_reply(void *arg, struct msg *reply, int err)
{
	struct log_ctx *lc = arg;
	struct pg *pg = lc->pg;
	struct pg_recovery *rec;
	int rc;

	if (!(rec = log_answer(lc, reply, err, &rc)))
		return;
	if (rc < 0) {
		/* writes keep waiting; a member that is gone ends the interval */
		log_warn("recovery", "pg %u.%x: osd.%d did not record that writes go on "
			 "without it: %s; asking again", pg->pool, pg->pgid, rec->t[lc->ti].osd,
			 strerror(-rc));
		if (!msgr_timer(pg->osd->msgr, RECOVERY_RETRY_MS, exclude_retry, lc))
			free(lc);
		return;
	}
	rec->t[lc->ti].excluded = true;
	log_info("recovery", "pg %u.%x: writes go on without osd.%d while it is recovered",
		 pg->pool, pg->pgid, rec->t[lc->ti].osd);
	free(lc);
	pg_kick_ops(pg);
}

/* Asks the target to record, durably, that it lacks the writes of this
 * interval from now on (pg_info.lacks_since): then it is no witness of
 * this interval (peering.c) and writes may go on without it. */
static void send_exclude(struct pg *pg, uint32_t ti)
{
	struct rec_target *t = &pg->rec->t[ti];
	struct osd_pg_log l = {
		.kind = PGL_EXCLUDE,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = pg->osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.from = t->from,
	};

	log_send(pg, ti, &l, exclude_reply, exclude_retry);
}

/* ---- starting ----------------------------------------------------------------- */

static struct pg_recovery *rec_new(struct pg *pg)
{
	pg_recovery_free(pg);
	pg->rec = calloc(1, sizeof(*pg->rec));
	if (pg->rec)
		pg->rec->gen = pg->peer_gen;
	return pg->rec;
}

int pg_recovery_push(struct pg *pg, const int32_t *osds, const struct pg_version *from,
		     uint32_t n)
{
	struct pg_recovery *rec = rec_new(pg);
	uint64_t total = 0;

	if (!rec)
		return -ENOMEM;
	for (uint32_t i = 0; i < n && i < OSDMAP_SIZE_MAX; i++) {
		struct rec_target *t = &rec->t[rec->ntargets++];
		struct entries_ctx c;
		int r;

		t->osd = osds[i];
		t->from = from[i];
		r = read_entries(pg, from[i].seq, &c);
		if (!r) {
			t->entries = c.v;
			t->nentries = c.n;
			r = target_missing(t);
		}
		if (r) {
			log_error("recovery", "pg %u.%x: cannot read its log to recover osd.%d: %s",
				  pg->pool, pg->pgid, osds[i], strerror(-r));
			pg_recovery_free(pg);
			return r;
		}
		total += t->nobjs;
		log_info("recovery", "pg %u.%x: osd.%d is behind (%llu'%llu): %u log entries, "
			 "%u objects to recover", pg->pool, pg->pgid, t->osd,
			 (unsigned long long)t->from.epoch, (unsigned long long)t->from.seq,
			 t->nentries, t->nobjs);
	}
	(void)total;
	/* with enough members that have everything, writes need not wait */
	if (pg->info.nacting >= rec->ntargets + pg->min_size)
		for (uint32_t i = 0; i < rec->ntargets; i++)
			send_exclude(pg, i);
	rec_kick(pg->osd);
	return 0;
}

static void get_reply(void *arg, struct msg *reply, int err)
{
	struct log_ctx *lc = arg;
	struct pg *pg = lc->pg;
	struct pg_recovery *rec = live(pg, lc->gen);
	struct osd_pg_log l = { 0 };
	struct dec d;
	int r = err;

	free(lc);
	if (!rec) {
		msg_free(reply);
		return;
	}
	if (reply) {
		dec_init(&d, reply->front, reply->front_len);
		r = osd_pg_log_decode(&d, &l);
		if (!r && l.rc)
			r = l.rc;
		if (!r && l.kind != PGL_GET_REPLY)
			r = -EBADMSG;
	}
	if (!r) {
		struct rec_target *t = &rec->t[0];
		struct entries_ctx c = { 0 };

		for (uint32_t i = 0; !r && i < l.nentries; i++)
			r = entries_add(&c, &l.entries[i]);
		t->entries = c.v;
		t->nentries = c.n;
		if (!r)
			r = target_missing(t);
		t->log_busy = false;
	}
	osd_pg_log_clear(&l);
	msg_free(reply);
	if (r == -ERANGE) {
		/* our log diverges from the authoritative one: this OSD is
		 * not complete, peering leaves it out and it is backfilled */
		log_info("recovery", "pg %u.%x: this OSD's log diverges from osd.%d's; it "
			 "will be backfilled", pg->pool, pg->pgid, rec->src);
		pg_recovery_free(pg);
		pg->no_pull = true;
		pg_peering_evaluate(pg);
		return;
	}
	if (r) {
		log_warn("recovery", "pg %u.%x: cannot get the log of osd.%d: %s; it stays "
			 "incomplete", pg->pool, pg->pgid, rec->src, strerror(-r));
		pg_recovery_free(pg);
		pg_set_state(pg, PG_ST_INCOMPLETE | PG_ST_INACTIVE);
		return;
	}
	log_info("recovery", "pg %u.%x: this OSD is behind: pulling %u objects (%u log "
		 "entries) from osd.%d", pg->pool, pg->pgid, rec->t[0].nobjs,
		 rec->t[0].nentries, rec->src);
	rec_kick(pg->osd);
}

int pg_recovery_pull(struct pg *pg, int32_t src)
{
	struct osd *osd = pg->osd;
	struct pg_recovery *rec = rec_new(pg);
	struct osd_pg_log l = {
		.kind = PGL_GET,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
		.from = pg->info.last_update,
	};
	struct msg_conn *c = osd_peer_conn(osd, src);
	struct log_ctx *lc;
	struct msg *m;
	struct enc e;

	if (!rec)
		return -ENOMEM;
	rec->pull = true;
	rec->src = src;
	rec->ntargets = 1;
	rec->t[0].osd = osd->whoami;
	rec->t[0].from = pg->info.last_update;
	rec->t[0].log_busy = true;	/* until the entries are in */
	lc = malloc(sizeof(*lc));
	if (!lc || !c) {
		free(lc);
		pg_recovery_free(pg);
		return -ENOMEM;
	}
	lc->pg = pg;
	lc->gen = rec->gen;
	lc->ti = 0;
	enc_init(&e);
	osd_pg_log_encode(&l, &e);
	m = msg_new(MT_PG_LOG, &e);
	enc_free(&e);
	if (!m || msg_call(c, m, RECOVERY_TIMEOUT_MS, get_reply, lc) < 0) {
		free(lc);
		pg_recovery_free(pg);
		return -ENOMEM;
	}
	return 0;
}

/* ---- the receiver ------------------------------------------------------------- */

static void log_get(struct osd *osd, struct pg *pg, struct msg_conn *c, struct msg *m,
		    const struct osd_pg_log *q, int r)
{
	struct osd_pg_log l = { .kind = PGL_GET_REPLY, .rc = r, .pool = q->pool, .pg = q->pg };
	struct entries_ctx ec = { 0 };
	struct msg *rep;
	struct enc e;

	if (!l.rc && !pg_log_reaches(pg, q->from))
		l.rc = -ERANGE;	/* behind our tail, or divergent: backfill */
	if (!l.rc)
		l.rc = read_entries(pg, q->from.seq, &ec);
	if (!l.rc) {
		l.epoch = osd->map->epoch;
		l.same_interval_since = pg->info.same_interval_since;
		l.log_tail = pg->info.log_tail;
		l.nentries = ec.n;
		l.entries = ec.v;
	}
	enc_init(&e);
	osd_pg_log_encode(&l, &e);
	rep = msg_new(MT_PG_LOG, &e);
	enc_free(&e);
	if (rep)
		msg_reply(c, m, rep);
	for (uint32_t i = 0; i < ec.n; i++)
		free((char *)ec.v[i].oid);
	free(ec.v);
}

void osd_pg_log_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct store_txn *txn = NULL;
	struct osd_pg_log l;
	bool decoded;
	struct pg *pg;
	struct dec d;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = osd_pg_log_decode(&d, &l);
	decoded = !r;
	if (!r && l.kind == PGL_GET_REPLY)
		r = -EBADMSG;
	if (!osd_peermsg_admit(osd, c, m, r, l.epoch, l.pool, l.pg, "recovery", "PG log message", MT_PG_LOG)) {
		if (decoded)
			osd_pg_log_clear(&l);
		return;
	}
	pg = osd_peermsg_pg(osd, l.pool, l.pg, l.same_interval_since, &r);
	if (l.kind == PGL_GET) {
		log_get(osd, pg, c, m, &l, r);
		goto out;
	}
	if (l.kind == PGL_BACKFILL_DONE) {
		/* a backfill target: every object is in, the log is the primary's */
		if (!r && pg->is_primary)
			r = -EINVAL;
		if (!r && !(txn = store_txn_new()))
			r = -ENOMEM;
		if (!r)
			r = pg_backfill_take_log(pg, &l, txn);
		if (!r)
			pg->info.lacks_since = 0;
	} else if (l.kind == PGL_EXCLUDE) {
		/* writes go on without us while we are recovered: we are no
		 * witness of this interval's writes (peering.c) */
		if (!r && pg->is_primary)
			r = -EINVAL;
		if (!r && !(txn = store_txn_new()))
			r = -ENOMEM;
		if (!r && !pg->info.lacks_since)
			pg->info.lacks_since = l.same_interval_since;
	} else {
		/* APPLY: every object is in; the log follows */
		if (!r && pg_version_cmp(pg->info.last_update, l.from) != 0)
			r = -ERANGE;
		if (!r && !(txn = store_txn_new()))
			r = -ENOMEM;
		if (!r)
			r = pg_entries_to_txn(pg, l.entries, l.nentries, txn);
		if (!r)
			pg->info.lacks_since = 0;
	}
	if (!r) {
		if (l.last_epoch_started > pg->info.last_epoch_started) {
			pg->info.last_epoch_started = l.last_epoch_started;
			pg_info_prune_past(&pg->info, l.last_epoch_started);
		}
		r = pglog_write_info(&pg->info, txn, pg->coll);
	}
	if (r) {
		store_txn_free(txn);
		if (txn && pg)
			pg_fail(pg, r);	/* the log in memory moved */
		log_warn("recovery", "pg %u.%x: refusing recovered log entries: %s", l.pool,
			 l.pg, strerror(-r));
		osd_peermsg_reply_rc(osd, c, m, MT_PG_LOG, r);
		osd_pg_log_clear(&l);
		msg_free(m);
		return;
	}
	if (l.kind == PGL_EXCLUDE)
		log_info("recovery", "pg %u.%x: writes go on without this OSD from epoch %llu "
			 "while it is recovered", pg->pool, pg->pgid,
			 (unsigned long long)pg->info.lacks_since);
	else
		log_info("recovery", "pg %u.%x: recovered up to %llu'%llu", pg->pool, pg->pgid,
			 (unsigned long long)pg->info.last_update.epoch,
			 (unsigned long long)pg->info.last_update.seq);
	osd_pg_log_clear(&l);
	objcopy_apply_and_reply(pg, txn, c, m, MT_PG_LOG);
	return;
out:
	osd_pg_log_clear(&l);
	msg_free(m);
}

/* ---- progress, for `atoll pg query` and the beacon (scrub.h) ------------- */

uint32_t pg_recovery_progress(const struct pg *pg, struct pgq_target *out, uint32_t max)
{
	const struct pg_recovery *rec = pg->rec;
	uint32_t n = 0;

	if (!rec || rec->gen != pg->peer_gen)
		return 0;
	for (uint32_t i = 0; i < rec->ntargets && n < max; i++) {
		const struct rec_target *t = &rec->t[i];

		memset(&out[n], 0, sizeof(out[n]));
		out[n].osd = t->osd;
		out[n].kind = PGQ_RECOVERY;
		out[n].complete = t->complete;
		out[n].todo = t->nobjs;
		out[n].done = t->done;
		n++;
	}
	return n;
}
