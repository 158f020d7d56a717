/*
 * health.c - the cluster's health checks (doc/recovery.md, "Health").
 *
 * Each check has a stable code (scripts match it), a severity, one
 * sentence saying what is wrong and the command that fixes it; with
 * detail, plain sentences: each affected OSD, pool, PG or op, what atoll
 * is doing about it (marking a down OSD out at a given time, recovering
 * at a measured rate with an estimate of the time left) and what the
 * operator can do.  Everything is computed on demand from the map and the
 * beacons' statistics: nothing is stored, so health can never disagree
 * with the state it describes.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mon.h"
#include "pgstats.h"
#include "placement.h"
#include "scrub_proto.h"

#define DETAIL_MAX	50	/* detail lines per check */

enum sev { SEV_OK = 0, SEV_WARN = 1, SEV_ERR = 2 };

/* Every code a check below may raise, in the order they are checked
 * (doc/health-checks.md has a section for each: tests
 * health-codes-documented and ops-health-codes keep them in step). */
const char *const mon_health_codes[] = {
	"MON_DOWN", "MON_DISK_LOW", "MON_EPOCH_BEHIND", "OSD_DOWN", "OSD_FULL",
	"OSD_NEARFULL", "STORE_ERRORS", "OSDMAP_FLAGS", "OSD_DESTROYED", "OSD_DRAINING",
	"OSD_DRAINED", "POOL_NO_REDUNDANCY", "POOL_UNDERSIZED", "POOL_NEARFULL",
	"PG_DAMAGED", "PG_DEGRADED", "PG_NOT_CLEAN", "SLOW_OPS", "CLOCK_SKEW", NULL,
};

static const char *sev_name[] = { "HEALTH_OK", "HEALTH_WARN", "HEALTH_ERR" };

struct hctx {
	cJSON *checks;
	enum sev worst;
	bool detail;
};

