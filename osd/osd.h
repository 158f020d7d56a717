/*
 * osd.h - the object storage daemon's shared state (private to osd/).
 *
 * Threading model.  Everything below that is not marked otherwise is
 * owned by the messenger's loop thread: message dispatch, map changes,
 * PG states, op queues and peering all run there and take no locks.  The
 * store's commit thread never touches that state: its completions post a
 * function to the loop with msgr_timer(.., 0, ..).  Replies to reads are
 * sent straight from the store's read thread (msg_reply is thread-safe)
 * and touch nothing else.  The main thread only starts and stops things.
 */
#ifndef ATOLL_OSD_OSD_H
#define ATOLL_OSD_OSD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "monc.h"
#include "mono.h"
#include "msg.h"
#include "osdmap.h"
#include "pglog.h"
#include "proto.h"

struct config;
struct store;
struct msg_auth;
struct pg;
struct osd_op;

#define OSD_MAP_HISTORY 64	/* recent maps kept (interval computation) */

/* The grants a replica gave one primary that the primary may still use:
 * every one since the one its last ping said it holds (space.c). */
#define OSD_GIVEN_MAX 8
struct osd_given {
	struct {
		uint64_t seq;
		uint64_t bytes;
		uint64_t recv_at;	/* recv when it was given */
		uint64_t ms;		/* when */
	} g[OSD_GIVEN_MAX];
	uint8_t n;
	uint64_t floor;		/* the most a grant dropped for room may still cover */
	uint64_t floor_seq;	/* the newest grant folded into floor */
	uint64_t floor_ms;	/* when that one was given */
	uint64_t seq;		/* the last grant's number */
	uint64_t recv;		/* write bytes received from the peer, ever */
};

/* An OSD the daemon talks to (heartbeats, replication, peering). */
struct osd_peer {
	struct msg_conn *conn;	/* dialled to the map's address */
	char addr[OSDMAP_ADDR_MAX + 1];
	uint64_t last_rx_ms;	/* last ping reply */
	uint64_t first_unanswered_ms;	/* first ping sent since last_rx */
	bool failed_reported;
	bool refused;		/* connection refused: report at once */

	/* Space grants (space.c).  As a primary: the bytes this peer last
	 * granted us and how much of it we used. */
	uint64_t grant;		/* bytes we may send it since the ask */
	uint64_t grant_asked_ns;	/* when the ping that brought it left; 0 none */
	uint64_t sent;		/* write bytes sent to it, ever (this connection) */
	uint64_t sent_at_grant;	/* sent, when the granting ping left */
	uint64_t ask_ns;	/* a grant ping in flight since then; 0 none */
	uint64_t ask_failed_ns;	/* the last such ping failed then */
	uint64_t grant_seq;	/* its number (we tell the peer we hold it) */
	uint32_t kv_scale;	/* what its kv bytes cost (osd_ping.kv_scale) */
	/* As a replica: what we granted this peer (kept across its
	 * connection's resets: it is about the peer, not the link). */
	struct osd_given given;
};

/* Messages that wait for a newer map (mapwait.c): the list and its
 * limits, per class of sender (clients; cluster peers). */
struct map_waiter;
enum { MW_CLIENT = 0, MW_PEER = 1 };
#define OSD_MAPWAIT_DEFAULT_OPS		1024u
#define OSD_MAPWAIT_DEFAULT_BYTES	(32ull << 20)	/* at most; osd_memory_target / 8 */
#define OSD_MAPWAIT_DEFAULT_PER_CONN	256u
#define OSD_MAPWAIT_DEFAULT_PER_PG	256u
#define OSD_MAPWAIT_DEFAULT_TIMEOUT_MS	30000u
#define OSD_MEMORY_TARGET_DEFAULT	(150ull * 1000 * 1000)	/* 150 MB */
struct osd_mapwait {
	struct map_waiter *head, **tail;	/* arrival order */
	uint32_t n[2];		/* parked, by class */
	uint64_t bytes[2];	/* their bytes (messages and records) */
	uint64_t timer;		/* the timeout sweep, 0 when not armed */
	uint64_t refused, expired;	/* since start */
	uint64_t refused_logged_ms;
	/* limits (atoll.conf osd_map_wait_*), each class on its own */
	uint32_t max_ops;
	uint64_t max_bytes;
	uint32_t max_per_conn;
	uint32_t max_per_pg;
	uint64_t timeout_ms;
};
/* What a parked message is: its epoch, the PG it is for, and how a
 * client's is answered when it is let go (an op: reqid; else reply_type,
 * 0 for none). */
