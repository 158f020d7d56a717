/*
 * lock.c - the writer lock of an image and the thread that keeps it.
 *
 * The lock is the header object's "lock" xattr: "none", or "client=ID
 * expires=NS cookie=HEX".  Taking it is one compound op that compares the
 * xattr with the value just read and sets ours, so two openers cannot
 * both win; every later change of the header (renewal, resize, snapshot)
 * compares it with our exact value first, so a writer whose lock was
 * broken can no longer change the header, and the blocklist entry made
 * by whoever broke it keeps its data writes out too.
 *
 * The ticker thread renews the lease (every min(lease/3, 1 s)) and, every
 * IMG_TICK_MS, looks for snapshot requests in the header's omap
 * ("req.<cookie>"), which it applies and acknowledges ("ack.<cookie>")
 * in the same compound op that commits the new header.  A writer that
 * cannot renew before its lease ends stops writing (fenced = -EPERM).
 */
#include "image-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int img_blocklist(struct atoll_cluster *c, uint64_t client)
{
	char cmd[160];
	char *status = NULL;
	int r;

	if (!c)
		return -EINVAL;
	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\":\"osd blocklist add\",\"client\":\"%" PRIu64 "\",\"seconds\":%d}",
		 client, IMG_BLOCKLIST_SECONDS);
	r = atoll_mon_command(c, cmd, &status, NULL, NULL);
	atoll_free(status);
	if (r)
		return r;
	/* our next ops carry the epoch with the entry: an OSD that serves
	 * them has it, and refuses the fenced client from then on */
	return atoll_cluster_wait_for_latest_map(c);
}

static int header_oid_op(struct atoll_image *img, struct atoll_op *op)
{
	char oid[IMG_OID_MAX];

	img_oid_header(oid, img->id);
	return atoll_op_operate(op, img->io, oid, 0);
}

int img_lock_acquire(struct atoll_image *img, bool break_lock)
{
	struct img_lockval held, mine;
	char val[IMG_LOCK_MAX];
	uint64_t cookie = 0;
	int r = -EBUSY, tries;

	while (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie))
		;
	for (tries = 0; tries < 10; tries++) {
		struct atoll_op *op;

		r = img_header_read(img->io, img->id, &img->hdr);
		if (r)
			return r;
		if (img_lock_parse(img->hdr.lock, &held) == 0) {
			bool expired = held.expires_ns <= img_now_ns();

			if (held.client == atoll_cluster_id(img->c) || (!expired && !break_lock))
				return -EBUSY;
			/* a dead (or expired) writer: fence it before taking over */
			r = img_blocklist(img->c, held.client);
			if (r)
				return r;
		}
		mine.client = atoll_cluster_id(img->c);
		mine.expires_ns = img_now_ns() + (uint64_t)img->lease_ms * 1000000ull;
		mine.cookie = cookie;
		img_lock_format(val, &mine);
		op = atoll_op_create(0);
		if (!op)
			return -ENOMEM;
		atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, img->hdr.lock, strlen(img->hdr.lock));
		atoll_op_setxattr(op, "lock", val, strlen(val));
		r = header_oid_op(img, op);
		atoll_op_release(op);
		if (r == -ECANCELED)
			continue;	/* changed under us: look again */
		if (r)
			return r;
		pthread_mutex_lock(&img->lock);
		memcpy(img->lockval, val, sizeof(val));
		memcpy(img->hdr.lock, val, sizeof(val));
		img->lv = mine;
		pthread_mutex_unlock(&img->lock);
		return 0;
	}
	return -EBUSY;
}

void img_lock_release(struct atoll_image *img)
{
	struct atoll_op *op = atoll_op_create(0);

	if (!op)
		return;
	pthread_mutex_lock(&img->hdr_mutex);
	atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, img->lockval, strlen(img->lockval));
	atoll_op_setxattr(op, "lock", "none", 4);
	(void)header_oid_op(img, op);	/* lost or gone already: nothing to release */
	pthread_mutex_unlock(&img->hdr_mutex);
	atoll_op_release(op);
}

/* hdr_mutex held. */
static int renew(struct atoll_image *img)
{
	struct img_lockval lv;
	char val[IMG_LOCK_MAX];
	struct atoll_op *op = atoll_op_create(0);
	int r;

	if (!op)
		return -ENOMEM;
	pthread_mutex_lock(&img->lock);
	lv = img->lv;
	pthread_mutex_unlock(&img->lock);
	lv.expires_ns = img_now_ns() + (uint64_t)img->lease_ms * 1000000ull;
	img_lock_format(val, &lv);
	atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, img->lockval, strlen(img->lockval));
	atoll_op_setxattr(op, "lock", val, strlen(val));
	r = header_oid_op(img, op);
	atoll_op_release(op);
	pthread_mutex_lock(&img->lock);
	if (r == 0) {
		memcpy(img->lockval, val, sizeof(val));
		memcpy(img->hdr.lock, val, sizeof(val));
		img->lv = lv;
	} else if (r == -ECANCELED || r == -EPERM || r == -ENOENT) {
		img->fenced = -EPERM;	/* broken by someone else, or fenced */
	} else if (img_now_ns() + 1000000000ull >= img->lv.expires_ns) {
		img->fenced = -EPERM;	/* cannot renew in time: stop writing */
	}
	pthread_cond_broadcast(&img->cond);
	pthread_mutex_unlock(&img->lock);
	return r;
}

int img_header_commit(struct atoll_image *img, struct img_header *h)
{
	struct atoll_op *op = atoll_op_create(0);
	char *js = img_header_encode(h);
	char ack[64];
	struct atoll_kv rm, set;
	int r = -ENOMEM;

	if (!op || !js)
		goto out;
	atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, img->lockval, strlen(img->lockval));
	atoll_op_write_full(op, js, strlen(js));
	if (img->cur_req[0]) {
		snprintf(ack, sizeof(ack), "ack.%s", img->cur_req + 4);
		rm = (struct atoll_kv){ img->cur_req, strlen(img->cur_req), NULL, 0 };
		set = (struct atoll_kv){ ack, strlen(ack), "0", 1 };
		atoll_op_omap_rm(op, &rm, 1);
		atoll_op_omap_set(op, &set, 1);
	}
	r = header_oid_op(img, op);
	if (r == 0) {
		if (img->cur_req[0])
			img->cur_req_acked = true;
		pthread_mutex_lock(&img->lock);
		memcpy(h->lock, img->lockval, sizeof(h->lock));
		if (h != &img->hdr)
			img->hdr = *h;
		img->size = h->size;
		img->latest_snap = h->nsnaps ? h->snaps[h->nsnaps - 1].id : 0;
		pthread_mutex_unlock(&img->lock);
	} else if (r == -ECANCELED || r == -EPERM) {
		pthread_mutex_lock(&img->lock);
		img->fenced = -EPERM;
		pthread_mutex_unlock(&img->lock);
		r = -EPERM;
	}
out:
	atoll_op_release(op);
	free(js);
	return r;
}

/* Acknowledges the current request with rc alone (it failed). */
static void ack_only(struct atoll_image *img, int rc)
{
	struct atoll_op *op = atoll_op_create(0);
	char ack[64], val[16];
	struct atoll_kv rm, set;

	if (!op)
		return;
	snprintf(ack, sizeof(ack), "ack.%s", img->cur_req + 4);
	snprintf(val, sizeof(val), "%d", rc);
	rm = (struct atoll_kv){ img->cur_req, strlen(img->cur_req), NULL, 0 };
	set = (struct atoll_kv){ ack, strlen(ack), val, strlen(val) };
	atoll_op_cmpxattr(op, "lock", ATOLL_CMP_EQ, img->lockval, strlen(img->lockval));
	atoll_op_omap_rm(op, &rm, 1);
	atoll_op_omap_set(op, &set, 1);
	(void)header_oid_op(img, op);
	atoll_op_release(op);
}

/* Looks for snapshot requests and applies them (hdr_mutex held). */
static void serve_requests(struct atoll_image *img)
{
	char oid[IMG_OID_MAX];
	struct atoll_kv_iter *it = NULL;
	const void *k, *v;
	size_t kl, vl;
	int more = 0;

	img_oid_header(oid, img->id);
	if (atoll_omap_list(img->io, oid, "req.", 4, 16, &it, &more, 0))
		return;
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		char what[16], snap[ATOLL_IMAGE_NAME_MAX + 1], val[160];
		int r;

		if (kl < 5 || kl >= sizeof(img->cur_req) || memcmp(k, "req.", 4))
			break;
		memcpy(img->cur_req, k, kl);
		img->cur_req[kl] = 0;
		img->cur_req_acked = false;
		r = -EINVAL;
		if (vl < sizeof(val)) {
			memcpy(val, v, vl);
			val[vl] = 0;
			if (sscanf(val, "%15s %96s", what, snap) == 2)
				r = img_snap_apply(img, what, snap);
		}
		if (!img->cur_req_acked)
			ack_only(img, r ? r : -EIO);
		img->cur_req[0] = 0;
	}
	atoll_kv_iter_free(it);
}

static void *ticker_main(void *arg)
{
	struct atoll_image *img = arg;
	uint64_t every = img->lease_ms / 3 < 1000 ? img->lease_ms / 3 : 1000;
	uint64_t next_renew = img_now_ns() + every * 1000000ull;

	pthread_mutex_lock(&img->lock);
	while (!img->stopping) {
		struct timespec ts;
		uint64_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += IMG_TICK_MS * 1000000l;
		if (ts.tv_nsec >= 1000000000l) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000l;
		}
		/* Its own condition: img->cond is broadcast at every request's
		 * completion, which would run a tick (an omap listing, a round
		 * trip to the header's OSD) per request under load. */
		pthread_cond_timedwait(&img->tick_cond, &img->lock, &ts);
		if (img->stopping || img->fenced)
			continue;
		pthread_mutex_unlock(&img->lock);
		pthread_mutex_lock(&img->hdr_mutex);
		now = img_now_ns();
		if (now >= next_renew) {
			renew(img);
			next_renew = now + every * 1000000ull;
		}
		serve_requests(img);
		pthread_mutex_unlock(&img->hdr_mutex);
		pthread_mutex_lock(&img->lock);
	}
	pthread_mutex_unlock(&img->lock);
	return NULL;
}

int img_ticker_start(struct atoll_image *img)
{
	int r = pthread_create(&img->ticker, NULL, ticker_main, img);

	if (r)
		return -r;
	img->ticker_running = true;
	return 0;
}

void img_ticker_stop(struct atoll_image *img)
{
	if (!img->ticker_running)
		return;
	pthread_mutex_lock(&img->lock);
	img->stopping = true;
	pthread_cond_broadcast(&img->tick_cond);
	pthread_mutex_unlock(&img->lock);
	pthread_join(img->ticker, NULL);
	img->ticker_running = false;
}
