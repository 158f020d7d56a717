/*
 * mds_ops.c - the MDS's answer to each client request (mds_proto.h).
 *
 * Requests are handled one at a time (by the MDS's worker thread, or its
 * messenger's loop thread while the worker is idle: mds_main.c): each
 * checks the namespace in memory, builds one transaction and commits it
 * (applied in memory and queued for the journal; with early replies off,
 * journaled) before the reply is sent.  POSIX error cases
 * follow what Linux's local file systems return.
 */
#include "mds.h"
#include "mds_access.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

static int dir_of(struct mds *m, uint64_t ino, struct mds_node **out)
{
	struct mds_node *d = mds_cache_get(m, ino);

	if (!d || d->a.nlink == 0)
		return -ENOENT;
	if (!S_ISDIR(d->a.mode))
		return -ENOTDIR;
	if (mds_cache_dir_load(m, d))
		return -EIO;
	*out = d;
	return 0;
}

/* A node's count of open handles, over all clients: each client's count
 * is bounded, their sum is not (a re-count may claim INT32_MAX): kept
 * within [0, INT32_MAX], never an overflow. */
static void opens_add(struct mds_node *n, int delta)
{
	int64_t v = (int64_t)n->opens + delta;

	n->opens = v < 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int)v;
}

static int check_name(const char *name)
{
	if (!name[0] || !strcmp(name, ".") || !strcmp(name, "..") || strchr(name, '/'))
		return -EINVAL;
	return 0;
}

static void touch_dir(struct mds_inode *d, uint64_t now)
{
	d->mtime = d->ctime = now;
}

static void reply_inode(struct mds_reply *rp, const struct mds_inode *in)
{
	if (rp->ninodes < 2)
		rp->in[rp->ninodes++] = *in;
}

/* Drops one link of the inode in the txn (the victim of an unlink or of
 * a rename over it): removes and purges it when nothing names or holds it. */
static void drop_link(struct mds *m, struct mds_txn *t, struct mds_inode *in, uint64_t now)
{
	struct mds_node *n = mds_cache_get(m, in->ino);

	if (in->nlink > 0)
		in->nlink--;
	in->ctime = now;
	if (in->nlink > 0)
		return;
	/* in a reconnect window the opens are being re-counted: decided at
	 * its end (orphans_after_window in mds_main.c), also when a client
	 * re-counted an open of it already, so that the window's report
	 * does not depend on which client came back first */
	bool deferred = mds_open_orphan_defer(m, in->ino);
	if (deferred || (n && n->opens > 0))
		in->flags |= MDS_INO_ORPHAN;
	else
		mds_txn_remove(t, in->ino, true);
}

/* The file a rename replaces: one link less.  Its last: it lingers as an
 * orphan (mds_linger.c) instead of going at once or at its last close,
 * so that a reader whose kernel resolved the name just before the rename
 * opens the old file, as on a local file system. */
static void drop_replaced(struct mds *m, struct mds_txn *t, struct mds_inode *in, uint64_t now)
{
	if (in->nlink == 1 && !m->reconnecting && mds_linger_add(in->ino)) {
		in->nlink = 0;
		in->ctime = now;
		in->flags |= MDS_INO_ORPHAN;
		return;
	}
	drop_link(m, t, in, now);
}