struct osd_mapwait_key {
	uint64_t epoch;
	uint32_t pool, pg;
	bool is_op;
	const struct osd_reqid *reqid;	/* is_op; copied */
	uint16_t reply_type;
};

struct osd {
	/* set up by main, then read-only */
	struct config *conf;
	const char *data_dir;
	int32_t whoami;
	char ident[32];		/* "osd.N" */
	/* auth = ticket: a client's request ids must carry the client id of
	 * its ticket (msg_conn_peer), so no client touches another's dups */
	bool auth_on;
	/* its msg_auth (NULL with auth = none): the clock its beacons report */
	struct msg_auth *auth;
	uint8_t fsid[16];
	uint8_t uuid[16];
	char addr[OSDMAP_ADDR_MAX + 1];	/* bound */
	char host[OSDMAP_HOST_MAX + 1];
	const char *mon_host;	/* mon_host (the config holds it) */
	uint32_t weight;
	uint64_t hb_interval_ms;
	uint64_t hb_grace_ms;
	uint64_t complaint_ms;
	uint64_t object_max;
	uint32_t log_max;
	uint32_t dups_max;
	uint32_t failsafe_ratio;	/* osd_failsafe_full_ratio x 10000 */
	uint32_t rec_max;	/* osd_recovery_max_active */
	uint32_t rec_sleep_ms;	/* osd_recovery_sleep_ms: a slot rests after each object */
	uint64_t memory_target;	/* osd_memory_target (memtrim.c) */
	uint64_t memory_warned_ms;	/* memtrim.c's last warning (loop thread) */
	struct store *store;
	struct msgr *msgr;
	struct osd_metrics *metrics;	/* NULL: no metrics_addr (osd_metrics.c) */

	/* loop thread */
	struct monc *monc;	/* the monitors (lib/monc.h); any thread */
	struct osdmap *map;	/* current map, NULL before the first */
	struct osdmap *hist[OSD_MAP_HISTORY];	/* recent maps, by epoch % N */
	/* While a full map that jumps over trimmed epochs is applied: the
	 * epochs skipped, whose intervals this OSD cannot see (0, 0 otherwise;
	 * osdmap_client.c sets them around map_changed, pg.c records them in
	 * each PG as a hole: peering.c) */
	uint64_t hole_first, hole_last;
	bool booted;		/* the monitor marked us up */
	uint64_t up_epoch;	/* the epoch it did so in */
	bool boot_pending;
	uint64_t boot_sent_ms;
	/* Client ops are served only until this time (mono_now_ms): the
	 * lease the monitor grants in its answers to our beacons
	 * (heartbeat.c; doc/osd.md, "Leases"). */
	uint64_t lease_until_ms;
	bool lease_lost_logged;
	struct osd_mapwait mw;	/* mapwait.c */
	uint32_t pg_waiting_max;	/* osd_pg_max_waiting_ops (ops.c) */
	struct pg **pgs;	/* hash by pg_coll() */
	uint32_t pg_buckets;
	uint32_t npgs;
	struct pg *pg_graveyard;	/* forgotten PGs, freed at exit (pg.c) */
	bool stray_armed;	/* the stray check timer is set (backfill.c) */
	uint32_t npeers;
	struct osd_peer *peers;	/* by osd id, npeers slots */
	bool space_waiting;	/* a write waits for a space grant (space.c) */
	uint32_t inline_max;	/* osd_store_inline_max: data the kv holds */
	uint32_t kv_scale;	/* our kv bytes in 1/1024 bytes of our data area */
	uint64_t kv_used_scaled;	/* the kv's use when last read, so scaled */
	uint64_t kv_since;	/* the kv estimate of writes since then, scaled */
	uint64_t hb_timer;
	uint32_t rec_active;	/* objects being recovered (recovery.c) */
	bool rec_kicking;
	bool rec_again;		/* kick again: a slot freed during a kick */
	bool rec_retry_armed;

