/*
 * mds_follow.c - reading the journal's current segment as it grows
 * (doc/fs-design.md, "Standby MDS daemons", "A standby follows the
 * journal").
 *
 * A standby reads fs.journal.head every mds_standby_follow_ms, then the
 * bytes of the current segment it has not read yet (one stat and one read
 * from where it stopped: never the whole segment again), checks each
 * entry as replay does (length, crc32c, sequence numbers that grow) and
 * keeps it, and applies it to its metadata cache with the code an
 * active's commit uses (mds_cache_apply): the entries describe final
 * states, so the cache converges on what the journal says even when the
 * nodes it loads from the objects are older or newer than the entry
 * being applied (the argument is in the design doc).  A roll (the head
 * names another segment), a segment shorter than what it read, or a load
 * that fails drops everything and starts over from the head.
 *
 * At the start of an active (mds_journal_replay), mds_follow_finish reads
 * what is left of the segment from the same position; the replay then
 * writes every entry of the segment to the objects in batches and rolls.
 *
 * A standby writes nothing: this file only reads the metadata pool.  Only
 * the thread that starts the MDS runs it (first as a standby, then in
 * mds_open), so m->follow needs no lock; the cache calls take m->lock as
 * their contract says.
 */
#include "mds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atoll/atoll.h>

#include "encode.h"
#include "log.h"

#define SUB "mds"

int mds_follow_head(struct mds *m, uint64_t *seg)
{
	struct atoll_kv_iter *it = NULL;
	struct atoll_kv key = { "seg", 3, NULL, 0 };
	const void *k, *v;
	size_t kl, vl;
	char num[17];
	int ret;

	*seg = 1;
	ret = atoll_omap_get(m->meta, "fs.journal.head", &key, 1, &it, 0);
	if (ret == 0 && atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0 && vl == 16) {
		memcpy(num, v, 16);
		num[16] = 0;
		*seg = strtoull(num, NULL, 16);
	}
	atoll_kv_iter_free(it);
	return ret == -ENOENT ? 0 : ret;
}

void mds_follow_free(struct mds *m)
{
	struct mds_follow *f = &m->follow;

	for (size_t i = 0; i < f->n; i++)
		free(f->ents[i].p.body);
	free(f->ents);
	f->ents = NULL;
	f->n = f->cap = 0;
}

/* Forgets the segment read, and the cache built from it (a standby). */
static void follow_drop(struct mds *m)
{
	struct mds_follow *f = &m->follow;

	mds_follow_free(m);
	f->seg = f->pos = f->seq = 0;
	f->broken = false;
	if (f->on) {
		pthread_mutex_lock(&m->lock);
		mds_cache_fini(m);
		if (mds_cache_init(m)) {
			log_error(SUB, "out of memory for the metadata cache; exiting");
			exit(1);
		}
		m->ninodes = 0;
		pthread_mutex_unlock(&m->lock);
	}
}

