/*
 * osd_proto.h - the fronts of the messages OSDs send each other
 * (MT_REP_OP, MT_OSD_PING, MT_PG_QUERY; lib/proto.h leaves them to osd/).
 *
 * Each front is one versioned section (encode.h).  Decoders are bounds
 * checked, cap every count and point into the message (valid while it
 * lives); the write bytes of a REP_OP travel in the data segment,
 * concatenated in mutation order.
 */
#ifndef ATOLL_OSD_PROTO_H
#define ATOLL_OSD_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pglog.h"

struct enc;
struct dec;
struct store_txn;

/* One resolved change to the op's object.  The primary turns a client's
 * sub-ops into these (append -> write at the size it knows, write_full ->
 * truncate + write, guards checked), so that every replica applies the
 * same list and none of it can fail for a reason the primary did not
 * already see. */
enum osd_mut_kind {
	MUT_TOUCH = 1,
	MUT_WRITE = 2,		/* off, data */
	MUT_ZERO = 3,		/* off, len */
	MUT_TRUNCATE = 4,	/* off = size */
	MUT_REMOVE = 5,
	MUT_SETATTR = 6,	/* name, val */
	MUT_RMATTR = 7,		/* name */
	MUT_OMAP_SET = 8,	/* name = key, val */
	MUT_OMAP_RM = 9,	/* name = key */
	MUT_OMAP_CLEAR = 10,
};

struct osd_mut {
	uint8_t kind;
	uint64_t off;
	uint64_t len;
	const void *name;
	uint32_t name_len;
	const void *val;
	uint32_t val_len;
	const void *data;	/* MUT_WRITE: len bytes */
};

/* a compound op's kv entries (PROTO_KV_MAX) plus its other changes */
#define OSD_MUTS_MAX	(10000u + 256u)

/* Adds muts to txn for object oid in coll.  Returns 0 or the builder's
 * error (-EINVAL, -ENAMETOOLONG, -ENOMEM). */
int osd_muts_to_txn(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
		    uint64_t coll, const char *oid);
/* Where the write bytes of muts came from: a received message's data (len
 * bytes at base) and the crcs of its whole 4 KiB blocks (msg.data_bcrc;
 * NULL when unknown). */
struct osd_data_crcs {
	const uint8_t *base;
	size_t len;
	const uint32_t *bcrc;
};
/* The same, but the data of writes the store can take by reference
 * (store_write_ref_ok) goes in without a copy: hold(arg) is called for
 * each such write and release(arg) by the store once it is done with the
 * bytes (any thread).  hold NULL: every write is copied.  A write whose
 * bytes are whole blocks of dc (may be NULL) hands the store their crcs,
 * so the bytes are checksummed once on this node. */
int osd_muts_to_txn_ref(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
			uint64_t coll, const char *oid, const struct osd_data_crcs *dc,
			void (*hold)(void *arg), void (*release)(void *arg), void *arg);
/* Whether muts stay within an object of object_max bytes: -EFBIG for a
 * write or zero that ends past it (or whose off + len passes 2^64) and
 * for a truncate to more, else 0.  A replica checks a REP_OP with it
 * before the store does, so that a peer's absurd change is refused
 * rather than failing the store transaction (and with it the PG). */
int osd_muts_check(const struct osd_mut *muts, uint32_t n, uint64_t object_max);
/* Whether some write of muts can go by reference (see above). */
bool osd_muts_any_ref(const struct osd_mut *muts, uint32_t n);

/* The object info attribute (OSD_OI_ATTR, pg.h) that every change of an
 * object writes: its version and mtime.  It is read back from the store
 * (ops.c, backfill.c), where any REP_OP may have put any bytes, so the
 * decoder checks them: 0, or -EBADMSG and the like for a malformed one
 * (*oi is then 0'0, mtime 0).  An info without the mtime (its only
 * optional field) decodes with mtime 0. */
