/*
 * scrub.c - scrub, deep scrub and repair of a PG, on demand and on a
 * schedule (doc/scrub.md).
 *
 * `atoll pg scrub|deep-scrub|repair PGID` sends MT_OSD_SCRUB to the PG's
 * primary.  The primary holds new writes to the PG back (reads go on),
 * waits for the writes in flight to finish, then asks every member of the
 * acting set for its scrub map (MT_PG_SCRUB) and builds its own: every
 * object of the PG with its size and the crc32c of its attributes (the
 * object info attribute holds its version); a deep scrub adds the crc32c
 * of its whole data and of its key/value map, read back through the store,
 * so that a block whose checksum fails shows up as a read error.  A
 * shallow scrub reads no data, so it is cheap enough to run often: it
 * finds missing, extra and stale copies, not rotten bytes.  Maps are
 * built on a thread of their own, never on the loop thread.
 *
 * The authoritative copy of an object is the primary's, unless reading it
 * failed; then it is the first member that read it without error.  Every
 * member whose copy is missing, extra, unreadable or different is
 * reported; with repair, the primary first pulls a good copy when its own
 * is bad, then pushes the authoritative copy (or its absence) to every
 * other bad member, with the whole-object copy of objcopy.c (objcopy_start).
 * Writes resume when the scrub and its repairs are over.  Errors left
 * unrepaired mark the PG inconsistent in its stats until a later scrub
 * finds it clean (a deep one, for what a deep scrub found).
 *
 * A new interval (map change) ends a scrub: the caller gets -EAGAIN.
 *
 * Stamps and schedule.  A scrub that ends records when it ran (wall
 * clock seconds; a deep scrub counts as a scrub too) in the PG meta
 * object of the primary and, by an MT_PG_SCRUB with PG_SCRUB_F_STAMP, of
 * every member, so that a new primary knows them.  A timer checks the PGs
 * this OSD is primary of: one whose deep stamp is older than
 * osd_deep_scrub_interval (7 days) gets a deep scrub, else one whose
 * stamp is older than osd_scrub_interval (1 day) a scrub; each PG's
 * intervals are lengthened by a random 0-24% (drawn again after each
 * scrub) so that PGs created together do not come due together.  Only an
 * active+clean PG is scrubbed on the schedule, one at a time per OSD, and
 * none while this OSD recovers or backfills anything.  A PG never seen
 * before gets the time it was first seen as its stamps.  An interval of 0
 * turns that kind of scheduled scrub off.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "objcopy.h"
#include "osd.h"
#include "pg.h"
#include "scrub_proto.h"

#define SCRUB_CALL_TIMEOUT_MS	(10u * 60 * 1000)
#define SCRUB_DRAIN_POLL_MS	5u
#define SCRUB_READ_CHUNK	(4u << 20)
#define SCRUB_LIST_PAGE		256u
#define SCRUB_DEFAULT_INTERVAL_MS	(24ull * 3600 * 1000)
#define SCRUB_DEFAULT_DEEP_MS		(7ull * 24 * 3600 * 1000)
#define SCHED_TICK_MIN_MS	200u
#define SCHED_TICK_MAX_MS	10000u
#define SCHED_JITTER_PCT	25u

/* ---- building a scrub map (any thread) ------------------------------- */

struct name_vec {
	char **v;
	uint32_t n, cap;
	char *last;
};

static int collect_name(void *arg, const char *oid)
{
	struct name_vec *nv = arg;

	nv->last = NULL;
	if (strcmp(oid, PG_META_OID) == 0)
		return 0;
	if (nv->n == nv->cap) {
		uint32_t cap = nv->cap ? 2 * nv->cap : 256;
		char **v = realloc(nv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		nv->v = v;
		nv->cap = cap;
	}
	nv->v[nv->n] = strdup(oid);
	if (!nv->v[nv->n])
		return -ENOMEM;
	nv->n++;
	return 0;
}

static int list_all(struct store *st, uint64_t coll, struct name_vec *nv)
{
	char after[PROTO_OID_MAX + 2] = "";
	int r;

	for (;;) {
		uint32_t before = nv->n;

		r = store_list(st, coll, after[0] ? after : NULL, SCRUB_LIST_PAGE,
			       collect_name, nv);
		if (r < 0)
			return r;
		if ((uint32_t)r < SCRUB_LIST_PAGE)
			return 0;
		/* the page's last name, PG meta object included */
		if (nv->n > before)
			snprintf(after, sizeof(after), "%s", nv->v[nv->n - 1]);
		else
			snprintf(after, sizeof(after), "%s", PG_META_OID);
		if (nv->n > SCRUB_MAP_MAX)
			return -EFBIG;
	}
}

static int attr_crc_cb(void *arg, const char *name, const void *val, size_t len)
{
	uint32_t *crc = arg;
	uint32_t l = (uint32_t)len;

	*crc = atoll__crc32c(*crc, name, strlen(name) + 1);
	*crc = atoll__crc32c(*crc, &l, sizeof(l));
	*crc = atoll__crc32c(*crc, val, len);
	return 0;
}

static int omap_crc_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	uint32_t *crc = arg;
	uint32_t l[2] = { (uint32_t)klen, (uint32_t)vlen };

	*crc = atoll__crc32c(*crc, l, sizeof(l));
	*crc = atoll__crc32c(*crc, key, klen);
	*crc = atoll__crc32c(*crc, val, vlen);
	return 0;
}

