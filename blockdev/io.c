/*
 * io.c - reads, writes, discards, zeroes, flushes and block status of an
 * open image, split over data objects and issued in parallel.
 *
 * A request becomes one piece per object it touches (extent.c); each
 * piece is a small chain of object ops driven from libatoll's completion
 * callbacks (which may issue more ops: they never block).  The request
 * completes when its last piece does, with the first error.
 *
 * Copy-on-write.  When the image has snapshots, the first change to an
 * object after the newest snapshot S first preserves it:
 *   1. read the head object (data + xattrs); if its "snapseq" xattr is
 *      already >= S it was preserved before (e.g. by an earlier run);
 *   2. write the content (or an "absent" marker) to img_snap.<id>.<S>.<objno>;
 *   3. set "snapseq" = S on the head (creating it empty if absent);
 *   4. only then apply the change.
 * Each step starts after the previous one is durable, so a crash leaves
 * either a head not yet changed (the copy is redone, same content) or a
 * head marked preserved whose copy is durable.  Changes to one object
 * wait behind its preservation (struct img_cow); only the image's single
 * writer does this, and snapshots are taken with its I/O drained, so
 * latest_snap is stable while a request runs.
 *
 * Flush: changing requests are kept in issue order (wlist); a flush waits
 * on the newest one in flight and moves to the next older as each
 * completes, so it completes once everything issued before it did.
 *
 * Completions: the caller's atoll_completion (atoll.h) is claimed with
 * atoll_completion_begin at the point where the request can no longer be
 * refused, and finished once with atoll_completion_finish; requests the
 * library makes for itself (block status) use an internal callback.
 */
#include "image-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum req_kind { R_READ, R_WRITE, R_DISCARD, R_ZERO, R_FLUSH, R_BSTAT };

/* An internal request's callback (block status chains through one). */
typedef void (*img_req_cb)(struct atoll_image *img, int64_t result, void *arg);

struct img_req {
	struct atoll_image *img;
	enum req_kind kind;
	struct atoll_completion *comp;	/* the caller's, or NULL */
	img_req_cb cb;			/* internal, or NULL */
	void *arg;
	char *rbuf;
	const char *wbuf;
	uint64_t off, len;
	unsigned flags;
	uint64_t snap;			/* newest snapshot when issued */
	atomic_int pending;
	atomic_int err;
	int64_t result;
	struct img_req *wprev, *wnext;	/* wlist (L) */
	struct img_req *flushers;	/* flushes waiting on this one (L) */
	struct img_req *next;		/* held list / flusher list */
	/* block status */
	struct atoll_image_extent *ext;
	size_t max;
	uint64_t *osizes;		/* per piece: size, UINT64_MAX absent */
	struct img_piece *pieces;
	size_t npieces;
};

enum sub_step { S_IO, S_COW_READ, S_COW_READ2, S_COW_COPY, S_COW_MARK, S_SNAP_READ };

struct img_sub {
	struct img_req *req;
	struct img_piece p;
	enum sub_step step;
	struct atoll_op *op;
	struct atoll_kv_iter *xa;
	size_t nread;
	char *copybuf;
	bool absent;
	uint32_t cand;			/* snapshot candidate index (S_SNAP_READ) */
	struct img_cow *cow;
	struct img_sub *next;		/* waiting on cow */
	size_t idx;			/* piece index (block status) */
	uint64_t stsize;
};

struct img_cow {
	uint64_t objno;
	int state;			/* 0 preserving, 1 done, < 0 failed */
	struct img_sub *waiters;
	struct img_cow *next;
};

#define COW_BUCKETS 4096

static char zeroes_buf[4 << 20];	/* untouched: costs no memory */

static void sub_issue(struct img_sub *s);
static void sub_done(struct img_sub *s, int r);

/* Reports q's result, exactly once: to the internal callback, then to
 * the caller's completion. */
static void req_report(struct img_req *q, int64_t res)
{
	if (q->cb)
		q->cb(q->img, res, q->arg);
	if (q->comp)
		atoll_completion_finish(q->comp, res, 0);
}

/* ---- the copy-on-write table ---------------------------------------- */

static struct img_cow *cow_find(struct atoll_image *img, uint64_t objno, bool create)
{
	struct img_cow *c;
	size_t b = (size_t)(objno % COW_BUCKETS);

	if (!img->cow) {
		if (!create)
			return NULL;
		img->cow = calloc(COW_BUCKETS, sizeof(*img->cow));
		if (!img->cow)
			return NULL;
		img->cow_buckets = COW_BUCKETS;
	}
	for (c = img->cow[b]; c; c = c->next)
		if (c->objno == objno)
			return c;
	if (!create)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->objno = objno;
	c->next = img->cow[b];
	img->cow[b] = c;
	return c;
}

