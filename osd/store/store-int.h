/*
 * store-int.h - internals of the store engine shared between its files.
 *
 * Layout of a store (doc/store-format.md says it in full):
 *  - the block: block 0 holds the superblock; blocks [data_start, nblocks)
 *    are the data area, handed out by the allocator in 4 KiB blocks;
 *  - the kv (LMDB) with named databases meta, colls, onodes, chunks,
 *    attrs, omap.  Every value starts with a crc32c of the rest.
 *
 * An object's data is either inline (kept in its onode, for small
 * objects) or split into chunks of 64 blocks (256 KiB); each chunk has one
 * kv record that maps its blocks to physical blocks with a crc32c each,
 * or points at one lz4-compressed run.
 */
#ifndef ATOLL_STORE_INT_H
#define ATOLL_STORE_INT_H

#include <lmdb.h>
#include <libaio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mono.h"
#include "store.h"

#define CHUNK_SHIFT		18
#define CHUNK_SIZE		(1u << CHUNK_SHIFT)	/* 256 KiB */
#define CHUNK_BLOCKS		(CHUNK_SIZE / STORE_BLOCK_SIZE)	/* 64 */
#define SB_DATA_START		16u	/* first data block: 64 KiB in */
#define STORE_FORMAT_VERSION	3u	/* 2: the write-ahead log region; 3: chunk records in it */
#define STORE_FORMAT_OLDEST	2u	/* opened too, and moved to the current format */
#define WAL_MIN_BLOCKS		64u	/* log region: 256 KiB .. 64 MiB */
#define WAL_MAX_BLOCKS		16384u
#define IO_MAX_BYTES		(8u << 20)	/* largest single aio */
#define FLUSH_WRITES_MAX	256u	/* record writes in flight (commit.c) */
/* What a byte of logged kv mutations may take in the kv once the
 * checkpoint applies it: values of a page or more go to overflow pages
 * (a 4 KiB object's inline value takes two), and the apply copies each
 * leaf it touches.  Twice was too few: a kv near its end could not take
 * its overlay, and then no batch, deletes included, could commit. */
#define KV_OVERLAY_COST		4u

/* ---- allocator (alloc.c): a two-level bitmap of free blocks --------- */

struct run {
	uint64_t start;
	uint64_t len;
};

struct runvec {
	struct run *v;
	size_t n;
	size_t cap;
};

int runvec_push(struct runvec *rv, uint64_t start, uint64_t len);
void runvec_free(struct runvec *rv);

struct alloc {
	uint64_t base;		/* first block managed */
	uint64_t nblocks;	/* blocks managed */
	uint64_t nfree;
	uint64_t *bits;		/* 1 = free, one bit per block */
	uint64_t *sum;		/* 1 = that word of bits has a free block */
	uint64_t nwords;
	uint64_t cursor;	/* where the last contiguous search ended */
};

int alloc_init(struct alloc *a, uint64_t base, uint64_t nblocks);
void alloc_destroy(struct alloc *a);
/* Marks [start, start+len) used; returns the number of those blocks that
 * were already used (0 normally: more means two records share blocks). */
uint64_t alloc_mark_used(struct alloc *a, uint64_t start, uint64_t len);
/* Allocates n blocks in as few runs as possible, appending them to out.
 * -ENOSPC (and nothing taken) when fewer than n are free.  With
 * contiguous, only a single run will do. */
int alloc_get(struct alloc *a, uint64_t n, bool contiguous, struct runvec *out);
void alloc_put(struct alloc *a, uint64_t start, uint64_t len);
bool alloc_is_free(const struct alloc *a, uint64_t blk);

/* ---- kv (kv.c): LMDB with a crc32c on every value -------------------- */

struct kv {
	MDB_env *env;
	MDB_dbi meta, colls, onodes, chunks, attrs, omap, deferred;
	size_t psize;
	uint64_t map_size;
	uint64_t reserve;
};

int kv_open(struct kv *kv, const char *path, uint64_t map_size, bool create, bool readonly);
void kv_close(struct kv *kv);
/* LMDB return code -> negative errno. */
int kv_err(int rc);
/* Value payload (after its crc) into v and vl, pointing into the map.
 * -ENOENT when missing, -EIO when the crc does not match. */
int kv_get(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void **v, size_t *vl);
int kv_put(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl, const void *v, size_t vl);
/* Whether kv_put, kv_del, kv_del_prefix or kv_cursor_del met a read-only
 * transaction on this thread since the last call (commit.c's read-only
 * batches). */
