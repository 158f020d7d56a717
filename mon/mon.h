/*
 * mon.h - the monitor's private state, shared by the files of mon/.
 *
 * Threads: the messenger's loop thread only queues events (mon_post);
 * the monitor thread (the program's main thread, mon_run) handles them,
 * and the raft thread (quorum.c) runs the replicated log and applies its
 * entries.  mon->lock guards every field of struct mon except the queue
 * (qlock) and what is set before the threads start: the monitor thread
 * holds it while it handles an event and releases it only while it waits
 * for a proposal (mon_quorum_propose); the raft thread takes it around
 * every state-machine callback.  So the map has one owner at a time.
 */
#ifndef ATOLL_MON_H
#define ATOLL_MON_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clog.h"
#include "entry.h"
#include "mono.h"
#include "osdmap.h"
#include "proto.h"

struct msg;
struct msg_conn;
struct msgr;
struct config;
struct mon_store;
struct dash;
struct enc;

/* Options the monitor reads (doc/daemons.md), durations in ms. */
struct mon_opts {
	uint64_t heartbeat_grace_ms;	/* osd_heartbeat_grace */
	uint64_t lease_ms;		/* osd_lease: < the grace */
	uint64_t down_out_interval_ms;	/* mon_osd_down_out_interval */
	uint32_t min_down_reporters;	/* mon_osd_min_down_reporters */
	uint64_t op_complaint_ms;	/* osd_op_complaint_time (SLOW_OPS) */
	uint32_t nearfull_ratio;	/* parts per 10,000 */
	uint32_t backfillfull_ratio;
	uint32_t full_ratio;
	uint32_t pool_default_size;
	uint32_t pool_default_min_size;	/* 0 = size - size/2 */
	uint32_t pool_default_pg_num;
	uint64_t tick_ms;		/* derived from the grace */
	uint64_t election_ms;		/* mon_election_timeout */
	uint32_t snapshot_threshold;	/* mon_snapshot_threshold (entries) */
	uint32_t drift_ppm;		/* mon_clock_drift_bound, parts per million */
	uint32_t min_map_history;	/* mon_min_map_history: epochs always kept */
	uint32_t trim_batch;		/* mon_trim_batch: trim once this many can go */
	uint64_t memory_target;		/* mon_memory_target, bytes (memcheck.c) */
	uint64_t data_min_free;		/* mon_data_min_free, bytes (diskcheck.c) */
	uint64_t clock_skew_ms;		/* auth_clock_skew (CLOCK_SKEW, clockskew.c) */
	uint32_t clog_keep;		/* mon_cluster_log_lines (clog.c) */
	uint64_t clog_interval_ms;	/* mon_cluster_log_interval */
};

/* "Not the leader (any more)": the request is answered with a MONMAP so
 * the sender goes to the leader. */
#define MON_ENOTLEADER	(-EREMCHG)

/* This monitor, as its member file says (quorum.c). */
struct mon_member {
	char name[MONMAP_NAME_MAX + 1];
	uint64_t id;			/* raft id, > 0 */
	char addr[OSDMAP_ADDR_MAX + 1];
};

/* One member as the raft configuration says, and its progress. */
struct mon_qmember {
	char name[MONMAP_NAME_MAX + 1];
	char addr[OSDMAP_ADDR_MAX + 1];
	uint64_t id;
	bool voter;
	uint64_t match;			/* last index known stored there (leader) */
	/* what it last said of its state (leader; RT_STATUS) */
	uint64_t applied, epoch, digest, status_ms;
};

/* The quorum as the raft thread last saw it (under mon->lock). */
struct mon_qview {
	int role;			/* RAFT_FOLLOWER, RAFT_CANDIDATE, RAFT_LEADER */
	uint64_t leader_id;		/* 0 = none known */
	uint64_t term, commit_index, applied_index, conf_index;
	bool ready;			/* leader, and its first barrier passed */
	uint64_t won_ms;		/* monotonic: when ready became true */
	uint64_t leader_seen_ms;	/* monotonic: last time a leader was known */
	bool changed;			/* leader/role/membership changed: the
					 * monitor thread resends MONMAPs */
	uint32_t nmembers;
	struct mon_qmember members[MONMAP_MONS_MAX];
};



