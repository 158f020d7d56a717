/*
 * peering.c - a simple peering that is correct for now: before a PG
 * serves in a new interval its primary learns what every OSD that may
 * hold its newest writes has, and refuses to go active on anything less.
 *
 *   1. PEERING: the primary makes the new interval durable in its own
 *      store (this also waits for its earlier writes of the PG), then asks
 *      (MT_PG_QUERY) every other acting member and every up member of a
 *      past interval that may have accepted writes for its PG info; a
 *      member answers once what it had queued for the PG is durable.
 *   2. Past intervals the members report are merged; any that names OSDs
 *      not asked yet leads to more queries.
 *   3. DOWN if some past interval that may have accepted writes has no
 *      member that answered (its writes may exist only on OSDs that are
 *      down; health names them; a member that recorded it lacks an
 *      interval's writes is no witness of it: recovery.c).  If the
 *      primary lacks the newest log, no up member has it, and its log
 *      reaches back to that log's tail, it pulls first
 *      (recovery.c) and evaluates again.  Then the acting set it wants:
 *      the complete up members (newest log, or one the authoritative log
 *      reaches back to), one with the newest log first (a behind primary
 *      hands the PG over; hand_back returns it once nobody is behind),
 *      filled up with other complete OSDs while some up
 *      member is not complete.  If that differs from the map's acting set
 *      it asks the monitor for a pg_temp (or to drop it) and waits for the
 *      next interval: an OSD that is not complete is never primary and
 *      never counts toward min_size.  INCOMPLETE if no complete OSD is up.
 *      Otherwise ACTIVE: members behind by the log are recovered, up
 *      members outside the acting set are backfilled (backfill.c); CLEAN
 *      once nothing is left and the acting set is the full up set; with
 *      fewer than min_size members the PG stays inactive.
 *      A hole in the history (epochs an OSD skipped because the monitors
 *      had trimmed them: pg.c) is resolved only by an OSD that went
 *      active once and has no hole there itself; otherwise DOWN too.
 *   4. On activation the primary records last_epoch_started, forgets the
 *      past intervals (every acting member now has everything) and tells
 *      the members (PGQ_ACTIVATE) so that they forget them too.
 *
 * Everything runs on the loop thread; a map change that starts a new
 * interval bumps pg->peer_gen, and late answers of an older round are
 * dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "pg.h"
#include "store.h"

#define QUERY_TIMEOUT_MS 10000
#define QUERY_RETRY_MS 1000
#define PG_TEMP_RETRY_MS 5000

struct peer_ctx {
	struct pg *pg;
	uint64_t gen;
	uint32_t probe;
};

static void send_query(struct pg *pg, uint32_t i);
static void evaluate(struct pg *pg);

static bool probed(const struct pg *pg, int32_t id)
{
	for (uint32_t i = 0; i < pg->nprobes; i++)
		if (pg->probes[i].osd == id)
			return true;
	return false;
}

static bool add_probe(struct pg *pg, int32_t id)
{
	struct osd *osd = pg->osd;

	if (id < 0 || id == osd->whoami || probed(pg, id) ||
	    pg->nprobes == sizeof(pg->probes) / sizeof(pg->probes[0]))
		return false;
	if (!osdmap_osd_up(osd->map, id))
		return false;
	memset(&pg->probes[pg->nprobes], 0, sizeof(pg->probes[0]));
	pg->probes[pg->nprobes].osd = id;
	pg->nprobes++;
	return true;
}

/* Adds every OSD we should ask; returns how many were added. */
static uint32_t add_probes(struct pg *pg)
{
	uint32_t before = pg->nprobes;

	for (uint8_t i = 0; i < pg->info.nacting; i++)
		add_probe(pg, pg->info.acting[i]);
	for (uint8_t i = 0; i < pg->nup; i++)
		add_probe(pg, pg->up[i]);
	for (uint32_t k = 0; k < pg->info.npast; k++) {
		const struct pg_interval *iv = &pg->info.past[k];

		if (!iv->maybe_went_rw)
			continue;
		for (uint8_t i = 0; i < iv->nacting; i++)
			add_probe(pg, iv->acting[i]);
	}
	return pg->nprobes - before;
}