bool kv_write_refused_take(void);
int kv_del(MDB_txn *t, MDB_dbi dbi, const void *k, size_t kl);	/* -ENOENT if missing */
/* Deletes every key that starts with prefix; returns the count or <0. */
int64_t kv_del_prefix(MDB_txn *t, MDB_dbi dbi, const void *prefix, size_t plen);
/* mdb_cursor_del of the cursor's entry (an LMDB code), a refusal noted. */
int kv_cursor_del(MDB_cursor *c);
/* Checks a raw LMDB value's crc; payload out. */
int kv_unwrap(const MDB_val *raw, const void **v, size_t *vl);
/* Bytes of the map in use (pages up to the last used, less free pages). */
int kv_used_bytes(struct kv *kv, MDB_txn *t, uint64_t *used);

/* A collection's record: -ENOENT if it does not exist, -EIO if damaged;
 * flags (may be NULL) gets its flags. */
int kv_coll_get(struct kv *kv, MDB_txn *t, uint64_t coll, uint32_t *flags);
/* The LMDB database of a logged mutation's db (KVDB_*), the db of an
 * LMDB database (attrs for any other), and a mutation's kv key (at most
 * KVDB_KEY_MAX bytes; kl 0: the id's prefix). */
MDB_dbi kvdb_dbi(const struct kv *kv, int db);
int kvdb_of(const struct kv *kv, MDB_dbi dbi);
size_t kvdb_key(uint8_t *out, int db, uint64_t id, const void *k, size_t kl);
/* An object name: 1..STORE_NAME_MAX bytes (-EINVAL, -ENAMETOOLONG). */
int oid_check(const char *oid);

/* Keys. */
#define ONODE_KEY_MAX (8 + STORE_NAME_MAX)
size_t key_onode(uint8_t *k, uint64_t coll, const char *oid, size_t len);
size_t key_id(uint8_t *k, uint64_t id, const void *suffix, size_t slen);
size_t key_chunk(uint8_t *k, uint64_t id, uint32_t idx);
void put_be64(uint8_t *p, uint64_t v);
uint64_t get_be64(const uint8_t *p);
void put_be32(uint8_t *p, uint32_t v);
uint32_t get_be32(const uint8_t *p);

/* ---- records (chunk.c): onodes and chunks, encode and decode --------- */

#define ONODE_CHUNKED	0x1u	/* data in chunk records, not inline */

struct onode {
	bool exists;
	bool dirty;
	uint64_t id;
	uint64_t size;
	uint32_t flags;
	uint32_t inline_len;	/* bytes of inline data (<= size) */
	uint8_t *inl;		/* malloc'd inline data */
};

int onode_decode(struct onode *o, const void *v, size_t vl);
int onode_encode(const struct onode *o, void **v, size_t *vl);
void onode_clear(struct onode *o);

#define CHUNK_COMPRESSED 0x1u

struct chunk {
	uint8_t flags;
	/* uncompressed: bit i set = block i present at pblk[i], crc[i] */
	uint64_t present;
	/* uncompressed: bit i set = block i's current content is journaled
	 * in the kv (slot dslot[i] of deferred blob dseq[i]) and not yet
	 * written to pblk[i]; crc[i] is the crc of that content (deferred.c) */
	uint64_t deferred;
	/* compressed: lblocks logical blocks stored as clen bytes of lz4 in
	 * cblocks blocks from pblk[0], crc[j] for each of those blocks */
	uint8_t lblocks;
	uint8_t cblocks;
	uint32_t clen;
	uint64_t pblk[CHUNK_BLOCKS];
	uint32_t crc[CHUNK_BLOCKS];
	uint64_t dseq[CHUNK_BLOCKS];
	uint16_t dslot[CHUNK_BLOCKS];
};

int chunk_decode(struct chunk *c, const void *v, size_t vl);
/* Encodes into buf (at least CHUNK_REC_MAX bytes); returns the length. */
#define CHUNK_REC_MAX (48 + CHUNK_BLOCKS * 24)
size_t chunk_encode(const struct chunk *c, uint8_t *buf);
bool chunk_empty(const struct chunk *c);
/* Physical runs of c (coalesced), appended to out. */
int chunk_runs(const struct chunk *c, struct runvec *out);
/* Blocks of the data area c uses. */
uint64_t chunk_used_blocks(const struct chunk *c);

/* ---- transactions (txn.c) -------------------------------------------- */

