/*
 * image-int.h - private types of libatoll-image, shared by the files of
 * blockdev/ (not blockdev/nbd/) and by nothing else.
 *
 * Layout in the pool (doc/images.md):
 *   img_directory                  omap "name" -> image id (listing)
 *   img_id.<name>                  data: the id; created exclusively (claims the name)
 *   img_header.<id>                data: the header as JSON; xattr "lock";
 *                                  omap "req.<cookie>" / "ack.<cookie>" (snapshot requests)
 *   img_data.<id>.<objno:016x>     the image's bytes [objno*osize, (objno+1)*osize)
 *   img_snap.<id>.<snap:016x>.<objno:016x>  an object's content preserved for a snapshot
 *
 * Locking: img->lock protects every mutable field of struct atoll_image
 * marked (L).  It is never held while issuing object ops whose callbacks
 * may take it (libatoll may run a callback inline on error).
 */
#ifndef ATOLL_BLOCKDEV_IMAGE_INT_H
#define ATOLL_BLOCKDEV_IMAGE_INT_H

#include "atoll/atoll.h"
#include "atoll/image.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMG_DIRECTORY		"img_directory"
#define IMG_OID_MAX		128
#define IMG_SNAPS_MAX		256
#define IMG_LOCK_MAX		128
#define IMG_DEFAULT_LEASE_MS	15000u
#define IMG_TICK_MS		200u
#define IMG_SNAP_TIMEOUT_MS	30000u
#define IMG_BLOCKLIST_SECONDS	3600

/* ---- names (names.c) ---- */
int img_check_name(const char *name);
void img_oid_id(char *out, const char *name);
void img_oid_header(char *out, const char *id);
void img_oid_data(char *out, const char *id, uint64_t objno);
void img_oid_snap(char *out, const char *id, uint64_t snap, uint64_t objno);
uint64_t img_now_ns(void);

/* ---- extents (extent.c): splitting a byte range over objects ---- */
struct img_piece {
	uint64_t objno;
	uint64_t objoff;	/* offset inside the object */
	uint64_t len;
	uint64_t bufoff;	/* offset inside the caller's buffer */
};
/* Splits [off, off+len) over objects of osize bytes (a power of two);
 * writes at most max pieces and returns how many there are in all. */
size_t img_split(uint64_t off, uint64_t len, uint64_t osize,
		 struct img_piece *out, size_t max);
bool img_valid_object_size(uint64_t osize);

/* ---- the header (header.c) ---- */
struct img_snap {
	uint64_t id;
	uint64_t size;
	uint64_t created_ns;
	char name[ATOLL_IMAGE_NAME_MAX + 1];
};
struct img_header {
	char name[ATOLL_IMAGE_NAME_MAX + 1];
	char id[17];
	uint64_t size;
	uint64_t object_size;
	uint64_t features;
	uint64_t created_ns;
	uint64_t snap_seq;	/* the last snapshot id handed out */
	uint32_t nsnaps;
	struct img_snap snaps[IMG_SNAPS_MAX];	/* by id, oldest first */
	/* not encoded: read along with it */
	char lock[IMG_LOCK_MAX];	/* the "lock" xattr, "" when free */
	uint64_t version;
};
/* "client=N expires=NS cookie=HEX" */
struct img_lockval {
	uint64_t client;
	uint64_t expires_ns;
	uint64_t cookie;
};
char *img_header_encode(const struct img_header *h);
int img_header_decode(const char *buf, size_t len, struct img_header *h);
/* Reads header + lock (and version) of image id.  -ENOENT. */
int img_header_read(struct atoll_ioctx *io, const char *id, struct img_header *h);
/* Looks name up (img_id.<name>) and reads its header. */
int img_header_read_name(struct atoll_ioctx *io, const char *name, struct img_header *h);
/* Writes h as the header, guarded by lock == h->lock (exactly). */
int img_header_write(struct atoll_ioctx *io, const struct img_header *h);
int img_lock_parse(const char *s, struct img_lockval *lv);
void img_lock_format(char *out, const struct img_lockval *lv);
const struct img_snap *img_snap_by_name(const struct img_header *h, const char *name);