/* A queued event for the monitor thread. */
enum mon_ev_type {
	MON_EV_MSG = 1,		/* a received message (owned) */
	MON_EV_CLOSED = 2,	/* a connection closed (one ref held) */
	MON_EV_CONNECTED = 3,	/* a connection came up (one ref held) */
};

struct mon_ev {
	struct mon_ev *next;
	enum mon_ev_type type;
	struct msg *m;
	struct msg_conn *c;
};

/* A connection subscribed to map updates (holds a conn reference). */
struct mon_sub {
	struct msg_conn *c;
	uint64_t sent;			/* last epoch sent to it */
};

/* A failure report about target from reporter. */
struct mon_report {
	int32_t reporter;
	int32_t target;
	uint64_t stamp_ms;		/* monotonic time it arrived */
	bool immediate;
};

/* What the monitor knows about one OSD besides the map (not persisted). */
struct mon_osd_info {
	uint64_t last_beacon_ms;	/* monotonic; 0 = never */
	uint64_t total, used, avail;	/* store bytes, from the last beacon */
	uint64_t store_errors;
	uint64_t beacon_epoch;
	uint32_t nslow;
	struct slow_op *slow;		/* malloc'd */
	bool auto_out;			/* marked out by the down-out timer */
	/* The latest time (monotonic, this monitor's clock) until which the
	 * OSD may hold a lease we granted: it counts its lease from when it
	 * sent the beacon, before we received it.  No OSD is marked down on
	 * peer reports before this has passed (doc/osd.md, "Leases"). */
	uint64_t lease_until_ms;
	bool fencing;			/* to be marked down once lease_until_ms passed */
	/* Its last boot was refused because it had seen a newer map epoch
	 * than ours (a restore of an older backup): that epoch, and when
	 * (monotonic); MON_EPOCH_BEHIND names it.  0: not refused. */
	uint64_t ahead_epoch, ahead_ms;
	/* its I/O totals at its last beacon, and when (iorate.c) */
	struct osd_io_counters io;
	uint64_t io_ms;
};

/* One PG's last report. */
struct mon_pg {
	bool reported;
	struct pg_stat st;
	int32_t reporter;
	uint64_t stamp_ms;
	/* the acting set of the last report that said active: a PG that is
	 * down waits for those OSDs (health names them) */
	uint8_t nlast_active;
	int32_t last_active[10];
};

/* A daemon's clock as its last beacon showed it (clockskew.c). */
#define MON_CLOCKS_MAX	256
struct mon_clock {
	char name[48];			/* "osd.3", "mds.a"; "" = a free slot */
	int64_t skew_ms;		/* its wall clock minus ours, at receipt */
	uint64_t seen_ms;		/* monotonic, when */
};

struct mon_pg_pool {
	uint32_t pool;
	uint32_t pg_num;
	struct mon_pg *pgs;		/* pg_num entries */
};

struct mon {
	struct config *cfg;
	struct mon_opts opts;
	uint64_t memcheck_next_ms, memcheck_warned_ms;	/* memcheck.c */
	const char *data_dir;		/* DIR (diskcheck.c) */
	struct mon_store *store;
	struct msgr *msgr;
	/* authentication (auth.c): NULL with auth = none; both outlive msgr */
	struct msg_auth *msg_auth;
	struct mon_auth *auth;
	char addr[80];			/* bound address */
	struct mon_member self;
	uint8_t fsid[16];

	pthread_mutex_t lock;		/* the state (see the top of this file) */
	pthread_cond_t pcond;		/* a proposal or barrier finished */
	struct mon_quorum *q;
	struct mon_qview qv;
	bool serving;			/* the monitor thread acted on qv.ready */
	uint64_t serving_term;		/* ... in this term */
	uint64_t digest, digest_epoch;	/* mon_state_digest() cached at an epoch */
	/* members' statuses by raft id (leader), kept across polls */
	struct { uint64_t id, applied, epoch, digest, ms; } mstat[MONMAP_MONS_MAX];

	/* the replicated request-id table: a ring, oldest first */
	struct mon_reqent reqids[MON_REQIDS_MAX];
	uint32_t nreqids, reqid_head;
	struct mon_reqid cur_reqid;	/* of the command being handled */

	/* connections from non-monitors (they get MONMAPs); refs held */
	struct msg_conn **peers;
	size_t npeers, peers_cap;