enum op_type {
	OP_COLL_CREATE, OP_COLL_REMOVE, OP_TOUCH, OP_CREATE, OP_WRITE, OP_ZERO,
	OP_TRUNCATE, OP_REMOVE, OP_SETATTR, OP_RMATTR, OP_OMAP_SET, OP_OMAP_RM,
	OP_OMAP_CLEAR,
};

/* op->flags of an OP_REMOVE: a missing object is not an error */
#define OPF_MISSING_OK	1u

struct op {
	enum op_type type;
	uint32_t flags;
	uint64_t coll;
	char *oid;
	uint64_t off;
	uint64_t len;
	void *data;		/* write data, attr/omap value */
	/* Set when data is the caller's (store_txn_write_ref): not freed,
	 * release(release_arg) is called instead when the op is freed. */
	void (*release)(void *arg);
	void *release_arg;
	bool data_ref;
	/* crc32c of each whole block of a by-reference write, as the
	 * caller had them (store_txn_write_ref), or NULL: computed here */
	uint32_t *crcs;
	void *key;		/* attr name (NUL-terminated) or omap key */
	size_t klen;
	/* Prewrite (commit.c): the whole blocks of a large aligned write are
	 * allocated, checksummed and submitted when the transaction is
	 * queued, so the device works while earlier batches commit. */
	struct prewrite *prew;
};

struct prewrite {
	struct prewrite *prev, *next;	/* st->prew_head list, under amutex */
	struct runvec runs;	/* where the whole blocks went, in order */
	uint64_t nblk;
	uint32_t *crc;		/* one per block */
	struct iocb *iocbs;
	int left;		/* aio not yet reaped (commit thread only) */
	int err;
	bool applied;		/* the current attempt's records point at runs */
};

struct store_txn {
	struct op *ops;
	size_t n, cap;
	bool frees_only;	/* every op only removes things */
	/* set by store_queue */
	struct store_txn *next;
	store_done_fn cb;
	void *arg;
	int result;
	/* stage timestamps (CLOCK_MONOTONIC ns) for the commit profile */
	uint64_t t_queued, t_taken, t_committed;
};

void txn_op_free(struct op *op);
void prewrite_free(struct prewrite *pw);

/* ---- the store ------------------------------------------------------- */

struct stats {
	uint64_t objects;
	uint64_t stored;
	uint64_t used_blocks;
	uint64_t compressed_saved;
};

int stats_decode(struct stats *s, const void *v, size_t vl);
size_t stats_encode(const struct stats *s, uint8_t *buf);	/* <= 64 bytes */

struct reader {
	struct reader *prev, *next;
	uint64_t seq;		/* commits applied when the read began */
	uint64_t vseq;		/* logged blocks of seq <= vseq are visible (wal.c) */
};

struct limbo {			/* blocks freed by a durable commit */
	struct limbo *next;
	uint64_t seq;
	struct runvec runs;
	bool logged;		/* the log names these blocks: wait for its checkpoint */
};

/* Where the commit thread spends its time (nanoseconds), for profiling;
 * store_close() logs it at debug level. */
struct commit_perf {
	uint64_t batches, txns;
	uint64_t apply_ns, data_ns, flush_ns, kv_ns, sync_ns, syncs;
	/* per transaction, summed: queued -> taken into a batch -> its batch
	 * committed -> durable and completed */
	uint64_t queue_ns, run_ns, durable_ns, fired;
	uint64_t synced_by_next, synced_alone;	/* how batches became durable */
	uint64_t wal_only;	/* batches that only logged (no kv commit) */
	uint64_t kv_commits;	/* batches that committed the kv */
	uint64_t ckpts, ckpt_blocks, ckpt_ns;	/* log checkpoints */
	uint64_t ckpt_kv;	/* logged kv mutations checkpointed */
	/* The flusher: batches it completed, flushes, their time. */
	uint64_t fl_batches, fl_flushes, fl_flush_ns;
	/* A checkpoint's finish: the device flush (commit thread), building
	 * the kv transaction, its commit, the meta sync (checkpointer). */
	uint64_t ckpt_flush_ns, ckpt_build_ns, ckpt_commit_ns, ckpt_sync_ns;
	uint64_t kv_direct;	/* batches that flushed the overlay to write the kv directly */
	uint64_t kv_in_commit;	/* kv batches whose attr/omap mutations went into their commit */
	/* Batches applied read-only beside a checkpoint's kv transaction,
	 * those that then needed a writer, and the commit thread's waits
	 * for the checkpointer. */
	uint64_t ro_batches, ro_retries, ckpt_wait_ns, ckpt_waits;
};

