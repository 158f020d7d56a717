/*
 * pgstats.c - the state and usage of every PG, as the OSDs report them
 * in their beacons (each primary reports its PGs).
 *
 * One table per pool with pg_num slots, created on demand and dropped
 * when the pool leaves the map; the newest report of a PG wins.  Nothing
 * here is persisted: after a restart the monitor knows the PGs again
 * within one beacon interval, and shows them "unknown" until then.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mon.h"

struct mon_pg_pool *mon_pg_pool(struct mon *mon, uint32_t pool)
{
	const struct osdmap_pool *p = osdmap_pool(mon->map, pool);
	struct mon_pg_pool *pp, *n;

	if (!p)
		return NULL;
	for (size_t i = 0; i < mon->npgpools; i++)
		if (mon->pgpools[i].pool == pool)
			return &mon->pgpools[i];
	n = realloc(mon->pgpools, (mon->npgpools + 1) * sizeof(*n));
	if (!n)
		return NULL;
	mon->pgpools = n;
	pp = &mon->pgpools[mon->npgpools];
	pp->pool = pool;
	pp->pg_num = p->pg_num;
	pp->pgs = calloc(p->pg_num, sizeof(*pp->pgs));
	if (!pp->pgs)
		return NULL;
	mon->npgpools++;
	return pp;
}

void mon_pg_sync(struct mon *mon)
{
	size_t j = 0;

	for (size_t i = 0; i < mon->npgpools; i++) {
		struct mon_pg_pool *pp = &mon->pgpools[i];
		const struct osdmap_pool *p = osdmap_pool(mon->map, pp->pool);

		if (!p || p->pg_num != pp->pg_num) {
			free(pp->pgs);
			continue;
		}
		mon->pgpools[j++] = *pp;
	}
	mon->npgpools = j;
}

void mon_pg_update(struct mon *mon, int32_t reporter, const struct pg_stat *st,
		   uint32_t n)
{
	uint64_t now = mon_now_ms();

	for (uint32_t i = 0; i < n; i++) {
		struct mon_pg_pool *pp = mon_pg_pool(mon, st[i].pool);
		struct mon_pg *p;

		if (!pp || st[i].pg >= pp->pg_num) {
			log_debug("mon", "osd.%d reports unknown pg %u.%x", reporter,
				  st[i].pool, st[i].pg);
			continue;
		}
		p = &pp->pgs[st[i].pg];
		p->reported = true;
		p->st = st[i];
		if (p->st.nacting > 10)
			p->st.nacting = 10;
		p->reporter = reporter;
		p->stamp_ms = now;
	}
}

uint32_t mon_pg_state(struct mon *mon, const struct mon_pg *p, bool *unknown)
{
	*unknown = !p->reported;
	if (!p->reported)
		return 0;
	/* its reporter is gone: what it said may no longer hold */
	if (!osdmap_osd_up(mon->map, p->reporter))
		return p->st.state | PG_ST_STALE;
	return p->st.state;
}

void mon_pg_fini(struct mon *mon)
{
	for (size_t i = 0; i < mon->npgpools; i++)
		free(mon->pgpools[i].pgs);
	free(mon->pgpools);
	mon->pgpools = NULL;
	mon->npgpools = 0;
}
