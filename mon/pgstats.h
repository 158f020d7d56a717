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

/* iorate.c: the client I/O and recovery rates, from the OSDs' beacons. */
#define IO_RATE_WINDOW_S	10	/* client rates are over this many seconds */
struct osd_io_counters;
struct mon_io_rates {
	uint32_t window_s;		/* what the client rates cover */
	double read_ops_per_s, write_ops_per_s;
	double read_bytes_per_s, write_bytes_per_s;
	double recovery_bytes_per_s;	/* over PG_RATE_WINDOW_S, as the object rate */
	uint64_t recovery_left_bytes;	/* estimated: copies left x mean object size */
};
/* An OSD's beacon carried its totals c. */
void mon_io_note(struct mon *mon, int32_t osd, const struct osd_io_counters *c);
void mon_io_rates(struct mon *mon, struct mon_io_rates *r);
/* "in 2 min 5 s", from seconds */
void mon_pg_duration_str(uint64_t s, char *buf, size_t len);

#endif
