/*
 * mds_txn.c - transactions: every change of the namespace is one.  An
 * op (mds_ops.c) takes working copies of the inodes it touches and
 * notes its dentry and attribute updates (mds_txn_*), then commits: the
 * txn becomes a list of final states (dentry set/removed, inode record
 * put/removed, data purged/truncated), encoded as one journal entry, so
 * applying an entry twice gives the same result and replay needs no
 * more than the entries.
 *
 * mds_txn_commit orders what follows: the journal (mds_journal.c) and
 * the cache in memory (mds_cache.c) first, the objects (the applier,
 * mds_applier.c) behind the reply.  Runs under m->lock, on the thread
 * handling the request.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "encode.h"
#include "log.h"

#define SUB "mds"

static int txn_find(struct mds_txn *t, uint64_t ino)
{
	for (int i = 0; i < t->nw; i++)
		if (t->w[i].in.ino == ino)
			return i;
	return -1;
}

struct mds_inode *mds_txn_inode(struct mds *m, struct mds_txn *t, uint64_t ino)
{
	int i = txn_find(t, ino);

	if (i >= 0)
		return t->w[i].removed ? NULL : &t->w[i].in;
	struct mds_node *n = mds_cache_get(m, ino);
	if (!n || t->nw == MDS_TXN_INODES)
		return NULL;
	i = t->nw++;
	t->w[i].in = n->a;
	t->w[i].dirty = true;
	/* its record is written whole, target included */
	if (S_ISLNK(n->a.mode) && n->link && t->link_ino != ino && t->link2_ino != ino) {
		if (!t->link_ino) {
			t->link_ino = ino;
			snprintf(t->link, sizeof(t->link), "%s", n->link);
		} else if (!t->link2_ino) {
			t->link2_ino = ino;
			snprintf(t->link2, sizeof(t->link2), "%s", n->link);
		}
	}
	return &t->w[i].in;
}

/* The target to store with inode ino's record in t ("" when none). */
const char *mds_txn_link(const struct mds_txn *t, uint64_t ino)
{
	if (ino && t->link_ino == ino)
		return t->link;
	if (ino && t->link2_ino == ino)
		return t->link2;
	return "";
}

struct mds_inode *mds_txn_new_inode(struct mds_txn *t, uint64_t ino)
{
	int i = t->nw++;

	memset(&t->w[i], 0, sizeof(t->w[i]));
	t->w[i].in.ino = ino;
	t->w[i].dirty = true;
	return &t->w[i].in;
}

void mds_txn_remove(struct mds_txn *t, uint64_t ino, bool purge)
{
	int i = txn_find(t, ino);

	if (i < 0)
		return;
	t->w[i].removed = true;
	t->w[i].purge = purge;
	t->w[i].purge_size = t->w[i].in.size;
}

void mds_txn_trunc(struct mds_txn *t, uint64_t ino, uint64_t from, uint64_t to)
{
	int i = txn_find(t, ino);

	if (i < 0)
		return;
	t->w[i].trunc = true;
	t->w[i].trunc_from = from;
	t->w[i].trunc_to = to;
}

static struct mds_upd *txn_upd(struct mds_txn *t, uint8_t type)
{
	struct mds_upd *u = &t->u[t->nu++];

	memset(u, 0, sizeof(*u));
	u->type = type;
	return u;
}

void mds_txn_dent_set(struct mds_txn *t, uint64_t dir, const char *name,
		      uint64_t ino, uint32_t mode)
{
	struct mds_upd *u = txn_upd(t, MDS_U_DENT_SET);

	u->dir = dir;
	snprintf(u->name, sizeof(u->name), "%s", name);
	u->ino = ino;
	u->mode = mode & S_IFMT;
}

void mds_txn_dent_rm(struct mds_txn *t, uint64_t dir, const char *name)
{
	struct mds_upd *u = txn_upd(t, MDS_U_DENT_RM);

	u->dir = dir;
	snprintf(u->name, sizeof(u->name), "%s", name);
}

void mds_txn_xattr(struct mds_txn *t, uint64_t ino, const char *name,
		   const void *val, uint32_t len, bool remove)
{
	struct mds_upd *u = txn_upd(t, remove ? MDS_U_XATTR_RM : MDS_U_XATTR_SET);

	u->ino = ino;
	snprintf(u->name, sizeof(u->name), "%s", name);
	if (!remove) {
		if (len)	/* an empty value may come without a buffer */
			memcpy(t->xval, val, len);
		t->xlen = len;
	}
}

/* What a dentry set tells the inode records: its directory has entries,
 * so an object (MDS_INO_DIROBJ: removed with it; loaded); a directory
 * named has that parent.  Every op that sets a dentry has both inodes in
 * its txn (mds_ops.c); a parent not in it goes to the `..` key as before
 * (a PARENT update). */
