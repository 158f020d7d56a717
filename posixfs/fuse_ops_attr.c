/*
 * fuse_ops_attr.c - atoll-fuse's FUSE operations on an inode's
 * attributes: getattr, setattr (with truncate), access, readlink and
 * statfs.  A leased record answers getattr without the MDS; setattr
 * pushes this client's written data and size before the change.
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
#include "fuse_data.h"
#include "fuse_ops.h"
#include "fuse_perm.h"

/* A setattr that sets atime and mtime to "now" within this long of this
 * client's create of the file (touch's futimens after its open(O_CREAT))
 * is answered from the cache: the create set all three times to "now"
 * already, so the file reads as if both happened in one tick of a clock
 * this coarse (ext4's own timestamps tick every 4 ms). */
#define TOUCH_FOLD_NS (10ull * 1000000ull)

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	struct lc_info ci;

	if (fo_reply_attr_cached(req, ino, 0))
		return;
	fc_req_init(&rq, req, MDS_OP_GETATTR);
	rq.ino = ino;
	ret = lc_ino_err(ino, fc_call_ci(&rq, &rp, &ci));
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fo_reply_attr(req, &rp.in[0], &ci);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	uint32_t mode = attr->st_mode;
	int ret;

	if (fo_perm()) {
		struct fp_cred c;
		struct lc_perm p;
		fp_cred_init(&c, req);
		if ((ret = fo_perm_get(req, ino, &p)) ||
		    (ret = fp_setattr(&c, &p, to_set, attr, fi != NULL, &mode))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* touch's "now" right after this client's create: nothing to do */
	const int times_now = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW |
			      FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW;
	if ((to_set & ~(times_now | FUSE_SET_ATTR_CTIME)) == 0 &&
	    (to_set & FUSE_SET_ATTR_ATIME_NOW) && (to_set & FUSE_SET_ATTR_MTIME_NOW)) {
		if (fd_clean(ino) && fo_reply_attr_cached(req, ino, TOUCH_FOLD_NS))
			return;
	}
	fc_req_init(&rq, req, MDS_OP_SETATTR);
	rq.ino = ino;
	if (to_set & FUSE_SET_ATTR_MODE) {
		rq.setmask |= MDS_SET_MODE;
		rq.s_mode = mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		rq.setmask |= MDS_SET_UID;
		rq.s_uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		rq.setmask |= MDS_SET_GID;
		rq.s_gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		rq.setmask |= MDS_SET_SIZE;
		rq.s_size = (uint64_t)attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		rq.setmask |= MDS_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		rq.setmask |= MDS_SET_ATIME;
		rq.s_atime = mds_time_ns(attr->st_atim.tv_sec, attr->st_atim.tv_nsec);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		rq.setmask |= MDS_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		rq.setmask |= MDS_SET_MTIME;
		rq.s_mtime = mds_time_ns(attr->st_mtim.tv_sec, attr->st_mtim.tv_nsec);
	}
	/* the MDS gets this client's written data and size first, then the
	 * change (a truncate must not meet a write still in flight) */
	if (to_set & FUSE_SET_ATTR_SIZE) {
		ret = fd_wb_flush(ino);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		/* the new size replaces what this client wrote */
		rq.size_hint = fd_set_size(ino, rq.s_size);
	} else {
		/* its data need not have landed: other clients' opens wait
		 * for it as after a close */
		ret = fd_close_push(req, ino);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
		rq.size_hint = fd_size_hint(ino);
	}
	struct lc_info ci;
	ret = fc_call_ci(&rq, &rp, &ci);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fo_reply_attr(req, &rp.in[0], &ci);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mds_req rq;
	struct mds_reply *rp = malloc(sizeof(*rp));
	int ret;

	if (!rp) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	fc_req_init(&rq, req, MDS_OP_READLINK);
	rq.ino = ino;
	ret = fc_call(&rq, rp);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, rp->target);
	free(rp);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct mds_req rq;
	struct mds_reply rp;
	struct statvfs sv;
	int ret;

	fc_req_init(&rq, req, MDS_OP_STATFS);
	ret = fc_call(&rq, &rp);
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = sv.f_frsize = rp.st.bsize;
	sv.f_blocks = rp.st.blocks;
	sv.f_bfree = rp.st.bfree;
	sv.f_bavail = rp.st.bavail;
	sv.f_files = rp.st.files;
	sv.f_ffree = sv.f_favail = rp.st.ffree;
	sv.f_namemax = MDS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

/* access(2), chdir(2): the kernel asks only without default_permissions. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct fp_cred c;
	struct lc_perm p;
	int ret = 0;

	if (fo_perm() && mask) {
		fp_cred_init(&c, req);
		if (!(ret = fo_perm_get(req, ino, &p)))
			ret = fp_access(&c, &p, ((mask & R_OK) ? FP_R : 0) | ((mask & W_OK) ? FP_W : 0) |
						((mask & X_OK) ? FP_X : 0));
	}
	fuse_reply_err(req, -ret);
}

void fo_attr_ops(struct fuse_lowlevel_ops *ops)
{
	ops->getattr = op_getattr;
	ops->setattr = op_setattr;
	ops->readlink = op_readlink;
	ops->statfs = op_statfs;
	ops->access = op_access;
}