	struct osdmap *map;		/* the current map (last durable epoch) */
	/* the monitor cluster's incarnation (replicated; rebuild.c): 1 until
	 * a rebuild from one survivor; rebuild_pending: the one a rebuild
	 * asked for, proposed once this monitor leads */
	uint64_t incarnation, rebuild_pending;

	/* subscribers */
	struct mon_sub *subs;
	size_t nsubs, subs_cap;

	/* failure detection (osdmon.c) */
	struct mon_osd_info *osds;	/* OSDMAP_OSD_MAX entries */
	struct mon_report *reports;
	size_t nreports, reports_cap;

	/* pg_temp requests not yet in a map (pgtemp.c) */
	struct osd_pg_temp_req *pgt;
	uint32_t npgt, pgt_cap;

	/* the daemons' clocks (clockskew.c) */
	struct mon_clock clocks[MON_CLOCKS_MAX];

	/* PG statistics (pgstats.c) */
	struct mon_pg_pool *pgpools;
	size_t npgpools;

	/* event queue: filled by the loop thread, drained by mon_run */
	pthread_mutex_t qlock;		/* protects qhead/qtail */
	pthread_cond_t qcond;
	struct mon_ev *qhead, *qtail;
	volatile sig_atomic_t stop;
	uint64_t next_tick_ms;
	struct dash *dashboard;		/* NULL: no dashboard_addr (dashboard.c) */
	struct mon_metrics *metrics;	/* NULL: no metrics_addr (mon_metrics.c) */

	/* the cluster log (clog.c): the replicated lines, and the leader's
	 * lines not proposed yet, its next summary and the term it announced */
	struct mon_clog clog;
	struct mon_clog_entry *clog_pending;
	uint64_t clog_next_ms, clog_term;
};

/* ---- time ---- */
uint64_t mon_wall_ms(void);		/* CLOCK_REALTIME */
void mon_uuid_format(const uint8_t u[16], char out[37]);
int mon_uuid_parse(const char *s, uint8_t u[16]);

/* auth.c: with auth = ticket, the monitor's keys, ids and tickets, and
 * the messenger's msg_auth in *out (NULL with auth = none). */
struct msg_auth;
int mon_auth_setup(struct mon *mon, struct msg_auth **out, char *err, size_t errlen);
void mon_auth_free(struct mon *mon);
/* Raft thread, mon->lock held: applies buf when it is an auth entry
 * (true, *res: >= 0 or a negative errno); false: not one. */
bool mon_auth_apply(struct mon *mon, const void *buf, size_t len, int64_t *res);
/* The auth section of a snapshot: appended after the rest; restore takes
 * the bytes after the rest (none: an empty state). */
void mon_auth_state_append(struct mon *mon, struct enc *e);
int mon_auth_state_restore(struct mon *mon, const void *buf, size_t len);
/* Monitor thread, mon->lock held: the leader proposes what the auth
 * state lacks (its first state, service secrets, client id ranges). */
void mon_auth_tick(struct mon *mon);
/* Monitor thread, mon->lock held: appends e to the log (released while
 * waiting); *res is what applying it returned. */
struct mon_auth_entry;
int mon_auth_propose(struct mon *mon, const struct mon_auth_entry *e, int64_t *res);
/* Every entity of the state (mon. is not one); monitor thread, mon->lock
 * held, read only. */
struct keyring;
const struct keyring *mon_auth_entities(struct mon *mon);
/* auth_rotate_grace: seconds a rotated key is still accepted. */
uint32_t mon_auth_rotate_grace(struct mon *mon);
/* auth = ticket and the state exists (the `atoll auth` commands work). */
bool mon_auth_ready(struct mon *mon);
/* entity's caps for service ("mon", "osd", "mds"; "" when it has none):
 * 0, -ENOENT for an unknown entity, -ENAMETOOLONG when out is short.
 * Any thread. */
int mon_auth_caps(struct mon *mon, const char *entity, const char *service, char *out,
		  size_t outlen);

/* access.c: what a peer may send (doc/caps.md).  mon_access_msg checks
 * m's type against the table; false: m was refused (answered when a
 * request) and freed.  mon_access_check: 0, or -EACCES with why. */
enum mon_need;
struct msg_conn;
bool mon_access_msg(struct mon *mon, struct msg *m);
/* Whether a refusal of message type may be logged now (once a second per
 * type; a peer can repeat refusals at will). */
