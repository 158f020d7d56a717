/*
 * proto.h - the messages atoll's programs exchange, and their encodings.
 *
 * Message types 1..9 belong to the messenger (msg.h: the hello).  The
 * front of every message below is one versioned section (encode.h), so a
 * newer sender may append fields that an older receiver skips.  Bulk
 * bytes (object data) travel in the message's data segment, never in the
 * front.  Decoders are bounds-checked, point into the message's buffer
 * (no copies; valid while the message lives) and cap every count.
 *
 * Who talks to whom:
 *   client/osd -> mon  SUBSCRIBE, COMMAND, OSD_NEW, OSD_BOOT, OSD_BEACON,
 *                      OSD_FAILURE, OSD_STOPPING
 *   mds -> mon         MDS_BEACON
 *   mon -> client/osd  MAP (one-way, pushed to subscribers), MONMAP
 *   mon <-> mon        RAFT (front owned by mon/, opaque here)
 *   client -> osd      OSD_OP (reply: OSD_OP | MSG_F_REPLY)
 *   osd -> osd         REP_OP, OSD_PING, PG_QUERY, ... (fronts defined by
 *                      osd/, opaque here)
 */
#ifndef ATOLL_PROTO_H
#define ATOLL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osdmap.h"

struct enc;
struct dec;
struct osdmap;
struct osdmap_inc;

enum msg_type {
	/* 1..9: messenger (MSG_T_HELLO = 1) */
	MT_MON_SUBSCRIBE = 10,
	MT_MON_MAP = 11,
	MT_MON_COMMAND = 12,
	MT_OSD_NEW = 13,
	MT_OSD_BOOT = 14,
	MT_OSD_BEACON = 15,
	MT_OSD_FAILURE = 16,
	MT_OSD_STOPPING = 17,
	MT_OSD_PG_TEMP = 18,
	MT_MON_MONMAP = 19,	/* mon -> anyone: the monitors and the leader */
	MT_MON_RAFT = 20,	/* mon <-> mon: the replicated log (mon/) */
	MT_OSD_OP = 30,
	/* 31..59: between OSDs, fronts owned by osd/ */
	MT_REP_OP = 31,
	MT_OSD_PING = 32,
	MT_PG_QUERY = 33,
	MT_PG_LOG = 34,
	MT_PG_PUSH = 35,
	MT_PG_SCAN = 36,
	MT_OSD_SCRUB = 40,	/* anyone -> primary: deep scrub (scrub_proto.h) */
	MT_PG_SCRUB = 41,	/* primary -> member: its scrub map */
	MT_OSD_PG_QUERY = 42,	/* anyone -> primary: `atoll pg query` (scrub_proto.h) */
	/* 60..79: MDS (file-system issue); the fronts of the client<->MDS
	 * messages are posixfs/mds_proto.h's, this one is the monitor's */
	MT_MDS_BEACON = 66,	/* mds -> mon: alive, and which role it holds */
};

/* Caps every decoder applies (doc/protocol.md, "Limits"). */
#define PROTO_OID_MAX		400u		/* object name bytes */
#define PROTO_XATTR_NAME_MAX	255u
#define PROTO_OMAP_KEY_MAX	400u
#define PROTO_OPS_MAX		64u		/* sub-ops in one compound op */
#define PROTO_KV_MAX		10000u		/* key/value entries per op */
#define PROTO_SNAPS_MAX		1024u
#define PROTO_COMMAND_MAX	(1u << 20)	/* JSON of one command */
#define PROTO_MAPS_MAX		512u		/* incrementals in one MAP */

/* ---- monitor ------------------------------------------------------- */

/* SUBSCRIBE: "send me every epoch after have, now and whenever one is
 * made"; have = 0 asks for a full map.  The monitor answers with MAP
 * messages on the same connection for as long as it stays open. */
struct mon_subscribe {
	uint64_t have;
};
void mon_subscribe_encode(const struct mon_subscribe *s, struct enc *e);
int mon_subscribe_decode(struct dec *d, struct mon_subscribe *s);

/* MAP: optionally a full map, then incrementals first..last in order
 * (each taking epoch-1 to epoch).  A receiver applies the full map if it
 * is newer than its own, then every incremental that follows its epoch.
 * The decoded form owns its maps (free with mon_map_msg_clear). */