/* One object's entry: a read error goes into o->err, not the result.
 * Shallow: its size and attributes only. */
static void scrub_object(struct store *st, uint64_t coll, void *buf, struct scrub_obj *o,
			 bool deep)
{
	struct store_stat ss;
	int64_t r;

	r = store_stat(st, coll, o->oid, &ss);
	if (r < 0) {
		o->err = (int32_t)r;
		return;
	}
	o->size = ss.size;
	for (uint64_t off = 0; deep && off < ss.size; off += SCRUB_READ_CHUNK) {
		r = store_read(st, coll, o->oid, off, SCRUB_READ_CHUNK, buf);
		if (r < 0) {
			o->err = (int32_t)r;
			return;
		}
		o->data_crc = atoll__crc32c(o->data_crc, buf, (size_t)r);
	}
	r = store_attrs(st, coll, o->oid, attr_crc_cb, &o->attr_crc);
	if (r >= 0 && deep)
		r = store_omap_list(st, coll, o->oid, NULL, 0, 0, omap_crc_cb, &o->omap_crc);
	if (r < 0)
		o->err = (int32_t)r;
}

static void scrub_map_build(struct store *st, uint64_t coll, struct pg_scrub_map *map,
			    bool deep)
{
	struct name_vec nv = { 0 };
	void *buf = NULL;
	int r;

	memset(map, 0, sizeof(*map));
	r = list_all(st, coll, &nv);
	if (!r && nv.n) {
		map->objs = calloc(nv.n, sizeof(*map->objs));
		buf = deep ? malloc(SCRUB_READ_CHUNK) : NULL;
		if (!map->objs || (deep && !buf))
			r = -ENOMEM;
	}
	for (uint32_t i = 0; i < nv.n; i++) {
		if (!r) {
			map->objs[i].oid = nv.v[i];
			scrub_object(st, coll, buf, &map->objs[i], deep);
			map->n = i + 1;
		} else {
			free(nv.v[i]);
		}
	}
	free(nv.v);
	free(buf);
	if (r) {
		pg_scrub_map_clear(map);
		map->rc = r;
	}
}

/* ---- stamps ------------------------------------------------------------------ */

static int stamps_save(struct pg *pg, const struct scrub_stamps *ss);

static uint64_t wall_s(void)
{
	return (uint64_t)time(NULL);
}

/* Reads pg's stamps from its meta object once; a PG without any gets
 * the time we first saw it (kept, so that restarts do not postpone its
 * scrubs forever). */
static void stamps_load(struct pg *pg)
{
	struct pg_scrub_sched *s = &pg->sched;
	void *val = NULL;
	size_t len = 0;
	int r;

	if (s->loaded)
		return;
	s->loaded = true;
	s->jitter_pct = (uint32_t)(random() % SCHED_JITTER_PCT);
	r = store_omap_get(pg->osd->store, pg->coll, PG_META_OID, SCRUB_STAMPS_KEY,
			   strlen(SCRUB_STAMPS_KEY), &val, &len);
	if (r >= 0) {
		struct dec d;

		dec_init(&d, val, len);
		if (scrub_stamps_decode(&d, &s->stamps) == 0) {
			s->stamped = true;
			free(val);
			return;
		}
		log_warn("scrub", "pg %u.%x: unreadable scrub stamps; starting them afresh",
			 pg->pool, pg->pgid);
	}
	free(val);
	s->stamps.last_scrub = s->stamps.last_deep = wall_s();
	stamps_save(pg, &s->stamps);
}

