/*
 * trim.c - trimming the monitors' map history (doc/quorum.md, "Trimming
 * the map history").
 *
 * The leader, on its tick, gathers the bounds (the oldest
 * last_epoch_clean any PG reported to it since it became leader, and the
 * oldest down epoch of an OSD that is down but in), asks mon_trim_point()
 * how far the history may go, and proposes a MON_ENTRY_TRIM carrying the
 * new first epoch.  Every member applies that entry to its own store
 * (mapchange.c: mon_state_apply), so the members agree on what is kept
 * without any of them reading a clock or its own PG table in apply.
 * Monitor thread only.
 */
#include <errno.h>
#include <string.h>

#include "encode.h"
#include "log.h"
#include "mon.h"
#include "mono.h"
#include "trim.h"

/* The oldest last_epoch_clean of every PG of every pool, as reported to
 * this leader; 0 when a PG has not reported one since it became leader. */
static uint64_t oldest_clean(struct mon *mon)
{
	uint64_t min = UINT64_MAX;

	for (uint32_t i = 0; i < mon->map->npools; i++) {
		const struct osdmap_pool *pool = &mon->map->pools[i];
		struct mon_pg_pool *pp = mon_pg_pool(mon, pool->id);

		if (!pp)
			return 0;
		for (uint32_t p = 0; p < pp->pg_num; p++) {
			const struct mon_pg *pg = &pp->pgs[p];

			if (!pg->reported || pg->stamp_ms < mon->qv.won_ms ||
			    pg->st.last_epoch_clean == 0)
				return 0;
			if (pg->st.last_epoch_clean < min)
				min = pg->st.last_epoch_clean;
		}
	}
	/* no pool: nothing needs old epochs but the down OSDs */
	return min == UINT64_MAX ? mon->map->epoch : min;
}

/* The oldest epoch at which an OSD that is still in went down. */
static uint64_t oldest_down_in(const struct osdmap *m)
{
	uint64_t min = UINT64_MAX;

	for (uint32_t i = 0; i < m->max_osd; i++) {
		const struct osdmap_osd *o = &m->osds[i];

		if (!(o->state & OSD_ST_EXISTS) || (o->state & OSD_ST_UP) ||
		    !osdmap_osd_in(m, (int32_t)i))
			continue;
		/* down_at 0: never up since it was made; it holds no map */
		if (o->down_at && o->down_at < min)
			min = o->down_at;
	}
	return min;
}

void mon_trim_tick(struct mon *mon)
{
	struct mon_trim_in in = {
		.first = mon_store_first_epoch(mon->store),
		.last = mon->map->epoch,
		.min_keep = mon->opts.min_map_history,
		.batch = mon->opts.trim_batch,
	};
	struct mon_entry ent;
	struct enc e;
	int64_t res = 0;
	uint64_t to;
	int r;

	if (!mon->qv.ready)
		return;
	in.clean = oldest_clean(mon);
	in.down = oldest_down_in(mon->map);
	to = mon_trim_point(&in);
	if (!to)
		return;
	memset(&ent, 0, sizeof(ent));
	ent.type = MON_ENTRY_TRIM;
	ent.first = to;
	enc_init(&e);
	mon_entry_encode(&ent, &e);
	r = e.err;
	if (r == 0)
		r = mon_quorum_propose(mon, e.buf, e.len, &res);
	enc_free(&e);
	if (r < 0)
		log_info("mon", "trim of the map history below epoch %llu not committed: %s",
			 (unsigned long long)to, r == MON_ENOTLEADER ? "not the leader" :
			 strerror(-r));
	else
		log_info("mon", "map history trimmed below epoch %llu (oldest clean %llu, "
			 "oldest down-but-in %llu)", (unsigned long long)to,
			 (unsigned long long)in.clean, in.down == UINT64_MAX ? 0ull :
			 (unsigned long long)in.down);
}
