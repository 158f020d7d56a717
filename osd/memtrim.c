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
 * the difference passes MEMTRIM_SLACK it gives every arena's freed pages
 * back (one purge; the buffers of a steady 4 MiB stream stay within the
 * slack, so they keep their pages).
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

		if (resident > allocated + MEMTRIM_SLACK) {
			mallctl("arena." STR(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
			log_debug("osd", "memory: %zu MB resident for %zu MB allocated; freed pages "
				  "given back", resident >> 20, allocated >> 20);
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