/* Records stamps in memory and (queued) in our meta object. */
static int stamps_save(struct pg *pg, const struct scrub_stamps *ss)
{
	struct store_txn *t;
	struct enc e;
	int r;

	pg->sched.stamps = *ss;
	pg->sched.loaded = true;
	pg->sched.stamped = true;
	if (pg->removing || pg->reloading)
		return 0;
	t = store_txn_new();
	if (!t)
		return -ENOMEM;
	enc_init(&e);
	scrub_stamps_encode(ss, &e);
	r = e.err ? e.err : store_txn_omap_set(t, pg->coll, PG_META_OID, SCRUB_STAMPS_KEY,
					       strlen(SCRUB_STAMPS_KEY), e.buf, e.len);
	enc_free(&e);
	if (r < 0) {
		store_txn_free(t);
		return r;
	}
	return pg_queue_txn(pg, t, NULL, NULL);
}

/* ---- a member's side: MT_PG_SCRUB ----------------------------------------- */

struct member_work {
	struct osd *osd;
	uint64_t coll;
	bool deep;
	struct msg *req;	/* holds its connection */
};

static void reply_map(struct msg *req, const struct pg_scrub_map *map)
{
	struct msg *m;
	struct enc e;

	enc_init(&e);
	pg_scrub_map_encode(map, &e);
	m = msg_new(MT_PG_SCRUB, &e);
	enc_free(&e);
	if (m)
		msg_reply(req->conn, req, m);
}

static void *member_thread(void *arg)
{
	struct member_work *w = arg;
	struct pg_scrub_map map;

	scrub_map_build(w->osd->store, w->coll, &map, w->deep);
	reply_map(w->req, &map);
	pg_scrub_map_clear(&map);
	msg_free(w->req);
	free(w);
	return NULL;
}

static void member_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct pg_scrub_map nomap = { .rc = -ENOENT };
	struct member_work *w;
	struct pg_scrub_req req;
	pthread_t tid;
	struct pg *pg;
	struct dec d;

	(void)c;
	dec_init(&d, m->front, m->front_len);
	if (pg_scrub_req_decode(&d, &req)) {
		log_warn("scrub", "bad scrub map request from %s", msg_conn_addr(c));
		msg_free(m);
		return;
	}
	pg = osd_pg_find(osd, req.pool, req.pg);
	if (pg && (req.flags & PG_SCRUB_F_STAMP)) {
		struct scrub_stamps ss = { req.last_scrub, req.last_deep };

		nomap.rc = stamps_save(pg, &ss);
		reply_map(m, &nomap);
		msg_free(m);
		return;
	}
	w = pg ? calloc(1, sizeof(*w)) : NULL;
	if (!w) {
		nomap.rc = pg ? -ENOMEM : -ENOENT;
		reply_map(m, &nomap);
		msg_free(m);
		return;
	}
	w->osd = osd;
	w->coll = pg->coll;
	w->deep = !(req.flags & PG_SCRUB_F_SHALLOW);
	w->req = m;
	if (pthread_create(&tid, NULL, member_thread, w)) {
		nomap.rc = -EAGAIN;
		reply_map(m, &nomap);
		msg_free(m);
		free(w);
		return;
	}
	pthread_detach(tid);
}

/* ---- the primary's side ----------------------------------------------------- */

struct scrub_fix {
	uint32_t err;		/* index in job->errs */
	int32_t peer;
	bool pull;
};

struct scrub_job {
	struct osd *osd;
	struct pg *pg;
	uint64_t gen;		/* pg->peer_gen at the start */
	bool repair;
	bool deep;
	bool scheduled;		/* started by the schedule: no caller */
	struct msg *req;	/* the caller's MT_OSD_SCRUB (holds its conn), or NULL */
	uint8_t n;
	int32_t members[OSDMAP_SIZE_MAX];
	struct pg_scrub_map maps[OSDMAP_SIZE_MAX];
	uint8_t waiting;	/* maps not in yet */
	int err;
	uint32_t objects;
	struct scrub_error *errs;
	uint32_t nerrs, caperrs;
	struct scrub_fix *fixes;
	uint32_t nfixes, capfixes;
	uint32_t fixes_left;
	bool pushing;		/* the pulls are done */
};

static void job_reply(struct scrub_job *j, int rc)
{
	struct osd_scrub_reply r = {
		.rc = rc,
		.epoch = j->osd->map ? j->osd->map->epoch : 0,
		.objects = j->objects,
		.nmembers = j->n,
		.nerrors = rc ? 0 : (j->nerrs > SCRUB_ERRORS_MAX ? SCRUB_ERRORS_MAX : j->nerrs),
		.errors = j->errs,
	};
	struct msg *m;
	struct enc e;

	if (!j->req)
		return;
	memcpy(r.members, j->members, sizeof(r.members));
	enc_init(&e);
	osd_scrub_reply_encode(&r, &e);
	m = msg_new(MT_OSD_SCRUB, &e);
	enc_free(&e);
	if (m)
		msg_reply(j->req->conn, j->req, m);
}