static void retry_query(void *arg)
{
	struct peer_ctx *ctx = arg;

	if (ctx->gen == ctx->pg->peer_gen)
		send_query(ctx->pg, ctx->probe);
	free(ctx);
}

static void query_reply(void *arg, struct msg *reply, int err)
{
	struct peer_ctx *ctx = arg;
	struct pg *pg = ctx->pg;
	struct osd_pg_notify n;
	struct pg_probe *p;
	struct dec d;
	int r = err;

	if (ctx->gen != pg->peer_gen) {
		msg_free(reply);
		free(ctx);
		return;
	}
	p = &pg->probes[ctx->probe];
	if (!r) {
		dec_init(&d, reply->front, reply->front_len);
		r = osd_pg_notify_decode(&d, &n);
		msg_free(reply);
	}
	if (r) {
		log_debug("peering", "pg %u.%x: osd.%d did not answer the query: %s; retrying",
			  pg->pool, pg->pgid, p->osd, strerror(-r));
		if (!msgr_timer(pg->osd->msgr, QUERY_RETRY_MS, retry_query, ctx))
			free(ctx);
		return;
	}
	free(ctx);
	pg_info_clear(&p->info);
	p->replied = true;
	p->has_pg = n.rc == 0;
	if (p->has_pg)
		p->info = n.info;	/* takes n.info.past */
	evaluate(pg);
}

static void send_query(struct pg *pg, uint32_t i)
{
	struct osd *osd = pg->osd;
	struct pg_probe *p = &pg->probes[i];
	struct osd_pg_query q = {
		.kind = PGQ_QUERY,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
	};
	struct peer_ctx *ctx;
	struct msg_conn *c;
	struct msg *m;
	struct enc e;

	p->sent = true;
	ctx = malloc(sizeof(*ctx));
	if (!ctx)
		return;
	ctx->pg = pg;
	ctx->gen = pg->peer_gen;
	ctx->probe = i;
	c = osd_peer_conn(osd, p->osd);
	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	m = msg_new(MT_PG_QUERY, &e);
	enc_free(&e);
	if (!c || !m || msg_call(c, m, QUERY_TIMEOUT_MS, query_reply, ctx) < 0) {
		if (!c)
			msg_free(m);
		if (!msgr_timer(osd->msgr, QUERY_RETRY_MS, retry_query, ctx))
			free(ctx);
	}
}

static bool in_list(const int32_t *v, uint32_t n, int32_t id)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static bool same_set(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(int32_t));
}

/* Tells the OSDs that answered with a copy of the PG but are no longer in
 * it that it is clean without them (backfill.c removes their copy). */
static void remove_strays(struct pg *pg)
{
	struct osd *osd = pg->osd;

	for (uint32_t j = 0; j < pg->nprobes; j++) {
		const struct pg_probe *p = &pg->probes[j];
		struct osd_pg_query q = {
			.kind = PGQ_REMOVE,
			.pool = pg->pool,
			.pg = pg->pgid,
			.epoch = osd->map->epoch,
			.same_interval_since = pg->info.same_interval_since,
		};
		struct msg_conn *c;
		struct msg *m;
		struct enc e;

		if (!p->replied || !p->has_pg || pg_has_member(pg, p->osd) ||
		    !(c = osd_peer_conn(osd, p->osd)))
			continue;
		enc_init(&e);
		osd_pg_query_encode(&q, &e);
		m = msg_new(MT_PG_QUERY, &e);
		enc_free(&e);
		if (m)
			msg_send(c, m);
	}
}

static void hand_back(struct pg *pg);

void pg_update_active_state(struct pg *pg)
{
	uint32_t state = PG_ST_ACTIVE;

	if (pg->rec)
		state |= PG_ST_RECOVERING | PG_ST_DEGRADED;
	if (!pg_backfill_complete(pg))
		state |= PG_ST_BACKFILLING | PG_ST_DEGRADED;
	if (pg->info.nacting < pg->size)
		state |= PG_ST_UNDERSIZED | PG_ST_DEGRADED;
	if (!same_set(pg->info.acting, pg->info.nacting, pg->up, pg->nup))
		state |= PG_ST_REMAPPED;
	if (!(state & (PG_ST_RECOVERING | PG_ST_BACKFILLING | PG_ST_DEGRADED | PG_ST_REMAPPED)))
		state |= PG_ST_CLEAN;
	if ((state & PG_ST_CLEAN) && !(pg->state & PG_ST_CLEAN))
		remove_strays(pg);
	pg_set_state(pg, state);
	if ((state & PG_ST_REMAPPED) && !(state & (PG_ST_RECOVERING | PG_ST_BACKFILLING)))
		hand_back(pg);
}

