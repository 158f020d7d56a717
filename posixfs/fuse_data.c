/*
 * fuse_data.c - atoll-fuse's file data path (fuse_data.h): block B of
 * inode I is object "I.B" (16 hex digits each) of the data pool, 4 MiB
 * blocks (MDS_BLOCK_SIZE), read and written straight to the OSDs.
 *
 * Write-back.  The kernel sends writes of at most 1 MiB (libfuse 3.14's
 * buffer, 256 pages); one OSD op each would write every 4 MiB object in
 * four ops.  So a write is copied into its block's buffer (one extent per
 * block: a write that touches or overlaps it joins it) and answered; the
 * buffer goes to the OSDs as one op when the extent reaches the end of
 * the block, when a write that does not touch it comes for the block,
 * at flush (every close), fsync, release, setattr, when a read needs it,
 * when the memory bound is reached (oldest buffer first), and when it is
 * older than WB_AGE_NS (the flusher thread).  Buffers and writes in flight
 * count MDS_BLOCK_SIZE each against the bound (-o writeback_mb=, default
 * 256 MiB); a write that finds it full sends the oldest buffer and waits.
 * A buffer that went out is a "wop" on its inode's list until the OSDs
 * answered; a wop waits for older overlapping wops of its inode before it
 * is sent, so overlapping writes land in order.  A failed write is
 * reported by the next flush or fsync of the inode (EIO), as the kernel
 * reports writeback errors of a local file system.
 *
 * Read-your-writes: a read inside one buffer is answered from it, and so
 * is a read inside the newest wop that overlaps it; a read overlapping
 * buffers sends them and waits, like a read overlapping wops partly.
 * Sizes: the client keeps the largest end it wrote (wsize) and pushes it
 * with the mtime at flush, fsync and release (fd_push_size).
 *
 * Read-ahead.  The kernel reads 1 MiB at a time at best (its read-ahead
 * of the mount is raised to 4 MiB: fd_kernel_readahead); one OSD op
 * each, a few at a time, leaves the OSDs idle much of the time.  A read that continues the inode's last one (sequential) loads
 * whole objects: its own blocks and RA_WINDOW more ahead, all in flight
 * at once, within a memory bound (-o readahead_mb=, default 64 MiB; the
 * oldest idle block is evicted).  A block is dropped once read through,
 * and whenever its data may have changed: a write of this client to it,
 * a truncate, an open (close-to-open: another client may have written
 * it), a revoke from the MDS with MDS_CHG_DATA.  A block is never loaded
 * while this client has a buffer or a wop on it (the load could read the
 * OSDs' older data), and a write drops it even while it loads.
 * Sequential detection is per inode (not per open file: create replies
 * without a file handle), which two readers of one file at once confuse
 * (each read then goes to the OSDs as before).
 *
 * Locking: one mutex (datapath.lock) for every inode's state, buffers, wops and
 * read-ahead blocks.  OSD ops are issued with it released (the library's
 * throttle may block the caller until a completion, which takes it), and
 * no thread waits while holding wops it has not sent (see wops_send).
 */
#include "fuse_data.h"
#include "deadline.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <atoll/atoll.h>

#include "fault.h"
#include "fuse_call.h"
#include "fuse_close.h"
#include "fuse_replay.h"
#include "log.h"
#include "mds_proto.h"
#include "mono.h"

#define BS		((uint64_t)MDS_BLOCK_SIZE)
#define RA_WINDOW	8u		/* objects read ahead of a sequential reader */
#define WB_AGE_NS	(1000000000ull)	/* the flusher sends buffers older than this */
#define POOL_MAX	8		/* idle block buffers kept for reuse */
#define HT_SIZE		4096u

struct cino;

/* A block's buffered writes: [start, end) of the block is new data. */
struct wbuf {
	struct cino *c;
	uint64_t blk;
	uint32_t start, end;
	char *buf;			/* BS bytes */
	uint64_t born;			/* CLOCK_MONOTONIC ns of the first write */
	struct wbuf *next;		/* the inode's */
	struct wbuf *aprev, *anext;	/* every buffer, oldest first */
};

/* A write on its way to the OSDs (one op, within one block). */
struct wop {
	struct cino *c;
	uint64_t seq;			/* the inode's order of issue */
	uint64_t mseq;			/* datapath.mark_seq when issued */
	uint64_t acct;			/* bytes of datapath.wb_bytes it holds */
	uint64_t off, len;		/* in the file */
	char *buf;			/* the block buffer it came from, or */
	bool small;			/* a copy of its len bytes alone (malloc'd) */
	struct wop *next;		/* the inode's */
	struct wop *snext;		/* a list to send */
};

enum { RB_LOADING, RB_READY };

/* A block read ahead. */
struct rblk {
	struct cino *c;
	uint64_t blk;
	char *buf;
	uint32_t len;			/* bytes loaded (the rest of the block: past the size) */
	uint32_t used;			/* bytes readers took */
	int state, err;
	int refs;			/* readers copying, the load in flight */
	bool linked;			/* on the inode's list (else dropped: freed at refs 0) */
	struct rblk *next;		/* the inode's */
	struct rblk *gprev, *gnext;	/* every block, oldest first */
	struct rblk *lnext;		/* a list to load */
};

struct cino {
	uint64_t ino;
	uint64_t msize;		/* size as the MDS last told */
	uint64_t wsize;		/* largest end of a write since the last push */
	uint64_t mtime;
	bool dirty;
	int werr;		/* the first failed write since the last flush/fsync */
	uint64_t wseq;
	struct wbuf *wb;
	struct wop *wl;
	struct rblk *rb;
	uint64_t ra_end;	/* the furthest end of a read */
	/* the newest close that did not wait for the writes issued before
	 * it (MDS_L_INFLIGHT): LANDED goes once none of them is in flight;
	 * 0: none pending */
	uint64_t inflight_seq;
	/* releases answered before their writes landed: their CLOSE goes
	 * once the writes issued before them are durable */
	struct pclose {
		uint64_t mark, ogen;
		struct pclose *next;
	} *pc;
	int opens;		/* handles this client holds (fd_open) */
	uint64_t ogen;		/* the reconnect they were last counted under */
	bool recount;		/* the MDS may count them wrong: tell it */
	struct cino *next;
};

