/*
 * pg.h - a placement group as the OSD holds it, and the op that runs in
 * it (private to osd/).  Everything here is owned by the loop thread
 * (osd.h) unless a field says otherwise.
 */
#ifndef ATOLL_OSD_PG_H
#define ATOLL_OSD_PG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "osd.h"
#include "osd_proto.h"
#include "pglog.h"
#include "proto.h"
#include "scrub.h"
#include "store.h"

/* What a probed OSD told the primary while peering. */
struct pg_probe {
	int32_t osd;
	bool replied;
	bool has_pg;		/* false: it answered -ENOENT */
	bool sent;
	struct pg_info info;
};

struct pg {
	struct pg *hnext;
	struct osd *osd;
	uint32_t pool;
	uint32_t pgid;
	uint64_t coll;
	uint32_t state;		/* PG_ST_* */
	struct pg_info info;	/* in memory = what the store will hold
				 * once every queued txn committed */
	struct pglog log;
	uint8_t size;		/* the pool's size / min_size in this map */
	uint8_t min_size;
	bool is_primary;
	bool reloading;		/* a txn failed: re-reading the log */
	bool removing;		/* a stray copy being dropped (backfill.c) */
	/* the up set (placement without pg_temp): with a pg_temp its members
	 * outside the acting set are backfilled (backfill.c) */
	uint8_t nup;
	int32_t up[OSDMAP_SIZE_MAX];
	uint64_t objects;	/* approximate, for the beacon */
	uint64_t bytes;
	/* objects/bytes are counted by this OSD's client writes only: a PG
	 * it did not serve as primary, or pulled objects into, is counted
	 * again from the store when it goes active (peering.c) */
	bool objects_stale;
	/* the newest map epoch at which this primary saw the PG
	 * active+clean (0: not since it started); in the beacon, the
	 * monitors trim the map history below the oldest of them */
	uint64_t last_epoch_clean;

	/* peering (primary) */
	uint64_t peer_gen;	/* bumped by every new interval */
	uint64_t peered_sis;	/* interval peering was started for */
	/* The newest interval this OSD peered for or answered a query of:
	 * a REP_OP of an older interval is refused from then on (before,
	 * it is applied, so that the members' logs agree when peering
	 * starts: see replication.c). */
	uint64_t sealed_sis;
	/* 0 once this OSD saw the interval begin.  Otherwise the epoch from
	 * which it has watched the acting set stay as it is: a PG created
	 * while it was not changing (a backfill target added under a
	 * pg_temp) or loaded after a restart only guesses same_interval_since,
	 * and takes the primary's from its query (peering.c).  UINT64_MAX:
	 * loaded, set by the first map. */
	uint64_t sis_watch_from;
	uint32_t nprobes;
	struct pg_probe probes[2 * OSDMAP_SIZE_MAX + 8];

	/* ops: in flight (writes, in submission order) and waiting (in
	 * arrival order) */
	struct osd_op *inflight;
	struct osd_op *waiting;
	struct osd_op **waiting_tail;
	uint32_t nwaiting;		/* on waiting (osd->pg_waiting_max) */
	uint64_t waiting_refused;	/* ops refused for it, and when last */
	uint64_t waiting_refused_ms;	/* logged */

	/* recovery (primary): NULL unless members are being brought up to
	 * date (recovery.c) */
	struct pg_recovery *rec;
	/* backfill (primary): NULL unless up members outside the acting set
	 * are being brought up to date (backfill.c) */
	struct pg_backfill *bf;
	/* deep scrub (primary, scrub.c): the one running (new writes wait),
	 * and the errors the last one left unrepaired (stats: inconsistent) */
	struct scrub_job *scrub;
	uint32_t scrub_errors;
	struct pg_scrub_sched sched;	/* stamps, findings (scrub.c, scrub.h) */
	bool no_pull;		/* this round: our log diverges, no pull */
	struct rep_lost *rep_lost;	/* a REP_OP's connection broke: the
					 * check whether to peer again
					 * (replication.c), freed with pg */
};

/* A client op from decode to reply. */
struct osd_op {
	struct osd *osd;
	struct pg *pg;
	struct msg_conn *conn;
	struct msg *m;			/* the request (owns the data) */
	struct osd_op_req req;
	char oid[STORE_NAME_MAX + 1];
	uint64_t start_ms;
	/* write profile (ns): received, executed, local commit, last replica */
	uint64_t t_recv, t_start, t_exec, t_local, t_reps;
	atomic_int refs;
	struct osd_op *next;		/* pg->inflight or pg->waiting */
	struct osd_op *gnext, *gprev;	/* osd->ops_head, under ops_lock */

