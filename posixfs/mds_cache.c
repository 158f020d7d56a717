/*
 * mds_cache.c - the MDS's metadata cache (doc/fs-design.md, "The metadata
 * cache"): the namespace in memory, as nodes loaded from the objects on
 * first use, changed by each committed transaction (mds_cache_apply).
 *
 * Nodes (inode records, directory listings, extended attributes) are
 * loaded on first use and kept within m->cache.max bytes (mds_cache_mb):
 * a record from its key of fs.inodes.NN, a listing from fs.dir.INO (read
 * in pages), the attributes from fs.xattr.INO.  The objects may trail
 * memory (the applier writes behind the reply), so a node changed by a
 * txn the applier has not written yet (aseq > applied_aseq) is pinned, and
 * so is a removed inode until its removal is written (a tombstone, `gone`:
 * a load would find the old record).  Open inodes and the root are pinned
 * too.  Everything else is evicted least recently used first, at the end
 * of a request (never in the middle of one: the ops hold node pointers),
 * and loaded again, equal to what was evicted, on its next use.  Leases
 * need no pin: a change revokes them from the txn, cached or not; and
 * readdir positions are names, so a listing evicted between two pages
 * reads on from the same name.
 *
 * Locking: everything here runs under m->lock (the namespace's lock, held
 * by whoever handles a request, and by mds_cache_req_dirs and
 * mds_cache_has_req, which take it themselves).  The applier never
 * touches the cache: what it wrote is read as applier.applied_aseq, an
 * atomic load.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <atoll/atoll.h>

#include "encode.h"
#include "log.h"

#define SUB "mds"

#define MALLOC_OVERHEAD	16u
#define NODE_BYTES	(sizeof(struct mds_node) + MALLOC_OVERHEAD + 2 * sizeof(void *))

static size_t dent_bytes(size_t namelen)
{
	return sizeof(struct mds_dent) + namelen + 1 + MALLOC_OVERHEAD;
}

static void lru_unlink(struct mds *m, struct mds_node *n)
{
	if (n->lprev)
		n->lprev->lnext = n->lnext;
	else
		m->cache.lru_head = n->lnext;
	if (n->lnext)
		n->lnext->lprev = n->lprev;
	else
		m->cache.lru_tail = n->lprev;
	n->lprev = n->lnext = NULL;
}

static void lru_push(struct mds *m, struct mds_node *n)
{
	n->lprev = NULL;
	n->lnext = m->cache.lru_head;
	if (m->cache.lru_head)
		m->cache.lru_head->lprev = n;
	else
		m->cache.lru_tail = n;
	m->cache.lru_head = n;
}

static void lru_touch(struct mds *m, struct mds_node *n)
{
	if (m->cache.lru_head == n)
		return;
	lru_unlink(m, n);
	lru_push(m, n);
}

/* Recounts n's memory into m->cache.bytes (after any change of its size). */
static void node_account(struct mds *m, struct mds_node *n)
{
	size_t b = NODE_BYTES + n->ent_bytes;

	if (n->link)
		b += strlen(n->link) + 1 + MALLOC_OVERHEAD;
	for (size_t i = 0; i < n->nxa; i++)
		b += sizeof(*n->xa) + strlen(n->xa[i].name) + n->xa[i].len +
		     1 + 2 * MALLOC_OVERHEAD;
	m->cache.bytes = m->cache.bytes - n->mem + b;
	n->mem = b;
}

static void oom_exit(const char *what)
{
	log_error(SUB, "out of memory %s; exiting (a restart replays the journal)", what);
	exit(1);
}

/* The cached node of ino, tombstones included. */
static struct mds_node *ht_find(struct mds *m, uint64_t ino)
{
	struct mds_node *n = m->cache.ht[ino % m->cache.htsize];

	while (n && n->a.ino != ino)
		n = n->hnext;
	return n;
}

