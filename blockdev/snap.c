/*
 * snap.c - snapshots: taking, removing, listing and rolling back.
 *
 * Only the holder of the writer lock changes the snapshot list, with its
 * I/O drained, so its copy-on-write always works for the newest snapshot.
 * A caller that cannot take the lock (a writer such as atoll-nbd holds
 * it) leaves a request in the header's omap ("req.<cookie>" = "create
 * NAME" or "remove NAME") and polls for the writer's "ack.<cookie>",
 * which the writer sets in the very op that commits the new header.
 *
 * Removing snapshot S keeps older snapshots whole: a copy preserved for
 * S also stands for the snapshots between the previous one P and S, so
 * when P has no copy of that object of its own, S's copy is first copied
 * to P's name; only then does the header drop S and its copies go.
 */
#include "image-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static int wait_quiesce(struct atoll_image *img, const char *snap)
{
	struct timespec ts;
	int r = 0;

	if (!img->opt.quiesce)
		return 0;
	pthread_mutex_lock(&img->lock);
	img->quiesce_pending = true;
	img->quiesce_rc = 0;
	pthread_mutex_unlock(&img->lock);
	img->opt.quiesce(img, snap, img->opt.quiesce_arg);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&img->lock);
	while (img->quiesce_pending && r == 0)
		r = pthread_cond_timedwait(&img->cond, &img->lock, &ts);
	r = img->quiesce_pending ? -ETIMEDOUT : img->quiesce_rc;
	img->quiesce_pending = false;
	pthread_mutex_unlock(&img->lock);
	return r;
}

struct mv_ctx {
	struct atoll_image *img;
	uint64_t prev;		/* P, 0 none */
	bool remove;		/* second pass: remove the copies */
	char *buf;
	int err;
};

static int move_copy(const char *oid, void *arg)
{
	struct mv_ctx *m = arg;
	struct atoll_image *img = m->img;
	const char *dot = strrchr(oid, '.');
	struct atoll_kv_iter *xa = NULL;
	struct atoll_op *op;
	char poid[IMG_OID_MAX];
	const void *k, *v;
	size_t kl, vl, n = 0;
	uint64_t objno;
	int r;

	if (m->remove) {
		r = atoll_remove(img->io, oid, 0);
		if (r && r != -ENOENT && !m->err)
			m->err = r;
		return 0;
	}
	if (!m->prev || !dot)
		return 0;
	objno = strtoull(dot + 1, NULL, 16);
	img_oid_snap(poid, img->id, m->prev, objno);
	r = atoll_stat(img->io, poid, NULL, NULL, 0);
	if (r == 0)
		return 0;	/* P has its own copy */
	if (r != -ENOENT)
		return r;
	op = atoll_op_create(0);
	if (!op)
		return -ENOMEM;
	atoll_op_read(op, 0, img->object_size, m->buf, &n, NULL);
	atoll_op_getxattr(op, "absent", &xa, NULL);
	r = atoll_op_operate(op, img->io, oid, 0);
	atoll_op_release(op);
	if (r == 0) {
		char absent = '0';

		if (atoll_kv_iter_next(xa, &k, &kl, &v, &vl) == 0 && vl == 1)
			absent = *(const char *)v;
		op = atoll_op_create(0);
		r = -ENOMEM;
		if (op) {
			atoll_op_write_full(op, m->buf, n);
			atoll_op_setxattr(op, "absent", &absent, 1);
			r = atoll_op_operate(op, img->io, poid, 0);
			atoll_op_release(op);
		}
	}
	atoll_kv_iter_free(xa);
	return r == -ENOENT ? 0 : r;
}