void pg_request_pg_temp(struct pg *pg, const int32_t *osds, uint8_t n)
{
	struct osd *osd = pg->osd;
	struct osd_pg_temp_req q = {
		.from = osd->whoami,
		.epoch = osd->map->epoch,
		.pool = pg->pool,
		.pg = pg->pgid,
		.n = n,
	};
	struct msg *m;
	struct enc e;

	if (!osd->monc)
		return;
	if (n)
		memcpy(q.osds, osds, n * sizeof(int32_t));
	enc_init(&e);
	osd_pg_temp_req_encode(&q, &e);
	m = msg_new(MT_OSD_PG_TEMP, &e);
	enc_free(&e);
	if (m)
		monc_send(osd->monc, m);
	log_info("peering", "pg %u.%x: asking the monitor for %s", pg->pool, pg->pgid,
		 n ? "a temporary acting set (members to backfill, or a primary behind)" :
		     "no temporary acting set");
}

/* Goes active; the members in behind[] (at from[]) are recovered first:
 * they get last_epoch_started only with their log (recovery.c); the up
 * members in bftgt[] are backfilled next (backfill.c). */
static void activate(struct pg *pg, const int32_t *behind, const struct pg_version *from,
		     uint32_t nbehind, const int32_t *bftgt, uint32_t nbf)
{
	struct osd *osd = pg->osd;
	struct store_txn *t;

	pg->info.last_epoch_started = pg->info.same_interval_since;
	pg->info.lacks_since = 0;	/* we have the newest log */
	if (pg->objects_stale) {
		pg_count_objects(pg);
		pg->objects_stale = false;
	}
	pg_info_prune_past(&pg->info, pg->info.same_interval_since);
	t = store_txn_new();
	if (t && !pglog_write_info(&pg->info, t, pg->coll))
		pg_queue_txn(pg, t, NULL, NULL);
	else
		store_txn_free(t);
	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		struct osd_pg_query q = {
			.kind = PGQ_ACTIVATE,
			.pool = pg->pool,
			.pg = pg->pgid,
			.epoch = osd->map->epoch,
			.same_interval_since = pg->info.same_interval_since,
			.last_epoch_started = pg->info.last_epoch_started,
		};
		struct msg_conn *c;
		struct msg *m;
		struct enc e;

		if (id == osd->whoami || in_list(behind, nbehind, id) ||
		    !(c = osd_peer_conn(osd, id)))
			continue;
		enc_init(&e);
		osd_pg_query_encode(&q, &e);
		m = msg_new(MT_PG_QUERY, &e);
		enc_free(&e);
		if (m)
			msg_send(c, m);
	}
	if (nbf && pg_backfill_start(pg, bftgt, nbf))
		log_error("peering", "pg %u.%x: cannot start backfilling (out of memory); it "
			  "stays remapped until the next interval", pg->pool, pg->pgid);
	if (nbehind && pg_recovery_push(pg, behind, from, nbehind)) {
		log_error("peering", "pg %u.%x: cannot start recovering its members; "
			  "it stays active+recovering with writes waiting until the next "
			  "interval", pg->pool, pg->pgid);
		pg_set_state(pg, PG_ST_ACTIVE | PG_ST_RECOVERING | PG_ST_DEGRADED);
	} else {
		pg_update_active_state(pg);
	}
	pg_kick_ops(pg);
	if (pg->bf)
		osd_recovery_kick(osd);
}