static bool job_live(const struct scrub_job *j)
{
	return j->pg->scrub == j && j->pg->peer_gen == j->gen && !j->pg->reloading;
}

static void sched_job_over(struct osd *osd, struct pg *pg);

/* Tells every other member the stamps (one-way: a member that misses
 * them has older ones, which only makes it scrub sooner as primary). */
static void stamps_send(struct scrub_job *j, const struct scrub_stamps *ss)
{
	struct pg_scrub_req req = { .pool = j->pg->pool, .pg = j->pg->pgid,
				    .epoch = j->osd->map ? j->osd->map->epoch : 0,
				    .flags = PG_SCRUB_F_STAMP, .last_scrub = ss->last_scrub,
				    .last_deep = ss->last_deep };

	for (uint8_t i = 1; i < j->n; i++) {
		struct msg_conn *c = osd_peer_conn(j->osd, j->members[i]);
		struct msg *m;
		struct enc e;

		if (!c)
			continue;
		enc_init(&e);
		pg_scrub_req_encode(&req, &e);
		m = msg_new(MT_PG_SCRUB, &e);
		enc_free(&e);
		if (m)
			msg_send(c, m);
	}
}

/* A scrub that ran to its end: what it left bad, and its stamps. */
static void job_record(struct scrub_job *j, uint32_t left)
{
	struct pg *pg = j->pg;
	struct scrub_stamps ss = pg->sched.stamps;

	/* A shallow scrub cannot see what a deep one found (damaged data):
	 * its findings replace only the last shallow scrub's; a deep scrub
	 * (it sees everything) replaces them all. */
	if (j->deep) {
		pg->sched.deep_errors = left;
		pg->sched.ndeepbad = 0;
	}
	pg->sched.shallow_errors = j->deep ? 0 : left;
	pg->scrub_errors = pg->sched.deep_errors + pg->sched.shallow_errors;
	pg->sched.nbad = pg->sched.ndeepbad;
	for (uint32_t i = 0; i < j->nerrs && pg->sched.nbad < PG_SCRUB_BAD_KEEP; i++)
		if (!j->errs[i].repaired)
			pg->sched.bad[pg->sched.nbad++] = j->errs[i];
	if (j->deep)
		pg->sched.ndeepbad = pg->sched.nbad;
	ss.last_scrub = wall_s();
	if (j->deep)
		ss.last_deep = ss.last_scrub;
	pg->sched.jitter_pct = (uint32_t)(random() % SCHED_JITTER_PCT);
	if (stamps_save(pg, &ss))
		log_warn("scrub", "pg %u.%x: cannot record the scrub stamps", pg->pool,
			 pg->pgid);
	stamps_send(j, &ss);
}

/* Ends the job: replies, lets writes go, frees it. */
static void job_end(struct scrub_job *j, int rc)
{
	struct pg *pg = j->pg;
	const char *what = j->repair ? "deep scrub and repair" : j->deep ? "deep scrub" :
			   "scrub";
	uint32_t left = 0;

	if (!rc) {
		for (uint32_t i = 0; i < j->nerrs; i++)
			left += !j->errs[i].repaired;
		if (job_live(j))
			job_record(j, left);
		log_info("scrub", "pg %u.%x: %s%s of %u objects on %u members: %u "
			 "inconsistencies, %u repaired", pg->pool, pg->pgid,
			 j->scheduled ? "scheduled " : "", what, j->objects, j->n,
			 j->nerrs, j->nerrs - left);
	} else {
		log_info("scrub", "pg %u.%x: %s ended: %s", pg->pool, pg->pgid, what,
			 strerror(-rc));
	}
	job_reply(j, rc);
	if (pg->scrub == j) {
		pg->scrub = NULL;
		pg->sched.running = 0;
		pg_kick_ops(pg);
	}
	if (j->scheduled)
		sched_job_over(j->osd, pg);
	for (uint8_t i = 0; i < j->n; i++)
		pg_scrub_map_clear(&j->maps[i]);
	msg_free(j->req);
	free(j->errs);
	free(j->fixes);
	free(j);
}

