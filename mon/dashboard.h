/*
 * dashboard.h - the monitor's web dashboard (doc/dashboard.md): a
 * read-only page of the cluster's state that the leader serves over
 * HTTP(S) on `dashboard_addr`; any other monitor redirects to it.
 *
 * Three threads share it and none waits on another for long:
 *   - the monitor thread (mon->lock held) builds the snapshot of the
 *     monitor state as JSON at most once a second (mon_dashboard_tick,
 *     dashboard_state.c) and publishes it under the dashboard's own
 *     mutex;
 *   - libmicrohttpd's thread answers requests from what was published
 *     (dashboard.c) and never takes mon->lock;
 *   - a worker thread (dashboard_images.c) lists images and their lock
 *     holders through its own client handle with a read-only key and a
 *     timeout: the only part that reads from OSDs, so an OSD that does
 *     not answer delays nothing but that list.
 * Each call does nothing when the dashboard is off (no dashboard_addr).
 */
#ifndef ATOLL_MON_DASHBOARD_H
#define ATOLL_MON_DASHBOARD_H

#include <stddef.h>

struct mon;

/* Main thread, after the messenger listens: reads dashboard_addr and
 * the keys beside it (doc/daemons.md), binds and starts the worker.  0
 * (also when off) or a negative errno with a sentence in err. */
int mon_dashboard_start(struct mon *mon, const char *conf_path, char *err, size_t errlen);
/* Main thread, before the messenger goes. */
void mon_dashboard_stop(struct mon *mon);
/* Monitor thread, mon->lock held: publishes the snapshot (leader) or
 * where the leader is (the others); cheap when called more often. */
void mon_dashboard_tick(struct mon *mon);

#endif