static int op_create(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		     struct mds_txn *t, uint32_t mode)
{
	struct mds_node *d;
	uint64_t ino, now = mds_now();
	int ret = dir_of(m, rq->ino, &d);

	if (ret)
		return ret;
	if ((ret = check_name(rq->name)))
		return ret;
	if (mds_cache_dir_find(d, rq->name))
		return -EEXIST;
	/* a create that opens: the open-file bound, before anything changes
	 * (a new inode is none of the client's open files) */
	if (rq->op == MDS_OP_MKNOD && (rq->flags & 0x2u) &&
	    (ret = mds_sess_open_check(rq->client, UINT64_MAX, m->max_open_per_session)))
		return ret;
	/* A create resent after an MDS restart keeps the number its first
	 * (early) reply gave: the client names the file's data objects by
	 * it.  Nobody else can hold it: numbers are handed out only below an
	 * ino_hw stored before use, and a restarted MDS allocates from that
	 * ino_hw up (doc/fs-design.md, "Inode numbers"). */
	/* A create the client answered itself (MDS_L_ASYNC) comes with a
	 * number from a range INOS gave it (mds_inos.c), which the table
	 * vouches for as unused, else (an MDS restarted since, or a resend)
	 * the same test as a resend's; a number neither accepts is refused
	 * (the client told its caller that number already). */
	bool async = (rq->lflags & MDS_L_ASYNC) != 0;
	if (async && (rq->op == MDS_OP_MKNOD || rq->op == MDS_OP_MKDIR) &&
	    !(rq->lflags & MDS_L_REPLAY) && mds_inos_take(rq->client, rq->replay_ino))
		ino = rq->replay_ino;
	else if ((rq->lflags & (MDS_L_REPLAY | MDS_L_ASYNC)) && rq->replay_ino > MDS_ROOT_INO &&
		 rq->replay_ino < m->next_ino && !mds_cache_get(m, rq->replay_ino))
		ino = rq->replay_ino;
	else if (async)
		return -ESTALE;
	else if ((ret = mds_txn_alloc_ino(m, t, &ino)))
		return ret;
	struct mds_inode *p = mds_txn_inode(m, t, rq->ino);
	struct mds_inode *in = mds_txn_new_inode(t, ino);
	in->mode = mode;
	in->uid = rq->uid;
	in->gid = (p->mode & S_ISGID) ? p->gid : rq->gid;
	if (S_ISDIR(mode) && (p->mode & S_ISGID))
		in->mode |= S_ISGID;
	in->nlink = S_ISDIR(mode) ? 2 : 1;
	in->rdev = rq->rdev;
	in->dns = p->dns;	/* the parent's data namespace (fuse_here.c does the same) */
	/* the client answered with its own clock's time: the record it
	 * gave its kernel and this one agree */
	in->atime = in->mtime = in->ctime = async && rq->s_mtime ? rq->s_mtime : (int64_t)now;
	in->gen = 1;
	if (S_ISLNK(mode)) {
		snprintf(t->link, sizeof(t->link), "%s", rq->target);
		t->link_ino = ino;
		in->size = strlen(rq->target);
	}
	if (S_ISDIR(mode))
		p->nlink++;
	touch_dir(p, now);
	mds_txn_dent_set(t, rq->ino, rq->name, ino, mode);
	struct mds_inode out_in = *in, out_p = *p;
	t->res_ino = ino;
	mds_txn_commit(m, t);
	if (rq->op == MDS_OP_MKNOD && (rq->flags & 0x2u)) {
		struct mds_node *n = mds_cache_get(m, ino);
		if (n)
			opens_add(n, mds_sess_open(rq->client, ino, 1, rq->ogen));
	}
	reply_inode(rp, &out_in);
	reply_inode(rp, &out_p);
	return 0;
}

static int op_unlink(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		     struct mds_txn *t, bool dir)
{
	struct mds_node *d, *victim;
	struct mds_dent *de;
	uint64_t now = mds_now();
	int ret = dir_of(m, rq->ino, &d);

	if (ret)
		return ret;
	if (!strcmp(rq->name, "."))
		return -EINVAL;
	if (!strcmp(rq->name, ".."))
		return -ENOTEMPTY;
	de = mds_cache_dir_find(d, rq->name);
	if (!de)
		return -ENOENT;
	/* answered by the client already: only the inode it saw there
	 * (somebody else's change since won) */
	if ((rq->lflags & MDS_L_ASYNC) && de->ino != rq->ino2)
		return -ENOENT;
	victim = mds_cache_get(m, de->ino);
	if (!victim)
		return -EIO;
	if (dir) {
		if (!S_ISDIR(victim->a.mode))
			return -ENOTDIR;
		if (mds_cache_dir_load(m, victim))
			return -EIO;
		if (victim->nents)
			return -ENOTEMPTY;
	} else if (S_ISDIR(victim->a.mode)) {
		return -EISDIR;
	}
	uint64_t vino = de->ino;
	struct mds_inode *p = mds_txn_inode(m, t, rq->ino);
	struct mds_inode *v = mds_txn_inode(m, t, vino);
	mds_txn_dent_rm(t, rq->ino, rq->name);
	touch_dir(p, now);
	if (dir) {
		p->nlink--;
		mds_txn_remove(t, vino, false);
	} else {
		drop_link(m, t, v, now);
	}
	struct mds_inode out_p = *p;
	mds_txn_commit(m, t);
	reply_inode(rp, &out_p);
	return 0;
}