/* Adds a check; returns its detail array (NULL when detail is off). */
static cJSON *add_check(struct hctx *h, const char *code, enum sev sev, uint32_t count,
			const char *summary, const char *fix)
{
	cJSON *c = cJSON_CreateObject();
	char doc[64];
	size_t i;

	/* doc/health-checks.md has a section per code; its anchor is the
	 * code in lower case */
	i = (size_t)snprintf(doc, sizeof(doc), "doc/health-checks.md#");
	for (const char *p = code; *p && i + 1 < sizeof(doc); p++)
		doc[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	doc[i] = '\0';
	cJSON_AddStringToObject(c, "code", code);
	cJSON_AddStringToObject(c, "severity", sev_name[sev]);
	cJSON_AddStringToObject(c, "summary", summary);
	cJSON_AddStringToObject(c, "fix", fix);
	cJSON_AddStringToObject(c, "doc", doc);
	cJSON_AddNumberToObject(c, "count", count);
	cJSON_AddItemToArray(h->checks, c);
	if (sev > h->worst)
		h->worst = sev;
	return cJSON_AddArrayToObject(c, "detail");
}

static void add_detail(struct hctx *h, cJSON *arr, uint32_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void add_detail(struct hctx *h, cJSON *arr, uint32_t *n, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!h->detail || !arr || *n > DETAIL_MAX)
		return;
	if (*n == DETAIL_MAX) {
		snprintf(buf, sizeof(buf), "... (more not shown)");
	} else {
		va_start(ap, fmt);
		vsnprintf(buf, sizeof(buf), fmt, ap);
		va_end(ap);
	}
	(*n)++;
	cJSON_AddItemToArray(arr, cJSON_CreateString(buf));
}

static bool exists(const struct osdmap_osd *o)
{
	return o->state & OSD_ST_EXISTS;
}

/* "14:05:09 UTC" from a wall clock in ms */
static void clock_str(uint64_t wall_ms, char *buf, size_t len)
{
	time_t t = (time_t)(wall_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

/* One down OSD in sentences: since when, and when it will be marked out
 * (or why it will not be). */
static void down_detail(struct mon *mon, struct hctx *h, cJSON *d, uint32_t *n, uint32_t i)
{
	const struct osdmap *map = mon->map;
	const struct osdmap_osd *o = &map->osds[i];
	uint64_t wall = mon_wall_ms(), out_at = o->down_stamp_ms + mon->opts.down_out_interval_ms;
	char since[40], when[40], ago[48], left[48];

	if (!o->down_at || !o->down_stamp_ms) {
		add_detail(h, d, n, "osd.%u on host '%s' is down: it has never started; start it "
			   "with: atoll-osd --data DIR", i, o->host[0] ? o->host : "?");
		return;
	}
	clock_str(o->down_stamp_ms, since, sizeof(since));
	mon_pg_duration_str(wall > o->down_stamp_ms ? (wall - o->down_stamp_ms) / 1000 : 0, ago,
			    sizeof(ago));
	if (map->flags & OSDMAP_F_NOOUT) {
		add_detail(h, d, n, "osd.%u on host '%s' is down since %s (%s ago, epoch %llu); the "
			   "noout flag holds it in: it will not be marked out, and its PGs stay "
			   "degraded until it returns", i, o->host[0] ? o->host : "?", since, ago,
			   (unsigned long long)o->down_at);
		return;
	}
	clock_str(out_at, when, sizeof(when));
	mon_pg_duration_str(out_at > wall ? (out_at - wall) / 1000 : 0, left, sizeof(left));
	add_detail(h, d, n, "osd.%u on host '%s' is down since %s (%s ago, epoch %llu); it will be "
		   "marked out at %s (in %s, mon_osd_down_out_interval), and then its data is "
		   "copied to other OSDs, unless it comes back first; start it again, or mark "
		   "it out now with: atoll osd out %u", i, o->host[0] ? o->host : "?", since, ago,
		   (unsigned long long)o->down_at, when, left, i);
}

static void check_osds(struct mon *mon, struct hctx *h)
{
	const struct osdmap *map = mon->map;
	uint32_t down = 0, full = 0, nearfull = 0, errs = 0, first_down = 0;
	char sum[256], fix[256];
	cJSON *d;
	uint32_t n;

	for (uint32_t i = 0; i < map->max_osd; i++) {
		const struct osdmap_osd *o = &map->osds[i];

		if (!exists(o))
			continue;
		if (!(o->state & OSD_ST_UP) && o->reweight > 0) {
			if (!down)
				first_down = i;
			down++;
		}
		if (o->state & OSD_ST_FULL)
			full++;
		else if (o->state & (OSD_ST_NEARFULL | OSD_ST_BACKFILLFULL))
			nearfull++;
		if (i < OSDMAP_OSD_MAX && mon->osds[i].store_errors)
			errs++;
	}
	if (down) {
		snprintf(sum, sizeof(sum), "%u osd%s down", down, down == 1 ? " is" : "s are");
		snprintf(fix, sizeof(fix), "start %s (atoll-osd --data DIR), or if it is "
			 "gone mark it out with: atoll osd out %u",
			 down == 1 ? "it" : "them", first_down);
		d = add_check(h, "OSD_DOWN", SEV_WARN, down, sum, fix);
		n = 0;
		for (uint32_t i = 0; i < map->max_osd; i++) {
			const struct osdmap_osd *o = &map->osds[i];

			if (exists(o) && !(o->state & OSD_ST_UP) && o->reweight > 0)
				down_detail(mon, h, d, &n, i);
		}
	}
	if (full) {
		snprintf(sum, sizeof(sum), "%u osd%s full: writes fail with 'no space "
			 "left' (deletes still work)", full, full == 1 ? " is" : "s are");
		d = add_check(h, "OSD_FULL", SEV_ERR, full, sum,
			      "delete data (atoll rm POOL OBJ, atoll pool rm) or add OSDs "
			      "(atoll-osd --mkfs)");
		n = 0;
		for (uint32_t i = 0; i < map->max_osd; i++)
			if (exists(&map->osds[i]) && (map->osds[i].state & OSD_ST_FULL))
				add_detail(h, d, &n, "osd.%u is full (%llu of %llu bytes used, "
					   "full ratio %.2f)", i,
					   (unsigned long long)mon->osds[i].used,
					   (unsigned long long)mon->osds[i].total,
					   map->full_ratio / 10000.0);
	}
	if (nearfull) {
		snprintf(sum, sizeof(sum), "%u osd%s near full", nearfull,
			 nearfull == 1 ? " is" : "s are");
		d = add_check(h, "OSD_NEARFULL", SEV_WARN, nearfull, sum,
			      "add OSDs (atoll-osd --mkfs) or delete data before writes "
			      "start to fail");
		n = 0;
		for (uint32_t i = 0; i < map->max_osd; i++) {
			const struct osdmap_osd *o = &map->osds[i];

			if (exists(o) && !(o->state & OSD_ST_FULL) &&
			    (o->state & (OSD_ST_NEARFULL | OSD_ST_BACKFILLFULL)))
				add_detail(h, d, &n, "osd.%u is %s (%llu of %llu bytes used)", i,
					   o->state & OSD_ST_BACKFILLFULL ? "backfillfull" :
					   "nearfull", (unsigned long long)mon->osds[i].used,
					   (unsigned long long)mon->osds[i].total);
		}
	}
	if (errs) {
		snprintf(sum, sizeof(sum), "%u osd%s reported checksum or I/O errors in "
			 "%s store", errs, errs == 1 ? "" : "s", errs == 1 ? "its" : "their");
		d = add_check(h, "STORE_ERRORS", SEV_ERR, errs, sum,
			      "check the disk (dmesg, smartctl); if it is failing, mark the "
			      "OSD out with: atoll osd out ID, and replace it");
		n = 0;
		for (uint32_t i = 0; i < map->max_osd && i < OSDMAP_OSD_MAX; i++)
			if (exists(&map->osds[i]) && mon->osds[i].store_errors)
				add_detail(h, d, &n, "osd.%u reported %llu store errors", i,
					   (unsigned long long)mon->osds[i].store_errors);
	}
	if (map->flags & OSDMAP_F_NOOUT)
		add_check(h, "OSDMAP_FLAGS", SEV_WARN, 1, "the noout flag is set: OSDs "
			  "that go down are not marked out and their data is not re-replicated",
			  "when maintenance is over, run: atoll osd unset noout");
}

/* PGs whose last report names osd id in their acting set. */
static uint32_t pgs_on(struct mon *mon, uint32_t id)
{
	uint32_t n = 0;

	for (size_t i = 0; i < mon->npgpools; i++)
		for (uint32_t j = 0; j < mon->pgpools[i].pg_num; j++) {
			const struct mon_pg *p = &mon->pgpools[i].pgs[j];

			for (uint8_t k = 0; p->reported && k < p->st.nacting; k++)
				n += p->st.acting[k] == (int32_t)id;
		}
	return n;
}

/* The OSD lifecycle: OSDs being drained, drained, or destroyed. */
static void check_lifecycle(struct mon *mon, struct hctx *h)
{
	const struct osdmap *map = mon->map;
	char sum[256];
	cJSON *d;
	uint32_t n;

	for (uint32_t i = 0; i < map->max_osd && i < OSDMAP_OSD_MAX; i++) {
		const struct osdmap_osd *o = &map->osds[i];
		uint32_t pgs;

		if (!exists(o))
			continue;
		if (o->state & OSD_ST_DESTROYED) {
			snprintf(sum, sizeof(sum), "osd.%u was destroyed and waits for a new disk", i);
			d = add_check(h, "OSD_DESTROYED", SEV_WARN, 1, sum,
				      "make the new disk with: atoll-osd --mkfs --id ID --data DIR "
				      "and start it (it is backfilled), or remove the id with: "
				      "atoll osd rm ID");
			n = 0;
			add_detail(h, d, &n, "osd.%u on host '%s': its data is re-created from "
				   "the other copies once a new disk joins", i, o->host);
			continue;
		}
		if (!(o->state & OSD_ST_DRAIN) || o->reweight)
			continue;
		pgs = pgs_on(mon, i);
		if (pgs) {
			snprintf(sum, sizeof(sum), "osd.%u is draining: %u PG%s still use%s it",
				 i, pgs, pgs == 1 ? "" : "s", pgs == 1 ? "s" : "");
			add_check(h, "OSD_DRAINING", SEV_WARN, pgs, sum,
				  "wait: their data is being copied to other OSDs (atoll osd in ID "
				  "cancels)");
		} else {
			snprintf(sum, sizeof(sum), "osd.%u is drained: no PG uses it", i);
			add_check(h, "OSD_DRAINED", SEV_WARN, 1, sum,
				  (o->state & OSD_ST_UP) ?
				  "stop it, then remove it with: atoll osd rm ID" :
				  "remove it with: atoll osd rm ID");
		}
	}
}

static uint32_t osds_in(const struct osdmap *map)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < map->max_osd; i++)
		if (osdmap_osd_in(map, (int32_t)i) && map->osds[i].weight > 0)
			n++;
	return n;
}

static void check_pools(struct mon *mon, struct hctx *h)
{
	const struct osdmap *map = mon->map;
	uint32_t nored = 0, under = 0, nearfull = 0;
	struct placement_ctx *pc = NULL;
	uint32_t hosts = osdmap_hosts_in(map), in = osds_in(map);
	bool any_nearfull = false;
	cJSON *d;
	uint32_t n;
	char sum[256], fix[256];

	for (uint32_t i = 0; i < map->max_osd; i++)
		if (exists(&map->osds[i]) &&
		    (map->osds[i].state & (OSD_ST_NEARFULL | OSD_ST_FULL | OSD_ST_BACKFILLFULL)))
			any_nearfull = true;
	if (any_nearfull)
		pc = placement_ctx_new(map);

	/* POOL_NO_REDUNDANCY */
	for (uint32_t i = 0; i < map->npools; i++)
		if (map->pools[i].min_size <= 1)
			nored++;
	if (nored) {
		const struct osdmap_pool *p = NULL;

		for (uint32_t i = 0; i < map->npools && !p; i++)
			if (map->pools[i].min_size <= 1)
				p = &map->pools[i];
		snprintf(sum, sizeof(sum), "%u pool%s min_size 1: a write may be "
			 "acknowledged while only one disk holds it", nored,
			 nored == 1 ? " has" : "s have");
		if (p->size >= 2)
			snprintf(fix, sizeof(fix), "atoll pool set %s min_size 2", p->name);
		else
			snprintf(fix, sizeof(fix), "atoll pool set %s size 3 (then min_size 2)",
				 p->name);
		d = add_check(h, "POOL_NO_REDUNDANCY", SEV_WARN, nored, sum, fix);
		n = 0;
		for (uint32_t i = 0; i < map->npools; i++)
			if (map->pools[i].min_size <= 1)
				add_detail(h, d, &n, "pool '%s' has size %u min_size %u",
					   map->pools[i].name, map->pools[i].size,
					   map->pools[i].min_size);
	}

	/* POOL_UNDERSIZED: fewer failure domains than replicas */
	for (uint32_t i = 0; i < map->npools; i++) {
		const struct osdmap_pool *p = &map->pools[i];
		uint32_t have = p->failure_domain == POOL_FD_HOST ? hosts : in;

		if (have < p->size)
			under++;
	}
	if (under) {
		const struct osdmap_pool *p = NULL;

		for (uint32_t i = 0; i < map->npools && !p; i++) {
			uint32_t have = map->pools[i].failure_domain == POOL_FD_HOST ? hosts : in;

			if (have < map->pools[i].size)
				p = &map->pools[i];
		}
		snprintf(sum, sizeof(sum), "%u pool%s more replicas than failure domains "
			 "(hosts or OSDs) that are in: their PGs stay undersized", under,
			 under == 1 ? " wants" : "s want");
		if (p->failure_domain == POOL_FD_HOST)
			snprintf(fix, sizeof(fix), "add OSDs on %u more host%s, or lower the "
				 "size with: atoll pool set %s size %u", p->size - hosts,
				 p->size - hosts == 1 ? "" : "s", p->name, hosts ? hosts : 1);
		else
			snprintf(fix, sizeof(fix), "add %u more OSD%s, or lower the size with: "
				 "atoll pool set %s size %u", p->size - in,
				 p->size - in == 1 ? "" : "s", p->name, in ? in : 1);
		d = add_check(h, "POOL_UNDERSIZED", SEV_WARN, under, sum, fix);
		n = 0;
		for (uint32_t i = 0; i < map->npools; i++) {
			const struct osdmap_pool *q = &map->pools[i];
			bool byhost = q->failure_domain == POOL_FD_HOST;
			uint32_t have = byhost ? hosts : in;

			if (have < q->size)
				add_detail(h, d, &n, "pool '%s' has size %u but only %u %s%s in",
					   q->name, q->size, have, byhost ? "host" : "OSD",
					   have == 1 ? " is" : "s are");
		}
	}

	/* POOL_NEARFULL: a pool with a PG on a nearfull OSD */
	for (uint32_t i = 0; pc && i < map->npools; i++) {
		const struct osdmap_pool *p = &map->pools[i];
		bool hit = false;

		for (uint32_t pg = 0; pg < p->pg_num && !hit; pg++) {
			int32_t acting[OSDMAP_SIZE_MAX], primary;
			int k = placement_ctx_acting(pc, p, pg, acting, &primary);

			for (int j = 0; j < k && !hit; j++) {
				const struct osdmap_osd *o = osdmap_osd(map, acting[j]);

				hit = o && (o->state & (OSD_ST_NEARFULL | OSD_ST_FULL |
							OSD_ST_BACKFILLFULL));
			}
		}
		if (hit) {
			if (!nearfull)
				snprintf(fix, sizeof(fix), "delete data from pool '%s' or add "
					 "OSDs", p->name);
			nearfull++;
		}
	}
	if (nearfull) {
		snprintf(sum, sizeof(sum), "%u pool%s near full (%s data on an OSD past "
			 "the nearfull ratio)", nearfull, nearfull == 1 ? " is" : "s are",
			 nearfull == 1 ? "it has" : "they have");
		d = add_check(h, "POOL_NEARFULL", SEV_WARN, nearfull, sum, fix);
		(void)d;
	}
	placement_ctx_free(pc);
}

/* The first bad copy a PG's report names, for the summary. */
static const struct mon_pg *first_damaged(struct mon *mon, uint32_t *pool, uint32_t *pgno)
{
	for (size_t i = 0; i < mon->npgpools; i++) {
		struct mon_pg_pool *pp = &mon->pgpools[i];

		for (uint32_t pg = 0; pg < pp->pg_num; pg++) {
			bool unknown;
			uint32_t st = mon_pg_state(mon, &pp->pgs[pg], &unknown);

			if (!unknown && (st & PG_ST_INCONSISTENT) && pp->pgs[pg].st.nbad) {
				*pool = pp->pool;
				*pgno = pg;
				return &pp->pgs[pg];
			}
		}
	}
	return NULL;
}

/* PG_DAMAGED: which object on which OSD, and how to repair it. */
static void check_damaged(struct mon *mon, struct hctx *h, uint32_t damaged)
{
	const struct mon_pg *f;
	uint32_t fpool = 0, fpg = 0, n = 0;
	char sum[1024], fix[256];
	size_t off;
	cJSON *d;

	off = (size_t)snprintf(sum, sizeof(sum), "%u pg%s inconsistent: a scrub found copies "
			       "that differ or cannot be read", damaged, damaged == 1 ? "" : "s");
	f = first_damaged(mon, &fpool, &fpg);
	if (f && off < sizeof(sum))
		snprintf(sum + off, sizeof(sum) - off, " (first: object '%s' on osd.%d in pg "
			 "%u.%x: %s)", f->st.bad[0].oid, f->st.bad[0].osd, fpool, fpg,
			 scrub_kind_name(f->st.bad[0].kind));
	if (f && damaged == 1)
		snprintf(fix, sizeof(fix), "repair it with: atoll pg repair %u.%x", fpool, fpg);
	else
		snprintf(fix, sizeof(fix), "repair each with: atoll pg repair PGID (atoll pg ls "
			 "--state inconsistent shows which)");
	d = add_check(h, "PG_DAMAGED", SEV_ERR, damaged, sum, fix);
	for (size_t i = 0; h->detail && i < mon->npgpools; i++) {
		struct mon_pg_pool *pp = &mon->pgpools[i];

		for (uint32_t pg = 0; pg < pp->pg_num; pg++) {
			const struct mon_pg *e = &pp->pgs[pg];
			bool unknown;
			uint32_t st = mon_pg_state(mon, e, &unknown);

			if (unknown || !(st & PG_ST_INCONSISTENT))
				continue;
			for (uint8_t k = 0; k < e->st.nbad && k < PG_STAT_BAD_MAX; k++)
				add_detail(h, d, &n, "pg %u.%x: object '%s' on osd.%d: %s; the other "
					   "copies are good, and atoll pg repair %u.%x rewrites "
					   "this one from them", pp->pool, pg, e->st.bad[k].oid,
					   e->st.bad[k].osd, scrub_kind_name(e->st.bad[k].kind),
					   pp->pool, pg);
			if (e->st.scrub_errors > e->st.nbad)
				add_detail(h, d, &n, "pg %u.%x: %u more inconsistent cop%s; see them "
					   "all with: atoll pg query %u.%x", pp->pool, pg,
					   e->st.scrub_errors - e->st.nbad,
					   e->st.scrub_errors - e->st.nbad == 1 ? "y" : "ies",
					   pp->pool, pg);
			else if (!e->st.nbad)
				add_detail(h, d, &n, "pg %u.%x is inconsistent (reported by osd.%d, "
					   "which names no object: see atoll pg deep-scrub %u.%x)",
					   pp->pool, pg, e->reporter, pp->pool, pg);
		}
	}
}

/* The down OSDs, "osd.1, osd.4", for a sentence. */
static void down_list(const struct osdmap *map, char *buf, size_t len, uint32_t *count,
		      uint32_t *first)
{
	size_t off = 0;

	buf[0] = '\0';
	*count = 0;
	for (uint32_t i = 0; i < map->max_osd; i++) {
		const struct osdmap_osd *o = &map->osds[i];

		if (!exists(o) || (o->state & OSD_ST_UP) || o->reweight == 0)
			continue;
		if (!*count)
			*first = i;
		(*count)++;
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%sosd.%u", off ? ", " : "", i);
	}
}

/* PG_DEGRADED: how many objects lack copies, what atoll does about it
 * (recovery at a measured rate, the time left; the down OSDs marked out
 * when), and what the operator can do. */
static void check_degraded(struct mon *mon, struct hctx *h)
{
	struct mon_pg_summary *ps = malloc(sizeof(*ps));
	const struct osdmap *map = mon->map;
	char sum[512], fix[512], downs[256], eta[48];
	uint32_t ndown = 0, first = 0, n = 0;
	cJSON *d;

	if (!ps)
		return;
	mon_pg_summarize(mon, ps);
	if (!ps->degraded && !ps->misplaced && !ps->degraded_pgs)
		goto out_free;
	down_list(map, downs, sizeof(downs), &ndown, &first);
	snprintf(sum, sizeof(sum), "%llu of %llu object copies are degraded (%.1f%%) in %u pg%s, "
		 "%llu misplaced", (unsigned long long)ps->degraded,
		 (unsigned long long)ps->copies,
		 ps->copies ? 100.0 * (double)ps->degraded / (double)ps->copies : 0.0,
		 ps->degraded_pgs, ps->degraded_pgs == 1 ? "" : "s",
		 (unsigned long long)ps->misplaced);
	if (ndown && (map->flags & OSDMAP_F_NOOUT))
		snprintf(fix, sizeof(fix), "start %s again (noout is set, so nothing is copied "
			 "elsewhere meanwhile)", downs);
	else if (ndown)
		snprintf(fix, sizeof(fix), "start %s again, or mark %s out to copy the data "
			 "elsewhere now: atoll osd out %u", downs, ndown == 1 ? "it" : "them",
			 first);
	else
		snprintf(fix, sizeof(fix), "nothing to do: recovery runs by itself (raise "
			 "osd_recovery_max_active to speed it up, at the cost of client I/O)");
	d = add_check(h, "PG_DEGRADED", SEV_WARN, ps->degraded_pgs, sum, fix);
	if (ps->degraded || ps->misplaced) {
		if (ps->rate > 0) {
			mon_pg_duration_str((uint64_t)((double)(ps->degraded + ps->misplaced) /
						       ps->rate + 0.5), eta, sizeof(eta));
			add_detail(h, d, &n, "atoll is recovering them: %u pg%s recovering or "
				   "backfilling, %.1f objects/s over the last %u s; about %s "
				   "left at this rate", ps->recovering_pgs,
				   ps->recovering_pgs == 1 ? "" : "s", ps->rate, PG_RATE_WINDOW_S,
				   eta);
		} else if (ps->recovering_pgs) {
			add_detail(h, d, &n, "atoll is recovering them: %u pg%s recovering or "
				   "backfilling; no object copied in the last %u s yet, so no "
				   "estimate of the time left", ps->recovering_pgs,
				   ps->recovering_pgs == 1 ? "" : "s", PG_RATE_WINDOW_S);
		}
	}
	if (ndown && !(map->flags & OSDMAP_F_NOOUT))
		add_detail(h, d, &n, "the missing copies are on %s, which %s down: when %s "
			   "marked out (see OSD_DOWN for when), the copies are made again on "
			   "other OSDs", downs, ndown == 1 ? "is" : "are",
			   ndown == 1 ? "it is" : "they are");
	else if (ndown)
		add_detail(h, d, &n, "the missing copies are on %s, which %s down; noout holds "
			   "%s in, so they come back only when %s restarted", downs,
			   ndown == 1 ? "is" : "are", ndown == 1 ? "it" : "them",
			   ndown == 1 ? "it is" : "they are");
	else if (!ps->recovering_pgs)
		add_detail(h, d, &n, "no recovery is running: the PGs are undersized (fewer "
			   "hosts or OSDs up and in than the pool's size); add OSDs or lower "
			   "the pool's size (see POOL_UNDERSIZED)");
	for (size_t i = 0; h->detail && i < mon->npgpools; i++) {
		struct mon_pg_pool *pp = &mon->pgpools[i];

		for (uint32_t pg = 0; pg < pp->pg_num; pg++) {
			const struct mon_pg *e = &pp->pgs[pg];
			bool unknown;
			uint32_t st = mon_pg_state(mon, e, &unknown);
			char name[160];

			if (unknown || !(st & (PG_ST_DEGRADED | PG_ST_UNDERSIZED)))
				continue;
			pg_state_str(st, name, sizeof(name));
			add_detail(h, d, &n, "pg %u.%x is %s: %llu object copies degraded, %llu "
				   "misplaced", pp->pool, pg, name,
				   (unsigned long long)e->st.degraded,
				   (unsigned long long)e->st.misplaced);
		}
	}
out_free:
	free(ps);
}

/* "osd.0 or osd.3 (down)": the down OSDs a down PG last went active
 * on, as far as this monitor heard. */
static void down_waits_for(struct mon *mon, const struct mon_pg *p, char *buf, size_t len)
{
	size_t off = 0;
	uint32_t k = 0;

	buf[0] = 0;
	for (uint8_t i = 0; i < p->nlast_active && off < len; i++) {
		if (osdmap_osd_up(mon->map, p->last_active[i]))
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%sosd.%d", k++ ? " or " : "",
					p->last_active[i]);
	}
	if (!k)
		snprintf(buf, len, "OSDs that are down (atoll osd tree; their logs name them)");
	else if (off < len)
		snprintf(buf + off, len - off, " (down)");
}