struct mds_node *mds_cache_find(struct mds *m, uint64_t ino)
{
	struct mds_node *n = ht_find(m, ino);

	return n && !n->gone ? n : NULL;
}

static struct mds_node *node_new(struct mds *m, uint64_t ino)
{
	struct mds_node *n = calloc(1, sizeof(*n));

	if (!n)
		oom_exit("adding an inode");
	n->a.ino = ino;
	n->hnext = m->cache.ht[ino % m->cache.htsize];
	m->cache.ht[ino % m->cache.htsize] = n;
	lru_push(m, n);
	m->cache.n++;
	node_account(m, n);
	return n;
}

/* ---- directory entries: an AVL tree per directory ---- */

static int dh(const struct mds_dent *e)
{
	return e ? e->h : 0;
}

static void dfix(struct mds_dent *e)
{
	int l = dh(e->l), r = dh(e->r);

	e->h = 1 + (l > r ? l : r);
}

static struct mds_dent *drot_right(struct mds_dent *y)
{
	struct mds_dent *x = y->l;

	y->l = x->r;
	x->r = y;
	dfix(y);
	dfix(x);
	return x;
}

static struct mds_dent *drot_left(struct mds_dent *x)
{
	struct mds_dent *y = x->r;

	x->r = y->l;
	y->l = x;
	dfix(x);
	dfix(y);
	return y;
}

static struct mds_dent *dbalance(struct mds_dent *e)
{
	int bf;

	dfix(e);
	bf = dh(e->l) - dh(e->r);
	if (bf > 1) {
		if (dh(e->l->l) < dh(e->l->r))
			e->l = drot_left(e->l);
		return drot_right(e);
	}
	if (bf < -1) {
		if (dh(e->r->r) < dh(e->r->l))
			e->r = drot_right(e->r);
		return drot_left(e);
	}
	return e;
}

/* Inserts x (its name is not in the tree). */
static struct mds_dent *dinsert(struct mds_dent *e, struct mds_dent *x)
{
	if (!e)
		return x;
	if (strcmp(x->name, e->name) < 0)
		e->l = dinsert(e->l, x);
	else
		e->r = dinsert(e->r, x);
	return dbalance(e);
}

static struct mds_dent *dremove_min(struct mds_dent *e, struct mds_dent **min)
{
	if (!e->l) {
		*min = e;
		return e->r;
	}
	e->l = dremove_min(e->l, min);
	return dbalance(e);
}

/* Unlinks the entry name from the tree into *out (NULL: not there). */
static struct mds_dent *dremove(struct mds_dent *e, const char *name, struct mds_dent **out)
{
	int c;

	if (!e)
		return NULL;
	c = strcmp(name, e->name);
	if (c < 0) {
		e->l = dremove(e->l, name, out);
	} else if (c > 0) {
		e->r = dremove(e->r, name, out);
	} else {
		struct mds_dent *min;
		*out = e;
		if (!e->l || !e->r)
			return e->l ? e->l : e->r;
		struct mds_dent *r = dremove_min(e->r, &min);
		min->l = e->l;
		min->r = r;
		return dbalance(min);
	}
	return dbalance(e);
}

static void dfree_all(struct mds_dent *e)
{
	while (e) {
		struct mds_dent *r = e->r;
		dfree_all(e->l);
		free(e);
		e = r;
	}
}

struct mds_dent *mds_cache_dir_find(struct mds_node *d, const char *name)
{
	struct mds_dent *e = d->dents;

	while (e) {
		int c = strcmp(name, e->name);
		if (!c)
			return e;
		e = c < 0 ? e->l : e->r;
	}
	return NULL;
}

struct mds_dent *mds_cache_dir_next(struct mds_node *d, const char *after)
{
	struct mds_dent *e = d->dents, *best = NULL;

	while (e) {
		if (strcmp(e->name, after) > 0) {
			best = e;
			e = e->l;
		} else {
			e = e->r;
		}
	}
	return best;
}

