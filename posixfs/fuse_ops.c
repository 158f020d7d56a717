/*
 * fuse_ops.c - atoll-fuse's table of FUSE operations and what its
 * families share (fuse_ops.h): the kernel's answers built from the MDS's
 * records and their leases, and the permission checks that need the
 * MDS's records.
 *
 * The operations themselves live by family: fuse_ops_attr.c (attributes,
 * statfs), fuse_ops_name.c (names in folders: lookup, create, link,
 * remove, rename), fuse_ops_dir.c (listings), fuse_ops_file.c (open, and
 * fuse_data.c's reads and writes), fuse_ops_xattr.c (extended
 * attributes).  Permissions are checked here (fuse_perm.c has the
 * rules) with -o fuse_perms, else by the kernel.
 */
#define FUSE_USE_VERSION 35

#include "fuse_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_data.h"
#include "fuse_perm.h"

/* Set before the mount, read after. */
static struct ops_config {
	bool perm;		/* atoll-fuse checks permissions (fuse_perm.c),
				 * not the kernel (default_permissions) */
	uint32_t blksize;	/* st_blksize (-o blksize) */
} ops_config = { .blksize = FO_BLKSIZE_DEFAULT };

void fo_init(bool perm, uint32_t blksize)
{
	ops_config.perm = perm;
	ops_config.blksize = blksize;
}

bool fo_perm(void)
{
	return ops_config.perm;
}

static void to_stat(const struct mds_inode *in, struct stat *st)
{
	uint64_t size = fd_stat_size(in->ino, in->size);

	if (S_ISDIR(in->mode))
		size = 4096;	/* what ext4 shows for a small directory */
	memset(st, 0, sizeof(*st));
	st->st_ino = in->ino;
	st->st_mode = in->mode;
	st->st_nlink = in->nlink;
	st->st_uid = in->uid;
	st->st_gid = in->gid;
	st->st_rdev = in->rdev;
	st->st_size = (off_t)size;
	st->st_blksize = ops_config.blksize;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
	st->st_atim = mds_time_ts(in->atime);
	st->st_mtim = mds_time_ts(in->mtime);
	st->st_ctim = mds_time_ts(in->ctime);
}

/* ---- answers ------------------------------------------------------------------ */

double fo_entry_timeout(const struct lc_info *ci, uint64_t parent)
{
	if (ci->exp && ci->dir_lease != parent)
		return 0;
	return lc_timeout(parent, ci);
}

void fo_fill_entry(struct fuse_entry_param *e, const struct mds_inode *in,
		   double entry_tmo, double attr_tmo)
{
	memset(e, 0, sizeof(*e));
	e->ino = in->ino;
	e->generation = in->gen;
	to_stat(in, &e->attr);
	e->attr_timeout = attr_tmo;
	e->entry_timeout = entry_tmo;
}

void fo_reply_entry(fuse_req_t req, const struct mds_inode *in,
		    const struct lc_info *ci, uint64_t parent, const char *name)
{
	struct fuse_entry_param e;

	lc_kbar_enter();
	fo_fill_entry(&e, in, lc_kname(parent, name, fo_entry_timeout(ci, parent)),
		   lc_timeout(in->ino, ci));
	fuse_reply_entry(req, &e);
	lc_kbar_leave();
}

void fo_reply_attr(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci)
{
	struct stat st;

	lc_kbar_enter();
	to_stat(in, &st);
	fuse_reply_attr(req, &st, lc_timeout(in->ino, ci));
	lc_kbar_leave();
}

bool fo_reply_attr_cached(fuse_req_t req, fuse_ino_t ino, uint64_t within_ns)
{
	struct mds_inode in;
	double left;

	lc_kbar_enter();
	left = within_ns ? lc_attr_new(ino, within_ns, &in) : lc_attr(ino, &in);
	if (left > 0) {
		struct stat st;

		to_stat(&in, &st);
		fuse_reply_attr(req, &st, left);
	}
	lc_kbar_leave();
	return left > 0;
}

void fo_reply_created(fuse_req_t req, const struct mds_inode *in, const struct lc_info *ci,
		      uint64_t parent, const char *name, struct fuse_file_info *fi,
		      uint64_t gen0)
{
	if (!fi) {
		fo_reply_entry(req, in, ci, parent, name);
		return;
	}
	struct fuse_entry_param e;
	fd_open(in->ino, 0, true, gen0);
	fi->keep_cache = 0;
	(void)lc_open_keep(in->ino);	/* a new file: nothing cached yet */
	lc_kbar_enter();
	fo_fill_entry(&e, in, lc_kname(parent, name, fo_entry_timeout(ci, parent)),
		   lc_timeout(in->ino, ci));
	fuse_reply_create(req, &e, fi);
	lc_kbar_leave();
}

/* ---- permissions (fuse_perm.c) ----------------------------------------------- */

/* Sends rq (a getattr or a lookup) and takes the mode and owner of the
 * record it answers. */
static int perm_call(struct mds_req *rq, struct lc_perm *p)
{
	struct mds_reply rp;
	int ret = fc_call(rq, &rp);

	free(rp.ents);
	if (ret)
		return ret;
	p->mode = rp.in[0].mode;
	p->uid = rp.in[0].uid;
	p->gid = rp.in[0].gid;
	return 0;
}