static int keep(struct mds_follow *f, const uint8_t *body, size_t len, const struct mds_txn *t)
{
	if (f->n == f->cap) {
		size_t nc = f->cap ? 2 * f->cap : 256;
		struct mds_fent *ne = realloc(f->ents, nc * sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		f->ents = ne;
		f->cap = nc;
	}
	struct mds_fent *e = &f->ents[f->n];
	e->p.body = malloc(len ? len : 1);
	if (!e->p.body)
		return -ENOMEM;
	memcpy(e->p.body, body, len);
	e->p.len = len;
	e->p.aseq = t->aseq;
	e->client = t->client;
	e->reqid = t->reqid;
	e->res_ino = t->res_ino;
	f->n++;
	return 0;
}

/* Reads segment f->seg from f->pos to its end: keeps every whole, sound
 * entry (and applies it to the cache when following); *nread of them.
 * final (the start's replay): a torn entry is the end, said in the log;
 * else the next round reads from it again.  -ESTALE: the segment is not
 * the one read so far (gone, shorter, sequence numbers going back). */
static int seg_read(struct mds *m, bool final, size_t *nread)
{
	struct mds_follow *f = &m->follow;
	struct mds_txn *t = NULL;
	uint8_t *buf = NULL;
	uint64_t size = 0, mt;
	char oid[64];
	size_t pos = 0;
	int ret;

	*nread = 0;
	mds_store_oid_seg(oid, sizeof(oid), f->seg);
	ret = atoll_stat(m->meta, oid, &size, &mt, 0);
	if (ret == -ENOENT)	/* not written yet; or gone, when it was read */
		return f->pos ? -ESTALE : 0;
	if (ret)
		return ret;
	if (size < f->pos)
		return -ESTALE;
	if (size == f->pos)
		return 0;
	size_t want = (size_t)(size - f->pos);
	buf = malloc(want);
	t = malloc(sizeof(*t));
	if (!buf || !t) {
		ret = -ENOMEM;
		goto out_free;
	}
	int64_t got = atoll_read(m->meta, oid, buf, want, f->pos, 0);
	if (got < 0) {
		ret = got == -ENOENT ? -ESTALE : (int)got;
		goto out_free;
	}
	while (pos < (size_t)got) {
		const uint8_t *body;
		size_t len;
		uint64_t seq;
		if (mds_journal_entry_decode(buf + pos, (size_t)got - pos, &body, &len, &seq)) {
			if (final)
				log_warn(SUB, "journal segment %" PRIu64 " ends with a torn entry "
					 "at byte %" PRIu64 " (never acknowledged); ignoring it",
					 f->seg, f->pos + pos);
			break;
		}
		if (!final && (f->pos + pos) && seq <= f->seq) {
			ret = -ESTALE;	/* entries are appended in order */
			break;
		}
		struct dec d;
		dec_init(&d, body, len);
		if (mds_txn_decode(&d, t) == 0) {
			if (f->on) {
				pthread_mutex_lock(&m->lock);
				t->aseq = ++m->aseq;
				mds_cache_apply(m, t);
				pthread_mutex_unlock(&m->lock);
			}
			if ((ret = keep(f, body, len, t)))
				break;
			(*nread)++;
		}
		if (seq > f->seq)
			f->seq = seq;
		pos += MDS_JOURNAL_FRAME_HDR + len;
	}
	f->pos += pos;
out_free:
	free(t);
	free(buf);
	return ret;
}

int mds_follow_start(struct mds *m)
{
	int ret;

	pthread_mutex_init(&m->lock, NULL);
	ret = mds_cache_init(m);
	if (ret)
		return ret;
	m->follow.on = true;
	return 0;
}

static void publish(struct mds_follow *f)
{
	__atomic_store_n(&f->pub_seg, f->seg, __ATOMIC_RELEASE);
	__atomic_store_n(&f->pub_seq, f->seq, __ATOMIC_RELEASE);
}

void mds_follow_step(struct mds *m)
{
	struct mds_follow *f = &m->follow;
	uint64_t seg;
	size_t n;
	int ret;

	if ((ret = mds_follow_head(m, &seg))) {
		log_debug(SUB, "following the journal: cannot read fs.journal.head (%s); "
			  "trying again", atoll_strerror(ret));
		return;
	}
	if (seg != f->seg) {
		/* a roll: the active applied all of the old segment first */
		if (f->seg)
			log_debug(SUB, "following the journal: segment %" PRIu64 " (was %" PRIu64
				  ")", seg, f->seg);
		follow_drop(m);
		f->seg = seg;
	}
	ret = seg_read(m, false, &n);
	if (ret == -ESTALE && !f->broken && !mds_follow_head(m, &seg) && seg != f->seg) {
		/* it rolled between the two reads: the next round starts there */
		log_debug(SUB, "following the journal: segment %" PRIu64 " (was %" PRIu64 ")",
			  seg, f->seg);
		follow_drop(m);
		f->seg = seg;
	} else if (ret == -ESTALE || f->broken) {
		log_info(SUB, "following the journal: segment %" PRIu64 " is not what it read "
			 "(%s); dropping what it followed and starting over from the head",
			 f->seg, f->broken ? "a load failed" : "gone, shorter or out of order");
		follow_drop(m);
		f->restarts++;
	} else if (ret) {
		log_debug(SUB, "following the journal: cannot read segment %" PRIu64 " (%s); "
			  "trying again", f->seg, atoll_strerror(ret));
	} else if (n) {
		log_debug(SUB, "following the journal: %zu entr%s of segment %" PRIu64 ", up to "
			  "%" PRIu64, n, n == 1 ? "y" : "ies", f->seg, f->seq);
	}
	publish(f);
	pthread_mutex_lock(&m->lock);
	mds_cache_trim(m);
	pthread_mutex_unlock(&m->lock);
}

int mds_follow_finish(struct mds *m, uint64_t seg, size_t *tail)
{
	struct mds_follow *f = &m->follow;
	int ret;

	if (f->seg != seg || f->broken) {
		follow_drop(m);
		f->seg = seg;
	}
	ret = seg_read(m, true, tail);
	if (ret == -ESTALE) {
		/* not the segment it followed: all of it, from the start */
		log_info(SUB, "segment %" PRIu64 " is not what the standby read; replaying "
			 "all of it", seg);
		follow_drop(m);
		f->seg = seg;
		ret = seg_read(m, true, tail);
	}
	if (!ret && f->broken) {
		follow_drop(m);
		f->seg = seg;
		f->on = false;	/* the objects are read after the replay */
		ret = seg_read(m, true, tail);
	}
	publish(f);
	return ret == -ESTALE ? -EIO : ret;
}