static void incomplete(struct pg *pg, const char *why, struct pg_version newest)
{
	log_warn("peering", "pg %u.%x is incomplete: %s (this OSD has %llu'%llu, the newest "
		 "is %llu'%llu); bring back the OSDs that were in it", pg->pool, pg->pgid, why,
		 (unsigned long long)pg->info.last_update.epoch,
		 (unsigned long long)pg->info.last_update.seq,
		 (unsigned long long)newest.epoch, (unsigned long long)newest.seq);
	pg_set_state(pg, PG_ST_INCOMPLETE | PG_ST_INACTIVE);
}

/* What peering heard of id: its info, or NULL (no copy, or no answer). */
static const struct pg_info *heard(const struct pg *pg, int32_t id)
{
	if (id == pg->osd->whoami)
		return &pg->info;
	for (uint32_t j = 0; j < pg->nprobes; j++)
		if (pg->probes[j].osd == id && pg->probes[j].replied && pg->probes[j].has_pg)
			return &pg->probes[j].info;
	return NULL;
}

/* Complete: it has the newest log, or the authoritative log reaches back
 * to its last_update (log recovery brings it up to date).  Before we hold
 * the authoritative log ourselves only its tail can be checked; a
 * divergent member shows when we evaluate again after the pull. */
static bool complete(struct pg *pg, int32_t id, struct pg_version newest, bool me_auth,
		     struct pg_version auth_tail)
{
	const struct pg_info *in = heard(pg, id);

	if (!in || !osdmap_osd_up(pg->osd->map, id))
		return false;
	if (id == pg->osd->whoami && pg->no_pull && !me_auth)
		return false;
	if (pg_version_cmp(in->last_update, newest) == 0)
		return true;
	if (me_auth)
		return pg_log_reaches(pg, in->last_update);
	return pg_version_cmp(in->last_update, auth_tail) >= 0;
}

struct temp_ctx {
	struct pg *pg;
	uint64_t gen;
};

static void temp_retry(void *arg)
{
	struct temp_ctx *tc = arg;

	if (tc->gen == tc->pg->peer_gen && (tc->pg->state & PG_ST_PEERING))
		evaluate(tc->pg);
	free(tc);
}

/* Whether a and b hold the same OSDs in another order. */
static bool reordered(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
	if (na != nb || same_set(a, na, b, nb))
		return false;
	for (uint32_t i = 0; i < na; i++)
		if (!in_list(b, nb, a[i]))
			return false;
	return true;
}

static void hand_back_retry(void *arg)
{
	struct temp_ctx *tc = arg;

	if (tc->gen == tc->pg->peer_gen)
		hand_back(tc->pg);
	free(tc);
}

/* The acting set is the up set in another order (a behind primary handed
 * the PG to a member with the newest log) and nobody is behind any more:
 * the monitor drops the pg_temp, and the up primary takes the PG back.
 * Asked again every few seconds until the map comes. */
static void hand_back(struct pg *pg)
{
	struct temp_ctx *tc;

	if (!pg->is_primary || pg->rec || !pg_backfill_complete(pg) ||
	    !reordered(pg->info.acting, pg->info.nacting, pg->up, pg->nup))
		return;
	pg_request_pg_temp(pg, NULL, 0);
	tc = malloc(sizeof(*tc));
	if (!tc)
		return;
	tc->pg = pg;
	tc->gen = pg->peer_gen;
	if (!msgr_timer(pg->osd->msgr, PG_TEMP_RETRY_MS, hand_back_retry, tc))
		free(tc);
}

/* The primary must have the newest log: when want[0] has not, the first
 * member of want that has goes in front (a behind primary hands the PG
 * to it rather than pulling before it serves; hand_back undoes it). */
static void newest_first(struct pg *pg, int32_t *want, uint32_t nwant, struct pg_version newest)
{
	for (uint32_t k = 0; k < nwant; k++) {
		const struct pg_info *in = heard(pg, want[k]);

		if (!in || pg_version_cmp(in->last_update, newest) != 0)
			continue;
		if (k) {
			int32_t id = want[k];

			memmove(&want[1], &want[0], k * sizeof(*want));
			want[0] = id;
		}
		return;
	}
}