static struct {
	struct atoll_ioctx *data;
	uint64_t wb_max, ra_max;
	bool wb_off;		/* -o writeback_mb=0 */
	bool async_close;	/* a close does not wait for its writes (no -o sync_close) */
	uint64_t mark_seq;	/* numbers closes that did not wait */
	/* LANDED to send (the flusher thread sends them: the MDS call may
	 * wait through a reconnect, which a write's completion must not) */
	struct landed { uint64_t ino, mark, ogen; bool close; } *lq;
	size_t nlq, caplq;
	uint64_t fail_at;	/* tests: a write reaching this offset fails (0: never) */
	pthread_mutex_t lock;
	pthread_cond_t wcond;	/* a wop completed */
	pthread_cond_t rcond;	/* a read-ahead load completed */
	pthread_cond_t fcond;	/* the flusher: stop */
	/* buffers (BS each: not known how much a writer fills) and wops
	 * (the pages of their extent: a small file's close does not hold
	 * 4 MiB of the bound while its write is in flight) */
	uint64_t wb_bytes;
	uint64_t ra_bytes;	/* read-ahead blocks, BS each */
	struct wbuf *ahead, *atail;
	struct rblk *rhead, *rtail;
	char *pool[POOL_MAX];
	int npool;
	bool stop;
	/* The unmount's grace is over (fd_abandon): nobody waits for the
	 * OSDs any more; writes still in flight stay the library's until
	 * atoll_cluster_shutdown fails them. */
	bool abandoned;
	pthread_t thr;
	bool thr_on;
	struct cino *ht[HT_SIZE];
} datapath = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wcond = PTHREAD_COND_INITIALIZER,
	.rcond = PTHREAD_COND_INITIALIZER,
};


static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- data namespaces ----
 *
 * The data namespace of each inode whose record said it has one (every
 * reply's records pass through fd_dns_note), so that its data objects
 * get their names (mds_data_oid).  An inode is always named by a reply
 * before its data is touched (open, create), or made here by an
 * asynchronous create that takes its parent's, as the MDS does.
 * Open addressing, never shrinks (16 bytes per inode of a namespace
 * this client met).  dns.lock is innermost: held for a look-up only. */
static struct {
	pthread_mutex_t lock;
	uint64_t (*kv)[2];	/* [ino, dns]; ino 0: empty */
	size_t cap, n;
} dns = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t dns_slot(uint64_t (*kv)[2], size_t cap, uint64_t ino)
{
	size_t i = (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);

	while (kv[i][0] && kv[i][0] != ino)
		i = (i + 1) & (cap - 1);
	return i;
}

void fd_dns_note(uint64_t ino, uint64_t ns)
{
	if (!ino)
		return;
	pthread_mutex_lock(&dns.lock);
	if (!ns && (!dns.cap || !dns.kv[dns_slot(dns.kv, dns.cap, ino)][0]))
		goto out;	/* none, and none known: nothing to keep */
	if ((dns.n + 1) * 2 > dns.cap) {
		size_t cap = dns.cap ? dns.cap * 2 : 1024;
		uint64_t (*kv)[2] = calloc(cap, sizeof(*kv));
		if (!kv) {
			log_error("fuse", "out of memory for the data namespace of inode %" PRIu64
				  "; its data objects would be misnamed: exiting", ino);
			abort();
		}
		for (size_t i = 0; i < dns.cap; i++)
			if (dns.kv[i][0])
				memcpy(kv[dns_slot(kv, cap, dns.kv[i][0])], dns.kv[i], sizeof(*kv));
		free(dns.kv);
		dns.kv = kv;
		dns.cap = cap;
	}
	size_t i = dns_slot(dns.kv, dns.cap, ino);
	if (!dns.kv[i][0])
		dns.n++;
	dns.kv[i][0] = ino;
	dns.kv[i][1] = ns;
out:
	pthread_mutex_unlock(&dns.lock);
}

uint64_t fd_dns(uint64_t ino)
{
	uint64_t ns = 0;

	pthread_mutex_lock(&dns.lock);
	if (dns.cap)
		ns = dns.kv[dns_slot(dns.kv, dns.cap, ino)][1];
	pthread_mutex_unlock(&dns.lock);
	return ns;
}

static void data_oid(char *b, size_t n, uint64_t ino, uint64_t blk)
{
	mds_data_oid(b, n, fd_dns(ino), ino, blk);
}

static int map_err(int err)
{
	return err == -EPERM ? -EIO : err;	/* fenced (evicted): EIO */
}

/* The first of w's len bytes (file offset w->off). */
static const char *wop_data(const struct wop *w)
{
	return w->small ? w->buf : w->buf + w->off % BS;
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* ---- under datapath.lock: inodes, buffers --------------------------------- */

static struct cino *cino_get(uint64_t ino, bool add)
{
	struct cino **pp = &datapath.ht[ino % HT_SIZE];

	for (struct cino *c = *pp; c; c = c->next)
		if (c->ino == ino)
			return c;
	if (!add)
		return NULL;
	struct cino *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ino = ino;
	c->next = *pp;
	*pp = c;
	return c;
}

static char *buf_get(void)
{
	return datapath.npool ? datapath.pool[--datapath.npool] : malloc(BS);
}

static void buf_put(char *b)
{
	if (datapath.npool < POOL_MAX)
		datapath.pool[datapath.npool++] = b;
	else
		free(b);
}

static uint64_t known_size(const struct cino *c)
{
	return c->wsize > c->msize ? c->wsize : c->msize;
}

/* ---- read-ahead blocks (under datapath.lock) ------------------------------- */

static void rblk_free(struct rblk *r)
{
	if (r->gprev)
		r->gprev->gnext = r->gnext;
	else
		datapath.rhead = r->gnext;
	if (r->gnext)
		r->gnext->gprev = r->gprev;
	else
		datapath.rtail = r->gprev;
	datapath.ra_bytes -= BS;
	buf_put(r->buf);
	free(r);
}

/* Takes r off its inode (no reader finds it any more). */
static void rblk_drop(struct rblk *r)
{
	if (!r->linked)
		return;
	for (struct rblk **pp = &r->c->rb; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	r->linked = false;
	if (!r->refs)
		rblk_free(r);
}

static void rblk_put(struct rblk *r)
{
	if (--r->refs == 0 && !r->linked)
		rblk_free(r);
}

/* Drops c's blocks that overlap [off, off + len) of the file (len 0: all). */
static void ra_drop(struct cino *c, uint64_t off, uint64_t len)
{
	struct rblk *r = c->rb, *n;

	for (; r; r = n) {
		n = r->next;
		if (!len || overlaps(r->blk * BS, BS, off, len))
			rblk_drop(r);
	}
}

static struct rblk *rblk_find(struct cino *c, uint64_t blk)
{
	for (struct rblk *r = c->rb; r; r = r->next)
		if (r->blk == blk)
			return r;
	return NULL;
}

/* May block blk of c be loaded now?  Not while the client has data of its
 * own on the way to it. */
static bool ra_allowed(struct cino *c, uint64_t blk)
{
	for (struct wbuf *b = c->wb; b; b = b->next)
		if (b->blk == blk)
			return false;
	for (struct wop *w = c->wl; w; w = w->next)
		if (overlaps(w->off, w->len, blk * BS, BS))
			return false;
	return true;
}

/* A new loading block blk of c (fsize: the size it is loaded up to), on
 * *loads for the caller to issue; NULL when the bound is reached and no
 * idle block can be evicted. */
static struct rblk *rblk_new(struct cino *c, uint64_t blk, uint64_t fsize, struct rblk **loads)
{
	if (datapath.ra_bytes + BS > datapath.ra_max) {
		struct rblk *v = datapath.rhead;
		while (v && (v->refs || v->state != RB_READY))
			v = v->gnext;
		if (!v)
			return NULL;
		if (v->linked)
			rblk_drop(v);
		else
			rblk_free(v);
	}
	struct rblk *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->buf = buf_get();
	if (!r->buf) {
		free(r);
		return NULL;
	}
	uint64_t left = fsize - blk * BS;
	r->c = c;
	r->blk = blk;
	r->len = (uint32_t)(left < BS ? left : BS);
	r->state = RB_LOADING;
	r->refs = 1;		/* the load's */
	r->linked = true;
	r->next = c->rb;
	c->rb = r;
	r->gprev = datapath.rtail;
	if (datapath.rtail)
		datapath.rtail->gnext = r;
	else
		datapath.rhead = r;
	datapath.rtail = r;
	datapath.ra_bytes += BS;
	r->lnext = *loads;
	*loads = r;
	return r;
}

/* The completion of a load (a library thread). */
static void on_ra_done(struct atoll_completion *comp, void *arg)
{
	struct rblk *r = arg;
	int64_t ret = atoll_completion_return(comp);

	atoll_completion_release(comp);
	if (ret == -ENOENT)
		ret = 0;	/* a hole */
	if (ret >= 0 && (uint64_t)ret < r->len)
		memset(r->buf + ret, 0, r->len - (size_t)ret);
	pthread_mutex_lock(&datapath.lock);
	r->err = ret < 0 ? map_err((int)ret) : 0;
	r->state = RB_READY;
	if (r->err)
		rblk_drop(r);	/* the next read tries again */
	rblk_put(r);
	pthread_cond_broadcast(&datapath.rcond);
	pthread_mutex_unlock(&datapath.lock);
}

static void loads_issue(struct rblk *l)
{
	while (l) {
		struct rblk *r = l;
		struct atoll_completion *comp = NULL;
		char oid[64];
		l = r->lnext;
		data_oid(oid, sizeof(oid), r->c->ino, r->blk);
		int ret = atoll_completion_create(on_ra_done, r, NULL, &comp);
		if (!ret)
			ret = atoll_aio_read(datapath.data, oid, comp, r->buf, r->len, 0, 0);
		if (ret) {
			atoll_completion_release(comp);
			pthread_mutex_lock(&datapath.lock);
			r->err = map_err(ret);
			r->state = RB_READY;
			rblk_drop(r);
			rblk_put(r);
			pthread_cond_broadcast(&datapath.rcond);
			pthread_mutex_unlock(&datapath.lock);
		}
	}
}

/* ---- write-back (under datapath.lock unless said) --------------------------- */

static void age_unlink(struct wbuf *b)
{
	if (b->aprev)
		b->aprev->anext = b->anext;
	else
		datapath.ahead = b->anext;
	if (b->anext)
		b->anext->aprev = b->aprev;
	else
		datapath.atail = b->aprev;
}

/* b goes out: it becomes a wop of its inode (on *send, for the caller to
 * send once it released the lock). */
static void wbuf_issue(struct wbuf *b, struct wop **send)
{
	struct cino *c = b->c;
	struct wop *w = calloc(1, sizeof(*w));

	for (struct wbuf **pp = &c->wb; *pp; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	age_unlink(b);
	if (!w) {
		/* cannot track it: lose nothing silently */
		if (!c->werr)
			c->werr = -ENOMEM;
		datapath.wb_bytes -= BS;
		buf_put(b->buf);
		free(b);
		pthread_cond_broadcast(&datapath.wcond);
		return;
	}
	w->c = c;
	w->seq = ++c->wseq;
	w->mseq = datapath.mark_seq;
	w->off = b->blk * BS + b->start;
	w->len = b->end - b->start;
	w->buf = b->buf;
	w->acct = BS;
	/* A small extent (a small file's close) travels in a copy of its
	 * own size and gives the block buffer back: a close that does not
	 * wait leaves its write in flight, and the bound should count what
	 * that holds, not 4 MiB (heap reuse makes a block buffer resident
	 * whole) */
	if (w->len <= BS / 4) {
		char *copy = malloc(w->len);
		if (copy) {
			memcpy(copy, b->buf + b->start, w->len);
			buf_put(b->buf);
			w->buf = copy;
			w->small = true;
			w->acct = (w->len + 4095) & ~4095ull;
			datapath.wb_bytes -= BS - w->acct;
		}
	}
	w->next = c->wl;
	c->wl = w;
	/* keep *send in issue order */
	struct wop **pp = send;
	while (*pp)
		pp = &(*pp)->snext;
	*pp = w;
	free(b);
}

/* Every buffer of c goes out. */
static void wbuf_issue_all(struct cino *c, struct wop **send)
{
	while (c->wb)
		wbuf_issue(c->wb, send);
}

/* Under datapath.lock: queues l for the flusher thread; false when out of
 * memory (the next completion tries again). */
static bool lq_push(struct landed l)
{
	if (datapath.nlq == datapath.caplq) {
		size_t nc = datapath.caplq ? 2 * datapath.caplq : 64;
		struct landed *v = realloc(datapath.lq, nc * sizeof(*v));
		if (!v)
			return false;
		datapath.lq = v;
		datapath.caplq = nc;
	}
	datapath.lq[datapath.nlq++] = l;
	pthread_cond_signal(&datapath.fcond);
	return true;
}

/* Is a write of c issued before mark still in flight? */
static bool wops_before(const struct cino *c, uint64_t mark)
{
	for (const struct wop *w = c->wl; w; w = w->next)
		if (w->mseq < mark)
			return true;
	return false;
}

/* Under datapath.lock: once no write issued before c's pending close without
 * waiting is in flight any more, its LANDED is queued for the flusher
 * thread, and so is the CLOSE of each release answered before its
 * writes landed. */
static void landed_check(struct cino *c)
{
	if (c->inflight_seq && !wops_before(c, c->inflight_seq) &&
	    lq_push((struct landed){ c->ino, c->inflight_seq, 0, false }))
		c->inflight_seq = 0;
	for (struct pclose **pp = &c->pc; *pp;) {
		struct pclose *p = *pp;
		if (wops_before(c, p->mark) ||
		    !lq_push((struct landed){ c->ino, p->mark, p->ogen, true })) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		free(p);
	}
}

static void wop_done(struct wop *w, int err)
{
	struct cino *c = w->c;

	for (struct wop **pp = &c->wl; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (err && !c->werr)
		c->werr = map_err(err);
	datapath.wb_bytes -= w->acct;
	if (w->small)
		free(w->buf);
	else
		buf_put(w->buf);
	free(w);
	landed_check(c);
	pthread_cond_broadcast(&datapath.wcond);
}

/* The completion of a wop (a library thread). */
static void on_write_done(struct atoll_completion *comp, void *arg)
{
	int64_t r = atoll_completion_return(comp);

	atoll_completion_release(comp);
	pthread_mutex_lock(&datapath.lock);
	wop_done(arg, r < 0 ? (int)r : 0);
	pthread_mutex_unlock(&datapath.lock);
}

/* Is an older wop of w's inode on w's range still in flight? */
static bool wop_blocked(const struct wop *w)
{
	for (const struct wop *o = w->c->wl; o; o = o->next)
		if (o->seq < w->seq && overlaps(o->off, o->len, w->off, w->len))
			return true;
	return false;
}

/* Without datapath.lock: sends the wops of list, in order, each once no older
 * wop of its inode overlaps it.  (The wops this waits for were issued
 * before ours and are sent by threads that never wait holding unsent
 * wops of their own, so the chain ends.) */
static void wops_send(struct wop *list)
{
	while (list) {
		struct wop *w = list;
		struct atoll_completion *comp = NULL;
		char oid[64];
		int r;
		list = w->snext;
		pthread_mutex_lock(&datapath.lock);
		while (wop_blocked(w) && !datapath.abandoned)
			pthread_cond_wait(&datapath.wcond, &datapath.lock);
		if (datapath.abandoned) {
			/* never sent: counted as failed, never as written */
			wop_done(w, -EIO);
			pthread_mutex_unlock(&datapath.lock);
			continue;
		}
		pthread_mutex_unlock(&datapath.lock);
		uint64_t blk = w->off / BS, boff = w->off % BS;
		data_oid(oid, sizeof(oid), w->c->ino, blk);
		if (datapath.fail_at && w->off + w->len > datapath.fail_at)
			r = -EIO;	/* fault fuse_fail_writes_at (tests) */
		else
			r = atoll_completion_create(on_write_done, w, NULL, &comp);
		if (!r)
			r = atoll_aio_write(datapath.data, oid, comp, wop_data(w), w->len, boff, 0);
		if (r) {
			atoll_completion_release(comp);
			pthread_mutex_lock(&datapath.lock);
			wop_done(w, r);
			pthread_mutex_unlock(&datapath.lock);
		}
	}
}

/* Waits until no wop of c overlaps [off, off + len) (len 0: none at all).
 * The caller holds no unsent wop.  0, or -EIO when the unmount gave up on
 * the OSDs first (fd_abandon). */
static int wb_wait(struct cino *c, uint64_t off, uint64_t len)
{
	for (;;) {
		struct wop *w = c->wl;
		while (w && len && !overlaps(w->off, w->len, off, len))
			w = w->next;
		if (!w)
			return 0;
		if (datapath.abandoned)
			return -EIO;
		pthread_cond_wait(&datapath.wcond, &datapath.lock);
	}
}

/* Without datapath.lock: sends every buffer of ino (no waiting for them). */
static void wb_issue(uint64_t ino)
{
	struct wop *send = NULL;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c)
		wbuf_issue_all(c, &send);
	pthread_mutex_unlock(&datapath.lock);
	wops_send(send);
}

int fd_wb_flush(uint64_t ino)
{
	int err = 0;

	wb_issue(ino);
	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c) {
		int w = wb_wait(c, 0, 0);
		err = c->werr ? c->werr : w;
		c->werr = 0;
	}
	pthread_mutex_unlock(&datapath.lock);
	return err;
}

/* Under datapath.lock (dropped while sending): the queued LANDEDs and CLOSEs of
 * closes that did not wait. */
static void lq_send(void)
{
	while (datapath.nlq) {
		struct landed l = datapath.lq[--datapath.nlq];
		pthread_mutex_unlock(&datapath.lock);
		if (l.close)
			fcl_close_async(l.ino, l.ogen);
		else
			fcl_landed_async(l.ino, l.mark);
		pthread_mutex_lock(&datapath.lock);
	}
}

/* Sends the buffers older than WB_AGE_NS, every half second, and the
 * queued LANDEDs and CLOSEs at once. */
static void *flusher_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&datapath.lock);
	while (!datapath.stop) {
		struct timespec ts = deadline_ms(CLOCK_MONOTONIC, 500);
		if (!datapath.nlq)
			pthread_cond_timedwait(&datapath.fcond, &datapath.lock, &ts);
		lq_send();
		uint64_t now = mono_now_ns();
		struct wop *send = NULL;
		while (datapath.ahead && datapath.ahead->born + WB_AGE_NS <= now)
			wbuf_issue(datapath.ahead, &send);
		if (send) {
			pthread_mutex_unlock(&datapath.lock);
			wops_send(send);
			pthread_mutex_lock(&datapath.lock);
		}
	}
	pthread_mutex_unlock(&datapath.lock);
	return NULL;
}

/* ---- set-up ---------------------------------------------------------------------- */

int fd_init(struct atoll_ioctx *data, uint64_t wb_max, uint64_t ra_max, bool async_close)
{
	pthread_condattr_t ca;
	int64_t fail_at = fault_get_int("fuse_fail_writes_at", 0);

	datapath.data = data;
	/* 0: every write goes out at once (write-behind, as before); else at
	 * least two blocks, one filling while one is in flight */
	datapath.wb_off = wb_max == 0;
	datapath.wb_max = wb_max < 2 * BS ? 2 * BS : wb_max;
	datapath.ra_max = ra_max;
	datapath.async_close = async_close;
	if (fail_at > 0) {
		datapath.fail_at = (uint64_t)fail_at;
		log_warn("fuse", "fault injection: writes reaching offset %" PRIu64 " fail after "
			 "their reply", datapath.fail_at);
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&datapath.fcond, &ca);
	pthread_condattr_destroy(&ca);
	int ret = -pthread_create(&datapath.thr, NULL, flusher_main, NULL);
	datapath.thr_on = ret == 0;
	return ret;
}

void fd_shutdown(void)
{
	struct wop *send = NULL;

	if (datapath.thr_on) {
		pthread_mutex_lock(&datapath.lock);
		datapath.stop = true;
		pthread_cond_signal(&datapath.fcond);
		pthread_mutex_unlock(&datapath.lock);
		pthread_join(datapath.thr, NULL);
		datapath.thr_on = false;
	}
	pthread_mutex_lock(&datapath.lock);
	while (datapath.ahead)
		wbuf_issue(datapath.ahead, &send);
	pthread_mutex_unlock(&datapath.lock);
	wops_send(send);
	pthread_mutex_lock(&datapath.lock);
	while (datapath.wb_bytes && !datapath.abandoned)
		pthread_cond_wait(&datapath.wcond, &datapath.lock);
	for (unsigned i = 0; i < HT_SIZE; i++)
		for (struct cino *c = datapath.ht[i]; c; c = c->next)
			landed_check(c);	/* one that found no memory before */
	lq_send();	/* the flusher thread that sent them is gone */
	for (unsigned i = 0; i < HT_SIZE; i++)
		for (struct cino *c = datapath.ht[i]; c; c = c->next)
			if (c->werr)
				log_error("fuse", "a write of inode %" PRIu64 " failed after its "
					  "last close (%s); its data is not all in the cluster",
					  c->ino, strerror(-c->werr));
	pthread_mutex_unlock(&datapath.lock);
}

/* The unmount's grace is over (fuse_unmount.c): the OSDs did not confirm
 * every write in time.  Nobody waits for them from now on (the waits
 * above fail with EIO, unsent buffers are dropped as failed); what this
 * client was still holding or waiting for is logged per inode, since
 * every such write was answered to the kernel long ago and nobody else
 * can be told.  The writes in flight complete (as failed) when the
 * cluster handle is shut down. */
uint64_t fd_abandon(const char *mnt, unsigned grace_s)
{
	uint64_t all = 0;

	pthread_mutex_lock(&datapath.lock);
	datapath.abandoned = true;
	for (unsigned i = 0; i < HT_SIZE; i++)
		for (struct cino *c = datapath.ht[i]; c; c = c->next) {
			uint64_t bytes = 0, lo = UINT64_MAX, hi = 0;
			for (struct wbuf *b = c->wb; b; b = b->next) {
				uint64_t o = b->blk * BS + b->start;
				bytes += b->end - b->start;
				lo = o < lo ? o : lo;
				hi = o + (b->end - b->start) > hi ? o + (b->end - b->start) : hi;
			}
			for (struct wop *w = c->wl; w; w = w->next) {
				bytes += w->len;
				lo = w->off < lo ? w->off : lo;
				hi = w->off + w->len > hi ? w->off + w->len : hi;
			}
			if (bytes)
				log_error("fuse", "inode %" PRIu64 ": %" PRIu64 " byte(s) written "
					  "through %s (offsets %" PRIu64 " to %" PRIu64 ") were not "
					  "confirmed durable by the OSDs within %u s of its "
					  "unmount: they may be lost", c->ino, bytes, mnt, lo, hi,
					  grace_s);
			all += bytes;
		}
	pthread_cond_broadcast(&datapath.wcond);
	pthread_cond_broadcast(&datapath.rcond);
	pthread_mutex_unlock(&datapath.lock);
	return all;
}

/* The kernel's read-ahead of a FUSE mount starts at the default of a
 * backing device, 128 KiB (FUSE_INIT's max_readahead can only lower it):
 * a 1 MiB read() then becomes eight 128 KiB requests and the reader waits
 * for each round.  The mount's own bdi (/sys/class/bdi/MAJ:MIN, found in
 * /proc/self/mountinfo: a stat of the mount point would wait for this
 * very daemon) takes a larger value from root. */
void fd_kernel_readahead(const char *mountpoint, unsigned kb)
{
	char *mp = realpath(mountpoint, NULL);
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], dev[64] = "";

	while (mp && f && fgets(line, sizeof(line), f)) {
		unsigned id, parent;
		char mm[64], root[1024], point[2048];
		if (sscanf(line, "%u %u %63s %1023s %2047s", &id, &parent, mm, root, point) == 5 &&
		    !strcmp(point, mp) && strstr(line, " - fuse"))
			snprintf(dev, sizeof(dev), "%s", mm);	/* the last one: ours */
	}
	if (f)
		fclose(f);
	free(mp);
	if (!dev[0]) {
		log_warn("fuse", "cannot find the mount of %s in /proc/self/mountinfo; the "
			 "kernel's read-ahead stays at its default", mountpoint);
		return;
	}
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb", dev);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%u\n", kb) < 0 || fclose(f) != 0) {
		if (!f)
			log_info("fuse", "cannot set %s (%s): the kernel reads ahead 128 KiB "
				 "(run as root, or -o kernel_readahead_kb=0 to stop trying)",
				 path, strerror(errno));
		else
			log_info("fuse", "cannot write %s: the kernel reads ahead 128 KiB", path);
	}
}

/* ---- hooks of the metadata path ----------------------------------------------------- */

uint64_t fd_stat_size(uint64_t ino, uint64_t msize)
{
	uint64_t size = msize;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c) {
		c->msize = msize;
		if (c->dirty && c->wsize > size)
			size = c->wsize;
	}
	pthread_mutex_unlock(&datapath.lock);
	return size;
}

void fd_open(uint64_t ino, uint64_t msize, bool created, uint64_t gen0)
{
	bool recount = false;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, true);
	if (c) {
		uint64_t gen = fr_gen();

		c->opens++;
		c->ogen = gen;
		if (gen != gen0)
			recount = c->recount = true;
		c->msize = msize;
		if (created) {
			c->wsize = 0;
			c->dirty = false;
		} else if (!c->dirty) {
			c->wsize = 0;
		}
		ra_drop(c, 0, 0);
		c->ra_end = 0;
	}
	pthread_mutex_unlock(&datapath.lock);
	if (recount)
		fr_recount_wanted();
}

uint64_t fd_close_open(uint64_t ino)
{
	uint64_t gen = 0;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c) {
		if (c->opens > 0)
			c->opens--;
		gen = c->ogen;
	}
	pthread_mutex_unlock(&datapath.lock);
	return gen;
}

size_t fd_opens(uint64_t gen, bool only_flagged, struct fd_open_ent **out)
{
	size_t n = 0, cap = 0;
	struct fd_open_ent *v = NULL;
	bool missed = false;

	pthread_mutex_lock(&datapath.lock);
	for (size_t b = 0; b < HT_SIZE; b++)
		for (struct cino *c = datapath.ht[b]; c; c = c->next) {
			bool want = c->opens > 0 && (!only_flagged || c->recount);
			if (!only_flagged)
				c->recount = false;
			if (!want)
				continue;
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 64;
				struct fd_open_ent *nv = realloc(v, nc * sizeof(*nv));
				if (!nv) {
					c->recount = true;	/* the next pass */
					missed = true;
					continue;
				}
				v = nv;
				cap = nc;
			}
			v[n].ino = c->ino;
			v[n].count = (uint32_t)c->opens;
			n++;
			c->ogen = gen;
			c->recount = false;
		}
	pthread_mutex_unlock(&datapath.lock);
	if (missed)
		fr_recount_wanted();
	*out = v;
	return n;
}

void fd_opens_flag(const struct fd_open_ent *v, size_t n)
{
	pthread_mutex_lock(&datapath.lock);
	for (size_t i = 0; i < n; i++) {
		struct cino *c = cino_get(v[i].ino, false);
		if (c)
			c->recount = true;
	}
	pthread_mutex_unlock(&datapath.lock);
}

uint64_t fd_set_size(uint64_t ino, uint64_t size)
{
	uint64_t hint = size;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c) {
		hint = known_size(c);
		c->wsize = size;
		c->msize = size;
		c->dirty = false;
		ra_drop(c, 0, 0);
	}
	pthread_mutex_unlock(&datapath.lock);
	return hint;
}

uint64_t fd_size_hint(uint64_t ino)
{
	uint64_t hint = 0;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c)
		hint = known_size(c);
	pthread_mutex_unlock(&datapath.lock);
	return hint;
}

void fd_invalidate(uint64_t ino)
{
	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c)
		ra_drop(c, 0, 0);
	pthread_mutex_unlock(&datapath.lock);
}

static int push_size(fuse_req_t req, uint64_t ino, uint32_t op, uint64_t ogen)
{
	uint64_t size = 0, mtime = 0, msize = UINT64_MAX;
	bool dirty;

	/* FSYNC (flush at every close, fsync, setattr): the buffers go out,
	 * the size goes to the MDS while they are in flight, and the call
	 * returns once both are durable: one round trip less per close.
	 * CLOSE (release) may purge an unlinked file's data: its writes must
	 * have landed before. */
	int werr = 0;
	if (op == MDS_OP_CLOSE)
		werr = fd_wb_flush(ino);
	else
		wb_issue(ino);
	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	dirty = c && c->dirty;
	if (dirty) {
		size = c->wsize;
		mtime = c->mtime;
	}
	if (c && op == MDS_OP_CLOSE)
		ra_drop(c, 0, 0);
	pthread_mutex_unlock(&datapath.lock);
	if (!dirty && op == MDS_OP_FSYNC)
		return fd_wb_flush(ino);
	int ret = fc_size_call(req, ino, op, dirty ? &size : NULL, mtime, &msize, ogen, 0);
	if (op != MDS_OP_CLOSE)
		werr = fd_wb_flush(ino);
	if (ret == 0 && dirty) {
		pthread_mutex_lock(&datapath.lock);
		c = cino_get(ino, false);
		if (c && c->wsize == size && c->mtime == mtime)
			c->dirty = false;
		if (c && msize != UINT64_MAX)
			c->msize = msize;
		pthread_mutex_unlock(&datapath.lock);
	}
	return werr ? werr : ret;
}

