/*
 * image.h - block images on atoll: the public C API of libatoll-image.
 *
 * Overview.  An image is a virtual disk of a fixed size (resizable) kept
 * in a pool as many data objects of one object size (4 MiB by default),
 * plus one header object.  Data objects are created on first write: a new
 * 1 TiB image costs nothing and an unwritten range reads as zeros.  Open
 * an image (atoll_image_open) on an I/O context of libatoll (atoll.h),
 * then read, write, discard, write zeros and flush at any offset and
 * length: the library splits each request over the objects it touches and
 * issues the pieces in parallel.  Snapshots are read-only, point-in-time
 * copies kept copy-on-write at object granularity; open one with the
 * spec "image@snap".
 *
 * One writer.  An image is opened for writing by one handle at a time: the
 * handle holds a leased lock in the header object, renewed by a library
 * thread.  A second writer gets -EBUSY.  A lock whose holder died is
 * broken on purpose (atoll_image_break_lock, or the open flag
 * ATOLL_IMAGE_OPEN_BREAK_LOCK): that also puts the old holder on the
 * cluster's blocklist, so the OSDs refuse its late writes (-EPERM), and a
 * fenced handle fails every later write with -EPERM.
 *
 * Snapshots while writing.  A snapshot of an image that a writer holds is
 * taken through that writer: atoll_image_snap_create records a request in
 * the header, the writer sees it at its next lease renewal (about every
 * second), calls the quiesce callback if one is set, waits until every
 * write it has started completes, holds new writes back, commits the
 * snapshot and acknowledges.  So every write that completed before
 * atoll_image_snap_create was called is in the snapshot, and none is torn.
 * Without a writer the caller commits the snapshot itself.
 *
 * Asynchronous calls.  The atoll_image_aio_* calls take libatoll's
 * completions (struct atoll_completion, atoll.h), as libatoll's own
 * object calls do: create one with atoll_completion_create (a callback,
 * its user data and an optional free function for that data), pass it,
 * then wait for it or let its callback run; atoll_completion_return gives
 * the result.  One completion per request; the synchronous calls are
 * "issue, wait, release" over the asynchronous ones.
 *
 * Threads.  Every function may be called from any thread.  Completion
 * callbacks run on a library thread (libatoll's): they must not block and
 * must not wait for another image completion; they may issue new requests.
 *
 * Sharp edges.
 *  - Buffers passed to atoll_image_aio_* must stay valid until the
 *    completion fires (the library does not copy write data).
 *  - Close every image before destroying its ioctx; atoll_image_close
 *    waits for the requests in flight.
 *  - Writes to one image that overlap and are in flight at the same time
 *    land in no defined order (as on a disk); order them yourself.
 *
 * Conventions (as in atoll.h): 0 or a negative errno (atoll_strerror()
 * explains each); close functions accept NULL; `flags` arguments must be 0
 * unless flags are documented (-EINVAL otherwise); structs the caller
 * passes carry their size in size_of, always set by the caller to its
 * sizeof (the library reads or fills only the fields below it), and only
 * grow at the end; the library never prints.
 *
 * Names.  Image and snapshot names are 1..ATOLL_IMAGE_NAME_MAX bytes of
 * printable ASCII without '/', '@' or spaces (-EINVAL otherwise).
 */
#ifndef ATOLL_IMAGE_H
#define ATOLL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <atoll/atoll.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATOLL_IMAGE_VERSION_MAJOR 0
#define ATOLL_IMAGE_VERSION_MINOR 2
#define ATOLL_IMAGE_VERSION_PATCH 0
#define ATOLL_IMAGE_VERSION_NUMBER \
	(ATOLL_IMAGE_VERSION_MAJOR * 10000 + ATOLL_IMAGE_VERSION_MINOR * 100 + \
	 ATOLL_IMAGE_VERSION_PATCH)

/* The version of libatoll-image actually loaded (major*10000 + minor*100
 * + patch); str, if not NULL, receives a static "major.minor.patch". */
int atoll_image_version(const char **str);