static void check_pgs(struct mon *mon, struct hctx *h)
{
	const struct osdmap *map = mon->map;
	struct { char name[160]; uint32_t n; } states[32];
	uint32_t nstates = 0, bad = 0, total = 0, damaged = 0;
	bool serious = false;
	char sum[1024];
	size_t off;
	cJSON *d;
	uint32_t n = 0;

	d = NULL;
	for (uint32_t i = 0; i < map->npools; i++) {
		const struct osdmap_pool *p = &map->pools[i];
		struct mon_pg_pool *pp = mon_pg_pool(mon, p->id);

		if (!pp)
			continue;
		for (uint32_t pg = 0; pg < pp->pg_num; pg++) {
			bool unknown;
			uint32_t st = mon_pg_state(mon, &pp->pgs[pg], &unknown);
			char name[160];
			uint32_t k;

			total++;
			/* inconsistent is PG_DAMAGED's business, below */
			if (!unknown && (st & PG_ST_INCONSISTENT)) {
				damaged++;
				st &= ~PG_ST_INCONSISTENT;
			}
			if (!unknown && (st & (PG_ST_ACTIVE | PG_ST_CLEAN)) ==
			    (PG_ST_ACTIVE | PG_ST_CLEAN) &&
			    !(st & ~(PG_ST_ACTIVE | PG_ST_CLEAN)))
				continue;
			bad++;
			if (unknown)
				snprintf(name, sizeof(name), "unknown");
			else
				pg_state_str(st, name, sizeof(name));
			if (unknown || !(st & PG_ST_ACTIVE) ||
			    (st & (PG_ST_DOWN | PG_ST_INCOMPLETE | PG_ST_INACTIVE)))
				serious = true;
			for (k = 0; k < nstates; k++)
				if (strcmp(states[k].name, name) == 0)
					break;
			if (k == nstates && nstates < 32) {
				snprintf(states[k].name, sizeof(states[k].name), "%s", name);
				states[k].n = 0;
				nstates++;
			}
			if (k < nstates)
				states[k].n++;
		}
	}
	if (damaged)
		check_damaged(mon, h, damaged);
	check_degraded(mon, h);
	if (!bad)
		return;
	off = (size_t)snprintf(sum, sizeof(sum), "%u of %u pgs not active+clean:", bad, total);
	for (uint32_t k = 0; k < nstates && off < sizeof(sum); k++)
		off += (size_t)snprintf(sum + off, sizeof(sum) - off, "%s %u %s",
					k ? "," : "", states[k].n, states[k].name);
	d = add_check(h, "PG_NOT_CLEAN", serious ? SEV_ERR : SEV_WARN, bad, sum,
		      "bring down OSDs back up (see: atoll osd tree); PGs reported "
		      "unknown wait for their OSDs' first report; list them with: "
		      "atoll pg ls");
	if (d) {
		cJSON *counts = cJSON_CreateObject();

		for (uint32_t k = 0; k < nstates; k++)
			cJSON_AddNumberToObject(counts, states[k].name, states[k].n);
		cJSON_AddItemToObject(cJSON_GetArrayItem(h->checks,
				      cJSON_GetArraySize(h->checks) - 1), "states", counts);
	}
	for (uint32_t i = 0; h->detail && i < mon->npgpools; i++) {
		struct mon_pg_pool *pp = &mon->pgpools[i];

		for (uint32_t pg = 0; pg < pp->pg_num; pg++) {
			bool unknown;
			uint32_t st = mon_pg_state(mon, &pp->pgs[pg], &unknown) &
				      ~PG_ST_INCONSISTENT;
			char name[160];

			if (!unknown && st == (PG_ST_ACTIVE | PG_ST_CLEAN))
				continue;
			if (unknown) {
				add_detail(h, d, &n, "pg %u.%x is unknown", pp->pool, pg);
				continue;
			}
			pg_state_str(st, name, sizeof(name));
			if (st & PG_ST_DOWN) {
				char who[128];

				down_waits_for(mon, &pp->pgs[pg], who, sizeof(who));
				add_detail(h, d, &n, "pg %u.%x is %s, reported by osd.%d: it may "
					   "hold writes only %s had; start %s", pp->pool, pg,
					   name, pp->pgs[pg].reporter, who,
					   pp->pgs[pg].nlast_active > 1 ? "one of them" : "it");
				continue;
			}
			add_detail(h, d, &n, "pg %u.%x is %s, reported by osd.%d", pp->pool,
				   pg, name, pp->pgs[pg].reporter);
		}
	}
}

