/*
 * mds_access.c - what a client's MDS caps let it do (doc/security.md,
 * "File-system caps").  The caps come from the ticket the client
 * presented on its connection (msg_conn_caps); with auth = none every
 * request is let through as before.
 *
 * Checked before a request is handled, on the worker with m->lock held
 * (the inodes it walks may load from the cluster, so a limited client's
 * requests are never handled on the loop thread: mds_access_limited):
 * - the sub-tree: every inode a request names (its inode, or its parent
 *   directory; both directories of a rename, the file and the new parent
 *   of a link) lies below the path of a clause that allows the request.
 *   A directory's place is its chain of parents; a file's is the
 *   directory of its last name set (create, link, rename: the record's
 *   parent), or, for a record written before that, the directory a
 *   lookup found it in.  `..` is never sent to the MDS (the client
 *   synthesises it), so the sub-tree's root has no way up.
 * - writes: a change (create, remove, rename, link, setattr, xattr set or
 *   remove, an open for writing, a size pushed by close or fsync) needs a
 *   `rw` clause; an `r` client's close and fsync are answered without
 *   their size.
 * - credentials: with `uid=`, the request's uid and gid must be the
 *   clause's; `root_squash` maps uid 0 to nobody.  Then, and only then,
 *   the MDS checks the mode bits itself (a client whose caps name its
 *   uid is not trusted to check them), with the credentials it allowed.
 */
#include "mds.h"
#include "mds_access.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "msg.h"

#define SUB "mds"

static bool writes(const struct mds_req *rq)
{
	switch (rq->op) {
	case MDS_OP_SETATTR:
	case MDS_OP_MKNOD:
	case MDS_OP_MKDIR:
	case MDS_OP_SYMLINK:
	case MDS_OP_UNLINK:
	case MDS_OP_RMDIR:
	case MDS_OP_RENAME:
	case MDS_OP_LINK:
	case MDS_OP_SETXATTR:
	case MDS_OP_REMOVEXATTR:
	case MDS_OP_INOS:
		return true;
	case MDS_OP_OPEN:
		return (rq->flags & O_ACCMODE) != O_RDONLY || (rq->flags & O_TRUNC);
	default:
		return false;
	}
}

/* The inode of a clause's path, or 0 when it does not exist (the clause
 * then covers nothing). */
static uint64_t path_ino(struct mds *m, const char *path)
{
	uint64_t ino = MDS_ROOT_INO;
	const char *p = path;
	char name[MDS_NAME_MAX + 1];

	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n > MDS_NAME_MAX)
			return 0;
		memcpy(name, p, n);
		name[n] = '\0';
		p += n;
		struct mds_node *d = mds_cache_get(m, ino);
		if (!d || !S_ISDIR(d->a.mode) || mds_cache_dir_load(m, d))
			return 0;
		struct mds_dent *e = mds_cache_dir_find(d, name);
		if (!e)
			return 0;
		ino = e->ino;
	}
	return ino;
}

/* Is ino at or below the directory top?  Walks the parents. */
static bool within(struct mds *m, uint64_t top, uint64_t ino)
{
	if (top == MDS_ROOT_INO)
		return true;
	for (int depth = 0; depth < 4096; depth++) {
		if (ino == top)
			return true;
		if (ino == MDS_ROOT_INO || ino == 0)
			return false;
		struct mds_node *n = mds_cache_get(m, ino);
		if (!n)
			return false;
		ino = S_ISDIR(n->a.mode) ? mds_cache_dir_parent(m, n) : n->a.parent;
	}
	return false;
}

/* A lookup of name in dir, a directory above top, that leads towards
 * top: allowed, so that a client finds the root of its sub-tree from
 * the file system's root (it learns the attributes of the directories on
 * the way, nothing else). */
static bool towards(struct mds *m, uint64_t top, uint64_t dir, const char *name)
{
	uint64_t ino = top;

	for (int depth = 0; depth < 4096 && ino != MDS_ROOT_INO; depth++) {
		struct mds_node *n = mds_cache_get(m, ino);
		if (!n)
			return false;
		uint64_t p = mds_cache_dir_parent(m, n);
		if (!p)
			return false;
		if (p == dir) {
			struct mds_node *d = mds_cache_get(m, dir);
			if (!d || mds_cache_dir_load(m, d))
				return false;
			struct mds_dent *e = mds_cache_dir_find(d, name);
			return e && e->ino == ino;
		}
		ino = p;
	}
	return false;
}

/* Does rq act as its uid/gid?  Not those that read attributes only, nor
 * the session and the pushes of a closed file (sent with no caller: its
 * open was checked). */
