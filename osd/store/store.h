/*
 * store.h - the OSD's local object store engine.
 *
 * One store owns one block device or one big file ("the block") plus a
 * small directory holding its LMDB key-value store ("the kv").  Objects
 * live in collections (one per placement group); each object has data
 * (a sparse byte range), attributes (small named values) and an omap
 * (a sorted key/value map).
 *
 * Writes happen through transactions: a store_txn collects ops over any
 * objects and collections; store_queue() applies it atomically and calls
 * the completion once it is durable.  Transactions are applied in the
 * order they are queued; concurrently queued transactions are grouped
 * into one commit (group commit).
 *
 * Durability: file data goes with libaio + O_DIRECT into blocks the store
 * allocates (new data never overwrites acknowledged blocks), is made
 * durable (fdatasync) before the kv commit that points at it, and blocks
 * freed by a commit are reused only after that commit is durable.  Every
 * data block carries a crc32c, and so does every value in the kv; a
 * mismatch makes the read fail with -EIO.
 *
 * Threading: every function may be called from any thread.  Completions
 * run on the store's commit thread: they must not block for long and must
 * not call store_close(); they may queue more transactions.  Reads see
 * every transaction whose completion has fired (and possibly newer ones);
 * each read call sees one committed state (a snapshot), never part of a
 * transaction.
 *
 * Errors are 0 or a negative errno:
 *   -ENOENT   collection or object missing      -EEXIST   already there
 *   -ENODATA  attribute or omap key missing     -ENOTEMPTY collection not empty
 *   -ENOSPC   block or kv full (deletes still work)
 *   -EFBIG    object would exceed the maximum object size
 *   -ENAMETOOLONG  name or key over its limit   -EINVAL   bad argument
 *   -EIO      checksum mismatch or device error (the store stops writing
 *             after a failed write or flush: later transactions get -EIO)
 */
#ifndef ATOLL_STORE_H
#define ATOLL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_BLOCK_SIZE	4096u
#define STORE_NAME_MAX		400u	/* object name bytes (kv key limit) */
#define STORE_ATTR_NAME_MAX	255u
#define STORE_OMAP_KEY_MAX	400u
#define STORE_VALUE_MAX		(64u << 20)	/* one attr or omap value */
#define STORE_DEFAULT_OBJECT_MAX (128ull << 20)
#define STORE_DEFER_OFF		UINT32_MAX

struct store;
struct store_txn;

/* Options for store_mkfs() and store_open().  Zero-initialise, set
 * size_of = sizeof(struct store_options), then set what you need; fields
 * only grow at the end. */
struct store_options {
	size_t size_of;
	const char *block_path;	/* file or block device (required) */
	const char *kv_path;	/* directory of the kv (required) */
	/* mkfs only: size of the block file to create (ignored for a device,
	 * whose size is used whole; 0 = keep an existing file's size). */
	uint64_t block_size;
	/* Largest the kv may grow (LMDB map size); 0 = 1/8 of the block,
	 * at least 64 MiB. */
	uint64_t kv_max;
	/* Kv space kept for deletes once the kv is nearly full; 0 = 1/64 of
	 * kv_max, at least 1 MiB. */
	uint64_t kv_reserve;
	uint64_t object_max;	/* 0 = STORE_DEFAULT_OBJECT_MAX */
	uint32_t inline_max;	/* data up to this many bytes stays in the kv; 0 = 2048 */
	uint32_t batch_max;	/* most transactions per commit; 0 = 256 */
	/* Writes of up to this many bytes into existing data are journaled
	 * in the kv and applied in place later (one flush instead of three
	 * before the completion); 0 = 32 KiB, STORE_DEFER_OFF = never. */
	uint32_t defer_max;
	bool readonly;		/* open for inspection only (no commit thread) */
	/* mkfs only, for a regular file: write zeros over the whole file so
	 * that the host file system has real blocks behind it (writes into
	 * fallocated but never written space make ext4/xfs convert extents
	 * on every flush, which costs as much again as the write).  The
	 * OSD and the benchmark set it; tests use sparse files. */
	bool prefill;
	/* Testing seam: write data without RWF_DSYNC (copy-on-write and
	 * prewritten blocks are then not durable when their writes complete)
	 * and skip every fdatasync of the block.  Breaks crash safety on
	 * purpose, so that the power-cut test can show it catches a store
	 * without them.  Never set it otherwise. */
	bool unsafe_skip_data_flush;
	/* Testing seam: skip the fdatasync of the block that makes a batch's
	 * log record (wal.c) durable (the data stays RWF_DSYNC), so that the
	 * power-cut test can show it catches a lost log flush.  Never set it
	 * otherwise. */
	bool unsafe_skip_log_flush;
	/* Attribute and omap mutations go into the write-ahead log with the
	 * batch's small overwrites and reach the kv in bulk at the log's
	 * checkpoint (doc/store.md, "Writing"): a batch of small overwrites
	 * and attribute/omap updates commits nothing to the kv.
	 * STORE_KVLOG_DEFAULT (0) = on. */
	uint32_t kv_log;
	/* Flusher threads: how many flushes of the block may run at once for
	 * batches that only logged (commit.c).  A device that serves flushes
	 * side by side may complete a batch sooner when its flush need not
	 * wait for the one before it; on the VM measured, one flusher gave
	 * 4 KiB writes ~11% more IOPS (fewer wake-ups, bigger flushes) and
	 * 4 MiB writes the same.  0 = 1, at most STORE_FLUSHERS_MAX. */
	uint32_t flushers;
	/* Gathering device reads: when set and it returns true (the caller
	 * is on a thread that will run fn(arg) once it has handled the
	 * requests at hand: the OSD gives msgr_defer), store_read_async
	 * queues its reads and fn submits every queued one with one
	 * io_submit (each submission of a virtual disk's queue is a trap to
	 * the hypervisor).  NULL: every read is submitted at once.  Reads
	 * over 128 KiB and store_read (which waits itself) never wait. */
	bool (*defer)(void (*fn)(void *arg), void *arg);
};

