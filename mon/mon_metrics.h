/*
 * mon_metrics.h - the monitor's Prometheus metrics (mon_metrics.c;
 * doc/metrics.md).  Each call does nothing when metrics are off (no
 * metrics_addr for mon.NAME).
 */
#ifndef ATOLL_MON_METRICS_H
#define ATOLL_MON_METRICS_H

#include <stddef.h>

struct mon;

/* Main thread, after the messenger listens.  0 or a negative errno with
 * a sentence in err. */
int mon_metrics_start(struct mon *mon, char *err, size_t errlen);
/* Main thread, before the messenger goes. */
void mon_metrics_stop(struct mon *mon);
/* Monitor thread, mon->lock held: copies the state into the gauges (at
 * most once a second; cheap when called more often). */
void mon_metrics_tick(struct mon *mon);

#endif
