/*
 * atoll.h - the public C API of atoll.
 *
 * atoll pools the disks of several servers into one redundant object
 * store.  This header is the manual of its client library, libatoll.
 *
 * Overview.  Create a cluster handle (atoll_cluster_create), connect it
 * to the monitor (atoll_cluster_connect), open an I/O context on a pool
 * (atoll_ioctx_create) and read and write objects in it.  An object is
 * named by a string (1..400 bytes, no NUL), holds up to 128 MiB of data
 * (by default), small named attributes ("xattrs") and a sorted key/value
 * map ("omap").  Every operation exists asynchronously (atoll_aio_*, with
 * a completion) and synchronously (issue + wait).  Several operations on
 * one object can be applied atomically as one compound op (atoll_op_*),
 * with guards that make it fail as a whole (create exclusively, compare
 * an attribute, assert the object's version).
 *
 * Durability.  A write completes only when every member of the object's
 * placement group acting set has it durable on disk.  A completion's
 * version is the object's version after the op; it grows with every write.
 * Lost connections and map changes are handled inside the library: an op
 * is resent with the same request id, and one that was already applied
 * returns its first result (it is never applied twice).
 *
 * Threads.  Every function may be called from any thread; handles may be
 * shared.  Completion callbacks run on a library thread: they must not
 * block and must not wait on another completion (call
 * atoll_completion_release from the callback if you like).
 *
 * Sharp edges.
 *  - Buffers passed to atoll_aio_* calls must stay valid until the
 *    completion fires (the library does not copy write data).
 *  - Shutting a cluster handle down with ops in flight is allowed: see
 *    atoll_cluster_shutdown for what happens to them.  Not allowed: any
 *    call on the handle, or on an ioctx, list or image of it, from
 *    another thread while shutdown runs, or from anywhere after it
 *    returned, except atoll_ioctx_destroy (the completion callbacks that
 *    shutdown runs may issue ops: they are refused).  Close images
 *    (libatoll-image) and lists before shutting down.
 *
 * Conventions that hold for every function here:
 *  - errors are returned as 0 or a negative errno; atoll_strerror() turns
 *    any of them into a sentence, atoll_last_error() gives the details of
 *    the last failure on the calling thread.  The library never prints.
 *  - functions that destroy or close a handle accept NULL.
 *  - a `flags` argument must be 0 unless the function documents a flag
 *    (-EINVAL otherwise).
 *  - option structs carry their size (size_of, set by the caller to its
 *    sizeof) and only grow at the end.
 *
 * Errors every object call may return: -ENOENT (no such object or pool),
 * -EFBIG (over the object size limit), -ENOSPC (the cluster is full;
 * deletes still work), -ETIMEDOUT (client_op_timeout passed),
 * -EKEYREJECTED (client_op_timeout passed while the OSD refused this
 * client's ticket, e.g. its clock is off: CLOCK_SKEW), -EINVAL (a
 * bad argument, e.g. an empty name), -ENAMETOOLONG (name over 400 bytes),
 * -E2BIG (an op over the 64 MiB payload limit or 10,000 key/value
 * entries), -EPERM (this client was fenced by the cluster).
 */
#ifndef ATOLL_ATOLL_H
#define ATOLL_ATOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATOLL_VERSION_MAJOR 0
#define ATOLL_VERSION_MINOR 2
#define ATOLL_VERSION_PATCH 0
/* One integer that compares in release order. */
#define ATOLL_VERSION_NUMBER \
	(ATOLL_VERSION_MAJOR * 10000 + ATOLL_VERSION_MINOR * 100 + ATOLL_VERSION_PATCH)

/* The version of the library actually loaded, as major*10000 +
 * minor*100 + patch (compare with ATOLL_VERSION_NUMBER); if str is not
 * NULL it receives a static "major.minor.patch" string. */
int atoll_version(const char **str);

/* A sentence for err (a negative errno as returned by atoll calls; a
 * positive errno is accepted too).  Never NULL; the string is static. */
const char *atoll_strerror(int err);

/* The message of the last failure of an atoll call on this thread, or ""
 * when none failed yet, like libnbd's nbd_get_error().  It says more than
 * the errno: a bad configuration file names the file and line ("config
 * file '/etc/atoll/atoll.conf' line 12: ..."), a refused argument names
 * the call, a failed connect the monitor's address.
 * The string is thread-local: a failure on another thread (or on a
 * library thread, e.g. in a completion) never changes it.  It stays
 * valid and unchanged until this thread's next failing atoll call;
 * successful calls do not clear it, so read it right after the call
 * that failed.  Never NULL. */