void img_cow_reset(struct atoll_image *img)
{
	for (size_t b = 0; img->cow && b < img->cow_buckets; b++) {
		struct img_cow *c = img->cow[b], *n;

		for (; c; c = n) {
			n = c->next;
			free(c);
		}
		img->cow[b] = NULL;
	}
}

void img_cow_free(struct atoll_image *img)
{
	img_cow_reset(img);
	free(img->cow);
	img->cow = NULL;
}

static uint64_t xattr_u64(struct atoll_kv_iter *xa, const char *name, bool *found)
{
	const void *k, *v;
	size_t kl, vl;
	char buf[24];

	*found = false;
	while (xa && atoll_kv_iter_next(xa, &k, &kl, &v, &vl) == 0) {
		if (kl != strlen(name) || memcmp(k, name, kl) || vl >= sizeof(buf))
			continue;
		memcpy(buf, v, vl);
		buf[vl] = 0;
		*found = true;
		return strtoull(buf, NULL, 10);
	}
	return 0;
}

/* ---- requests ------------------------------------------------------- */

static void finish_req(struct img_req *q)
{
	struct atoll_image *img = q->img;
	struct img_req *done = NULL, *f, *fn;
	int err = atomic_load(&q->err);
	int64_t res = err ? err : q->result;

	pthread_mutex_lock(&img->lock);
	if (q->kind == R_WRITE || q->kind == R_DISCARD || q->kind == R_ZERO) {
		/* hand waiting flushes to the next older write, if any */
		if (q->wprev) {
			for (f = q->flushers; f; f = fn) {
				fn = f->next;
				f->next = q->wprev->flushers;
				q->wprev->flushers = f;
			}
		} else {
			done = q->flushers;
		}
		if (q->wprev)
			q->wprev->wnext = q->wnext;
		else
			img->wlist_head = q->wnext;
		if (q->wnext)
			q->wnext->wprev = q->wprev;
		else
			img->wlist_tail = q->wprev;
		img->inflight_writes--;
		if (err && !img->async_err)
			img->async_err = err;
	}
	img->inflight--;
	pthread_cond_broadcast(&img->cond);
	pthread_mutex_unlock(&img->lock);

	req_report(q, res);
	for (f = done; f; f = fn) {
		fn = f->next;
		pthread_mutex_lock(&img->lock);
		img->inflight--;
		pthread_cond_broadcast(&img->cond);
		pthread_mutex_unlock(&img->lock);
		req_report(f, 0);
		free(f);
	}
	free(q->osizes);
	free(q->pieces);
	free(q);
}

static void req_put(struct img_req *q)
{
	if (atomic_fetch_sub(&q->pending, 1) == 1)
		finish_req(q);
}

static void sub_free(struct img_sub *s)
{
	atoll_op_release(s->op);
	atoll_kv_iter_free(s->xa);
	free(s->copybuf);
	free(s);
}

static void sub_done(struct img_sub *s, int r)
{
	struct img_req *q = s->req;
	int zero = 0;

	if (r < 0)
		atomic_compare_exchange_strong(&q->err, &zero, r);
	sub_free(s);
	req_put(q);
}

static void on_comp(struct atoll_completion *comp, void *arg);

static int issue_op(struct img_sub *s, const char *oid)
{
	struct atoll_completion *comp;
	int r = atoll_completion_create(on_comp, s, NULL, &comp);

	if (r)
		return r;
	r = atoll_aio_op_operate(s->op, s->req->img->io, oid, comp, 0);
	atoll_completion_release(comp);
	return r;
}

static struct atoll_op *new_op(struct img_sub *s)
{
	atoll_op_release(s->op);
	atoll_kv_iter_free(s->xa);
	s->xa = NULL;
	s->op = atoll_op_create(0);
	return s->op;
}