struct mon_map_msg {
	struct osdmap *full;		/* NULL when absent */
	uint32_t ninc;
	struct osdmap_inc *incs;
	/* appended in 0.3 (0 from an older monitor): the oldest epoch whose
	 * incremental the monitor still keeps.  A subscriber that gets a
	 * full map past a gap learns from it whether the epochs in between
	 * are gone (trimmed: it cannot see the intervals they made) or can
	 * still be asked for (doc/quorum.md, "Trimming the map history"). */
	uint64_t first;
};
void mon_map_msg_encode(const struct osdmap *full, const struct osdmap_inc *incs,
			uint32_t ninc, uint64_t first, struct enc *e);
int mon_map_msg_decode(struct dec *d, struct mon_map_msg *out);
void mon_map_msg_clear(struct mon_map_msg *m);

/* COMMAND: a JSON object {"prefix": "pool create", ...args...,
 * "format": "json"|"plain"} (doc/cli.md lists them).  The reply carries
 * rc (0 or negative errno), status (one sentence for the user, may be
 * empty) and output (JSON when format is json, text otherwise; for
 * "mon backup" the binary backup). */
/* A request id: the sender's random id and its own sequence number.
 * A monitor keeps the ids of the mutating commands it applied in its
 * replicated state, so a command resent (e.g. across a leader change)
 * with the same id is answered, not applied twice.  {0, 0} = none. */
struct mon_reqid {
	uint64_t client;
	uint64_t seq;
};
struct mon_command_reply {
	int32_t rc;
	const char *status;
	const void *out;
	uint32_t out_len;
};
/* id may be NULL (no request id). */
void mon_command_encode(const char *json, const struct mon_reqid *id, struct enc *e);
/* *json is malloc'd (cap PROTO_COMMAND_MAX); caller frees it.  id (may be
 * NULL) gets the request id, {0, 0} when the sender gave none. */
int mon_command_decode(struct dec *d, char **json, struct mon_reqid *id);
void mon_command_reply_encode(const struct mon_command_reply *r, struct enc *e);
/* status is copied into a malloc'd string the caller frees; out points
 * into the message. */
int mon_command_reply_decode(struct dec *d, struct mon_command_reply *r, char **status);

/* MONMAP: who the monitors are and which one leads.  A monitor sends it
 * one-way (tid 0) on every connection from a non-monitor as soon as the
 * handshake completes, and again when the leader or the membership
 * changes.  A monitor that does not serve a request (a follower asked
 * for a command or an OSD message, or a member that knows no leader)
 * answers it with a MONMAP reply (MSG_F_REPLY, the request's tid); the
 * sender resends the request to the leader it names, or hunts among the
 * members when leader is -1.  A receiver ignores a MONMAP of another
 * fsid, or of an older incarnation than one it has seen (a monitor
 * cluster rebuilt from one survivor stamps a new incarnation; the old
 * quorum, if it comes back, is refused). */
#define MONMAP_MONS_MAX		15
#define MONMAP_NAME_MAX		31	/* name bytes: [A-Za-z0-9_-] */
struct monmap_member {
	char name[MONMAP_NAME_MAX + 1];
	char addr[OSDMAP_ADDR_MAX + 1];	/* "ip:port" */
	uint64_t id;			/* the member's raft id, > 0 */
	bool voter;			/* false: joining, not yet caught up */
};
struct monmap_msg {
	uint8_t fsid[16];
	uint64_t incarnation;		/* > 0 */
	uint64_t epoch;			/* membership version, > 0 */
	uint64_t term;			/* the sender's raft term */
	int32_t leader;			/* index into mons; -1 = none known */
	int32_t self;			/* the sender's index; -1 = not a member */
	uint32_t nmons;			/* 1..MONMAP_MONS_MAX */
	struct monmap_member mons[MONMAP_MONS_MAX];
};
void monmap_msg_encode(const struct monmap_msg *m, struct enc *e);
/* Checks every field (names, addresses, indexes in range, ids unique). */
int monmap_msg_decode(struct dec *d, struct monmap_msg *m);