static void check_slow(struct mon *mon, struct hctx *h)
{
	const struct osdmap *map = mon->map;
	uint32_t total = 0, oldest_age = 0;
	int32_t oldest_osd = -1;
	char sum[512];
	cJSON *d;
	uint32_t n = 0;

	for (uint32_t i = 0; i < map->max_osd && i < OSDMAP_OSD_MAX; i++) {
		if (!osdmap_osd_up(map, (int32_t)i))
			continue;
		for (uint32_t k = 0; k < mon->osds[i].nslow; k++) {
			total++;
			if (mon->osds[i].slow[k].age_ms >= oldest_age) {
				oldest_age = mon->osds[i].slow[k].age_ms;
				oldest_osd = (int32_t)i;
			}
		}
	}
	if (!total)
		return;
	snprintf(sum, sizeof(sum), "%u slow op%s, the oldest blocked for %u s on osd.%d",
		 total, total == 1 ? "" : "s", oldest_age / 1000, oldest_osd);
	d = add_check(h, "SLOW_OPS", SEV_WARN, total, sum,
		      "check that OSD's disk and its peers (atoll osd tree, atoll pg ls); "
		      "restart it if it is stuck");
	for (uint32_t i = 0; i < map->max_osd && i < OSDMAP_OSD_MAX; i++) {
		if (!osdmap_osd_up(map, (int32_t)i))
			continue;
		for (uint32_t k = 0; k < mon->osds[i].nslow; k++) {
			const struct slow_op *s = &mon->osds[i].slow[k];
			char desc[sizeof(s->desc) + 1];

			memcpy(desc, s->desc, sizeof(s->desc));
			desc[sizeof(s->desc)] = '\0';
			add_detail(h, d, &n, "op '%s' on pg %u.%x at osd.%u blocked for %u ms",
				   desc, s->pool, s->pg, i, s->age_ms);
		}
	}
}