/* The writer applies "create NAME" or "remove NAME" (hdr_mutex held). */
int img_snap_apply(struct atoll_image *img, const char *what, const char *snap)
{
	struct img_header *h = malloc(sizeof(*h));
	const struct img_snap *s;
	char prefix[IMG_OID_MAX];
	struct mv_ctx m = { img, 0, false, NULL, 0 };
	bool create = !strcmp(what, "create");
	int r;

	if (!h)
		return -ENOMEM;
	r = -EINVAL;
	if (img_check_name(snap) || (!create && strcmp(what, "remove")))
		goto out;
	pthread_mutex_lock(&img->lock);
	*h = img->hdr;
	pthread_mutex_unlock(&img->lock);
	s = img_snap_by_name(h, snap);
	if (create) {
		r = -EEXIST;
		if (s)
			goto out;
		r = -ENOSPC;
		if (h->nsnaps >= IMG_SNAPS_MAX)
			goto out;
		r = wait_quiesce(img, snap);
		if (r)
			goto out;
	} else if (!s) {
		r = -ENOENT;
		goto out;
	}
	pthread_mutex_lock(&img->lock);
	r = img->fenced;
	if (!r)
		img_pause_locked(img);
	*h = img->hdr;
	pthread_mutex_unlock(&img->lock);
	if (r)
		goto out_resume;
	if (create) {
		struct img_snap *ns = &h->snaps[h->nsnaps++];

		memset(ns, 0, sizeof(*ns));
		ns->id = ++h->snap_seq;
		ns->size = h->size;
		ns->created_ns = img_now_ns();
		snprintf(ns->name, sizeof(ns->name), "%s", snap);
		r = img_header_commit(img, h);
	} else {
		uint32_t i;
		uint64_t sid;

		s = img_snap_by_name(h, snap);
		i = (uint32_t)(s - h->snaps);
		sid = s->id;
		m.prev = i ? h->snaps[i - 1].id : 0;
		m.buf = malloc(img->object_size);
		r = -ENOMEM;
		if (!m.buf)
			goto out_resume;
		snprintf(prefix, sizeof(prefix), "img_snap.%s.%016" PRIx64 ".", img->id, sid);
		r = img_list_prefix(img->io, prefix, move_copy, &m);
		if (r)
			goto out_resume;
		memmove(&h->snaps[i], &h->snaps[i + 1], (h->nsnaps - i - 1) * sizeof(h->snaps[0]));
		h->nsnaps--;
		r = img_header_commit(img, h);
		if (r)
			goto out_resume;
		m.remove = true;
		(void)img_list_prefix(img->io, prefix, move_copy, &m);	/* leftovers are harmless */
	}
	if (!r) {
		pthread_mutex_lock(&img->lock);
		img_cow_reset(img);
		pthread_mutex_unlock(&img->lock);
	}
out_resume:
	img_resume(img);
out:
	free(m.buf);
	free(h);
	return r;
}

/* Asks the writer holding the lock to apply the request; 1 when nobody
 * holds it any more (the caller then tries to take it). */
static int ask_writer(struct atoll_ioctx *io, const char *name, const char *what,
		      const char *snap, unsigned timeout_ms)
{
	struct img_header *h = malloc(sizeof(*h));
	char oid[IMG_OID_MAX], req[48], ack[48], val[160];
	struct atoll_kv kv;
	uint64_t cookie = 0, deadline;
	struct img_lockval lv;
	int r, polls = 0;

	if (!h)
		return -ENOMEM;
	r = img_header_read_name(io, name, h);
	if (r)
		goto out;
	while (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
		;
	snprintf(req, sizeof(req), "req.%016" PRIx64, cookie);
	snprintf(ack, sizeof(ack), "ack.%016" PRIx64, cookie);
	snprintf(val, sizeof(val), "%s %s", what, snap);
	img_oid_header(oid, h->id);
	kv = (struct atoll_kv){ req, strlen(req), val, strlen(val) };
	r = atoll_omap_set(io, oid, &kv, 1, 0);
	if (r)
		goto out;
	deadline = img_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		struct atoll_kv_iter *it = NULL;
		struct atoll_kv key = { ack, strlen(ack), NULL, 0 };
		const void *k, *v;
		size_t kl, vl;

		usleep(50000);
		r = atoll_omap_get(io, oid, &key, 1, &it, 0);
		if (r == 0 && atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
			char rc[16] = "";

			memcpy(rc, v, vl < sizeof(rc) - 1 ? vl : sizeof(rc) - 1);
			atoll_kv_iter_free(it);
			(void)atoll_omap_rm(io, oid, &key, 1, 0);
			r = atoi(rc);
			goto out;
		}
		atoll_kv_iter_free(it);
		if (img_now_ns() > deadline) {
			r = -ETIMEDOUT;
			break;
		}
		if (++polls % 10 == 0 && img_header_read(io, h->id, h) == 0 &&
		    (img_lock_parse(h->lock, &lv) || lv.expires_ns <= img_now_ns())) {
			r = 1;	/* the writer went away */
			break;
		}
	}
	kv = (struct atoll_kv){ req, strlen(req), NULL, 0 };
	(void)atoll_omap_rm(io, oid, &kv, 1, 0);
out:
	free(h);
	return r;
}

static int snap_request(struct atoll_ioctx *io, const char *name, const char *what,
			const char *snap, unsigned timeout_ms, unsigned flags)
{
	struct atoll_image_open_options o = { sizeof(o), 0, 0, NULL, NULL };
	int tries, r = -EBUSY;

	if (!io || flags || img_check_name(name) || img_check_name(snap))
		return -EINVAL;
	if (!timeout_ms)
		timeout_ms = IMG_SNAP_TIMEOUT_MS;
	for (tries = 0; tries < 5; tries++) {
		struct atoll_image *img = NULL;

		r = atoll_image_open(io, name, &o, &img);
		if (r == 0) {
			pthread_mutex_lock(&img->hdr_mutex);
			r = img_snap_apply(img, what, snap);
			pthread_mutex_unlock(&img->hdr_mutex);
			atoll_image_close(img);
			return r;
		}
		if (r != -EBUSY)
			return r;
		r = ask_writer(io, name, what, snap, timeout_ms);
		if (r != 1)
			return r;
	}
	return -EBUSY;
}

int atoll_image_snap_create(struct atoll_ioctx *io, const char *name,
			    const char *snap, unsigned timeout_ms, unsigned flags)
{
	return snap_request(io, name, "create", snap, timeout_ms, flags);
}

int atoll_image_snap_remove(struct atoll_ioctx *io, const char *name,
			    const char *snap, unsigned timeout_ms, unsigned flags)
{
	return snap_request(io, name, "remove", snap, timeout_ms, flags);
}

int atoll_image_snap_list(struct atoll_ioctx *io, const char *name,
			  atoll_image_snap_cb cb, void *arg)
{
	struct img_header *h;
	int r;

	if (!io || !cb)
		return -EINVAL;
	h = malloc(sizeof(*h));
	if (!h)
		return -ENOMEM;
	r = img_header_read_name(io, name, h);
	for (uint32_t i = 0; !r && i < h->nsnaps; i++) {
		struct atoll_image_snap_info si = {
			sizeof(si), h->snaps[i].id, h->snaps[i].size, h->snaps[i].created_ns,
			h->snaps[i].name,
		};

		r = cb(&si, arg);
	}
	free(h);
	return r;
}

int atoll_image_snap_rollback(struct atoll_ioctx *io, const char *name,
			      const char *snap, unsigned flags)
{
	struct atoll_image_open_options o = { sizeof(o), 0, 0, NULL, NULL };
	struct atoll_image *img = NULL;
	const struct img_snap *s;
	struct img_header *h = NULL;
	uint64_t sid, ssize, osize, n;
	char *buf = NULL;
	int r;

	if (!io || flags || img_check_name(name) || img_check_name(snap))
		return -EINVAL;
	r = atoll_image_open(io, name, &o, &img);
	if (r)
		return r;
	pthread_mutex_lock(&img->hdr_mutex);
	s = img_snap_by_name(&img->hdr, snap);
	r = -ENOENT;
	if (!s)
		goto out;
	sid = s->id;
	ssize = s->size;
	osize = img->object_size;
	h = malloc(sizeof(*h));
	buf = malloc(osize);
	r = -ENOMEM;
	if (!h || !buf)
		goto out;
	pthread_mutex_lock(&img->lock);
	img_pause_locked(img);
	pthread_mutex_unlock(&img->lock);
	/* objects the snapshot spans: restore those changed since it */
	n = (ssize + osize - 1) / osize;
	r = 0;
	for (uint64_t o2 = 0; !r && o2 < n; o2++) {
		bool absent = false;
		int64_t got = img_obj_read_at(img, sid, o2, buf, &absent);

		if (got < 0)
			r = (int)got;
		else if (got > 0)
			r = img_obj_write_full(img, o2, buf, absent ? 0 : (size_t)(got - 1), absent);
	}
	/* past the snapshot's end: nothing */
	for (uint64_t o2 = n; !r && o2 < (img->size + osize - 1) / osize; o2++)
		r = img_obj_trim(img, o2, 0);
	if (!r) {
		pthread_mutex_lock(&img->lock);
		*h = img->hdr;
		pthread_mutex_unlock(&img->lock);
		h->size = ssize;
		r = img_header_commit(img, h);
	}
	img_resume(img);
out:
	pthread_mutex_unlock(&img->hdr_mutex);
	atoll_image_close(img);
	free(buf);
	free(h);
	return r;
}