	/* any thread */
	atomic_bool stopping;
	atomic_bool closing;	/* shutting down: the loop leaves the store alone */
	int read_efd;		/* the store's reads signal it: the loop reaps them */
	atomic_bool local_full;	/* store used past osd_failsafe_full_ratio */
	atomic_uint_fast64_t store_errors;
	atomic_int ops_in_flight;
	atomic_uint_fast64_t inflight_bytes;	/* write bytes queued, not committed
						 * (ours and our replicas') */
	/* totals since start for the beacon (osd_io_counters, lib/proto.h):
	 * client ops answered as primary and their bytes (any thread that
	 * answers an op), recovery copies run (loop thread) */
	atomic_uint_fast64_t io_ops[2], io_bytes[2];	/* [0] read, [1] write */
	atomic_uint_fast64_t io_rec_objects, io_rec_bytes;
	pthread_mutex_t ops_lock;	/* protects the list of ops below */
	struct osd_op *ops_head;	/* every op in flight (slow op report) */
};

/* osdmap_client.c */
/* DIR/monmap: the last monitor map accepted (monmap_file.c).
 * -ENOENT when there is none, -EBADMSG when it is damaged. */
struct monmap_msg;
int osd_monmap_load(const char *dir, struct monmap_msg *mm);
int osd_monmap_save(const char *dir, const struct monmap_msg *mm);
/* The file's bytes (n of them) -> mm; -EBADMSG for anything malformed. */
int osd_monmap_file_decode(const void *buf, size_t n, struct monmap_msg *mm);
int osd_map_load(struct osd *osd);		/* DIR/osdmap at startup */
void osd_map_subscribe(struct osd *osd);
void osd_map_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
/* Frees the map messages the osd_map_delay_ms fault still holds (exit,
 * after the messenger is gone). */
void osd_map_delays_free(void);
/* The map of epoch e if still held, else NULL. */
const struct osdmap *osd_map_at(const struct osd *osd, uint64_t e);

/* mapwait.c */
void osd_mapwait_init(struct osd_mapwait *mw);
/* Holds m until the map reaches k->epoch, or lets it go at once when a
 * limit is reached: a client's is answered -EAGAIN, a cluster peer's
 * connection is closed (takes m in every case). */
void osd_map_wait(struct osd *osd, const struct osd_mapwait_key *k, struct msg_conn *c,
		  struct msg *m);
/* Whether one more message of cls from c for pool.pg (bytes) fits: 0, or
 * -EAGAIN (pure: the unit tests call it). */
int osd_mapwait_check(const struct osd_mapwait *mw, uint8_t cls, const struct msg_conn *c,
		      uint32_t pool, uint32_t pg, uint64_t bytes);
/* The map moved on: dispatches again, in arrival order, what waited. */
void osd_mapwait_wake(struct osd *osd);
/* Frees what still waits (shutdown, after the messenger is gone). */
void osd_mapwait_free(struct osd *osd);

/* main.c: messages that arrive while waiting, redispatched. */
void osd_dispatch(void *arg, struct msg_conn *c, struct msg *m);
void osd_boot(struct osd *osd);

