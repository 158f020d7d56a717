/*
 * clockskew.c - the daemons' wall clocks against this monitor's
 * (CLOCK_SKEW, doc/security.md "Clock skew").
 *
 * Tickets carry absolute wall-clock times, so a daemon whose clock is
 * further than auth_clock_skew from the monitors' refuses valid tickets
 * (or accepts expired ones).  Every OSD and MDS beacon carries the
 * sender's wall clock; the monitor that receives it notes the difference
 * with its own, and health names each daemon beyond the bound.  The
 * beacon's transit time (milliseconds on a LAN) is part of the figure:
 * the bound is seconds.  Nothing here is replicated: each monitor judges
 * the beacons it receives, and an entry not refreshed for
 * MON_CLOCK_KEEP_MS (the daemon stopped) no longer counts.  Called under
 * mon->lock (the beacon handlers and health).
 */
#include <stdio.h>
#include <string.h>

#include "mon.h"
#include "log.h"
#include "mono.h"
#include "msg_auth.h"

void mon_clock_note(struct mon *mon, const char *who, uint64_t wall_ms)
{
	struct mon_clock *slot = NULL, *oldest = &mon->clocks[0];
	uint64_t now = mono_now_ms();
	int64_t skew;

	if (!wall_ms)
		return;		/* an older sender: no clock in its beacon */
	skew = (int64_t)wall_ms - (int64_t)msg_auth_wall_ms(mon->msg_auth);
	for (uint32_t i = 0; i < MON_CLOCKS_MAX && !slot; i++) {
		struct mon_clock *c = &mon->clocks[i];

		if (!strcmp(c->name, who))
			slot = c;
		else if (c->seen_ms < oldest->seen_ms)
			oldest = c;	/* a free slot has seen_ms 0: the oldest */
	}
	if (!slot) {
		slot = oldest;
		snprintf(slot->name, sizeof(slot->name), "%s", who);
	}
	if ((uint64_t)(skew < 0 ? -skew : skew) > mon->opts.clock_skew_ms &&
	    (slot->seen_ms == 0 || now - slot->seen_ms > MON_CLOCK_KEEP_MS ||
	     (uint64_t)(slot->skew_ms < 0 ? -slot->skew_ms : slot->skew_ms) <=
	     mon->opts.clock_skew_ms))
		log_warn("mon", "the clock of %s is %.1f s %s this monitor's (auth_clock_skew "
			 "%llu s): it refuses valid tickets; synchronise its host's clock",
			 who, (double)(skew < 0 ? -skew : skew) / 1000.0,
			 skew < 0 ? "behind" : "ahead of",
			 (unsigned long long)(mon->opts.clock_skew_ms / 1000));
	slot->skew_ms = skew;
	slot->seen_ms = now;
}

uint32_t mon_clock_skewed(struct mon *mon, void (*fn)(void *arg, const struct mon_clock *c),
			  void *arg)
{
	uint64_t now = mono_now_ms();
	uint32_t n = 0;

	for (uint32_t i = 0; i < MON_CLOCKS_MAX; i++) {
		const struct mon_clock *c = &mon->clocks[i];
		uint64_t off = (uint64_t)(c->skew_ms < 0 ? -c->skew_ms : c->skew_ms);

		if (!c->name[0] || now - c->seen_ms > MON_CLOCK_KEEP_MS ||
		    off <= mon->opts.clock_skew_ms)
			continue;
		n++;
		if (fn)
			fn(arg, c);
	}
	return n;
}