/*
 * The acting set the PG should have: its up members that are complete,
 * in up order, one with the newest log first; when some up member is not
 * (it must be backfilled), other
 * complete OSDs that answered fill it up to the pool's size, so that the
 * PG keeps its copies while the targets are filled.  If that is not the
 * map's acting set the primary asks the monitor for it as a pg_temp (or
 * to drop the pg_temp) and waits for the new interval.  Otherwise the PG
 * goes active: acting members behind by the log are recovered, up members
 * outside the acting set are backfilled.
 */
static void choose_acting(struct pg *pg, struct pg_version newest, bool me_auth,
			  struct pg_version auth_tail)
{
	struct osd *osd = pg->osd;
	int32_t want[OSDMAP_SIZE_MAX];
	uint32_t nwant = 0;
	bool all_up_complete = true;

	for (uint8_t i = 0; i < pg->nup; i++) {
		if (complete(pg, pg->up[i], newest, me_auth, auth_tail))
			want[nwant++] = pg->up[i];
		else
			all_up_complete = false;
	}
	if (!all_up_complete) {
		for (uint8_t i = 0; i < pg->info.nacting && nwant < pg->size; i++) {
			int32_t id = pg->info.acting[i];

			if (!in_list(want, nwant, id) &&
			    complete(pg, id, newest, me_auth, auth_tail))
				want[nwant++] = id;
		}
		for (uint32_t j = 0; j < pg->nprobes && nwant < pg->size; j++) {
			int32_t id = pg->probes[j].osd;

			if (!in_list(want, nwant, id) &&
			    complete(pg, id, newest, me_auth, auth_tail))
				want[nwant++] = id;
		}
	}
	if (!nwant) {
		incomplete(pg, "no OSD that is up has the newest data or a log that reaches "
			   "back to it", newest);
		return;
	}
	newest_first(pg, want, nwant, newest);
	if (!same_set(want, nwant, pg->info.acting, pg->info.nacting)) {
		struct temp_ctx *tc = malloc(sizeof(*tc));

		if (same_set(want, nwant, pg->up, pg->nup))
			pg_request_pg_temp(pg, NULL, 0);
		else
			pg_request_pg_temp(pg, want, (uint8_t)nwant);
		pg_set_state(pg, PG_ST_PEERING | PG_ST_REMAPPED);
		/* asked again if no map comes (the request was stale) */
		if (tc) {
			tc->pg = pg;
			tc->gen = pg->peer_gen;
			if (!msgr_timer(osd->msgr, PG_TEMP_RETRY_MS, temp_retry, tc))
				free(tc);
		}
		return;
	}
	if (!me_auth) {
		incomplete(pg, "the OSD with the newest log cannot be pulled from", newest);
		return;
	}
	/* the acting members are complete: some may be behind by the log */
	int32_t behind[OSDMAP_SIZE_MAX], bf[OSDMAP_SIZE_MAX];
	struct pg_version from[OSDMAP_SIZE_MAX];
	uint32_t nbehind = 0, nbf = 0;

	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		int32_t id = pg->info.acting[i];
		const struct pg_info *in = heard(pg, id);

		if (id == osd->whoami || !in || pg_version_cmp(in->last_update, newest) == 0)
			continue;
		behind[nbehind] = id;
		from[nbehind++] = in->last_update;
	}
	for (uint8_t i = 0; i < pg->nup; i++)
		if (!in_list(pg->info.acting, pg->info.nacting, pg->up[i]))
			bf[nbf++] = pg->up[i];
	if (pg->info.nacting < pg->min_size) {
		pg_set_state(pg, PG_ST_UNDERSIZED | PG_ST_DEGRADED | PG_ST_INACTIVE);
		return;
	}
	/* a pg_temp left over that names the up set itself */
	for (uint32_t i = 0; !nbf && same_set(pg->info.acting, pg->info.nacting, pg->up, pg->nup) &&
			     i < osd->map->npg_temp; i++)
		if (osd->map->pg_temp[i].pool == pg->pool && osd->map->pg_temp[i].pg == pg->pgid)
			pg_request_pg_temp(pg, NULL, 0);
	activate(pg, behind, from, nbehind, bf, nbf);
}

/* Whether OSD id of interval iv, with this info, has the writes iv took:
 * not if writes went on without it while it was recovered (recovery.c),
 * unless it was iv's primary itself (then iv never went active: a primary
 * goes active only with the newest log, and that clears lacks_since). */