const char *atoll_last_error(void);

/* Frees memory the library handed out (command output, ...). NULL ok. */
void atoll_free(void *p);

/* ---- the cluster connection ---------------------------------------- */

struct atoll_cluster;
struct atoll_ioctx;
struct atoll_completion;
struct atoll_op;
struct atoll_kv_iter;
struct atoll_list;

/* A new, unconnected handle.  conf is the path of atoll.conf, or NULL to
 * search $ATOLL_CONF, ./atoll.conf, /etc/atoll/atoll.conf (none found is
 * fine: then set mon_host with atoll_cluster_set).  -ENOENT when conf is
 * given and missing, -EINVAL for a malformed file. */
int atoll_cluster_create(struct atoll_cluster **out, const char *conf, unsigned flags);
/* Overrides a configuration option before connecting (e.g. "mon_host",
 * "client_op_timeout").  -EINVAL for an unknown key or a bad value. */
int atoll_cluster_set(struct atoll_cluster *c, const char *key, const char *value);
/* Connects to the monitor and fetches the current map; waits at most
 * client_mount_timeout (default 30 s): -ETIMEDOUT, -ECONNREFUSED. */
int atoll_cluster_connect(struct atoll_cluster *c);
/* Closes connections and frees the handle.  NULL is fine.
 * Ops still in flight are not waited for: each completes exactly once
 * before shutdown returns, with its result if the answer arrived first,
 * else with -ESHUTDOWN; their callbacks run on the calling thread or a
 * library thread.  An op issued while shutdown runs (e.g. from one of
 * those callbacks) is refused at once with -ESHUTDOWN (its completion
 * does not fire).  Completions outlive the handle: wait for, read and
 * release them after shutdown as before. */
void atoll_cluster_shutdown(struct atoll_cluster *c);
/* The cluster's fsid as 36 characters + NUL (connected handles only). */
int atoll_cluster_fsid(struct atoll_cluster *c, char out[37]);
/* This handle's client id (unique per handle; the "client.N" in logs). */
uint64_t atoll_cluster_id(struct atoll_cluster *c);
/* The epoch of the map the handle holds. */
uint64_t atoll_cluster_epoch(struct atoll_cluster *c);
/* Waits until the handle holds the monitor's newest map. */
int atoll_cluster_wait_for_latest_map(struct atoll_cluster *c);

/* Sends a command (a JSON object, see doc/cli.md) to the monitor.
 * Returns the command's rc; *status (a sentence, may be empty) and *out
 * (its output, NUL-terminated, *outlen bytes without the NUL) are
 * malloc'd for the caller (atoll_free); either pointer may be NULL. */
int atoll_mon_command(struct atoll_cluster *c, const char *json,
		      char **status, char **out, size_t *outlen);

/* ---- pools --------------------------------------------------------- */

struct atoll_pool_options {
	size_t size_of;			/* sizeof(struct atoll_pool_options) */
	unsigned size;			/* replicas; 0 = 3 (or the OSD count if fewer) */
	unsigned min_size;		/* 0 = size - size/2 */
	unsigned pg_num;		/* 0 = 64 */
	const char *failure_domain;	/* "host" or "osd"; NULL = "host" */
	int compress;			/* lz4 in the stores */
};
/* -EEXIST, -EINVAL (bad options, with no domain to place size replicas
 * is still allowed: the pool is undersized and health says so). */
int atoll_pool_create(struct atoll_cluster *c, const char *name,
		      const struct atoll_pool_options *opt);
/* Deletes a pool and every object in it.  -ENOENT. */
int atoll_pool_delete(struct atoll_cluster *c, const char *name);
/* The pool's id, or -ENOENT. */
int64_t atoll_pool_lookup(struct atoll_cluster *c, const char *name);
/* Writes the pool names, each NUL-terminated, into buf; returns the bytes
 * needed (call with len 0 to size the buffer). */
int64_t atoll_pool_list(struct atoll_cluster *c, char *buf, size_t len);

/* An I/O context on a pool: -ENOENT when the pool does not exist. */
int atoll_ioctx_create(struct atoll_cluster *c, const char *pool,
		       struct atoll_ioctx **out, unsigned flags);
