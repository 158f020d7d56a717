/*
 * batch.h - one group commit being built by the commit thread.
 *
 * The commit thread applies the transactions of a batch one after the
 * other inside a single LMDB write transaction, collecting the data
 * writes (pending), the blocks it allocated (for undo) and the blocks it
 * freed (released only once the commit is durable and no reader can still
 * see them).  If a transaction fails, the whole attempt is thrown away and
 * the batch is applied again without it: failures are rare, and this way
 * no per-transaction rollback of the kv is needed.
 */
#ifndef ATOLL_STORE_BATCH_H
#define ATOLL_STORE_BATCH_H

#include "store-int.h"

struct pio {
	uint64_t pblk;		/* first physical block */
	uint64_t nblk;
	uint8_t *buf;		/* nblk blocks, 4 KiB aligned; owned elsewhere */
};

struct pending {
	struct pio *v;
	size_t n, cap;
};

/* The batch's small overwrites, logged in one record (wal.c).  The entry
 * layout is the one of the record's entry table on disk. */
struct walb_ent {
	uint64_t pblk;		/* the block it overwrites */
	uint64_t id;		/* object id */
	uint64_t lblk;		/* logical block in the object */
	uint32_t crc;		/* of the new content */
	uint32_t pad;
};

struct walb {
	uint64_t seq;		/* the commit sequence number this batch will get */
	uint32_t n, cap;
	struct walb_ent *ents;
	uint8_t *data;		/* n blocks of 4 KiB */
	/* The batch's attribute and omap mutations (kv log mode), encoded as
	 * in the record (wal.c: struct kvop_hdr, key, value), in op order. */
	uint8_t *kv;
	size_t kvlen, kvcap;
	uint32_t nkv;
	/* kv indexed by (database, id, key) -- a clear under an empty key:
	 * kvh[bucket] = 1 + the newest mutation there, kvent[i] its offset
	 * and 1 + the one before it in the bucket (wal.c). */
	uint32_t *kvh;
	struct walb_kvent {
		uint32_t off, prev;
	} *kvent;
	uint32_t kvecap;
	bool kvclear;		/* a clear among them */
	/* set by wal_prepare */
	uint8_t *rec;		/* the record, aligned */
	uint64_t vpos, nblocks;
};

struct batch {
	struct store *st;
	MDB_txn *txn;
	struct pending pend;
	struct runvec allocated;	/* undone if the attempt is thrown away */
	struct runvec freed;		/* to limbo once durable */
	void **bufs;			/* freed after the data I/O */
	size_t nbufs, capbufs;
	struct stats stats;		/* working copy of the counters */
	uint64_t next_id;
	uint64_t kv_used;		/* measured once per attempt, when near full */
	bool kv_measured;
	bool no_inline;			/* half the kv is in use: new data goes to blocks */
	bool changed;			/* anything to commit */
	/* Onode, attribute, omap and counter mutations go into the log
	 * record and the overlay (kvoverlay.c) rather than the kv; off: straight
	 * into the kv (the overlay is empty then, commit.c sees to it). */
	bool kvlog;
	bool ro;			/* txn is read-only (a checkpoint commits) */
	struct walb wal;
};

int batch_keep_buf(struct batch *b, void *buf);
int pending_add(struct batch *b, uint64_t pblk, uint64_t nblk, uint8_t *buf);
/* Copies block pblk from the batch's pending writes; false if absent. */
bool pending_lookup(const struct pending *p, uint64_t pblk, void *out);

/* wal.c */
bool walb_room(const struct batch *b, uint64_t k);
int walb_add(struct batch *b, uint64_t id, uint64_t lblk, uint64_t pblk,
	     const uint8_t *data, uint32_t crc);
/* Sets in chunk idx of object id (to be logged) the crc of each block's
 * newest logged content, the batch's own or the log's not yet written in
 * place: a logged small overwrite leaves the chunk record's crc as it is
 * until the checkpoint that writes the block in place, so a record built
 * from it meanwhile would carry the old crc past that checkpoint.  The
 * blocks of fresh (just given a new place, never logged there since the
 * place was freed: wal.c) keep theirs. */
void wal_chunk_crcs(struct store *st, const struct batch *b, uint64_t id, uint32_t idx,
		    struct chunk *c, uint64_t fresh);
/* Copies the batch's logged content of block pblk; false if none. */
bool walb_lookup(const struct batch *b, uint64_t pblk, void *out);
void walb_free(struct walb *wb);
/* Forgets the batch's kv mutations. */
void walb_kv_clear(struct walb *wb);
#define WALB_KH 1024u		/* buckets of walb.kvh */
/* Anything for the batch's log record? */
bool walb_any(const struct batch *b);
/* Adds a kv mutation (KVDB_*) to the batch's record: KVOP_SET (k, v),
 * KVOP_DEL (k) or KVOP_CLEAR (every attribute or omap key of the object).
 * -EOVERFLOW when the record has no room for it. */
int walb_kv_add(struct batch *b, int type, int db, uint64_t id, const void *k, size_t kl,
		const void *v, size_t vl);
/* Moves the batch's kv mutations into its kv transaction when that is
 * safe (no overlay mutation of their objects pending): 1, 0 or -errno. */
int kvo_batch_to_txn(struct batch *b);
/* Does key k of object id exist, as the batch (b, may be NULL), the
 * overlay at snapshot rseq, and then kv transaction t see it?  1, 0 or
 * -errno. */
int kvo_exists(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
	       const void *k, size_t kl, uint64_t rseq);
/* Calls fn with the key of each of the batch's own mutations (set or
 * remove) of id in db, in op order; stops at fn's first non-zero value,
 * which it returns. */
int kvo_batch_keys(const struct batch *b, int db, uint64_t id,
		   int (*fn)(void *arg, const void *k, size_t kl), void *arg);
/* Adds the batch's counters (stats, next id) to its record when they
 * changed: a replay restores them with the onodes that changed them. */
int walb_kv_meta(struct batch *b);
/* Builds the batch's record (kv: the batch also commits to the kv) at the
 * log's head into *out, for the batch's data write. */
int wal_prepare(struct store *st, struct batch *b, bool kv, struct bio_write *out);
/* The record is durable: its blocks become visible to readers of seq >=
 * b->wal.seq. */
int wal_publish(struct store *st, struct batch *b);

#endif