#define ATOLL_IMAGE_NAME_MAX 96
#define ATOLL_IMAGE_DEFAULT_OBJECT_SIZE (UINT64_C(4) << 20)
/* Object sizes are powers of two in [4 KiB, 64 MiB]. */
#define ATOLL_IMAGE_MIN_OBJECT_SIZE (UINT64_C(4) << 10)
#define ATOLL_IMAGE_MAX_OBJECT_SIZE (UINT64_C(64) << 20)
/* Image sizes are multiples of 512 bytes, at most 2^60. */
#define ATOLL_IMAGE_MAX_SIZE (UINT64_C(1) << 60)

struct atoll_image;

/* ---- images as a whole (no open handle needed) ---------------------- */

struct atoll_image_create_options {
	size_t size_of;		/* sizeof(struct atoll_image_create_options) */
	uint64_t object_size;	/* 0 = ATOLL_IMAGE_DEFAULT_OBJECT_SIZE */
	uint64_t features;	/* must be 0 today */
};

/* Creates image `name` of `size` bytes in io's pool; opt may be NULL.
 * -EEXIST when the name is taken, -EINVAL for a bad name, size or
 * option.  Writes only the header and the pool's image directory. */
int atoll_image_create(struct atoll_ioctx *io, const char *name, uint64_t size,
		       const struct atoll_image_create_options *opt);

/* Removes an image, its data objects and its snapshots.  -ENOENT; -EBUSY
 * when a writer holds its lock (break it first if that writer is dead);
 * -ENOTEMPTY when it has snapshots, unless flags has
 * ATOLL_IMAGE_REMOVE_SNAPSHOTS. */
#define ATOLL_IMAGE_REMOVE_SNAPSHOTS 1u
int atoll_image_remove(struct atoll_ioctx *io, const char *name, unsigned flags);

/* Writes the image names of io's pool, sorted, each NUL-terminated, into
 * buf; returns the bytes needed (call with len 0 to size the buffer) or a
 * negative errno. */
int64_t atoll_image_list(struct atoll_ioctx *io, char *buf, size_t len);

/* What atoll_image_stat and atoll_image_get_info report.  Set size_of
 * before the call; fields past size_of are not written. */
struct atoll_image_info {
	size_t size_of;		/* sizeof(struct atoll_image_info) */
	uint64_t size;		/* bytes (of the snapshot, for a snapshot handle) */
	uint64_t object_size;
	uint64_t num_objects;	/* objects the size spans (not those that exist) */
	uint64_t features;
	char id[17];		/* the image id: 16 hex digits + NUL */
	char prefix[40];	/* data object name prefix, e.g. "img_data.<id>." */
	uint32_t num_snaps;
	uint64_t lock_owner;	/* client id of the writer holding the lock, 0 none */
	uint64_t lock_expires_ns; /* CLOCK_REALTIME ns when its lease ends */
	uint64_t created_ns;	/* CLOCK_REALTIME ns */
};

/* Information about image `name` (not a snapshot spec).  -ENOENT. */
int atoll_image_stat(struct atoll_ioctx *io, const char *name,
		     struct atoll_image_info *info);

/* Breaks the lock on image `name` held by a writer that is gone: puts the
 * holder's client id on the cluster's blocklist (the OSDs then refuse its
 * writes with -EPERM; the monitor forgets the entry after an hour) and
 * clears the lock.  0 also when no lock was held.  -ENOENT; -EPERM when
 * the monitor refuses the blocklist command. */
int atoll_image_break_lock(struct atoll_ioctx *io, const char *name, unsigned flags);

/* ---- snapshots ------------------------------------------------------ */

/* Filled by the library (not the caller, unlike size_of elsewhere):
 * struct_size says which fields the library knows, so a caller built
 * against a newer header reads only the fields below it. */
struct atoll_image_snap_info {
	size_t struct_size;	/* the library's sizeof(struct atoll_image_snap_info) */
	uint64_t id;		/* grows with every snapshot of the image */
	uint64_t size;		/* the image size when it was taken */
	uint64_t created_ns;	/* CLOCK_REALTIME ns */
	const char *name;	/* valid during the callback only */
};
/* Called once per snapshot, oldest first; a non-zero return stops the
 * listing and becomes atoll_image_snap_list's result. */