/* The change itself, once the object is preserved (or needs not be). */
static int issue_change(struct img_sub *s)
{
	struct img_req *q = s->req;
	struct atoll_image *img = q->img;
	uint64_t osize = img->object_size;
	char oid[IMG_OID_MAX];
	struct atoll_op *op = new_op(s);

	if (!op)
		return -ENOMEM;
	s->step = S_IO;
	img_oid_data(oid, img->id, s->p.objno);
	if (q->kind == R_WRITE) {
		atoll_op_write(op, q->wbuf + s->p.bufoff, s->p.len, s->p.objoff);
	} else if (q->kind == R_ZERO && (q->flags & ATOLL_IMAGE_ZERO_NO_HOLE)) {
		uint64_t done = 0;

		while (done < s->p.len) {
			uint64_t n = s->p.len - done;

			if (n > sizeof(zeroes_buf))
				n = sizeof(zeroes_buf);
			atoll_op_write(op, zeroes_buf, n, s->p.objoff + done);
			done += n;
		}
	} else if (s->p.objoff == 0 && s->p.len == osize && q->snap == 0) {
		atoll_op_remove(op);
	} else if (s->p.objoff + s->p.len == osize) {
		atoll_op_assert_exists(op);
		atoll_op_truncate(op, s->p.objoff);
	} else {
		atoll_op_assert_exists(op);
		atoll_op_zero(op, s->p.objoff, s->p.len);
	}
	return issue_op(s, oid);
}

static void cow_finish(struct atoll_image *img, struct img_cow *c, int r)
{
	struct img_sub *w, *wn;

	pthread_mutex_lock(&img->lock);
	c->state = r < 0 ? r : 1;
	w = c->waiters;
	c->waiters = NULL;
	pthread_mutex_unlock(&img->lock);
	for (; w; w = wn) {
		wn = w->next;
		if (r < 0) {
			sub_done(w, r);
		} else {
			int e = issue_change(w);

			if (e)
				sub_done(w, e);
		}
	}
	if (r < 0) {
		/* let a later change try again */
		pthread_mutex_lock(&img->lock);
		if (c->state < 0)
			c->state = -1;
		pthread_mutex_unlock(&img->lock);
	}
}

static int issue_cow_read(struct img_sub *s)
{
	struct atoll_image *img = s->req->img;
	char oid[IMG_OID_MAX];
	struct atoll_op *op = new_op(s);

	if (!op)
		return -ENOMEM;
	if (!s->copybuf)
		s->copybuf = malloc(img->object_size);
	if (!s->copybuf)
		return -ENOMEM;
	s->step = S_COW_READ;
	s->nread = 0;
	img_oid_data(oid, img->id, s->p.objno);
	atoll_op_read(op, 0, img->object_size, s->copybuf, &s->nread, NULL);
	/* a head never preserved has no "snapseq": that step then fails
	 * the op with -ENODATA and S_COW_READ2 reads without it */
	atoll_op_getxattr(op, "snapseq", &s->xa, NULL);
	return issue_op(s, oid);
}

static void sub_start_change(struct img_sub *s)
{
	struct img_req *q = s->req;
	struct atoll_image *img = q->img;
	struct img_cow *c;
	int r;

	if (q->snap == 0) {
		r = issue_change(s);
		if (r)
			sub_done(s, r);
		return;
	}
	pthread_mutex_lock(&img->lock);
	c = cow_find(img, s->p.objno, true);
	if (!c) {
		pthread_mutex_unlock(&img->lock);
		sub_done(s, -ENOMEM);
		return;
	}
	if (c->state == 1) {
		pthread_mutex_unlock(&img->lock);
		r = issue_change(s);
		if (r)
			sub_done(s, r);
		return;
	}
	/* this sub waits for the preservation; the first one also drives it */
	s->next = c->waiters;
	c->waiters = s;
	if (c->state == 0 && c->waiters->next) {
		pthread_mutex_unlock(&img->lock);
		return;		/* already being preserved */
	}
	c->state = 0;
	pthread_mutex_unlock(&img->lock);
	{
		/* a separate driver sub carries the COW steps */
		struct img_sub *d = calloc(1, sizeof(*d));

		if (!d) {
			cow_finish(img, c, -ENOMEM);
			return;
		}
		atomic_fetch_add(&q->pending, 1);
		d->req = q;
		d->p = s->p;
		d->cow = c;
		r = issue_cow_read(d);
		if (r) {
			cow_finish(img, c, r);
			sub_done(d, 0);
		}
	}
}