#define OSD_OI_MAX	64u	/* its encoding's bytes, at most */
struct osd_oi {
	struct pg_version version;
	uint64_t mtime_ns;
};
void osd_oi_encode(const struct osd_oi *oi, struct enc *e);
int osd_oi_decode(const void *buf, size_t len, struct osd_oi *oi);

/* REP_OP: primary -> replica. */
struct osd_rep_op {
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;			/* the primary's map epoch */
	uint64_t same_interval_since;	/* the interval the op belongs to */
	struct pglog_entry entry;	/* entry.oid is the object */
	uint32_t nmuts;
	struct osd_mut *muts;		/* decoded: malloc'd */
};
void osd_rep_op_encode(const struct osd_rep_op *r, struct enc *e);
int osd_rep_op_decode(struct dec *d, const void *data, size_t data_len,
		      struct osd_rep_op *r);
void osd_rep_op_clear(struct osd_rep_op *r);

/* Reply to REP_OP and the plain reply of the others: rc + epoch. */

/* PG_QUERY: primary -> member.  QUERY asks for the member's info (the
 * reply comes once everything the member had queued for the PG is
 * durable); ACTIVATE (one-way) tells it the PG went active with info's
 * last_epoch_started, so it may forget older past intervals. */
/* REMOVE (one-way, backfill.c): the PG is clean without the member, which
 * drops its copy unless its own map puts it back in the PG.  STRAY
 * (one-way, stray -> primary): "I hold a copy of this PG and am not in
 * it"; a clean primary answers with REMOVE. */
enum { PGQ_QUERY = 1, PGQ_ACTIVATE = 2, PGQ_REMOVE = 3, PGQ_STRAY = 4 };
struct osd_pg_query {
	uint8_t kind;
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;
	uint64_t same_interval_since;
	uint64_t last_epoch_started;	/* ACTIVATE */
};
void osd_pg_query_encode(const struct osd_pg_query *q, struct enc *e);
int osd_pg_query_decode(struct dec *d, struct osd_pg_query *q);

struct osd_pg_notify {
	int32_t rc;		/* 0, or -ENOENT: the member has no such PG */
	uint64_t epoch;
	struct pg_info info;	/* decoded: past is malloc'd (pg_info_clear) */
};
void osd_pg_notify_encode(const struct osd_pg_notify *n, struct enc *e);
int osd_pg_notify_decode(struct dec *d, struct osd_pg_notify *n);

/* OSD_PING (request and reply). */
struct osd_ping {
	int32_t from;
	uint64_t epoch;
	uint64_t stamp_ms;
	uint64_t grant;		/* reply: bytes the sender may write to us (space.c) */
	uint64_t grant_seq;	/* reply: that grant's number; request: the one held */
	uint32_t kv_scale;	/* reply: what a byte of our kv costs a grant, in
				 * 1/1024 bytes of our data area (space.c) */
};
void osd_ping_encode(const struct osd_ping *p, struct enc *e);
int osd_ping_decode(struct dec *d, struct osd_ping *p);

/* PG_LOG (recovery.c, doc/recovery.md).  GET asks a member for its log
 * entries with seq > from.seq (the reply, GET_REPLY, carries them and the
 * member's log_tail); APPLY gives a member that has every missing object
 * now the entries after its last_update (from) and last_epoch_started;
 * its reply is the plain {rc, epoch}. */
/* BACKFILL_DONE (backfill.c): a backfill target has every object as of
 * the primary's last_update; its log becomes the primary's (log_tail,
 * then the entries); reply {rc, epoch}. */
/* EXCLUDE (recovery.c): the primary means to take writes without this
 * member while it recovers it; the member records that it lacks writes
 * of this interval (pg_info.lacks_since) and answers {rc, epoch} once
 * that is durable. */