/* ---- the open image ---- */
struct img_req;

struct atoll_image {
	struct atoll_ioctx *io;
	struct atoll_cluster *c;
	char name[ATOLL_IMAGE_NAME_MAX + 1];
	char id[17];
	bool read_only;
	uint64_t snap_id;		/* 0 = the head */
	uint64_t object_size;

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* in-flight counts, quiesce, pause */
	pthread_cond_t tick_cond;	/* the ticker's sleep: stopping only (every
					 * completion broadcasts cond) */
	struct img_header hdr;		/* (L) the header as last written/read */
	uint64_t size;			/* (L) */
	uint64_t latest_snap;		/* (L) id of the newest snapshot, 0 none */
	uint64_t inflight;		/* (L) requests not yet completed */
	uint64_t inflight_writes;	/* (L) changing requests issued, not done */
	struct img_req *wlist_head;	/* (L) changing requests in issue order */
	struct img_req *wlist_tail;
	bool paused;			/* (L) hold new writes (snapshot) */
	struct img_req *held;		/* (L) writes held while paused */
	int fenced;			/* (L) -EPERM once the lock is lost */
	int async_err;			/* (L) first error no caller saw */

	/* copy-on-write: objects preserved for latest_snap (L) */
	struct img_cow **cow;
	size_t cow_buckets;

	/* the writer's lock */
	struct atoll_image_open_options opt;
	char lockval[IMG_LOCK_MAX];	/* (L) our current "lock" xattr */
	struct img_lockval lv;		/* (L) */
	pthread_mutex_t hdr_mutex;	/* serialises renewals and header commits */
	char cur_req[48];		/* (hdr_mutex) request being applied, "" none */
	bool cur_req_acked;		/* (hdr_mutex) its ack went with a commit */
	unsigned lease_ms;
	pthread_t ticker;
	bool ticker_running;
	bool stopping;			/* (L) */
	int quiesce_rc;			/* (L) */
	bool quiesce_pending;		/* (L) */
};

/* image.c */
void img_fill_info(const struct img_header *h, uint64_t size, struct atoll_image_info *info);

/* lock.c */
int img_lock_acquire(struct atoll_image *img, bool break_lock);
void img_lock_release(struct atoll_image *img);
int img_blocklist(struct atoll_cluster *c, uint64_t client);
int img_ticker_start(struct atoll_image *img);
void img_ticker_stop(struct atoll_image *img);
/* Writes img->hdr guarded by our lock; the caller holds no lock. */
int img_header_commit(struct atoll_image *img, struct img_header *h);

/* io.c */
void img_cow_reset(struct atoll_image *img);
void img_cow_free(struct atoll_image *img);
/* Stops new writes and waits for those in flight (img->lock held). */
void img_pause_locked(struct atoll_image *img);
void img_resume(struct atoll_image *img);
/* Preserves object objno for the newest snapshot and then removes or
 * truncates it (resize, rollback), synchronously. */
int img_obj_trim(struct atoll_image *img, uint64_t objno, uint64_t newlen);
int img_obj_write_full(struct atoll_image *img, uint64_t objno, const void *buf,
		       size_t len, bool absent);
/* What snapshot snap holds of objno, into buf (object size bytes): 0 when
 * the head still holds it (unchanged since), else 1 + the bytes of data
 * (the rest of buf zeroed; *absent when the object did not exist). */
int64_t img_obj_read_at(struct atoll_image *img, uint64_t snap, uint64_t objno,
			void *buf, bool *absent);

/* snap.c: applying a snapshot request (the writer, paused) */
int img_snap_apply(struct atoll_image *img, const char *what, const char *snap);
/* Lists objects of the pool whose name starts with prefix. */
typedef int (*img_list_cb)(const char *oid, void *arg);
int img_list_prefix(struct atoll_ioctx *io, const char *prefix, img_list_cb cb, void *arg);

#endif
