/*
 * scrub.h - what the OSD keeps of a PG's scrubs, and the operator's view
 * of a PG (private to osd/; doc/scrub.md).
 *
 * struct pg_scrub_sched lives inside struct pg (pg.h) and belongs to the
 * loop thread like the rest of it.  scrub.c runs scrubs, on demand and on
 * the schedule; pg_query.c answers `atoll pg query` and fills the beacon's
 * recovery and scrub figures; recovery.c and backfill.c report their
 * progress through the two functions at the end.
 */
#ifndef ATOLL_OSD_SCRUB_H
#define ATOLL_OSD_SCRUB_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"
#include "scrub_proto.h"

struct osd;
struct pg;
struct msg;
struct msg_conn;

#define PG_SCRUB_BAD_KEEP	8u	/* inconsistent copies a PG remembers */

struct pg_scrub_sched {
	bool loaded;		/* stamps read from our meta object */
	bool stamped;		/* they were found there (else: first sight) */
	struct scrub_stamps stamps;
	uint32_t jitter_pct;	/* 0..24: this PG's next intervals are longer by it */
	uint8_t running;	/* 0, 1 shallow, 2 deep */
	/* what the last deep scrub and the last shallow scrub since left
	 * bad: counts, and the first copies (the deep scrub's first) */
	uint32_t deep_errors, shallow_errors;
	uint32_t ndeepbad;
	uint32_t nbad;
	struct scrub_error bad[PG_SCRUB_BAD_KEEP];
};

/* scrub.c: the schedule (started once the loop runs) */
void osd_scrub_sched_start(struct osd *osd);

/* pg_query.c */
void osd_pg_query_admin_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
/* Adds pg's recovery and scrub figures to its beacon stats. */
void pg_stat_fill_extra(struct pg *pg, struct pg_stat *st);

/* recovery.c, backfill.c: the members being brought up to date (of the
 * current round), at most max; returns how many were written. */
uint32_t pg_recovery_progress(const struct pg *pg, struct pgq_target *out, uint32_t max);
uint32_t pg_backfill_progress(const struct pg *pg, struct pgq_target *out, uint32_t max);

#endif
