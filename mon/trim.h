/*
 * trim.h - when the monitors may drop old epochs of the map history.
 *
 * mon_trim_point() is the rule alone (trim_point.c, a pure function that
 * tests/mon/test_mon_trim.c checks); trim.c gathers its inputs on the
 * leader and proposes the replicated trim entry.  doc/quorum.md, "Trimming
 * the map history", says why each bound is there.
 */
#ifndef ATOLL_MON_TRIM_H
#define ATOLL_MON_TRIM_H

#include <stdint.h>

struct mon_trim_in {
	uint64_t first, last;		/* the incrementals kept: first..last */
	/* the oldest last_epoch_clean of any PG of any pool; 0 when some PG
	 * has not reported one (to this leader): nothing may go */
	uint64_t clean;
	/* the oldest epoch at which an OSD that is down but in went down;
	 * UINT64_MAX when there is none */
	uint64_t down;
	uint64_t min_keep;		/* mon_min_map_history (>= 1) */
	uint64_t batch;			/* mon_trim_batch (>= 1) */
};

/* At most this many epochs go in one trim entry: every member deletes
 * them in its apply, on the raft thread, which must not stall for long
 * (a long history trimmed for the first time goes in several steps). */
#define MON_TRIM_MAX_EPOCHS	4096

/* The new first epoch to keep, or 0 when nothing is to be trimmed now:
 * never above in->clean or in->down, always keeping the last
 * in->min_keep epochs, only once at least in->batch epochs can go, and
 * at most MON_TRIM_MAX_EPOCHS at a time. */
uint64_t mon_trim_point(const struct mon_trim_in *in);

#endif