/* pg.c */
struct pg *osd_pg_find(struct osd *osd, uint32_t pool, uint32_t pg);
int osd_pgs_load(struct osd *osd);
/* Called for every new map (prev may be NULL at startup). */
void osd_pgs_map_changed(struct osd *osd, const struct osdmap *prev,
			 const struct osdmap *cur);
void osd_pgs_free(struct osd *osd);
/* Starts peering where we are primary and have not yet (after boot). */
void osd_pgs_kick(struct osd *osd);
/* Runs the ops waiting in the PGs we are primary of (a lease came back). */
void osd_pgs_kick_ops(struct osd *osd);
/* Fills stats for the PGs we are primary of; malloc'd array. */
uint32_t osd_pgs_stats(struct osd *osd, struct pg_stat **out);
/* Posts fn(arg) to the loop thread (from any thread). */
void osd_post(struct osd *osd, void (*fn)(void *), void *arg);

/* access.c: who may send what, and what the caps of a client's ticket
 * allow (doc/caps.md).  osd_access_msg: false when m was refused (and
 * freed).  osd_access_op / osd_access_admin: 0, -EPERM (caps), or
 * -ECONNRESET when c's ticket expired (c is closed: drop the request). */
struct osd_op_req;
bool osd_access_msg(struct osd *osd, struct msg_conn *c, struct msg *m);
uint32_t osd_subop_access(uint16_t code);
int osd_access_op(struct osd *osd, struct msg_conn *c, const struct osd_op_req *req,
		  const char *pool_name);
int osd_access_admin(struct osd *osd, struct msg_conn *c, uint16_t type, uint32_t pool);

/* ops.c */
void osd_op_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
/* Answers the op req with result alone (reqid may be NULL). */
void osd_op_reply_bare(struct osd *osd, struct msg_conn *c, struct msg *req,
		       const struct osd_reqid *reqid, int result);
uint32_t osd_slow_ops(struct osd *osd, struct slow_op **out);
/* Logs where the primary's replicated writes spent their time (close). */
void osd_write_profile_log(void);

/* replication.c */
void osd_rep_op_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);

/* peering.c */
void osd_pg_query_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);

/* recovery.c */
void osd_pg_log_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
/* Tries the recovery work of every PG again in a moment. */
void osd_recovery_retry_later(struct osd *osd);
/* Starts what recovery and backfill work the free slots allow, now. */
void osd_recovery_kick(struct osd *osd);

/* backfill.c */
void osd_pg_scan_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);

/* scrub.c: MT_OSD_SCRUB (deep scrub and repair) and MT_PG_SCRUB */
void osd_scrub_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);

/* heartbeat.c */
void osd_hb_start(struct osd *osd);
/* Bytes the beacon reports used: the fuller of the store's data area and
 * its kv, in bytes of the data area. */
struct store_statfs;
uint64_t osd_used_bytes(const struct store_statfs *sf);
/* Sends a beacon now (after boot: the first lease comes with its answer). */
void osd_hb_beacon(struct osd *osd);
/* Whether we hold a lease now, i.e. may serve client ops. */
bool osd_lease_valid(struct osd *osd);
void osd_hb_map_changed(struct osd *osd);
void osd_ping_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m);
void osd_conn_closed(struct osd *osd, struct msg_conn *c, int err);
/* The connection to OSD id (dialled on demand), or NULL when it is not up. */
struct msg_conn *osd_peer_conn(struct osd *osd, int32_t id);

/* space.c: how many bytes each primary may send a replica (doc/osd.md,
 * "Space").  Loop thread. */
/* What a write costs a store: its data bytes, and an estimate of what it
 * adds to the kv (space.c says how it is made), which counts in bytes of
 * the store's data area at that store's scale (osd_used_bytes). */
struct space_need {
	uint64_t data;
	uint64_t kv;
};
/* Adds to n a write of data_len bytes of object data and kv_len bytes of
 * attribute or omap names and values. */
void osd_space_need_add(const struct osd *osd, struct space_need *n, uint64_t data_len,
			uint64_t kv_len);