/* The write-ahead log (wal.c): a ring in blocks [start, start+blocks);
 * positions (head, tail, vpos) count blocks over the log's whole life. */
struct wal_rec {		/* a record not yet checkpointed */
	uint64_t lsn, vpos, seq;
	uint32_t nblocks, nent;
};

struct wal_ent;
struct ckpt_write {		/* adjacent blocks, one vectored write */
	uint64_t off;
	size_t len;
	struct iovec *iov;
	int iovcnt;
};

struct ckpt {			/* a checkpoint in progress (checkpoint.c) */
	bool active, need_flush, writes_done;
	size_t k;		/* records it covers */
	uint64_t lsn_last, tail, cnt, t0;
	struct iovec *iov;	/* the blocks, sorted by place: the index's */
	struct ckpt_write *w;	/* coalesced writes */
	struct iocb *cbs;
	size_t nw, submitted, done;
	int err;
	uint64_t flush_mark;	/* flush_gen when the writes were done */
	/* Its kv transaction, prepared by the commit thread once the writes
	 * are flushed: the chunk records' crcs of the newest logged version
	 * of each block (ents, by object and block), the logged kv mutations
	 * (ops, in log order), meta/seq = kv_seq.  With the checkpointer
	 * running it commits there (kv_handed) while the commit thread goes
	 * on. */
	bool kv_handed;
	uint64_t kv_seq;
	struct wal_ent **ents;
	size_t nents;
	struct kvo_op **ops;
	size_t nops;
};

/* The overlay of logged kv mutations (wal.c).  A mutation names a kv
 * database, an id and a key: attributes and omap under the object's id
 * (key: name or omap key), onodes under the collection (key: the object's
 * name), the store's counters under id 0 (key: "stats" or "next_id"),
 * chunk records under the object's id (key: the chunk's number). */
#define KVOP_SET	1u
#define KVOP_DEL	2u
#define KVOP_CLEAR	3u	/* every key of the id (attributes and omap only) */
#define KVDB_ATTR	0
#define KVDB_OMAP	1
#define KVDB_ONODE	2
#define KVDB_META	3
#define KVDB_CHUNK	4	/* chunk records: the object's id, key the chunk's number (4 bytes, big-endian) */
#define KVDB_MAX	KVDB_CHUNK
/* The longest key of a kv mutation, and of its kv key (with the id). */
#define KVOP_KEY_MAX	(STORE_OMAP_KEY_MAX > STORE_NAME_MAX ? STORE_OMAP_KEY_MAX : STORE_NAME_MAX)
#define KVDB_KEY_MAX	(8 + KVOP_KEY_MAX)
struct kvo_op;
struct kvo_obj;

struct wal {
	uint64_t start, blocks;
	uint64_t rec_max;	/* largest record, blocks */
	uint64_t head, tail;	/* next record; first record not checkpointed */
	uint64_t next_lsn, ckpt_lsn;
	/* lock guards the index and recs: readers look blocks up */
	pthread_mutex_t lock;
	bool lock_ok;
	struct wal_rec *recs;
	size_t rn, rcap;
	struct wal_ent **hash;		/* newest version of each logged block */
	struct wal_ent *live_head, *live_tail;	/* not checkpointed, lsn order */
	struct wal_ent *retired;	/* checkpointed or superseded, for old readers */
	uint64_t nlive;
	uint64_t nents;			/* all in the index (atomic reads) */
	/* Block buffers of freed entries, kept for the next (wal_ent_new):
	 * a fresh page costs a page fault at its first write, and a
	 * checkpoint frees thousands at once.  pool_lock guards them. */
	pthread_mutex_t pool_lock;
	void *pool;			/* chained through their first bytes */
	size_t npool;
	/* The overlay: logged kv mutations by object, versions visible to
	 * readers whose snapshot lies in [seq, end) like the blocks'. */
	struct kvo_obj **ohash;
	/* The same mutations by (database, id, key) -- a clear under an
	 * empty key --, newest first: a lookup takes the first visible one. */
	struct kvo_op **khash;
	uint64_t kv_ord;		/* mutations ever added: their order */
	uint64_t kv_nclear;		/* clears in the overlay */
	struct kvo_op *kv_live_head, *kv_live_tail;	/* not checkpointed, lsn order */
	struct kvo_op *kv_retired;
	uint64_t kv_nlive, kv_live_bytes;
	uint64_t kv_nall;		/* all in the overlay (atomic reads) */
	struct ckpt ck;
};