/* MON_DOWN: a member the leader has not heard from for three election
 * timeouts (each member reports its state to the leader every 200 ms). */
static void check_mons(struct mon *mon, struct hctx *h)
{
	const struct mon_qview *v = &mon->qv;
	uint64_t now = mono_now_ms(), late = 3 * mon->opts.election_ms;
	char sum[256], fix[256], names[160] = "";
	uint32_t down = 0, n = 0;
	size_t len = 0;
	cJSON *d;

	if (!v->ready || now - v->won_ms < late)
		return;		/* a new leader has not heard from everyone yet */
	for (uint32_t i = 0; i < v->nmembers; i++) {
		const struct mon_qmember *m = &v->members[i];

		if (m->id == mon->self.id || (m->status_ms && now - m->status_ms <= late))
			continue;
		down++;
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%smon.%s",
						len ? ", " : "", m->name);
	}
	if (!down)
		return;
	snprintf(sum, sizeof(sum), "%u of %u monitors %s down or cut off: %s", down,
		 v->nmembers, down == 1 ? "is" : "are", names);
	snprintf(fix, sizeof(fix), "start %s on %s host (atoll-mon --data DIR); the map "
		 "changes only while a majority (%u of %u) runs", down == 1 ? "it" : "them",
		 down == 1 ? "its" : "their", v->nmembers / 2 + 1, v->nmembers);
	d = add_check(h, "MON_DOWN", SEV_WARN, down, sum, fix);
	for (uint32_t i = 0; i < v->nmembers; i++) {
		const struct mon_qmember *m = &v->members[i];

		if (m->id == mon->self.id || (m->status_ms && now - m->status_ms <= late))
			continue;
		if (m->status_ms)
			add_detail(h, d, &n, "mon.%s at %s: last heard %llu ms ago, at epoch %llu",
				   m->name, m->addr, (unsigned long long)(now - m->status_ms),
				   (unsigned long long)m->epoch);
		else
			add_detail(h, d, &n, "mon.%s at %s: not heard from since this monitor "
				   "leads", m->name, m->addr);
	}
}