static void on_cow_step(struct img_sub *s, int r)
{
	struct img_req *q = s->req;
	struct atoll_image *img = q->img;
	char oid[IMG_OID_MAX], seq[24];
	struct atoll_op *op;
	bool found;

	switch (s->step) {
	case S_COW_READ:
		if (r == -ENODATA) {
			op = new_op(s);
			r = -ENOMEM;
			if (!op)
				goto fail;
			s->step = S_COW_READ2;
			s->nread = 0;
			img_oid_data(oid, img->id, s->p.objno);
			atoll_op_read(op, 0, img->object_size, s->copybuf, &s->nread, NULL);
			r = issue_op(s, oid);
			if (r)
				goto fail;
			return;
		}
		/* fall through */
	case S_COW_READ2:
		if (r == -ENOENT) {
			s->absent = true;
			s->nread = 0;
		} else if (r < 0) {
			goto fail;
		} else if (xattr_u64(s->xa, "snapseq", &found) >= q->snap && found) {
			cow_finish(img, s->cow, 0);	/* preserved before */
			sub_done(s, 0);
			return;
		}
		op = new_op(s);
		r = -ENOMEM;
		if (!op)
			goto fail;
		s->step = S_COW_COPY;
		img_oid_snap(oid, img->id, q->snap, s->p.objno);
		atoll_op_write_full(op, s->copybuf, s->nread);
		atoll_op_setxattr(op, "absent", s->absent ? "1" : "0", 1);
		r = issue_op(s, oid);
		if (r)
			goto fail;
		return;
	case S_COW_COPY:
		if (r < 0)
			goto fail;
		op = new_op(s);
		r = -ENOMEM;
		if (!op)
			goto fail;
		s->step = S_COW_MARK;
		img_oid_data(oid, img->id, s->p.objno);
		snprintf(seq, sizeof(seq), "%" PRIu64, q->snap);
		atoll_op_create_object(op, 0);
		atoll_op_setxattr(op, "snapseq", seq, strlen(seq));
		r = issue_op(s, oid);
		if (r)
			goto fail;
		return;
	case S_COW_MARK:
		if (r < 0)
			goto fail;
		cow_finish(img, s->cow, 0);
		sub_done(s, 0);
		return;
	default:
		break;
	}
	r = -EIO;
fail:
	cow_finish(img, s->cow, r);
	sub_done(s, r);
}

/* Reads of a snapshot: the copy preserved for the oldest snapshot >= ours
 * holds our content; with none, the head still does. */
static int issue_snap_read(struct img_sub *s)
{
	struct img_req *q = s->req;
	struct atoll_image *img = q->img;
	char oid[IMG_OID_MAX];
	struct atoll_op *op = new_op(s);
	uint64_t sid = 0;

	if (!op)
		return -ENOMEM;
	pthread_mutex_lock(&img->lock);
	while (s->cand < img->hdr.nsnaps && img->hdr.snaps[s->cand].id < img->snap_id)
		s->cand++;
	if (s->cand < img->hdr.nsnaps)
		sid = img->hdr.snaps[s->cand].id;
	pthread_mutex_unlock(&img->lock);
	s->nread = 0;
	if (sid) {
		s->step = S_SNAP_READ;
		img_oid_snap(oid, img->id, sid, s->p.objno);
		atoll_op_read(op, s->p.objoff, s->p.len, q->rbuf + s->p.bufoff, &s->nread, NULL);
		atoll_op_getxattr(op, "absent", &s->xa, NULL);
	} else {
		s->step = S_IO;
		img_oid_data(oid, img->id, s->p.objno);
		atoll_op_read(op, s->p.objoff, s->p.len, q->rbuf + s->p.bufoff, &s->nread, NULL);
	}
	return issue_op(s, oid);
}

static void on_comp(struct atoll_completion *comp, void *arg)
{
	struct img_sub *s = arg;
	struct img_req *q = s->req;
	int r = (int)atoll_completion_return(comp);

	if (s->step != S_IO && s->step != S_SNAP_READ) {
		on_cow_step(s, r);
		return;
	}
	switch (q->kind) {
	case R_READ:
		if (s->step == S_SNAP_READ) {
			bool found;

			if (r == -ENOENT) {
				s->cand++;
				r = issue_snap_read(s);
				if (r)
					sub_done(s, r);
				return;
			}
			if (r >= 0 && xattr_u64(s->xa, "absent", &found) == 1)
				s->nread = 0;
		}
		if (r == -ENOENT) {
			s->nread = 0;
			r = 0;
		}
		if (r >= 0 && s->nread < s->p.len)
			memset(q->rbuf + s->p.bufoff + s->nread, 0, s->p.len - s->nread);
		break;
	case R_DISCARD:
	case R_ZERO:
		if (r == -ENOENT)
			r = 0;		/* nothing there: reads as zeros already */
		break;
	case R_BSTAT:
		q->osizes[s->idx] = r == -ENOENT ? UINT64_MAX : s->stsize;
		if (r == -ENOENT)
			r = 0;
		break;
	default:
		break;
	}
	sub_done(s, r < 0 ? r : 0);
}