struct store {
	struct store_options opt;
	struct commit_perf perf;
	char *block_path;
	char *kv_path;
	int bfd;
	uint8_t uuid[16];
	uint64_t nblocks;	/* whole device, in blocks */
	uint64_t data_start;
	struct kv kv;

	/* Owned by the commit thread while it works; others take alloc_lock
	 * to look (fsck, statfs). */
	pthread_mutex_t alloc_lock;
	/* stats_lock guards stats (written by the commit thread after each
	 * commit): statfs must not wait for alloc_lock, which the commit
	 * thread holds through a whole commit, device flushes included. */
	pthread_mutex_t stats_lock;
	/* amutex guards the allocator itself: the commit thread and callers
	 * of store_queue (which allocate for prewritten data) both use it. */
	pthread_mutex_t amutex;
	struct alloc alloc;
	struct stats stats;
	uint64_t next_id;
	uint64_t commit_seq;	/* batches committed */
	uint64_t double_used;	/* blocks found used twice at open */
	uint64_t deferred_blocks;	/* logged blocks not yet checkpointed */
	uint64_t deferred_kv_bytes;	/* logged kv mutations not yet checkpointed */
	/* Half the kv is in use: objects no longer keep new data inline (an
	 * inline 4 KiB value takes two 4 KiB pages of LMDB, so a store of
	 * small objects would fill its kv at a sixteenth of its device);
	 * the last measure of the kv's use, LMDB's high-water mark and the
	 * logged mutations (counted twice) then, and when (commit thread
	 * only, commit.c: kv_measure). */
	bool kv_no_inline;
	struct {
		uint64_t used, hw, pending, at;
	} kv_inl;
	bool kvlog;			/* attribute and omap mutations go to the log */
	struct wal wal;

	/* The queue: qlock protects qhead..stopping, failed. */
	pthread_mutex_t qlock;
	pthread_cond_t qcond;	/* work arrived or stop */
	pthread_cond_t qidle;	/* queue drained */
	struct store_txn *qhead, *qtail;
	size_t queued;
	bool busy;
	bool unsynced;		/* a committed batch awaits its sync */
	bool stopping;
	int failed;		/* sticky -EIO after a device error */
	pthread_t commit_thread;
	bool commit_running;
	io_context_t wctx;
	bool wctx_ok;
	io_context_t pctx;	/* prewrites; reaped by the commit thread */
	io_context_t cctx;	/* log checkpoints' in-place writes */
	bool cctx_ok;
	io_context_t lctx;	/* records of batches handed to the flushers */
	bool lctx_ok;
	/* fdatasyncs of the block started (atomic: a flusher adds to it
	 * right before its flush); one started after a write completed and
	 * since finished makes that write durable. */
	uint64_t flush_gen;
	uint64_t unsynced_from;	/* seq of the kv batch awaiting its sync, or UINT64_MAX */
	bool pctx_ok;
	struct prewrite *prew_head;	/* prewrites not yet committed (amutex) */

	/* The flushers (commit.c): flush the block for batches that only
	 * logged and complete them, while the commit thread goes on with
	 * the next batch; up to opt.flushers flushes run at once.  fhead..
	 * ftail are the batches handed over and not yet completed, in
	 * order; fnext the first no flush has taken yet.  The commit thread
	 * does not wait for such a batch's record write: it submits it on
	 * lctx and goes on; one flusher at a time (freaping) reaps lctx, and
	 * a flush takes only batches whose record is written.  It covers
	 * every write completed before it began, so when one ends every
	 * batch up to the last it took (fdurable, by id) is durable; one
	 * flusher at a time (ffiring) completes them in order.  flock
	 * protects fhead..freaping. */
	pthread_mutex_t flock;
	pthread_cond_t fcond;	/* work for a flusher, or stop */
	pthread_cond_t fidle;	/* every batch handed over is completed */
	struct flush_item *fhead, *ftail, *fnext;
	uint64_t fids, fdurable;
	unsigned fbusy;		/* flushes in progress */
	int ferr;		/* a record write or flush failed: every later batch fails */
	unsigned fwrites;	/* record writes in flight on lctx */
	bool ffiring, freaping, fstop, flusher_running;
	unsigned nflushers;
	pthread_t flusher[STORE_FLUSHERS_MAX];
	uint64_t flush_pending;	/* batches handed over, not yet completed (qlock) */

