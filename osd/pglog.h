/*
 * pglog.h - a placement group's log, its info and its index of recent
 * request ids, as kept in the PG's meta object (doc/osd.md, "PG meta
 * object").
 *
 * Every mutating op appends one log entry; the entry, the updated info
 * and the trimming that keeps the log bounded are added to the SAME store
 * transaction as the op's data, so the log never disagrees with the
 * objects after a crash.  Versions are (epoch, seq): seq grows by one per
 * entry for the life of the PG (it never restarts with a new epoch), and
 * an object's version is the seq of the entry that last changed it.
 *
 * Omap keys of the meta object:
 *   "info"          struct pg_info (versioned section)
 *   "l" + be64 seq  a log entry (struct pglog_entry)
 *   "d" + be64 seq  a dup record (struct pglog_dup): the reqid and result
 *                   of an entry trimmed from the log, kept so that a resent
 *                   op is still recognised; bounded separately.
 *
 * Threads: a struct pglog is not locked; its PG's owner (the messenger
 * loop thread) is the only one to touch it.
 */
#ifndef ATOLL_OSD_PGLOG_H
#define ATOLL_OSD_PGLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "osdmap.h"

struct enc;
struct dec;
struct store;
struct store_txn;

/* The meta object's name.  Object names starting with byte 0x01 are
 * reserved for the OSD: clients get -EINVAL for them. */
#define PG_META_OID		"\001pgmeta"
#define PG_RESERVED_PREFIX	'\001'

#define PGLOG_DEFAULT_MAX	1000u	/* log entries kept */
#define PGLOG_DEFAULT_DUPS	3000u	/* dup records kept past the log */
#define PG_PAST_INTERVALS_MAX	256u	/* decoder cap */

struct pg_version {
	uint64_t epoch;
	uint64_t seq;
};

static inline int pg_version_cmp(struct pg_version a, struct pg_version b)
{
	if (a.seq != b.seq)
		return a.seq < b.seq ? -1 : 1;
	if (a.epoch != b.epoch)
		return a.epoch < b.epoch ? -1 : 1;
	return 0;
}

enum pglog_op {
	PGLOG_MODIFY = 1,	/* the object was created or changed */
	PGLOG_DELETE = 2,	/* the object was removed */
};

struct pglog_entry {
	struct pg_version version;
	uint64_t client;	/* reqid */
	uint64_t tid;
	uint8_t op;		/* enum pglog_op */
	int32_t result;
	struct pg_version prior;	/* the object's version before */
	const char *oid;	/* decoded: points into the buffer */
	uint32_t oid_len;
};

struct pglog_dup {
	struct pg_version version;
	uint64_t client;
	uint64_t tid;
	int32_t result;
};

/* nacting 0 (with maybe_went_rw): a hole, epochs that OSD primary
 * skipped because the monitors had trimmed them (pg_interval_is_hole):
 * what happened to the PG then is unknown to it (peering.c). */
struct pg_interval {
	uint64_t first;		/* epochs [first, last] */
	uint64_t last;
	uint8_t nacting;
	int32_t acting[OSDMAP_SIZE_MAX];
	int32_t primary;
	uint8_t maybe_went_rw;
};

struct pg_info {
	uint32_t pool;
	uint32_t pg;
	struct pg_version last_update;
	struct pg_version last_complete;
	struct pg_version log_tail;	/* the version just before the oldest entry */
	uint64_t last_epoch_started;
	uint64_t same_interval_since;
	/* the acting set and primary of the current interval */
	uint8_t nacting;
	int32_t acting[OSDMAP_SIZE_MAX];
	int32_t primary;
	uint32_t npast;
	struct pg_interval *past;	/* malloc'd; oldest first */
	/* Nonzero: this copy was left out of the writes of the interval
	 * that started at this epoch while it was recovered, so it is no
	 * witness of that interval or later ones (peering.c); cleared once
	 * it is complete again (recovery.c, doc/recovery.md). */
	uint64_t lacks_since;
};

void pglog_entry_encode(const struct pglog_entry *le, struct enc *e);
int pglog_entry_decode(struct dec *d, struct pglog_entry *le);
void pglog_dup_encode(const struct pglog_dup *du, struct enc *e);
int pglog_dup_decode(struct dec *d, struct pglog_dup *du);
void pg_info_encode(const struct pg_info *info, struct enc *e);
/* info->past is malloc'd on success (pg_info_clear frees it). */
int pg_info_decode(struct dec *d, struct pg_info *info);
void pg_info_clear(struct pg_info *info);
int pg_info_copy(struct pg_info *dst, const struct pg_info *src);
/* Adds an interval (kept oldest first, at most PG_PAST_INTERVALS_MAX: the
 * oldest is dropped).  Returns 0 or -ENOMEM. */
int pg_info_add_past(struct pg_info *info, const struct pg_interval *iv);
static inline int pg_interval_is_hole(const struct pg_interval *iv)
{
	return iv->nacting == 0;
}
/* Drops past intervals that ended before epoch. */
void pg_info_prune_past(struct pg_info *info, uint64_t before);

/* Omap keys. */
#define PGLOG_KEY_LEN 9
void pglog_key(char kind, uint64_t seq, uint8_t out[PGLOG_KEY_LEN]);

/*
 * The in-memory index of the log and dup records: a ring of (reqid,
 * version, result) in seq order (gaps allowed) and a hash by reqid.  The newest
 * log_max are log entries, up to dups_max older ones dup records.
 */
struct pglog_slot {
	uint64_t client;
	uint64_t tid;
	struct pg_version version;
	int32_t result;
	int32_t hnext;		/* next slot in the hash chain, -1 ends */
};

struct pglog {
	uint32_t log_max;
	uint32_t dups_max;
	uint32_t cap;		/* log_max + dups_max */
	struct pglog_slot *ring;
	uint32_t first;		/* ring position of the oldest record */
	uint32_t count;		/* slots held (entries + dups) */
	uint32_t nbuckets;	/* power of two */
	int32_t *buckets;
};

int pglog_init(struct pglog *l, uint32_t log_max, uint32_t dups_max);
void pglog_destroy(struct pglog *l);
/* Entries currently counted as log entries / dups. */
uint32_t pglog_nlog(const struct pglog *l);
uint32_t pglog_ndups(const struct pglog *l);
/* Finds a reqid: true with *version and *result filled. */
bool pglog_find(const struct pglog *l, uint64_t client, uint64_t tid,
		struct pg_version *version, int32_t *result);
/* Loads a record read from disk (in seq order, oldest first). */
int pglog_load(struct pglog *l, uint64_t client, uint64_t tid,
	       struct pg_version v, int32_t result);

/*
 * Appends le (le->version.seq must be info->last_update.seq + 1) to the
 * index and adds to txn: the entry, the trimming (oldest entry -> dup
 * record, oldest dup removed) and the updated info.  info is updated in
 * place.  Returns 0 or a negative errno (txn builder errors; the index
 * and info are then unchanged only for -EINVAL on a bad seq).
 */
int pglog_append(struct pglog *l, struct pg_info *info, const struct pglog_entry *le,
		 struct store_txn *txn, uint64_t coll);
/* Adds "info" to txn. */
int pglog_write_info(const struct pg_info *info, struct store_txn *txn, uint64_t coll);

/* Reads info, log and dups of the PG in coll from st (at startup).
 * -ENOENT when the collection has no meta object. */
int pglog_read(struct store *st, uint64_t coll, struct pg_info *info, struct pglog *l);

#endif