bool mon_access_refusal_log(uint16_t type);
int mon_access_check(struct mon *mon, struct msg_conn *c, enum mon_need need, char *why,
		     size_t whylen);

/* ---- options (main.c) ---- */
int mon_opts_load(const struct config *cfg, struct mon_opts *o, char *err, size_t errlen);
/* memcheck.c: every tick of the loop (it acts every 2 s): gives jemalloc's
 * freed pages back and warns past mon_memory_target (doc/limits.md). */
void mon_memcheck_tick(struct mon *mon);
/* diskcheck.c: the bytes free for the monitor in its data folder
 * (UINT64_MAX and a negative errno when it cannot tell), and whether a
 * command that writes (frees: a delete or a blocklist) is refused for
 * lack of space: 0, or -ENOSPC with o's status saying so. */
struct cmd_out;
int mon_disk_free(const struct mon *mon, uint64_t *avail);
int mon_disk_refuses(struct mon *mon, bool frees, struct cmd_out *o);

/* ---- store.c: LMDB persistence ---- */
/* Creates a new store in dir (dir/store must not exist). */
int mon_store_create(const char *dir, struct mon_store **out, char *err, size_t errlen);
int mon_store_open(const char *dir, struct mon_store **out, char *err, size_t errlen);
/* Removes dir's store (a --mkfs that failed half way). */
void mon_store_remove(const char *dir);
void mon_store_close(struct mon_store *s);
/* Writes inc and the full map m (of epoch inc->epoch) in one durable
 * transaction (fsync'd before it returns).  An epoch at or below the last
 * one kept is a replay: written again (the same bytes). */
int mon_store_commit(struct mon_store *s, const struct osdmap_inc *inc,
		     const struct osdmap *m);
/* The latest full map (*out owned by the caller). */
int mon_store_load_latest(struct mon_store *s, struct osdmap **out);
/* Incrementals first..last (inclusive), *incs malloc'd; caller clears. */
int mon_store_load_incs(struct mon_store *s, uint64_t first, uint64_t last,
			struct osdmap_inc **incs);
/* A restored backup's map (-ENOENT: none): the state's starting point. */
int mon_store_load_seed(struct mon_store *s, struct osdmap **out);
/* A restored backup's auth state (-ENOENT: none; *buf malloc'd, the
 * caller wipes it): the auth state's starting point. */
int mon_store_load_seed_auth(struct mon_store *s, void **buf, size_t *len);
/* A snapshot at m's epoch was installed: when the history kept here ends
 * before it, the history starts again at m (older subscribers get a full
 * map). */
int mon_store_reset(struct mon_store *s, const struct osdmap *m);
/* Drops the incrementals of epochs below first (never past the last
 * epoch) in one durable transaction; 0 when there is nothing to drop. */
int mon_store_trim(struct mon_store *s, uint64_t first);
/* Oldest epoch whose incremental is kept. */
uint64_t mon_store_first_epoch(struct mon_store *s);
/* The backup's head (store.c, "Backup file"): the full map of the last
 * epoch and the auth state auth (alen 0: none); *first..*last is the
 * history to fetch next (*first = *last + 1: none).  -ENODATA: no epoch
 * yet.  *buf malloc'd. */
int mon_store_backup_head(struct mon_store *s, const void *auth, size_t alen, void **buf,
			  size_t *len, uint64_t *first, uint64_t *last);
/* The history records from..to (at least one, then as many as fit in max
 * bytes); *next is the first epoch not included.  -ERANGE: not kept. */
int mon_store_backup_incs(struct mon_store *s, uint64_t from, uint64_t to, size_t max,
			  void **buf, size_t *len, uint64_t *next);
/* Creates dir's store from a backup file read from f (atoll-mon
 * --restore); nothing is left behind on failure. */
int mon_store_restore(const char *dir, FILE *f, char *err, size_t errlen);
/* The incarnation last applied here (1 when none was recorded). */
int mon_store_incarnation(struct mon_store *s, uint64_t *out);
int mon_store_set_incarnation(struct mon_store *s, uint64_t inc);

/* ---- quorum.c: the replicated log ---- */
struct mon_quorum;
bool mon_name_ok(const char *s);
/* The raft id of a member added at run time (not an initial one, whose
 * ids are 1..N): a hash of its name, at least 256. */
