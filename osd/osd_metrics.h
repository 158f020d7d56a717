/*
 * osd_metrics.h - the OSD's Prometheus metrics (osd_metrics.c; doc/metrics.md).
 * Every call takes an OSD whose metrics are off (no metrics_addr) and
 * then does nothing.
 */
#ifndef ATOLL_OSD_METRICS_H
#define ATOLL_OSD_METRICS_H

#include <stdint.h>

struct osd;
struct osd_op;
struct osd_beacon;
struct store_statfs;

/* Main thread, after the messenger listens: the registry and the HTTP
 * server when metrics_addr is set for osd.N.  0 or a negative errno with
 * a sentence in err. */
int osd_metrics_start(struct osd *osd, const char *who, char *err, size_t errlen);
/* Main thread, before the messenger and the OSD's state go. */
void osd_metrics_stop(struct osd *osd);

/* An op answered (any thread): its type, latency, result and bytes.
 * Also counts it in the beacon's totals (osd->io_*), metrics on or off. */
void osd_metrics_op_done(const struct osd_op *op, int result, uint64_t read_bytes);
/* The beacon just built (loop thread): PG states, recovery, scrub, slow
 * ops and the store's space as the monitor sees them; sf may be NULL. */
void osd_metrics_beacon(struct osd *osd, const struct osd_beacon *b,
			const struct store_statfs *sf);
/* A whole object copied to or from a peer (loop thread); counted in the
 * beacon's totals, metrics on or off. */
void osd_metrics_copied(struct osd *osd, uint64_t bytes);

#endif