	/* The checkpointer (wal.c): commits a log checkpoint's kv
	 * transaction while the commit thread applies the next batches
	 * read-only.  cklock protects ckjob..ckerr. */
	pthread_mutex_t cklock;
	pthread_cond_t ckcond;	/* a job, a job done, or stop */
	pthread_t ckpt_thread;
	bool ckpt_running;
	bool ckjob, ckdone, ckstop;
	int ckerr;
	/* Testing seam (atomic): the checkpointer holds a job's kv
	 * transaction back while set, so that tests reach the batches that
	 * run beside it for sure. */
	bool test_ckpt_hold;

	/* Readers and blocks waiting for them: rlock protects these. */
	pthread_mutex_t rlock;
	pthread_cond_t rcond;	/* reads_inflight reached 0 */
	pthread_cond_t rwork;	/* reads_inflight left 0, or stop */
	struct reader readers;	/* list head */
	uint64_t durable_seq;	/* visible to new readers */
	struct limbo *limbo_head, *limbo_tail;
	io_context_t rctx;
	pthread_t read_thread;
	bool read_running;
	int reads_inflight;
	bool read_stop;
	/* store_read_poll_start: the owner's loop thread reaps the small
	 * reads (read_poll_thread; read_efd in its poll) from their own
	 * context, rpctx; the read thread the large ones (rctx).  [rlock]
	 * reads_thread: those of reads_inflight on rctx. */
	bool read_poll;
	int read_efd;
	pthread_t read_poll_thread;
	io_context_t rpctx;
	int reads_thread;
	/* reads queued for one io_submit (opt.defer; rsub_lock) */
	pthread_mutex_t rsub_lock;
	struct iocb **rsub;
	size_t rsub_n, rsub_cap;
	bool rsub_scheduled;
	bool rsub_polled;		/* the batch is for rpctx */
};

/* superblock.c */
/* Writes block 0 (format: STORE_FORMAT_VERSION; tests write older ones). */
int sb_write(int fd, const uint8_t uuid[16], uint64_t nblocks, uint64_t data_start,
	     uint32_t format);
/* format (may be NULL): the store's format version, STORE_FORMAT_OLDEST
 * .. STORE_FORMAT_VERSION (others are -EUCLEAN). */
int sb_read(int fd, uint8_t uuid[16], uint64_t *nblocks, uint64_t *data_start,
	    uint32_t *format);
void uuid_format(const uint8_t u[16], char out[37]);

/* blockio.c */
int bio_open(const char *path, bool create, bool readonly, int *fd);
int bio_size(int fd, uint64_t *bytes);
void *bio_alloc(size_t bytes);		/* 4 KiB aligned, zeroed; NULL on ENOMEM */
void *bio_alloc_uninit(size_t bytes);	/* the same, not zeroed: every byte gets written */
int bio_pread(int fd, void *buf, size_t len, uint64_t off);
int bio_pwrite(int fd, const void *buf, size_t len, uint64_t off);
struct bio_write {
	uint64_t off;
	size_t len;
	const void *buf;
};
/* Writes all of w with libaio on ctx and waits: 0 or -EIO.  rw_flags:
 * RWF_* of every write (RWF_DSYNC: each is durable when it completes). */
int bio_write_all(io_context_t ctx, int fd, const struct bio_write *w, size_t n, int rw_flags);
/* The RWF_* flags of a data write that must be durable when it completes
 * (RWF_DSYNC; 0 with the test option unsafe_skip_data_flush). */
int bio_data_flags(const struct store *st);

/* reader tracking (read.c) */
void reader_enter(struct store *st, struct reader *r);
void reader_exit(struct store *st, struct reader *r);
/* Hands the runs freed by durable commit seq to the allocator once no
 * reader older than seq remains (called by the commit thread). */
void limbo_add(struct store *st, uint64_t seq, struct runvec *runs);
void limbo_release(struct store *st);
int read_thread_start(struct store *st);
void read_thread_stop(struct store *st);

/* Reads one data block (crc-checked) of a chunk for the commit path or
 * fsck; pending (may be NULL) is consulted first for blocks written in
 * the current batch. */
struct pending;
int block_read_checked(struct store *st, struct pending *p, uint64_t pblk,
		       uint32_t crc, void *buf);
/* Reads a chunk's logical content (CHUNK_SIZE bytes, zeros for holes). */
struct batch;
int chunk_read_all(struct store *st, MDB_txn *t, struct batch *b, const struct chunk *c,
		   uint8_t *buf);