uint64_t mon_member_id(const char *name);
/* qv.role of a leader (RAFT_LEADER, without raft.h) */
#define RAFT_LEADER_STATE	3
int mon_member_load(const char *dir, struct mon_member *self, uint8_t fsid[16],
		    char *err, size_t errlen);
/* Writes DIR/raft (the first configuration: all n members, voters) and
 * DIR/member. */
int mon_quorum_mkfs(const char *dir, const struct mon_member *self,
		    const struct mon_member *all, unsigned n, const uint8_t fsid[16],
		    char *err, size_t errlen);
/* Starts the raft thread (restores the last snapshot first).  Without
 * mon->lock held. */
int mon_quorum_start(struct mon *mon, const char *dir, char *err, size_t errlen);
void mon_quorum_stop(struct mon *mon);
/* Monitor thread, mon->lock held (released while waiting): appends entry
 * to the log and waits until it is committed and applied; *result gets
 * what mon_state_apply returned.  MON_ENOTLEADER when this monitor is
 * not (or no longer) the leader. */
int mon_quorum_propose(struct mon *mon, const void *entry, size_t len, int64_t *result);
/* Same, for a read barrier: everything committed before is applied. */
int mon_quorum_barrier(struct mon *mon);
/* Same, for a membership change (one at a time) or a leadership
 * transfer: ADD makes id a spare at NAME@ADDR; STANDBY a non-voter that
 * replicates the log (it does not count for the majority; -EINVAL when it
 * is one already); PROMOTE makes it a voter once it caught up with the log
 * (-ETIMEDOUT when it did not); REMOVE takes it out; TRANSFER asks id (0:
 * any voter) to take over, returning when it did or after an election
 * timeout.  -EBUSY: another change is under way. */
enum mon_member_op { MON_MEMBER_ADD, MON_MEMBER_STANDBY, MON_MEMBER_PROMOTE,
		     MON_MEMBER_REMOVE, MON_MEMBER_TRANSFER };
int mon_quorum_member(struct mon *mon, enum mon_member_op op, uint64_t id,
		      const char *name, const char *addr);
/* transport.c */
struct raft_uv_transport;
struct uv_loop_s;
int mon_rt_create(struct raft_uv_transport *tr, struct uv_loop_s *loop, struct msgr *msgr,
		  struct mon *mon);
/* Raft thread, every poll: keeps a messenger connection to each member's
 * address (raft addresses, "NAME@IP:PORT"), and opens the streams that
 * waited for one. */
void mon_rt_tick(struct raft_uv_transport *tr, const char *const *addrs, unsigned n);
/* Sends this member's applied index, epoch, digest and wall clock to
 * address. */
int mon_rt_status(struct raft_uv_transport *tr, const char *address, uint64_t id,
		  uint64_t applied, uint64_t epoch, uint64_t digest, uint64_t wall_ms);
/* Raft thread: a member's status arrived (the leader keeps it, and notes
 * its clock: wall_ms 0 = an older member, no clock). */
void mon_quorum_peer_status(struct mon *mon, uint64_t id, uint64_t applied,
			    uint64_t epoch, uint64_t digest, uint64_t wall_ms);
void mon_rt_destroy(struct raft_uv_transport *tr);
/* Messenger thread: an MT_MON_RAFT frame (m owned), or c closed (m NULL). */
void mon_rt_post(struct msg_conn *c, struct msg *m);
/* main.c: wakes the monitor thread (the quorum view changed). */
void mon_wake(struct mon *mon);
/* main.c: the MONMAP of this monitor's view. */
void mon_monmap(struct mon *mon, struct monmap_msg *mm);
/* main.c: answers m (freed) with a MONMAP: the sender goes to the leader. */
void mon_redirect(struct mon *mon, struct msg *m);

/* ---- rebuild.c: disaster recovery from one survivor ---- */
/* atoll-mon --rebuild: DIR's member becomes a one-member quorum of a new
 * incarnation.  Returns the exit status (messages on stderr/stdout). */
int mon_rebuild(const char *dir, bool confirmed);
/* Writes DIR/rebuild: the monitor stamps incarnation inc once it leads,
 * and with bump moves the epoch once (--rebuild; --restore without). */
