/*
 * fuse_perm.c - permission checks in atoll-fuse (fuse_perm.h).
 *
 * Why here and not the kernel's default_permissions: with it, the kernel
 * checks every access against the attributes it caches, and it drops a
 * directory's cached attributes after every change in it (a create, an
 * unlink), so the next lookup there first asked atoll-fuse for them: one
 * FUSE round trip more per touch, rm, mkdir or rmdir.  atoll-fuse holds
 * the same attributes under leases (fuse_cache.c), its own changes do
 * not move a directory's mode or owner, so it checks from its cache.
 *
 * The rules are the kernel's (fs/namei.c generic_permission, fs/attr.c
 * setattr_prepare and may_setattr, fs/namei.c may_linkat), with uid 0
 * standing for every capability.  What the kernel still does itself
 * without default_permissions: the sticky bit in may_delete (with its
 * cached attributes), S_IXUGO of a file to execute, O_NOATIME, the
 * trusted.* namespace, protected_regular/fifos/symlinks, and the set-ID
 * bits of a new file (mode_strip_sgid).
 */
#include "fuse_perm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static bool protected_hardlinks = true;

void fp_init(void)
{
	FILE *f = fopen("/proc/sys/fs/protected_hardlinks", "r");
	int v;

	if (f) {
		if (fscanf(f, "%d", &v) == 1)
			protected_hardlinks = v != 0;
		fclose(f);
	}
}

void fp_cred_init(struct fp_cred *c, fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);

	c->req = req;
	c->uid = ctx->uid;
	c->gid = ctx->gid;
	c->ngroups = -1;
}

bool fp_root(const struct fp_cred *c)
{
	return c->uid == 0;
}

bool fp_in_group(struct fp_cred *c, uint32_t gid)
{
	if (gid == c->gid)
		return true;
	if (c->ngroups < 0) {
		gid_t g[FP_GROUPS_MAX];
		int n = fuse_req_getgroups(c->req, FP_GROUPS_MAX, g);
		/* more than fit: those beyond are not seen (rare) */
		c->ngroups = n < 0 ? 0 : n > FP_GROUPS_MAX ? FP_GROUPS_MAX : n;
		for (int i = 0; i < c->ngroups; i++)
			c->groups[i] = g[i];
	}
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == gid)
			return true;
	return false;
}

int fp_access(struct fp_cred *c, const struct lc_perm *a, int mask)
{
	uint32_t mode = a->mode;

	mask &= FP_R | FP_W | FP_X;
	if (fp_root(c)) {
		/* DAC_OVERRIDE: all but executing a file no one may execute */
		if ((mask & FP_X) && !S_ISDIR(mode) && !(mode & 0111))
			return -EACCES;
		return 0;
	}
	int bits;
	if (c->uid == a->uid) {
		bits = (int)(mode >> 6) & 7;
	} else {
		int g = (int)(mode >> 3) & 7, o = (int)mode & 7;
		/* the groups are read only when they decide */
		if ((g & mask) == (o & mask))
			bits = o;
		else
			bits = fp_in_group(c, a->gid) ? g : o;
	}
	return (mask & ~bits) ? -EACCES : 0;
}

bool fp_owner(const struct fp_cred *c, const struct lc_perm *a)
{
	return fp_root(c) || c->uid == a->uid;
}

int fp_sticky(const struct fp_cred *c, const struct lc_perm *dir, const struct lc_perm *victim)
{
	if (!(dir->mode & S_ISVTX) || fp_root(c) || c->uid == victim->uid || c->uid == dir->uid)
		return 0;
	return -EPERM;
}

int fp_link_source(struct fp_cred *c, const struct lc_perm *a)
{
	if (!protected_hardlinks || fp_owner(c, a))
		return 0;
	/* safe_hardlink_source */
	if (!S_ISREG(a->mode) || (a->mode & S_ISUID) ||
	    (a->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) ||
	    fp_access(c, a, FP_R | FP_W))
		return -EPERM;
	return 0;
}

int fp_setattr(struct fp_cred *c, const struct lc_perm *a, int to_set, const struct stat *st,
	       bool has_fh, uint32_t *mode)
{
	const int now2 = FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW;
	int ret;

	*mode = st->st_mode;
	/* truncate(2) by name wants write permission (ftruncate: the open did) */
	if ((to_set & FUSE_SET_ATTR_SIZE) && !has_fh && (ret = fp_access(c, a, FP_W)))
		return ret;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
		bool touch = (to_set & now2) == now2 &&
			     (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) ==
			     (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME);
		if (touch) {
			/* utimes(NULL): the owner, or whoever may write */
			if (!fp_owner(c, a) && (ret = fp_access(c, a, FP_W)))
				return ret;
		} else if (!fp_owner(c, a)) {
			return -EPERM;
		}
	}
	if ((to_set & FUSE_SET_ATTR_UID) && !fp_root(c) &&
	    !(c->uid == a->uid && st->st_uid == a->uid))
		return -EPERM;
	if ((to_set & FUSE_SET_ATTR_GID) && !fp_root(c) &&
	    !(c->uid == a->uid && (st->st_gid == a->gid || fp_in_group(c, st->st_gid))))
		return -EPERM;
	if (to_set & FUSE_SET_ATTR_MODE) {
		uint32_t want = st->st_mode & 07777, cur = a->mode & 07777;
		if (!fp_owner(c, a)) {
			/* the kernel clears set-ID bits after another user's write
			 * (or truncate) with a setattr of the mode (no way to tell
			 * it from a chmod): let that through */
			if (!(cur & (S_ISUID | S_ISGID)) || (want & ~cur) ||
			    (cur & ~want & ~(uint32_t)(S_ISUID | S_ISGID)))
				return -EPERM;
		} else if (!fp_root(c) && (want & S_ISGID)) {
			uint32_t gid = (to_set & FUSE_SET_ATTR_GID) ? (uint32_t)st->st_gid : a->gid;
			if (!fp_in_group(c, gid))
				*mode = (*mode & ~(uint32_t)S_ISGID);
		}
	}
	return 0;
}