/* MDS_BEACON (a call, every mds_beacon_interval): an atoll-mds is alive
 * and serves, or waits to serve, the file system of the pools meta_pool
 * and data_pool.  The monitor keeps one record per instance in the map
 * (struct osdmap_mds): the first of a file system gets the active role,
 * the others are standbys; an active that stops beaconing for
 * mds_beacon_grace is blocklisted and a standby promoted in one map
 * change (doc/fs-design.md, "Standby MDS daemons").  Reply: struct
 * rc_reply: rc 0 and the epoch of the map that holds the sender's record
 * as it is now (its role), -ESTALE for an instance the map blocklists
 * (fenced: it must never write again; it starts over as a new instance),
 * -ENOENT for a pool that does not exist, -EINVAL for a malformed one. */
#define MDS_BEACON_F_STOPPING	0x1u	/* a clean stop: give the role away now */
enum mds_beacon_state {		/* what the sender does (shown by fs status) */
	MDS_BEACON_STANDBY = 1,		/* waits for the role */
	MDS_BEACON_REPLAYING = 2,	/* granted: replays the journal */
	MDS_BEACON_RECONNECT = 3,	/* granted: the clients' reconnect window */
	MDS_BEACON_ACTIVE = 4,		/* serves */
};
struct mds_beacon {
	uint64_t instance;		/* its client id, > 0 */
	char name[OSDMAP_MDS_NAME_MAX + 1];	/* [A-Za-z0-9_-], 1..31 bytes */
	char addr[OSDMAP_ADDR_MAX + 1];	/* where it serves once active */
	uint32_t meta_pool, data_pool;
	uint32_t flags;			/* MDS_BEACON_F_* */
	uint8_t state;			/* enum mds_beacon_state */
	uint64_t epoch;			/* the sender's map epoch */
	/* its place in the journal (segment, sequence number): an active's
	 * last journaled entry, a standby's last one followed (optional:
	 * 0 from an older MDS) */
	uint64_t jseg, jseq;
	/* the sender's wall clock, ms since the epoch, when it sent this
	 * (0 from an older MDS): the monitors' CLOCK_SKEW */
	uint64_t wall_ms;
};
void mds_beacon_encode(const struct mds_beacon *b, struct enc *e);
/* Refuses a bad name, an empty address, instance 0, an unknown state. */
int mds_beacon_decode(struct dec *d, struct mds_beacon *b);

/* OSD_NEW: allocates an id for a new OSD (atoll-osd --mkfs).  The same
 * uuid asked twice gets the same id; want_id >= 0 asks for that id (a
 * replaced disk keeping its id).  Reply: rc, id, and the cluster fsid. */
struct osd_new_req {
	uint8_t uuid[16];
	int32_t want_id;
};
struct osd_new_reply {
	int32_t rc;
	int32_t id;
	uint8_t fsid[16];
};
void osd_new_req_encode(const struct osd_new_req *r, struct enc *e);
int osd_new_req_decode(struct dec *d, struct osd_new_req *r);
void osd_new_reply_encode(const struct osd_new_reply *r, struct enc *e);
int osd_new_reply_decode(struct dec *d, struct osd_new_reply *r);

/* OSD_BOOT: an OSD asks to be marked up at addr.  Reply: rc (-EINVAL for
 * an unknown id or a uuid that does not match the id, with a status
 * sentence) and the epoch in which it is up. */
struct osd_boot_req {
	int32_t id;
	uint8_t uuid[16];
	char addr[64];
	char host[64];
	uint32_t weight;		/* 16.16; 0 = keep the map's weight */
	uint64_t features;
	uint64_t have_epoch;
};
struct osd_boot_reply {
	int32_t rc;
	uint64_t epoch;
	char status[256];
};
void osd_boot_req_encode(const struct osd_boot_req *r, struct enc *e);
int osd_boot_req_decode(struct dec *d, struct osd_boot_req *r);
void osd_boot_reply_encode(const struct osd_boot_reply *r, struct enc *e);
int osd_boot_reply_decode(struct dec *d, struct osd_boot_reply *r);