int mon_rebuild_mark(const char *dir, uint64_t inc, bool bump, char *err, size_t errlen);
/* do_run: reads DIR/rebuild (a pending incarnation). */
int mon_rebuild_load(struct mon *mon, const char *dir, char *err, size_t errlen);
/* The incarnation MONMAPs and quorum status say (mon->lock held). */
uint64_t mon_incarnation(struct mon *mon);
/* Monitor thread, serving, mon->lock held: proposes a pending
 * incarnation and bumps the epoch once. */
void mon_rebuild_tick(struct mon *mon);
/* Raft thread, mon->lock held: applies buf when it is an incarnation
 * entry (true, *res set); false: not one. */
bool mon_rebuild_apply(struct mon *mon, const void *buf, size_t len, int64_t *res);
/* The state's incarnation trailer (snapshots): appended by encode;
 * restore returns the length of the state before it and sets
 * mon->incarnation. */
void mon_rebuild_state_encode(struct mon *mon, struct enc *e);
size_t mon_rebuild_state_restore(struct mon *mon, const void *buf, size_t len);
/* quorum.c: forces the raft configuration in dir to self alone
 * (raft_recover); the monitor must not run. */
int mon_quorum_recover(const char *dir, const struct mon_member *self, char *err,
		       size_t errlen);
/* quorum.c, raft thread: whether raft id may open a stream to us (a
 * member of our configuration, or anyone while we have none). */
bool mon_quorum_knows(struct mon *mon, uint64_t id);
/* The leader has heard from a majority of the voters (itself included)
 * within the last election timeout, by their status reports: only then
 * does it grant or extend an OSD lease, so a leader cut off from the
 * majority stops granting within one election timeout, before libraft
 * makes it step down (doc/quorum.md, "Leases across a leader change").
 * Monitor thread, mon->lock held. */
bool mon_quorum_in_contact(struct mon *mon, uint64_t now_ms);

/* ---- mapchange.c: the replicated state machine ---- */
/* Raft thread, mon->lock held: applies one committed entry; returns the
 * epoch it made or a negative errno (-ESTALE: made against another epoch;
 * the entry changes nothing). */
int64_t mon_state_apply(struct mon *mon, const void *buf, size_t len);
/* The whole replicated state (snapshot), and back. */
void mon_state_encode(struct mon *mon, struct enc *e);
int mon_state_restore(struct mon *mon, const void *buf, size_t len);
/* A digest of the whole replicated state (equal on every member at the
 * same applied index). */
uint64_t mon_state_digest(struct mon *mon);
/* Raft thread, mon->lock held: records an applied command's request id
 * ({0, 0}: none) with the epoch it made or saw (auth entries). */
void mon_reqid_record(struct mon *mon, uint64_t client, uint64_t seq, uint64_t epoch);
/* The entry of the request-id table for id, or NULL. */
const struct mon_reqent *mon_reqid_find(struct mon *mon, const struct mon_reqid *id);

/* ---- mapchange.c: THE path of every map change ---- */
/* Takes inc (its epoch is set here to map->epoch + 1), checks that it
 * applies, and proposes it to the replicated log with the request id of
 * the command being handled; every member's apply (mon_state_apply) then
 * makes it durable, swaps it in and publishes it to its subscribers.
 * Returns once it is committed and applied here.  inc is cleared
 * (always).  Returns 0 and the new epoch in *epoch, or a negative errno
 * (MON_ENOTLEADER: not the leader; -ESTALE: the map moved meanwhile) and
 * the map is unchanged.  Monitor thread, mon->lock held. */
int mon_map_change(struct mon *mon, struct osdmap_inc *inc, uint64_t *epoch);
/* Sends the maps after have (or the full map) to c and subscribes it. */
void mon_subscribe(struct mon *mon, struct msg_conn *c, uint64_t have);
void mon_unsubscribe(struct mon *mon, struct msg_conn *c);

/* ---- osdmon.c: OSD lifecycle and failure detection ---- */
void mon_handle_osd_new(struct mon *mon, struct msg *m);
void mon_handle_osd_boot(struct mon *mon, struct msg *m);
void mon_handle_osd_beacon(struct mon *mon, struct msg *m);
void mon_handle_osd_failure(struct mon *mon, struct msg *m);
void mon_handle_osd_stopping(struct mon *mon, struct msg *m);
/* ---- pgtemp.c ---- */
/* Takes a primary's pg_temp request (kept until the flush). */
void mon_handle_osd_pg_temp(struct mon *mon, struct msg *m);
/* Puts the requests taken since the last flush into one map change. */
void mon_pg_temp_flush(struct mon *mon);
/* Periodic: down after grace, out after the interval, expiring reports. */
void mon_osd_tick(struct mon *mon);
/* ---- trim.c: the leader trims the map history (a replicated entry) ---- */
void mon_trim_tick(struct mon *mon);
/* Called when this monitor starts to lead: every OSD up in the map gets a
 * fresh grace and is assumed to hold a lease from a predecessor. */