	bool is_write;
	bool replied;
	bool aborted;			/* its interval ended; -ESTALE sent */
	int pending;			/* local commit + replica replies */
	int result;
	uint64_t sis;			/* interval it was submitted in */
	uint64_t epoch;			/* our map epoch when it ran */
	uint64_t data_bytes;		/* write bytes (pg_kick_ops: space check) */
	bool no_space;			/* space.c said -ENOSPC: fail what grows */
	uint8_t space_tries;		/* osd_space_take's, and: */
	uint64_t space_since_ns;
	struct pg_version version;
	uint64_t obj_version;		/* reply version */

	/* outputs, one per sub-op */
	int32_t rvals[PROTO_OPS_MAX];
	void *outs[PROTO_OPS_MAX];
	uint32_t out_lens[PROTO_OPS_MAX];
	uint32_t out_crcs[PROTO_OPS_MAX];	/* a read's data crc, from the store */
	uint64_t out_crc_known;			/* bit i: out_crcs[i] is set */
	atomic_int reads_pending;

	/* writes: the object as it will be once this op is applied (a
	 * later write to the same object resolves against it) */
	bool after_exists;
	uint64_t after_size;
	struct pg_version after_version;

	/* writes: the resolved change list (points into m and into kv) */
	struct osd_mut *muts;
	uint32_t nmuts, muts_cap;
	struct pglog_entry entry;
	uint8_t oi[64];			/* encoded object info attr value */
	uint32_t oi_len;
};

/* The object info attribute: the object's version and mtime. */
#define OSD_OI_ATTR "oi"
/* User attributes are kept as "_" + name. */
#define OSD_XATTR_PREFIX '_'

/* pg.c */
void pg_set_state(struct pg *pg, uint32_t state);
/* Counts the objects and bytes of pg from its store (stats). */
void pg_count_objects(struct pg *pg);
/* Queues txn for pg; fn(arg, r) runs on the loop thread once durable. */
int pg_queue_txn(struct pg *pg, struct store_txn *txn,
		 void (*fn)(void *arg, int r), void *arg);
/* The same, but once durable done(arg) runs on the store's completion
 * thread instead (no wake-up of the loop): it may only use what is safe
 * from any thread (msg_reply, msg_free, refcounts, atomics).  A failure
 * still goes to fn(arg, r) on the loop thread. */
int pg_queue_txn_direct(struct pg *pg, struct store_txn *txn, void (*done)(void *arg),
			void (*fn)(void *arg, int r), void *arg);
bool osd_is_up(const struct osd *osd);
/* A transaction of pg failed (or a replica's did): its log in memory no
 * longer matches the store.  Answers its ops -ESTALE, re-reads info and
 * log once everything queued is done, and peers again. */
void pg_fail(struct pg *pg, int r);
/* The same for another reason (why: a sentence for the log, an error or
 * a warning): the PG peers again in the same interval. */
void pg_repeer(struct pg *pg, const char *why, bool error);

/* ops.c */
/* Runs the ops of pg that can run (after activation or a completion). */
void pg_kick_ops(struct pg *pg);
/* An op was refused: pg->waiting is full (logs, rate-limited). */
void pg_note_waiting_full(struct pg *pg, const struct msg_conn *c);
/* The interval ended: every op in flight or waiting gets -ESTALE. */
void pg_abort_ops(struct pg *pg);
void osd_op_put(struct osd_op *op);
/* The checks and translation of a write op (op->req) against an object
 * that *exists with *size bytes: op->muts (calloc'd; the caller frees it
 * and op->outs[]) gets the changes, *exists and *size what they make.
 * 0, or the first failing sub-op's error (-EFBIG past osd->object_max,
 * -EINVAL, -ENOENT, ...) with its rval set.  Reads op->osd->object_max
 * and op->osd->store, op->pg->coll and op->oid only: exec_write's path,
 * and tests/fuzz's (fuzz_osd_ops.c) without a PG or a connection. */
int osd_op_resolve(struct osd_op *op, bool *exists, uint64_t *size);
void osd_op_write_done(struct osd_op *op, int r);
/* Whether a write to oid is in flight in pg (recovery.c and backfill.c
 * copy no object while one is). */
bool pg_write_in_flight(const struct pg *pg, const char *oid);