/* PG states: one list for all of atoll (doc/recovery.md, "PG states while healing"). */
#define PG_ST_CREATING		(1u << 0)
#define PG_ST_PEERING		(1u << 1)
#define PG_ST_ACTIVE		(1u << 2)
#define PG_ST_CLEAN		(1u << 3)
#define PG_ST_DEGRADED		(1u << 4)
#define PG_ST_UNDERSIZED	(1u << 5)
#define PG_ST_REMAPPED		(1u << 6)
#define PG_ST_RECOVERING	(1u << 7)
#define PG_ST_BACKFILLING	(1u << 8)
#define PG_ST_DOWN		(1u << 9)
#define PG_ST_INCOMPLETE	(1u << 10)
#define PG_ST_STALE		(1u << 11)
#define PG_ST_INCONSISTENT	(1u << 12)
#define PG_ST_INACTIVE		(1u << 13)
/* Writes "active+clean" etc. into buf; returns buf. */
char *pg_state_str(uint32_t state, char *buf, size_t len);

/* A PG's report, in an OSD's beacon (the primary reports its PGs). */
#define PG_STAT_BAD_MAX		2	/* inconsistent copies named per PG */
#define PG_STAT_OID_MAX		95	/* their names, cut (pg query has them whole) */
struct pg_stat {
	uint32_t pool;
	uint32_t pg;
	uint32_t state;			/* PG_ST_* */
	uint64_t objects;
	uint64_t bytes;			/* logical bytes */
	uint64_t last_update_epoch;
	uint64_t last_update_seq;
	uint8_t nacting;
	int32_t acting[10];
	/* beacon v2 (zero from a v1 sender): recovery and scrub */
	uint64_t degraded;		/* object copies acting members lack */
	uint64_t misplaced;		/* copies still to backfill elsewhere */
	uint64_t unfound;		/* objects no member has a good copy of */
	uint64_t recovered;		/* objects copied so far (grows; rate) */
	uint64_t last_epoch_started;	/* the epoch it last went active */
	uint64_t last_scrub;		/* wall clock seconds, 0 = never */
	uint64_t last_deep_scrub;
	uint32_t scrub_errors;		/* left unrepaired by the last scrub */
	uint8_t nbad;			/* the first of them */
	struct pg_stat_bad {
		int32_t osd;
		uint8_t kind;		/* enum scrub_kind (scrub_proto.h) */
		char oid[PG_STAT_OID_MAX + 1];
	} bad[PG_STAT_BAD_MAX];
	/* beacon v3 (zero from an older sender): the newest map epoch at
	 * which the PG was active+clean; the monitors trim the map history
	 * only below the oldest of them (doc/quorum.md) */
	uint64_t last_epoch_clean;
};

/* An op slower than the OSD's complaint time. */
struct slow_op {
	uint32_t pool;
	uint32_t pg;
	uint32_t age_ms;
	char desc[128];			/* "write 'obj' from client.N" */
};

/* An OSD's totals since it started, in its beacon (v5; zero from an
 * older sender): client ops it answered as primary and the bytes they
 * read and wrote, and the whole-object copies it ran for recovery,
 * backfill and repair.  The monitor derives the cluster's client I/O
 * and recovery rates from their growth between beacons. */
struct osd_io_counters {
	uint64_t read_ops, write_ops;
	uint64_t read_bytes, write_bytes;
	uint64_t recovery_objects, recovery_bytes;
};

/* OSD_BEACON (a call, every osd_heartbeat_interval): the OSD is alive,
 * how full it is, its PGs' states, its slow ops and store errors.  The
 * monitor takes it as the OSD's heartbeat, and answers with the OSD's
 * lease (struct osd_lease): an OSD serves client ops only while it holds
 * one (doc/osd.md, "Leases"). */
struct osd_beacon {
	int32_t id;
	uint64_t epoch;			/* the OSD's map epoch */
	uint64_t total;			/* store bytes */
	uint64_t used;
	uint64_t avail;
	uint64_t store_errors;		/* crc/EIO errors seen */
	uint32_t npg;
	struct pg_stat *pgs;		/* decoded: malloc'd, caller frees */
	uint32_t nslow;
	struct slow_op *slow;		/* decoded: malloc'd, caller frees */
	/* v4 (0 from an older sender): its wall clock, ms since the epoch,
	 * when it sent the beacon: the monitors' CLOCK_SKEW */
	uint64_t wall_ms;
	struct osd_io_counters io;	/* v5 */
};
void osd_beacon_encode(const struct osd_beacon *b, struct enc *e);
int osd_beacon_decode(struct dec *d, struct osd_beacon *b);
void osd_beacon_clear(struct osd_beacon *b);

