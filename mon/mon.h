/*
 * mon.h - the monitor's private state, shared by the files of mon/.
 *
 * Threads: the messenger's loop thread only queues events (mon_post);
 * one monitor thread (the program's main thread, mon_run) owns every
 * field of struct mon below except the queue, and does all the work:
 * commands, map changes (including the LMDB commit), health.  So no lock
 * guards the map or the statistics; the queue has its own mutex.
 */
#ifndef ATOLL_MON_H
#define ATOLL_MON_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mono.h"
#include "osdmap.h"
#include "proto.h"

struct msg;
struct msg_conn;
struct msgr;
struct config;
struct mon_store;

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
};

/* A queued event for the monitor thread. */
enum mon_ev_type {
	MON_EV_MSG = 1,		/* a received message (owned) */
	MON_EV_CLOSED = 2,	/* a connection closed (one ref held) */
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

struct mon_pg_pool {
	uint32_t pool;
	uint32_t pg_num;
	struct mon_pg *pgs;		/* pg_num entries */
};

struct mon {
	struct config *cfg;
	struct mon_opts opts;
	struct mon_store *store;
	struct msgr *msgr;
	char addr[80];			/* bound address */

	struct osdmap *map;		/* the current map (last durable epoch) */

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

	/* PG statistics (pgstats.c) */
	struct mon_pg_pool *pgpools;
	size_t npgpools;

	/* event queue: filled by the loop thread, drained by mon_run */
	pthread_mutex_t qlock;		/* protects qhead/qtail */
	pthread_cond_t qcond;
	struct mon_ev *qhead, *qtail;
	volatile sig_atomic_t stop;
	uint64_t next_tick_ms;
};

/* ---- time ---- */
uint64_t mon_wall_ms(void);		/* CLOCK_REALTIME */
void mon_uuid_format(const uint8_t u[16], char out[37]);
int mon_uuid_parse(const char *s, uint8_t u[16]);

/* ---- options (main.c) ---- */
int mon_opts_load(const struct config *cfg, struct mon_opts *o, char *err, size_t errlen);

/* ---- store.c: LMDB persistence ---- */
/* Creates a new store in dir (dir/store must not exist). */
int mon_store_create(const char *dir, struct mon_store **out, char *err, size_t errlen);
int mon_store_open(const char *dir, struct mon_store **out, char *err, size_t errlen);
void mon_store_close(struct mon_store *s);
/* Writes inc and the full map m (of epoch inc->epoch) in one durable
 * transaction (fsync'd before it returns). */
int mon_store_commit(struct mon_store *s, const struct osdmap_inc *inc,
		     const struct osdmap *m);
/* The latest full map (*out owned by the caller). */
int mon_store_load_latest(struct mon_store *s, struct osdmap **out);
/* Incrementals first..last (inclusive), *incs malloc'd; caller clears. */
int mon_store_load_incs(struct mon_store *s, uint64_t first, uint64_t last,
			struct osdmap_inc **incs);
/* Oldest epoch whose incremental is kept. */
uint64_t mon_store_first_epoch(struct mon_store *s);
/* The whole history as one blob (mon backup); *buf malloc'd. */
int mon_store_backup(struct mon_store *s, void **buf, size_t *len);
/* Creates dir's store from a backup blob (atoll-mon --restore). */
int mon_store_restore(const char *dir, const void *buf, size_t len,
		      char *err, size_t errlen);

/* ---- mapchange.c: THE path of every map change ---- */
/* Takes inc (its epoch is set here to map->epoch + 1), applies it to a
 * copy of the map, makes it durable, then swaps it in and publishes it
 * to every subscriber.  inc is cleared (always).  Returns 0 and the new
 * epoch in *epoch, or a negative errno and the map is unchanged. */
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
/* Called once at start: every OSD up in the map gets a fresh grace. */
void mon_osd_init(struct mon *mon);
void mon_osd_fini(struct mon *mon);
/* Marks id down in inc (copying its record from the map). */
int mon_osd_mark_down(struct mon *mon, struct osdmap_inc *inc, int32_t id);

/* ---- mdsmon.c: the MDS daemons' roles (doc/fs-design.md) ---- */
/* Reads mds_beacon_grace; -EINVAL (said in err) for a bad value. */
int mon_mds_init(struct mon *mon, char *err, size_t errlen);
void mon_handle_mds_beacon(struct mon *mon, struct msg *m);
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

/* ---- commands.c ---- */
void mon_handle_command(struct mon *mon, struct msg *m);

#endif