int fo_perm_get(fuse_req_t req, uint64_t ino, struct lc_perm *p)
{
	struct mds_req rq;

	if (lc_perm(ino, p) == 0)
		return 0;
	fc_req_init(&rq, req, MDS_OP_GETATTR);
	rq.ino = ino;
	return perm_call(&rq, p);
}

int fo_perm_dir(fuse_req_t req, struct fp_cred *c, uint64_t dir, int mask,
		struct lc_perm *dp)
{
	struct lc_perm d;
	int ret = fo_perm_get(req, dir, &d);

	if (ret)
		return ret;
	if (!S_ISDIR(d.mode))
		return -ENOTDIR;
	if (dp)
		*dp = d;
	return fp_access(c, &d, mask);
}

/* The record of entry (dir, name), from the cached listing or the MDS. */
static int perm_ent(fuse_req_t req, uint64_t dir, const char *name, struct lc_perm *p)
{
	struct mds_req rq;
	uint64_t ino;
	uint32_t mode;
	double left;

	if (lc_dir_lookup(dir, name, &ino, &mode, &left) == 1 && fo_perm_get(req, ino, p) == 0)
		return 0;
	fc_req_init(&rq, req, MDS_OP_LOOKUP);
	rq.ino = dir;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	return perm_call(&rq, p);
}

/* Removing entry (dir, name): write and search on dir, the sticky bit;
 * *victim (when not NULL): the entry's record, read when needed (always
 * when want_victim). */
static int perm_remove(fuse_req_t req, struct fp_cred *c, uint64_t dir, const char *name,
		       bool want_victim, struct lc_perm *victim, bool *have)
{
	struct lc_perm d, v;
	int ret = fo_perm_dir(req, c, dir, FP_W | FP_X, &d);

	*have = false;
	if (ret)
		return ret;
	bool sticky = (d.mode & S_ISVTX) && !fp_root(c) && c->uid != d.uid;
	if (!sticky && !want_victim)
		return 0;
	ret = perm_ent(req, dir, name, &v);
	if (ret == -ENOENT)
		return 0;	/* the MDS says so (unlink), or a new name (rename) */
	if (ret)
		return ret;
	*have = true;
	if (victim)
		*victim = v;
	return fp_sticky(c, &d, &v);
}

/* unlink, rmdir, rename: may the caller?  (may_delete, may_create, and a
 * directory moved to another parent needs write permission on itself to
 * change its "..") */
int fo_perm_change(fuse_req_t req, uint32_t op, fuse_ino_t a, const char *n1,
		   fuse_ino_t b, const char *n2, unsigned flags)
{
	struct fp_cred c;
	struct lc_perm src, dst;
	bool have_src, have_dst;
	int ret;

	fp_cred_init(&c, req);
	if (op != MDS_OP_RENAME)
		return perm_remove(req, &c, a, n1, false, NULL, &have_src);
	bool moves = a != b;
	if ((ret = perm_remove(req, &c, a, n1, moves, &src, &have_src)))
		return ret;
	if ((ret = perm_remove(req, &c, b, n2, moves && (flags & 2u), &dst, &have_dst)))
		return ret;
	if (moves && have_src && S_ISDIR(src.mode) && (ret = fp_access(&c, &src, FP_W)))
		return ret;
	if (moves && have_dst && (flags & 2u) && S_ISDIR(dst.mode) &&
	    (ret = fp_access(&c, &dst, FP_W)))
		return ret;
	return 0;
}

/* ---- the table --------------------------------------------------------------- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* 1 MiB writes instead of 128 KiB (libfuse 3.14's buffer holds 256
	 * pages, the kernel's default fs.fuse.max_pages_limit; reads follow
	 * from max_pages, conn->max_read must equal the max_read mount
	 * option): fewer requests; fuse_data.c gathers them into 4 MiB
	 * objects and reads whole objects ahead.
	 * No FUSE_CAP_WRITEBACK_CACHE: with it the kernel keeps the size
	 * and mtime of a file it caches pages of as its own and ignores the
	 * MDS's, so another client's writes would not show after its close
	 * (close-to-open, doc/fs-design-client.md "File data"). */
	conn->max_write = 1u << 20;
	conn->max_readahead = 4u << 20;
	/* With leases the kernel's pages of a file stay right by the
	 * revokes (inval_inode) and by the open's rule (lc_open_keep); the
	 * kernel's own rule would drop the pages this client just wrote, at
	 * the first getattr: its mtime is not the one the writer pushed.
	 * Without leases the kernel's rule adds to close-to-open. */
	if (lc_on())
		conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

const struct fuse_lowlevel_ops *fo_table(void)
{
	static struct fuse_lowlevel_ops ops;	/* filled once, before the session */

	memset(&ops, 0, sizeof(ops));
	ops.init = op_init;
	fo_attr_ops(&ops);
	fo_name_ops(&ops);
	fo_dir_ops(&ops);
	fo_file_ops(&ops);
	fo_xattr_ops(&ops);
	return &ops;
}
