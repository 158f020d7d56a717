/*
 * pgstats.h - the summary of the PGs' statistics that `status`, `pg stat`
 * and health share (pgstats.c), and the recovery rate the monitor derives
 * from the beacons.  Monitor thread only.
 */
#ifndef ATOLL_MON_PGSTATS_H
#define ATOLL_MON_PGSTATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mon;

#define PG_SUMMARY_STATES	32
#define PG_RATE_WINDOW_S	30	/* the recovery rate is over this many seconds */

struct mon_pg_summary {
	uint32_t total;			/* PGs in the map */
	uint32_t nstates;
	struct {
		char name[160];		/* "active+clean", "unknown" */
		uint32_t n;
	} states[PG_SUMMARY_STATES];
	uint32_t unknown, inactive, degraded_pgs, recovering_pgs, inconsistent, down;
	uint64_t objects, bytes;
	uint64_t copies;		/* objects x the pool's size */
	uint64_t degraded, misplaced, unfound;
	double rate;			/* objects recovered per second, lately */
};

void mon_pg_summarize(struct mon *mon, struct mon_pg_summary *s);
/* "in 2 min 5 s", from seconds */
void mon_pg_duration_str(uint64_t s, char *buf, size_t len);

#endif
