/*
 * pgstats.c - the state and usage of every PG, as the OSDs report them
 * in their beacons (each primary reports its PGs).
 *
 * One table per pool with pg_num slots, created on demand and dropped
 * when the pool leaves the map; the newest report of a PG wins.  Nothing
 * here is persisted: after a restart the monitor knows the PGs again
 * within one beacon interval, and shows them "unknown" until then.
 *
 * The recovery rate: each PG's report counts the objects its current
 * round of recovery and backfill has copied; the growth of that count
 * between two reports of the same primary is summed into one-second
 * slots, and the rate is their sum over the last PG_RATE_WINDOW_S seconds
 * (less right after the first copy).  A count that shrinks (a new round)
 * adds nothing.  One monitor per process: the slots are file statics,
 * owned by the monitor thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mon.h"
#include "pgstats.h"

static struct {
	uint64_t sec[PG_RATE_WINDOW_S];
	uint64_t objs[PG_RATE_WINDOW_S];
	uint64_t first_ms;		/* the first copy seen; 0 = none */
} rate;

static void rate_add(uint64_t now_ms, uint64_t objs)
{
	uint64_t sec = now_ms / 1000;
	uint32_t i = (uint32_t)(sec % PG_RATE_WINDOW_S);

	if (!objs)
		return;
	if (rate.sec[i] != sec) {
		rate.sec[i] = sec;
		rate.objs[i] = 0;
	}
	rate.objs[i] += objs;
	if (!rate.first_ms)
		rate.first_ms = now_ms;
}

static double rate_get(uint64_t now_ms)
{
	uint64_t sec = now_ms / 1000, sum = 0, span;

	if (!rate.first_ms)
		return 0;
	for (uint32_t i = 0; i < PG_RATE_WINDOW_S; i++)
		if (rate.sec[i] + PG_RATE_WINDOW_S > sec)
			sum += rate.objs[i];
	span = (now_ms - rate.first_ms) / 1000;
	if (span > PG_RATE_WINDOW_S)
		span = PG_RATE_WINDOW_S;
	if (span < 1)
		span = 1;
	return (double)sum / (double)span;
}

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
	uint64_t now = mono_now_ms();

	for (uint32_t i = 0; i < n; i++) {
		struct mon_pg_pool *pp = mon_pg_pool(mon, st[i].pool);
		struct mon_pg *p;

		if (!pp || st[i].pg >= pp->pg_num) {
			log_debug("mon", "osd.%d reports unknown pg %u.%x", reporter,
				  st[i].pool, st[i].pg);
			continue;
		}
		p = &pp->pgs[st[i].pg];
		if (p->reported && p->reporter == reporter && st[i].recovered > p->st.recovered)
			rate_add(now, st[i].recovered - p->st.recovered);
		/* the PG was clean at that epoch whoever says so: a new
		 * primary that never saw it clean reports less (or 0) */
		uint64_t lec = p->reported && p->st.last_epoch_clean > st[i].last_epoch_clean ?
			       p->st.last_epoch_clean : st[i].last_epoch_clean;

		p->reported = true;
		p->st = st[i];
		p->st.last_epoch_clean = lec;
		if (p->st.nacting > 10)
			p->st.nacting = 10;
		p->reporter = reporter;
		p->stamp_ms = now;
		if (p->st.state & PG_ST_ACTIVE) {
			p->nlast_active = p->st.nacting;
			memcpy(p->last_active, p->st.acting, p->st.nacting * sizeof(int32_t));
		}
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

void mon_pg_summarize(struct mon *mon, struct mon_pg_summary *s)
{
	const struct osdmap *map = mon->map;

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < map->npools; i++) {
		const struct osdmap_pool *p = &map->pools[i];
		struct mon_pg_pool *pp = mon_pg_pool(mon, p->id);

		for (uint32_t pg = 0; pp && pg < pp->pg_num; pg++) {
			const struct mon_pg *e = &pp->pgs[pg];
			bool unknown;
			uint32_t st = mon_pg_state(mon, e, &unknown);
			char name[160];
			uint32_t k;

			s->total++;
			if (unknown) {
				snprintf(name, sizeof(name), "unknown");
				s->unknown++;
				s->inactive++;
			} else {
				pg_state_str(st, name, sizeof(name));
				s->inactive += !(st & PG_ST_ACTIVE);
				s->degraded_pgs += !!(st & (PG_ST_DEGRADED | PG_ST_UNDERSIZED));
				s->recovering_pgs += !!(st & (PG_ST_RECOVERING | PG_ST_BACKFILLING));
				s->inconsistent += !!(st & PG_ST_INCONSISTENT);
				s->down += !!(st & PG_ST_DOWN);
				s->objects += e->st.objects;
				s->bytes += e->st.bytes;
				s->copies += e->st.objects * p->size;
				s->degraded += e->st.degraded;
				s->misplaced += e->st.misplaced;
				s->unfound += e->st.unfound;
			}
			for (k = 0; k < s->nstates && strcmp(s->states[k].name, name); k++)
				;
			if (k == s->nstates && k < PG_SUMMARY_STATES) {
				snprintf(s->states[k].name, sizeof(s->states[k].name), "%s", name);
				s->nstates++;
			}
			if (k < s->nstates)
				s->states[k].n++;
		}
	}
	s->rate = rate_get(mono_now_ms());
}

void mon_pg_duration_str(uint64_t s, char *buf, size_t len)
{
	if (s < 120)
		snprintf(buf, len, "%llu s", (unsigned long long)s);
	else if (s < 7200)
		snprintf(buf, len, "%llu min %llu s", (unsigned long long)s / 60,
			 (unsigned long long)s % 60);
	else
		snprintf(buf, len, "%llu h %llu min", (unsigned long long)s / 3600,
			 (unsigned long long)s / 60 % 60);
}

void mon_pg_fini(struct mon *mon)
{
	for (size_t i = 0; i < mon->npgpools; i++)
		free(mon->pgpools[i].pgs);
	free(mon->pgpools);
	mon->pgpools = NULL;
	mon->npgpools = 0;
}
