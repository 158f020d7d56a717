/*
 * stray.c - dropping the copies of a PG left on OSDs it moved away from
 * (doc/recovery.md, "The acting set").
 *
 * When a PG becomes active+clean its primary tells the OSDs that answered
 * its probes with a copy but are no longer in its acting or up set
 * (PGQ_REMOVE, peering.c).  A stray the primary did not hear from (it was
 * down then, or no past interval names it any more) asks by itself: soon
 * after it is up, then every STRAY_CHECK_MS while it holds PGs it is not
 * in, it sends each such PG's primary PGQ_STRAY, and a primary whose PG
 * is clean without it answers PGQ_REMOVE.  The stray drops its copy only
 * if its own map, at least as new as the primary's, does not give it the
 * PG either: the acting set had everything when the PG went clean, and no
 * later interval can need an OSD that was not in it.
 *
 * The PG leaves the table at once (a map that gives it back creates a new
 * one, whose transactions queue after the removal) and its struct stays
 * allocated until exit (osd_pg_forget).  Everything runs on the loop
 * thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "pg.h"
#include "store.h"

#define STRAY_CHECK_MS	1000	/* while strays are left */
#define STRAY_BOOT_MS	250	/* until this OSD is up: ask as soon as it is */

bool pg_has_member(const struct pg *pg, int32_t id)
{
	for (uint8_t i = 0; i < pg->info.nacting; i++)
		if (pg->info.acting[i] == id)
			return true;
	for (uint8_t i = 0; i < pg->nup; i++)
		if (pg->up[i] == id)
			return true;
	return false;
}

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

/* ---- dropping our copy ------------------------------------------------------ */

static void stray_removed(void *arg, int r)
{
	struct pg *pg = arg;

	if (r < 0)
		log_error("stray", "pg %u.%x: removing this OSD's stray copy failed: %s; "
			  "it stays in the store", pg->pool, pg->pgid, strerror(-r));
	else
		log_info("stray", "pg %u.%x: stray copy removed", pg->pool, pg->pgid);
	/* a map may have given the PG back meanwhile */
	osd_pgs_recheck(pg->osd);
}

void pg_remove_stray(struct pg *pg, uint64_t sis)
{
	struct osd *osd = pg->osd;
	struct name_list nl = { .max = 256 };
	struct store_txn *t, *t2;
	bool first = true;
	char after[STORE_NAME_MAX + 1];
	int r = 0;

	/* Our map is at least as new as the primary's (the query waited for
	 * it).  If it does not give us the PG either, our copy is not needed:
	 * the acting set had everything when the PG went clean, and no later
	 * interval can need an OSD that was not in it.  The interval itself
	 * is not compared: an OSD that skipped maps counts another one. */
	(void)sis;
	if (pg->removing || pg->is_primary || pg_has_member(pg, osd->whoami) || pg->reloading)
		return;
	t = store_txn_new();
	t2 = store_txn_new();
	nl.names = malloc((size_t)nl.max * sizeof(*nl.names));
	/* the collection must be empty when it goes: a transaction of its own,
	 * queued right behind the one that empties it (a PG the map gives
	 * back meanwhile is created after both) */
	if (!t || !t2 || !nl.names || store_txn_coll_remove(t2, pg->coll)) {
		r = -ENOMEM;
		goto out;
	}
	/* every object, the meta object with its log included */
	for (;;) {
		nl.n = 0;
		r = store_list(osd->store, pg->coll, first ? NULL : after, nl.max, collect, &nl);
		if (r < 0)
			goto out;
		r = 0;
		for (uint32_t i = 0; !r && i < nl.n; i++)
			r = store_txn_remove(t, pg->coll, nl.names[i]);
		if (r || nl.n < nl.max)
			break;
		memcpy(after, nl.names[nl.n - 1], sizeof(after));
		first = false;
	}
	if (r)
		goto out;
	log_info("stray", "pg %u.%x is clean without this OSD: removing its copy",
		 pg->pool, pg->pgid);
	pg->removing = true;
	pg->peer_gen++;
	/* new lookups do not find it; a map that gives the PG back creates
	 * a new one, whose transactions queue after these */
	osd_pg_forget(osd, pg);
	pg_queue_txn(pg, t, NULL, NULL);
	pg_queue_txn(pg, t2, stray_removed, pg);
	t = t2 = NULL;
out:
	if (r)
		log_warn("stray", "pg %u.%x: cannot remove the stray copy: %s", pg->pool,
			 pg->pgid, strerror(-r));
	store_txn_free(t);
	store_txn_free(t2);
	free(nl.names);
}

/* ---- asking the primary ------------------------------------------------------ */

static void send_query(struct osd *osd, struct msg_conn *c, uint8_t kind, const struct pg *pg)
{
	struct osd_pg_query q = {
		.kind = kind,
		.pool = pg->pool,
		.pg = pg->pgid,
		.epoch = osd->map->epoch,
		.same_interval_since = pg->info.same_interval_since,
	};
	struct msg *m;
	struct enc e;

	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	m = msg_new(MT_PG_QUERY, &e);
	enc_free(&e);
	if (m)
		msg_send(c, m);
}

static void arm(struct osd *osd, uint32_t ms);

static void stray_tick(void *arg)
{
	struct osd *osd = arg;
	bool any = false;

	osd->stray_armed = false;
	if (atomic_load(&osd->closing))
		return;
	for (uint32_t b = 0; b < osd->pg_buckets; b++) {
		for (struct pg *pg = osd->pgs[b]; pg; pg = pg->hnext) {
			struct msg_conn *c;

			if (pg->is_primary || pg->removing || pg_has_member(pg, osd->whoami))
				continue;
			any = true;
			if (!osd_is_up(osd) || pg->info.primary < 0 ||
			    !(c = osd_peer_conn(osd, pg->info.primary)))
				continue;
			send_query(osd, c, PGQ_STRAY, pg);
		}
	}
	if (any)
		arm(osd, osd_is_up(osd) ? STRAY_CHECK_MS : STRAY_BOOT_MS);
}

static void arm(struct osd *osd, uint32_t ms)
{
	if (osd->stray_armed || !osd->msgr || atomic_load(&osd->closing))
		return;
	if (msgr_timer(osd->msgr, ms, stray_tick, osd))
		osd->stray_armed = true;
}

void osd_stray_check_later(struct osd *osd)
{
	arm(osd, STRAY_BOOT_MS);
}

void pg_stray_notified(struct pg *pg, struct msg_conn *c)
{
	struct msg_identity who = msg_conn_peer(c);

	if (!pg->is_primary || !(pg->state & PG_ST_CLEAN) || who.type != MSG_ENTITY_OSD ||
	    who.id >= OSDMAP_OSD_MAX || pg_has_member(pg, (int32_t)who.id))
		return;
	send_query(pg->osd, c, PGQ_REMOVE, pg);
}
