/*
 * fuse_ops_file.c - atoll-fuse's FUSE operations on open files: open
 * here (the MDS counts the open; O_TRUNC; close-to-open: the kernel's
 * pages of the file go unless leases covered it since), and the reads,
 * writes, flush, fsync and release of fuse_data.c.
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
#include "fuse_replay.h"
#include "log.h"

/* An open for execve (the kernel's __FMODE_EXEC in the open flags): the
 * file must be executable by the caller. */
#define FMODE_EXEC_FLAG 0x20

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (fo_perm()) {
		struct fp_cred c;
		struct lc_perm p;
		int acc = fi->flags & O_ACCMODE;
		int mask = acc == O_RDONLY ? FP_R : acc == O_WRONLY ? FP_W : FP_R | FP_W;
		if (fi->flags & O_TRUNC)
			mask |= FP_W;
		if (fi->flags & FMODE_EXEC_FLAG)
			mask = FP_X;	/* execve: MAY_EXEC alone (a 0711 binary runs) */
		fp_cred_init(&c, req);
		if ((ret = fo_perm_get(req, ino, &p)) || (ret = fp_access(&c, &p, mask))) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	fc_req_init(&rq, req, MDS_OP_OPEN);
	rq.ino = ino;
	rq.flags = (uint32_t)fi->flags & (O_ACCMODE | O_TRUNC);	/* MDS caps: r refuses writing */
	uint64_t gen0 = fr_gen();
	ret = lc_ino_err(ino, fc_call(&rq, &rp));
	if (ret) {
		log_debug("fuse", "open of inode %llu: %s", (unsigned long long)ino,
			  strerror(-ret));
		fuse_reply_err(req, -ret);
		return;
	}
	fd_open(ino, rp.in[0].size, false, gen0);
	if (fi->flags & O_TRUNC) {
		fd_wb_flush(ino);	/* an error of old data no longer matters */
		fc_req_init(&rq, req, MDS_OP_SETATTR);
		rq.ino = ino;
		rq.setmask = MDS_SET_SIZE;
		rq.s_size = 0;
		rq.size_hint = fd_set_size(ino, 0);
		ret = fc_call(&rq, &rp);
		if (ret) {
			fuse_reply_err(req, -ret);
			return;
		}
	}
	/* close-to-open: the kernel drops what it caches of the file unless
	 * leases have covered it since an earlier open (lc_open_keep) */
	bool keep = lc_open_keep(ino);
	fi->keep_cache = keep && !(fi->flags & O_TRUNC);
	/* A reader's close has nothing of its own to push (a writer's
	 * close pushes what it wrote, close-to-open holds by that), so the
	 * kernel skips FLUSH for it (FOPEN_NOFLUSH; we take no POSIX locks,
	 * which FLUSH would release): one FUSE round trip less per read */
	fi->noflush = (fi->flags & O_ACCMODE) == O_RDONLY;
	fuse_reply_open(req, fi);
}

void fo_file_ops(struct fuse_lowlevel_ops *ops)
{
	ops->open = op_open;
	ops->read = fd_op_read;
	ops->write = fd_op_write;
	ops->flush = fd_op_flush;
	ops->release = fd_op_release;
	ops->fsync = fd_op_fsync;
}
