/*
 * iorate.c - the cluster's client I/O and recovery rates, from the
 * totals each OSD sends in its beacon (struct osd_io_counters), and the
 * bytes left to recover: what `atoll status`, the cluster log's PG
 * summaries and the leader's metrics show.
 *
 * The growth of an OSD's totals between two of its beacons is summed
 * into one-second slots; a rate is the sum over the last slots divided
 * by the time they cover (less right after the first growth of that
 * value: a first recovery is not averaged over the seconds before it).  A
 * total that shrinks (the OSD restarted) or a previous beacon older than
 * BASE_MAX_MS (this monitor was not leading meanwhile) only sets a new
 * base, so a restart or a leader change never shows a burst.  The bytes
 * left are an estimate: each PG's object copies to recover or backfill
 * times its mean object size.  One monitor per process: the slots are
 * file statics, owned by the monitor thread (mon->lock held).
 */
#include <string.h>

#include "mon.h"
#include "pgstats.h"

#define SLOTS		PG_RATE_WINDOW_S	/* the longest window */
#define BASE_MAX_MS	15000	/* longer than any sane osd_heartbeat_interval */

enum { V_RD_OPS, V_WR_OPS, V_RD_BYTES, V_WR_BYTES, V_REC_BYTES, V_NR };

static struct {
	uint64_t sec[SLOTS];
	uint64_t v[SLOTS][V_NR];
	uint64_t first_ms[V_NR];	/* the first growth of each; 0 = none */
} io;

void mon_io_note(struct mon *mon, int32_t osd, const struct osd_io_counters *c)
{
	struct mon_osd_info *info;
	uint64_t now = mono_now_ms(), sec = now / 1000, d[V_NR];
	const struct osd_io_counters *p;
	uint32_t slot;

	if (osd < 0 || osd >= OSDMAP_OSD_MAX)
		return;
	info = &mon->osds[osd];
	p = &info->io;
	if (!info->io_ms || now - info->io_ms > BASE_MAX_MS ||
	    c->read_ops < p->read_ops || c->write_ops < p->write_ops ||
	    c->read_bytes < p->read_bytes || c->write_bytes < p->write_bytes ||
	    c->recovery_bytes < p->recovery_bytes)
		goto out_base;
	d[V_RD_OPS] = c->read_ops - p->read_ops;
	d[V_WR_OPS] = c->write_ops - p->write_ops;
	d[V_RD_BYTES] = c->read_bytes - p->read_bytes;
	d[V_WR_BYTES] = c->write_bytes - p->write_bytes;
	d[V_REC_BYTES] = c->recovery_bytes - p->recovery_bytes;
	slot = (uint32_t)(sec % SLOTS);
	if (io.sec[slot] != sec) {
		io.sec[slot] = sec;
		memset(io.v[slot], 0, sizeof(io.v[slot]));
	}
	for (int k = 0; k < V_NR; k++) {
		io.v[slot][k] += d[k];
		if (d[k] && !io.first_ms[k])
			io.first_ms[k] = now;
	}
out_base:
	info->io = *c;
	info->io_ms = now;
}

/* The per-second rate of value k over the last window seconds. */
static double rate(uint64_t now, int k, uint32_t window)
{
	uint64_t sec = now / 1000, sum = 0, span;

	if (!io.first_ms[k])
		return 0;
	for (uint32_t i = 0; i < SLOTS; i++)
		if (io.sec[i] + window > sec)
			sum += io.v[i][k];
	span = (now - io.first_ms[k]) / 1000;
	if (span > window)
		span = window;
	if (span < 1)
		span = 1;
	return (double)sum / (double)span;
}

void mon_io_rates(struct mon *mon, struct mon_io_rates *r)
{
	uint64_t now = mono_now_ms();
	double left = 0;

	memset(r, 0, sizeof(*r));
	r->window_s = IO_RATE_WINDOW_S;
	r->read_ops_per_s = rate(now, V_RD_OPS, IO_RATE_WINDOW_S);
	r->write_ops_per_s = rate(now, V_WR_OPS, IO_RATE_WINDOW_S);
	r->read_bytes_per_s = rate(now, V_RD_BYTES, IO_RATE_WINDOW_S);
	r->write_bytes_per_s = rate(now, V_WR_BYTES, IO_RATE_WINDOW_S);
	r->recovery_bytes_per_s = rate(now, V_REC_BYTES, PG_RATE_WINDOW_S);
	for (uint32_t i = 0; mon->map && i < mon->map->npools; i++) {
		struct mon_pg_pool *pp = mon_pg_pool(mon, mon->map->pools[i].id);

		for (uint32_t g = 0; pp && g < pp->pg_num; g++) {
			const struct pg_stat *st = &pp->pgs[g].st;

			if (pp->pgs[g].reported && st->objects)
				left += (double)(st->degraded + st->misplaced) *
					((double)st->bytes / (double)st->objects);
		}
	}
	r->recovery_left_bytes = (uint64_t)left;
}