static int add_error(struct scrub_job *j, const char *oid, int32_t osd, uint8_t kind)
{
	if (j->nerrs == j->caperrs) {
		uint32_t cap = j->caperrs ? 2 * j->caperrs : 16;
		struct scrub_error *v = realloc(j->errs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		j->errs = v;
		j->caperrs = cap;
	}
	memset(&j->errs[j->nerrs], 0, sizeof(j->errs[0]));
	snprintf(j->errs[j->nerrs].oid, sizeof(j->errs[0].oid), "%s", oid);
	j->errs[j->nerrs].osd = osd;
	j->errs[j->nerrs].kind = kind;
	j->nerrs++;
	log_warn("scrub", "pg %u.%x: '%s' on osd.%d: %s", j->pg->pool, j->pg->pgid, oid, osd,
		 scrub_kind_name(kind));
	return 0;
}

static int add_fix(struct scrub_job *j, int32_t peer, bool pull)
{
	if (j->nfixes == j->capfixes) {
		uint32_t cap = j->capfixes ? 2 * j->capfixes : 16;
		struct scrub_fix *v = realloc(j->fixes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		j->fixes = v;
		j->capfixes = cap;
	}
	j->fixes[j->nfixes++] = (struct scrub_fix){ j->nerrs - 1, peer, pull };
	return 0;
}

/* Whether our copy of oid was found good (we are members[0]), or was
 * pulled back since. */
static bool own_copy_good(const struct scrub_job *j, const char *oid)
{
	for (uint32_t i = 0; i < j->nerrs; i++)
		if (j->errs[i].osd == j->members[0] && !strcmp(j->errs[i].oid, oid))
			return j->errs[i].repaired;
	return true;
}

/* Shallow: the maps hold no data or omap checksums to compare. */
static bool same_copy(const struct scrub_obj *a, const struct scrub_obj *b, bool deep)
{
	return a->size == b->size && a->attr_crc == b->attr_crc &&
	       (!deep || (a->data_crc == b->data_crc && a->omap_crc == b->omap_crc));
}

/* Compares the maps (maps[0] is ours): errors, and the fixes repair needs. */
static int compare(struct scrub_job *j)
{
	uint32_t pos[OSDMAP_SIZE_MAX] = { 0 };

	for (;;) {
		const char *oid = NULL;
		const struct scrub_obj *have[OSDMAP_SIZE_MAX] = { 0 };
		int auth = -1;
		int r;

		for (uint8_t i = 0; i < j->n; i++) {
			const struct pg_scrub_map *m = &j->maps[i];

			if (pos[i] < m->n && (!oid || strcmp(m->objs[pos[i]].oid, oid) < 0))
				oid = m->objs[pos[i]].oid;
		}
		if (!oid)
			return 0;
		for (uint8_t i = 0; i < j->n; i++) {
			const struct pg_scrub_map *m = &j->maps[i];

			if (pos[i] < m->n && strcmp(m->objs[pos[i]].oid, oid) == 0)
				have[i] = &m->objs[pos[i]];
		}
		/* the authority: ours, unless we could not read it */
		if (!have[0] || !have[0]->err) {
			auth = 0;
		} else {
			for (uint8_t i = 1; i < j->n && auth < 0; i++)
				if (have[i] && !have[i]->err)
					auth = i;
		}
		if (auth < 0 || have[auth])
			j->objects++;
		for (uint8_t i = 0; i < j->n; i++) {
			const struct scrub_obj *a = auth >= 0 ? have[auth] : NULL;
			uint8_t kind = 0;

			if (i == auth)
				continue;
			if (have[i] && have[i]->err)
				kind = SCRUB_READ_ERROR;
			else if (auth < 0)
				continue;	/* nothing to compare with */
			else if (a && !have[i])
				kind = SCRUB_MISSING;
			else if (!a && have[i])
				kind = SCRUB_EXTRA;
			else if (a && !same_copy(a, have[i], j->deep))
				kind = SCRUB_MISMATCH;
			if (!kind)
				continue;
			r = add_error(j, oid, j->members[i], kind);
			if (!r && auth >= 0 && j->repair)
				r = add_fix(j, i == 0 ? j->members[auth] : j->members[i], i == 0);
			if (r)
				return r;
		}
		/* oid lives in the maps: advance only after its last use */
		for (uint8_t i = 0; i < j->n; i++)
			if (have[i])
				pos[i]++;
	}
}

static void start_fixes(struct scrub_job *j);

/* One copy (or the pass's own hold) is over: the pass ends with the last. */
static void fixes_release(struct scrub_job *j)
{
	if (--j->fixes_left)
		return;
	if (!job_live(j)) {
		job_end(j, -EAGAIN);
		return;
	}
	if (!j->pushing) {
		j->pushing = true;
		start_fixes(j);
		return;
	}
	job_end(j, 0);
}

struct fix_arg {
	struct scrub_job *j;
	uint32_t err;
};

static void fix_done(void *arg, int r)
{
	struct fix_arg *fa = arg;
	struct scrub_job *j = fa->j;

	if (!r)
		j->errs[fa->err].repaired = 1;
	free(fa);
	fixes_release(j);
}

/* Starts the pulls (first pass) or the pushes (second pass).  A push
 * after a failed pull would spread a bad copy: it is skipped. */
static void start_fixes(struct scrub_job *j)
{
	j->fixes_left = 1;	/* this pass's hold, until all are started */
	for (uint32_t i = 0; i < j->nfixes; i++) {
		const struct scrub_fix *f = &j->fixes[i];
		struct fix_arg *fa;

		if (f->pull == j->pushing)
			continue;
		if (j->pushing && !own_copy_good(j, j->errs[f->err].oid))
			continue;
		fa = malloc(sizeof(*fa));
		if (!fa)
			continue;
		fa->j = j;
		fa->err = f->err;
		j->fixes_left++;
		if (objcopy_start(j->pg, f->peer, f->pull, j->errs[f->err].oid, fix_done, fa)) {
			j->fixes_left--;
			free(fa);
		}
	}
	fixes_release(j);
}

/* Every map is in: compare, then repair or end. */
static void maps_complete(struct scrub_job *j)
{
	int r;

	if (!job_live(j)) {
		job_end(j, -EAGAIN);
		return;
	}
	for (uint8_t i = 0; i < j->n; i++) {
		if (j->maps[i].rc) {
			log_warn("scrub", "pg %u.%x: osd.%d could not build its scrub map: %s",
				 j->pg->pool, j->pg->pgid, j->members[i], strerror(-j->maps[i].rc));
			job_end(j, j->maps[i].rc == -ENOENT ? -EAGAIN : j->maps[i].rc);
			return;
		}
	}
	r = compare(j);
	if (r) {
		job_end(j, r);
		return;
	}
	if (!j->nfixes) {
		job_end(j, 0);
		return;
	}
	j->pushing = false;
	start_fixes(j);
}

static void map_arrived(struct scrub_job *j)
{
	if (--j->waiting == 0)
		maps_complete(j);
}

struct local_work {
	struct scrub_job *j;
	uint64_t coll;
	bool deep;
	struct pg_scrub_map map;
};

static void local_done(void *arg)
{
	struct local_work *w = arg;

	w->j->maps[0] = w->map;
	map_arrived(w->j);
	free(w);
}

static void *local_thread(void *arg)
{
	struct local_work *w = arg;

	scrub_map_build(w->j->osd->store, w->coll, &w->map, w->deep);
	osd_post(w->j->osd, local_done, w);
	return NULL;
}

struct remote_wait {
	struct scrub_job *j;
	uint8_t idx;
};

static void remote_reply(void *arg, struct msg *reply, int err)
{
	struct remote_wait *rw = arg;
	struct scrub_job *j = rw->j;
	struct pg_scrub_map *m = &j->maps[rw->idx];

	if (reply) {
		struct dec d;

		dec_init(&d, reply->front, reply->front_len);
		if (pg_scrub_map_decode(&d, m))
			m->rc = -EBADMSG;
		msg_free(reply);
	} else {
		m->rc = err ? err : -EIO;
	}
	free(rw);
	map_arrived(j);
}

/* No write is in flight any more: ask for the maps. */
static void start_maps(struct scrub_job *j)
{
	struct pg *pg = j->pg;
	struct osd *osd = j->osd;
	struct pg_scrub_req req = { .pool = pg->pool, .pg = pg->pgid,
				    .epoch = osd->map ? osd->map->epoch : 0,
				    .flags = j->deep ? 0 : PG_SCRUB_F_SHALLOW };
	struct local_work *lw;
	pthread_t tid;

	j->waiting = j->n + 1;	/* + this function's hold */
	for (uint8_t i = 1; i < j->n; i++) {
		struct msg_conn *c = osd_peer_conn(osd, j->members[i]);
		struct remote_wait *rw = malloc(sizeof(*rw));
		struct msg *m;
		struct enc e;

		enc_init(&e);
		pg_scrub_req_encode(&req, &e);
		m = msg_new(MT_PG_SCRUB, &e);
		enc_free(&e);
		if (!c || !rw || !m) {
			free(rw);
			msg_free(m);
			j->maps[i].rc = c ? -ENOMEM : -ENOTCONN;
			j->waiting--;
			continue;
		}
		rw->j = j;
		rw->idx = i;
		if (msg_call(c, m, SCRUB_CALL_TIMEOUT_MS, remote_reply, rw) < 0) {
			free(rw);
			j->maps[i].rc = -ENOTCONN;
			j->waiting--;
		}
	}
	lw = calloc(1, sizeof(*lw));
	if (lw) {
		lw->j = j;
		lw->coll = pg->coll;
		lw->deep = j->deep;
	}
	if (!lw || pthread_create(&tid, NULL, local_thread, lw)) {
		free(lw);
		j->maps[0].rc = -EAGAIN;
		j->waiting--;
	} else {
		pthread_detach(tid);
	}
	map_arrived(j);
}

static void drain_poll(void *arg)
{
	struct scrub_job *j = arg;

	if (!job_live(j)) {
		job_end(j, -EAGAIN);
		return;
	}
	if (j->pg->inflight) {
		if (!msgr_timer(j->osd->msgr, SCRUB_DRAIN_POLL_MS, drain_poll, j))
			job_end(j, -ENOMEM);
		return;
	}
	start_maps(j);
}

static void reply_rc(struct osd *osd, struct msg *req, int rc)
{
	struct scrub_job j = { .osd = osd, .req = req };

	job_reply(&j, rc);
}

static int job_start(struct osd *osd, struct pg *pg, bool deep, bool repair, struct msg *req);

void osd_scrub_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct osd_scrub_req req;
	struct pg *pg;
	struct dec d;
	int rc = 0;

	if (m->type == MT_PG_SCRUB) {
		member_dispatch(osd, c, m);
		return;
	}
	dec_init(&d, m->front, m->front_len);
	if (osd_scrub_req_decode(&d, &req)) {
		reply_rc(osd, m, -EBADMSG);
		msg_free(m);
		return;
	}
	rc = osd_access_admin(osd, c, m->type, req.pool);
	if (rc == -ECONNRESET) {
		msg_free(m);
		return;
	}
	pg = osd_pg_find(osd, req.pool, req.pg);
	if (!rc && (!pg || !pg->is_primary))
		rc = -ESTALE;		/* the caller looks the primary up again */
	else if (!rc && !(pg->state & PG_ST_ACTIVE))
		rc = -EAGAIN;
	else if (!rc && (pg->scrub || (pg->state & (PG_ST_RECOVERING | PG_ST_BACKFILLING))))
		rc = -EBUSY;
	if (rc) {	/* -EPERM (caps) included */
		reply_rc(osd, m, rc);
		msg_free(m);
		return;
	}
	rc = job_start(osd, pg, req.repair || req.deep, req.repair, m);
	if (rc) {
		reply_rc(osd, m, rc);
		msg_free(m);
	}
}

/* Starts a scrub of pg (primary, active, none running); req (taken on
 * success) is the caller's, or NULL for a scheduled one. */
static int job_start(struct osd *osd, struct pg *pg, bool deep, bool repair, struct msg *req)
{
	struct scrub_job *j = calloc(1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	j->osd = osd;
	j->pg = pg;
	j->gen = pg->peer_gen;
	j->repair = repair;
	j->deep = deep;
	j->scheduled = !req;
	j->req = req;
	j->n = pg->info.nacting;
	memcpy(j->members, pg->info.acting, sizeof(j->members));
	/* we are members[0]: our map is maps[0] */
	for (uint8_t i = 1; i < j->n; i++) {
		if (j->members[i] == osd->whoami) {
			j->members[i] = j->members[0];
			j->members[0] = osd->whoami;
		}
	}
	stamps_load(pg);
	pg->scrub = j;		/* new writes wait (pg_kick_ops) */
	pg->sched.running = deep ? 2 : 1;
	log_info("scrub", "pg %u.%x: %s%s started", pg->pool, pg->pgid,
		 req ? "" : "scheduled ", repair ? "deep scrub and repair" :
		 deep ? "deep scrub" : "scrub");
	drain_poll(j);
	return 0;
}

/* ---- the schedule -------------------------------------------------------------- */

/* One OSD per process: the schedule's state (loop thread). */
static struct {
	struct osd *osd;
	uint64_t interval_ms;	/* osd_scrub_interval, 0 = off */
	uint64_t deep_ms;	/* osd_deep_scrub_interval, 0 = off */
	struct pg *running;	/* the one scheduled scrub in progress */
} sched;

/* When the stamp `last` (s) comes due for an interval lengthened by pct
 * percent, in ms since the epoch; UINT64_MAX when the interval is off. */
static uint64_t due_ms(uint64_t last, uint64_t interval_ms, uint32_t pct)
{
	if (!interval_ms)
		return UINT64_MAX;
	return last * 1000 + interval_ms + interval_ms / 100 * pct;
}

/* Whether this OSD is bringing anything up to date: no scheduled scrub
 * then (a member's copies may be in flux, and the disk is busy). */
static bool osd_recovering(struct osd *osd)
{
	if (osd->rec_active)
		return true;
	for (uint32_t i = 0; i < osd->pg_buckets; i++)
		for (struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext)
			if (pg->rec || !pg_backfill_complete(pg) ||
			    (pg->state & (PG_ST_RECOVERING | PG_ST_BACKFILLING)))
				return true;
	return false;
}

static void sched_pick(struct osd *osd)
{
	uint64_t now = wall_s() * 1000, best_over = 0;
	struct pg *best = NULL;
	bool best_deep = false;

	if (sched.running || !osd->booted || !osd->map || osd->stopping ||
	    osd_recovering(osd))
		return;
	for (uint32_t i = 0; i < osd->pg_buckets; i++) {
		for (struct pg *pg = osd->pgs[i]; pg; pg = pg->hnext) {
			uint64_t dd, ds;
			bool deep;

			if (!pg->is_primary || pg->state != (PG_ST_ACTIVE | PG_ST_CLEAN) ||
			    pg->scrub || pg->reloading || pg->removing)
				continue;
			stamps_load(pg);
			dd = due_ms(pg->sched.stamps.last_deep, sched.deep_ms, pg->sched.jitter_pct);
			ds = due_ms(pg->sched.stamps.last_scrub, sched.interval_ms,
				    pg->sched.jitter_pct);
			deep = dd <= now;
			if (!deep && ds > now)
				continue;
			/* the most overdue first; deep before shallow */
			if (!best || deep > best_deep ||
			    (deep == best_deep && now - (deep ? dd : ds) > best_over)) {
				best = pg;
				best_deep = deep;
				best_over = now - (deep ? dd : ds);
			}
		}
	}
	if (!best)
		return;
	sched.running = best;	/* before: the job may end at once */
	if (job_start(osd, best, best_deep, false, NULL))
		sched.running = NULL;
}

static void sched_job_over(struct osd *osd, struct pg *pg)
{
	(void)osd;
	if (sched.running == pg)
		sched.running = NULL;
}

static void sched_tick(void *arg)
{
	struct osd *osd = arg;
	uint64_t every = sched.interval_ms;

	if (osd->stopping || atomic_load(&osd->closing))
		return;
	sched_pick(osd);
	if (!every || (sched.deep_ms && sched.deep_ms < every))
		every = sched.deep_ms;
	every /= 4;
	if (every < SCHED_TICK_MIN_MS)
		every = SCHED_TICK_MIN_MS;
	if (every > SCHED_TICK_MAX_MS)
		every = SCHED_TICK_MAX_MS;
	if (!msgr_timer(osd->msgr, (uint32_t)every, sched_tick, osd))
		log_error("scrub", "out of memory: scheduled scrubs stop until the OSD restarts");
}

void osd_scrub_sched_start(struct osd *osd)
{
	char err[512];

	sched.osd = osd;
	if (config_get_duration_ms(osd->conf, osd->ident, "osd_scrub_interval",
				   SCRUB_DEFAULT_INTERVAL_MS, &sched.interval_ms, err,
				   sizeof(err)) < 0 ||
	    config_get_duration_ms(osd->conf, osd->ident, "osd_deep_scrub_interval",
				   SCRUB_DEFAULT_DEEP_MS, &sched.deep_ms, err, sizeof(err)) < 0) {
		log_error("scrub", "%s; scheduled scrubs are off until it is fixed", err);
		return;
	}
	if (!sched.interval_ms && !sched.deep_ms) {
		log_info("scrub", "scheduled scrubs are off (both intervals are 0)");
		return;
	}
	srandom((unsigned)(time(NULL) ^ (uint32_t)osd->whoami * 2654435761u));
	if (!msgr_timer(osd->msgr, SCHED_TICK_MIN_MS, sched_tick, osd))
		log_error("scrub", "out of memory: no scheduled scrubs until the OSD restarts");
}
