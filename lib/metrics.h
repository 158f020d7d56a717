/*
 * metrics.h - a daemon's metrics registry and its Prometheus text
 * encoding (doc/metrics.md lists every metric).
 *
 * A registry holds families (one name, one type, one help text) of
 * series (one set of label values each).  A series is created once, at
 * setup or the first time a label value is seen, and its pointer is kept
 * by the code that updates it: the hot path is one relaxed atomic add on
 * that series, never a lock or a lookup.  Series live as long as the
 * registry.
 *
 * Types:
 *   counter   - only goes up (metric_inc, metric_add); name ends _total
 *   gauge     - a value set or moved (metric_set, metric_add with a
 *               negative delta through metric_gauge_add)
 *   histogram - observations of an integer quantity counted in fixed
 *               buckets, with their sum; the quantity's unit is scaled
 *               to the base unit when encoded (nanoseconds observed,
 *               seconds exported: scale 1e-9).
 *
 * Threads: creating series and encoding take the registry's lock; the
 * update calls are lock-free atomics and may run on any thread.  Collect
 * hooks (metrics_on_collect) run on the encoding thread (the HTTP
 * server's), before each encoding: they may only read what is safe to
 * read from another thread (atomics, snapshots under their own lock).
 * Values read during an encoding are each atomic, not a consistent cut;
 * a histogram's _count is the sum of its buckets as read, so _count and
 * the +Inf bucket always agree.
 */
#ifndef ATOLL_METRICS_H
#define ATOLL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics;
struct metric;

enum metric_type {
	METRIC_COUNTER = 1,
	METRIC_GAUGE = 2,
	METRIC_HISTOGRAM = 3,
};

#define METRICS_MAX_LABELS 4
#define METRICS_MAX_BUCKETS 24

struct metrics *metrics_new(void);
void metrics_free(struct metrics *r);

/* The series of family name with the given labels: pairs of label name
 * and value, ended by NULL ("op", "read", NULL).  The family is created
 * at its first series; later calls must give the same type, help and
 * label names (else NULL: a programming error, logged).  The same labels
 * twice give the same series.  NULL on a bad name or out of memory. */
struct metric *metrics_counter(struct metrics *r, const char *name, const char *help, ...)
	__attribute__((sentinel));
struct metric *metrics_gauge(struct metrics *r, const char *name, const char *help, ...)
	__attribute__((sentinel));
/* bounds: nbounds upper bounds (strictly increasing, at most
 * METRICS_MAX_BUCKETS) in the observed unit; scale converts an observed
 * value to the exported base unit (1e-9 for nanoseconds to seconds, 1 for
 * bytes). */
struct metric *metrics_histogram(struct metrics *r, const char *name, const char *help,
				 const uint64_t *bounds, unsigned nbounds, double scale, ...)
	__attribute__((sentinel));

/* Updates: m may be NULL (a metric that could not be created, or a
 * daemon running without metrics): nothing happens. */
void metric_inc(struct metric *m);
void metric_add(struct metric *m, uint64_t n);
void metric_gauge_add(struct metric *m, int64_t delta);
/* Sets a gauge, or a counter that mirrors a count kept elsewhere
 * (collect hooks). */
void metric_set(struct metric *m, int64_t v);
void metric_observe(struct metric *m, uint64_t v);
/* The value of a counter or gauge (tests). */
int64_t metric_value(const struct metric *m);

/* Hides or shows a whole family (a monitor shows the cluster-wide view
 * only while it leads).  Families start shown. */
void metrics_show(struct metrics *r, const char *name, bool shown);

/* fn(arg) runs before each encoding (see the threading note above).
 * release (may be NULL) is called on arg by metrics_free(), and at once
 * when this fails (-ENOMEM): the registry then owns arg. */
int metrics_on_collect(struct metrics *r, void (*fn)(void *arg), void *arg,
		       void (*release)(void *arg));

/* The text exposition format (version 0.0.4) of every shown family, in
 * the order families were created; *out is malloc'ed, NUL-terminated,
 * *len its length.  -ENOMEM. */
int metrics_encode(struct metrics *r, char **out, size_t *len);

/* Common buckets: latencies from 100 us to 30 s in nanoseconds. */
extern const uint64_t metrics_latency_ns_bounds[];
extern const unsigned metrics_latency_ns_nbounds;

#endif
