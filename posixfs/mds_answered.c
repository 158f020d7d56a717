/*
 * mds_answered.c - the index of answered requests, per client
 * (doc/fs-design.md, "Index of answered requests").
 *
 * A client resends what it was not told is safe (after a lost connection
 * or an MDS restart), flagged MDS_L_REPLAY; the MDS answers a resend it
 * already applied from its first result instead of applying it twice.
 * Two indexes, each keeping every client's last MDS_DONE_MAX requests on
 * its own, so that no amount of work by other clients pushes a client's
 * requests out before it could resend them (it resends at most what the
 * MDS answered ahead of the journal, MDS_JOURNAL_AHEAD_MAX, plus its
 * calls in flight):
 *
 *   done  every answered request with its result and journal entry
 *         (m->lock; the worker adds, the replay and the load too);
 *   ans   the journaled ones, in journal order (m->ans_lock: the
 *         journaler adds), written whole to the object fs.answered each
 *         time a segment rolls, before the segment goes, and loaded at
 *         start before the replay of the current segment.
 *
 * A client's entries go when its session ends (SESSION_END, or its
 * eviction): it never resends after that.  The rings are mds_rings.c's.
 */
#include "mds.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include <atoll/atoll.h>

#include "encode.h"
#include "log.h"

#define SUB "mds"
#define ANS_OID "fs.answered"
/* fs.answered holds at most this many entries (24 bytes each). */
#define ANS_FILE_MAX (1u << 20)

/* ---- the two indexes ------------------------------------------------------- */

/* mds_rings.c finds an entry by its first two u64s. */
_Static_assert(offsetof(struct mds_done, client) == 0 && offsetof(struct mds_done, reqid) == 8 &&
	       offsetof(struct mds_ans, client) == 0 && offsetof(struct mds_ans, reqid) == 8,
	       "an entry starts with its client and its request id");

void mds_done_add(struct mds *m, uint64_t client, uint64_t reqid, int32_t rc,
		  uint64_t ino, uint64_t seq)
{
	struct mds_done *d = mds_rings_add(&m->done, client);

	if (!d) {
		log_warn(SUB, "out of memory noting request %llu of client %llu as answered: "
			 "a resend of it would be applied again", (unsigned long long)reqid,
			 (unsigned long long)client);
		return;
	}
	d->client = client;
	d->reqid = reqid;
	d->rc = rc;
	d->ino = ino;
	d->seq = seq;
}

const struct mds_done *mds_done_find(struct mds *m, uint64_t client, uint64_t reqid)
{
	return mds_rings_find(&m->done, client, reqid);
}

void mds_ans_add(struct mds *m, uint64_t client, uint64_t reqid, uint64_t ino)
{
	if (!reqid)
		return;
	pthread_mutex_lock(&m->ans_lock);
	struct mds_ans *a = mds_rings_add(&m->ans, client);

	if (a) {
		a->client = client;
		a->reqid = reqid;
		a->ino = ino;
	}
	pthread_mutex_unlock(&m->ans_lock);
	if (!a)
		log_warn(SUB, "out of memory noting journaled request %llu of client %llu: "
			 "after a restart a resend of it would be applied again",
			 (unsigned long long)reqid, (unsigned long long)client);
}

/* The client's session ended: it resends nothing from now on. */
void mds_answered_forget(struct mds *m, uint64_t client)
{
	mds_rings_forget(&m->done, client);
	pthread_mutex_lock(&m->ans_lock);
	mds_rings_forget(&m->ans, client);
	pthread_mutex_unlock(&m->ans_lock);
}

struct ans_enc {
	struct enc *e;
	uint32_t n;
};

static int ans_count(void *arg, const void *e)
{
	(void)e;
	return ++((struct ans_enc *)arg)->n >= ANS_FILE_MAX;
}

static int ans_put(void *arg, const void *e)
{
	struct ans_enc *ae = arg;
	const struct mds_ans *a = e;

	if (ae->n-- == 0)
		return 1;
	enc_u64(ae->e, a->client);
	enc_u64(ae->e, a->reqid);
	enc_u64(ae->e, a->ino);
	return 0;
}

/* fs.answered: one section (v1): u32 count, then count times client,
 * request id, inode named; each client's oldest first.  Replaced whole
 * (write_full). */
int mds_ans_store(struct mds *m)
{
	struct ans_enc ae = { 0 };
	struct enc e;
	size_t len;
	int ret;

	enc_init(&e);
	size_t h = enc_begin(&e, 1, 1);
	pthread_mutex_lock(&m->ans_lock);
	if (mds_rings_each(&m->ans, ans_count, &ae))
		log_warn(SUB, "more than %u answered requests to keep in %s: only the first "
			 "%u are", ANS_FILE_MAX, ANS_OID, ANS_FILE_MAX);
	enc_u32(&e, ae.n);
	ae.e = &e;
	mds_rings_each(&m->ans, ans_put, &ae);
	pthread_mutex_unlock(&m->ans_lock);
	enc_end(&e, h);
	uint8_t *buf = enc_take(&e, &len);
	if (!buf) {
		enc_free(&e);
		return -ENOMEM;
	}
	ret = atoll_write_full(m->meta, ANS_OID, buf, len, 0);
	free(buf);
	return ret;
}

/* Loads fs.answered into both indexes (before the replay adds the current
 * segment's requests).  A damaged object is logged and skipped: only the
 * exactly-once answer of an old resend depends on it. */
int mds_ans_load(struct mds *m)
{
	uint8_t *buf = NULL;
	size_t got = 0;
	int ret = mds_store_read(m, ANS_OID, &buf, &got);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	struct dec d, b;
	uint32_t n = 0;
	dec_init(&d, buf, got);
	ret = dec_msg_begin(&d, 1, &b);
	if (!ret) {
		n = dec_count(&b, ANS_FILE_MAX, 24);
		for (uint32_t i = 0; i < n; i++) {
			uint64_t client = dec_u64(&b);
			uint64_t reqid = dec_u64(&b);
			uint64_t ino = dec_u64(&b);
			if (dec_fail(&b, 0))
				break;
			mds_ans_add(m, client, reqid, ino);
			mds_done_add(m, client, reqid, 0, ino, 0);
		}
		ret = dec_end(&d, &b);
	}
	free(buf);
	if (ret) {
		log_warn(SUB, "the index of answered requests (%s) is damaged (%s); "
			 "ignoring it: a resend of a change journaled before the last "
			 "segment may be applied again", ANS_OID, atoll_strerror(ret));
		return 0;
	}
	log_info(SUB, "loaded %u answered request%s from %s", n, n == 1 ? "" : "s", ANS_OID);
	return 0;
}

int mds_answered_init(struct mds *m)
{
	int ret = mds_rings_init(&m->done, sizeof(struct mds_done));

	if (!ret)
		ret = mds_rings_init(&m->ans, sizeof(struct mds_ans));
	pthread_mutex_init(&m->ans_lock, NULL);
	return ret;
}

void mds_answered_fini(struct mds *m)
{
	mds_rings_fini(&m->done);
	mds_rings_fini(&m->ans);
	pthread_mutex_destroy(&m->ans_lock);
}