static void sub_issue(struct img_sub *s)
{
	struct img_req *q = s->req;
	struct atoll_image *img = q->img;
	char oid[IMG_OID_MAX];
	struct atoll_op *op;
	int r;

	switch (q->kind) {
	case R_READ:
		if (img->snap_id) {
			r = issue_snap_read(s);
			break;
		}
		op = new_op(s);
		r = -ENOMEM;
		if (!op)
			break;
		s->step = S_IO;
		img_oid_data(oid, img->id, s->p.objno);
		atoll_op_read(op, s->p.objoff, s->p.len, q->rbuf + s->p.bufoff, &s->nread, NULL);
		r = issue_op(s, oid);
		break;
	case R_BSTAT:
		op = new_op(s);
		r = -ENOMEM;
		if (!op)
			break;
		s->step = S_IO;
		img_oid_data(oid, img->id, s->p.objno);
		atoll_op_stat(op, &s->stsize, NULL, NULL);
		r = issue_op(s, oid);
		break;
	default:
		sub_start_change(s);
		return;
	}
	if (r)
		sub_done(s, r);
}

static void issue_req(struct img_req *q)
{
	struct atoll_image *img = q->img;
	struct img_piece stack[16], *pieces = stack;
	size_t n, i;

	n = img_split(q->off, q->len, img->object_size, stack, 16);
	if (n > 16) {
		pieces = malloc(n * sizeof(*pieces));
		if (!pieces) {
			atomic_store(&q->err, -ENOMEM);
			req_put(q);
			return;
		}
		img_split(q->off, q->len, img->object_size, pieces, n);
	}
	atomic_fetch_add(&q->pending, (int)n);
	for (i = 0; i < n; i++) {
		struct img_sub *s = calloc(1, sizeof(*s));

		if (!s) {
			atomic_store(&q->err, -ENOMEM);
			atomic_fetch_sub(&q->pending, (int)(n - i));
			break;
		}
		s->req = q;
		s->p = pieces[i];
		s->idx = i;
		sub_issue(s);
	}
	if (pieces != stack)
		free(pieces);
	req_put(q);	/* the issuer's own count */
}

/* ---- the public calls ------------------------------------------------ */

static int check_range(struct atoll_image *img, uint64_t off, uint64_t len, bool io_max)
{
	uint64_t size;

	pthread_mutex_lock(&img->lock);
	size = img->size;
	pthread_mutex_unlock(&img->lock);
	if (off + len < off || off + len > size)
		return -EINVAL;
	if (io_max && len > ATOLL_IMAGE_IO_MAX)
		return -EINVAL;
	return 0;
}

static struct img_req *new_req(struct atoll_image *img, enum req_kind kind,
			       struct atoll_completion *comp, uint64_t off, uint64_t len,
			       unsigned flags)
{
	struct img_req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->img = img;
	q->kind = kind;
	q->comp = comp;
	q->off = off;
	q->len = len;
	q->flags = flags;
	q->result = kind == R_READ || kind == R_WRITE ? (int64_t)len : 0;
	atomic_init(&q->pending, 1);
	atomic_init(&q->err, 0);
	return q;
}

/* Starts a changing request, or holds it while a snapshot is taken. */
static void flush_start(struct img_req *q);

static int start_change(struct img_req *q, bool from_resume)
{
	struct atoll_image *img = q->img;
	int r;

	pthread_mutex_lock(&img->lock);
	if (img->fenced) {
		r = img->fenced;
		pthread_mutex_unlock(&img->lock);
		if (from_resume)
			req_report(q, r);	/* it was accepted: report */
		free(q);
		return from_resume ? 0 : r;
	}
	/* accepted from here on: the caller's completion is ours */
	if (!from_resume && q->comp && atoll_completion_begin(q->comp) < 0) {
		pthread_mutex_unlock(&img->lock);
		free(q);
		return -EINVAL;
	}
	img->inflight++;
	if (img->paused) {
		q->next = img->held;
		img->held = q;
		pthread_mutex_unlock(&img->lock);
		return 0;
	}
	if (q->kind == R_FLUSH) {
		img->inflight--;
		pthread_mutex_unlock(&img->lock);
		flush_start(q);
		return 0;
	}
	q->snap = img->latest_snap;
	img->inflight_writes++;
	q->wprev = img->wlist_tail;
	if (img->wlist_tail)
		img->wlist_tail->wnext = q;
	else
		img->wlist_head = q;
	img->wlist_tail = q;
	pthread_mutex_unlock(&img->lock);
	issue_req(q);
	return 0;
}

void img_pause_locked(struct atoll_image *img)
{
	img->paused = true;
	while (img->inflight_writes)
		pthread_cond_wait(&img->cond, &img->lock);
}

void img_resume(struct atoll_image *img)
{
	struct img_req *held, *q, *rev = NULL;

	pthread_mutex_lock(&img->lock);
	img->paused = false;
	held = img->held;
	img->held = NULL;
	pthread_mutex_unlock(&img->lock);
	while (held) {		/* restore issue order */
		q = held;
		held = held->next;
		q->next = rev;
		rev = q;
	}
	while (rev) {
		q = rev;
		rev = rev->next;
		q->next = NULL;
		pthread_mutex_lock(&img->lock);
		img->inflight--;	/* start_change counts it again */
		pthread_mutex_unlock(&img->lock);
		start_change(q, true);
	}
}

int atoll_image_aio_read(struct atoll_image *img, void *buf, size_t len, uint64_t off,
			 struct atoll_completion *comp, unsigned flags)
{
	struct img_req *q;
	int r;

	if (!img || (!buf && len) || !comp || flags)
		return -EINVAL;
	r = check_range(img, off, len, true);
	if (r)
		return r;
	q = new_req(img, R_READ, comp, off, len, 0);
	if (!q)
		return -ENOMEM;
	if (atoll_completion_begin(comp) < 0) {
		free(q);
		return -EINVAL;
	}
	q->rbuf = buf;
	pthread_mutex_lock(&img->lock);
	img->inflight++;
	pthread_mutex_unlock(&img->lock);
	issue_req(q);
	return 0;
}

static int aio_change(struct atoll_image *img, enum req_kind kind, const void *buf,
		      uint64_t len, uint64_t off, struct atoll_completion *comp,
		      unsigned flags, bool io_max)
{
	struct img_req *q;
	int r;

	if (!img || !comp)
		return -EINVAL;
	if (img->read_only)
		return -EROFS;
	r = check_range(img, off, len, io_max);
	if (r)
		return r;
	q = new_req(img, kind, comp, off, len, flags);
	if (!q)
		return -ENOMEM;
	q->wbuf = buf;
	return start_change(q, false);
}

int atoll_image_aio_write(struct atoll_image *img, const void *buf, size_t len,
			  uint64_t off, struct atoll_completion *comp, unsigned flags)
{
	if (!img || (!buf && len) || flags)
		return -EINVAL;
	return aio_change(img, R_WRITE, buf, len, off, comp, 0, true);
}

int atoll_image_aio_discard(struct atoll_image *img, uint64_t off, uint64_t len,
			    struct atoll_completion *comp, unsigned flags)
{
	if (!img || flags)
		return -EINVAL;
	return aio_change(img, R_DISCARD, NULL, len, off, comp, 0, false);
}

int atoll_image_aio_write_zeroes(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_completion *comp, unsigned flags)
{
	if (!img || (flags & ~ATOLL_IMAGE_ZERO_NO_HOLE))
		return -EINVAL;
	return aio_change(img, R_ZERO, NULL, len, off, comp, flags, false);
}

/* Waits on the newest change in flight, or completes at once. */
static void flush_start(struct img_req *q)
{
	struct atoll_image *img = q->img;
	struct img_req *t;

	pthread_mutex_lock(&img->lock);
	t = img->wlist_tail;
	if (t) {
		img->inflight++;
		q->next = t->flushers;
		t->flushers = q;
		pthread_mutex_unlock(&img->lock);
		return;
	}
	pthread_mutex_unlock(&img->lock);
	req_report(q, 0);
	free(q);
}

int atoll_image_aio_flush(struct atoll_image *img, struct atoll_completion *comp,
			  unsigned flags)
{
	struct img_req *q;

	if (!img || !comp || flags)
		return -EINVAL;
	q = new_req(img, R_FLUSH, comp, 0, 0, 0);
	if (!q)
		return -ENOMEM;
	if (img->read_only) {
		if (atoll_completion_begin(comp) < 0) {
			free(q);
			return -EINVAL;
		}
		flush_start(q);
		return 0;
	}
	/* held behind a snapshot like the writes before it */
	return start_change(q, false);
}

static void bstat_done(struct atoll_image *img, int64_t result, void *arg);

struct bstat_ctx {
	struct img_req *q;	/* the stat request (pieces, sizes) */
	struct atoll_completion *comp;	/* the caller's */
	struct atoll_image_extent *ext;
	size_t max;
	uint64_t off;
};