/* prewrite.c */
int prewrite_submit(struct store *st, struct store_txn *t);
void prewrite_wait(struct store *st, struct store_txn *list);
void prewrite_release_unused(struct store *st, struct store_txn *list);

/* commit.c */
int commit_start(struct store *st);
void commit_stop(struct store *st);
/* Waits until every queued transaction has completed. */
void commit_drain(struct store *st);
/* Waits until every batch handed to the flushers is durable and complete:
 * for work that needs every logged record flushed (checkpoints, kv
 * batches, completions in queue order).  Commit thread only. */
void commit_flush_wait(struct store *st);

/* write.c: applies one transaction inside the batch's kv transaction. */
struct batch;
int apply_txn(struct batch *b, struct store_txn *t);

/* wal.c: the write-ahead log of small overwrites */
uint64_t wal_default_blocks(uint64_t nblocks);
int wal_init(struct store *st);
void wal_destroy(struct store *st);
bool wal_active(struct store *st);
/* The logged content of block pblk visible at snapshot rseq into out:
 * 1 if there is one, 0 if the device holds it, -EIO if it is lost. */
int wal_read(struct store *st, uint64_t pblk, uint64_t rseq, void *out);
/* The visibility seq of a reader that entered at r->seq and reads t. */
void wal_reader_seq(struct store *st, MDB_txn *t, struct reader *r);
uint64_t wal_free_blocks(const struct store *st);
uint64_t wal_used_blocks(const struct store *st);
/* Seq of the oldest record not checkpointed (UINT64_MAX: none). */
uint64_t wal_oldest_seq(struct store *st);
void wal_gc(struct store *st);
/* Moves the blocks of runs that the log's index names to logged. */
int wal_split_freed(struct store *st, struct runvec *runs, struct runvec *logged);
/* Applies logged blocks in place and checkpoints (at most max_blocks, 0 =
 * all; force: write the checkpoint even if nothing is logged).  Commit
 * thread or open only; every committed batch must be durable.  Returns
 * the blocks consumed, 0 if readers held everything back, or -errno. */
int64_t wal_checkpoint(struct store *st, uint64_t max_blocks, bool force);
/* A checkpoint is in progress; wal_ckpt_step starts one (at most
 * max_blocks) or moves the one in progress on without waiting: the
 * blocks it finished, 0, or -errno. */
bool wal_ckpt_active(const struct store *st);
int64_t wal_ckpt_step(struct store *st, uint64_t max_blocks);
/* The checkpointer holds (or is about to take) the kv's write lock: a
 * batch applies read-only.  wal_ckpt_kv_wait waits for its commit and
 * finishes the checkpoint (commit thread); 0 or -errno. */
bool wal_ckpt_kv_busy(const struct store *st);
int wal_ckpt_kv_wait(struct store *st);
int wal_ckpt_thread_start(struct store *st);
void wal_ckpt_thread_stop(struct store *st);
int wal_replay(struct store *st, MDB_txn *t, uint64_t *max_seq);
/* A log record's header, decoded (wal.c; the fuzz target uses these). */
struct wal_hdr_info {
	uint64_t lsn, seq;
	uint32_t nent, nblocks, crc;
	uint32_t kvbytes;	/* kv mutations after the entry table */
	uint16_t version, flags;
};
/* The header in block hb (4 KiB), checked against the place it was read
 * from (vpos; room: blocks from there to the log region's end) and the
 * store (uuid, rec_max): 0 and *out, or -ENOENT. */
int wal_hdr_decode(const void *hb, uint64_t vpos, const uint8_t uuid[16], uint64_t rec_max,
		   uint64_t room, struct wal_hdr_info *out);
/* The whole record buf (h->nblocks blocks): -ENOENT if the header's crc
 * does not match, else 0 with bad[j] set for each of the h->nent data
 * blocks whose crc does not match and *nbad their count. */
int wal_rec_verify(const uint8_t *buf, const struct wal_hdr_info *h, bool *bad, uint64_t *nbad);

/* The overlay holds something (any reader must merge it). */
bool kvo_active(struct store *st);
/* Value of key k of object id at snapshot rseq as the overlay has it:
 * 1 and a malloc'd copy in *val and *vl, 0 if removed there, -ENOENT if the
 * overlay says nothing (look in the kv). */
int kvo_get(struct store *st, int db, uint64_t id, const void *k, size_t kl, uint64_t rseq,
	    void **val, size_t *vl);
