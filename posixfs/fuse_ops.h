/*
 * fuse_ops.h - atoll-fuse's FUSE operations (fuse_ops.c and the family
 * files fuse_ops_*.c): the table libfuse calls, and what the families
 * share: the answers to the kernel built from the MDS's records and
 * leases, and the permission checks that need the MDS.
 */
#ifndef ATOLL_FUSE_OPS_H
#define ATOLL_FUSE_OPS_H

#define FUSE_USE_VERSION 35

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

#include "fuse_cache.h"
#include "fuse_perm.h"
#include "mds_proto.h"

/* st_blksize: programs size their buffers from it (cp takes at least
 * 128 KiB, stdio and Python take it as is).  1 MiB (max_write) cost
 * Python's reads of whole files three times their time: a 1 MiB buffer
 * per open beside the 1 MB read made glibc give the heap's top back at
 * each close, so each read faulted its buffer in anew, and a page fault
 * is slow in this VM (bench/fs-bench.sh, measured 2026-12-03).  cp's
 * writes stay 128 KiB and more; fuse_data.c gathers them into objects
 * anyway. */
#define FO_BLKSIZE_DEFAULT (128 << 10)

/* Before the mount: perm: atoll-fuse checks permissions (fuse_perm.c),
 * not the kernel (default_permissions); blksize: st_blksize (-o
 * blksize). */
void fo_init(bool perm, uint32_t blksize);
/* Whether atoll-fuse checks permissions itself. */
bool fo_perm(void);
/* The operations libfuse calls (sizeof(struct fuse_lowlevel_ops)). */
const struct fuse_lowlevel_ops *fo_table(void);

/* Each family fills its part of the table. */
void fo_attr_ops(struct fuse_lowlevel_ops *ops);	/* fuse_ops_attr.c */
void fo_name_ops(struct fuse_lowlevel_ops *ops);	/* fuse_ops_name.c */
void fo_dir_ops(struct fuse_lowlevel_ops *ops);		/* fuse_ops_dir.c */
void fo_file_ops(struct fuse_lowlevel_ops *ops);	/* fuse_ops_file.c */
void fo_xattr_ops(struct fuse_lowlevel_ops *ops);	/* fuse_ops_xattr.c */

/* ---- answers ---- */

/* How long the kernel may keep the entry (parent, name) from a reply
 * with ci: as long as its directory lease covers parent. */
double fo_entry_timeout(const struct lc_info *ci, uint64_t parent);
void fo_fill_entry(struct fuse_entry_param *e, const struct mds_inode *in,
		   double entry_tmo, double attr_tmo);
/* An entry (parent, name) from a reply with ci (lc_kbar: see fuse_cache.h). */
void fo_reply_entry(fuse_req_t req, const struct mds_inode *in,
		    const struct lc_info *ci, uint64_t parent, const char *name);
void fo_reply_attr(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci);
/* Answers req with ino's leased record (made by this client at most
 * within_ns ago when within_ns > 0): true if it did. */
bool fo_reply_attr_cached(fuse_req_t req, fuse_ino_t ino, uint64_t within_ns);
/* The answer to a create (fi: open it too) or a mknod/mkdir/symlink of
 * in, made in parent under name, from the MDS or answered here (gen0:
 * fr_gen() before it was sent). */
void fo_reply_created(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci,
		      uint64_t parent, const char *name, struct fuse_file_info *fi,
		      uint64_t gen0);

/* ---- permissions that need the MDS (the rules: fuse_perm.h) ---- */

/* ino's mode and owner: leased here, else from the MDS (and leased). */
int fo_perm_get(fuse_req_t req, uint64_t ino, struct lc_perm *p);
/* May the caller do mask (FP_*) on dir?  Also keeps dir's record leased
 * here (for uid 0 too), which lets entries of dir be cached by the kernel
 * (lc_kname).  *dp: dir's record, when not NULL. */
int fo_perm_dir(fuse_req_t req, struct fp_cred *c, uint64_t dir, int mask,
		struct lc_perm *dp);
/* unlink, rmdir, rename (op) of n1 in a (to n2 in b): may the caller? */
int fo_perm_change(fuse_req_t req, uint32_t op, fuse_ino_t a, const char *n1,
		   fuse_ino_t b, const char *n2, unsigned flags);

#endif
