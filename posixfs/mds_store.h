/*
 * mds_store.h - the namespace's objects in the metadata pool
 * (mds_store.c): names, the inode record, reads, and writing journaled
 * changes.  No locks: the callers order the writes.
 */
#ifndef ATOLL_MDS_STORE_H
#define ATOLL_MDS_STORE_H

#include <stddef.h>
#include <stdint.h>

struct enc;
struct mds;
struct mds_inode;
struct mds_txn;
struct mds_rm_batch;

/* Object names: the inode shard of ino (fs.inodes.NN), a directory's
 * entries (fs.dir.INO), an inode's extended attributes (fs.xattr.INO), a
 * journal segment (fs.journal.SEG). */
void mds_store_oid_inodes(char *b, size_t n, uint64_t ino);
void mds_store_oid_dir(char *b, size_t n, uint64_t ino);
void mds_store_oid_xattr(char *b, size_t n, uint64_t ino);
void mds_store_oid_seg(char *b, size_t n, uint64_t seg);

/* An inode record: the inode, its symlink target (link: "" or NULL for
 * none; decode fills MDS_PATH_MAX + 1 bytes), a directory's parent. */
void mds_store_record_encode(struct enc *e, const struct mds_inode *in, const char *link);
int mds_store_record_decode(const void *v, size_t vl, struct mds_inode *in, char *link);

/* Calls fn for every omap entry of oid (a missing object has none); the
 * first non-zero return of fn stops it and is returned. */
int mds_store_omap_each(struct mds *m, const char *oid,
			int (*fn)(struct mds *m, void *arg, const void *k, size_t kl,
				  const void *v, size_t vl), void *arg);
/* The whole object oid of the metadata pool, malloc'd (-ENOENT: none). */
int mds_store_read(struct mds *m, const char *oid, uint8_t **buf, size_t *len);
/* Writes one inode record (mkfs). */
int mds_store_inode_put(struct mds *m, const struct mds_inode *in, const char *link);

/* The kvu array of mds_store_apply_omap, kept from round to round by the
 * applier (fresh, it cost each round a page fault per 4 KiB). */
struct kvu;
struct mds_store_buf {
	struct kvu *u;
	size_t cap;
};
void mds_store_buf_free(struct mds_store_buf *kb);
/* The omap updates of ts[0..nt) (journal order) and the removal of the
 * objects of removed inodes, all in flight at once; kb NULL: no reuse. */
int mds_store_apply_omap(struct mds *m, const struct mds_txn *const *ts, size_t nt,
			 struct mds_store_buf *kb);
/* The rest of t's updates (data purges and trims, ino_hw): data removes go
 * into b (NULL: waited for here). */
int mds_store_apply_rest(struct mds *m, const struct mds_txn *t, struct mds_rm_batch *b);
/* All of t, waited for (replay, ino_hw, no memory to queue). */
int mds_store_apply(struct mds *m, const struct mds_txn *t);

#endif