/* The monitor's answer to a beacon.  rc 0: the OSD may serve client ops
 * for lease_ms, counted from when it sent the beacon; rc -ESTALE: no
 * lease (the OSD is down in the map, or about to be marked down). */
struct osd_lease {
	int32_t rc;
	uint64_t epoch;			/* the monitor's map epoch */
	uint32_t lease_ms;
};
void osd_lease_encode(const struct osd_lease *l, struct enc *e);
int osd_lease_decode(struct dec *d, struct osd_lease *l);

/* OSD_FAILURE (one-way): reporter has not heard from target for
 * failed_for_ms, or (immediate) its connection was refused. */
struct osd_failure {
	int32_t reporter;
	int32_t target;
	uint64_t epoch;
	uint32_t failed_for_ms;
	uint8_t immediate;
};
void osd_failure_encode(const struct osd_failure *f, struct enc *e);
int osd_failure_decode(struct dec *d, struct osd_failure *f);

/* OSD_STOPPING: the OSD stops cleanly (SIGTERM) and asks to be marked
 * down now; reply: rc, the epoch in which it is down. */
struct osd_stopping {
	int32_t id;
	uint64_t epoch;
};
void osd_stopping_encode(const struct osd_stopping *s, struct enc *e);
int osd_stopping_decode(struct dec *d, struct osd_stopping *s);

/* OSD_PG_TEMP (one-way): the primary of a PG in map epoch asks for a
 * temporary acting set (n OSDs, the first its primary) while members of
 * the PG's up set are backfilled; n = 0 asks to drop the entry.  The
 * monitor takes it only from a connection of that OSD, and only while the
 * OSD is still the PG's primary (doc/recovery.md). */
struct osd_pg_temp_req {
	int32_t from;
	uint64_t epoch;
	uint32_t pool;
	uint32_t pg;
	uint8_t n;
	int32_t osds[10];		/* OSDMAP_SIZE_MAX */
};
void osd_pg_temp_req_encode(const struct osd_pg_temp_req *q, struct enc *e);
int osd_pg_temp_req_decode(struct dec *d, struct osd_pg_temp_req *q);

/* Plain reply {i32 rc; u64 epoch} for STOPPING and similar. */
struct rc_reply {
	int32_t rc;
	uint64_t epoch;
};
void rc_reply_encode(const struct rc_reply *r, struct enc *e);
int rc_reply_decode(struct dec *d, struct rc_reply *r);

/* ---- client <-> OSD: OSD_OP ---------------------------------------- */

enum osd_opcode {
	OSD_OP_READ = 1,		/* off, len -> out: the bytes (short at EOF) */
	OSD_OP_STAT = 2,		/* -> out: u64 size, u64 mtime_ns, u64 version */
	OSD_OP_WRITE = 3,		/* off, data */
	OSD_OP_WRITE_FULL = 4,		/* data replaces the whole object */
	OSD_OP_APPEND = 5,		/* data at the current end */
	OSD_OP_TRUNCATE = 6,		/* off = new size */
	OSD_OP_ZERO = 7,		/* off, len */
	OSD_OP_REMOVE = 8,
	OSD_OP_CREATE = 9,		/* flags OSD_OPF_EXCL: -EEXIST if it exists */
	OSD_OP_GETXATTR = 10,		/* name -> out: value */
	OSD_OP_GETXATTRS = 11,		/* -> out: kv list (name, value) */
	OSD_OP_SETXATTR = 12,		/* name, val */
	OSD_OP_RMXATTR = 13,		/* name */
	OSD_OP_CMPXATTR = 14,		/* name, val, off = enum osd_cmp;
					 * false -> -ECANCELED */
	OSD_OP_ASSERT_VERSION = 15,	/* off = version; differs -> -ERANGE */
	OSD_OP_ASSERT_EXISTS = 16,	/* missing -> -ENOENT */
	OSD_OP_OMAP_GET = 17,		/* name = start after (exclusive), len =
					 * max entries -> out: kv list + u8 more */
	OSD_OP_OMAP_GET_KEYS = 18,	/* kv = keys -> out: kv list of found */
	OSD_OP_OMAP_SET = 19,		/* kv = entries */
	OSD_OP_OMAP_RM = 20,		/* kv = keys */
	OSD_OP_OMAP_CLEAR = 21,
	OSD_OP_LIST = 22,		/* PG-level: name = start after, len = max
					 * -> out: name list + u8 more */
};
#define OSD_OPF_EXCL		0x1u
/* osd_subop.flags for writes */
#define OSD_OPF_FUA		0x2u	/* (always durable; kept for NBD) */

