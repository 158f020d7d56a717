/*
 * memtrim.c - keeps the memory jemalloc holds for the OSD near what the
 * OSD uses.
 *
 * The OSD runs jemalloc with decay off (main.c): its 4 MiB message and
 * read buffers come and go hundreds of times a second, and with decay
 * about half of each new one was fresh pages.  Freed memory then stays
 * resident, though, and under 4 KiB writes of new objects it grew by
 * about 5 MB a second (120-160 MB after 20-30 s on this machine) while the
 * OSD had 20-25 MB allocated (jemalloc's heap profile): the churn of the
 * log's kv overlay and of the checkpoints' LMDB pages leaves freed
 * extents that later requests do not reuse.  So once a second the OSD
 * compares what jemalloc has resident with what is allocated, and when
 * the difference passes the slack it gives every arena's freed pages
 * back (one purge; the buffers of a steady 4 MiB stream stay within the
 * slack, so they keep their pages).
 *
 * The slack comes from osd_memory_target (osd->memory_target, default
 * 150 MB: doc/limits.md): a third of it, at most MEMTRIM_SLACK; and once
 * what is resident passes nine tenths of the target, freed pages go back
 * at every tick whatever the slack.  What the OSD allocates itself is
 * bounded elsewhere (messages parked for a map: osd_map_wait_max_bytes,
 * by default a share of the target; the messenger's in-flight budgets);
 * when allocated memory still passes the target a warning says so, once
 * a minute, with the figures.
 */
#include <jemalloc/jemalloc.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "memtrim.h"
#include "osd.h"

#define MEMTRIM_TICK_MS 1000
#define MEMTRIM_SLACK (48u << 20)

#define STR_(x) #x
#define STR(x) STR_(x)

static size_t stat_of(const char *name)
{
	size_t v = 0, sz = sizeof(v);

	return mallctl(name, &v, &sz, NULL, 0) ? 0 : v;
}

static void memtrim_tick(void *arg)
{
	struct osd *osd = arg;
	uint64_t epoch = 1;
	size_t esz = sizeof(epoch);

	if (osd->stopping || atomic_load(&osd->closing))
		return;
	/* the stats are a snapshot taken at each new epoch */
	if (!mallctl("epoch", &epoch, &esz, &epoch, esz)) {
		size_t resident = stat_of("stats.resident"), allocated = stat_of("stats.allocated");

		uint64_t target = osd->memory_target;
		uint64_t slack = target / 3 < MEMTRIM_SLACK ? target / 3 : MEMTRIM_SLACK;

		if (resident > allocated + slack ||
		    (resident > target / 10 * 9 && resident > allocated + (1u << 20))) {
			mallctl("arena." STR(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
			log_debug("osd", "memory: %zu MB resident for %zu MB allocated; freed pages "
				  "given back", resident >> 20, allocated >> 20);
		}
		if (allocated > target) {
			uint64_t now = mono_now_ms();

			if (!osd->memory_warned_ms || now - osd->memory_warned_ms >= 60000) {
				osd->memory_warned_ms = now;
				log_warn("osd", "memory: %zu MB allocated, past osd_memory_target "
					 "(%llu MB); %u messages (%llu MB) wait for a newer map, "
					 "%llu MB of writes are in flight", allocated >> 20,
					 (unsigned long long)(target >> 20),
					 osd->mw.n[0] + osd->mw.n[1],
					 (unsigned long long)((osd->mw.bytes[0] + osd->mw.bytes[1]) >> 20),
					 (unsigned long long)(atomic_load(&osd->inflight_bytes) >> 20));
			}
		}
	}
	msgr_timer(osd->msgr, MEMTRIM_TICK_MS, memtrim_tick, osd);
}

void osd_memtrim_start(struct osd *osd)
{
	if (!msgr_timer(osd->msgr, MEMTRIM_TICK_MS, memtrim_tick, osd))
		log_warn("osd", "out of memory: freed memory is not given back until the OSD "
			 "restarts");
}
