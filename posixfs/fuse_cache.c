/*
 * fuse_cache.c - atoll-fuse's leased metadata (fuse_cache.h): what the
 * MDS let this client cache, so that lookup, getattr and readdir(plus)
 * of unchanged metadata are answered without asking it, and the
 * invalidations that keep this cache and the kernel's right.
 *
 * Why the loop thread: the MDS sends a reply and, later, the revoke of
 * what that reply leased on the same connection, so applying both in
 * arrival order (the loop thread's order) never caches a record a revoke
 * has already dropped.  The request threads then give the kernel timeouts
 * from the lease, unless the cache's per-bucket sequence shows that
 * something invalidated the inode after their reply arrived (timeout 0).
 *
 * The kernel is told on a thread of its own (never inside a request
 * handler, which may hold the very inode lock an invalidation takes),
 * after a barrier: every request thread that read the cache or checked
 * freshness before the invalidation has finished replying to the kernel
 * (lc_kbar_*), so no stale reply lands after the invalidation.
 *
 * The client's own changes patch its cached listings instead of dropping
 * them (apply_own): nobody else changed the directory, or the MDS would
 * have revoked the listing before answering; so a name absent from a
 * leased listing (the lookup before every create) is answered ENOENT
 * without the MDS, also in a directory this client just made (the MDS
 * leases its empty listing with the mkdir).
 *
 * Bounded: LC_ATTR_MAX records and LC_ENT_MAX listing entries; over
 * either, everything is dropped (the MDS's leases stay, so its revokes
 * still reach the kernel).
 */
#define FUSE_USE_VERSION 35

#include "fuse_cache.h"

#include <errno.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "mono.h"

#define LC_BUCKETS	65536u
#define LC_SEQ_BUCKETS	4096u
#define LC_ATTR_MAX	(256u << 10)
#define LC_ENT_MAX	(512u << 10)
#define LC_NO_LEASE_TIMEOUT 1.0	/* s: the kernel's cache without a lease */
#define LC_KN_MAX	(256u << 10)	/* names the kernel holds, tracked */

/* A cached answer of GETXATTR, valid with its inode's record. */
#define LC_XA_MAX	8u	/* names per inode */
#define LC_XA_VMAX	256u	/* bytes of a value */
struct lxattr {
	char *name;
	void *val;		/* NULL: absent */
	uint32_t len;
	struct lxattr *next;
};

struct lattr {
	struct mds_inode a;
	uint64_t exp;
	uint64_t born;		/* created by this client at (mono_now_ns), unchanged
				 * since; 0: not known so */
	bool stale;		/* this client's own change moved its times, size
				 * or links: only mode, uid and gid are still
				 * right (permission checks), until exp */
	bool pages;		/* the kernel's cached pages of the file are
				 * right: an open made them so (kept or dropped)
				 * under a lease, and leases renewed before they
				 * ran out have covered it since (lc_open_keep) */
	struct lxattr *xa;
	unsigned nxa;
	struct lattr *next;
};

struct ldir {
	uint64_t ino;
	uint64_t exp;
	uint64_t gen;
	struct dents ents;	/* in strcmp order (the MDS's) */
	struct ldir *next;
};

/* A name of a directory the kernel was given with a timeout (positive or
 * negative entry): without default_permissions the kernel walks a cached
 * entry without asking, so when the directory's mode or owner changes
 * the kernel must drop them (kn_inval_dir). */
struct kname {
	struct kname *hnext;		/* in lcache.kn */
	struct kname *dnext, **dprev;	/* in its kdir's list */
	uint64_t dir, exp;
	char name[];
};

struct kdir {
	uint64_t ino;
	struct kname *head;
	struct kdir *next;
};

/* A kernel invalidation waiting for the notifier thread. */
struct kinv {
	uint32_t kind;		/* MDS_CHG_* */
	uint64_t ino;
	char *name;
	struct kinv *next;
};

static struct {
	bool on;
	bool kn_track;		/* atoll-fuse checks permissions (lc_kname) */
	pthread_mutex_t lock;	/* everything below but the kernel queue */
	struct lattr *attrs[LC_BUCKETS];
	struct ldir *dirs[LC_BUCKETS];
	struct kname *kn[LC_BUCKETS];
	struct kdir *kdirs[LC_BUCKETS];
	/* directories held exclusively (MDS_LEASE_EXCL): until when; one
	 * slot per bucket (a collision forgets one: it is then not used) */
	uint64_t xino[LC_BUCKETS], xexp[LC_BUCKETS];
	size_t nattrs, nents, nkn;
	uint64_t seq;				/* bumped by every invalidation */
	uint64_t bseq[LC_SEQ_BUCKETS];		/* the last one of each bucket */
	uint64_t flush_seq;			/* the last "drop everything" */
	uint64_t next_gen;			/* of listings */
	pthread_rwlock_t kbar;
	/* the notifier thread and its queue (qlock) */
	struct fuse_session *se;
	pthread_t thr;
	bool thr_on, stop;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	struct kinv *qhead, *qtail;
} lcache = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.qlock = PTHREAD_MUTEX_INITIALIZER,
	.qcond = PTHREAD_COND_INITIALIZER,
};

int lc_init(bool on, bool kn_track)
{
	pthread_rwlockattr_t ra;

	lcache.on = on;
	lcache.kn_track = on && kn_track;
	/* the notifier must not starve behind a stream of replies: a
	 * waiting writer goes first (no reader takes kbar twice) */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&lcache.kbar, &ra);
	pthread_rwlockattr_destroy(&ra);
	return 0;
}

bool lc_on(void)
{
	return lcache.on;
}

/* ---- the kernel ---------------------------------------------------------- */

/* Any thread: queues an invalidation of the kernel's caches. */
static void kq_push(uint32_t kind, uint64_t ino, const char *name)
{
	struct kinv *k = calloc(1, sizeof(*k));

	if (!k)
		return;	/* the kernel keeps it until its timeout: the lease's */
	k->kind = kind;
	k->ino = ino;
	if (name && name[0] && !(k->name = strdup(name))) {
		free(k);
		return;
	}
	pthread_mutex_lock(&lcache.qlock);
	if (!lcache.thr_on || lcache.stop) {
		/* not mounted yet, or unmounting: no kernel to tell */
		pthread_mutex_unlock(&lcache.qlock);
		free(k->name);
		free(k);
		return;
	}
	if (lcache.qtail)
		lcache.qtail->next = k;
	else
		lcache.qhead = k;
	lcache.qtail = k;
	pthread_cond_signal(&lcache.qcond);
	pthread_mutex_unlock(&lcache.qlock);
}

static void *notifier_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lcache.qlock);
	for (;;) {
		while (!lcache.qhead && !lcache.stop)
			pthread_cond_wait(&lcache.qcond, &lcache.qlock);
		if (lcache.stop)
			break;
		struct kinv *batch = lcache.qhead;
		lcache.qhead = lcache.qtail = NULL;
		pthread_mutex_unlock(&lcache.qlock);
		/* the barrier: replies that read what these invalidate are out */
		pthread_rwlock_wrlock(&lcache.kbar);
		pthread_rwlock_unlock(&lcache.kbar);
		while (batch) {
			struct kinv *k = batch;
			batch = k->next;
			/* -ENOENT (the kernel has nothing of it) is the common case */
			if (k->kind & MDS_CHG_DENT)
				fuse_lowlevel_notify_inval_entry(lcache.se, k->ino, k->name,
								 strlen(k->name));
			else
				fuse_lowlevel_notify_inval_inode(lcache.se, k->ino,
								 (k->kind & MDS_CHG_DATA) ? 0 : -1, 0);
			free(k->name);
			free(k);
		}
		pthread_mutex_lock(&lcache.qlock);
	}
	pthread_mutex_unlock(&lcache.qlock);
	return NULL;
}

int lc_start(struct fuse_session *se)
{
	if (!lcache.on)
		return 0;
	lcache.se = se;
	pthread_mutex_lock(&lcache.qlock);
	lcache.thr_on = pthread_create(&lcache.thr, NULL, notifier_main, NULL) == 0;
	pthread_mutex_unlock(&lcache.qlock);
	return lcache.thr_on ? 0 : -EAGAIN;
}

void lc_stop(void)
{
	if (!lcache.thr_on)
		return;
	pthread_mutex_lock(&lcache.qlock);
	lcache.stop = true;
	pthread_cond_signal(&lcache.qcond);
	pthread_mutex_unlock(&lcache.qlock);
	pthread_join(lcache.thr, NULL);
	pthread_mutex_lock(&lcache.qlock);
	lcache.thr_on = false;
	pthread_mutex_unlock(&lcache.qlock);
	while (lcache.qhead) {
		struct kinv *k = lcache.qhead;
		lcache.qhead = k->next;
		free(k->name);
		free(k);
	}
	lcache.qtail = NULL;
}

void lc_kbar_enter(void)
{
	pthread_rwlock_rdlock(&lcache.kbar);
}

void lc_kbar_leave(void)
{
	pthread_rwlock_unlock(&lcache.kbar);
}

/* ---- the cache (under lcache.lock) ------------------------------------------ */

static void bump(uint64_t ino)
{
	lcache.bseq[ino % LC_SEQ_BUCKETS] = ++lcache.seq;
}

static bool fresh(uint64_t ino, uint64_t seq)
{
	return lcache.bseq[ino % LC_SEQ_BUCKETS] <= seq && lcache.flush_seq <= seq;
}

static void excl_set(uint64_t ino, uint64_t exp)
{
	lcache.xino[ino % LC_BUCKETS] = ino;
	lcache.xexp[ino % LC_BUCKETS] = exp;
}

static void excl_clear(uint64_t ino)
{
	if (lcache.xino[ino % LC_BUCKETS] == ino)
		lcache.xino[ino % LC_BUCKETS] = 0;
}

