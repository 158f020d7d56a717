/*
 * mds_ns.c - the MDS's namespace: persisted as objects of the metadata
 * pool (doc/fs.md), cached in memory within a bound (loaded on first use,
 * the least recently used clean items evicted: "the metadata cache"),
 * changed only by transactions that are journaled before they are
 * applied to the objects (with early replies, after they are applied in
 * memory and answered: the journaler).
 *
 * A transaction's journal entry lists final states (dentry set/removed,
 * inode record put/removed, data purged/truncated), so applying an entry
 * twice gives the same result: a restart replays the current journal
 * segment over the objects, then loads what requests need.  The objects
 * are written by the applier thread behind the reply (see "the applier"
 * below).
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "crc32c.h"
#include "encode.h"
#include "log.h"
#include "msg.h"

#define SUB "mds"

uint64_t mds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- object names ---------------------------------------------------- */

static void oid_inodes(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.inodes.%02x", (unsigned)(ino % MDS_INODE_SHARDS));
}

static void oid_dir(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.dir.%016" PRIx64, ino);
}

static void oid_xattr(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.xattr.%016" PRIx64, ino);
}

static void oid_seg(char *b, size_t n, uint64_t seg)
{
	snprintf(b, n, "fs.journal.%016" PRIx64, seg);
}

static void oid_data(char *b, size_t n, uint64_t ino, uint64_t blk)
{
	snprintf(b, n, "%016" PRIx64 ".%016" PRIx64, ino, blk);
}

/* ---- the metadata cache ------------------------------------------------------
 *
 * Nodes (inode records, directory listings, extended attributes) are
 * loaded on first use and kept within m->cache_max bytes (mds_cache_mb):
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
 * reads on from the same name. */

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
		m->lru_head = n->lnext;
	if (n->lnext)
		n->lnext->lprev = n->lprev;
	else
		m->lru_tail = n->lprev;
	n->lprev = n->lnext = NULL;
}

static void lru_push(struct mds *m, struct mds_node *n)
{
	n->lprev = NULL;
	n->lnext = m->lru_head;
	if (m->lru_head)
		m->lru_head->lprev = n;
	else
		m->lru_tail = n;
	m->lru_head = n;
}

static void lru_touch(struct mds *m, struct mds_node *n)
{
	if (m->lru_head == n)
		return;
	lru_unlink(m, n);
	lru_push(m, n);
}

/* Recounts n's memory into m->cache_bytes (after any change of its size). */
static void node_account(struct mds *m, struct mds_node *n)
{
	size_t b = NODE_BYTES + n->ent_bytes;

	if (n->link)
		b += strlen(n->link) + 1 + MALLOC_OVERHEAD;
	for (size_t i = 0; i < n->nxa; i++)
		b += sizeof(*n->xa) + strlen(n->xa[i].name) + n->xa[i].len +
		     1 + 2 * MALLOC_OVERHEAD;
	m->cache_bytes = m->cache_bytes - n->mem + b;
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
	struct mds_node *n = m->ht[ino % m->htsize];

	while (n && n->a.ino != ino)
		n = n->hnext;
	return n;
}

struct mds_node *mds_cached(struct mds *m, uint64_t ino)
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
	n->hnext = m->ht[ino % m->htsize];
	m->ht[ino % m->htsize] = n;
	lru_push(m, n);
	m->ncached++;
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

struct mds_dent *mds_dir_find(struct mds_node *d, const char *name)
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

struct mds_dent *mds_dir_next(struct mds_node *d, const char *after)
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
	struct mds_dent *e = mds_dir_find(d, name);

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
	struct mds_node **pp = &m->ht[n->a.ino % m->htsize];

	while (*pp && *pp != n)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = n->hnext;
	lru_unlink(m, n);
	node_clear(m, n);
	m->cache_bytes -= n->mem;
	m->ncached--;
	free(n);
}

static int omap_each(struct mds *m, const char *oid,
		     int (*fn)(struct mds *m, void *arg, const void *k, size_t kl,
			       const void *v, size_t vl), void *arg);

/* An inode record: the inode (its wire form), the symlink target, then
 * the parent of a directory.  A record written before the parent was
 * stored there has none: its directory kept it in the `..` key of its
 * object, which then may exist even if the directory never had entries
 * (the flag MDS_INO_DIROBJ says so; mds_dir_parent reads the key). */
static void record_encode(struct enc *e, const struct mds_inode *in, const char *link)
{
	mds_inode_encode(e, in);
	enc_str(e, link ? link : "");
	enc_u64(e, in->parent);
}

static int record_decode(const void *v, size_t vl, struct mds_inode *in, char *link)
{
	struct dec d;

	dec_init(&d, v, vl);
	mds_inode_decode(&d, in);
	dec_str(&d, link, MDS_PATH_MAX);
	if (dec_left(&d))
		in->parent = dec_u64(&d);
	else if (S_ISDIR(in->mode))
		in->flags |= MDS_INO_DIROBJ;
	return d.err;
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
	oid_inodes(oid, sizeof(oid), ino);
	snprintf(key, sizeof(key), "%016" PRIx64, ino);
	struct atoll_kv kv = { key, 16, NULL, 0 };
	ret = atoll_omap_get(m->meta, oid, &kv, 1, &it, 0);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (record_decode(v, vl, &in, link) || in.ino != ino)
			ret = -EUCLEAN;
		else
			*out = node_from_record(m, &in, link);
	}
	atoll_kv_iter_free(it);
	return ret;
}

struct mds_node *mds_get(struct mds *m, uint64_t ino)
{
	struct mds_node *n = ht_find(m, ino);
	int ret;

	if (n) {
		if (n->gone)
			return NULL;
		m->c_hits++;
		lru_touch(m, n);
		return n;
	}
	/* numbers at or above next_ino were never handed out */
	if (!ino || (ino >= m->next_ino && m->next_ino > MDS_ROOT_INO))
		return NULL;
	m->c_misses++;
	ret = load_record(m, ino, &n);
	if (ret) {
		log_error(SUB, "cannot load inode %" PRIu64 " from the metadata pool (%s); "
			  "the request fails with EIO", ino, atoll_strerror(ret));
		m->load_err = true;
		return NULL;
	}
	return n;
}

void mds_prefetch(struct mds *m, const uint64_t *inos, size_t n)
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
		oid_inodes(oid, sizeof(oid), s);
		m->c_misses += nk;
		if (atoll_omap_get(m->meta, oid, keys, nk, &it, 0))
			continue;	/* mds_get loads them one by one, and says why */
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0)
			if (!record_decode(v, vl, &in, link) && !ht_find(m, in.ino))
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

int mds_dir_load(struct mds *m, struct mds_node *d)
{
	char oid[64];
	int ret;

	if (d->dir_loaded || !S_ISDIR(d->a.mode))
		return 0;
	if (!(d->a.flags & MDS_INO_DIROBJ)) {
		d->dir_loaded = true;	/* never had entries: it has no object */
		return 0;
	}
	m->c_misses++;
	oid_dir(oid, sizeof(oid), d->a.ino);
	ret = omap_each(m, oid, load_dent, d);
	if (ret) {
		log_error(SUB, "cannot load the entries of directory %" PRIu64 " (%s); "
			  "the request fails with EIO", d->a.ino, atoll_strerror(ret));
		dfree_all(d->dents);
		d->dents = NULL;
		d->nents = 0;
		d->ent_bytes = 0;
		node_account(m, d);
		m->load_err = true;
		return ret;
	}
	d->dir_loaded = true;
	node_account(m, d);
	return 0;
}

uint64_t mds_dir_parent(struct mds *m, struct mds_node *n)
{
	struct atoll_kv_iter *it = NULL;
	const void *k, *v;
	size_t kl, vl;
	char oid[64];

	/* a directory of a record without the parent: its `..` key */
	if (n->a.parent || !S_ISDIR(n->a.mode) || n->dir_loaded ||
	    !(n->a.flags & MDS_INO_DIROBJ))
		return n->a.parent;
	oid_dir(oid, sizeof(oid), n->a.ino);
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
	uint64_t applied = __atomic_load_n(&m->applied_aseq, __ATOMIC_ACQUIRE);
	struct mds_node *n = m->lru_tail;
	uint64_t budget = m->ncached;

	m->load_err = false;
	while (n && m->cache_bytes > m->cache_max && budget--) {
		struct mds_node *prev = n->lprev;
		if (!node_pinned(n, applied)) {
			node_free(m, n);
			m->c_evictions++;
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
	struct mds_node *d = mds_get(m, dir);

	if (!d || mds_dir_load(m, d)) {
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

	dent_put(m, d, name, ino, mode);
	d->aseq = aseq;
	node_account(m, d);
	if (S_ISDIR(mode)) {
		struct mds_node *c = mds_cached(m, ino);
		if (c)
			c->a.parent = dir;
	}
}

static void mem_dent_rm(struct mds *m, uint64_t aseq, uint64_t dir, const char *name)
{
	struct mds_node *d = dir_for_update(m, dir);

	dent_del(d, name);
	d->aseq = aseq;
	node_account(m, d);
}

/* Answers mds_req_cached for a directory: cached with its entries. */
static struct mds_node *dir_ready(struct mds *m, uint64_t ino)
{
	struct mds_node *d = mds_cached(m, ino);

	return d && (d->dir_loaded || !S_ISDIR(d->a.mode)) ? d : NULL;
}

static bool dent_ready(struct mds *m, struct mds_node *d, const char *name, bool listing)
{
	struct mds_dent *e = S_ISDIR(d->a.mode) ? mds_dir_find(d, name) : NULL;

	if (!e)
		return true;
	struct mds_node *c = mds_cached(m, e->ino);
	return c && (!listing || dir_ready(m, e->ino));
}

unsigned mds_req_dirs(struct mds *m, const struct mds_req *rq, uint64_t out[4])
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
		struct mds_node *d = mds_cached(m, dir);
		struct mds_dent *e = d && d->dir_loaded ? mds_dir_find(d, name) : NULL;
		if (e && S_ISDIR(e->mode))
			out[n++] = e->ino;
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

bool mds_req_cached(struct mds *m, const struct mds_req *rq)
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
		ok = mds_cached(m, rq->ino) != NULL;
		if (ok && rq->op == MDS_OP_CLOSE && (rq->lflags & MDS_L_MANY) && rq->value) {
			/* every inode of the batch (a malformed one: the worker
			 * says so) */
			struct dec dd;
			dec_init(&dd, rq->value, rq->vlen);
			for (uint32_t i = 0; ok && i + 16 <= rq->vlen; i += 16) {
				ok = mds_cached(m, dec_u64(&dd)) != NULL;
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
		ok = mds_cached(m, rq->ino) && dir_ready(m, rq->ino2);
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
		struct mds_dent *e1 = S_ISDIR(d->a.mode) ? mds_dir_find(d, rq->name) : NULL;
		struct mds_dent *e2 = S_ISDIR(d2->a.mode) ? mds_dir_find(d2, rq->name2) : NULL;
		ok = true;
		if ((e1 && S_ISDIR(e1->mode)) || (e2 && S_ISDIR(e2->mode))) {
			for (int w = 0; w < 2 && ok; w++) {
				uint64_t ino = w ? rq->ino2 : rq->ino;
				for (int depth = 0; ok && ino != MDS_ROOT_INO && depth < 4096;
				     depth++) {
					struct mds_node *a = mds_cached(m, ino);
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
			struct mds_dent *e = S_ISDIR(d->a.mode) ? mds_dir_next(d, rq->cookie) : NULL;
			for (uint32_t k = 0; ok && e && k < max; k++) {
				ok = mds_cached(m, e->ino) != NULL;
				e = mds_dir_next(d, e->name);
			}
		}
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* ---- transactions -------------------------------------------------------- */

void mds_txn_init(struct mds_txn *t)
{
	memset(t, 0, offsetof(struct mds_txn, u));
	t->link[0] = t->link2[0] = '\0';
}

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
	struct mds_node *n = mds_get(m, ino);
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
static const char *txn_link(const struct mds_txn *t, uint64_t ino)
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
		if (!S_ISDIR(d->mode))
			continue;
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
			u->size = t->w[i].trunc_from;
			u->old_size = t->w[i].trunc_to;
		}
	}
}

static void txn_encode(struct enc *e, const struct mds_txn *t)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u32(e, (uint32_t)t->nu);
	for (int i = 0; i < t->nu; i++) {
		const struct mds_upd *u = &t->u[i];
		enc_u8(e, u->type);
		enc_u64(e, u->dir);
		enc_str(e, u->name);
		enc_u64(e, u->ino);
		enc_u32(e, u->mode);
		mds_inode_encode(e, &u->in);
		enc_u64(e, u->size);
		enc_u64(e, u->old_size);
	}
	enc_u64(e, t->link_ino);
	enc_str(e, t->link);
	enc_u64(e, t->client);
	enc_u64(e, t->reqid);
	enc_u64(e, t->res_ino);
	enc_blob(e, t->xval, t->xlen);
	enc_u64(e, t->link2_ino);	/* later than the first entries: optional */
	enc_str(e, t->link2);
	/* later still: the parents of the inodes put (not in their wire form) */
	enc_u32(e, (uint32_t)t->nu);
	for (int i = 0; i < t->nu; i++)
		enc_u64(e, t->u[i].in.parent);
	enc_end(e, h);
}

static int txn_decode(struct dec *d, struct mds_txn *t)
{
	struct dec b;
	uint8_t v;

	mds_txn_init(t);
	if (dec_begin(d, 1, &b, &v))
		return d->err;
	t->nu = (int)dec_count(&b, MDS_TXN_UPDS, 1);
	for (int i = 0; !b.err && i < t->nu; i++) {
		struct mds_upd *u = &t->u[i];
		u->type = dec_u8(&b);
		u->dir = dec_u64(&b);
		dec_str(&b, u->name, MDS_NAME_MAX);
		u->ino = dec_u64(&b);
		u->mode = dec_u32(&b);
		mds_inode_decode(&b, &u->in);
		u->size = dec_u64(&b);
		u->old_size = dec_u64(&b);
	}
	t->link_ino = dec_u64(&b);
	dec_str(&b, t->link, MDS_PATH_MAX);
	t->client = dec_u64(&b);
	t->reqid = dec_u64(&b);
	t->res_ino = dec_u64(&b);
	if (dec_left(&b)) {
		size_t n = 0;
		const void *p = dec_blob(&b, &n, MDS_XATTR_MAX);
		if (p && n)
			memcpy(t->xval, p, n);
		t->xlen = (uint32_t)n;
	}
	if (dec_left(&b)) {
		t->link2_ino = dec_u64(&b);
		dec_str(&b, t->link2, MDS_PATH_MAX);
	}
	if (dec_left(&b)) {
		if (dec_u32(&b) != (uint32_t)t->nu)
			dec_fail(&b, -EBADMSG);
		for (int i = 0; !b.err && i < t->nu; i++)
			t->u[i].in.parent = dec_u64(&b);
	} else {
		/* an entry of an MDS before parents were in the records: it
		 * made an object for every directory (its `..` key) and did
		 * not mark the ones with entries: all may have one */
		for (int i = 0; i < t->nu; i++)
			if ((t->u[i].type == MDS_U_INODE_PUT || t->u[i].type == MDS_U_INODE_RM) &&
			    S_ISDIR(t->u[i].in.mode))
				t->u[i].in.flags |= MDS_INO_DIROBJ;
	}
	return dec_end(d, &b);
}

/* t as the queues keep it (struct mds_packed): 0 or -ENOMEM. */
static int txn_pack(const struct mds_txn *t, struct mds_packed *p)
{
	struct enc e;

	enc_init(&e);
	txn_encode(&e, t);
	p->body = enc_take(&e, &p->len);
	p->aseq = t->aseq;
	if (!p->body) {
		enc_free(&e);
		return -ENOMEM;
	}
	return 0;
}

/* The txn p holds, into t (its own encoding: it decodes). */
static int txn_unpack(const struct mds_packed *p, struct mds_txn *t)
{
	struct dec d;

	dec_init(&d, p->body, p->len);
	int ret = txn_decode(&d, t);
	t->aseq = p->aseq;
	return ret;
}

/* ---- applying to the objects ---------------------------------------------- */

static int ignore_enoent(int r)
{
	return r == -ENOENT ? 0 : r;
}

static int store_inode_put(struct mds *m, const struct mds_inode *in, const char *link)
{
	char oid[64], key[17];
	struct enc e;
	size_t len;
	void *buf;
	int ret;

	enc_init(&e);
	record_encode(&e, in, link);
	buf = enc_take(&e, &len);
	if (!buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	oid_inodes(oid, sizeof(oid), in->ino);
	snprintf(key, sizeof(key), "%016" PRIx64, in->ino);
	struct atoll_kv kv = { key, 16, buf, len };
	ret = atoll_omap_set(m->meta, oid, &kv, 1, 0);
	free(buf);
	return ret;
}

static int store_data_trunc(struct mds *m, uint64_t ino, uint64_t from, uint64_t to,
			    struct mds_rm_batch *b)
{
	char oid[64];
	uint64_t bs = MDS_BLOCK_SIZE;
	uint64_t first = from / bs;
	uint64_t last = to ? (to - 1) / bs : 0;
	int ret = 0;

	if (to <= from && from % bs == 0)
		return 0;
	if (from % bs) {
		oid_data(oid, sizeof(oid), ino, first);
		ret = ignore_enoent(atoll_truncate(m->data, oid, from % bs, 0));
		if (ret)
			return ret;
		first++;
	}
	/* many in flight; a pool listing for a huge sparse range (mds_purge.c) */
	return to > from ? mds_data_remove_range(m, ino, first, last, b) : 0;
}

/* The omap updates of a batch of txns (in journal order), and the
 * removals of the objects of removed inodes: each (object, key) keeps
 * only its last update, then every object gets at most two ops, one
 * setting its keys and one removing them (the keys of the two are
 * distinct, so they may run in any order), or its removal alone, all in
 * flight at once: one round trip for the whole batch, however many
 * changes it holds. */
struct kvu {
	char oid[64];
	char key[MDS_NAME_MAX + 1];
	size_t klen;
	const void *val;
	size_t vlen;
	void *own;		/* an encoded inode record (val points here) */
	uint8_t dval[12];	/* a dentry's value (val is NULL: qsort moves it) */
	bool rm;
	bool gone;		/* the object is removed (no key) */
	size_t seq;		/* position in the batch */
};

/* The applier's kvu array, kept from round to round (fresh, it cost each
 * round a page fault per 4 KiB). */
struct kvu_buf {
	struct kvu *u;
	size_t cap;
};

struct pop {
	struct atoll_op *op;
	struct atoll_completion *c;
	struct atoll_kv *kv;
	bool rm;
};

static int kvu_cmp(const void *a, const void *b)
{
	const struct kvu *x = a, *y = b;
	int c = strcmp(x->oid, y->oid);

	if (c)
		return c;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	c = memcmp(x->key, y->key, x->klen);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Fills q from u (one omap update of t); false when u is no omap update. */
static bool kvu_from(struct kvu *q, const struct mds_txn *t, const struct mds_upd *u, int *err)
{
	memset(q, 0, sizeof(*q));
	switch (u->type) {
	case MDS_U_DENT_SET:
		for (int k = 0; k < 8; k++)
			q->dval[k] = (uint8_t)(u->ino >> (8 * k));
		for (int k = 0; k < 4; k++)
			q->dval[8 + k] = (uint8_t)(u->mode >> (8 * k));
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->vlen = 12;
		oid_dir(q->oid, sizeof(q->oid), u->dir);
		break;
	case MDS_U_DENT_RM:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->rm = true;
		oid_dir(q->oid, sizeof(q->oid), u->dir);
		break;
	case MDS_U_PARENT:
		for (int k = 0; k < 8; k++)
			q->dval[k] = (uint8_t)(u->dir >> (8 * k));
		snprintf(q->key, sizeof(q->key), "..");
		q->vlen = 8;
		oid_dir(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_INODE_PUT: {
		struct enc e;
		size_t len;
		enc_init(&e);
		record_encode(&e, &u->in, txn_link(t, u->in.ino));
		q->own = enc_take(&e, &len);
		if (!q->own) {
			enc_free(&e);
			*err = -ENOMEM;
			return false;
		}
		q->val = q->own;
		q->vlen = len;
		snprintf(q->key, sizeof(q->key), "%016" PRIx64, u->in.ino);
		oid_inodes(q->oid, sizeof(q->oid), u->in.ino);
		break;
	}
	case MDS_U_INODE_RM:
		snprintf(q->key, sizeof(q->key), "%016" PRIx64, u->ino);
		q->rm = true;
		oid_inodes(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_XATTR_SET:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->val = t->xval;
		q->vlen = t->xlen;
		oid_xattr(q->oid, sizeof(q->oid), u->ino);
		break;
	case MDS_U_XATTR_RM:
		snprintf(q->key, sizeof(q->key), "%s", u->name);
		q->rm = true;
		oid_xattr(q->oid, sizeof(q->oid), u->ino);
		break;
	default:
		return false;
	}
	q->klen = strlen(q->key);
	return true;
}

/* The objects a removed inode leaves (u is an INODE_RM): a directory's
 * if it ever had entries, the one of its extended attributes if it had
 * any.  Returns how many it filled in q (room for two). */
static size_t kvu_gone(struct kvu *q, const struct mds_upd *u)
{
	size_t n = 0;

	if (S_ISDIR(u->mode) && (u->in.flags & MDS_INO_DIROBJ)) {
		memset(&q[n], 0, sizeof(q[n]));
		oid_dir(q[n].oid, sizeof(q[n].oid), u->ino);
		q[n++].gone = true;
	}
	if (u->in.flags & MDS_INO_XATTRS) {
		memset(&q[n], 0, sizeof(q[n]));
		oid_xattr(q[n].oid, sizeof(q[n].oid), u->ino);
		q[n++].gone = true;
	}
	return n;
}

static int store_apply_omap(struct mds *m, const struct mds_txn *const *ts, size_t nt,
			    struct kvu_buf *kb)
{
	size_t cap = 0, n = 0, nops = 0;
	struct kvu *u;
	struct pop *p = NULL;
	int ret = 0;

	for (size_t i = 0; i < nt; i++)
		cap += 3 * (size_t)ts[i]->nu;
	if (!cap)
		return 0;
	if (kb && kb->cap >= cap) {
		u = kb->u;
		memset(u, 0, cap * sizeof(*u));
	} else {
		u = calloc(cap, sizeof(*u));
		if (!u)
			return -ENOMEM;
		if (kb) {
			free(kb->u);
			kb->u = u;
			kb->cap = cap;
		}
	}
	for (size_t i = 0; i < nt; i++)
		for (int k = 0; k < ts[i]->nu; k++) {
			size_t n0 = n;
			if (kvu_from(&u[n], ts[i], &ts[i]->u[k], &ret))
				n++;
			if (ts[i]->u[k].type == MDS_U_INODE_RM)
				n += kvu_gone(&u[n], &ts[i]->u[k]);
			for (; n0 < n; n0++)
				u[n0].seq = n0;
		}
	if (ret)
		goto out;
	qsort(u, n, sizeof(*u), kvu_cmp);
	/* keep the last update of each (object, key): mark the others */
	for (size_t i = 0; i + 1 < n; i++)
		if (!strcmp(u[i].oid, u[i + 1].oid) && u[i].klen == u[i + 1].klen &&
		    !memcmp(u[i].key, u[i + 1].key, u[i].klen))
			u[i].klen = SIZE_MAX;
	p = calloc(2 * n, sizeof(*p));
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	/* per object: the sets, then the removals, one op each; or the
	 * object's removal alone (nothing names it after: inode numbers are
	 * not reused, so no later change of the batch sets a key of it) */
	for (size_t i = 0; i < n;) {
		size_t j = i;
		bool gone = false;
		while (j < n && !strcmp(u[j].oid, u[i].oid))
			gone |= u[j++].gone;
		if (gone) {
			struct pop *q = &p[nops];
			q->op = atoll_op_create(0);
			if (!q->op || atoll_completion_create(NULL, NULL, NULL, &q->c)) {
				ret = -ENOMEM;
				break;
			}
			nops++;
			q->rm = true;
			atoll_op_remove(q->op);
			int r = atoll_aio_op_operate(q->op, m->meta, u[i].oid, q->c, 0);
			if (r) {
				ret = r;
				atoll_completion_release(q->c);
				q->c = NULL;
				break;
			}
			i = j;
			continue;
		}
		for (int rm = 0; rm <= 1; rm++) {
			size_t cnt = 0;
			for (size_t k = i; k < j; k++)
				cnt += u[k].klen != SIZE_MAX && u[k].rm == rm;
			if (!cnt)
				continue;
			struct pop *q = &p[nops];
			q->kv = calloc(cnt, sizeof(*q->kv));
			q->op = atoll_op_create(0);
			if (!q->kv || !q->op || atoll_completion_create(NULL, NULL, NULL, &q->c)) {
				ret = -ENOMEM;
				break;
			}
			nops++;
			cnt = 0;
			for (size_t k = i; k < j; k++)
				if (u[k].klen != SIZE_MAX && u[k].rm == rm)
					q->kv[cnt++] = (struct atoll_kv){
						u[k].key, u[k].klen,
						rm ? NULL : u[k].val ? u[k].val : u[k].dval,
						rm ? 0 : u[k].vlen };
			q->rm = rm;
			if (rm)
				atoll_op_omap_rm(q->op, q->kv, cnt);
			else
				atoll_op_omap_set(q->op, q->kv, cnt);
			int r = atoll_aio_op_operate(q->op, m->meta, u[i].oid, q->c, 0);
			if (r) {
				ret = r;
				atoll_completion_release(q->c);
				q->c = NULL;
			}
		}
		if (ret)
			break;
		i = j;
	}
	for (size_t i = 0; i < nops; i++) {
		if (p[i].c) {
			int r = (int)atoll_completion_wait(p[i].c);
			if (p[i].rm && r == -ENOENT)
				r = 0;	/* the object is gone: so are its keys */
			if (r && !ret)
				ret = r;
			atoll_completion_release(p[i].c);
		}
	}
out:
	for (size_t i = 0; p && i < 2 * n; i++) {
		atoll_op_release(p[i].op);
		free(p[i].kv);
	}
	for (size_t i = 0; i < n; i++)
		free(u[i].own);
	free(p);
	if (!kb)
		free(u);
	return ret;
}

/* The updates of a txn that are no omap changes: purging or trimming
 * file data, the inode allocator's high-water mark.  A removed inode's
 * objects are never named again (inode numbers are not reused), so these
 * may follow the omap updates of later txns of the same batch. */
/* The rest of a txn's updates, after its omap ones: data removes go
 * into b (NULL: waited for here), the caller waits for them. */
static int store_apply_rest(struct mds *m, const struct mds_txn *t, struct mds_rm_batch *b)
{
	int ret = 0;

	for (int i = 0; i < t->nu && !ret; i++) {
		const struct mds_upd *u = &t->u[i];
		switch (u->type) {
		case MDS_U_PURGE:
			ret = store_data_trunc(m, u->ino, 0, u->size, b);
			break;
		case MDS_U_TRUNC:
			ret = store_data_trunc(m, u->ino, u->size, u->old_size, b);
			break;
		case MDS_U_HW: {
			char v[17];
			snprintf(v, sizeof(v), "%016" PRIx64, u->ino);
			struct atoll_kv kv = { "ino_hw", 6, v, 16 };
			ret = atoll_omap_set(m->meta, "fs.super", &kv, 1, 0);
			break;
		}
		default:
			break;
		}
	}
	return ret;
}

static int store_apply(struct mds *m, const struct mds_txn *t)
{
	int ret = store_apply_omap(m, &t, 1, NULL);

	return ret ? ret : store_apply_rest(m, t, NULL);
}

struct mds_xattr *mds_xattr_find(struct mds_node *n, const char *name)
{
	for (size_t i = 0; i < n->nxa; i++)
		if (!strcmp(n->xa[i].name, name))
			return &n->xa[i];
	return NULL;
}

static void xattr_mem_set(struct mds_node *n, const char *name, const void *val,
			  uint32_t len, bool remove)
{
	struct mds_xattr *x = mds_xattr_find(n, name);

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

static void mem_apply(struct mds *m, const struct mds_txn *t)
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
			 * or is new: one not cached (or a tombstone) is new */
			n = ht_find(m, u->in.ino);
			if (!n || n->gone) {
				if (!n)
					n = node_new(m, u->in.ino);
				n->gone = false;
				n->dir_loaded = S_ISDIR(u->in.mode);	/* empty */
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
			n = mds_cached(m, u->ino);
			if (n) {
				n->a.parent = u->dir;
				n->aseq = aseq;
			}
			break;
		case MDS_U_XATTR_SET:
		case MDS_U_XATTR_RM:
			n = mds_cached(m, u->ino);
			if (n && n->xa_loaded) {
				xattr_mem_set(n, u->name, u->type == MDS_U_XATTR_SET ? t->xval : NULL,
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

/* ---- the journal ----------------------------------------------------------- */

static int head_set_seg(struct mds *m, uint64_t seg)
{
	char v[17];

	snprintf(v, sizeof(v), "%016" PRIx64, seg);
	struct atoll_kv kv = { "seg", 3, v, 16 };
	return atoll_omap_set(m->meta, "fs.journal.head", &kv, 1, 0);
}

static int journal_roll(struct mds *m)
{
	char oid[64];
	/* the index first: the requests of the segment that goes stay known */
	int ret = mds_ans_store(m);

	if (ret)
		return ret;
	ret = head_set_seg(m, m->seg + 1);

	if (ret)
		return ret;
	oid_seg(oid, sizeof(oid), m->seg);
	atoll_remove(m->meta, oid, 0);	/* every entry in it is applied */
	m->seg++;
	m->seg_entries = 0;
	m->seg_bytes = 0;
	return 0;
}

/* Appends the frame of body (a txn_encode of journal entry seq) to e:
 * length, crc32c of seq and body, seq, the body. */
static void journal_frame(struct enc *e, const uint8_t *body, size_t blen, uint64_t seq)
{
	uint8_t hdr[16];
	uint32_t len = (uint32_t)blen;
	memcpy(hdr, &len, 4);
	memcpy(hdr + 8, &seq, 8);
	uint32_t crc = atoll__crc32c(0, hdr + 8, 8);
	crc = atoll__crc32c(crc, body, blen);
	memcpy(hdr + 4, &crc, 4);
	enc_raw(e, hdr, 16);
	enc_raw(e, body, blen);
}

/* One atoll_append of the frames in e (the current segment). */
static int journal_write(struct mds *m, struct enc *e)
{
	char oid[64];
	size_t len;
	uint8_t *buf = enc_take(e, &len);
	int ret;

	if (!buf) {
		enc_free(e);
		return -ENOMEM;
	}
	oid_seg(oid, sizeof(oid), m->seg);
	ret = atoll_append(m->meta, oid, buf, len, 0);
	if (ret == 0)
		m->seg_bytes += len;
	free(buf);
	return ret;
}

static int journal_append(struct mds *m, const struct mds_txn *t)
{
	struct mds_packed p;
	struct enc e;
	int ret = txn_pack(t, &p);

	if (ret)
		return ret;
	enc_init(&e);
	journal_frame(&e, p.body, p.len, ++m->seq);
	free(p.body);
	ret = journal_write(m, &e);
	if (ret == 0) {
		mds_ans_add(m, t->client, t->reqid, t->res_ino);
		__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	}
	return ret;
}

/* ---- the applier -------------------------------------------------------------
 *
 * Once a change is in the journal it is durable: replay rebuilds the
 * objects from it.  So the objects (directory and inode omaps) are written
 * by this thread, behind the reply, in journal order, while the worker
 * answers the next request: a metadata change costs the client one
 * cluster round trip (the journal append) instead of two.  The applier
 * takes up to 64 queued changes at once and writes each (object, key) of
 * them once, with its last value (store_apply_omap), so a backlog costs
 * one round trip, not one per change.  A round first gathers for up to
 * APPLY_GATHER_MS (unless a batch is full, or someone waits for the queue
 * to drain): a client's changes one at a time (rm -rf) came a few per
 * journal batch, and each round wrote the directory and up to 16 inode
 * shards for them, three times the journal's own writes.  What must hold
 * before a reply
 * waits for the queue to drain (apply_drain): data trimmed by a truncate
 * (a client may write the same blocks right after the reply; a removed
 * inode's data is purged behind the reply), and every entry of a segment
 * before the segment is dropped
 * (journal_roll).  The applier never takes the namespace lock. */

#define APPLY_BATCH 256u	/* changes the applier writes in one round */
/* default of ATOLL_MDS_APPLY_GATHER_MS.  50, not 20: touch of 10,000
 * files made the OSDs spend a fifth less CPU (each round writes the
 * directory and up to 16 inode shards), and nothing waits for a round
 * but a truncate and a journal roll, which stop the gathering */
#define APPLY_GATHER_MS 50u

/* Under alock, with something queued: waits until a batch is full, the
 * gathering time is over, someone drains or the MDS stops. */
static void apply_gather(struct mds *m)
{
	if (!m->apply_gather_ms)
		return;
	struct timespec dl = deadline_ms(CLOCK_REALTIME, m->apply_gather_ms);
	while (m->aq_len < APPLY_BATCH && !m->drainers && !m->stop)
		if (pthread_cond_timedwait(&m->acond, &m->alock, &dl) == ETIMEDOUT)
			break;
}

static void *applier_main(void *arg)
{
	struct mds *m = arg;
	const struct mds_txn *ts[APPLY_BATCH];
	/* the round's changes unpacked: kept from round to round (a txn is
	 * 80 KiB, of which a change uses a few hundred bytes) */
	struct mds_txn **sc = calloc(APPLY_BATCH, sizeof(*sc));
	struct kvu_buf kb = { .u = NULL };

	if (!sc) {
		log_error(SUB, "out of memory starting the applier; exiting");
		exit(1);
	}
	pthread_mutex_lock(&m->alock);
	for (;;) {
		while (!m->aq_head && !m->stop)
			pthread_cond_wait(&m->acond, &m->alock);
		if (!m->aq_head)
			break;	/* stop, and nothing left */
		apply_gather(m);
		/* the oldest changes, up to a batch; the worker only appends
		 * behind them, so they stay put while the lock is dropped */
		size_t n = 0;
		struct mds_apply *first = m->aq_head;
		for (struct mds_apply *a = first; a && n < APPLY_BATCH; a = a->next)
			n++;
		m->busy = true;
		pthread_mutex_unlock(&m->alock);
		int ret = 0;
		size_t k = 0;
		for (struct mds_apply *a = first; k < n && !ret; a = a->next, k++) {
			if (!sc[k] && !(sc[k] = malloc(sizeof(*sc[k]))))
				ret = -ENOMEM;
			else if (txn_unpack(&a->p, sc[k]))
				ret = -EBADMSG;	/* our own encoding: cannot be */
			ts[k] = sc[k];
		}
		if (!ret)
			ret = store_apply_omap(m, ts, n, &kb);
		/* the data removes of the whole round in flight together (the
		 * purges of an rm of many files: the OSDs commit them together) */
		struct mds_rm_batch rb = { .n = 0 };
		for (size_t i = 0; i < n && !ret; i++)
			ret = store_apply_rest(m, ts[i], &rb);
		int rret = mds_rm_batch_wait(&rb);
		ret = ret ? ret : rret;
		if (ret) {
			log_error(SUB, "cannot apply a journaled change (%s); exiting so that "
				  "a restart replays it", atoll_strerror(ret));
			exit(1);
		}
		/* in mds_commit order: everything up to the last is written */
		__atomic_store_n(&m->applied_aseq, ts[n - 1]->aseq, __ATOMIC_RELEASE);
		pthread_mutex_lock(&m->alock);
		for (size_t i = 0; i < n; i++) {
			struct mds_apply *a = m->aq_head;
			m->aq_head = a->next;
			m->aq_len--;
			free(a->p.body);
			free(a);
		}
		if (!m->aq_head)
			m->aq_tail = NULL;
		m->busy = false;
		pthread_cond_broadcast(&m->acond);
	}
	pthread_mutex_unlock(&m->alock);
	for (size_t k = 0; k < APPLY_BATCH; k++)
		free(sc[k]);
	free(sc);
	free(kb.u);
	return NULL;
}

/* Waits until every queued change is applied (the worker calls it). */
static void apply_drain(struct mds *m)
{
	pthread_mutex_lock(&m->alock);
	m->drainers++;
	pthread_cond_broadcast(&m->acond);	/* the applier stops gathering */
	while (m->aq_head)
		pthread_cond_wait(&m->acond, &m->alock);
	m->drainers--;
	pthread_mutex_unlock(&m->alock);
}

static int applier_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->alock, NULL);
	pthread_cond_init(&m->acond, NULL);
	/* ATOLL_MDS_APPLY_GATHER_MS=N: how long a round gathers (0: not at
	 * all, the behaviour before; an A/B seam for benchmarks) */
	const char *g = getenv("ATOLL_MDS_APPLY_GATHER_MS");
	m->apply_gather_ms = g ? strtoull(g, NULL, 10) : APPLY_GATHER_MS;
	ret = -pthread_create(&m->applier, NULL, applier_main, m);
	if (ret == 0)
		m->applier_on = true;
	return ret;
}

static void applier_stop(struct mds *m)
{
	if (!m->applier_on)
		return;
	pthread_mutex_lock(&m->alock);
	m->stop = true;
	pthread_cond_broadcast(&m->acond);
	pthread_mutex_unlock(&m->alock);
	pthread_join(m->applier, NULL);
	m->applier_on = false;
}

static void apply_failed(int ret)
{
	log_error(SUB, "cannot apply a journaled change (%s); exiting so that a restart "
		  "replays it", atoll_strerror(ret));
	exit(1);
}

/* Applies the change p holds here and now (no applier, or no memory to
 * queue it), in order: the caller drained the queue. */
static void apply_now(struct mds *m, const struct mds_packed *p)
{
	struct mds_txn *t = malloc(sizeof(*t));
	int ret = !t ? -ENOMEM : txn_unpack(p, t) ? -EBADMSG : store_apply(m, t);

	free(t);
	if (ret)
		apply_failed(ret);
	__atomic_store_n(&m->applied_aseq, p->aseq, __ATOMIC_RELEASE);
}

/* Hands a journaled change to the applier, which takes p's body. */
static void apply_queue(struct mds *m, struct mds_packed *p)
{
	struct mds_apply *a = malloc(sizeof(*a));

	if (!a) {
		/* no memory for the queue: apply it here, in order */
		apply_drain(m);
		apply_now(m, p);
		free(p->body);
		p->body = NULL;
		return;
	}
	a->next = NULL;
	a->p = *p;
	p->body = NULL;
	pthread_mutex_lock(&m->alock);
	while (m->aq_len >= MDS_APPLY_MAX)
		pthread_cond_wait(&m->acond, &m->alock);
	if (m->aq_tail)
		m->aq_tail->next = a;
	else
		m->aq_head = a;
	m->aq_tail = a;
	m->aq_len++;
	pthread_cond_broadcast(&m->acond);
	pthread_mutex_unlock(&m->alock);
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

/* ---- the journaler (early replies) ------------------------------------------
 *
 * The worker applies a change in memory, queues it here (jq_push) and
 * replies at once: an "unsafe" reply that names the change's journal
 * sequence number.  This thread takes everything queued, frames it into
 * one buffer and journals it with one atoll_append (group commit: while
 * one batch is in flight the next one forms), then hands the batch to the
 * applier in journal order and sends MT_MDS_SAFE (journaled up to seq) to
 * each requester of the batch, which may then forget its copy of the
 * request.  A journal failure is fatal, as before: the clients replay
 * what they were not told is safe. */

#define JOURNAL_BATCH 1024u	/* changes in one append, at most */
#define JOURNAL_GATHER_MS 10u	/* default of ATOLL_MDS_JOURNAL_GATHER_MS */

/* Under jlock, something journalable queued: waits while the oldest
 * entry is younger than jgather_ms, nobody waits for durability
 * (jhurry_seq), the batch is not full and the MDS does not stop.  A
 * client making its changes one at a time (rm -rf, touch, mkdir) sent
 * one or two per append: on a 2-CPU machine the three OSDs' work for
 * each append (a replicated write, fdatasync) took the CPU the next
 * request needed.  The requester had its reply already (early replies);
 * what the gathering delays is MT_MDS_SAFE, and an fsync hurries it.
 * 10 ms, not 2: a third less wall time and half the OSDs' CPU for
 * 10,000 creates (doc/fs.md, "Gathering"); 25 or 50 ms gained little. */
static void journal_gather(struct mds *m)
{
	if (!m->jgather_ms)
		return;
	while (m->jq_head && !m->jq_head->hold && !m->jstop &&
	       m->jq_len < JOURNAL_BATCH && m->jhurry_seq <= m->durable_seq)
		if (pthread_cond_timedwait(&m->jcond, &m->jlock, &m->jq_head->due) == ETIMEDOUT)
			break;
}

static void journal_done_one(struct mds *m, struct mds_packed *p);

static void safe_tell(struct mds *m, struct mds_jent **batch, size_t n, uint64_t seq)
{
	struct mds_safe sf = { seq };

	if (m->drop_safe)
		return;	/* fault injection: the clients keep every request */
	for (size_t i = 0; i < n; i++) {
		struct msg_conn *c = batch[i]->conn;
		bool seen = false;
		if (!c)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = batch[k]->conn == c;
		if (seen)
			continue;
		struct enc e;
		enc_init(&e);
		mds_safe_encode(&e, &sf);
		struct msg *msg = msg_new(MT_MDS_SAFE, &e);
		enc_free(&e);
		if (msg)
			msg_send(c, msg);	/* a closed client: it resends */
	}
}

static void *journaler_main(void *arg)
{
	struct mds *m = arg;
	struct mds_jent **batch = calloc(JOURNAL_BATCH, sizeof(*batch));

	if (!batch) {
		log_error(SUB, "out of memory starting the journaler; exiting");
		exit(1);
	}
	pthread_mutex_lock(&m->jlock);
	for (;;) {
		while ((!m->jq_head || m->jq_head->hold) && !m->jstop)
			pthread_cond_wait(&m->jcond, &m->jlock);
		if (!m->jq_head || m->jq_head->hold)
			break;	/* stop, and nothing (journalable) left */
		journal_gather(m);
		if (!m->jq_head || m->jq_head->hold)
			continue;
		size_t n = 0;
		bool crash = false;
		while (m->jq_head && n < JOURNAL_BATCH && !m->jq_head->hold) {
			struct mds_jent *j = m->jq_head;
			m->jq_head = j->next;
			if (!m->jq_head)
				m->jq_tail = NULL;
			m->jq_len--;
			batch[n++] = j;
			crash |= j->crash_after;
		}
		pthread_cond_broadcast(&m->jcond);	/* room in the queue */
		pthread_mutex_unlock(&m->jlock);
		if (m->jdelay_ms)
			usleep(m->jdelay_ms * 1000u);	/* fault injection: a slow journal */
		struct enc e;
		int ret = 0;
		enc_init(&e);
		for (size_t i = 0; i < n; i++)
			journal_frame(&e, batch[i]->p.body, batch[i]->p.len, batch[i]->seq);
		ret = journal_write(m, &e);
		if (ret) {
			log_error(SUB, "cannot write the journal (%s); exiting so that a "
				  "restart replays it and the clients resend what it lost",
				  atoll_strerror(ret));
			exit(1);
		}
		if (crash) {
			log_warn(SUB, "fault injection: exiting after journaling entry %" PRIu64
				 " and before applying it", batch[n - 1]->seq);
			_exit(9);
		}
		/* to the applier first: a worker waiting for durable_seq then
		 * drains the applier (a truncate's trim) and finds them queued */
		for (size_t i = 0; i < n; i++) {
			journal_done_one(m, &batch[i]->p);
			mds_ans_add(m, batch[i]->client, batch[i]->reqid, batch[i]->res_ino);
		}
		uint64_t last = batch[n - 1]->seq;
		pthread_mutex_lock(&m->jlock);
		m->durable_seq = last;
		__atomic_store_n(&m->pub_durable, last, __ATOMIC_RELEASE);
		m->batches++;
		pthread_cond_broadcast(&m->jcond);
		pthread_mutex_unlock(&m->jlock);
		safe_tell(m, batch, n, last);
		for (size_t i = 0; i < n; i++) {
			msg_conn_put(batch[i]->conn);
			free(batch[i]->p.body);	/* NULL: the applier's now */
			free(batch[i]);
		}
		m->seg_entries += n;
		if (m->seg_entries >= m->seg_max) {
			apply_drain(m);	/* the segment goes: all of it must be applied */
			ret = journal_roll(m);
			if (ret)
				log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
		}
		pthread_mutex_lock(&m->jlock);
	}
	pthread_mutex_unlock(&m->jlock);
	free(batch);
	return NULL;
}

int mds_journaler_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->jlock, NULL);
	pthread_cond_init(&m->jcond, NULL);
	m->durable_seq = m->seq;
	m->jhurry_seq = m->seq;
	/* ATOLL_MDS_JOURNAL_GATHER_MS=N: how long an entry may wait for
	 * others to share its append (0: not at all, the behaviour before;
	 * an A/B seam for benchmarks) */
	const char *g = getenv("ATOLL_MDS_JOURNAL_GATHER_MS");
	m->jgather_ms = g ? strtoull(g, NULL, 10) : JOURNAL_GATHER_MS;
	__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
	__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	ret = -pthread_create(&m->journaler, NULL, journaler_main, m);
	if (ret == 0)
		m->journaler_on = true;
	else
		m->early = false;
	return ret;
}

void mds_journaler_stop(struct mds *m)
{
	if (!m->journaler_on)
		return;
	pthread_mutex_lock(&m->jlock);
	m->jstop = true;
	pthread_cond_broadcast(&m->jcond);
	pthread_mutex_unlock(&m->jlock);
	pthread_join(m->journaler, NULL);
	m->journaler_on = false;
}

uint64_t mds_durable_seq(struct mds *m)
{
	uint64_t s;

	if (!m->journaler_on)
		return m->seq;
	pthread_mutex_lock(&m->jlock);
	s = m->durable_seq;
	pthread_mutex_unlock(&m->jlock);
	return s;
}

/* Fault injection: does the change being made count towards
 * ATOLL_MDS_CRASH_AFTER_COMMITS (only those of ATOLL_MDS_CRASH_OP's op,
 * when set: a test then knows which request the crash follows)? */
static bool crash_counts(const struct mds *m)
{
	return m->crash_after && (!m->crash_op || m->cur_op == m->crash_op);
}

/* Worker: queues t (applied in memory) for the journaler; returns its seq. */
static uint64_t jq_push(struct mds *m, const struct mds_txn *t)
{
	struct mds_jent *j = malloc(sizeof(*j));

	if (!j || txn_pack(t, &j->p)) {
		log_error(SUB, "out of memory queueing a change for the journal; exiting "
			  "(the clients resend what was not journaled)");
		exit(1);
	}
	j->client = t->client;
	j->reqid = t->reqid;
	j->res_ino = t->res_ino;
	j->next = NULL;
	j->conn = m->cur_conn;
	if (j->conn)
		msg_conn_get(j->conn);
	j->crash_after = crash_counts(m) && ++m->commits == m->crash_after;
	j->hold = m->crash_hold && ++m->commits == m->crash_hold;
	if (j->hold) {
		log_warn(SUB, "fault injection: answering this change, then exiting "
			 "before it is journaled");
		m->crash_now = true;
	}
	if (m->jgather_ms)
		j->due = deadline_ms(CLOCK_REALTIME, m->jgather_ms);
	pthread_mutex_lock(&m->jlock);
	/* a bound on what is answered but not journaled (the clients keep it) */
	while (m->jq_len >= 4 * JOURNAL_BATCH)
		pthread_cond_wait(&m->jcond, &m->jlock);
	j->seq = ++m->seq;
	__atomic_store_n(&m->pub_seq, j->seq, __ATOMIC_RELEASE);
	if (m->jq_tail)
		m->jq_tail->next = j;
	else
		m->jq_head = j;
	m->jq_tail = j;
	m->jq_len++;
	/* the journaler waits for a first entry, or gathers until a batch
	 * is full: no wake-up for each entry in between */
	if (m->jq_len == 1 || m->jq_len >= JOURNAL_BATCH || !m->jgather_ms)
		pthread_cond_broadcast(&m->jcond);
	pthread_mutex_unlock(&m->jlock);
	return j->seq;
}

bool mds_journal_room(struct mds *m)
{
	pthread_mutex_lock(&m->jlock);
	bool room = m->jq_len < 4 * JOURNAL_BATCH;
	pthread_mutex_unlock(&m->jlock);
	return room;
}

void mds_journal_hurry(struct mds *m)
{
	if (!m->journaler_on)
		return;
	pthread_mutex_lock(&m->jlock);
	if (m->jhurry_seq < m->seq) {
		m->jhurry_seq = m->seq;
		pthread_cond_broadcast(&m->jcond);
	}
	pthread_mutex_unlock(&m->jlock);
}

static void wait_durable(struct mds *m, uint64_t seq)
{
	pthread_mutex_lock(&m->jlock);
	if (m->jhurry_seq < seq) {
		m->jhurry_seq = seq;
		pthread_cond_broadcast(&m->jcond);	/* no gathering for it */
	}
	while (m->durable_seq < seq)
		pthread_cond_wait(&m->jcond, &m->jlock);
	pthread_mutex_unlock(&m->jlock);
}

/* A journaled change goes to the objects (in journal order): the
 * journaler's, packed (its body goes to the applier) ... */
static void journal_done_one(struct mds *m, struct mds_packed *p)
{
	if (m->applier_on)
		apply_queue(m, p);
	else
		apply_now(m, p);
}

/* ... or one journaled by its worker (no early replies). */
static void journal_done_txn(struct mds *m, const struct mds_txn *t)
{
	struct mds_packed p;
	int ret;

	if (m->applier_on && !txn_pack(t, &p)) {
		apply_queue(m, &p);
		return;
	}
	if (m->applier_on)
		apply_drain(m);	/* no memory to pack it: here, in order */
	if ((ret = store_apply(m, t)))
		apply_failed(ret);
	__atomic_store_n(&m->applied_aseq, t->aseq, __ATOMIC_RELEASE);
}

int mds_commit(struct mds *m, struct mds_txn *t)
{
	int ret;

	txn_finish(t);
	t->aseq = ++m->aseq;	/* the applier writes the txns in this order */
	if (m->early) {
		mds_lease_note(m, t);	/* compares with the old records: before mem_apply */
		mem_apply(m, t);
		m->cur_seq = jq_push(m, t);
		if (txn_trims_data(t)) {
			/* the trim lands before the reply (see txn_trims_data) */
			wait_durable(m, m->cur_seq);
			apply_drain(m);
		}
		return 0;
	}
	ret = journal_append(m, t);
	if (ret) {
		log_error(SUB, "cannot write the journal (%s); exiting so that a restart "
			  "replays it", atoll_strerror(ret));
		exit(1);
	}
	if (crash_counts(m) && ++m->commits >= m->crash_after) {
		log_warn(SUB, "fault injection: exiting after journaling entry %" PRIu64
			 " and before applying it", m->seq);
		_exit(9);
	}
	mds_lease_note(m, t);	/* compares with the old records: before mem_apply */
	mem_apply(m, t);
	journal_done_txn(m, t);
	if (txn_trims_data(t))
		apply_drain(m);
	if (++m->seg_entries >= m->seg_max) {
		apply_drain(m);	/* the segment goes: all of it must be applied */
		ret = journal_roll(m);
		if (ret)
			log_warn(SUB, "cannot roll the journal: %s", atoll_strerror(ret));
	}
	return 0;
}

int mds_alloc_ino(struct mds *m, struct mds_txn *t, uint64_t *ino)
{
	if (m->next_ino >= m->ino_hw) {
		struct mds_txn h;
		mds_txn_init(&h);
		struct mds_upd *u = txn_upd(&h, MDS_U_HW);
		u->ino = m->ino_hw + MDS_INO_RANGE;
		int ret = store_apply(m, &h);
		if (ret)
			return ret;
		m->ino_hw = u->ino;
	}
	*ino = m->next_ino++;
	return 0;
}

/* Reads the whole object oid of the metadata pool into *buf (malloc'd,
 * the caller frees it; *len bytes): 0, -ENOENT when it does not exist, or
 * another negative errno. */
int mds_read_object(struct mds *m, const char *oid, uint8_t **buf, size_t *len)
{
	uint64_t size = 0, mt;
	int ret = atoll_stat(m->meta, oid, &size, &mt, 0);

	if (ret)
		return ret;
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	int64_t got = atoll_read(m->meta, oid, *buf, size, 0, 0);
	if (got < 0) {
		free(*buf);
		*buf = NULL;
		return (int)got;
	}
	*len = (size_t)got;
	return 0;
}

/* Replays the segment named by fs.journal.head over the objects. */
static int journal_replay(struct mds *m)
{
	struct atoll_kv_iter *it = NULL;
	struct atoll_kv key = { "seg", 3, NULL, 0 };
	const void *k, *v;
	size_t kl, vl;
	char oid[64], num[17];
	int ret, n = 0;

	m->seg = 1;
	ret = atoll_omap_get(m->meta, "fs.journal.head", &key, 1, &it, 0);
	if (ret == 0 && atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0 && vl == 16) {
		memcpy(num, v, 16);
		num[16] = 0;
		m->seg = strtoull(num, NULL, 16);
	}
	atoll_kv_iter_free(it);
	if (ret && ret != -ENOENT)
		return ret;
	oid_seg(oid, sizeof(oid), m->seg);
	uint8_t *buf = NULL;
	size_t got = 0;

	ret = mds_read_object(m, oid, &buf, &got);
	if (ret == -ENOENT)
		goto roll;
	if (ret)
		return ret;
	size_t pos = 0;
	struct mds_txn *t = malloc(sizeof(*t));
	while (t && pos + 16 <= got) {
		uint32_t len, crc;
		uint64_t seq;
		memcpy(&len, buf + pos, 4);
		memcpy(&crc, buf + pos + 4, 4);
		memcpy(&seq, buf + pos + 8, 8);
		if (pos + 16 + len > got ||
		    atoll__crc32c(0, buf + pos + 8, (size_t)len + 8) != crc) {
			log_warn(SUB, "journal segment %" PRIu64 " ends with a torn entry "
				 "at byte %zu (never acknowledged); ignoring it", m->seg, pos);
			break;
		}
		struct dec d;
		dec_init(&d, buf + pos + 16, len);
		if (txn_decode(&d, t) == 0) {
			ret = store_apply(m, t);
			if (t->reqid)
				mds_done_add(m, t->client, t->reqid, 0, t->res_ino, 0);
			mds_ans_add(m, t->client, t->reqid, t->res_ino);
			if (ret) {
				free(t);
				free(buf);
				return ret;
			}
			n++;
		}
		if (seq > m->seq)
			m->seq = seq;
		pos += 16 + len;
	}
	free(t);
	free(buf);
	log_info(SUB, "replayed %d journal entr%s of segment %" PRIu64, n,
		 n == 1 ? "y" : "ies", m->seg);
roll:
	ret = head_set_seg(m, m->seg);
	if (ret)
		return ret;
	return journal_roll(m);
}

/* ---- start-up: mkfs, load ---------------------------------------------------- */

static int mkfs(struct mds *m)
{
	struct mds_inode root = { 0 };
	uint64_t now = mds_now();
	int ret;

	root.ino = MDS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.nlink = 2;
	root.atime = root.mtime = root.ctime = now;
	ret = store_inode_put(m, &root, NULL);
	if (ret)
		return ret;
	ret = head_set_seg(m, 1);
	if (ret)
		return ret;
	char hw[17], created[32];
	snprintf(hw, sizeof(hw), "%016" PRIx64, (uint64_t)MDS_INO_RANGE);
	snprintf(created, sizeof(created), "%" PRIu64, now);
	struct atoll_kv kv[] = {
		{ "ino_hw", 6, hw, 16 },
		{ "data_pool", 9, m->data_pool, strlen(m->data_pool) },
		{ "created", 7, created, strlen(created) },
		{ "version", 7, "1", 1 },
	};
	ret = atoll_omap_set(m->meta, "fs.super", kv, 4, 0);
	if (ret == 0)
		log_info(SUB, "created a new file system (metadata pool '%s', data pool '%s')",
			 m->meta_pool, m->data_pool);
	return ret;
}

static int load_super(struct mds *m, bool *exists)
{
	struct atoll_kv keys[] = { { "version", 7, NULL, 0 }, { "ino_hw", 6, NULL, 0 } };
	struct atoll_kv_iter *it = NULL;
	const void *k, *v;
	size_t kl, vl;
	int ret = atoll_omap_get(m->meta, "fs.super", keys, 2, &it, 0);

	*exists = false;
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (kl == 7 && !memcmp(k, "version", 7))
			*exists = true;
		if (kl == 6 && !memcmp(k, "ino_hw", 6) && vl == 16) {
			char num[17];
			memcpy(num, v, 16);
			num[16] = 0;
			m->ino_hw = strtoull(num, NULL, 16);
		}
	}
	atoll_kv_iter_free(it);
	return 0;
}

/* Calls fn for every omap entry of oid; a missing object has none. */
static int omap_each(struct mds *m, const char *oid,
		     int (*fn)(struct mds *m, void *arg, const void *k, size_t kl,
			       const void *v, size_t vl), void *arg)
{
	char after[MDS_NAME_MAX + 1];
	size_t alen = 0;
	int more = 1, ret;

	while (more) {
		struct atoll_kv_iter *it = NULL;
		const void *k, *v;
		size_t kl, vl;
		ret = atoll_omap_list(m->meta, oid, alen ? after : NULL, alen, 1000, &it, &more, 0);
		if (ret == -ENOENT)
			return 0;
		if (ret)
			return ret;
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
			ret = fn(m, arg, k, kl, v, vl);
			if (ret) {
				atoll_kv_iter_free(it);
				return ret;
			}
			if (kl <= MDS_NAME_MAX) {
				memcpy(after, k, kl);
				alen = kl;
			}
		}
		atoll_kv_iter_free(it);
	}
	return 0;
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

int mds_xattr_load(struct mds *m, struct mds_node *n)
{
	char oid[64];
	int ret = 0;

	if (n->xa_loaded)
		return 0;
	if (n->a.flags & MDS_INO_XATTRS) {
		oid_xattr(oid, sizeof(oid), n->a.ino);
		ret = omap_each(m, oid, load_xattr, n);
	}
	if (ret == 0)
		n->xa_loaded = true;
	node_account(m, n);
	return ret;
}

/* ---- sessions --------------------------------------------------------------- */

bool mds_session_known(const struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nsess; i++)
		if (m->sess[i] == client)
			return true;
	return false;
}

static int sess_mem_add(struct mds *m, uint64_t client)
{
	if (m->nsess == m->sess_cap) {
		size_t nc = m->sess_cap ? 2 * m->sess_cap : 16;
		uint64_t *ns = realloc(m->sess, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		m->sess = ns;
		m->sess_cap = nc;
	}
	m->sess[m->nsess++] = client;
	return 0;
}

/* Persisted before the SESSION reply: a restarted MDS waits for it. */
int mds_session_add(struct mds *m, uint64_t client)
{
	char key[17];
	int ret;

	if (!client || mds_session_known(m, client))
		return 0;
	snprintf(key, sizeof(key), "%016" PRIx64, client);
	struct atoll_kv kv = { key, 16, "", 0 };
	ret = atoll_omap_set(m->meta, "fs.sessions", &kv, 1, 0);
	return ret ? ret : sess_mem_add(m, client);
}

int mds_session_drop(struct mds *m, uint64_t client)
{
	char key[17];

	mds_answered_forget(m, client);	/* it resends nothing now */
	mds_inflight_drop_client(client);	/* nor says its writes landed */
	for (size_t i = 0; i < m->nsess; i++)
		if (m->sess[i] == client) {
			m->sess[i] = m->sess[--m->nsess];
			snprintf(key, sizeof(key), "%016" PRIx64, client);
			struct atoll_kv kv = { key, 16, NULL, 0 };
			int ret = atoll_omap_rm(m->meta, "fs.sessions", &kv, 1, 0);
			return ret == -ENOENT ? 0 : ret;
		}
	return 0;
}

/* ---- evicted clients (fs.evicted) -------------------------------------------
 *
 * A client evicted at the end of a reconnect window is refused from then
 * on (a late resend of a change the MDS lost must not land after the
 * others moved on).  Its id is persisted as a key of fs.evicted (value:
 * the eviction's wall-clock time, ns, 16 hex digits), written before its
 * session is dropped, so a later restart still refuses it.  A start loads
 * the list and removes entries older than MDS_EVICT_SECONDS (the
 * blocklist's hour: the client remounted under a new id long ago), at
 * most MDS_EVICTED_MAX kept. */

#define EVICTED_OID "fs.evicted"

static int evicted_mem_add(struct mds *m, uint64_t client)
{
	for (size_t i = 0; i < m->nevicted; i++)
		if (m->evicted[i] == client)
			return 0;
	uint64_t *ne = realloc(m->evicted, (m->nevicted + 1) * sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	m->evicted = ne;
	m->evicted[m->nevicted++] = client;
	return 0;
}

int mds_evicted_add(struct mds *m, uint64_t client)
{
	char key[17], val[17];

	snprintf(key, sizeof(key), "%016" PRIx64, client);
	snprintf(val, sizeof(val), "%016" PRIx64, mds_now());
	struct atoll_kv kv = { key, 16, val, 16 };
	int ret = atoll_omap_set(m->meta, EVICTED_OID, &kv, 1, 0);
	int r2 = evicted_mem_add(m, client);
	return ret ? ret : r2;
}

static int load_evicted(struct mds *m, void *arg, const void *k, size_t kl,
			const void *v, size_t vl)
{
	char num[17];
	uint64_t when = 0;

	(void)arg;
	if (kl != 16)
		return 0;
	if (vl == 16) {
		memcpy(num, v, 16);
		num[16] = 0;
		when = strtoull(num, NULL, 16);
	}
	if (mds_now() - when > (uint64_t)MDS_EVICT_SECONDS * 1000000000ull) {
		struct atoll_kv kv = { k, 16, NULL, 0 };
		atoll_omap_rm(m->meta, EVICTED_OID, &kv, 1, 0);	/* expired; a failure: next start */
		return 0;
	}
	if (m->nevicted >= MDS_EVICTED_MAX)
		return 0;
	memcpy(num, k, 16);
	num[16] = 0;
	return evicted_mem_add(m, strtoull(num, NULL, 16));
}

static int load_session(struct mds *m, void *arg, const void *k, size_t kl,
			const void *v, size_t vl)
{
	char num[17];

	(void)arg;
	(void)v;
	(void)vl;
	if (kl != 16)
		return 0;
	memcpy(num, k, 16);
	num[16] = 0;
	return sess_mem_add(m, strtoull(num, NULL, 16));
}

/* The start's pass over the inode records (mds_open). */
struct scan {
	uint64_t max_ino;
	uint64_t *orphans;
	size_t norphans, cap;
};

static int scan_inode(struct mds *m, void *arg, const void *k, size_t kl,
		      const void *v, size_t vl)
{
	struct scan *sc = arg;
	struct mds_inode in;
	char link[MDS_PATH_MAX + 1];

	(void)k;
	(void)kl;
	if (record_decode(v, vl, &in, link)) {
		log_warn(SUB, "a malformed inode record (%zu bytes) in the metadata "
			 "pool; skipping it", vl);
		return 0;
	}
	m->ninodes++;
	if (in.ino > sc->max_ino)
		sc->max_ino = in.ino;
	if (in.nlink == 0 && in.ino != MDS_ROOT_INO) {
		if (sc->norphans == sc->cap) {
			size_t nc = sc->cap ? 2 * sc->cap : 16;
			uint64_t *no = realloc(sc->orphans, nc * sizeof(*no));
			if (!no)
				return -ENOMEM;
			sc->orphans = no;
			sc->cap = nc;
		}
		sc->orphans[sc->norphans++] = in.ino;
	}
	if (m->cache_bytes < m->cache_max / 2 && !ht_find(m, in.ino))
		node_from_record(m, &in, link);
	return 0;
}

int mds_open(struct mds *m)
{
	bool exists;
	char oid[64];
	int ret;

	pthread_mutex_init(&m->lock, NULL);
	if (!m->cache_max)
		m->cache_max = (uint64_t)MDS_CACHE_MB << 20;
	m->htsize = 1u << 16;
	m->ht = calloc(m->htsize, sizeof(*m->ht));
	if (!m->ht)
		return -ENOMEM;
	ret = load_super(m, &exists);
	if (ret)
		return ret;
	if (!exists) {
		m->ino_hw = MDS_INO_RANGE;
		ret = mkfs(m);
		if (ret)
			return ret;
	}
	if (!m->seg_max)
		m->seg_max = MDS_SEG_ENTRIES;
	ret = mds_answered_init(m);
	if (!ret)
		ret = mds_ans_load(m);	/* the requests of the rolled segments */
	if (ret)
		return ret;
	ret = journal_replay(m);
	if (ret)
		return ret;
	ret = omap_each(m, "fs.sessions", load_session, NULL);
	if (ret)
		return ret;
	ret = omap_each(m, EVICTED_OID, load_evicted, NULL);
	if (ret)
		return ret;
	if (m->nevicted)
		log_info(SUB, "%zu client(s) evicted within the last %d s stay refused",
			 m->nevicted, MDS_EVICT_SECONDS);
	/* one pass over the inode records: how many there are, the orphans,
	 * and the first records into the cache (up to half of its bound);
	 * everything else loads on first use */
	struct scan sc = { 0 };
	for (unsigned s = 0; s < MDS_INODE_SHARDS; s++) {
		snprintf(oid, sizeof(oid), "fs.inodes.%02x", s);
		ret = omap_each(m, oid, scan_inode, &sc);
		if (ret) {
			free(sc.orphans);
			return ret;
		}
	}
	if (m->next_ino < sc.max_ino + 1)
		m->next_ino = sc.max_ino + 1;
	if (!mds_get(m, MDS_ROOT_INO)) {
		log_error(SUB, "the metadata pool '%s' has no root inode; it is not an "
			  "atoll file system or it is damaged", m->meta_pool);
		free(sc.orphans);
		return -EUCLEAN;
	}
	/* numbers below ino_hw may have been handed out: start above */
	if (m->next_ino < m->ino_hw)
		m->next_ino = m->ino_hw;
	if (m->next_ino < 2)
		m->next_ino = 2;
	/* ATOLL_MDS_SYNC_APPLY=1: apply every change before its reply, as
	 * before the applier existed (an A/B seam for benchmarks) */
	const char *sync_apply = getenv("ATOLL_MDS_SYNC_APPLY");
	if (!sync_apply || strcmp(sync_apply, "1")) {
		ret = applier_start(m);
		if (ret)
			return ret;
	}
	if (m->early && (ret = mds_journaler_start(m)))
		return ret;
	/* orphans (no names, open when the MDS stopped): removed after the
	 * reconnect window, unless a client re-counts an open of one in it
	 * (mds_orphans_purge) */
	m->orphans = sc.orphans;
	m->norphans = m->orphans_cap = sc.norphans;
	mds_cache_trim(m);
	log_info(SUB, "%" PRIu64 " inodes, %" PRIu64 " of them cached (%" PRIu64 " of %"
		 PRIu64 " KiB); next inode number %" PRIu64, m->ninodes, m->ncached,
		 m->cache_bytes >> 10, m->cache_max >> 10, m->next_ino);
	if (!m->journaler_on) {
		__atomic_store_n(&m->pub_seq, m->seq, __ATOMIC_RELEASE);
		__atomic_store_n(&m->pub_durable, m->seq, __ATOMIC_RELEASE);
	}
	return 0;
}

void mds_close(struct mds *m)
{
	mds_journaler_stop(m);	/* journals what is queued first */
	applier_stop(m);	/* applies what is queued first */
	if (!m->ht)
		return;
	while (m->lru_head)
		node_free(m, m->lru_head);
	free(m->ht);
	m->ht = NULL;
	free(m->sess);
	m->sess = NULL;
	free(m->orphans);
	m->orphans = NULL;
	m->norphans = m->orphans_cap = 0;
	mds_answered_fini(m);
}

bool mds_orphan_defer(struct mds *m, uint64_t ino)
{
	if (!m->reconnecting)
		return false;
	for (size_t i = 0; i < m->norphans; i++)
		if (m->orphans[i] == ino)
			return true;
	if (m->norphans == m->orphans_cap) {
		size_t nc = m->orphans_cap ? 2 * m->orphans_cap : 16;
		uint64_t *no = realloc(m->orphans, nc * sizeof(*no));
		if (!no)
			return true;	/* kept: the next start finds it (nlink 0) */
		m->orphans = no;
		m->orphans_cap = nc;
	}
	m->orphans[m->norphans++] = ino;
	return true;
}
