/*
 * memcheck.c - keeps the monitor's memory within mon_memory_target.
 *
 * The monitor holds little of its own (the current map, the PG stats the
 * OSDs report, the raft log up to its snapshot threshold); its map
 * history lives in the store, read on demand (file pages, not anonymous
 * memory).  What grows under load is jemalloc's freed pages: the map
 * encodings and command replies built for each subscriber and caller.
 * So every MEMCHECK_MS the loop compares what jemalloc holds resident
 * with what is allocated and gives the freed pages back when the
 * difference passes a quarter of the target, or when resident memory
 * passes nine tenths of it; allocated memory past the target is logged
 * (once a minute, with the figure) for the operator.  Loop thread
 * (mon.c's tick), under mon->lock like the rest of the monitor's state.
 */
#include <jemalloc/jemalloc.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "mon.h"
#include "mono.h"

#define MEMCHECK_MS 2000u

#define STR_(x) #x
#define STR(x) STR_(x)

static size_t stat_of(const char *name)
{
	size_t v = 0, sz = sizeof(v);

	return mallctl(name, &v, &sz, NULL, 0) ? 0 : v;
}

void mon_memcheck_tick(struct mon *mon)
{
	uint64_t now = mono_now_ms(), target = mon->opts.memory_target, epoch = 1;
	size_t esz = sizeof(epoch), resident, allocated;

	if (now < mon->memcheck_next_ms)
		return;
	mon->memcheck_next_ms = now + MEMCHECK_MS;
	if (mallctl("epoch", &epoch, &esz, &epoch, esz))
		return;
	resident = stat_of("stats.resident");
	allocated = stat_of("stats.allocated");
	if (resident > allocated + target / 4 ||
	    (resident > target / 10 * 9 && resident > allocated + (1u << 20))) {
		mallctl("arena." STR(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
		log_debug("mon", "memory: %zu MB resident for %zu MB allocated; freed pages "
			  "given back", resident >> 20, allocated >> 20);
	}
	if (allocated > target && (!mon->memcheck_warned_ms ||
				   now - mon->memcheck_warned_ms >= 60000)) {
		mon->memcheck_warned_ms = now;
		log_warn("mon", "memory: %zu MB allocated, past mon_memory_target (%llu MB)",
			 allocated >> 20, (unsigned long long)(target >> 20));
	}
}