#define STORE_FLUSHERS_MAX	8u

#define STORE_KVLOG_DEFAULT	0u
#define STORE_KVLOG_ON		1u
#define STORE_KVLOG_OFF		2u

/* Creates a new store: writes the superblock to the block (creating the
 * file when needed) and an empty kv in kv_path (created; must be empty).
 * -EEXIST if either already holds a store. */
int store_mkfs(const struct store_options *opt);
/* Opens a store created by store_mkfs().  -EINVAL if the block and the kv
 * belong to different stores, -EUCLEAN if the superblock is damaged. */
int store_open(const struct store_options *opt, struct store **out);
/* Waits for every queued transaction, then closes.  NULL is fine. */
void store_close(struct store *st);
/* The store's uuid as 36 characters + NUL. */
void store_uuid(const struct store *st, char out[37]);

/* ---- transactions ---------------------------------------------------- */

/* Collection flags. */
#define STORE_COLL_COMPRESS	0x1u	/* lz4 for data written into it */
/* Write flags. */
#define STORE_WRITE_COMPRESS	0x1u	/* lz4 for this write */

struct store_txn *store_txn_new(void);
void store_txn_free(struct store_txn *t);
/* Number of ops in t. */
size_t store_txn_ops(const struct store_txn *t);

/* Op builders copy every argument (names, data) into the txn; they fail
 * only for invalid arguments (-EINVAL, -ENAMETOOLONG) or -ENOMEM.  Errors
 * that depend on the store's state (-ENOENT, -EEXIST, -ENOSPC, ...) are
 * reported when the transaction is applied, and then nothing of it is. */
int store_txn_coll_create(struct store_txn *t, uint64_t coll, uint32_t flags);
int store_txn_coll_remove(struct store_txn *t, uint64_t coll);	/* must be empty */
/* Creates the object if missing (no error if it exists). */
int store_txn_touch(struct store_txn *t, uint64_t coll, const char *oid);
/* Creates the object; -EEXIST when applied if it exists. */
int store_txn_create(struct store_txn *t, uint64_t coll, const char *oid);
/* Writes len bytes at off, creating the object if missing. */
int store_txn_write(struct store_txn *t, uint64_t coll, const char *oid,
		    uint64_t off, const void *data, size_t len, uint32_t flags);
/* store_txn_write() without the copy: when data is STORE_BLOCK_SIZE-aligned
 * and off and len are whole blocks (store_write_ref_ok), the txn keeps the
 * pointer and goes to the device straight from it; the bytes must stay
 * valid and unchanged until release(arg) (may be NULL), which the store
 * calls once, from any thread, when the op is freed (after the completion,
 * or when the txn is freed unqueued).  Otherwise it copies as
 * store_txn_write() does and calls release(arg) before returning.  Also on
 * error release(arg) has been called when it returns.  crcs (may be NULL)
 * holds crc32c(0, block) of each of the len / STORE_BLOCK_SIZE blocks of
 * data, as the caller computed them from these bytes (the messenger's
 * receive pass: msg.data_bcrc); the store takes them as the blocks'
 * checksums instead of reading the bytes again.  They are copied. */
int store_txn_write_ref(struct store_txn *t, uint64_t coll, const char *oid,
			uint64_t off, const void *data, size_t len, uint32_t flags,
			const uint32_t *crcs, void (*release)(void *arg), void *arg);
bool store_write_ref_ok(const void *data, uint64_t off, size_t len);
/* Makes [off, off+len) read as zeros (freeing whole blocks); may grow the object. */
int store_txn_zero(struct store_txn *t, uint64_t coll, const char *oid,
		   uint64_t off, uint64_t len);
/* Sets the size, freeing data past it or extending with zeros. */
int store_txn_truncate(struct store_txn *t, uint64_t coll, const char *oid,
		       uint64_t size);
/* Removes the object with its attributes and omap; -ENOENT if missing. */
int store_txn_remove(struct store_txn *t, uint64_t coll, const char *oid);
/* The same, but an object that does not exist when the transaction is
 * applied is not an error (store_txn_remove's -ENOENT): for a caller
 * that saw the object earlier, which a transaction queued before this
 * one may have removed since. */
int store_txn_remove_if_exists(struct store_txn *t, uint64_t coll, const char *oid);
int store_txn_setattr(struct store_txn *t, uint64_t coll, const char *oid,
		      const char *name, const void *val, size_t len);
/* -ENODATA when applied if the attribute is missing. */
int store_txn_rmattr(struct store_txn *t, uint64_t coll, const char *oid,
		     const char *name);
int store_txn_omap_set(struct store_txn *t, uint64_t coll, const char *oid,
		       const void *key, size_t klen, const void *val, size_t vlen);
/* Removing a missing omap key is not an error. */
int store_txn_omap_rm(struct store_txn *t, uint64_t coll, const char *oid,
		      const void *key, size_t klen);
int store_txn_omap_clear(struct store_txn *t, uint64_t coll, const char *oid);

/* Called once, on the commit thread, when t is durable (r == 0) or has
 * failed as a whole (r < 0: nothing of it was applied). */
typedef void (*store_done_fn)(void *arg, int r);

/* Queues t (the store takes ownership of it, also on error) and returns
 * 0; cb (may be NULL) fires exactly once.  -EROFS if opened readonly,
 * -EIO if the store has stopped after a device error (cb is not called
 * when store_queue itself returns an error). */
int store_queue(struct store *st, struct store_txn *t, store_done_fn cb, void *arg);
/* store_queue() and wait: returns the transaction's result. */
int store_apply(struct store *st, struct store_txn *t);

/* ---- reads ----------------------------------------------------------- */

struct store_stat {
	uint64_t size;		/* logical size in bytes */
	uint64_t blocks;	/* data blocks allocated */
	uint32_t nattrs;
	bool is_inline;		/* data kept in the kv */
};

int store_stat(struct store *st, uint64_t coll, const char *oid, struct store_stat *out);
/* The logical size of an object alone: one kv lookup, where store_stat
 * also walks the object's chunk records and attributes (16 chunk records
 * for a 4 MiB object).  -ENOENT when the object does not exist. */
int store_size(struct store *st, uint64_t coll, const char *oid, uint64_t *size);
/* Reads up to len bytes at off into buf; returns the number of bytes read
 * (0 at or past the end), holes read as zeros. */
int64_t store_read(struct store *st, uint64_t coll, const char *oid,
		   uint64_t off, size_t len, void *buf);
/* Asynchronous read: cb(arg, n) gets the byte count or a negative errno,
 * on the store's read-completion thread (or the poller's: below).  buf
 * must stay valid until then. */
typedef void (*store_read_fn)(void *arg, int64_t r);
int store_read_async(struct store *st, uint64_t coll, const char *oid,
		     uint64_t off, size_t len, void *buf,
		     store_read_fn cb, void *arg);
/* The same, and on success *crc = crc32c(0, buf, n) of the n bytes read,
 * set before cb fires.  It is joined from the blocks' stored crcs (which
 * the read verifies anyway) where it can, so it costs far less than a
 * pass over the data: the OSD sends it as a reply's data crc. */
int store_read_async_crc(struct store *st, uint64_t coll, const char *oid,
			 uint64_t off, size_t len, void *buf, uint32_t *crc,
			 store_read_fn cb, void *arg);
/* Small reads completed on the caller's own event loop instead of the
 * store's read-completion thread, which saves that thread's wake-up and
 * the callback's hand-off per read.  After store_read_poll_start, called
 * once on the loop's thread, every read of up to 128 KiB signals efd
 * (the caller's eventfd, which it keeps and closes after store_close)
 * when it completes; the loop, seeing efd readable, calls
 * store_read_poll, which reads efd's count and runs the callbacks of the
 * reads completed: on that thread, or as before on the issuing one when
 * a read needs no device or completes before store_read_async returns.
 * A small store_read on the loop's thread reaps while it waits.  Larger
 * reads stay with the read thread (their blocks' crc checks then run
 * beside the loop).  The loop polls until it stops using the store;
 * store_close completes the reads left itself (efd may still be
 * signalled).  0, -EINVAL, -EBUSY when called twice, or io_setup's
 * error. */
int store_read_poll_start(struct store *st, int efd);
void store_read_poll(struct store *st);

/* Attribute value into a malloc'd buffer (*val, *len), caller frees. */
int store_getattr(struct store *st, uint64_t coll, const char *oid,
		  const char *name, void **val, size_t *len);
/* Calls fn for each attribute in name order; fn returning non-zero stops
 * the walk and that value is returned. */
typedef int (*store_attr_fn)(void *arg, const char *name, const void *val, size_t len);
int store_attrs(struct store *st, uint64_t coll, const char *oid,
		store_attr_fn fn, void *arg);

int store_omap_get(struct store *st, uint64_t coll, const char *oid,
		   const void *key, size_t klen, void **val, size_t *vlen);
/* Calls fn for up to max entries (0 = all) with key > after (after NULL:
 * from the start) in key order (memcmp, shorter first on a tie).  Returns
 * the number of entries visited, or fn's non-zero value, or an error. */
typedef int (*store_kv_fn)(void *arg, const void *key, size_t klen,
			   const void *val, size_t vlen);
int store_omap_list(struct store *st, uint64_t coll, const char *oid,
		    const void *after, size_t after_len, size_t max,
		    store_kv_fn fn, void *arg);

/* Lists object names of coll in order, paged: up to max names (0 = all)
 * after `after` (NULL = from the start).  Returns the count visited or
 * fn's non-zero value; -ENOENT for a missing collection. */
typedef int (*store_name_fn)(void *arg, const char *oid);
int store_list(struct store *st, uint64_t coll, const char *after, size_t max,
	       store_name_fn fn, void *arg);
/* Lists collections in id order with their flags. */
typedef int (*store_coll_fn)(void *arg, uint64_t coll, uint32_t flags);
int store_colls(struct store *st, store_coll_fn fn, void *arg);
int store_coll_exists(struct store *st, uint64_t coll);	/* 1, 0 or <0 */

struct store_statfs {
	uint64_t total;		/* bytes in the data area */
	uint64_t used;		/* bytes of allocated data blocks */
	uint64_t free;		/* total - used */
	uint64_t objects;
	uint64_t stored;	/* logical bytes of all objects */
	uint64_t kv_max;	/* kv map size */
	uint64_t kv_used;	/* kv bytes in use */
	/* kv bytes kept from writes besides: the reserve for deletes and the
	 * logged mutations the next checkpoint brings, at their overlay cost.
	 * Writes other than deletes fail once kv_used + kv_held passes
	 * kv_max, so that sum is how full the kv is. */
	uint64_t kv_held;
	uint64_t compressed_saved;	/* bytes saved by compression */
};
int store_statfs(struct store *st, struct store_statfs *out);
/* The same without kv_max and kv_used (left 0): no kv read, and it never
 * waits for a commit in progress, so an OSD may ask it for every write. */
int store_statfs_quick(struct store *st, struct store_statfs *out);

/* ---- checking -------------------------------------------------------- */

/* Checks that metadata, allocator and checksums agree: every kv value's
 * crc, every onode's chunks inside the data area and the object's size,
 * no block used twice, the counters, no orphan records; with deep, every
 * data block is read and its crc checked.  report (may be NULL) is called
 * once per problem with a sentence naming the object.  Returns the number
 * of problems found (0 = clean) or a negative errno if the check itself
 * could not run. */
typedef void (*store_report_fn)(void *arg, const char *problem);
int store_fsck(struct store *st, bool deep, store_report_fn report, void *arg);

/* The write-ahead log's records not yet checkpointed, oldest first, as
 * they read back from the device (offline inspection: atoll-store-tool
 * log).  mutations[] counts the record's kv mutations by database. */
enum { STORE_LOG_ATTR, STORE_LOG_OMAP, STORE_LOG_ONODE, STORE_LOG_META, STORE_LOG_CHUNK,
       STORE_LOG_NDB };
struct store_log_record {
	uint64_t lsn;		/* record number */
	uint64_t seq;		/* its batch's commit number */
	uint64_t pos;		/* position in the log, blocks over its life */
	uint32_t nblocks;	/* the record's size in blocks */
	uint32_t version;	/* record format */
	uint32_t blocks;	/* logged data blocks */
	uint32_t bad_blocks;	/* of those, with a bad crc */
	uint32_t mutations[STORE_LOG_NDB];
	bool kv;		/* its batch also committed the kv */
	int error;		/* 0, or -EIO: it no longer reads back whole */
};
struct store_log_info {
	uint64_t ckpt_lsn;	/* the last record checkpointed */
	uint64_t tail, head;	/* positions: the first record kept, the next record */
	uint64_t blocks;	/* the log region's size */
};
/* Calls fn for each record (fn's non-zero return stops the walk and is
 * returned); info (may be NULL) gets the log's state.  0 or -errno. */
int store_log_list(struct store *st, struct store_log_info *info,
		   int (*fn)(void *arg, const struct store_log_record *r), void *arg);

#endif