static bool witness(int32_t id, const struct pg_info *in, const struct pg_interval *iv)
{
	return !in->lacks_since || iv->last < in->lacks_since || iv->primary == id;
}

/* Whether OSD id, whose info is in, saw every interval of hole iv: it
 * went active once (so it held the PG and knows every interval since,
 * its past intervals tell them, or it went active after them) and its
 * own map history has no hole over those epochs. */
static bool knows_hole(int32_t id, const struct pg_info *in, const struct pg_interval *iv)
{
	if (id == iv->primary || !in->last_epoch_started)
		return false;
	for (uint32_t k = 0; k < in->npast; k++) {
		const struct pg_interval *h = &in->past[k];

		if (pg_interval_is_hole(h) && h->primary == id && h->first <= iv->last &&
		    h->last >= iv->first)
			return false;
	}
	return true;
}

/* An up member of the PG with the newest log: it would be in the acting
 * set we want, so the PG is handed to it rather than pulled (choose_acting). */
static bool newest_up_member(const struct pg *pg, struct pg_version newest)
{
	for (uint32_t j = 0; j < pg->nprobes; j++) {
		const struct pg_probe *p = &pg->probes[j];

		if (p->replied && p->has_pg && pg_version_cmp(p->info.last_update, newest) == 0 &&
		    osdmap_osd_up(pg->osd->map, p->osd) && in_list(pg->up, pg->nup, p->osd))
			return true;
	}
	return false;
}

static void evaluate(struct pg *pg)
{
	struct pg_version newest = pg->info.last_update;
	uint64_t les = pg->info.last_epoch_started;

	for (uint32_t i = 0; i < pg->nprobes; i++)
		if (!pg->probes[i].replied)
			return;
	/* merge what the others know of the history */
	for (uint32_t i = 0; i < pg->nprobes; i++) {
		const struct pg_probe *p = &pg->probes[i];

		if (!p->has_pg)
			continue;
		if (p->info.last_epoch_started > les)
			les = p->info.last_epoch_started;
		for (uint32_t k = 0; k < p->info.npast; k++)
			if (p->info.past[k].last < pg->info.same_interval_since)
				pg_info_add_past(&pg->info, &p->info.past[k]);
		if (pg_version_cmp(p->info.last_update, newest) > 0)
			newest = p->info.last_update;
	}
	pg_info_prune_past(&pg->info, les);
	uint32_t first_new = pg->nprobes;

	if (add_probes(pg)) {
		for (uint32_t i = first_new; i < pg->nprobes; i++)
			send_query(pg, i);
		return;
	}
	/* every past interval that may have taken writes needs a witness;
	 * holes first (k < npast), the intervals after: a hole is the more
	 * basic reason to be down, and the one health should say */
	for (uint32_t kk = 0; kk < 2 * pg->info.npast; kk++) {
		uint32_t k = kk % pg->info.npast;
		const struct pg_interval *iv = &pg->info.past[k];
		bool heard = false;

		if (!iv->maybe_went_rw || (kk < pg->info.npast) != pg_interval_is_hole(iv))
			continue;
		if (pg_interval_is_hole(iv)) {
			/* epochs an OSD skipped (trimmed by the monitors): an
			 * OSD that saw them must tell what they held */
			heard = knows_hole(pg->osd->whoami, &pg->info, iv);
			for (uint32_t j = 0; j < pg->nprobes && !heard; j++)
				heard = pg->probes[j].replied && pg->probes[j].has_pg &&
					knows_hole(pg->probes[j].osd, &pg->probes[j].info, iv);
			if (!heard) {
				log_warn("peering", "pg %u.%x is down: osd.%d skipped epochs %llu-%llu "
					 "(trimmed by the monitors) and no OSD that saw them "
					 "answered; bring up the OSDs that held the PG since",
					 pg->pool, pg->pgid, iv->primary,
					 (unsigned long long)iv->first,
					 (unsigned long long)iv->last);
				pg_set_state(pg, PG_ST_DOWN | PG_ST_INACTIVE);
				return;
			}
			continue;
		}
		for (uint8_t i = 0; i < iv->nacting && !heard; i++) {
			if (iv->acting[i] == pg->osd->whoami && witness(iv->acting[i], &pg->info, iv))
				heard = true;
			for (uint32_t j = 0; j < pg->nprobes && !heard; j++)
				/* a member without the PG has a new disk
				 * (atoll osd destroy): no witness */
				if (pg->probes[j].osd == iv->acting[i] && pg->probes[j].replied &&
				    pg->probes[j].has_pg &&
				    witness(iv->acting[i], &pg->probes[j].info, iv))
					heard = true;
		}
		if (!heard) {
			log_warn("peering", "pg %u.%x is down: no OSD of interval %llu-%llu "
				 "(primary osd.%d) answered; bring those OSDs back up",
				 pg->pool, pg->pgid, (unsigned long long)iv->first,
				 (unsigned long long)iv->last, iv->primary);
			pg_set_state(pg, PG_ST_DOWN | PG_ST_INACTIVE);
			return;
		}
	}
	/* The authoritative log is the newest one heard.  When it is not
	 * ours, pull from its holder first (recovery.c) if our log reaches
	 * back to its tail; peering is evaluated again once we have it.
	 * Otherwise this OSD is not complete, and the acting set chosen
	 * below leaves it out. */
	struct pg_version auth_tail = pg->info.log_tail;
	bool me_auth = pg_version_cmp(pg->info.last_update, newest) == 0;
	int32_t src = -1;

	for (uint32_t j = 0; j < pg->nprobes && !me_auth && src < 0; j++) {
		if (pg->probes[j].has_pg &&
		    pg_version_cmp(pg->probes[j].info.last_update, newest) == 0) {
			src = pg->probes[j].osd;
			auth_tail = pg->probes[j].info.log_tail;
		}
	}
	if (!me_auth && src >= 0 && !pg->no_pull && !newest_up_member(pg, newest) &&
	    pg_version_cmp(pg->info.last_update, auth_tail) >= 0 &&
	    pg->info.nacting >= pg->min_size) {
		if (pg_recovery_pull(pg, src) == 0) {
			pg_set_state(pg, PG_ST_PEERING | PG_ST_RECOVERING);
			return;
		}
		incomplete(pg, "cannot pull the newest log", newest);
		return;
	}
	choose_acting(pg, newest, me_auth, auth_tail);
}