/* MON_EPOCH_BEHIND: OSDs whose boot was refused (osdmon.c) because they
 * have seen a newer map epoch than the monitors hold; they retry every
 * 15 s, so an entry older than a minute is an OSD that went away. */
#define EPOCH_BEHIND_KEEP_MS	60000

static void check_epoch_behind(struct mon *mon, struct hctx *h)
{
	uint64_t now = mono_now_ms(), newest = 0;
	char sum[256], fix[320], names[160] = "";
	uint32_t count = 0, n = 0;
	size_t len = 0;
	cJSON *d;

	for (int32_t i = 0; i < OSDMAP_OSD_MAX; i++) {
		const struct mon_osd_info *oi = &mon->osds[i];

		if (!oi->ahead_epoch || now - oi->ahead_ms > EPOCH_BEHIND_KEEP_MS)
			continue;
		count++;
		if (oi->ahead_epoch > newest)
			newest = oi->ahead_epoch;
		if (len < sizeof(names))
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%sosd.%d",
						len ? ", " : "", i);
	}
	if (!count)
		return;
	snprintf(sum, sizeof(sum), "the monitors' map (epoch %llu) is older than what %u "
		 "OSD%s %s seen (up to epoch %llu): %s; they stay down",
		 (unsigned long long)mon->map->epoch, count, count == 1 ? "" : "s",
		 count == 1 ? "has" : "have", (unsigned long long)newest, names);
	snprintf(fix, sizeof(fix), "the monitors were restored from an older backup or "
		 "lost their newest epochs: stop them and restore the newest backup "
		 "(atoll-mon --restore FILE), see doc/admin.md, \"Restoring an older backup\"");
	d = add_check(h, "MON_EPOCH_BEHIND", SEV_ERR, count, sum, fix);
	for (int32_t i = 0; i < OSDMAP_OSD_MAX; i++) {
		const struct mon_osd_info *oi = &mon->osds[i];

		if (!oi->ahead_epoch || now - oi->ahead_ms > EPOCH_BEHIND_KEEP_MS)
			continue;
		add_detail(h, d, &n, "osd.%d has seen epoch %llu, the monitors are at %llu; "
			   "its boot was refused %llu s ago", i,
			   (unsigned long long)oi->ahead_epoch,
			   (unsigned long long)mon->map->epoch,
			   (unsigned long long)((now - oi->ahead_ms) / 1000));
	}
}