enum osd_cmp {
	OSD_CMP_EQ = 1,
	OSD_CMP_NE = 2,
	OSD_CMP_GT = 3,
	OSD_CMP_GE = 4,
	OSD_CMP_LT = 5,
	OSD_CMP_LE = 6,
};

/* True for the op codes that change the object. */
bool osd_op_is_write(uint16_t code);

struct osd_kv {
	const void *key;
	uint32_t klen;
	const void *val;		/* NULL for key-only lists */
	uint32_t vlen;
};

struct osd_subop {
	uint16_t code;			/* enum osd_opcode */
	uint16_t flags;			/* OSD_OPF_* */
	uint64_t off;
	uint64_t len;
	const void *name;		/* xattr name / start-after key */
	uint32_t name_len;
	const void *val;		/* xattr value / compare value */
	uint32_t val_len;
	uint32_t nkv;
	struct osd_kv *kv;
	const void *data;		/* write bytes: in the message's data */
	uint32_t data_len;
	/* reply side */
	int32_t rval;
	const void *out;		/* in the reply's data segment */
	uint32_t out_len;
};

struct osd_reqid {
	uint64_t client;		/* the client's random 64-bit id */
	uint64_t tid;			/* its own counter; the same for a resend */
};

struct osd_op_req {
	struct osd_reqid reqid;
	uint64_t epoch;			/* the sender's map epoch */
	uint32_t pool;
	uint32_t pg;
	uint32_t flags;			/* OSD_REQF_* */
	const char *oid;		/* decoded: points into the message */
	uint32_t oid_len;
	uint64_t snap_seq;		/* snapshot context (images issue) */
	uint32_t nsnaps;
	const uint64_t *snaps;		/* decoded: malloc'd copy */
	uint32_t nops;
	struct osd_subop *ops;		/* decoded: malloc'd array */
};
#define OSD_REQF_RESEND		0x1u	/* a retry of an op sent before */
#define OSD_REQF_FULL_TRY	0x2u	/* may write into the space kept for
					 * metadata on a full cluster (the MDS's
					 * journal: doc/osd.md, "Space") */

/* Encodes req: its front into e and every subop's data concatenated in
 * order into *data (len *data_len; malloc'd unless it would be a single
 * subop's bytes, in which case *data points at them and *data_owned is
 * false - lets a 4 MiB write go out without a copy). */
int osd_op_req_encode(const struct osd_op_req *req, struct enc *e,
		      const void **data, size_t *data_len, bool *data_owned);
/* Decodes the front and attaches each subop's bytes from data/len.
 * Frees nothing on error; osd_op_req_clear() always. */
int osd_op_req_decode(struct dec *d, const void *data, size_t data_len,
		      struct osd_op_req *req);
void osd_op_req_clear(struct osd_op_req *req);

struct osd_op_reply {
	struct osd_reqid reqid;
	int32_t result;			/* 0 or the first failing op's errno */
	uint64_t version;		/* the object's version after the op */
	uint64_t epoch;			/* the OSD's map epoch (-ESTALE: newer) */
	uint32_t nops;
	int32_t *rvals;			/* decoded: malloc'd */
	uint32_t *out_lens;		/* decoded: malloc'd */
	/* encode side: the outputs, in op order, concatenated into data */
};
void osd_op_reply_encode(const struct osd_op_reply *r, struct enc *e);
int osd_op_reply_decode(struct dec *d, size_t data_len, struct osd_op_reply *r);
void osd_op_reply_clear(struct osd_op_reply *r);

/* kv lists in op outputs (GETXATTRS, OMAP_GET*, LIST): u32 n, then n x
 * (blob key, blob value), then u8 more. */
void osd_kvlist_encode_begin(struct enc *e, uint32_t n);
void osd_kvlist_encode_one(struct enc *e, const void *k, uint32_t klen,
			   const void *v, uint32_t vlen);

/* Collection id of a PG in an OSD's store. */
static inline uint64_t pg_coll(uint32_t pool, uint32_t pg)
{
	return ((uint64_t)pool << 32) | pg;
}

#endif