typedef int (*atoll_image_snap_cb)(const struct atoll_image_snap_info *snap, void *arg);

/* Takes snapshot `snap` of image `name`.  When a writer holds the lock
 * the snapshot is taken by that writer (see the overview) and this call
 * returns after it acknowledged, or -ETIMEDOUT after timeout_ms (0 = 30
 * s; the request is then withdrawn).  -EEXIST, -ENOENT, -EINVAL (bad
 * name), -ENOSPC (over 256 snapshots). */
int atoll_image_snap_create(struct atoll_ioctx *io, const char *name,
			    const char *snap, unsigned timeout_ms, unsigned flags);
/* Removes snapshot `snap` (its preserved objects too), through the writer
 * like snap_create when one holds the lock.  -ENOENT, -ETIMEDOUT. */
int atoll_image_snap_remove(struct atoll_ioctx *io, const char *name,
			    const char *snap, unsigned timeout_ms, unsigned flags);
/* Lists the snapshots of image `name`: 0, the callback's non-zero
 * return, -ENOENT. */
int atoll_image_snap_list(struct atoll_ioctx *io, const char *name,
			  atoll_image_snap_cb cb, void *arg);
/* Makes the image's content (and size) that of snapshot `snap` again;
 * the snapshot stays.  Needs the lock: -EBUSY when a writer holds it. */
int atoll_image_snap_rollback(struct atoll_ioctx *io, const char *name,
			      const char *snap, unsigned flags);

/* ---- open images ---------------------------------------------------- */

#define ATOLL_IMAGE_OPEN_READ_ONLY 1u	/* no lock; writes get -EROFS */
#define ATOLL_IMAGE_OPEN_BREAK_LOCK 2u	/* break (and fence) a held lock first */

/* Called (on a library thread) when a snapshot is about to be taken by
 * this writer, before it waits for the writes in flight.  A caller that
 * caches writes issues them all now and then calls
 * atoll_image_quiesce_done (from any thread, within the snapshot
 * timeout).  Writes issued after the callback was called are held until
 * the snapshot is committed. */
typedef void (*atoll_image_quiesce_cb)(struct atoll_image *img, const char *snap,
				       void *arg);

struct atoll_image_open_options {
	size_t size_of;		/* sizeof(struct atoll_image_open_options) */
	unsigned flags;		/* ATOLL_IMAGE_OPEN_* */
	unsigned lease_ms;	/* lock lease; 0 = 15000 (renewed every lease/15, at least 1 s) */
	atoll_image_quiesce_cb quiesce;	/* NULL: nothing to flush before a snapshot */
	void *quiesce_arg;
};

/* Opens `spec`: "image" (read-write with the exclusive lock unless
 * ATOLL_IMAGE_OPEN_READ_ONLY) or "image@snap" (always read-only).  opt
 * may be NULL (read-write, defaults).  -ENOENT (no such image or
 * snapshot), -EBUSY (another writer holds the lock: its client id is in
 * atoll_image_stat's lock_owner; break it only if that writer is dead),
 * -EINVAL. */
int atoll_image_open(struct atoll_ioctx *io, const char *spec,
		     const struct atoll_image_open_options *opt,
		     struct atoll_image **out);
/* Waits for the requests in flight, releases the lock, frees the handle.
 * Returns the first error of a write that failed after being
 * acknowledged to nobody (e.g. -EPERM when fenced), else 0.  NULL ok. */
int atoll_image_close(struct atoll_image *img);

/* The size in bytes (the snapshot's for a snapshot handle). */
uint64_t atoll_image_size(struct atoll_image *img);
uint64_t atoll_image_object_size(struct atoll_image *img);
/* 1 for read-only and snapshot handles, 0 for the writer. */
int atoll_image_is_read_only(struct atoll_image *img);
/* The same as atoll_image_stat, from the handle's current view. */
int atoll_image_get_info(struct atoll_image *img, struct atoll_image_info *info);
/* 0 while this handle holds its lock; -EPERM once it was fenced (lock
 * broken by someone else), -EROFS for read-only handles. */