static void txn_dent_inodes(struct mds_txn *t)
{
	int nd = t->nu;

	for (int i = 0; i < nd; i++) {
		const struct mds_upd *d = &t->u[i];
		if (d->type != MDS_U_DENT_SET)
			continue;
		int k = txn_find(t, d->dir);
		if (k < 0) {
			log_error(SUB, "a change sets an entry of directory %" PRIu64 " without "
				  "its inode; exiting so that a restart replays the journal",
				  d->dir);
			exit(1);
		}
		t->w[k].in.flags |= MDS_INO_DIROBJ;
		t->w[k].dirty = true;
		if (!S_ISDIR(d->mode)) {
			/* a file's parent: the directory of its last name
			 * set, its place for the path checks of MDS caps
			 * (mds_access.c); not in the txn: it keeps its own */
			k = txn_find(t, d->ino);
			if (k >= 0 && !t->w[k].removed) {
				t->w[k].in.parent = d->dir;
				t->w[k].dirty = true;
			}
			continue;
		}
		k = txn_find(t, d->ino);
		if (k >= 0 && !t->w[k].removed) {
			t->w[k].in.parent = d->dir;
			t->w[k].dirty = true;
		} else if (t->nu < MDS_TXN_UPDS) {
			struct mds_upd *u = txn_upd(t, MDS_U_PARENT);
			u->ino = d->ino;
			u->dir = d->dir;
		}
	}
}

/* Turns the working inodes into updates (after the dentry updates). */
static void txn_finish(struct mds_txn *t)
{
	txn_dent_inodes(t);
	for (int i = 0; i < t->nw; i++) {
		struct mds_upd *u;
		if (t->w[i].removed) {
			u = txn_upd(t, MDS_U_INODE_RM);
			u->ino = t->w[i].in.ino;
			u->mode = t->w[i].in.mode;
			u->in = t->w[i].in;
			if (t->w[i].purge) {
				u = txn_upd(t, MDS_U_PURGE);
				u->ino = t->w[i].in.ino;
				u->size = t->w[i].purge_size;
				u->in = t->w[i].in;	/* its data namespace names the objects */
			}
			continue;
		}
		if (t->w[i].dirty) {
			u = txn_upd(t, MDS_U_INODE_PUT);
			u->in = t->w[i].in;
		}
		if (t->w[i].trunc) {
			u = txn_upd(t, MDS_U_TRUNC);
			u->ino = t->w[i].in.ino;
			u->in = t->w[i].in;
			u->size = t->w[i].trunc_from;
			u->old_size = t->w[i].trunc_to;
		}
	}
}

/* A truncate's trim must land before its reply: the client may write the
 * same blocks right after.  A purge need not: its inode is gone, no
 * client holds it open, and nobody writes its blocks again. */
static bool txn_trims_data(const struct mds_txn *t)
{
	for (int i = 0; i < t->nu; i++)
		if (t->u[i].type == MDS_U_TRUNC)
			return true;
	return false;
}

/* Journals t, then applies it in memory; the applier writes it to the
 * objects behind the reply.  With early replies the journaler journals
 * it behind the reply too (mds_journal_queue); else it is journaled here,
 * before anything else.  A journal failure is fatal (the daemon exits; a
 * restart replays). */
int mds_txn_commit(struct mds *m, struct mds_txn *t)
{
	txn_finish(t);
	t->aseq = ++m->aseq;	/* the applier writes the txns in this order */
	if (m->journal.early) {
		/* compares with the old records: before mds_cache_apply */
		mds_lease_note(m, t);
		mds_cache_apply(m, t);
		m->cur_seq = mds_journal_queue(m, t);
		if (txn_trims_data(t)) {
			/* the trim lands before the reply (see txn_trims_data) */
			mds_journal_wait(m, m->cur_seq);
			mds_applier_drain(m);
		}
		return 0;
	}
	mds_journal_write(m, t);
	mds_lease_note(m, t);	/* compares with the old records: first */
	mds_cache_apply(m, t);
	mds_applier_queue_txn(m, t);
	if (txn_trims_data(t))
		mds_applier_drain(m);
	mds_journal_written(m);
	return 0;
}

int mds_txn_alloc_ino(struct mds *m, struct mds_txn *t, uint64_t *ino)
{
	if (m->next_ino >= m->ino_hw) {
		struct mds_txn h;
		mds_txn_init(&h);
		struct mds_upd *u = txn_upd(&h, MDS_U_HW);
		u->ino = m->ino_hw + MDS_INO_RANGE;
		int ret = mds_store_apply(m, &h);
		if (ret)
			return ret;
		m->ino_hw = u->ino;
	}
	*ino = m->next_ino++;
	return 0;
}