/* The value of key k of id as the batch (b, may be NULL), the overlay at
 * snapshot rseq, and then kv transaction t have it: 1 with *v and *vl
 * (valid until *owned is freed and t or the batch changes), 0 if there
 * is none, or -errno. */
int kvo_lookup(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
	       const void *k, size_t kl, uint64_t rseq, const void **v, size_t *vl,
	       void **owned);
/* The overlay's view of object id's keys at snapshot rseq, sorted by key
 * (kv order), one entry per key (del: removed); cleared: every kv key of
 * the object is gone.  kvo_view_free() frees it. */
struct kv_view_ent {
	uint8_t *k;
	size_t kl;
	uint8_t *v;
	size_t vl;
	bool del;
};
struct kv_view {
	struct kv_view_ent *e;
	size_t n;
	bool cleared;
};
int kvo_view(struct store *st, int db, uint64_t id, uint64_t rseq, struct kv_view *out);
void kvo_view_free(struct kv_view *v);
/* Walks the keys of dbi under id after `after` (alen bytes; NULL: from the
 * first), at most max of them (0: all), inside snapshot (t, rseq): the
 * kv's keys merged with the overlay's view (its values win, its removals
 * hide).  fn gets each key without the id prefix, and its value; without
 * oid (a listing of names) the kv's values are neither checked nor
 * passed, with it oid names the object in the error of a bad crc.
 * Returns the count, fn's non-zero value, or -errno. */
typedef int (*kvo_walk_fn)(void *arg, const void *k, size_t kl, const void *v, size_t vl);
int kvo_walk(struct store *st, MDB_txn *t, uint64_t rseq, MDB_dbi dbi, uint64_t id,
	     const char *oid, const void *after, size_t alen, size_t max, kvo_walk_fn fn,
	     void *arg);
/* Chunk idx of object id as the batch (b, may be NULL), the overlay at
 * snapshot rseq and then kv transaction t have it; an empty chunk (all
 * zero) when there is none.  0, or -EIO (damaged) or -errno. */
int kvo_chunk_get(struct store *st, const struct batch *b, MDB_txn *t, uint64_t id,
		  uint32_t idx, uint64_t rseq, struct chunk *c);
/* The ids with a mutation of db visible at rseq in the overlay, in no
 * order (malloc'd; fsck). */
int kvo_ids(struct store *st, int db, uint64_t rseq, uint64_t **ids, size_t *n);
/* Has the overlay a clear of object id's db visible at rseq?  (fsck: the
 * kv may hold keys of a removed object until the checkpoint.) */
bool kvo_cleared(struct store *st, int db, uint64_t id, uint64_t rseq);
/* A record's kv mutations section (p, len bytes), databases up to db_max
 * (KVDB_META for records before version 3, KVDB_MAX after): calls fn (may
 * be NULL) for each; -ENOENT if malformed (a chunk record mutation whose
 * key is not a chunk number or whose value does not decode included),
 * else the count (the fuzz target uses it). */
struct wal_kvop {
	uint8_t type, db;
	uint64_t id;
	const uint8_t *k, *v;
	size_t kl, vl;
};
int wal_kvops_decode(const uint8_t *p, size_t len, int db_max,
		     int (*fn)(void *arg, const struct wal_kvop *op), void *arg);

int wal_check(struct store *st, void (*report)(void *arg, const char *msg), void *arg);
int wal_state_put(MDB_txn *t, struct kv *kv, uint64_t ckpt_lsn, uint64_t tail);
int kv_seq_put(MDB_txn *t, struct kv *kv, uint64_t seq);
uint64_t kv_seq_get(MDB_txn *t, struct kv *kv);
/* The content of block i of chunk c, wherever it is: the batch's pending
 * writes or log entries, the log, or the device; crc-checked. */
int chunk_read_block(struct store *st, MDB_txn *t, struct batch *b, const struct chunk *c,
		     unsigned i, void *buf);

/* fsck.c */
int store_rebuild_alloc(struct store *st, MDB_txn *t);

/* A synchronous call waiting for an asynchronous one (store_apply,
 * store_read): sync_waiter_done() from the completion, sync_waiter_wait() returns
 * the result.  Lives on the waiting thread's stack. */
struct sync_waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int64_t r;
};
#define SYNC_WAITER_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 }
void sync_waiter_done(struct sync_waiter *w, int64_t r);
int64_t sync_waiter_wait(struct sync_waiter *w);

static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

#endif