int atoll_image_aio_block_status(struct atoll_image *img, uint64_t off, uint64_t len,
				 struct atoll_image_extent *ext, size_t max,
				 struct atoll_completion *comp, unsigned flags)
{
	struct img_req *q;
	struct bstat_ctx *bc;
	uint64_t osize, limit;
	size_t n;
	int r;

	if (!img || !comp || flags || (!ext && max) || (len && !max))
		return -EINVAL;
	r = check_range(img, off, len, false);
	if (r)
		return r;
	osize = img->object_size;
	/* at most 1024 objects per answer; the caller asks again for more */
	limit = (off / osize + 1024) * osize - off;
	if (len > limit)
		len = limit;
	if (img->snap_id || len == 0) {
		/* snapshots report everything as data (correct, not sparse) */
		if (atoll_completion_begin(comp) < 0)
			return -EINVAL;
		if (len) {
			ext[0] = (struct atoll_image_extent){ off, len, 0 };
		}
		atoll_completion_finish(comp, len ? 1 : 0, 0);
		return 0;
	}
	bc = calloc(1, sizeof(*bc));
	q = new_req(img, R_BSTAT, NULL, off, len, 0);
	if (!bc || !q) {
		free(bc);
		free(q);
		return -ENOMEM;
	}
	n = img_split(off, len, osize, NULL, 0);
	q->pieces = calloc(n, sizeof(*q->pieces));
	q->osizes = calloc(n, sizeof(*q->osizes));
	if (!q->pieces || !q->osizes) {
		free(q->pieces);
		free(q->osizes);
		free(q);
		free(bc);
		return -ENOMEM;
	}
	if (atoll_completion_begin(comp) < 0) {
		free(q->pieces);
		free(q->osizes);
		free(q);
		free(bc);
		return -EINVAL;
	}
	img_split(off, len, osize, q->pieces, n);
	q->npieces = n;
	bc->q = q;
	bc->comp = comp;
	bc->ext = ext;
	bc->max = max;
	bc->off = off;
	pthread_mutex_lock(&img->lock);
	img->inflight++;
	pthread_mutex_unlock(&img->lock);
	/* keep q alive past finish_req: bstat_done uses its arrays */
	q->cb = bstat_done;
	q->arg = bc;
	issue_req(q);
	return 0;
}

static void bstat_done(struct atoll_image *img, int64_t result, void *arg)
{
	struct bstat_ctx *bc = arg;
	struct img_req *q = bc->q;
	size_t ne = 0;

	if (result >= 0) {
		for (size_t i = 0; i < q->npieces; i++) {
			const struct img_piece *p = &q->pieces[i];
			uint64_t sz = q->osizes[i];
			uint64_t data = 0;

			if (sz != UINT64_MAX && sz > p->objoff)
				data = sz - p->objoff < p->len ? sz - p->objoff : p->len;
			for (int part = 0; part < 2; part++) {
				uint64_t plen = part ? p->len - data : data;
				uint64_t poff = q->off + p->bufoff + (part ? data : 0);
				uint32_t fl = part ? ATOLL_IMAGE_EXTENT_HOLE | ATOLL_IMAGE_EXTENT_ZERO : 0;

				if (!plen)
					continue;
				if (ne && bc->ext[ne - 1].flags == fl &&
				    bc->ext[ne - 1].off + bc->ext[ne - 1].len == poff) {
					bc->ext[ne - 1].len += plen;
				} else if (ne < bc->max) {
					bc->ext[ne++] = (struct atoll_image_extent){ poff, plen, fl };
				} else {
					goto full;
				}
			}
		}
full:
		result = (int64_t)ne;
	}
	atoll_completion_finish(bc->comp, result, 0);
	free(bc);
}

/* ---- synchronous object helpers (resize, rollback; I/O paused) ------- */