/* Sets entry name of d (loaded) to ino/mode. */
static void dent_put(struct mds *m, struct mds_node *d, const char *name,
		     uint64_t ino, uint32_t mode)
{
	struct mds_dent *e = mds_cache_dir_find(d, name);

	if (!e) {
		size_t len = strlen(name);
		e = calloc(1, sizeof(*e) + len + 1);
		if (!e)
			oom_exit("growing a directory");
		memcpy(e->name, name, len + 1);
		e->h = 1;
		d->dents = dinsert(d->dents, e);
		d->nents++;
		d->ent_bytes += dent_bytes(len);
	}
	e->ino = ino;
	e->mode = mode & S_IFMT;
	(void)m;
}

static void dent_del(struct mds_node *d, const char *name)
{
	struct mds_dent *e = NULL;

	d->dents = dremove(d->dents, name, &e);
	if (!e)
		return;
	d->nents--;
	d->ent_bytes -= dent_bytes(strlen(e->name));
	free(e);
}

/* Drops what n holds (entries, target, attributes), keeps the node. */
static void node_clear(struct mds *m, struct mds_node *n)
{
	dfree_all(n->dents);
	n->dents = NULL;
	n->nents = 0;
	n->ent_bytes = 0;
	n->dir_loaded = false;
	free(n->link);
	n->link = NULL;
	for (size_t i = 0; i < n->nxa; i++) {
		free(n->xa[i].name);
		free(n->xa[i].val);
	}
	free(n->xa);
	n->xa = NULL;
	n->nxa = 0;
	n->xa_loaded = false;
	node_account(m, n);
}

static void node_free(struct mds *m, struct mds_node *n)
{
	struct mds_node **pp = &m->cache.ht[n->a.ino % m->cache.htsize];

	while (*pp && *pp != n)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = n->hnext;
	lru_unlink(m, n);
	node_clear(m, n);
	m->cache.bytes -= n->mem;
	m->cache.n--;
	free(n);
}

static struct mds_node *node_from_record(struct mds *m, const struct mds_inode *in,
					 const char *link)
{
	struct mds_node *n = node_new(m, in->ino);

	n->a = *in;
	if (link[0]) {
		n->link = strdup(link);
		if (!n->link)
			oom_exit("loading a symlink");
	}
	node_account(m, n);
	return n;
}

/* Loads the record of ino (not cached) from its shard: *out NULL when
 * there is none. */
static int load_record(struct mds *m, uint64_t ino, struct mds_node **out)
{
	char oid[64], key[17], link[MDS_PATH_MAX + 1];
	struct atoll_kv_iter *it = NULL;
	struct mds_inode in;
	const void *k, *v;
	size_t kl, vl;
	int ret;

	*out = NULL;
	mds_store_oid_inodes(oid, sizeof(oid), ino);
	snprintf(key, sizeof(key), "%016" PRIx64, ino);
	struct atoll_kv kv = { key, 16, NULL, 0 };
	ret = atoll_omap_get(m->meta, oid, &kv, 1, &it, 0);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (mds_store_record_decode(v, vl, &in, link) || in.ino != ino)
			ret = -EUCLEAN;
		else
			*out = node_from_record(m, &in, link);
	}
	atoll_kv_iter_free(it);
	return ret;
}

struct mds_node *mds_cache_get(struct mds *m, uint64_t ino)
{
	struct mds_node *n = ht_find(m, ino);
	int ret;

	if (n) {
		if (n->gone)
			return NULL;
		m->cache.hits++;
		lru_touch(m, n);
		return n;
	}
	/* numbers at or above next_ino were never handed out */
	if (!ino || (ino >= m->next_ino && m->next_ino > MDS_ROOT_INO))
		return NULL;
	m->cache.misses++;
	ret = load_record(m, ino, &n);
	if (ret) {
		log_error(SUB, "cannot load inode %" PRIu64 " from the metadata pool (%s); "
			  "the request fails with EIO", ino, atoll_strerror(ret));
		m->cache.load_err = true;
		return NULL;
	}
	return n;
}

void mds_cache_prefetch(struct mds *m, const uint64_t *inos, size_t n)
{
	struct atoll_kv *keys = calloc(n ? n : 1, sizeof(*keys));
	char (*names)[17] = calloc(n ? n : 1, sizeof(*names));
	uint64_t *want = calloc(n ? n : 1, sizeof(*want));

	if (!keys || !names || !want)
		goto out;
	for (unsigned s = 0; s < MDS_INODE_SHARDS; s++) {
		size_t nk = 0;
		for (size_t i = 0; i < n; i++) {
			bool dup = inos[i] % MDS_INODE_SHARDS != s || !inos[i] ||
				   ht_find(m, inos[i]);
			for (size_t j = 0; j < nk && !dup; j++)
				dup = want[j] == inos[i];
			if (dup)
				continue;
			want[nk] = inos[i];
			snprintf(names[nk], 17, "%016" PRIx64, inos[i]);
			keys[nk] = (struct atoll_kv){ names[nk], 16, NULL, 0 };
			nk++;
		}
		if (!nk)
			continue;
		char oid[64], link[MDS_PATH_MAX + 1];
		struct atoll_kv_iter *it = NULL;
		const void *k, *v;
		size_t kl, vl;
		struct mds_inode in;
		mds_store_oid_inodes(oid, sizeof(oid), s);
		m->cache.misses += nk;
		if (atoll_omap_get(m->meta, oid, keys, nk, &it, 0))
			continue;	/* mds_cache_get loads them one by one, and says why */
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0)
			if (!mds_store_record_decode(v, vl, &in, link) && !ht_find(m, in.ino))
				node_from_record(m, &in, link);
		atoll_kv_iter_free(it);
	}
out:
	free(want);
	free(keys);
	free(names);
}

static int load_dent(struct mds *m, void *arg, const void *k, size_t kl,
		     const void *v, size_t vl)
{
	struct mds_node *d = arg;
	uint64_t ino = 0;
	uint32_t mode = 0;
	char name[MDS_NAME_MAX + 1];

	if (kl == 2 && !memcmp(k, "..", 2) && vl == 8) {
		for (int i = 0; i < 8; i++)
			ino |= (uint64_t)((const uint8_t *)v)[i] << (8 * i);
		if (d->a.ino != MDS_ROOT_INO && !d->a.parent)
			d->a.parent = ino;
		return 0;
	}
	if (kl == 0 || kl > MDS_NAME_MAX || vl != 12)
		return 0;
	memcpy(name, k, kl);
	name[kl] = 0;
	for (int i = 0; i < 8; i++)
		ino |= (uint64_t)((const uint8_t *)v)[i] << (8 * i);
	for (int i = 0; i < 4; i++)
		mode |= (uint32_t)((const uint8_t *)v)[8 + i] << (8 * i);
	dent_put(m, d, name, ino, mode);
	return 0;
}

int mds_cache_dir_load(struct mds *m, struct mds_node *d)
{
	char oid[64];
	int ret;

	if (d->dir_loaded || !S_ISDIR(d->a.mode))
		return 0;
	if (!(d->a.flags & MDS_INO_DIROBJ)) {
		d->dir_loaded = true;	/* never had entries: it has no object */
		return 0;
	}
	m->cache.misses++;
	mds_store_oid_dir(oid, sizeof(oid), d->a.ino);
	ret = mds_store_omap_each(m, oid, load_dent, d);
	if (ret) {
		log_error(SUB, "cannot load the entries of directory %" PRIu64 " (%s); "
			  "the request fails with EIO", d->a.ino, atoll_strerror(ret));
		dfree_all(d->dents);
		d->dents = NULL;
		d->nents = 0;
		d->ent_bytes = 0;
		node_account(m, d);
		m->cache.load_err = true;
		return ret;
	}
	d->dir_loaded = true;
	node_account(m, d);
	return 0;
}

uint64_t mds_cache_dir_parent(struct mds *m, struct mds_node *n)
{
	struct atoll_kv_iter *it = NULL;
	const void *k, *v;
	size_t kl, vl;
	char oid[64];

	/* a directory of a record without the parent: its `..` key */
	if (n->a.parent || !S_ISDIR(n->a.mode) || n->dir_loaded ||
	    !(n->a.flags & MDS_INO_DIROBJ))
		return n->a.parent;
	mds_store_oid_dir(oid, sizeof(oid), n->a.ino);
	struct atoll_kv kv = { "..", 2, NULL, 0 };
	if (atoll_omap_get(m->meta, oid, &kv, 1, &it, 0) == 0 &&
	    atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0 && vl == 8) {
		uint64_t p = 0;
		for (int i = 0; i < 8; i++)
			p |= (uint64_t)((const uint8_t *)v)[i] << (8 * i);
		n->a.parent = p;
	}
	atoll_kv_iter_free(it);
	return n->a.parent;
}

/* Pinned: the root, open inodes, and nodes with a change (or a removal)
 * the applier has not written to the objects yet. */
static bool node_pinned(const struct mds_node *n, uint64_t applied)
{
	if (n->aseq > applied)
		return true;
	if (n->gone)
		return false;
	return n->a.ino == MDS_ROOT_INO || n->opens > 0 || n->a.nlink == 0;
}

void mds_cache_trim(struct mds *m)
{
	uint64_t applied = __atomic_load_n(&m->applier.applied_aseq, __ATOMIC_ACQUIRE);
	struct mds_node *n = m->cache.lru_tail;
	uint64_t budget = m->cache.n;

	m->cache.load_err = false;
	while (n && m->cache.bytes > m->cache.max && budget--) {
		struct mds_node *prev = n->lprev;
		if (!node_pinned(n, applied)) {
			node_free(m, n);
			m->cache.evictions++;
		} else if (n->aseq <= applied) {
			lru_touch(m, n);	/* open or root: it stays; look past it next time */
		}
		n = prev;
	}
}

/* The directory of a dentry update, its entries loaded.  Nothing queued
 * for the applier touches a directory that is not cached (a node with
 * unwritten changes is pinned), so loading it here reads its true state;
 * a failure leaves memory behind the journal: exit, a restart replays. */
static struct mds_node *dir_for_update(struct mds *m, uint64_t dir)
{
	struct mds_node *d;

	if (m->follow.on) {
		/* a standby following the journal (mds_follow.c): a directory
		 * whose record is not in the objects any more was removed by
		 * an entry it reads later (numbers are not reused), which
		 * leaves a tombstone: skip its entries.  A failed load: start
		 * over from the head. */
		m->cache.load_err = false;
		d = mds_cache_get(m, dir);
		if (!d && m->cache.load_err)
			m->follow.broken = true;
		if (d && mds_cache_dir_load(m, d)) {
			m->follow.broken = true;
			d = NULL;
		}
		return d;
	}
	d = mds_cache_get(m, dir);
	if (!d || mds_cache_dir_load(m, d)) {
		log_error(SUB, "cannot load directory %" PRIu64 " to change it; exiting so "
			  "that a restart replays the journal", dir);
		exit(1);
	}
	return d;
}

static void mem_dent_set(struct mds *m, uint64_t aseq, uint64_t dir, const char *name,
			 uint64_t ino, uint32_t mode)
{
	struct mds_node *d = dir_for_update(m, dir);

	if (!d)
		return;	/* following: see dir_for_update */
	dent_put(m, d, name, ino, mode);
	d->aseq = aseq;
	node_account(m, d);
	if (S_ISDIR(mode)) {
		struct mds_node *c = mds_cache_find(m, ino);
		if (c)
			c->a.parent = dir;
	}
}