/* As a replica: grants peer `to` bytes for the ping reply we are sending
 * (*seq: the grant's number, *kv_scale: osd_ping.kv_scale); held: the
 * grant its ping says it holds. */
uint64_t osd_space_give(struct osd *osd, int32_t to, uint64_t held, uint64_t *seq,
			uint32_t *kv_scale);
/* A store_statfs with the kv's use was read (heartbeat.c's beacons). */
void osd_space_note_statfs(struct osd *osd, const struct store_statfs *sf);
/* As a replica: a REP_OP that costs need came from peer `from`. */
void osd_space_received(struct osd *osd, int32_t from, const struct space_need *need);
/* Whether our store can take bytes that no grant covers (recovery). */
bool osd_space_admits(struct osd *osd, uint64_t bytes);
/* As a primary, before writing need bytes in pg: 0 (charged to every
 * replica's grant), -ENOSPC (a replica or we have no room), or -EAGAIN
 * (a grant was asked for: the op waits, osd_pgs_kick_ops when it came).
 * *since_ns: when the op arrived, at first; a grant asked since then is
 * the answer.  *tries: 0 at first (both are the op's, kept between calls). */
int osd_space_take(struct osd *osd, const struct pg *pg, const struct space_need *need,
		   uint64_t *since_ns, uint8_t *tries);
/* The same for a write flagged OSD_REQF_FULL_TRY: no grant needed, our
 * store may fill to halfway between the failsafe ratio and its end. */
int osd_space_take_reserve(struct osd *osd, const struct pg *pg, const struct space_need *need);
/* As a primary: a ping reply from peer id carried a grant. */
void osd_space_granted(struct osd *osd, int32_t id, uint64_t grant, uint64_t seq,
		       uint32_t kv_scale, uint64_t asked_ns, uint64_t sent_then, bool failed);

/* heartbeat.c: pings peer id now; its reply brings a space grant. */
int osd_hb_ping(struct osd *osd, int32_t id);
/* heartbeat.c: peer id's slot (made on demand), NULL when id is bad. */
struct osd_peer *osd_peer_slot(struct osd *osd, int32_t id);

/* peermsg.c: what every handler of a message from another OSD shares. */
/* The prologue, once the handler has decoded m from c: bad is 0, or the
 * -errno of a failed decode (-EBADMSG for a message of a kind that does
 * not come this way); epoch is the sender's map epoch.  true: go on, our
 * map is at least as new.  false: m is taken (a malformed one is logged
 * as "malformed WHAT" under subsys, answered {-EINVAL} with reply_type
 * unless that is 0, and freed; one from a newer map waits for it and is
 * dispatched again then); the handler frees what it decoded and returns. */
bool osd_peermsg_admit(struct osd *osd, struct msg_conn *c, struct msg *m, int bad,
		       uint64_t epoch, uint32_t pool, uint32_t pg, const char *subsys,
		       const char *what, uint16_t reply_type);
/* The PG a peer's message is for, or NULL with *r = -ESTALE (none, or not
 * in the sender's interval sis) or -EIO (it is being reloaded). */
struct pg *osd_peermsg_pg(struct osd *osd, uint32_t pool, uint32_t pgid, uint64_t sis, int *r);
/* Answers req with a plain {rc, epoch} message of type (our map's epoch:
 * loop thread). */
void osd_peermsg_reply_rc(struct osd *osd, struct msg_conn *c, const struct msg *req,
			  uint16_t type, int rc);
/* The same with the epoch given: from any thread. */
void osd_peermsg_reply_rc_at(struct msg_conn *c, const struct msg *req, uint16_t type, int rc,
			     uint64_t epoch);
/* The rc of a {rc, epoch} reply to a msg_call (err when there is none,
 * -EBADMSG when it is malformed); frees reply. */
int osd_peermsg_rc_take(struct msg *reply, int err);

#endif