static bool excl_held(uint64_t ino, uint64_t now)
{
	return ino && lcache.xino[ino % LC_BUCKETS] == ino && lcache.xexp[ino % LC_BUCKETS] > now;
}

static struct lattr **attr_slot(uint64_t ino)
{
	struct lattr **pp = &lcache.attrs[ino % LC_BUCKETS];

	while (*pp && (*pp)->a.ino != ino)
		pp = &(*pp)->next;
	return pp;
}

static struct ldir **dir_slot(uint64_t ino)
{
	struct ldir **pp = &lcache.dirs[ino % LC_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

/* ---- names the kernel holds (under lcache.lock) ------------------------------ */

static size_t kn_hash(uint64_t dir, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ (dir * 0x9e3779b97f4a7c15ull);

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (size_t)(h % LC_BUCKETS);
}

static struct kdir **kdir_slot(uint64_t ino)
{
	struct kdir **pp = &lcache.kdirs[ino % LC_BUCKETS];

	while (*pp && (*pp)->ino != ino)
		pp = &(*pp)->next;
	return pp;
}

static void kn_free(struct kname *k)
{
	struct kname **pp = &lcache.kn[kn_hash(k->dir, k->name)];

	while (*pp != k)
		pp = &(*pp)->hnext;
	*pp = k->hnext;
	*k->dprev = k->dnext;
	if (k->dnext)
		k->dnext->dprev = k->dprev;
	struct kdir **dp = kdir_slot(k->dir);
	if (*dp && !(*dp)->head) {
		struct kdir *d = *dp;
		*dp = d->next;
		free(d);
	}
	free(k);
	lcache.nkn--;
}

/* Drops the names whose timeout passed (the kernel dropped them too). */
static void kn_prune(uint64_t now)
{
	for (size_t b = 0; b < LC_BUCKETS; b++) {
		struct kname *k = lcache.kn[b], *next;
		for (; k; k = next) {
			next = k->hnext;
			if (k->exp <= now)
				kn_free(k);
		}
	}
}

static bool kn_add(uint64_t dir, const char *name, uint64_t exp, uint64_t now)
{
	struct kname **pp = &lcache.kn[kn_hash(dir, name)];

	for (struct kname *k = *pp; k; k = k->hnext) {
		if (k->dir == dir && !strcmp(k->name, name)) {
			if (exp > k->exp)
				k->exp = exp;
			return true;
		}
	}
	if (lcache.nkn >= LC_KN_MAX) {
		kn_prune(now);
		if (lcache.nkn >= LC_KN_MAX)
			return false;
	}
	struct kdir **dp = kdir_slot(dir);
	if (!*dp && !(*dp = calloc(1, sizeof(**dp))))
		return false;
	(*dp)->ino = dir;
	size_t len = strlen(name);
	struct kname *k = malloc(sizeof(*k) + len + 1);
	if (!k) {
		if (!(*dp)->head) {
			struct kdir *d = *dp;
			*dp = d->next;
			free(d);
		}
		return false;
	}
	memcpy(k->name, name, len + 1);
	k->dir = dir;
	k->exp = exp;
	k->hnext = *pp;
	*pp = k;
	k->dnext = (*dp)->head;
	k->dprev = &(*dp)->head;
	if (k->dnext)
		k->dnext->dprev = &k->dnext;
	(*dp)->head = k;
	lcache.nkn++;
	return true;
}

/* dir's mode or owner changed: the kernel drops every entry of it that it
 * may still hold, so that its next walk through dir asks (lookup checks). */
static void kn_inval_dir(uint64_t dir)
{
	struct kdir *d = *kdir_slot(dir);
	uint64_t now = mono_now_ns();

	while (d && d->head) {
		struct kname *k = d->head;
		bool last = !k->dnext;
		if (k->exp > now)
			kq_push(MDS_CHG_DENT, dir, k->name);
		kn_free(k);	/* frees d with the last one */
		if (last)
			break;
	}
}

static void kn_inval_all(void)
{
	uint64_t now = mono_now_ns();

	for (size_t b = 0; b < LC_BUCKETS; b++)
		while (lcache.kn[b]) {
			if (lcache.kn[b]->exp > now)
				kq_push(MDS_CHG_DENT, lcache.kn[b]->dir, lcache.kn[b]->name);
			kn_free(lcache.kn[b]);
		}
}

static void xa_free(struct lattr *a)
{
	while (a->xa) {
		struct lxattr *x = a->xa;
		a->xa = x->next;
		free(x->name);
		free(x->val);
		free(x);
	}
	a->nxa = 0;
}

static void attr_drop(uint64_t ino)
{
	struct lattr **pp = attr_slot(ino);

	if (*pp) {
		struct lattr *a = *pp;
		*pp = a->next;
		xa_free(a);
		free(a);
		lcache.nattrs--;
	}
}

/* This client's own change of ino (not of its mode or owner): the record
 * stays for permission checks only. */
static void attr_stale(uint64_t ino)
{
	struct lattr *a = *attr_slot(ino);

	if (a) {
		a->stale = true;
		a->born = 0;
		xa_free(a);
	}
}

static void xa_put(uint64_t ino, const char *name, const void *val, uint32_t len)
{
	struct lattr *a = *attr_slot(ino);
	struct lxattr *x;

	if (!a || a->stale || a->nxa >= LC_XA_MAX || len > LC_XA_VMAX)
		return;
	for (x = a->xa; x; x = x->next)
		if (!strcmp(x->name, name))
			return;
	x = calloc(1, sizeof(*x));
	if (!x || !(x->name = strdup(name)) || (val && !(x->val = malloc(len ? len : 1)))) {
		if (x)
			free(x->name);
		free(x);
		return;
	}
	if (val)
		memcpy(x->val, val, len);
	x->len = len;
	x->next = a->xa;
	a->xa = x;
	a->nxa++;
}

int lc_xattr(uint64_t ino, const char *name, void **val, uint32_t *len)
{
	int ret = -1;

	if (!lcache.on)
		return -1;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct lattr *a = *attr_slot(ino);
	for (struct lxattr *x = a && a->exp > now && !a->stale ? a->xa : NULL; x; x = x->next) {
		if (strcmp(x->name, name))
			continue;
		ret = 0;
		if (x->val) {
			*val = malloc(x->len ? x->len : 1);
			if (!*val) {
				ret = -1;
				break;
			}
			memcpy(*val, x->val, x->len);
			*len = x->len;
			ret = 1;
		}
		break;
	}
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

static void dir_drop(uint64_t ino);

/* A listing of a directory this client just made: empty. */
static void dir_new_empty(uint64_t ino, uint64_t exp)
{
	struct ldir *d = calloc(1, sizeof(*d));

	dir_drop(ino);
	if (!d)
		return;
	d->gen = ++lcache.next_gen;
	d->ino = ino;
	d->exp = exp;
	d->next = lcache.dirs[ino % LC_BUCKETS];
	lcache.dirs[ino % LC_BUCKETS] = d;
}

static void dir_drop(uint64_t ino)
{
	struct ldir **pp = dir_slot(ino);

	if (*pp) {
		struct ldir *d = *pp;
		*pp = d->next;
		lcache.nents -= d->ents.n;
		dents_free(&d->ents);
		free(d);
	}
}

/* Drops everything; kernel: queue invalidations of all this cache knew. */
static void drop_all(bool kernel)
{
	for (size_t b = 0; b < LC_BUCKETS; b++) {
		while (lcache.attrs[b]) {
			struct lattr *a = lcache.attrs[b];
			lcache.attrs[b] = a->next;
			if (kernel)
				kq_push(MDS_CHG_ATTR, a->a.ino, NULL);
			xa_free(a);
			free(a);
		}
		while (lcache.dirs[b]) {
			struct ldir *d = lcache.dirs[b];
			lcache.dirs[b] = d->next;
			for (size_t ci = 0; kernel && ci < d->ents.nc; ci++)
				for (uint32_t i = 0; i < d->ents.c[ci]->n; i++)
					kq_push(MDS_CHG_DENT, d->ino, d->ents.c[ci]->e[i].name);
			dents_free(&d->ents);
			free(d);
		}
	}
	if (kernel)
		kn_inval_all();
	memset(lcache.xino, 0, sizeof(lcache.xino));
	lcache.nattrs = lcache.nents = 0;
	lcache.flush_seq = ++lcache.seq;
}

static void attr_put(const struct mds_inode *in, uint64_t exp, uint64_t now)
{
	if (!in->ino)
		return;
	struct lattr **pp = attr_slot(in->ino);
	if (*pp) {
		/* its cached attributes stay right: a change would have
		 * dropped the record (and them with it).  A lease renewed
		 * after the last one ran out leaves a gap in which another
		 * client may have changed the file unseen. */
		if ((*pp)->exp <= now)
			(*pp)->pages = false;
		(*pp)->a = *in;
		(*pp)->exp = exp;
		(*pp)->stale = false;
		return;
	}
	if (lcache.nattrs >= LC_ATTR_MAX)
		drop_all(false);
	struct lattr *a = malloc(sizeof(*a));
	if (!a)
		return;
	a->a = *in;
	a->exp = exp;
	a->born = 0;
	a->stale = false;
	a->pages = false;
	a->xa = NULL;
	a->nxa = 0;
	a->next = lcache.attrs[in->ino % LC_BUCKETS];
	lcache.attrs[in->ino % LC_BUCKETS] = a;
	lcache.nattrs++;
}

/* The requester's own change of entry name of d: set to (ino, mode), or
 * removed (ino 0).  A new generation: copies of the listing taken before
 * (open directory handles) no longer give the kernel timeouts. */
static bool dir_patch(struct ldir *d, const char *name, uint64_t ino, uint32_t mode)
{
	bool added;

	if (!ino) {
		if (dents_remove(&d->ents, name))
			lcache.nents--;
	} else if (dents_find(&d->ents, name) || lcache.nents < LC_ENT_MAX) {
		if (dents_set(&d->ents, name, ino, mode, &added))
			return false;
		lcache.nents += added;
	} else {
		return false;
	}
	d->gen = ++lcache.next_gen;
	return true;
}

/* A cached entry (the listing valid at now): 1 found, 0 not in it, -1 no listing. */
static int dir_peek(uint64_t dir, const char *name, uint64_t now, struct lc_ent *out)
{
	struct ldir *d = *dir_slot(dir);

	if (!d || d->exp <= now)
		return -1;
	const struct lc_ent *e = dents_find(&d->ents, name);
	if (e)
		*out = *e;
	return e != NULL;
}

/* What the requester's own reply did to entry (dir, name): true with
 * *ino (0: removed) and *mode when the request tells; src/dst: the
 * entries a rename moved, read from the cache before it changed. */
static bool own_dent(const struct mds_req *rq, const struct mds_reply *rp, uint64_t dir,
		     const char *name, int src_hit, const struct lc_ent *src, int dst_hit,
		     const struct lc_ent *dst, uint64_t *ino, uint32_t *mode)
{
	bool is1 = dir == rq->ino && !strcmp(name, rq->name);
	bool is2 = dir == rq->ino2 && !strcmp(name, rq->name2);

	switch (rq->op) {
	case MDS_OP_MKNOD:
	case MDS_OP_MKDIR:
	case MDS_OP_SYMLINK:
		if (!is1 || !rp->ninodes)
			return false;
		*ino = rp->in[0].ino;
		*mode = rp->in[0].mode & S_IFMT;
		return true;
	case MDS_OP_LINK:
		if (!is2 || !rp->ninodes)
			return false;
		*ino = rp->in[0].ino;
		*mode = rp->in[0].mode & S_IFMT;
		return true;
	case MDS_OP_UNLINK:
	case MDS_OP_RMDIR:
		if (!is1)
			return false;
		*ino = 0;
		return true;
	case MDS_OP_RENAME:
		if (rq->flags & 2u) {		/* RENAME_EXCHANGE */
			if (src_hit != 1 || dst_hit != 1 || is1 == is2)
				return false;
			*ino = is1 ? dst->ino : src->ino;
			*mode = is1 ? dst->mode : src->mode;
			return true;
		}
		if (is1 && !is2) {
			*ino = 0;
			return true;
		}
		if (is2 && !is1 && src_hit == 1) {
			*ino = src->ino;
			*mode = src->mode;
			return true;
		}
		return false;
	default:
		return false;
	}
}

/* The requester's own change list: its kernel knows (it made it); a
 * cached listing of a directory it changed is patched rather than
 * dropped when the request tells the entry's new state (nobody else
 * changed the directory: the MDS would have revoked the listing first,
 * and revokes and replies arrive in the MDS's order).  dir_exp: the lease
 * this reply renews on rp->dir_lease (0: none). */
static void apply_own(const struct mds_req *rq, const struct mds_reply *rp, uint64_t now,
		      uint64_t dir_exp)
{
	struct lc_ent src = { 0 }, dst = { 0 };
	int src_hit = -1, dst_hit = -1;

	if (rq->op == MDS_OP_RENAME) {
		src_hit = dir_peek(rq->ino, rq->name, now, &src);
		dst_hit = dir_peek(rq->ino2, rq->name2, now, &dst);
		/* the names point into listings about to change */
		src.name = dst.name = NULL;
	}
	for (uint32_t i = 0; i < rp->nchg; i++) {
		const struct mds_chg *c = &rp->chg[i];
		bump(c->ino);
		if (!(c->kind & MDS_CHG_DENT)) {
			/* its mode and owner change only by a setattr (whose
			 * reply brings the new record) */
			bool perm = (c->kind & MDS_CHG_PERM) ||
				    (rq->op == MDS_OP_SETATTR && c->ino == rq->ino &&
				     (rq->setmask & (MDS_SET_MODE | MDS_SET_UID | MDS_SET_GID)));
			if (perm) {
				attr_drop(c->ino);
				kn_inval_dir(c->ino);
			} else {
				attr_stale(c->ino);
			}
			continue;
		}
		struct ldir *d = *dir_slot(c->ino);
		uint64_t ino = 0;
		uint32_t mode = 0;
		if (!d)
			continue;
		/* a change this client answered itself: its listing has it
		 * (and maybe this client's later changes of the name) */
		if ((rq->lflags & MDS_L_ASYNC) && c->ino == rq->ino && !strcmp(c->name, rq->name) &&
		    d->exp > now) {
			if (dir_exp && c->ino == rp->dir_lease && dir_exp > d->exp)
				d->exp = dir_exp;
			continue;
		}
		if (d->exp <= now ||
		    !own_dent(rq, rp, c->ino, c->name, src_hit, &src, dst_hit, &dst, &ino, &mode) ||
		    !dir_patch(d, c->name, ino, mode)) {
			dir_drop(c->ino);
			continue;
		}
		/* still valid when the renewal arrived: the lease ran on */
		if (dir_exp && c->ino == rp->dir_lease && dir_exp > d->exp)
			d->exp = dir_exp;
	}
}

static void apply(const struct mds_chg *c, uint32_t n, bool kernel)
{
	for (uint32_t i = 0; i < n; i++) {
		if (c[i].kind & MDS_CHG_EXCL) {
			excl_clear(c[i].ino);	/* the listing stays right */
			continue;
		}
		bump(c[i].ino);
		if (c[i].kind & MDS_CHG_DENT) {
			dir_drop(c[i].ino);
			excl_clear(c[i].ino);
		} else {
			attr_drop(c[i].ino);
			if (c[i].kind & MDS_CHG_PERM)
				kn_inval_dir(c[i].ino);
		}
		if (kernel)
			kq_push(c[i].kind, c[i].ino, c[i].name);
	}
}

/* ---- entry points -------------------------------------------------------------- */

void lc_reply(const struct mds_req *rq, const struct mds_reply *rp, uint64_t t_send,
	      struct lc_info *ci)
{
	memset(ci, 0, sizeof(*ci));
	if (!lcache.on)
		return;
	uint64_t now = mono_now_ns(), exp = 0;
	bool xa = rq->op == MDS_OP_GETXATTR && (rp->rc == 0 || rp->rc == -ENODATA) &&
		  rp->ninodes == 1;
	if ((rp->rc == 0 || xa) && rp->lease_ms) {
		/* counted from the send: the MDS counts from later */
		uint64_t lease = (uint64_t)rp->lease_ms * 1000000ull;
		uint64_t margin = lease / 10 < 1000000000ull ? lease / 10 : 1000000000ull;
		exp = t_send + lease - margin;
	}
	pthread_mutex_lock(&lcache.lock);
	apply_own(rq, rp, now, rp->dir_lease ? exp : 0);
	if (exp) {
		ci->exp = exp;
		ci->lease_ms = rp->lease_ms;
		ci->dir_lease = rp->dir_lease;
		bool async_new = (rq->lflags & MDS_L_ASYNC) &&
				 (rq->op == MDS_OP_MKNOD || rq->op == MDS_OP_MKDIR);
		for (uint32_t i = 0; i < rp->ninodes && i < 2; i++) {
			/* a create answered here: its record came first, from
			 * this client; renewed unless this client changed it
			 * since (an unlink answered here too) */
			struct lattr *own = async_new && i == 0 ? *attr_slot(rp->in[0].ino) : NULL;
			if (async_new && i == 0 && (!own || own->stale || own->exp <= now))
				continue;
			attr_put(&rp->in[i], ci->exp, now);	/* born stays */
		}
		for (uint32_t i = 0; rp->plus && i < rp->nplus; i++)
			attr_put(&rp->plus[i], ci->exp, now);
		if (xa)
			xa_put(rp->in[0].ino, rq->name, rp->rc ? NULL : (rp->value ? rp->value : ""),
			       rp->vlen);
		/* a file this client just made (lc_attr_new) */
		if (rq->op == MDS_OP_MKNOD && rp->rc == 0 && rp->ninodes && !async_new) {
			struct lattr *a = *attr_slot(rp->in[0].ino);
			if (a)
				a->born = now;
		}
		/* mkdir: the new directory's listing, empty, under its lease */
		if (rq->op == MDS_OP_MKDIR && rp->rc == 0 && rp->ninodes &&
		    rp->dir_lease2 == rp->in[0].ino && exp > now) {
			/* one made here has its listing since, maybe with
			 * entries this client made in it meanwhile */
			struct ldir *nd = async_new ? *dir_slot(rp->in[0].ino) : NULL;
			if (!async_new)
				dir_new_empty(rp->in[0].ino, exp);
			else if (nd && nd->exp > now && exp > nd->exp)
				nd->exp = exp;
		}
		/* exclusive or not, as the latest grant says */
		if (rp->dir_lease && (rp->lease_flags & MDS_LEASE_EXCL))
			excl_set(rp->dir_lease, exp);
		else if (rp->dir_lease)
			excl_clear(rp->dir_lease);
		if (rp->dir_lease2 && (rp->lease_flags & MDS_LEASE_EXCL2))
			excl_set(rp->dir_lease2, exp);
	}
	/* a directory made here counted as held exclusively: not granted
	 * so, others' changes may come */
	if ((rq->lflags & MDS_L_ASYNC) && rq->op == MDS_OP_MKDIR && rp->rc == 0 && rp->ninodes &&
	    !(exp && rp->dir_lease2 == rp->in[0].ino && (rp->lease_flags & MDS_LEASE_EXCL2)))
		excl_clear(rp->in[0].ino);
	ci->seq = lcache.seq;
	pthread_mutex_unlock(&lcache.lock);
}

int lc_remove_here(uint64_t dir, const char *name, bool is_dir, uint64_t *ino)
{
	int ret = 0;

	if (!lcache.on)
		return 0;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct ldir *d = *dir_slot(dir);
	struct lc_ent *e = d && d->exp > now && excl_held(dir, now) ? dents_find(&d->ents, name)
								   : NULL;
	if (!e)
		goto out;
	if (is_dir != S_ISDIR(e->mode)) {
		ret = is_dir ? -ENOTDIR : -EISDIR;
		goto out;
	}
	uint64_t victim = e->ino;
	if (is_dir) {
		/* empty, and nobody else may fill it meanwhile */
		struct ldir *c = *dir_slot(victim);
		if (!c || c->exp <= now || !excl_held(victim, now))
			goto out;
		if (c->ents.n) {
			ret = -ENOTEMPTY;
			goto out;
		}
	}
	if (!dir_patch(d, name, 0, 0))
		goto out;
	bump(dir);
	bump(victim);
	/* the directory's record stays usable (the kernel asks for it after
	 * each removal): its times as the MDS will set them, give or take
	 * the clocks; the MDS's reply brings its own */
	struct lattr *pa = *attr_slot(dir);
	if (pa && !pa->stale) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		pa->a.mtime = pa->a.ctime = (uint64_t)ts.tv_sec * 1000000000ull +
					    (uint64_t)ts.tv_nsec;
		if (is_dir && pa->a.nlink > 2)
			pa->a.nlink--;
	}
	if (is_dir) {
		attr_drop(victim);
		dir_drop(victim);
		excl_clear(victim);
	} else {
		attr_stale(victim);
	}
	*ino = victim;
	ret = 1;
out:
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

int lc_create_here(uint64_t dir, const char *name, struct mds_inode *in, struct lc_info *ci)
{
	int ret = 0;

	memset(ci, 0, sizeof(*ci));
	if (!lcache.on)
		return 0;
	uint64_t now = mono_now_ns();
	bool is_dir = S_ISDIR(in->mode);
	pthread_mutex_lock(&lcache.lock);
	struct ldir *d = *dir_slot(dir);
	struct lattr *pa = *attr_slot(dir);
	/* attr_put below must not drop everything (d with it) */
	if (!d || d->exp <= now || !excl_held(dir, now) || !pa || pa->exp <= now ||
	    lcache.nattrs + 1 >= LC_ATTR_MAX)
		goto out;
	if (dents_find(&d->ents, name)) {
		ret = -EEXIST;	/* the listing is the MDS's, and nobody else's change */
		goto out;
	}
	/* what op_create in mds_ops.c does: the set-group-ID rule */
	if (pa->a.mode & S_ISGID) {
		in->gid = pa->a.gid;
		if (is_dir)
			in->mode |= S_ISGID;
	}
	in->nlink = is_dir ? 2 : 1;
	in->gen = 1;
	if (!dir_patch(d, name, in->ino, in->mode & S_IFMT))
		goto out;
	bump(dir);
	bump(in->ino);
	/* the lease this rests on: the directory's, held exclusively */
	uint64_t exp = lcache.xexp[dir % LC_BUCKETS] < d->exp ? lcache.xexp[dir % LC_BUCKETS] : d->exp;
	if (!pa->stale) {
		pa->a.mtime = pa->a.ctime = in->mtime;
		if (is_dir)
			pa->a.nlink++;
	}
	attr_put(in, exp, now);
	struct lattr *a = *attr_slot(in->ino);
	if (a && !is_dir)
		a->born = now;
	if (is_dir) {
		/* empty, and nobody else can know it yet: this client holds
		 * it exclusively (the MDS grants so with the mkdir) */
		dir_new_empty(in->ino, exp);
		excl_set(in->ino, exp);
	}
	ci->seq = lcache.seq;
	ci->exp = exp;
	ci->lease_ms = (uint32_t)((exp - now) / 1000000u);
	ci->dir_lease = dir;
	ret = 1;
out:
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

void lc_revoke(const struct mds_chg *c, uint32_t n, bool all)
{
	if (!lcache.on)
		return;
	pthread_mutex_lock(&lcache.lock);
	if (all)
		drop_all(true);
	else
		apply(c, n, true);
	pthread_mutex_unlock(&lcache.lock);
}

double lc_timeout(uint64_t ino, const struct lc_info *ci)
{
	double t;

	if (!lcache.on || !ci->exp)
		return LC_NO_LEASE_TIMEOUT;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	if (!fresh(ino, ci->seq) || ci->exp <= now)
		t = 0;
	else
		t = (double)(ci->exp - now) / 1e9;
	pthread_mutex_unlock(&lcache.lock);
	return t;
}

/* The leased record of ino, and the seconds left of its lease (-1: none);
 * within_ns > 0: only a record this client made at most that long ago. */
static double attr_get(uint64_t ino, uint64_t within_ns, struct mds_inode *out)
{
	double t = -1;

	if (!lcache.on)
		return -1;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct lattr *a = *attr_slot(ino);
	if (a && a->exp > now && !a->stale &&
	    (!within_ns || (a->born && now - a->born <= within_ns))) {
		*out = a->a;
		t = (double)(a->exp - now) / 1e9;
	}
	pthread_mutex_unlock(&lcache.lock);
	return t;
}

bool lc_open_keep(uint64_t ino)
{
	bool keep = false;

	if (!lcache.on)
		return false;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct lattr *a = *attr_slot(ino);
	if (a && a->exp > now) {
		keep = a->pages;
		a->pages = true;
	}
	pthread_mutex_unlock(&lcache.lock);
	return keep;
}

int lc_ino_err(uint64_t ino, int err)
{
	if (err != -ENOENT)
		return err;
	if (lcache.on) {
		pthread_mutex_lock(&lcache.lock);
		bump(ino);
		attr_drop(ino);
		pthread_mutex_unlock(&lcache.lock);
	}
	return -ESTALE;
}

double lc_attr(uint64_t ino, struct mds_inode *out)
{
	return attr_get(ino, 0, out);
}

double lc_attr_new(uint64_t ino, uint64_t within_ns, struct mds_inode *out)
{
	return attr_get(ino, within_ns, out);
}

int lc_dir_lookup(uint64_t dir, const char *name, uint64_t *ino, uint32_t *mode,
		  double *left)
{
	int ret = -ENOENT;

	if (!lcache.on)
		return -ENOENT;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct ldir *d = *dir_slot(dir);
	if (d && d->exp > now) {
		const struct lc_ent *e = dents_find(&d->ents, name);
		*left = (double)(d->exp - now) / 1e9;
		ret = 0;
		if (e) {
			*ino = e->ino;
			*mode = e->mode;
			ret = 1;
		}
	}
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

int lc_dir_get(uint64_t dir, struct lc_ent **ents, size_t *n, uint64_t *gen)
{
	int ret = -ENOENT;

	*ents = NULL;
	*n = 0;
	if (!lcache.on)
		return -ENOENT;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct ldir *d = *dir_slot(dir);
	if (d && d->exp > now) {
		ret = dents_copy(&d->ents, ents, n);
		if (!ret)
			*gen = d->gen;
	}
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

double lc_dir_left(uint64_t dir, uint64_t gen)
{
	double t = 0;
	uint64_t now = mono_now_ns();

	pthread_mutex_lock(&lcache.lock);
	struct ldir *d = *dir_slot(dir);
	if (d && d->gen == gen && d->exp > now)
		t = (double)(d->exp - now) / 1e9;
	pthread_mutex_unlock(&lcache.lock);
	return t;
}

uint64_t lc_dir_put(uint64_t dir, struct lc_ent *ents, size_t n, const struct lc_info *ci)
{
	uint64_t gen;

	if (!lcache.on || !ci->exp || ci->dir_lease != dir) {
		lc_ents_free(ents, n);
		return 0;
	}
	pthread_mutex_lock(&lcache.lock);
	if (!fresh(dir, ci->seq) || ci->exp <= mono_now_ns() || n > LC_ENT_MAX) {
		pthread_mutex_unlock(&lcache.lock);
		lc_ents_free(ents, n);
		return 0;
	}
	dir_drop(dir);
	if (lcache.nents + n > LC_ENT_MAX)
		drop_all(false);
	struct ldir *d = calloc(1, sizeof(*d));
	if (!d || dents_adopt(&d->ents, ents, n)) {
		pthread_mutex_unlock(&lcache.lock);
		if (!d)
			lc_ents_free(ents, n);
		free(d);
		return 0;
	}
	d->gen = gen = ++lcache.next_gen;
	d->ino = dir;
	d->exp = ci->exp;
	d->next = lcache.dirs[dir % LC_BUCKETS];
	lcache.dirs[dir % LC_BUCKETS] = d;
	lcache.nents += n;
	pthread_mutex_unlock(&lcache.lock);
	return gen;
}

int lc_perm(uint64_t ino, struct lc_perm *out)
{
	int ret = -ENOENT;

	if (!lcache.on)
		return -ENOENT;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct lattr *a = *attr_slot(ino);
	if (a && a->exp > now) {
		out->mode = a->a.mode;
		out->uid = a->a.uid;
		out->gid = a->a.gid;
		ret = 0;
	}
	pthread_mutex_unlock(&lcache.lock);
	return ret;
}

double lc_kname(uint64_t dir, const char *name, double t)
{
	if (!lcache.on || !lcache.kn_track)
		return t;
	if (t <= 0)
		return 0;
	uint64_t now = mono_now_ns();
	pthread_mutex_lock(&lcache.lock);
	struct lattr *a = *attr_slot(dir);
	if (!a || a->exp <= now || !S_ISDIR(a->a.mode) || (a->a.mode & 0111) != 0111) {
		t = 0;
	} else {
		double left = (double)(a->exp - now) / 1e9;
		if (t > left)
			t = left;
		if (!kn_add(dir, name, now + (uint64_t)(t * 1e9), now))
			t = 0;
	}
	pthread_mutex_unlock(&lcache.lock);
	return t;
}
