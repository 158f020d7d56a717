/*
 * trim_point.c - the rule for how far the map history may be trimmed
 * (trim.h), apart from the monitor's state so that a unit test links it
 * alone.
 */
#include "trim.h"

uint64_t mon_trim_point(const struct mon_trim_in *in)
{
	uint64_t to = in->clean, keep = in->min_keep ? in->min_keep : 1;

	/* an unknown PG blocks trimming: it may need any epoch */
	if (to == 0 || in->last == 0)
		return 0;
	/* an OSD that went down at epoch D holds the map of D - 1 (or newer
	 * ones): the incremental of D onwards rebuilds its past intervals */
	if (in->down < to)
		to = in->down;
	if (in->last < keep)
		return 0;
	if (in->last + 1 - keep < to)
		to = in->last + 1 - keep;
	if (to <= in->first || to - in->first < (in->batch ? in->batch : 1))
		return 0;
	if (to - in->first > MON_TRIM_MAX_EPOCHS)
		to = in->first + MON_TRIM_MAX_EPOCHS;
	return to;
}