static void mem_dent_rm(struct mds *m, uint64_t aseq, uint64_t dir, const char *name)
{
	struct mds_node *d = dir_for_update(m, dir);

	if (!d)
		return;	/* following: see dir_for_update */
	dent_del(d, name);
	d->aseq = aseq;
	node_account(m, d);
}

/* Answers mds_cache_has_req for a directory: cached with its entries. */
static struct mds_node *dir_ready(struct mds *m, uint64_t ino)
{
	struct mds_node *d = mds_cache_find(m, ino);

	return d && (d->dir_loaded || !S_ISDIR(d->a.mode)) ? d : NULL;
}

static bool dent_ready(struct mds *m, struct mds_node *d, const char *name, bool listing)
{
	struct mds_dent *e = S_ISDIR(d->a.mode) ? mds_cache_dir_find(d, name) : NULL;

	if (!e)
		return true;
	struct mds_node *c = mds_cache_find(m, e->ino);
	return c && (!listing || dir_ready(m, e->ino));
}

unsigned mds_cache_req_dirs(struct mds *m, const struct mds_req *rq, uint64_t out[4])
{
	unsigned n = 0;

	if (rq->op == MDS_OP_STATFS || rq->op == MDS_OP_SESSION ||
	    rq->op == MDS_OP_SESSION_END || rq->op == MDS_OP_LANDED)
		return 0;
	out[n++] = rq->ino;
	if (rq->op == MDS_OP_RENAME || rq->op == MDS_OP_LINK)
		out[n++] = rq->ino2;
	if (rq->op != MDS_OP_RMDIR && rq->op != MDS_OP_RENAME)
		return n;
	/* the directory an rmdir or a rename over it empties: its listing
	 * (known when cached; one not cached was not changed lately) */
	pthread_mutex_lock(&m->lock);
	for (int w = 0; w < 2; w++) {
		uint64_t dir = w ? rq->ino2 : rq->ino;
		const char *name = w ? rq->name2 : rq->name;
		if (w && rq->op != MDS_OP_RENAME)
			break;
		struct mds_node *d = mds_cache_find(m, dir);
		struct mds_dent *e = d && d->dir_loaded ? mds_cache_dir_find(d, name) : NULL;
		if (e && S_ISDIR(e->mode))
			out[n++] = e->ino;
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

bool mds_cache_has_req(struct mds *m, const struct mds_req *rq)
{
	struct mds_node *d, *d2;
	bool ok = false;

	pthread_mutex_lock(&m->lock);
	switch (rq->op) {
	case MDS_OP_STATFS:
	case MDS_OP_INOS:
		ok = true;
		break;
	case MDS_OP_GETATTR:
	case MDS_OP_OPEN:
	case MDS_OP_READLINK:
	case MDS_OP_SETATTR:
	case MDS_OP_CLOSE:
	case MDS_OP_FSYNC:
		ok = mds_cache_find(m, rq->ino) != NULL;
		if (ok && rq->op == MDS_OP_CLOSE && (rq->lflags & MDS_L_MANY) && rq->value) {
			/* every inode of the batch (a malformed one: the worker
			 * says so) */
			struct dec dd;
			dec_init(&dd, rq->value, rq->vlen);
			for (uint32_t i = 0; ok && i + 16 <= rq->vlen; i += 16) {
				ok = mds_cache_find(m, dec_u64(&dd)) != NULL;
				(void)dec_u64(&dd);
			}
		}
		break;
	case MDS_OP_LOOKUP:
		d = dir_ready(m, rq->ino);
		ok = d && dent_ready(m, d, rq->name, false);
		break;
	case MDS_OP_MKNOD:
	case MDS_OP_MKDIR:
	case MDS_OP_SYMLINK:
		ok = dir_ready(m, rq->ino) != NULL;
		break;
	case MDS_OP_UNLINK:
	case MDS_OP_RMDIR:
		d = dir_ready(m, rq->ino);
		ok = d && dent_ready(m, d, rq->name, rq->op == MDS_OP_RMDIR);
		break;
	case MDS_OP_LINK:
		ok = mds_cache_find(m, rq->ino) && dir_ready(m, rq->ino2);
		break;
	case MDS_OP_RENAME: {
		d = dir_ready(m, rq->ino);
		d2 = dir_ready(m, rq->ino2);
		if (!d || !d2 || !dent_ready(m, d, rq->name, false) ||
		    !dent_ready(m, d2, rq->name2, true))
			break;
		/* a directory moved: op_rename walks the ancestors of both
		 * directories (is_ancestor), which must be cached with their
		 * parents known */
		struct mds_dent *e1 = S_ISDIR(d->a.mode) ? mds_cache_dir_find(d, rq->name) : NULL;
		struct mds_dent *e2 = S_ISDIR(d2->a.mode) ? mds_cache_dir_find(d2, rq->name2)
							   : NULL;
		ok = true;
		if ((e1 && S_ISDIR(e1->mode)) || (e2 && S_ISDIR(e2->mode))) {
			for (int w = 0; w < 2 && ok; w++) {
				uint64_t ino = w ? rq->ino2 : rq->ino;
				for (int depth = 0; ok && ino != MDS_ROOT_INO && depth < 4096;
				     depth++) {
					struct mds_node *a = mds_cache_find(m, ino);
					ok = a && a->a.parent;
					ino = ok ? a->a.parent : 0;
				}
			}
		}
		break;
	}
	case MDS_OP_READDIR:
		d = dir_ready(m, rq->ino);
		if (!d)
			break;
		ok = true;
		if (rq->lflags & MDS_L_PLUS) {
			uint32_t max = rq->max && rq->max < MDS_READDIR_MAX ? rq->max
				       : MDS_READDIR_MAX;
			struct mds_dent *e = S_ISDIR(d->a.mode) ? mds_cache_dir_next(d, rq->cookie)
							       : NULL;
			for (uint32_t k = 0; ok && e && k < max; k++) {
				ok = mds_cache_find(m, e->ino) != NULL;
				e = mds_cache_dir_next(d, e->name);
			}
		}
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return ok;
}

struct mds_xattr *mds_cache_xattr_find(struct mds_node *n, const char *name)
{
	for (size_t i = 0; i < n->nxa; i++)
		if (!strcmp(n->xa[i].name, name))
			return &n->xa[i];
	return NULL;
}

static void xattr_mem_set(struct mds_node *n, const char *name, const void *val,
			  uint32_t len, bool remove)
{
	struct mds_xattr *x = mds_cache_xattr_find(n, name);

	if (remove) {
		if (!x)
			return;
		free(x->name);
		free(x->val);
		*x = n->xa[--n->nxa];
		return;
	}
	if (!x) {
		struct mds_xattr *nx = realloc(n->xa, (n->nxa + 1) * sizeof(*nx));
		if (!nx)
			goto oom;
		n->xa = nx;
		x = &n->xa[n->nxa];
		x->name = strdup(name);
		x->val = NULL;
		if (!x->name)
			goto oom;
		n->nxa++;
	}
	free(x->val);
	x->val = malloc(len ? len : 1);
	if (!x->val)
		goto oom;
	memcpy(x->val, val, len);
	x->len = len;
	return;
oom:
	log_error(SUB, "out of memory setting an extended attribute; exiting");
	exit(1);
}

static int load_xattr(struct mds *m, void *arg, const void *k, size_t kl,
		      const void *v, size_t vl)
{
	char name[MDS_NAME_MAX + 1];

	if (kl == 0 || kl > MDS_NAME_MAX || vl > MDS_XATTR_MAX)
		return 0;
	memcpy(name, k, kl);
	name[kl] = 0;
	xattr_mem_set(arg, name, v, (uint32_t)vl, false);
	return 0;
}

int mds_cache_xattr_load(struct mds *m, struct mds_node *n)
{
	char oid[64];
	int ret = 0;

	if (n->xa_loaded)
		return 0;
	if (n->a.flags & MDS_INO_XATTRS) {
		mds_store_oid_xattr(oid, sizeof(oid), n->a.ino);
		ret = mds_store_omap_each(m, oid, load_xattr, n);
	}
	if (ret == 0)
		n->xa_loaded = true;
	node_account(m, n);
	return ret;
}

void mds_cache_apply(struct mds *m, const struct mds_txn *t)
{
	uint64_t aseq = t->aseq;

	for (int i = 0; i < t->nu; i++) {
		const struct mds_upd *u = &t->u[i];
		struct mds_node *n;
		switch (u->type) {
		case MDS_U_DENT_SET:
			mem_dent_set(m, aseq, u->dir, u->name, u->ino, u->mode);
			break;
		case MDS_U_DENT_RM:
			mem_dent_rm(m, aseq, u->dir, u->name);
			break;
		case MDS_U_INODE_PUT:
			/* every inode of a txn was loaded by it (mds_txn_inode)
			 * or is new: one not cached (or a tombstone) is new.  Not
			 * for a standby following the journal, which caches only
			 * what the entries touch: a directory not cached may have
			 * entries, loaded on first use (a new one has no object,
			 * so that costs nothing) */
			n = ht_find(m, u->in.ino);
			if (!n || n->gone) {
				if (!n)
					n = node_new(m, u->in.ino);
				n->gone = false;
				n->dir_loaded = S_ISDIR(u->in.mode) && !m->follow.on;
				m->ninodes++;
			}
			n->a = u->in;
			if (t->link_ino == u->in.ino && t->link[0] &&
			    (!n->link || strcmp(n->link, t->link))) {
				free(n->link);
				n->link = strdup(t->link);
				if (!n->link)
					oom_exit("setting a symlink");
			}
			n->aseq = aseq;
			node_account(m, n);
			break;
		case MDS_U_INODE_RM:
			/* a tombstone until the removal is in the objects */
			n = ht_find(m, u->ino);
			if (!n)
				n = node_new(m, u->ino);
			if (!n->gone && m->ninodes)
				m->ninodes--;
			node_clear(m, n);
			n->gone = true;
			n->opens = 0;
			n->aseq = aseq;
			break;
		case MDS_U_PARENT:
			n = mds_cache_find(m, u->ino);
			if (n) {
				n->a.parent = u->dir;
				n->aseq = aseq;
			}
			break;
		case MDS_U_XATTR_SET:
		case MDS_U_XATTR_RM:
			n = mds_cache_find(m, u->ino);
			if (n && n->xa_loaded) {
				xattr_mem_set(n, u->name,
					      u->type == MDS_U_XATTR_SET ? t->xval : NULL,
					      t->xlen, u->type == MDS_U_XATTR_RM);
				node_account(m, n);
			}
			if (n)
				n->aseq = aseq;
			break;
		default:
			break;
		}
	}
}

/* A record read by the start's scan: cached while the cache is under half
 * its bound (everything else loads on first use). */
void mds_cache_preload(struct mds *m, const struct mds_inode *in, const char *link)
{
	if (m->cache.bytes < m->cache.max / 2 && !ht_find(m, in->ino))
		node_from_record(m, in, link);
}

int mds_cache_init(struct mds *m)
{
	if (!m->cache.max)
		m->cache.max = (uint64_t)MDS_CACHE_MB << 20;
	m->cache.htsize = 1u << 16;
	m->cache.ht = calloc(m->cache.htsize, sizeof(*m->cache.ht));
	return m->cache.ht ? 0 : -ENOMEM;
}

void mds_cache_fini(struct mds *m)
{
	while (m->cache.lru_head)
		node_free(m, m->cache.lru_head);
	free(m->cache.ht);
	m->cache.ht = NULL;
}
