/*
 * fuse_ops_name.c - atoll-fuse's FUSE operations on names in folders:
 * lookup, mknod, mkdir, symlink, create, link, unlink, rmdir, rename.
 * A lookup is answered from a leased listing and record when the cache
 * has them; the changes are answered from the messenger's loop thread
 * when the MDS replies (fc_call_async), or at once by fuse_here.c in a
 * folder this mount holds exclusively.
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuse_cache.h"
#include "fuse_call.h"
#include "fuse_here.h"
#include "fuse_ops.h"
#include "fuse_perm.h"
#include "log.h"

#define NEG_ENTRY_TIMEOUT 1.0	/* s: a name the kernel may know absent */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (fo_perm()) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if ((ret = fo_perm_dir(req, &c, parent, FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* from a leased listing of parent and a leased record: no MDS */
	uint64_t ino;
	uint32_t mode;
	double dleft, aleft;
	struct mds_inode in;
	lc_kbar_enter();
	int hit = lc_dir_lookup(parent, name, &ino, &mode, &dleft);
	if (hit == 0) {
		log_debug("fuse", "lookup of '%s' in %llu: not in the leased listing (%.3f s "
			  "left): no such entry", name, (unsigned long long)parent, dleft);
		/* not in the leased listing: ENOENT, and the kernel may keep
		 * the negative entry (a revoke invalidates it: another
		 * client's create in parent) for at most NEG_ENTRY_TIMEOUT:
		 * a lost MDS connection drops the listing, but the names
		 * answered negative are not known to invalidate */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = lc_kname(parent, name, dleft < NEG_ENTRY_TIMEOUT ? dleft
					   : NEG_ENTRY_TIMEOUT);
		fuse_reply_entry(req, &e);
		lc_kbar_leave();
		return;
	}
	if (hit == 1 && (aleft = lc_attr(ino, &in)) > 0) {
		struct fuse_entry_param e;
		fo_fill_entry(&e, &in, lc_kname(parent, name, dleft), aleft);
		fuse_reply_entry(req, &e);
		lc_kbar_leave();
		return;
	}
	lc_kbar_leave();
	struct lc_info ci;
	fc_req_init(&rq, req, MDS_OP_LOOKUP);
	rq.ino = parent;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	ret = fc_call_ci(&rq, &rp, &ci);
	if (ret) {
		log_debug("fuse", "lookup of '%s' in %llu: the MDS answers %s (cached listing: %s)",
			  name, (unsigned long long)parent, strerror(-ret),
			  hit == 1 ? "has it" : "none");
		fuse_reply_err(req, -ret);
	} else {
		fo_reply_entry(req, &rp.in[0], &ci, parent, name);
	}
}

static void make_node_done(struct acall *a, int ret)
{
	const struct mds_inode *in = &a->rp.in[0];
	uint64_t parent = a->rq.ino;

	if (ret)
		fuse_reply_err(a->req, -ret);
	else
		fo_reply_created(a->req, in, &a->ci, parent, a->rq.name,
			      a->has_fi ? &a->fi : NULL, a->gen0);
	fc_acall_free(a);
}

static void make_node(fuse_req_t req, uint32_t op, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev, const char *target, struct fuse_file_info *fi)
{
	int ret;

	if (strlen(name) > MDS_NAME_MAX || (target && strlen(target) > MDS_PATH_MAX)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (fo_perm()) {
		struct fp_cred c;
		fp_cred_init(&c, req);
		if ((ret = fo_perm_dir(req, &c, parent, FP_W | FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	struct acall *a = fc_acall_new(req, op, make_node_done);
	if (!a)
		return;
	if (fi) {
		a->fi = *fi;
		a->has_fi = true;
	}
	struct mds_req *rq = &a->rq;
	rq->ino = parent;
	snprintf(rq->name, sizeof(rq->name), "%s", name);
	rq->mode = mode & ~fuse_req_ctx(req)->umask;
	if (op == MDS_OP_MKNOD && !(mode & S_IFMT))
		rq->mode |= S_IFREG;
	rq->rdev = rdev;
	rq->flags = MDS_F_EXCL | (fi ? 0x2u : 0);
	if (target)
		snprintf(rq->target, sizeof(rq->target), "%s", target);
	fc_call_async(a);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	make_node(req, MDS_OP_MKNOD, parent, name, mode, rdev, NULL, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	if (!fh_create(req, MDS_OP_MKDIR, parent, name, mode | S_IFDIR, NULL))
		make_node(req, MDS_OP_MKDIR, parent, name, mode | S_IFDIR, 0, NULL, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	make_node(req, MDS_OP_SYMLINK, parent, name, S_IFLNK | 0777, 0, link, NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	if (!fh_create(req, MDS_OP_MKNOD, parent, name, (mode & 07777) | S_IFREG, fi))
		make_node(req, MDS_OP_MKNOD, parent, name, (mode & 07777) | S_IFREG, 0, NULL, fi);
}

static void simple_done(struct acall *a, int ret)
{
	fuse_reply_err(a->req, -ret);
	fc_acall_free(a);
}

static void simple(fuse_req_t req, uint32_t op, fuse_ino_t a, const char *n1,
		   fuse_ino_t b, const char *n2, unsigned flags)
{
	int ret;

	if (strlen(n1) > MDS_NAME_MAX || (n2 && strlen(n2) > MDS_NAME_MAX)) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (fo_perm() && (ret = fo_perm_change(req, op, a, n1, b, n2, flags))) {
		fuse_reply_err(req, -ret);
		return;
	}
	struct acall *c = fc_acall_new(req, op, simple_done);
	if (!c)
		return;
	c->rq.ino = a;
	c->rq.ino2 = b;
	snprintf(c->rq.name, sizeof(c->rq.name), "%s", n1);
	if (n2)
		snprintf(c->rq.name2, sizeof(c->rq.name2), "%s", n2);
	c->rq.flags = flags;
	fc_call_async(c);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!fh_remove(req, MDS_OP_UNLINK, parent, name))
		simple(req, MDS_OP_UNLINK, parent, name, 0, NULL, 0);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	if (!fh_remove(req, MDS_OP_RMDIR, parent, name))
		simple(req, MDS_OP_RMDIR, parent, name, 0, NULL, 0);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	simple(req, MDS_OP_RENAME, parent, name, newparent, newname, flags);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(newname) > MDS_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	if (fo_perm()) {
		struct fp_cred c;
		struct lc_perm p;
		fp_cred_init(&c, req);
		if ((ret = fo_perm_get(req, ino, &p)) || (ret = fp_link_source(&c, &p)) ||
		    (ret = fo_perm_dir(req, &c, newparent, FP_W | FP_X, NULL))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	fc_req_init(&rq, req, MDS_OP_LINK);
	rq.ino = ino;
	rq.ino2 = newparent;
	snprintf(rq.name2, sizeof(rq.name2), "%s", newname);
	struct lc_info ci;
	ret = fc_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fo_reply_entry(req, &rp.in[0], &ci, newparent, newname);
}

void fo_name_ops(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = op_lookup;
	ops->mknod = op_mknod;
	ops->mkdir = op_mkdir;
	ops->symlink = op_symlink;
	ops->create = op_create;
	ops->link = op_link;
	ops->unlink = op_unlink;
	ops->rmdir = op_rmdir;
	ops->rename = op_rename;
}