void mon_osd_takeover(struct mon *mon);
void mon_osd_fini(struct mon *mon);
/* Marks id down in inc (copying its record from the map). */
int mon_osd_mark_down(struct mon *mon, struct osdmap_inc *inc, int32_t id);

/* ---- clockskew.c: the daemons' clocks against ours (CLOCK_SKEW) ---- */
/* who's beacon said its wall clock read wall_ms (0: an older sender,
 * nothing noted). */
void mon_clock_note(struct mon *mon, const char *who, uint64_t wall_ms);
/* Calls fn for each daemon heard from in the last MON_CLOCK_KEEP_MS
 * whose clock is off by more than auth_clock_skew; returns how many. */
#define MON_CLOCK_KEEP_MS	30000
uint32_t mon_clock_skewed(struct mon *mon, void (*fn)(void *arg, const struct mon_clock *c),
			  void *arg);

/* ---- mdsmon.c: the MDS daemons' roles (doc/fs-design.md) ---- */
/* Reads mds_beacon_grace; -EINVAL (said in err) for a bad value. */
int mon_mds_init(struct mon *mon, char *err, size_t errlen);
void mon_handle_mds_beacon(struct mon *mon, struct msg *m);
/* This monitor became the leader: forgets the beacons of earlier terms. */
void mon_mds_takeover(struct mon *mon);
/* Periodic: an active silent past the grace is fenced and replaced. */
void mon_mds_tick(struct mon *mon);

/* ---- pgstats.c ---- */
void mon_pg_update(struct mon *mon, int32_t reporter, const struct pg_stat *st,
		   uint32_t n);
/* The pool's PG table (created on demand for pools in the map); NULL
 * when the pool does not exist. */
struct mon_pg_pool *mon_pg_pool(struct mon *mon, uint32_t pool);
/* Drops tables of pools no longer in the map / whose pg_num changed. */
void mon_pg_sync(struct mon *mon);
/* State of a PG as shown to users ("unknown" when never reported;
 * stale when its reporter is down). */
uint32_t mon_pg_state(struct mon *mon, const struct mon_pg *p, bool *unknown);
void mon_pg_fini(struct mon *mon);

/* ---- health.c ---- */
struct cJSON;
/* Builds {"status", "checks": [...]}; detail fills detail lists. */
struct cJSON *mon_health(struct mon *mon, bool detail);
/* "HEALTH_OK" etc. */
const char *mon_health_status(struct mon *mon);
/* Every health code, NULL-terminated (metrics export a series for each). */
extern const char *const mon_health_codes[];

/* ---- clog.c: the cluster log (doc/quorum.md, "The cluster log") ---- */
/* Raft thread, mon->lock held: applies buf when it is a cluster log entry
 * (true, *res the last seq); false: not one. */
bool mon_clog_apply(struct mon *mon, const void *buf, size_t len, int64_t *res);
/* Raft thread: the map change inc took old to mon->map; its lines. */
void mon_clog_map_applied(struct mon *mon, const struct osdmap *old,
			  const struct osdmap_inc *inc);
/* The snapshot's cluster log section, and back (buf: the tagged
 * sections after the blob and the incarnation trailer; an older snapshot
 * without one restores an empty log). */
void mon_clog_state_append(struct mon *mon, struct enc *e);
int mon_clog_state_restore(struct mon *mon, const void *buf, size_t len);
/* Monitor thread, serving: queues a line for the next entry (nothing when
 * not the leader). */
void mon_clog_say(struct mon *mon, uint8_t sev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Monitor thread, serving: the summaries and queued lines, proposed once
 * per mon_cluster_log_interval when there is news. */
void mon_clog_tick(struct mon *mon);
void mon_clog_fini(struct mon *mon);

/* ---- commands.c ---- */
void mon_handle_command(struct mon *mon, struct msg *m);

#endif