static bool acts(const struct mds_req *rq)
{
	switch (rq->op) {
	case MDS_OP_SESSION:
	case MDS_OP_SESSION_END:
	case MDS_OP_STATFS:
	case MDS_OP_INOS:
	case MDS_OP_LANDED:
	case MDS_OP_GETATTR:
	case MDS_OP_READLINK:
	case MDS_OP_CLOSE:
	case MDS_OP_FSYNC:
		return false;
	default:
		return true;
	}
}

/* The inodes a request names (0: none). */
static void named(const struct mds_req *rq, uint64_t *a, uint64_t *b)
{
	*a = *b = 0;
	switch (rq->op) {
	case MDS_OP_SESSION:
	case MDS_OP_SESSION_END:
	case MDS_OP_STATFS:
	case MDS_OP_INOS:
	case MDS_OP_LANDED:
		return;
	case MDS_OP_RENAME:
	case MDS_OP_LINK:
		*a = rq->ino;
		*b = rq->ino2;
		return;
	default:
		*a = rq->ino;
	}
}

/* POSIX access of (uid, gid) to in: mask of 4 (r), 2 (w), 1 (x). */
static bool may(const struct mds_inode *in, uint32_t uid, uint32_t gid, uint32_t mask)
{
	uint32_t bits;

	if (uid == 0)
		return true;	/* root that the caps do not squash */
	if (in->uid == uid)
		bits = (in->mode >> 6) & 7;
	else if (in->gid == gid)
		bits = (in->mode >> 3) & 7;
	else
		bits = in->mode & 7;
	return (bits & mask) == mask;
}

static int perm_of(struct mds *m, uint64_t ino, uint32_t uid, uint32_t gid, uint32_t mask)
{
	struct mds_node *n = mds_cache_get(m, ino);

	if (!n)
		return 0;	/* the op says ENOENT */
	return may(&n->a, uid, gid, mask) ? 0 : -EACCES;
}

/* The mode bits, checked on the MDS for a client whose caps pin its
 * credentials. */
static int check_mode(struct mds *m, const struct mds_req *rq, uint32_t uid, uint32_t gid)
{
	struct mds_node *n;
	int r;

	switch (rq->op) {
	case MDS_OP_LOOKUP:
		return perm_of(m, rq->ino, uid, gid, 1);
	case MDS_OP_READDIR:
		return perm_of(m, rq->ino, uid, gid, 4 | 1);
	case MDS_OP_MKNOD:
	case MDS_OP_MKDIR:
	case MDS_OP_SYMLINK:
	case MDS_OP_UNLINK:
	case MDS_OP_RMDIR:
		return perm_of(m, rq->ino, uid, gid, 2 | 1);
	case MDS_OP_RENAME:
		if ((r = perm_of(m, rq->ino, uid, gid, 2 | 1)))
			return r;
		return perm_of(m, rq->ino2, uid, gid, 2 | 1);
	case MDS_OP_LINK:
		return perm_of(m, rq->ino2, uid, gid, 2 | 1);
	case MDS_OP_OPEN: {
		uint32_t acc = rq->flags & O_ACCMODE;
		uint32_t mask = acc == O_RDONLY ? 4 : acc == O_WRONLY ? 2 : 6;
		if (rq->flags & O_TRUNC)
			mask |= 2;
		return perm_of(m, rq->ino, uid, gid, mask);
	}
	case MDS_OP_GETXATTR:
	case MDS_OP_LISTXATTR:
		return perm_of(m, rq->ino, uid, gid, 4);
	case MDS_OP_SETXATTR:
	case MDS_OP_REMOVEXATTR:
		return perm_of(m, rq->ino, uid, gid, 2);
	case MDS_OP_SETATTR:
		n = mds_cache_get(m, rq->ino);
		if (!n || uid == 0)
			return 0;
		if ((rq->setmask & MDS_SET_UID) && rq->s_uid != n->a.uid)
			return -EPERM;	/* only root gives a file away */
		if ((rq->setmask & MDS_SET_GID) && (n->a.uid != uid || rq->s_gid != gid))
			return -EPERM;
		if ((rq->setmask & (MDS_SET_MODE | MDS_SET_ATIME | MDS_SET_MTIME |
				    MDS_SET_CTIME)) && n->a.uid != uid)
			return -EPERM;
		if ((rq->setmask & MDS_SET_SIZE) && !may(&n->a, uid, gid, 2))
			return -EACCES;
		if ((rq->setmask & (MDS_SET_ATIME_NOW | MDS_SET_MTIME_NOW)) &&
		    n->a.uid != uid && !may(&n->a, uid, gid, 2))
			return -EACCES;
		return 0;
	default:
		return 0;
	}
}