static int cow_sync(struct atoll_image *img, uint64_t objno)
{
	struct img_cow *c;
	struct atoll_kv_iter *xa = NULL;
	struct atoll_op *op = NULL;
	char oid[IMG_OID_MAX], soid[IMG_OID_MAX], seq[24];
	char *buf = NULL;
	size_t n = 0;
	bool absent = false, found;
	uint64_t snap;
	int r;

	pthread_mutex_lock(&img->lock);
	snap = img->latest_snap;
	c = snap ? cow_find(img, objno, true) : NULL;
	if (!snap || (c && c->state == 1)) {
		pthread_mutex_unlock(&img->lock);
		return 0;
	}
	pthread_mutex_unlock(&img->lock);
	if (!c)
		return -ENOMEM;
	buf = malloc(img->object_size);
	op = atoll_op_create(0);
	r = -ENOMEM;
	if (!buf || !op)
		goto out;
	img_oid_data(oid, img->id, objno);
	atoll_op_read(op, 0, img->object_size, buf, &n, NULL);
	atoll_op_getxattr(op, "snapseq", &xa, NULL);
	r = atoll_op_operate(op, img->io, oid, 0);
	if (r == -ENODATA) {
		atoll_kv_iter_free(xa);
		xa = NULL;
		n = 0;
		r = (int)atoll_read(img->io, oid, buf, img->object_size, 0, 0);
		if (r >= 0) {
			n = (size_t)r;
			r = 0;
		}
	}
	if (r == -ENOENT) {
		absent = true;
		n = 0;
	} else if (r < 0) {
		goto out;
	} else if (xattr_u64(xa, "snapseq", &found) >= snap && found) {
		goto done;
	}
	atoll_op_release(op);
	op = atoll_op_create(0);
	r = -ENOMEM;
	if (!op)
		goto out;
	img_oid_snap(soid, img->id, snap, objno);
	atoll_op_write_full(op, buf, n);
	atoll_op_setxattr(op, "absent", absent ? "1" : "0", 1);
	r = atoll_op_operate(op, img->io, soid, 0);
	if (r)
		goto out;
	atoll_op_release(op);
	op = atoll_op_create(0);
	r = -ENOMEM;
	if (!op)
		goto out;
	snprintf(seq, sizeof(seq), "%" PRIu64, snap);
	atoll_op_create_object(op, 0);
	atoll_op_setxattr(op, "snapseq", seq, strlen(seq));
	r = atoll_op_operate(op, img->io, oid, 0);
	if (r)
		goto out;
done:
	r = 0;
	pthread_mutex_lock(&img->lock);
	c->state = 1;
	pthread_mutex_unlock(&img->lock);
out:
	atoll_kv_iter_free(xa);
	atoll_op_release(op);
	free(buf);
	return r;
}

int img_obj_trim(struct atoll_image *img, uint64_t objno, uint64_t newlen)
{
	char oid[IMG_OID_MAX];
	struct atoll_op *op;
	int r = cow_sync(img, objno);

	if (r)
		return r;
	op = atoll_op_create(0);
	if (!op)
		return -ENOMEM;
	img_oid_data(oid, img->id, objno);
	if (newlen == 0 && img->latest_snap == 0) {
		atoll_op_remove(op);
	} else {
		atoll_op_assert_exists(op);
		atoll_op_truncate(op, newlen);
	}
	r = atoll_op_operate(op, img->io, oid, 0);
	atoll_op_release(op);
	return r == -ENOENT ? 0 : r;
}

int img_obj_write_full(struct atoll_image *img, uint64_t objno, const void *buf,
		       size_t len, bool absent)
{
	char oid[IMG_OID_MAX];
	int r;

	if (absent)
		return img_obj_trim(img, objno, 0);
	r = cow_sync(img, objno);
	if (r)
		return r;
	img_oid_data(oid, img->id, objno);
	return atoll_write_full(img->io, oid, buf, len, 0);
}

/* What snapshot snap holds of objno: 1 and the data (*n bytes) or
 * *absent when a preserved copy holds it, 0 when the head still does. */
int64_t img_obj_read_at(struct atoll_image *img, uint64_t snap, uint64_t objno,
			void *buf, bool *absent)
{
	for (uint32_t i = 0; i < img->hdr.nsnaps; i++) {
		struct atoll_kv_iter *xa = NULL;
		struct atoll_op *op;
		char oid[IMG_OID_MAX];
		size_t n = 0;
		bool found;
		int r;

		if (img->hdr.snaps[i].id < snap)
			continue;
		op = atoll_op_create(0);
		if (!op)
			return -ENOMEM;
		img_oid_snap(oid, img->id, img->hdr.snaps[i].id, objno);
		atoll_op_read(op, 0, img->object_size, buf, &n, NULL);
		atoll_op_getxattr(op, "absent", &xa, NULL);
		r = atoll_op_operate(op, img->io, oid, 0);
		atoll_op_release(op);
		if (r == -ENOENT) {
			atoll_kv_iter_free(xa);
			continue;
		}
		if (r < 0) {
			atoll_kv_iter_free(xa);
			return r;
		}
		*absent = xattr_u64(xa, "absent", &found) == 1;
		atoll_kv_iter_free(xa);
		memset((char *)buf + n, 0, img->object_size - n);
		return *absent ? 1 : (int64_t)n + 1;
	}
	return 0;
}