void pg_peering_evaluate(struct pg *pg)
{
	evaluate(pg);
}

static void interval_persisted(void *arg, int r)
{
	struct peer_ctx *ctx = arg;
	struct pg *pg = ctx->pg;

	if (ctx->gen != pg->peer_gen) {
		free(ctx);
		return;
	}
	free(ctx);
	if (r < 0) {
		pg_set_state(pg, PG_ST_INCOMPLETE | PG_ST_INACTIVE);
		return;
	}
	add_probes(pg);
	for (uint32_t i = 0; i < pg->nprobes; i++)
		send_query(pg, i);
	evaluate(pg);
}

void pg_start_peering(struct pg *pg)
{
	struct peer_ctx *ctx;
	struct store_txn *t;

	pg->peered_sis = pg->info.same_interval_since;
	if (pg->sealed_sis < pg->info.same_interval_since)
		pg->sealed_sis = pg->info.same_interval_since;
	pg->peer_gen++;
	pg->no_pull = false;
	pg_recovery_free(pg);
	pg_backfill_free(pg);
	for (uint32_t i = 0; i < pg->nprobes; i++)
		pg_info_clear(&pg->probes[i].info);
	pg->nprobes = 0;
	pg_set_state(pg, PG_ST_PEERING);
	ctx = malloc(sizeof(*ctx));
	t = store_txn_new();
	if (!ctx || !t || pglog_write_info(&pg->info, t, pg->coll)) {
		free(ctx);
		store_txn_free(t);
		log_error("peering", "pg %u.%x: out of memory starting peering", pg->pool,
			  pg->pgid);
		return;
	}
	ctx->pg = pg;
	ctx->gen = pg->peer_gen;
	ctx->probe = 0;
	pg_queue_txn(pg, t, interval_persisted, ctx);
}