int fd_push_size(fuse_req_t req, uint64_t ino, uint32_t op)
{
	return push_size(req, ino, op, 0);
}

/* ---- the operations --------------------------------------------------------------- */

struct piece {
	uint64_t blk;
	uint32_t boff, len;
	char *dst;
	struct rblk *r;			/* from read-ahead, or */
	struct atoll_completion *comp;	/* read from the OSDs */
};

void fd_op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off_,
		struct fuse_file_info *fi)
{
	uint64_t off = (uint64_t)off_, fsize;
	struct wop *send = NULL;
	struct rblk *loads = NULL;
	struct piece *p = NULL;
	char *buf = NULL;
	size_t np = 0;
	int ret = 0;

	(void)fi;
	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	fsize = c ? known_size(c) : 0;
	if (off >= fsize || !size) {
		pthread_mutex_unlock(&datapath.lock);
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (off + size > fsize)
		size = (size_t)(fsize - off);
	buf = malloc(size);
	np = (size_t)((off + size - 1) / BS - off / BS + 1);
	p = calloc(np, sizeof(*p));
	if (!buf || !p) {
		pthread_mutex_unlock(&datapath.lock);
		ret = -ENOMEM;
		goto out;
	}
	/* read-your-writes: inside one buffer, answered from it; buffers
	 * overlapping partly go out first */
	for (struct wbuf *b = c->wb; b; b = b->next) {
		uint64_t bo = b->blk * BS + b->start, bl = b->end - b->start;
		if (bo <= off && off + size <= bo + bl) {
			memcpy(buf, b->buf + (off - b->blk * BS), size);
			pthread_mutex_unlock(&datapath.lock);
			goto out;
		}
	}
	for (struct wbuf *b = c->wb, *n; b; b = n) {
		n = b->next;
		if (overlaps(b->blk * BS + b->start, b->end - b->start, off, size))
			wbuf_issue(b, &send);
	}
	if (send) {
		pthread_mutex_unlock(&datapath.lock);
		wops_send(send);
		pthread_mutex_lock(&datapath.lock);
	}
	/* inside the newest write in flight that overlaps it (the tail of a
	 * file written and closed just now, whose pages the kernel does not
	 * hold because the last one was partial): answered from its data */
	for (struct wop *w = c->wl; w; w = w->next) {
		if (!overlaps(w->off, w->len, off, size))
			continue;
		if (w->off <= off && off + size <= w->off + w->len) {
			memcpy(buf, wop_data(w) + (off - w->off), size);
			pthread_mutex_unlock(&datapath.lock);
			goto out;
		}
		break;
	}
	if (wb_wait(c, off, size)) {
		pthread_mutex_unlock(&datapath.lock);
		ret = -EIO;	/* the unmount gave up on the OSDs */
		goto out;
	}
	fsize = known_size(c);
	if (off >= fsize) {
		pthread_mutex_unlock(&datapath.lock);
		size = 0;
		goto out;
	}
	if (off + size > fsize)
		size = (size_t)(fsize - off);
	np = (size_t)((off + size - 1) / BS - off / BS + 1);

	/* sequential: from the start, or within a block of the furthest read */
	bool seq = datapath.ra_max && (off == 0 || (off + BS >= c->ra_end && off <= c->ra_end + BS));
	if (off + size > c->ra_end)
		c->ra_end = off + size;
	uint64_t pos = off;
	size_t done = 0;
	for (size_t i = 0; i < np; i++) {
		uint64_t blk = pos / BS;
		uint32_t boff = (uint32_t)(pos % BS);
		uint32_t len = (uint32_t)(BS - boff);
		if (len > size - done)
			len = (uint32_t)(size - done);
		p[i].blk = blk;
		p[i].boff = boff;
		p[i].len = len;
		p[i].dst = buf + done;
		struct rblk *r = rblk_find(c, blk);
		if (!r && seq && ra_allowed(c, blk))
			r = rblk_new(c, blk, fsize, &loads);
		if (r && boff + len <= r->len) {
			r->refs++;
			p[i].r = r;
		}
		pos += len;
		done += len;
	}
	if (seq) {
		uint64_t last = (off + size - 1) / BS;
		for (uint64_t blk = last + 1; blk <= last + RA_WINDOW && blk * BS < fsize; blk++)
			if (!rblk_find(c, blk) && ra_allowed(c, blk) &&
			    !rblk_new(c, blk, fsize, &loads))
				break;
	}
	pthread_mutex_unlock(&datapath.lock);

	loads_issue(loads);
	for (size_t i = 0; i < np; i++) {
		char oid[64];
		if (p[i].r)
			continue;
		data_oid(oid, sizeof(oid), ino, p[i].blk);
		int r = atoll_completion_create(NULL, NULL, NULL, &p[i].comp);
		if (!r)
			r = atoll_aio_read(datapath.data, oid, p[i].comp, p[i].dst, p[i].len,
					   p[i].boff, 0);
		if (r) {
			atoll_completion_release(p[i].comp);
			p[i].comp = NULL;
			ret = r;
		}
	}
	for (size_t i = 0; i < np; i++) {
		if (!p[i].comp)
			continue;
		int64_t r = atoll_completion_wait(p[i].comp);
		atoll_completion_release(p[i].comp);
		if (r == -ENOENT)
			r = 0;	/* a hole */
		if (r < 0) {
			ret = (int)r;
			continue;
		}
		if ((size_t)r < p[i].len)
			memset(p[i].dst + r, 0, p[i].len - (size_t)r);
	}
	/* the blocks read ahead: ready blocks are never written, so they are
	 * read without the lock; when every piece is in one, the reply goes
	 * out straight from them (no copy) */
	struct iovec iov[4];
	bool all_ra = np <= 4;
	pthread_mutex_lock(&datapath.lock);
	for (size_t i = 0; i < np; i++) {
		struct rblk *r = p[i].r;
		if (!r) {
			all_ra = false;
			continue;
		}
		while (r->state == RB_LOADING)
			pthread_cond_wait(&datapath.rcond, &datapath.lock);
		if (r->err) {
			ret = r->err;
			all_ra = false;
		}
	}
	pthread_mutex_unlock(&datapath.lock);
	for (size_t i = 0; i < np; i++) {
		struct rblk *r = p[i].r;
		if (all_ra) {
			iov[i].iov_base = r->buf + p[i].boff;
			iov[i].iov_len = p[i].len;
		}
		if (r && !all_ra && !ret)
			memcpy(p[i].dst, r->buf + p[i].boff, p[i].len);
	}
	if (all_ra && !ret)
		fuse_reply_iov(req, iov, (int)np);
	pthread_mutex_lock(&datapath.lock);
	for (size_t i = 0; i < np; i++) {
		struct rblk *r = p[i].r;
		if (!r)
			continue;
		r->used += p[i].len;
		if (r->used >= r->len)
			rblk_drop(r);	/* read through */
		rblk_put(r);
	}
	pthread_mutex_unlock(&datapath.lock);
	if (all_ra && !ret) {
		free(p);
		free(buf);
		return;
	}
out:
	if (ret)
		fuse_reply_err(req, -map_err(ret));
	else
		fuse_reply_buf(req, buf, size);
	free(p);
	free(buf);
}

void fd_op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		 off_t off_, struct fuse_file_info *fi)
{
	uint64_t off = (uint64_t)off_, pos = off;
	struct wop *send = NULL;
	size_t done = 0;
	int ret = 0;

	(void)fi;
	if (size == 0) {
		fuse_reply_write(req, 0);
		return;
	}
	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, true);
	if (!c) {
		pthread_mutex_unlock(&datapath.lock);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ra_drop(c, off, size);
	while (done < size) {
		uint64_t blk = pos / BS;
		uint32_t boff = (uint32_t)(pos % BS);
		uint32_t len = (uint32_t)(BS - boff);
		if (len > size - done)
			len = (uint32_t)(size - done);
		struct wbuf *b = c->wb;
		while (b && b->blk != blk)
			b = b->next;
		if (b && (boff > b->end || boff + len < b->start)) {
			wbuf_issue(b, &send);	/* not contiguous: one extent a block */
			b = NULL;
		}
		if (!b) {
			if (datapath.wb_bytes + BS > datapath.wb_max) {
				/* the bound: the oldest buffer goes out, or wait for
				 * a write in flight; never wait holding unsent wops */
				if (datapath.ahead)
					wbuf_issue(datapath.ahead, &send);
				if (send) {
					pthread_mutex_unlock(&datapath.lock);
					wops_send(send);
					send = NULL;
					pthread_mutex_lock(&datapath.lock);
				} else if (datapath.abandoned) {
					ret = -EIO;	/* the unmount gave up on the OSDs */
					break;
				} else {
					pthread_cond_wait(&datapath.wcond, &datapath.lock);
				}
				continue;	/* look again: the lock was released */
			}
			b = calloc(1, sizeof(*b));
			if (b && !(b->buf = buf_get())) {
				free(b);
				b = NULL;
			}
			if (!b) {
				ret = -ENOMEM;
				break;
			}
			b->c = c;
			b->blk = blk;
			b->start = b->end = boff;
			b->born = mono_now_ns();
			b->next = c->wb;
			c->wb = b;
			b->aprev = datapath.atail;
			if (datapath.atail)
				datapath.atail->anext = b;
			else
				datapath.ahead = b;
			datapath.atail = b;
			datapath.wb_bytes += BS;
		}
		memcpy(b->buf + boff, buf + done, len);
		if (boff < b->start)
			b->start = boff;
		if (boff + len > b->end)
			b->end = boff + len;
		if (b->end == BS)
			wbuf_issue(b, &send);	/* the block's end: a sequential writer is done with it */
		pos += len;
		done += len;
	}
	if (done) {
		if (!c->dirty || c->wsize < c->msize)
			c->wsize = known_size(c);
		if (off + done > c->wsize)
			c->wsize = off + done;
		c->mtime = real_ns();
		c->dirty = true;
	}
	if (datapath.wb_off)
		wbuf_issue_all(c, &send);
	pthread_mutex_unlock(&datapath.lock);
	wops_send(send);
	if (ret && !done)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, done);
}

/* A close that does not wait for the file's writes
 * (doc/fs-design-client.md, "Closing without waiting"): its buffers go
 * out, the size goes to the MDS with MDS_L_INFLIGHT and a number, and
 * LANDED follows once the writes issued so far are durable (landed_check);
 * meanwhile the MDS makes other clients' opens of the file wait.  A write
 * that fails is reported by the next close or fsync of the file, as
 * before.  Without anything written since the last push, or when the MDS
 * cannot mark it: as fsync without the journal wait (push_size). */
static int flush_nowait(fuse_req_t req, uint64_t ino)
{
	struct wop *send = NULL;
	uint64_t size, mtime, msize = UINT64_MAX, seq;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	if (c && !c->dirty && !c->wb && (!c->wl || c->inflight_seq) && !datapath.abandoned) {
		/* the size is pushed; what is in flight an earlier close's
		 * mark covers: nothing to wait for */
		int werr = c->werr;
		c->werr = 0;
		pthread_mutex_unlock(&datapath.lock);
		return werr;
	}
	if (!c || !c->dirty || datapath.abandoned) {
		pthread_mutex_unlock(&datapath.lock);
		return push_size(req, ino, MDS_OP_FSYNC, 0);
	}
	wbuf_issue_all(c, &send);
	seq = ++datapath.mark_seq;	/* after: those wops' mseq is below it */
	size = c->wsize;
	mtime = c->mtime;
	pthread_mutex_unlock(&datapath.lock);
	wops_send(send);
	/* what failed so far, sending these included, is this close's */
	pthread_mutex_lock(&datapath.lock);
	int werr = c->werr;
	c->werr = 0;
	pthread_mutex_unlock(&datapath.lock);
	int ret = fc_size_call(req, ino, MDS_OP_FSYNC, &size, mtime, &msize, 0, seq);
	if (ret == -EAGAIN) {
		/* no mark (a full table, a resend after a restart): wait */
		ret = push_size(req, ino, MDS_OP_FSYNC, 0);
		return werr ? werr : ret;
	}
	pthread_mutex_lock(&datapath.lock);
	c = cino_get(ino, false);
	if (c && ret == 0) {
		if (c->wsize == size && c->mtime == mtime)
			c->dirty = false;
		if (msize != UINT64_MAX)
			c->msize = msize;
		if (seq > c->inflight_seq)
			c->inflight_seq = seq;
		landed_check(c);	/* they may all have landed already */
	}
	pthread_mutex_unlock(&datapath.lock);
	return werr ? werr : ret;
}

int fd_close_push(fuse_req_t req, uint64_t ino)
{
	if (datapath.async_close && fc_mds_version() >= 6)
		return flush_nowait(req, ino);
	return push_size(req, ino, MDS_OP_FSYNC, 0);
}

void fd_op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -fd_close_push(req, ino));
}

void fd_op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	int ret = fd_push_size(req, ino, MDS_OP_FSYNC);

	if (ret == 0)
		ret = fr_unsafe_wait_all();	/* its name and size are journaled */
	fuse_reply_err(req, -ret);
}

void fd_op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	/* nothing written to push, buffered, in flight or failed (touch, a
	 * reader): the kernel is answered at once, the CLOSE (the MDS counts
	 * opens, for orphans) goes behind and its reply ends on the loop
	 * thread: no request thread waits for it */
	uint64_t ogen = fd_close_open(ino);

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);
	bool clean = !c || (!c->dirty && !c->wl && !c->wb && !c->werr);
	/* a close without waiting pushed the size already, only its writes
	 * are in flight: answered now, the CLOSE goes once they landed (a
	 * failure is logged: the kernel ignores a release's error anyway) */
	bool later = !clean && datapath.async_close && fc_mds_version() >= 6 && !c->dirty &&
		     !c->wb && !c->werr && !datapath.abandoned;
	if (c && (clean || later))
		ra_drop(c, 0, 0);
	if (later) {
		struct pclose *p = malloc(sizeof(*p));
		if (p) {
			p->mark = ++datapath.mark_seq;
			p->ogen = ogen;
			p->next = c->pc;
			c->pc = p;
			landed_check(c);
		} else {
			later = false;
		}
	}
	pthread_mutex_unlock(&datapath.lock);
	if (later) {
		fuse_reply_err(req, 0);
		return;
	}
	if (clean) {
		fuse_reply_err(req, 0);
		fcl_close_async(ino, ogen);
		return;
	}
	fuse_reply_err(req, -push_size(req, ino, MDS_OP_CLOSE, ogen));
}

bool fd_clean(uint64_t ino)
{
	bool clean;

	pthread_mutex_lock(&datapath.lock);
	struct cino *c = cino_get(ino, false);

	clean = !c || (!c->dirty && !c->wl && !c->wb && !c->wsize);
	pthread_mutex_unlock(&datapath.lock);
	return clean;
}
