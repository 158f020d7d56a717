/*
 * mds_metrics.h - atoll-mds's Prometheus metrics (mds_metrics.c;
 * doc/metrics.md).  Off (every call a no-op) without metrics_addr for
 * mds.NAME.
 */
#ifndef ATOLL_MDS_METRICS_H
#define ATOLL_MDS_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct config;
struct mds;
struct msgr;

/* Main thread, at start (a standby exports too).  0 or a negative errno
 * with a sentence in err. */
int mds_metrics_start(const struct config *conf, const char *name, struct mds *m,
		      char *err, size_t errlen);
/* Once the MDS is active and listens: its messenger's connections. */
int mds_metrics_add_msgr(struct msgr *msgr);
/* A request handled (the handling thread): op and time taken. */
void mds_metrics_request(uint32_t op, uint64_t ns);
/* Main thread, before the messenger goes. */
void mds_metrics_stop(void);

#endif