/* replication.c */
/* Sends op's REP_OP to every other acting member; counts them in
 * op->pending. */
void pg_replicate(struct pg *pg, struct osd_op *op);

/* peering.c */
void pg_start_peering(struct pg *pg);
/* Peering's decision with what it has heard (recovery.c, after a pull). */
void pg_peering_evaluate(struct pg *pg);
/* The state of an active PG from its recovery, backfill and acting set;
 * drops the strays' copies once it is clean. */
void pg_update_active_state(struct pg *pg);
/* Asks the monitor for a temporary acting set (n = 0: none). */
void pg_request_pg_temp(struct pg *pg, const int32_t *osds, uint8_t n);

/* recovery.c (doc/recovery.md) */
struct pg_recovery;
/* The primary is behind: pull what it lacks from src (which has the
 * newest log), then evaluate peering again.  0 or -errno. */
int pg_recovery_pull(struct pg *pg, int32_t src);
/* The PG is active: bring the n members osds (at last_update from[i])
 * up to date; it goes clean when all are.  0 or -errno. */
int pg_recovery_push(struct pg *pg, const int32_t *osds, const struct pg_version *from,
		     uint32_t n);
void pg_recovery_free(struct pg *pg);
/* Whether client writes to pg must wait for its recovery: while a member
 * behind is recovered, writes go on without it once it has recorded that
 * it lacks them and the others are at least min_size (ops.c). */
bool pg_recovery_blocks_writes(const struct pg *pg);
/* Whether writes to pg skip member id (it is recovered meanwhile:
 * replication.c). */
bool pg_recovery_skips(const struct pg *pg, int32_t id);
/* A write to oid was submitted (replication.c): members recovered
 * without it get the object again. */
void pg_recovery_note_write(struct pg *pg, const char *oid);
/* Starts what pg's recovery can do now (a write it waited for is done). */
void pg_recovery_kick_pg(struct pg *pg);
/* Whether our log goes back to v (v is its tail or one of its entries). */
bool pg_log_reaches(struct pg *pg, struct pg_version v);
/* The log entries of pg with seq > after, oldest first: *v malloc'd with
 * malloc'd oids (pg_entries_free). */
int pg_read_entries(struct pg *pg, uint64_t after, struct pglog_entry **v, uint32_t *n);
void pg_entries_free(struct pglog_entry *v, uint32_t n);
/* Appends entries to pg's log and info in txn (they must follow it, gaps
 * allowed). */
int pg_entries_to_txn(struct pg *pg, const struct pglog_entry *v, uint32_t n,
		      struct store_txn *txn);

/* backfill.c (doc/recovery.md, "Backfill") */
struct pg_backfill;
/* The PG is active: bring the n up members in osds[] (outside the acting
 * set, not complete) up to date by a full scan. */
int pg_backfill_start(struct pg *pg, const int32_t *osds, uint32_t n);
void pg_backfill_free(struct pg *pg);
/* Whether every target is complete (true without a backfill). */
bool pg_backfill_complete(const struct pg *pg);
/* Starts the backfill work the free recovery slots allow (recovery.c). */
void pg_backfill_kick(struct pg *pg);
/* A write to oid was submitted (replication.c): targets that already have
 * it get it again once the write is done. */
void pg_backfill_note_write(struct pg *pg, const char *oid);
/* Member side of PGL_BACKFILL_DONE (recovery.c): adds to txn what makes
 * our log the primary's; pg's info and log in memory follow. */
int pg_backfill_take_log(struct pg *pg, const struct osd_pg_log *l, struct store_txn *txn);
/* stray.c */
/* Member side of PGQ_REMOVE (peering.c). */
void pg_remove_stray(struct pg *pg, uint64_t sis);
/* This OSD holds PGs it is not in: every few seconds it tells their
 * primaries (PGQ_STRAY), until they are gone. */
void osd_stray_check_later(struct osd *osd);
/* Primary side of PGQ_STRAY (peering.c). */
void pg_stray_notified(struct pg *pg, struct msg_conn *c);
/* Whether id is in pg's acting or up set. */
bool pg_has_member(const struct pg *pg, int32_t id);

/* pg.c */
/* Takes pg out of the table and frees it (its collection is gone). */
void osd_pg_forget(struct osd *osd, struct pg *pg);
/* Creates the PGs the current map gives us that we lack (after a stray
 * removal raced with a map that gives the PG back). */
void osd_pgs_recheck(struct osd *osd);

#endif