/* The caps of conn, parsed: 1 (none to check: auth off, or unlimited),
 * 0 (in *caps), or -EACCES (none, or a bad string: logged). */
static int caps_of(struct mds *m, struct msg_conn *conn, struct mds_caps *caps)
{
	const char *s;
	char err[160];

	if (!m->auth_on || !conn)
		return 1;
	s = msg_conn_caps(conn);
	if (!s[0]) {
		log_warn(SUB, "refusing requests of %s: its ticket has no mds caps",
			 msg_conn_addr(conn));
		return -EACCES;
	}
	if (mds_caps_parse(s, strlen(s), caps, err, sizeof(err))) {
		log_warn(SUB, "refusing requests of %s: its mds caps '%s' do not parse: %s",
			 msg_conn_addr(conn), s, err);
		return -EACCES;
	}
	return mds_caps_unlimited(caps) ? 1 : 0;
}

bool mds_access_limited(struct mds *m, struct msg_conn *conn)
{
	struct mds_caps caps;

	return caps_of(m, conn, &caps) != 1;
}

/* The first clause of caps that allows rq (needing a write clause when
 * wr): 0 or an error of its mode check; 1 when none does (*saw_path: one
 * covered its inodes). */
static int try_clauses(struct mds *m, const struct mds_caps *caps, struct mds_req *rq, bool wr,
		       bool *saw_path)
{
	uint64_t a, b;
	int r;

	named(rq, &a, &b);
	for (uint32_t i = 0; i < caps->n; i++) {
		const struct mds_cap_clause *c = &caps->c[i];
		uint64_t top = path_ino(m, c->path);
		uint32_t uid, gid;

		if (!top && (a || b))
			continue;	/* its path does not exist: it covers no inode */
		if (rq->op == MDS_OP_LOOKUP && !within(m, top, a) && towards(m, top, a, rq->name))
			return 0;
		if ((a && !within(m, top, a)) || (b && !within(m, top, b)))
			continue;
		*saw_path = true;
		if (wr && !c->write)
			continue;
		if (!acts(rq)) {
			uid = rq->uid;
			gid = rq->gid;
		} else if (!mds_caps_cred(c, rq->uid, rq->gid, &uid, &gid)) {
			continue;
		}
		if (!c->write && (rq->op == MDS_OP_CLOSE || rq->op == MDS_OP_FSYNC)) {
			rq->size_hint = 0;	/* its size is not the file's */
			rq->setmask = 0;
		}
		if (acts(rq) && (c->has_uid || c->root_squash)) {
			rq->uid = uid;
			rq->gid = gid;
			if ((r = check_mode(m, rq, uid, gid)))
				return r;
		}
		return 0;
	}
	return 1;
}

int mds_access_check(struct mds *m, struct msg_conn *conn, struct mds_req *rq)
{
	struct mds_caps caps;
	int r = caps_of(m, conn, &caps);
	bool wr = writes(rq), saw_path = false;

	if (r)
		return r > 0 ? 0 : r;
	/* no exclusive directory leases: the client would answer creates
	 * and removals itself, and learn of a refusal only after it told
	 * its caller they were done */
	rq->lflags &= ~MDS_L_EXCL_OK;
	/* data namespaces are the admin's (their prefix goes in OSD caps) */
	if ((rq->op == MDS_OP_SETXATTR || rq->op == MDS_OP_REMOVEXATTR) &&
	    !strncmp(rq->name, "trusted.atoll.", 14))
		return -EPERM;
	/* a close or fsync that pushes a size: a write clause first, else
	 * one that reads (which drops the size) */
	bool push = (rq->op == MDS_OP_CLOSE || rq->op == MDS_OP_FSYNC) &&
		    (rq->size_hint || rq->setmask);
	r = try_clauses(m, &caps, rq, wr || push, &saw_path);
	if (r == 1 && push)
		r = try_clauses(m, &caps, rq, wr, &saw_path);
	if (r != 1)
		return r;
	log_debug(SUB, "caps of %s refuse %s of inode %llu", msg_conn_addr(conn),
		  mds_op_name(rq->op), (unsigned long long)rq->ino);
	return saw_path && wr ? -EPERM : -EACCES;
}

void mds_access_hint(struct mds_node *n, uint64_t dir)
{
	if (!S_ISDIR(n->a.mode) && !n->a.parent)
		n->a.parent = dir;
}
