/*
 * ledger.h - the ledger workload: writes, overwrites, appends, deletes and
 * reads objects of a pool while keeping an exact model of what the cluster
 * acknowledged, and reports every read that disagrees with it (lost,
 * wrong, stale, a version that went back).  `atoll verify` runs it against
 * a live cluster; the thrash and ha tests drive it (tests/thrash's
 * thrash-client) while they kill daemons.
 *
 * THREADS worker threads, each with one op in flight, own objects
 * PREFIX t0..t(6 x THREADS - 1) between them: one op in flight per object,
 * so its model changes only when the cluster acknowledges a mutation and
 * every read must return the model's content and version.  A mutation that
 * fails (only -ETIMEDOUT is expected, from client_op_timeout, while a PG is
 * below min_size) may or may not have been applied: the object then has
 * two candidate states and its next read settles which.
 *
 * Uses only the public client API (atoll/atoll.h).
 */
#ifndef ATOLL_TOOLS_LEDGER_H
#define ATOLL_TOOLS_LEDGER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "atoll/atoll.h"

#define LEDGER_THREADS_MAX	256
#define LEDGER_PER_THREAD	6	/* objects per thread */

struct ledger_opts {
	int threads;		/* 1..LEDGER_THREADS_MAX */
	uint64_t seed;
	const char *prefix;	/* object names: PREFIX "t" N; may be "" */
	FILE *record;		/* one line per acknowledged mutation, or NULL */
	FILE *report;		/* the first problems, one line each (stderr) */
	const char *who;	/* names the reporter in those lines */
};

struct ledger_counts {
	uint64_t creates, overwrites, appends, deletes, reads;
	uint64_t timeouts, errors;
	uint64_t lost, wrong, stale, version_bad;
};

struct ledger;

/* Starts the workers on io (which must outlive the ledger).  NULL on
 * ENOMEM or when a thread cannot start. */
struct ledger *ledger_start(struct atoll_ioctx *io, const struct ledger_opts *o);
/* Notes a moment (a daemon was just killed): the first mutation issued
 * after it and acknowledged (on one of the objects named, when n > 0;
 * names are "tN" without the prefix) prints "mark LABEL: first write
 * acknowledged after N ms" to out.  -EINVAL for an unknown object name
 * (the others still count), -ENOSPC past 64 marks. */
int ledger_mark(struct ledger *l, const char *label, char *const *objs, int n, FILE *out);
/* The longest op (ns) since the previous call or the start. */
uint64_t ledger_stall(struct ledger *l);
/* Stops the workers (each finishes its op). */
void ledger_stop(struct ledger *l);
/* Longest op and longest gap between acknowledged mutations, ns. */
void ledger_timing(struct ledger *l, uint64_t *op_max, uint64_t *gap_max);
/* After ledger_stop: reads every object once and compares it with the
 * model; an object still unsure after that read counts as wrong.
 * Returns the objects read. */
uint64_t ledger_verify(struct ledger *l);
/* After ledger_stop: removes the objects (0 or the first error other than
 * -ENOENT). */
int ledger_remove_objects(struct ledger *l);
void ledger_counts(struct ledger *l, struct ledger_counts *c);
/* Anything lost, wrong, stale, at a bad version, or an op that failed
 * with anything but a timeout. */
bool ledger_bad(const struct ledger_counts *c);
void ledger_free(struct ledger *l);

#endif