void atoll_ioctx_destroy(struct atoll_ioctx *io);
/* The cluster handle io was created on (libraries built on an ioctx,
 * such as libatoll-image, use it for monitor commands and the client id). */
struct atoll_cluster *atoll_ioctx_get_cluster(struct atoll_ioctx *io);
/* ATOLL_IOCTX_FULL_TRY: the writes of io may use the space an OSD keeps
 * above its failsafe full ratio, and are not refused for the monitor's
 * full flag: for small metadata that must go on when the cluster is
 * full (the file system's journal, so that deletes work).  Never for
 * bulk data.  0 clears it.  Set it before io's first op.  -EINVAL for an
 * unknown flag. */
#define ATOLL_IOCTX_FULL_TRY 0x1u
int atoll_ioctx_set_flags(struct atoll_ioctx *io, unsigned flags);

/* ---- completions ---------------------------------------------------- */

/* Called once when the op completes (from a library thread). */
typedef void (*atoll_callback_t)(struct atoll_completion *comp, void *arg);
/* Frees a callback's user data. */
typedef void (*atoll_free_t)(void *arg);
/* A completion for one op.  cb may be NULL (then wait for it).  free_arg
 * may be NULL; otherwise it is called with arg exactly once, when the
 * completion is freed: after cb has run (if the op was issued) and both
 * the caller (atoll_completion_release) and the op let go of it, so cb
 * never sees freed user data.  The same completion type serves
 * libatoll-image (image.h). */
int atoll_completion_create(atoll_callback_t cb, void *arg, atoll_free_t free_arg,
			    struct atoll_completion **out);
/* Waits until the op completes; returns its result. */
int64_t atoll_completion_wait(struct atoll_completion *comp);
int atoll_completion_is_complete(struct atoll_completion *comp);
/* The result: bytes for reads, 0 for writes, or a negative errno. */
int64_t atoll_completion_return(struct atoll_completion *comp);
/* The object's version after the op (0 on failure). */
uint64_t atoll_completion_version(struct atoll_completion *comp);
/* Releases the caller's reference; an op still in flight keeps its own
 * and completes normally (its callback still runs).  NULL is fine. */
void atoll_completion_release(struct atoll_completion *comp);

/* For libraries built on libatoll whose own asynchronous calls take
 * completions (libatoll-image), so that one completion type serves both.
 * atoll_completion_begin claims comp for one request of the library once
 * the request can no longer be refused: -EINVAL when comp is NULL or was
 * used before.  The library then calls atoll_completion_finish exactly
 * once, from any thread: it publishes result (and version, 0 on failure),
 * runs the callback on the calling thread and drops the library's
 * reference. */
int atoll_completion_begin(struct atoll_completion *comp);
void atoll_completion_finish(struct atoll_completion *comp, int64_t result,
			     uint64_t version);

/* Gathering what callbacks do.  Called from a completion callback (a
 * library thread), atoll_defer runs fn(arg) later on that thread: after
 * the completions that arrived together have all run, before the thread
 * waits for more.  Callbacks that each queue a reply can so send every
 * reply of a burst in one system call.  fn must not block either; it may
 * call atoll_defer again (it then runs in the same pass).  Returns 1 when
 * deferred, 0 when the calling thread is not a library thread (or memory
 * is short): then nothing was deferred and the caller does the work
 * itself; -EINVAL when fn is NULL. */
typedef void (*atoll_defer_t)(void *arg);
int atoll_defer(atoll_defer_t fn, void *arg);

/* Gathering what an application's thread issues.  A request issued on a
 * thread that is not the library's is queued for the library's thread,
 * which is woken to send it.  Between atoll_hold() and atoll_release()
 * that wake-up waits for atoll_release(), or for the thread's next wait
 * inside the library (atoll_completion_wait, a synchronous call, the
 * in-flight throttle): the requests a thread issues in a row (a batch of
 * them read from a socket) then leave together, one system call per
 * connection, and the library's thread wakes once.  Calls nest; the
 * outermost atoll_release() wakes.  Release before waiting elsewhere for
 * anything those requests lead to (a callback's signal): until then they
 * may not have left.  Release before atoll_cluster_shutdown. */
void atoll_hold(void);
void atoll_release(void);

/* ---- object operations --------------------------------------------- */

/* Each aio call returns 0 when the op was issued (the completion then
 * fires once) or a negative errno when it was refused at once (the
 * completion does not fire).  A completion is used for one op only. */
int atoll_aio_write(struct atoll_ioctx *io, const char *oid,
		    struct atoll_completion *comp,
		    const void *buf, size_t len, uint64_t off, unsigned flags);
int atoll_aio_write_full(struct atoll_ioctx *io, const char *oid,
			 struct atoll_completion *comp, const void *buf, size_t len,
			 unsigned flags);
int atoll_aio_append(struct atoll_ioctx *io, const char *oid,
		     struct atoll_completion *comp, const void *buf, size_t len,
		     unsigned flags);
/* Result: the bytes read (short at the end of the object). */
int atoll_aio_read(struct atoll_ioctx *io, const char *oid,
		   struct atoll_completion *comp, void *buf, size_t len, uint64_t off,
		   unsigned flags);
int atoll_aio_stat(struct atoll_ioctx *io, const char *oid,
		   struct atoll_completion *comp, uint64_t *size, uint64_t *mtime_ns,
		   unsigned flags);
int atoll_aio_remove(struct atoll_ioctx *io, const char *oid,
		     struct atoll_completion *comp, unsigned flags);
int atoll_aio_truncate(struct atoll_ioctx *io, const char *oid,
		       struct atoll_completion *comp, uint64_t size, unsigned flags);

/* Synchronous forms: issue, wait, return the result. */
int atoll_write(struct atoll_ioctx *io, const char *oid,
		const void *buf, size_t len, uint64_t off, unsigned flags);
int atoll_write_full(struct atoll_ioctx *io, const char *oid,
		     const void *buf, size_t len, unsigned flags);
int atoll_append(struct atoll_ioctx *io, const char *oid,
		 const void *buf, size_t len, unsigned flags);
int64_t atoll_read(struct atoll_ioctx *io, const char *oid,
		   void *buf, size_t len, uint64_t off, unsigned flags);
int atoll_stat(struct atoll_ioctx *io, const char *oid,
	       uint64_t *size, uint64_t *mtime_ns, unsigned flags);
int atoll_remove(struct atoll_ioctx *io, const char *oid, unsigned flags);
int atoll_truncate(struct atoll_ioctx *io, const char *oid, uint64_t size,
		   unsigned flags);

/* Attributes.  getxattr returns the value's length, copying at most len
 * bytes into buf (-ERANGE when len is too small, -ENODATA when missing). */
int64_t atoll_getxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		       void *buf, size_t len, unsigned flags);
int atoll_setxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		   const void *val, size_t len, unsigned flags);
int atoll_rmxattr(struct atoll_ioctx *io, const char *oid, const char *name,
		  unsigned flags);
/* Every attribute, as an iterator (name in key). */
int atoll_getxattrs(struct atoll_ioctx *io, const char *oid, struct atoll_kv_iter **out,
		    unsigned flags);

/* Key/value maps.  Keys are byte strings of 1..400 bytes, sorted
 * bytewise; values up to 64 MiB; at most 10,000 entries per call. */
struct atoll_kv {
	const void *key;
	size_t klen;
	const void *val;
	size_t vlen;
};
int atoll_omap_set(struct atoll_ioctx *io, const char *oid,
		   const struct atoll_kv *kv, size_t n, unsigned flags);
/* The entries for the given keys (val ignored); missing keys are left
 * out of the result. */
int atoll_omap_get(struct atoll_ioctx *io, const char *oid,
		   const struct atoll_kv *keys, size_t n, struct atoll_kv_iter **out,
		   unsigned flags);
/* Up to max entries (0 = 1000) with key > after (after NULL = from the
 * start); *more is set to 1 when entries remain. */
int atoll_omap_list(struct atoll_ioctx *io, const char *oid,
		    const void *after, size_t afterlen, size_t max,
		    struct atoll_kv_iter **out, int *more, unsigned flags);
int atoll_omap_rm(struct atoll_ioctx *io, const char *oid,
		  const struct atoll_kv *keys, size_t n, unsigned flags);
int atoll_omap_clear(struct atoll_ioctx *io, const char *oid, unsigned flags);

/* Iterates a key/value result: 0 with the next entry (pointers valid
 * until the iterator is freed), -ENOENT at the end. */
int atoll_kv_iter_next(struct atoll_kv_iter *it, const void **key, size_t *klen,
		       const void **val, size_t *vlen);
size_t atoll_kv_iter_count(const struct atoll_kv_iter *it);
void atoll_kv_iter_free(struct atoll_kv_iter *it);

/* ---- compound ops --------------------------------------------------- */

/* A compound op gathers several ops on one object; the OSD applies them
 * atomically and in order, or none of them (the first failure is the
 * result).  An op is either a write op (guards + changes) or a read op
 * (guards + reads); mixing changes and reads is -EINVAL at operate.
 * Builder calls record the first error (e.g. ENOMEM) and operate returns
 * it.  Buffers must stay valid until the op completes. */
/* A new, empty op; NULL with errno set when out of memory (ENOMEM) or
 * when flags has a bit this version does not know (EINVAL). */
struct atoll_op *atoll_op_create(unsigned flags);
void atoll_op_release(struct atoll_op *op);

/* guards */
void atoll_op_assert_exists(struct atoll_op *op);
/* The object's version must equal ver: -ERANGE otherwise. */
void atoll_op_assert_version(struct atoll_op *op, uint64_t ver);
/* Creates the object; exclusive: -EEXIST when it exists. */
void atoll_op_create_object(struct atoll_op *op, int exclusive);
enum atoll_cmp {
	ATOLL_CMP_EQ = 1, ATOLL_CMP_NE, ATOLL_CMP_GT, ATOLL_CMP_GE,
	ATOLL_CMP_LT, ATOLL_CMP_LE,
};
/* Compares the attribute (bytewise; a missing attribute compares as the
 * empty value) with val: -ECANCELED when the comparison is false. */
void atoll_op_cmpxattr(struct atoll_op *op, const char *name, enum atoll_cmp cmp,
		       const void *val, size_t len);

/* changes */
void atoll_op_write(struct atoll_op *op, const void *buf, size_t len, uint64_t off);
void atoll_op_write_full(struct atoll_op *op, const void *buf, size_t len);
void atoll_op_append(struct atoll_op *op, const void *buf, size_t len);
void atoll_op_truncate(struct atoll_op *op, uint64_t size);
void atoll_op_zero(struct atoll_op *op, uint64_t off, uint64_t len);
void atoll_op_remove(struct atoll_op *op);
void atoll_op_setxattr(struct atoll_op *op, const char *name, const void *val, size_t len);
void atoll_op_rmxattr(struct atoll_op *op, const char *name);
void atoll_op_omap_set(struct atoll_op *op, const struct atoll_kv *kv, size_t n);
void atoll_op_omap_rm(struct atoll_op *op, const struct atoll_kv *keys, size_t n);
void atoll_op_omap_clear(struct atoll_op *op);

/* reads: outputs are filled when the op completes; rval (may be NULL)
 * gets that step's own result */
void atoll_op_read(struct atoll_op *op, uint64_t off, size_t len, void *buf,
		   size_t *bytes_read, int *rval);
void atoll_op_stat(struct atoll_op *op, uint64_t *size, uint64_t *mtime_ns, int *rval);
void atoll_op_getxattr(struct atoll_op *op, const char *name,
		       struct atoll_kv_iter **out, int *rval);
void atoll_op_omap_list(struct atoll_op *op, const void *after, size_t afterlen,
			size_t max, struct atoll_kv_iter **out, int *more, int *rval);
void atoll_op_omap_get(struct atoll_op *op, const struct atoll_kv *keys, size_t n,
		       struct atoll_kv_iter **out, int *rval);

/* Applies op to object oid; the op may be released once it completes. */
int atoll_op_operate(struct atoll_op *op, struct atoll_ioctx *io, const char *oid,
		     unsigned flags);
int atoll_aio_op_operate(struct atoll_op *op, struct atoll_ioctx *io, const char *oid,
			 struct atoll_completion *comp, unsigned flags);

/* ---- listing -------------------------------------------------------- */

/* Lists the objects of the pool, PG by PG, in no particular order; every
 * object that exists for the whole listing is returned exactly once. */
int atoll_list_open(struct atoll_ioctx *io, struct atoll_list **out, unsigned flags);
/* 0 and the next name (valid until the next call), -ENOENT at the end. */
int atoll_list_next(struct atoll_list *l, const char **oid);
/* The position as a string (at most 512 bytes with its NUL) that
 * atoll_list_seek() accepts later, on any handle of the same pool. */
int atoll_list_cursor(struct atoll_list *l, char *buf, size_t len);
int atoll_list_seek(struct atoll_list *l, const char *cursor);
void atoll_list_close(struct atoll_list *l);

#ifdef __cplusplus
}
#endif

#endif
