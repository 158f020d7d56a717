/*
 * fuse_ops_xattr.c - atoll-fuse's FUSE operations on extended
 * attributes: setxattr, getxattr, listxattr, removexattr.  POSIX ACLs
 * are refused (tools then fall back to chmod); a leased record without
 * the xattrs flag answers "none" without the MDS (`ls -l` asks for
 * security.selinux of each file).
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
#include "fuse_ops.h"
#include "fuse_perm.h"

/* xattr_permission: security.* and system.* are the kernel's and the
 * MDS's business, trusted.* the kernel's (CAP_SYS_ADMIN); the others
 * (user.*) want read or write permission on the inode, and in a sticky
 * directory only its owner writes them. */
static int perm_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, bool write)
{
	struct fp_cred c;
	struct lc_perm p;
	int ret;

	if (!fo_perm() || !strncmp(name, "security.", 9) || !strncmp(name, "system.", 7) ||
	    !strncmp(name, "trusted.", 8))
		return 0;
	fp_cred_init(&c, req);
	if ((ret = fo_perm_get(req, ino, &p)))
		return ret;
	if (write && S_ISDIR(p.mode) && (p.mode & S_ISVTX) && !fp_owner(&c, &p))
		return -EPERM;
	return fp_access(&c, &p, write ? FP_W : FP_R);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (size > MDS_XATTR_MAX) {
		fuse_reply_err(req, E2BIG);
		return;
	}
	if (!strncmp(name, "system.posix_acl_", 17)) {
		/* POSIX ACLs are not supported yet: refusing them makes tools
		 * such as cp -a fall back to chmod (later: FUSE_CAP_POSIX_ACL) */
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if ((ret = perm_xattr(req, ino, name, true))) {
		fuse_reply_err(req, -ret);
		return;
	}
	fc_req_init(&rq, req, MDS_OP_SETXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	rq.value = value;
	rq.vlen = (uint32_t)size;
	rq.flags = (uint32_t)flags;
	ret = fc_call(&rq, &rp);
	free(rp.value);
	fuse_reply_err(req, -ret);
}

static void xattr_reply(fuse_req_t req, int ret, struct mds_reply *rp, size_t size)
{
	if (ret)
		fuse_reply_err(req, -ret);
	else if (size == 0)
		fuse_reply_xattr(req, rp->vlen);
	else if (rp->vlen > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, rp->value, rp->vlen);
	free(rp->value);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mds_req rq;
	struct mds_reply rp;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (!strncmp(name, "system.posix_acl_", 17)) {
		/* never set (setxattr refuses them), so never there: `ls -l`
		 * asks for each file */
		fuse_reply_err(req, ENODATA);
		return;
	}
	int pret = perm_xattr(req, ino, name, false);
	if (pret) {
		fuse_reply_err(req, -pret);
		return;
	}
	/* `ls -l` asks for security.selinux of each file: a leased record
	 * without the xattrs flag has none (setting one changes the record,
	 * which revokes the lease); else the answer may be cached with it */
	struct mds_inode in;
	bool virt = !strncmp(name, "trusted.atoll.", 14);	/* the MDS's own (MDS_XATTR_DNS) */
	if (!virt && lc_attr(ino, &in) > 0 && !(in.flags & MDS_INO_XATTRS)) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	memset(&rp, 0, sizeof(rp));
	int hit = lc_xattr(ino, name, &rp.value, &rp.vlen);
	if (hit >= 0) {
		xattr_reply(req, hit ? 0 : -ENODATA, &rp, size);
		return;
	}
	fc_req_init(&rq, req, MDS_OP_GETXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	int ret = fc_call(&rq, &rp);
	xattr_reply(req, ret, &rp, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mds_req rq;
	struct mds_reply rp;

	fc_req_init(&rq, req, MDS_OP_LISTXATTR);
	rq.ino = ino;
	int ret = fc_call(&rq, &rp);
	xattr_reply(req, ret, &rp, size);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct mds_req rq;
	struct mds_reply rp;
	int ret;

	if (strlen(name) > MDS_NAME_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if ((ret = perm_xattr(req, ino, name, true))) {
		fuse_reply_err(req, -ret);
		return;
	}
	fc_req_init(&rq, req, MDS_OP_REMOVEXATTR);
	rq.ino = ino;
	snprintf(rq.name, sizeof(rq.name), "%s", name);
	ret = fc_call(&rq, &rp);
	free(rp.value);
	fuse_reply_err(req, -ret);
}

void fo_xattr_ops(struct fuse_lowlevel_ops *ops)
{
	ops->setxattr = op_setxattr;
	ops->getxattr = op_getxattr;
	ops->listxattr = op_listxattr;
	ops->removexattr = op_removexattr;
}