/* CLOCK_SKEW: daemons whose beacons show a clock further from this
 * monitor's than auth_clock_skew (clockskew.c). */
struct skew_ctx {
	struct mon *mon;
	struct hctx *h;
	cJSON *d;
	uint32_t n;
	char names[160];
	size_t len;
};

static void skew_name(void *arg, const struct mon_clock *c)
{
	struct skew_ctx *s = arg;

	if (s->len < sizeof(s->names))
		s->len += (size_t)snprintf(s->names + s->len, sizeof(s->names) - s->len, "%s%s",
					   s->len ? ", " : "", c->name);
}

static void skew_detail(void *arg, const struct mon_clock *c)
{
	struct skew_ctx *s = arg;
	uint64_t off = (uint64_t)(c->skew_ms < 0 ? -c->skew_ms : c->skew_ms);

	/* a monitor issues tickets (their times are its clock's), a service
	 * daemon checks them */
	bool mon = !strncmp(c->name, "mon.", 4);

	add_detail(s->h, s->d, &s->n, "%s: its clock is %llu.%01llu s %s mon.%s's (bound "
		   "auth_clock_skew = %llu s): %s; set its host's clock right "
		   "(timedatectl; chrony or systemd-timesyncd against the monitors' NTP "
		   "servers), then restart it", c->name,
		   (unsigned long long)(off / 1000), (unsigned long long)(off % 1000 / 100),
		   c->skew_ms < 0 ? "behind" : "ahead of", s->mon->self.name,
		   (unsigned long long)(s->mon->opts.clock_skew_ms / 1000),
		   mon ? "the tickets it issues carry its clock, and daemons refuse them" :
		   "it refuses tickets that are valid");
}