enum { PGL_GET = 1, PGL_GET_REPLY = 2, PGL_APPLY = 3, PGL_BACKFILL_DONE = 4, PGL_EXCLUDE = 5 };
#define OSD_PG_LOG_ENTRIES_MAX	1000000u
struct osd_pg_log {
	uint8_t kind;
	int32_t rc;			/* GET_REPLY */
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;
	uint64_t same_interval_since;
	struct pg_version from;
	struct pg_version log_tail;	/* GET_REPLY */
	uint64_t last_epoch_started;	/* APPLY */
	uint32_t nentries;
	struct pglog_entry *entries;	/* decoded: malloc'd, oids point
					 * into the message */
};
void osd_pg_log_encode(const struct osd_pg_log *l, struct enc *e);
int osd_pg_log_decode(struct dec *d, struct osd_pg_log *l);
void osd_pg_log_clear(struct osd_pg_log *l);

/* PG_PUSH: one chunk of one object.  PUSH (primary -> member) carries it
 * (the reply is {rc, epoch}); PULL (primary -> the member it recovers
 * from) asks for the chunk at off, and PULL_REPLY carries it.  The chunk's
 * bytes are the data segment.  FIRST: the receiver drops what it had of
 * the object and re-creates it at size with attrs and omap; DELETE: it
 * removes the object. */
enum { PGP_PUSH = 1, PGP_PULL = 2, PGP_PULL_REPLY = 3 };
#define PGP_FIRST	0x1u
#define PGP_LAST	0x2u
#define PGP_DELETE	0x4u
#define OSD_PUSH_KV_MAX	(1u << 22)
struct osd_rkv {
	const void *key;
	uint32_t klen;
	const void *val;
	uint32_t vlen;
};
struct osd_pg_push {
	uint8_t kind;
	uint8_t flags;
	int32_t rc;			/* PULL_REPLY */
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;
	uint64_t same_interval_since;
	const char *oid;		/* not NUL-terminated when decoded */
	uint32_t oid_len;
	uint64_t size;			/* the whole object's */
	uint64_t off;			/* of this chunk */
	uint32_t nattrs;
	struct osd_rkv *attrs;		/* decoded: malloc'd */
	uint32_t nomap;
	struct osd_rkv *omap;
	const void *data;		/* decoded: the message's data */
	uint64_t len;
};
void osd_pg_push_encode(const struct osd_pg_push *p, struct enc *e);
int osd_pg_push_decode(struct dec *d, const void *data, size_t data_len,
		       struct osd_pg_push *p);
void osd_pg_push_clear(struct osd_pg_push *p);

/* PG_SCAN (backfill.c): the primary asks a backfill target for the
 * objects of the PG after `after` (empty: from the start), in name order,
 * at most max of them; the reply lists them with their versions (the
 * object info, 0'0 when it has none) and says whether the listing reached
 * the end. */
enum { PGS_SCAN = 1, PGS_SCAN_REPLY = 2 };
#define OSD_PG_SCAN_MAX	4096u
struct osd_scan_obj {
	const char *oid;		/* not NUL-terminated when decoded */
	uint32_t oid_len;
	struct pg_version version;
};
struct osd_pg_scan {
	uint8_t kind;
	uint8_t end;			/* SCAN_REPLY: nothing after the last */
	int32_t rc;			/* SCAN_REPLY */
	uint32_t pool;
	uint32_t pg;
	uint64_t epoch;
	uint64_t same_interval_since;
	const char *after;		/* SCAN; not NUL-terminated */
	uint32_t after_len;
	uint32_t max;			/* SCAN: 1..OSD_PG_SCAN_MAX */
	uint32_t nobjs;			/* SCAN_REPLY, in name order */
	struct osd_scan_obj *objs;	/* decoded: malloc'd */
};
void osd_pg_scan_encode(const struct osd_pg_scan *s, struct enc *e);
int osd_pg_scan_decode(struct dec *d, struct osd_pg_scan *s);
void osd_pg_scan_clear(struct osd_pg_scan *s);

#endif