/* ---- the member's side --------------------------------------------------------- */

struct notify_ctx {
	struct osd *osd;
	struct pg *pg;
	struct msg_conn *conn;
	struct msg *m;
};

static void notify_send(struct osd *osd, struct msg_conn *c, const struct msg *req,
			const struct pg *pg)
{
	struct osd_pg_notify n = { .rc = pg ? 0 : -ENOENT, .epoch = osd->map->epoch };
	struct msg *m;
	struct enc e;

	if (pg)
		n.info = pg->info;
	enc_init(&e);
	osd_pg_notify_encode(&n, &e);
	m = msg_new(MT_PG_QUERY, &e);
	enc_free(&e);
	if (m)
		msg_reply(c, req, m);
}

static void query_synced(void *arg, int r)
{
	struct notify_ctx *ctx = arg;

	(void)r;
	notify_send(ctx->osd, ctx->conn, ctx->m, ctx->pg);
	msg_free(ctx->m);
	msg_conn_put(ctx->conn);
	free(ctx);
}

void osd_pg_query_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct osd_pg_query q = { 0 };
	struct pg *pg;
	struct dec d;
	int r;

	dec_init(&d, m->front, m->front_len);
	r = osd_pg_query_decode(&d, &q);
	if (!osd_peermsg_admit(osd, c, m, r, q.epoch, q.pool, q.pg, "peering", "PG query", 0))
		return;
	pg = osd_pg_find(osd, q.pool, q.pg);
	if (q.kind == PGQ_REMOVE) {
		if (pg)
			pg_remove_stray(pg, q.same_interval_since);
		msg_free(m);
		return;
	}
	if (q.kind == PGQ_STRAY) {
		if (pg)
			pg_stray_notified(pg, c);
		msg_free(m);
		return;
	}
	if (q.kind == PGQ_ACTIVATE) {
		if (pg && pg->info.same_interval_since == q.same_interval_since) {
			struct store_txn *t = store_txn_new();

			pg->info.last_epoch_started = q.last_epoch_started;
			pg->info.lacks_since = 0;	/* complete: nothing lacking */
			pg_info_prune_past(&pg->info, q.last_epoch_started);
			if (t && !pglog_write_info(&pg->info, t, pg->coll))
				pg_queue_txn(pg, t, NULL, NULL);
			else
				store_txn_free(t);
		}
		msg_free(m);
		return;
	}
	if (!pg) {
		notify_send(osd, c, m, NULL);
		msg_free(m);
		return;
	}
	/* A guessed interval start (pg.h, sis_watch_from) gives way to the
	 * primary's: its map of q.epoch falls in the span over which this OSD
	 * has seen the acting set unchanged, so it is the same interval, and
	 * the primary saw it begin.  Without this, scans, pushes, REP_OPs and
	 * ACTIVATE of that primary were refused for good. */
	if (pg->sis_watch_from && q.epoch >= pg->sis_watch_from &&
	    q.same_interval_since <= pg->sis_watch_from &&
	    q.same_interval_since != pg->info.same_interval_since) {
		log_info("peering", "pg %u.%x: interval began at epoch %llu (the primary's), not "
			 "%llu", pg->pool, pg->pgid, (unsigned long long)q.same_interval_since,
			 (unsigned long long)pg->info.same_interval_since);
		pg->info.same_interval_since = q.same_interval_since;
		pg->sis_watch_from = 0;
	}
	/* from now on REP_OPs of older intervals are refused (replication.c) */
	if (pg->sealed_sis < q.same_interval_since)
		pg->sealed_sis = q.same_interval_since;
	/* answer once everything queued for the PG is durable: an empty
	 * rewrite of the info queued behind it */
	struct notify_ctx *ctx = malloc(sizeof(*ctx));
	struct store_txn *t = store_txn_new();

	if (!ctx || !t || pglog_write_info(&pg->info, t, pg->coll)) {
		free(ctx);
		store_txn_free(t);
		msg_free(m);
		return;
	}
	ctx->osd = osd;
	ctx->pg = pg;
	ctx->conn = c;
	msg_conn_get(c);
	ctx->m = m;
	pg_queue_txn(pg, t, query_synced, ctx);
}