int atoll_image_lock_status(struct atoll_image *img);

/* Resizes the image (writer handles only).  Shrinking removes or
 * truncates the data objects past the new end; snapshots keep their
 * content.  -EROFS, -EINVAL (not a multiple of 512, over the maximum). */
int atoll_image_resize(struct atoll_image *img, uint64_t size, unsigned flags);

/* Tells the library that the quiesce callback's work is done (rc 0), or
 * that it failed (rc < 0: the snapshot is refused with rc). */
void atoll_image_quiesce_done(struct atoll_image *img, int rc);

/* ---- I/O ------------------------------------------------------------ */

/* Each aio call returns 0 when the request was issued (comp then fires
 * exactly once, possibly before the call returns) or a negative errno
 * when it was refused at once (comp does not fire and may be used for
 * another request): -EINVAL (off + len past the end of the image, len
 * over 64 MiB, bad flags, comp NULL or used before), -EROFS (a write to a
 * read-only handle), -EPERM (fenced), -ENOMEM.  The completion's result
 * (atoll_completion_return) is the bytes transferred for reads and
 * writes (always the full length), the extent count for block status, 0
 * for the others, or a negative errno; its version is 0.  A zero length
 * completes with 0.  A write is durable on every replica when it
 * completes, so no FUA flag is needed; flush completes once every write
 * issued before it has completed. */
#define ATOLL_IMAGE_IO_MAX (UINT64_C(64) << 20)

int atoll_image_aio_read(struct atoll_image *img, void *buf, size_t len, uint64_t off,
			 struct atoll_completion *comp, unsigned flags);
int atoll_image_aio_write(struct atoll_image *img, const void *buf, size_t len,
			  uint64_t off, struct atoll_completion *comp, unsigned flags);
/* Deallocates the range: whole objects are removed, parts are zeroed, so
 * the range reads as zeros afterwards. */
int atoll_image_aio_discard(struct atoll_image *img, uint64_t off, uint64_t len,
			    struct atoll_completion *comp, unsigned flags);
/* Makes the range read as zeros.  ATOLL_IMAGE_ZERO_NO_HOLE: keep the
 * space allocated (otherwise the library may deallocate it, as discard). */
#define ATOLL_IMAGE_ZERO_NO_HOLE 1u
int atoll_image_aio_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_completion *comp, unsigned flags);
int atoll_image_aio_flush(struct atoll_image *img, struct atoll_completion *comp,
			  unsigned flags);

/* Allocation of a range, for NBD block status.  Flag values are those of
 * NBD's base:allocation context. */
#define ATOLL_IMAGE_EXTENT_HOLE 1u	/* no data object backs the range */
#define ATOLL_IMAGE_EXTENT_ZERO 2u	/* the range reads as zeros */
struct atoll_image_extent {
	uint64_t off;
	uint64_t len;
	uint32_t flags;		/* 0 = allocated data, or HOLE|ZERO */
};
/* Fills ext[0..max) with consecutive extents starting at off and covering
 * at most len bytes (fewer when max is reached: the last one ends where
 * the answer stops); adjacent extents with the same flags are merged.
 * The completion's result is the number of extents filled (at least 1
 * when len > 0).  Granularity: an object, or the end of a short object.
 * ext must stay valid until the completion fires. */
int atoll_image_aio_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max,
				 struct atoll_completion *comp, unsigned flags);

/* Synchronous forms: issue with a private completion, wait, return the
 * result; flags as for the asynchronous call. */
int64_t atoll_image_read(struct atoll_image *img, void *buf, size_t len, uint64_t off,
			 unsigned flags);
int64_t atoll_image_write(struct atoll_image *img, const void *buf, size_t len,
			  uint64_t off, unsigned flags);
int atoll_image_discard(struct atoll_image *img, uint64_t off, uint64_t len,
			unsigned flags);
int atoll_image_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
			     unsigned flags);
int atoll_image_flush(struct atoll_image *img, unsigned flags);
int64_t atoll_image_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif
