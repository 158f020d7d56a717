/*
 * wal-int.h - what the write-ahead log's files share: wal.c (records, the
 * index of logged blocks, replay, fsck), kvoverlay.c (the overlay of
 * logged kv mutations) and checkpoint.c (the checkpoint and its thread).
 */
#ifndef ATOLL_STORE_WAL_INT_H
#define ATOLL_STORE_WAL_INT_H

#include "batch.h"

/* One logged version of a block: in the index (wal.c). */
struct wal_ent {
	struct wal_ent *hnext;		/* hash bucket (newest versions only) */
	struct wal_ent *newer, *older;	/* versions of the same block */
	struct wal_ent *lnext;		/* live list (lsn order) or retired list */
	uint64_t pblk, id, lblk;
	uint64_t seq, lsn, end;
	uint32_t crc;
	bool bad;			/* content lost (damaged record) */
	/* The block: a block-aligned buffer of its own (wal_ent_new), so that
	 * a checkpoint writes it in place from here with O_DIRECT. */
	uint8_t *data;
};

/* A kv mutation in a record: this header (little-endian), the key, the
 * value (KVOP_SET only). */
struct kvop_hdr {
	uint8_t type;		/* KVOP_SET, KVOP_DEL, KVOP_CLEAR */
	uint8_t db;		/* KVDB_ATTR .. KVDB_META */
	uint16_t klen;
	uint32_t vlen;
	uint64_t id;		/* object id; collection (onodes); 0 (counters) */
};

_Static_assert(sizeof(struct kvop_hdr) == 16, "kv mutation layout");

/* An overlay entry: one logged kv mutation. */
struct kvo_op {
	struct kvo_op *onext, *oprev;	/* the object's mutations, lsn order */
	struct kvo_op *knext, *kprev;	/* its key's bucket, newest first */
	struct kvo_op *lnext;		/* live list (lsn order) or retired list */
	struct kvo_obj *obj;
	uint64_t id, seq, lsn, end;
	uint64_t ord;			/* order among all mutations */
	uint32_t kbucket;
	uint8_t type, db;
	uint16_t klen;
	uint32_t vlen;
	uint8_t data[];			/* key, then value */
};

struct kvo_obj {
	struct kvo_obj *hnext;
	uint64_t id;
	struct kvo_op *head, *tail;
};

#define OHASH_BITS 12u
#define KHASH_BITS 16u

/* The hash of key k of id in database db (a clear's key is empty), for
 * the overlay's and the batch's indexes. */
uint32_t kvo_hash(int db, uint64_t id, const void *k, size_t kl);
/* The oldest snapshot a reader still holds (UINT64_MAX: none). */
uint64_t wal_oldest_reader(struct store *st);
/* Removes a retired mutation for good (w->lock held). */
void kvo_unlink(struct wal *w, struct kvo_op *o);
/* Adds a record's kv mutations to the overlay: all of them or none. */
int kvo_publish(struct wal *w, const uint8_t *p, size_t len, uint32_t nkv, uint64_t seq,
		uint64_t lsn);
void wal_ckpt_clear(struct ckpt *ck);
/* An index entry with its block buffer (from the pool of freed ones when
 * it has any), and its release; w->lock need not be held. */
struct wal_ent *wal_ent_new(struct wal *w);
void wal_ent_free(struct wal *w, struct wal_ent *e);

#endif