static void check_clock_skew(struct mon *mon, struct hctx *h)
{
	struct skew_ctx s = { .mon = mon, .h = h };
	char sum[320];
	uint32_t count = mon_clock_skewed(mon, skew_name, &s);

	if (!count)
		return;
	snprintf(sum, sizeof(sum), "the clock%s of %u daemon%s %s off by more than "
		 "auth_clock_skew (%llu s) from mon.%s's: %s", count == 1 ? "" : "s", count,
		 count == 1 ? "" : "s", count == 1 ? "is" : "are",
		 (unsigned long long)(mon->opts.clock_skew_ms / 1000), mon->self.name, s.names);
	s.d = add_check(h, "CLOCK_SKEW", SEV_WARN, count, sum,
			"synchronise the hosts' clocks (chrony or systemd-timesyncd against "
			"the same NTP servers); until then tickets are refused");
	mon_clock_skewed(mon, skew_detail, &s);
}

/* This monitor's disk (diskcheck.c): writes are refused below
 * mon_data_min_free. */
static void check_disk(struct mon *mon, struct hctx *h)
{
	uint64_t avail, min = mon->opts.data_min_free;
	char sum[256], fix[300];
	uint32_t n = 0;
	cJSON *d;

	if (!min || mon_disk_free(mon, &avail) < 0 || avail >= min)
		return;
	snprintf(sum, sizeof(sum), "mon.%s has %llu MB free in its data folder, under "
		 "mon_data_min_free (%llu MB): commands that add to the cluster are refused",
		 mon->self.name, (unsigned long long)(avail / 1000000),
		 (unsigned long long)(min / 1000000));
	snprintf(fix, sizeof(fix), "free space on the disk of '%s' (deletes such as "
		 "'atoll pool rm' still work)", mon->data_dir);
	d = add_check(h, "MON_DISK_LOW", SEV_ERR, 1, sum, fix);
	add_detail(h, d, &n, "mon.%s: %llu bytes free in '%s'", mon->self.name,
		   (unsigned long long)avail, mon->data_dir);
}

cJSON *mon_health(struct mon *mon, bool detail)
{
	struct hctx h = { .worst = SEV_OK, .detail = detail };
	cJSON *root = cJSON_CreateObject();

	if (!root)
		return NULL;
	h.checks = cJSON_CreateArray();
	check_mons(mon, &h);
	check_disk(mon, &h);
	check_epoch_behind(mon, &h);
	check_osds(mon, &h);
	check_lifecycle(mon, &h);
	check_pools(mon, &h);
	check_pgs(mon, &h);
	check_slow(mon, &h);
	check_clock_skew(mon, &h);
	if (!detail) {
		cJSON *c;

		cJSON_ArrayForEach(c, h.checks)
			cJSON_DeleteItemFromObject(c, "detail");
	}
	cJSON_AddStringToObject(root, "status", sev_name[h.worst]);
	cJSON_AddItemToObject(root, "checks", h.checks);
	return root;
}

const char *mon_health_status(struct mon *mon)
{
	cJSON *h = mon_health(mon, false);
	const char *s = "HEALTH_ERR";

	if (h) {
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(h, "status"));

		for (int i = 0; v && i < 3; i++)
			if (strcmp(v, sev_name[i]) == 0)
				s = sev_name[i];
		cJSON_Delete(h);
	}
	return s;
}