static bool is_ancestor(struct mds *m, uint64_t anc, uint64_t ino)
{
	for (int depth = 0; depth < 4096; depth++) {
		if (ino == anc)
			return true;
		if (ino == MDS_ROOT_INO)
			return false;
		struct mds_node *n = mds_cache_get(m, ino);
		if (!n)
			return false;
		ino = mds_cache_dir_parent(m, n);
	}
	return true;
}

static int op_rename(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		     struct mds_txn *t)
{
	struct mds_node *d1, *d2, *sn, *dn = NULL;
	struct mds_dent *se, *de;
	uint64_t now = mds_now();
	int ret;

	if ((ret = dir_of(m, rq->ino, &d1)) || (ret = dir_of(m, rq->ino2, &d2)))
		return ret;
	if ((ret = check_name(rq->name)) || (ret = check_name(rq->name2)))
		return ret == -EINVAL && (!strcmp(rq->name, "..") || !strcmp(rq->name2, ".."))
			? -EBUSY : ret;
	if (rq->flags & ~(uint32_t)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((rq->flags & RENAME_NOREPLACE) && (rq->flags & RENAME_EXCHANGE))
		return -EINVAL;
	se = mds_cache_dir_find(d1, rq->name);
	if (!se)
		return -ENOENT;
	uint64_t sino = se->ino;
	uint32_t smode = se->mode;
	sn = mds_cache_get(m, sino);
	de = mds_cache_dir_find(d2, rq->name2);
	uint64_t dino = de ? de->ino : 0;
	uint32_t dmode = de ? de->mode : 0;
	if (de)
		dn = mds_cache_get(m, dino);
	if (!sn || (de && !dn))
		return -EIO;
	if (rq->flags & RENAME_NOREPLACE && de)
		return -EEXIST;
	if (rq->flags & RENAME_EXCHANGE) {
		if (!de)
			return -ENOENT;
		if (sino == dino)
			return 0;
		if ((S_ISDIR(smode) && is_ancestor(m, sino, rq->ino2)) ||
		    (S_ISDIR(dmode) && is_ancestor(m, dino, rq->ino)))
			return -EINVAL;
		struct mds_inode *p1 = mds_txn_inode(m, t, rq->ino);
		struct mds_inode *p2 = mds_txn_inode(m, t, rq->ino2);
		struct mds_inode *si = mds_txn_inode(m, t, sino);
		struct mds_inode *di = mds_txn_inode(m, t, dino);
		mds_txn_dent_set(t, rq->ino, rq->name, dino, dmode);
		mds_txn_dent_set(t, rq->ino2, rq->name2, sino, smode);
		if (rq->ino != rq->ino2 && S_ISDIR(smode) != S_ISDIR(dmode)) {
			if (S_ISDIR(smode)) {
				p1->nlink--;
				p2->nlink++;
			} else {
				p2->nlink--;
				p1->nlink++;
			}
		}
		touch_dir(p1, now);
		touch_dir(p2, now);
		si->ctime = di->ctime = now;
		mds_txn_commit(m, t);
		return 0;
	}
	if (de && dino == sino)
		return 0;	/* two names of one inode: POSIX says do nothing */
	if (S_ISDIR(smode) && is_ancestor(m, sino, rq->ino2))
		return -EINVAL;
	if (de) {
		if (S_ISDIR(smode) && !S_ISDIR(dmode))
			return -ENOTDIR;
		if (!S_ISDIR(smode) && S_ISDIR(dmode))
			return -EISDIR;
		if (S_ISDIR(dmode) && mds_cache_dir_load(m, dn))
			return -EIO;
		if (S_ISDIR(dmode) && dn->nents)
			return -ENOTEMPTY;
	}
	struct mds_inode *p1 = mds_txn_inode(m, t, rq->ino);
	struct mds_inode *p2 = mds_txn_inode(m, t, rq->ino2);
	struct mds_inode *si = mds_txn_inode(m, t, sino);
	if (de) {
		struct mds_inode *di = mds_txn_inode(m, t, dino);
		if (S_ISDIR(dmode)) {
			p2->nlink--;
			mds_txn_remove(t, dino, false);
		} else {
			drop_replaced(m, t, di, now);
		}
	}
	mds_txn_dent_set(t, rq->ino2, rq->name2, sino, smode);
	mds_txn_dent_rm(t, rq->ino, rq->name);
	if (S_ISDIR(smode) && rq->ino != rq->ino2) {
		p1->nlink--;
		p2->nlink++;
	}
	touch_dir(p1, now);
	touch_dir(p2, now);
	si->ctime = now;
	mds_txn_commit(m, t);
	(void)rp;
	return 0;
}

static int op_link(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		   struct mds_txn *t)
{
	struct mds_node *d, *n = mds_cache_get(m, rq->ino);
	uint64_t now = mds_now();
	int ret;

	if (!n || n->a.nlink == 0)
		return -ENOENT;
	if (S_ISDIR(n->a.mode))
		return -EPERM;
	if ((ret = dir_of(m, rq->ino2, &d)) || (ret = check_name(rq->name2)))
		return ret;
	if (mds_cache_dir_find(d, rq->name2))
		return -EEXIST;
	struct mds_inode *in = mds_txn_inode(m, t, rq->ino);
	struct mds_inode *p = mds_txn_inode(m, t, rq->ino2);
	in->nlink++;
	in->ctime = now;
	touch_dir(p, now);
	mds_txn_dent_set(t, rq->ino2, rq->name2, rq->ino, in->mode);
	struct mds_inode out = *in;
	t->res_ino = rq->ino;
	mds_txn_commit(m, t);
	reply_inode(rp, &out);
	return 0;
}

static int op_setattr(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		      struct mds_txn *t)
{
	struct mds_inode *in = mds_txn_inode(m, t, rq->ino);
	uint64_t now = mds_now();

	if (!in)
		return -ENOENT;
	if (rq->setmask & MDS_SET_MODE)
		in->mode = (in->mode & S_IFMT) | (rq->s_mode & 07777);
	if (rq->setmask & MDS_SET_UID)
		in->uid = rq->s_uid;
	if (rq->setmask & MDS_SET_GID)
		in->gid = rq->s_gid;
	if (rq->setmask & MDS_SET_SIZE) {
		if (S_ISDIR(in->mode))
			return -EISDIR;
		if (rq->s_size > MDS_FILE_SIZE_MAX)
			return -EFBIG;
		uint64_t hint = rq->size_hint <= MDS_FILE_SIZE_MAX ? rq->size_hint : 0;
		uint64_t old = in->size > hint ? in->size : hint;
		if (rq->s_size < old)
			mds_txn_trunc(t, rq->ino, rq->s_size, old);
		in->size = rq->s_size;
		in->mtime = now;
	}
	if (rq->setmask & MDS_SET_ATIME)
		in->atime = rq->s_atime;
	if (rq->setmask & MDS_SET_ATIME_NOW)
		in->atime = now;
	if (rq->setmask & MDS_SET_MTIME)
		in->mtime = rq->s_mtime;
	if (rq->setmask & MDS_SET_MTIME_NOW)
		in->mtime = now;
	in->ctime = (rq->setmask & MDS_SET_CTIME) ? rq->s_ctime : (int64_t)now;
	struct mds_inode out = *in;
	t->res_ino = rq->ino;
	mds_txn_commit(m, t);
	reply_inode(rp, &out);
	return 0;
}

/* CLOSE and FSYNC: the client's size (it only grows the size) and mtime. */
static int op_close(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		    struct mds_txn *t)
{
	struct mds_node *n = mds_cache_get(m, rq->ino);

	if (!n)
		return -ENOENT;
	if (rq->op == MDS_OP_CLOSE) {
		opens_add(n, mds_sess_open(rq->client, rq->ino, -1, rq->ogen));
	}
	/* a size past MDS_FILE_SIZE_MAX is no size a file can have: the
	 * close still counts, the size is not taken */
	bool grow = rq->size_hint > n->a.size && rq->size_hint <= MDS_FILE_SIZE_MAX;
	bool mt = (rq->setmask & MDS_SET_MTIME) && rq->s_mtime != n->a.mtime;
	bool gone = n->a.nlink == 0 && n->opens == 0 && rq->ino != MDS_ROOT_INO &&
		    !mds_linger_holds(rq->ino) && !mds_open_orphan_defer(m, rq->ino);
	if (grow || mt || gone) {
		struct mds_inode *in = mds_txn_inode(m, t, rq->ino);
		if (grow)
			in->size = rq->size_hint;
		if (mt) {
			in->mtime = rq->s_mtime;
			in->ctime = mds_now();
		}
		if (gone)
			mds_txn_remove(t, rq->ino, true);
		struct mds_inode out = *in;
		mds_txn_commit(m, t);
		reply_inode(rp, &out);
		return 0;
	}
	reply_inode(rp, &n->a);
	return 0;
}

/* CLOSE with MDS_L_MANY: the closes a client gathered (clean files: no
 * size or time to set), each as a CLOSE of its own; the reply carries no
 * inode.  The first error, the others done. */
static int close_many(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		      struct mds_txn *t)
{
	size_t n = rq->vlen / 16;
	int ret = 0;

	if (!rq->value || rq->vlen % 16 || !n || n > MDS_CLOSE_MANY)
		return -EINVAL;
	struct mds_req *one = malloc(sizeof(*one));
	if (!one)
		return -ENOMEM;
	*one = *rq;
	one->lflags &= ~MDS_L_MANY;
	one->value = NULL;
	one->vlen = 0;
	one->setmask = 0;
	one->size_hint = 0;
	struct dec d;
	dec_init(&d, rq->value, rq->vlen);
	for (size_t i = 0; i < n; i++) {
		one->ino = dec_u64(&d);
		one->ogen = dec_u64(&d);
		mds_txn_init(t);
		int r = op_close(m, one, rp, t);
		rp->ninodes = 0;
		mds_inflight_landed(one->ino, one->client, UINT64_MAX);	/* its writes are in */
		if (r && !ret)
			ret = r;
	}
	free(one);
	return ret;
}

static int op_readdir(struct mds *m, const struct mds_req *rq, struct mds_reply *rp)
{
	struct mds_node *d;
	int ret = dir_of(m, rq->ino, &d);
	uint32_t max = rq->max && rq->max < MDS_READDIR_MAX ? rq->max : MDS_READDIR_MAX;

	if (ret)
		return ret;
	/* positions are names: the first entry after the cookie */
	struct mds_dent *e = mds_cache_dir_next(d, rq->cookie);
	size_t n = d->nents < max ? d->nents : max;
	if (n) {
		rp->ents = calloc(n, sizeof(*rp->ents));
		if (!rp->ents)
			return -ENOMEM;
	}
	size_t k = 0;
	for (; e && k < n; k++, e = mds_cache_dir_next(d, e->name)) {
		snprintf(rp->ents[k].name, sizeof(rp->ents[k].name), "%s", e->name);
		rp->ents[k].ino = e->ino;
		rp->ents[k].mode = e->mode;
	}
	n = k;
	rp->nents = (uint32_t)n;
	rp->more = e != NULL;
	/* readdir-plus: each entry's inode record too (`ls -l` needs
	 * them; the client caches them under an attribute lease) */
	if (n && (rq->lflags & MDS_L_PLUS)) {
		rp->plus = calloc(n, sizeof(*rp->plus));
		uint64_t *inos = calloc(n, sizeof(*inos));
		if (!rp->plus || !inos) {
			free(inos);
			return -ENOMEM;
		}
		for (k = 0; k < n; k++)
			inos[k] = rp->ents[k].ino;
		mds_cache_prefetch(m, inos, n);	/* the records not cached, per shard */
		free(inos);
		for (k = 0; k < n; k++) {
			struct mds_node *c = mds_cache_get(m, rp->ents[k].ino);
			if (c)
				rp->plus[k] = c->a;
			else
				rp->plus[k].ino = 0;	/* cannot happen: no lease, no attributes */
		}
		rp->nplus = (uint32_t)n;
	}
	return 0;
}

#define XATTR_CREATE_ 1
#define XATTR_REPLACE_ 2

/* The data namespace of a directory (doc/fs-design.md, "Data
 * namespaces"), through MDS_XATTR_DNS: get gives its object-name prefix,
 * set makes the directory carry one of its own (the files and folders
 * created below it from then on inherit it), remove is refused.  Only a
 * client with unlimited caps gets here for a set (mds_access.c).  A
 * directory with subdirectories is refused: those keep theirs, and files
 * created in them would fall outside the namespace. */
static int dns_xattr(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		     struct mds_txn *t, struct mds_node *n)
{
	char prefix[32];

	switch (rq->op) {
	case MDS_OP_GETXATTR:
		reply_inode(rp, &n->a);
		if (!n->a.dns)
			return -ENODATA;
		mds_dns_prefix(prefix, sizeof(prefix), n->a.dns);
		rp->value = strdup(prefix);
		if (!rp->value)
			return -ENOMEM;
		rp->vlen = (uint32_t)strlen(prefix);
		return 0;
	case MDS_OP_SETXATTR: {
		if (!S_ISDIR(n->a.mode))
			return -ENOTDIR;
		if (n->a.dns == n->a.ino) {
			reply_inode(rp, &n->a);
			return 0;	/* it has one already */
		}
		if (mds_cache_dir_load(m, n))
			return -EIO;
		for (struct mds_dent *e = mds_cache_dir_next(n, ""); e;
		     e = mds_cache_dir_next(n, e->name))
			if (S_ISDIR(e->mode))
				return -ENOTEMPTY;
		struct mds_inode *in = mds_txn_inode(m, t, rq->ino);
		in->dns = in->ino;
		in->ctime = mds_now();
		struct mds_inode out = *in;
		t->res_ino = rq->ino;
		mds_txn_commit(m, t);
		reply_inode(rp, &out);
		log_info("mds", "directory %llu carries data namespace %llu from now on",
			 (unsigned long long)out.ino, (unsigned long long)out.dns);
		return 0;
	}
	case MDS_OP_REMOVEXATTR:
		return -EPERM;
	default:	/* listed by no LISTXATTR: not an attribute of its own */
		return -EOPNOTSUPP;
	}
}

static int op_xattr(struct mds *m, const struct mds_req *rq, struct mds_reply *rp,
		    struct mds_txn *t)
{
	struct mds_node *n = mds_cache_get(m, rq->ino);
	struct mds_xattr *x;
	int ret;

	if (!n)
		return -ENOENT;
	if ((ret = mds_cache_xattr_load(m, n)))
		return ret;
	if (!strcmp(rq->name, MDS_XATTR_DNS))
		return dns_xattr(m, rq, rp, t, n);
	switch (rq->op) {
	case MDS_OP_GETXATTR:
		/* with the inode's record: the client caches the answer
		 * (absent too) under the record's lease; a change of an
		 * attribute moves ctime, which revokes it */
		reply_inode(rp, &n->a);
		x = mds_cache_xattr_find(n, rq->name);
		if (!x)
			return -ENODATA;
		rp->value = malloc(x->len ? x->len : 1);
		if (!rp->value)
			return -ENOMEM;
		memcpy(rp->value, x->val, x->len);
		rp->vlen = x->len;
		return 0;
	case MDS_OP_LISTXATTR: {
		size_t len = 0;
		for (size_t i = 0; i < n->nxa; i++)
			len += strlen(n->xa[i].name) + 1;
		if (len > MDS_XATTR_MAX)
			return -E2BIG;
		rp->value = malloc(len ? len : 1);
		if (!rp->value)
			return -ENOMEM;
		len = 0;
		for (size_t i = 0; i < n->nxa; i++) {
			size_t l = strlen(n->xa[i].name) + 1;
			memcpy((char *)rp->value + len, n->xa[i].name, l);
			len += l;
		}
		rp->vlen = (uint32_t)len;
		return 0;
	}
	case MDS_OP_SETXATTR:
	case MDS_OP_REMOVEXATTR: {
		if (!rq->name[0])
			return -EINVAL;
		x = mds_cache_xattr_find(n, rq->name);
		bool rm = rq->op == MDS_OP_REMOVEXATTR;
		if (rm && !x)
			return -ENODATA;
		if (!rm && (rq->flags & XATTR_CREATE_) && x)
			return -EEXIST;
		if (!rm && (rq->flags & XATTR_REPLACE_) && !x)
			return -ENODATA;
		if (!rm && rq->vlen > MDS_XATTR_MAX)
			return -E2BIG;
		struct mds_inode *in = mds_txn_inode(m, t, rq->ino);
		in->flags |= MDS_INO_XATTRS;
		in->ctime = mds_now();
		mds_txn_xattr(t, rq->ino, rq->name, rq->value, rq->vlen, rm);
		struct mds_inode out = *in;
		t->res_ino = rq->ino;
		mds_txn_commit(m, t);
		reply_inode(rp, &out);
		return 0;
	}
	}
	return -EOPNOTSUPP;
}

void mds_handle(struct mds *m, const struct mds_req *rq, struct mds_reply *rp)
{
	/* one txn, reused: one request is handled at a time (a fresh one of
	 * ~80 KiB per request cost page faults); mds_txn_init clears its head */
	static struct mds_txn *t;
	if (!t)
		t = malloc(sizeof(*t));
	if (t)
		mds_txn_init(t);
	struct mds_node *n, *d;
	struct mds_dent *de;
	int ret = 0;

	memset(rp, 0, sizeof(*rp));
	if (!t) {
		rp->rc = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&m->lock);
	m->nreq++;
	bool mutating = rq->op == MDS_OP_SETATTR || rq->op == MDS_OP_MKNOD ||
			rq->op == MDS_OP_MKDIR || rq->op == MDS_OP_SYMLINK ||
			rq->op == MDS_OP_UNLINK || rq->op == MDS_OP_RMDIR ||
			rq->op == MDS_OP_RENAME || rq->op == MDS_OP_LINK ||
			rq->op == MDS_OP_SETXATTR || rq->op == MDS_OP_REMOVEXATTR;
	/* only a resend (MDS_L_REPLAY) can have been answered before: a
	 * first send skips the index */
	if (mutating && rq->reqid && (rq->lflags & MDS_L_REPLAY)) {
		const struct mds_done *dn = mds_done_find(m, rq->client, rq->reqid);
		if (dn) {
			/* its first answer may not be journaled yet, and the
			 * MT_MDS_SAFE for it went to the old connection: wait
			 * here (rare), so this answer is safe */
			if (dn->seq && m->journal.early) {
				uint64_t seq = dn->seq;
				pthread_mutex_unlock(&m->lock);
				mds_journal_hurry(m);
				while (mds_journal_durable_seq(m) < seq)
					usleep(1000);
				pthread_mutex_lock(&m->lock);
				dn = mds_done_find(m, rq->client, rq->reqid);
			}
		}
		if (dn) {
			ret = dn->rc;
			n = dn->ino ? mds_cache_get(m, dn->ino) : NULL;
			if (n)
				reply_inode(rp, &n->a);
			else if (dn->ino)
				ret = ret ? ret : -ESTALE;
			log_info("mds", "request %llu of client %llu was resent; answering "
				 "it from its first result", (unsigned long long)rq->reqid,
				 (unsigned long long)rq->client);
			goto out;
		}
	}
	if (mutating && rq->reqid) {
		t->client = rq->client;
		t->reqid = rq->reqid;
	}
	switch (rq->op) {
	case MDS_OP_SESSION:
		snprintf(rp->target, sizeof(rp->target), "%s", m->data_pool);
		ret = mds_session_add(m, rq->client);
		break;
	case MDS_OP_SESSION_END:
		ret = mds_session_drop(m, rq->client);
		break;
	case MDS_OP_LOOKUP:
		if ((ret = dir_of(m, rq->ino, &d)))
			break;
		de = mds_cache_dir_find(d, rq->name);
		n = de ? mds_cache_get(m, de->ino) : NULL;
		if (!n) {
			ret = -ENOENT;
		} else {
			mds_access_hint(n, d->a.ino);
			reply_inode(rp, &n->a);
		}
		break;
	case MDS_OP_GETATTR:
	case MDS_OP_OPEN:
		n = mds_cache_get(m, rq->ino);
		if (!n) {
			ret = -ENOENT;
			break;
		}
		if (rq->op == MDS_OP_OPEN && (rq->lflags & MDS_L_REOPEN) &&
		    (rq->lflags & MDS_L_REPLAY)) {
			/* a re-count after a reconnect (doc/fs-design.md,
			 * "Open files across a restart") */
			int c = rq->max > INT32_MAX ? INT32_MAX : (int)rq->max;
			opens_add(n, mds_sess_reopen(rq->client, rq->ino, c, rq->ogen));
		} else if (rq->op == MDS_OP_OPEN) {
			ret = mds_sess_open_check(rq->client, rq->ino, m->max_open_per_session);
			if (ret)
				break;	/* mds_session_max_open_files */
			opens_add(n, mds_sess_open(rq->client, rq->ino, 1, rq->ogen));
		}
		reply_inode(rp, &n->a);
		break;
	case MDS_OP_SETATTR:
		ret = op_setattr(m, rq, rp, t);
		break;
	case MDS_OP_MKNOD:
		if (S_ISDIR(rq->mode) || S_ISLNK(rq->mode))
			ret = -EINVAL;
		else
			ret = op_create(m, rq, rp, t, rq->mode & S_IFMT ? rq->mode
					: (rq->mode | S_IFREG));
		break;
	case MDS_OP_MKDIR:
		ret = op_create(m, rq, rp, t, S_IFDIR | (rq->mode & 07777));
		break;
	case MDS_OP_SYMLINK:
		if (!rq->target[0])
			ret = -ENOENT;
		else
			ret = op_create(m, rq, rp, t, S_IFLNK | 0777);
		break;
	case MDS_OP_UNLINK:
		ret = op_unlink(m, rq, rp, t, false);
		break;
	case MDS_OP_RMDIR:
		ret = op_unlink(m, rq, rp, t, true);
		break;
	case MDS_OP_RENAME:
		ret = op_rename(m, rq, rp, t);
		break;
	case MDS_OP_LINK:
		ret = op_link(m, rq, rp, t);
		break;
	case MDS_OP_READLINK:
		n = mds_cache_get(m, rq->ino);
		if (!n)
			ret = -ENOENT;
		else if (!S_ISLNK(n->a.mode))
			ret = -EINVAL;
		else
			snprintf(rp->target, sizeof(rp->target), "%s", n->link ? n->link : "");
		break;
	case MDS_OP_READDIR:
		ret = op_readdir(m, rq, rp);
		break;
	case MDS_OP_STATFS:
		/* the cluster's capacity over the data pool's replica count
		 * (mds_statfs.c); the loop thread handles it only when the
		 * cached numbers are fresh, the worker may wait for new ones */
		mds_statfs_get(m->ninodes, &rp->st);
		break;
	case MDS_OP_CLOSE:
		if (rq->lflags & MDS_L_MANY) {
			ret = close_many(m, rq, rp, t);
			break;
		}
		/* fall through */
	case MDS_OP_FSYNC:
		ret = op_close(m, rq, rp, t);
		if (rq->op == MDS_OP_CLOSE) {
			mds_inflight_landed(rq->ino, rq->client, UINT64_MAX);	/* its writes are in */
		} else if (!ret && (rq->lflags & MDS_L_INFLIGHT) && !(rq->lflags & MDS_L_REPLAY)) {
			/* (a resend after a restart re-applies the size only:
			 * its LANDED may have gone to the MDS before) */
			if (mds_inflight_add(rq->ino, rq->client, rq->ino2))
				ret = -EAGAIN;	/* the client waits for its writes */
		}
		break;
	case MDS_OP_SETXATTR:
	case MDS_OP_GETXATTR:
	case MDS_OP_LISTXATTR:
	case MDS_OP_REMOVEXATTR:
		ret = op_xattr(m, rq, rp, t);
		break;
	case MDS_OP_INOS:
		ret = mds_inos_grant(m, rq->client, rq->max, &rp->ino_first, &rp->ino_count);
		break;
	default:
		ret = -EOPNOTSUPP;
	}
	if (mutating && rq->reqid)
		mds_done_add(m, rq->client, rq->reqid, ret,
			     !ret && rp->ninodes ? rp->in[0].ino : 0, m->cur_seq);
out:
	if (m->cache.load_err && ret == -ENOENT)
		ret = -EIO;	/* not absent: its load failed (logged) */
	mds_cache_trim(m);	/* clears load_err */
	pthread_mutex_unlock(&m->lock);
	rp->rc = ret;
}
