/*
 * checkpoint.c - the write-ahead log's checkpoint and its thread.
 *
 * The newest logged version of each block is written in place (submitted
 * asynchronously while batches go on) and flushed; then one kv transaction
 * applies the logged kv mutations (chunk records among them) in log
 * order, sets the chunk records' crcs and moves the log's checkpoint
 * (meta/wal, meta/seq), synced.  That
 * transaction runs on the checkpointer thread while the commit thread
 * applies the next batches read-only (commit.c); the commit thread then
 * retires what it covered under a new commit number, and the log space
 * before the checkpoint is reused (doc/store.md, "Writing").
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "wal-int.h"

#define BS STORE_BLOCK_SIZE

static int chunk_load(MDB_txn *t, struct kv *kv, uint64_t id, uint32_t idx, struct chunk *c)
{
	uint8_t k[12];
	const void *v;
	size_t vl;
	int r = kv_get(t, kv->chunks, k, key_chunk(k, id, idx), &v, &vl);

	if (r)
		return r;
	return chunk_decode(c, v, vl) ? -EIO : 0;
}

/* Does chunk c (of e's object) map e's block to e's physical block? */
static bool chunk_maps(const struct chunk *c, const struct wal_ent *e)
{
	unsigned i = (unsigned)(e->lblk % CHUNK_BLOCKS);

	return !(c->flags & CHUNK_COMPRESSED) && (c->present & (1ull << i)) &&
	       c->pblk[i] == e->pblk;
}

/* A checkpoint runs in steps, the batches that follow going on meanwhile:
 * begin (commit thread) picks the records (a prefix, each with no reader
 * older than it) and submits the in-place writes of their newest
 * versions, sorted and coalesced; once they are done, prepare (commit
 * thread) makes them durable (a batch's flush after them counts) and
 * collects what the kv transaction covers; the kv transaction (the chunk
 * crcs, the kv mutations, the checkpoint), synced fully, runs on the
 * checkpointer; retire (commit thread) frees the overlay's versions and
 * the log space. */
#define CKPT_QD 128u
/* Blocks in one vectored write at most (the kernel's UIO_MAXIOV). */
#define CKPT_IOV_MAX 1024

struct ckpt_blk {
	uint64_t pblk;
	const uint8_t *data;
};

static int ckpt_blk_cmp(const void *a, const void *b)
{
	const struct ckpt_blk *x = a, *y = b;

	return x->pblk < y->pblk ? -1 : x->pblk > y->pblk;
}

void wal_ckpt_clear(struct ckpt *ck)
{
	free(ck->iov);
	free(ck->w);
	free(ck->cbs);
	free(ck->ents);
	free(ck->ops);
	memset(ck, 0, sizeof(*ck));
}

static void ckpt_fail(struct store *st, const char *what)
{
	log_error("store", "%s; the store stops writing", what);
	pthread_mutex_lock(&st->qlock);
	st->failed = -EIO;
	pthread_mutex_unlock(&st->qlock);
}

static int ckpt_submit(struct store *st)
{
	struct ckpt *ck = &st->wal.ck;

	while (ck->submitted < ck->nw && ck->submitted - ck->done < CKPT_QD) {
		struct iocb *ptrs[CKPT_QD];
		size_t n = 0;

		while (ck->submitted + n < ck->nw && ck->submitted + n - ck->done < CKPT_QD) {
			struct iocb *cb = &ck->cbs[ck->submitted + n];
			struct ckpt_write *cw = &ck->w[ck->submitted + n];

			io_prep_pwritev(cb, st->bfd, cw->iov, cw->iovcnt, (long long)cw->off);
			cb->data = cw;
			ptrs[n++] = cb;
		}
		int s = io_submit(st->cctx, (long)n, ptrs);

		if (s == -EINTR || s == -EAGAIN)
			return 0;	/* try again at the next poll */
		if (s < 0) {
			log_error("store", "io_submit failed: %s", strerror(-s));
			return -EIO;
		}
		ck->submitted += (size_t)s;
	}
	return 0;
}

static int ckpt_begin(struct store *st, uint64_t max_blocks, bool force)
{
	struct wal *w = &st->wal;
	struct ckpt *ck = &w->ck;
	uint64_t oldest, cnt = 0, cost = 0;
	struct ckpt_blk *blks = NULL;
	size_t k = 0, nb = 0;
	struct wal_ent *e;
	int r;

	/* Only records that are durable are written in place: wait for the
	 * flusher's. */
	commit_flush_wait(st);
	oldest = wal_oldest_reader(st);
	/* Nor any record from a kv batch whose commit is not yet durable, or
	 * after one: a crash would drop that record at replay, and its block
	 * must not have changed in place. */
	while (k < w->rn && w->recs[k].seq <= oldest && w->recs[k].seq < st->unsynced_from &&
	       (!max_blocks || cost < max_blocks)) {
		cost += w->recs[k].nblocks;	/* kv mutations count by their size */
		cnt += w->recs[k++].nent;
	}
	if (!k && !force)
		return 0;
	memset(ck, 0, sizeof(*ck));
	ck->t0 = mono_now_ns();
	ck->k = k;
	ck->cnt = cnt;
	if (k == w->rn) {
		ck->lsn_last = w->next_lsn - 1;
		ck->tail = w->head;
	} else {
		ck->lsn_last = w->recs[k - 1].lsn;
		ck->tail = w->recs[k].vpos;
	}
	blks = malloc((cnt ? cnt : 1) * sizeof(*blks));
	if (!blks)
		return -ENOMEM;
	/* The newest version of each block within the prefix; entries stay
	 * (live) until finish, so their data may be read without the lock. */
	pthread_mutex_lock(&w->lock);
	for (e = w->live_head; e && e->lsn <= ck->lsn_last; e = e->lnext) {
		if (e->newer && e->newer->lsn <= ck->lsn_last)
			continue;
		if (e->bad)
			continue;
		blks[nb++] = (struct ckpt_blk){ e->pblk, e->data };
	}
	pthread_mutex_unlock(&w->lock);
	qsort(blks, nb, sizeof(*blks), ckpt_blk_cmp);
	ck->iov = malloc((nb ? nb : 1) * sizeof(*ck->iov));
	ck->w = malloc((nb ? nb : 1) * sizeof(*ck->w));
	ck->cbs = calloc(nb ? nb : 1, sizeof(*ck->cbs));
	if (!ck->iov || !ck->w || !ck->cbs) {
		free(blks);
		wal_ckpt_clear(ck);
		return -ENOMEM;
	}
	/* Written from the index's own buffers: its entries stay until the
	 * checkpoint is retired. */
	for (size_t j = 0; j < nb; j++) {
		struct ckpt_write *last = ck->nw ? &ck->w[ck->nw - 1] : NULL;

		ck->iov[j] = (struct iovec){ (void *)blks[j].data, BS };
		if (last && last->off + last->len == blks[j].pblk * BS &&
		    last->len < IO_MAX_BYTES && last->iovcnt < CKPT_IOV_MAX) {
			last->len += BS;	/* adjacent: one write */
			last->iovcnt++;
		} else {
			ck->w[ck->nw++] = (struct ckpt_write){ blks[j].pblk * BS, BS, &ck->iov[j], 1 };
		}
	}
	free(blks);
	ck->active = true;
	ck->need_flush = ck->nw > 0;
	ck->writes_done = ck->nw == 0;
	ck->flush_mark = __atomic_load_n(&st->flush_gen, __ATOMIC_SEQ_CST);
	r = ckpt_submit(st);
	if (r) {
		ck->err = r;
		ckpt_fail(st, "writing logged blocks in place failed");
	}
	return 1;
}

/* Reaps the checkpoint's writes (waiting for all of them with wait):
 * 1 when all are done, 0 if not yet, -EIO on a failed write. */
static int ckpt_poll(struct store *st, bool wait)
{
	struct ckpt *ck = &st->wal.ck;
	struct io_event ev[CKPT_QD];

	while (!ck->writes_done && !ck->err) {
		int g = io_getevents(st->cctx, wait ? 1 : 0, CKPT_QD, ev, NULL);

		if (g == -EINTR)
			continue;
		if (g < 0) {
			ck->err = -EIO;
			break;
		}
		for (int j = 0; j < g; j++) {
			const struct ckpt_write *cw = ev[j].data;

			if ((long)ev[j].res != (long)cw->len)
				ck->err = -EIO;
		}
		ck->done += (size_t)g;
		if (!ck->err && ckpt_submit(st))
			ck->err = -EIO;
		if (ck->done == ck->nw) {
			ck->writes_done = true;
			ck->flush_mark = __atomic_load_n(&st->flush_gen, __ATOMIC_SEQ_CST);	/* a flush after this covers them */
		} else if (!g && !wait) {
			return 0;
		}
	}
	if (ck->err) {
		ckpt_fail(st, "writing logged blocks in place failed");
		return -EIO;
	}
	return 1;
}

static int ent_chunk_cmp(const void *a, const void *b)
{
	const struct wal_ent *x = *(const struct wal_ent *const *)a;
	const struct wal_ent *y = *(const struct wal_ent *const *)b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->lblk < y->lblk ? -1 : x->lblk > y->lblk;
}

/* Sets, in chunk t's records, the crc of the newest version of each block
 * logged up to the checkpoint (ck->ents), where the chunk still maps the
 * block to where it was logged (not rewritten, dropped or removed since).
 * A lost block (bad) keeps its old content, and now the crc of the content
 * it should have: it reads -EIO until rewritten.  The entries are sorted
 * by object and block, so that each chunk record is loaded and written
 * once and the kv is walked in key order (a checkpoint of ~3,700
 * scattered blocks took ~10 ms in log order). */
static int ckpt_set_crcs(struct store *st, MDB_txn *t)
{
	struct ckpt *ck = &st->wal.ck;
	struct wal_ent **v = ck->ents;
	size_t n = ck->nents;
	int r = 0;

	for (size_t k = 0, g; k < n && !r; k += g) {
		uint32_t idx = (uint32_t)(v[k]->lblk / CHUNK_BLOCKS);
		struct chunk c;
		uint8_t key[12], rec[CHUNK_REC_MAX];
		bool changed = false;

		for (g = 1; k + g < n && v[k + g]->id == v[k]->id &&
			    v[k + g]->lblk / CHUNK_BLOCKS == idx; g++)
			;
		r = chunk_load(t, &st->kv, v[k]->id, idx, &c);
		if (r == -ENOENT) {
			r = 0;
			continue;
		}
		for (size_t j = k; j < k + g && !r; j++)
			if (chunk_maps(&c, v[j])) {
				c.crc[v[j]->lblk % CHUNK_BLOCKS] = v[j]->crc;
				changed = true;
			}
		if (!r && changed)
			r = kv_put(t, st->kv.chunks, key, key_chunk(key, v[k]->id, idx), rec,
				   chunk_encode(&c, rec));
	}
	return r;
}

/* The in-place writes are done: makes them durable, then collects what
 * the kv transaction sets -- the newest version of each logged block and
 * the kv mutations up to the checkpoint -- under the index's lock, since
 * the commit thread goes on adding to both while the checkpointer works.
 * The entries stay (live) until the checkpoint is retired. */
static int ckpt_prepare(struct store *st)
{
	struct wal *w = &st->wal;
	struct ckpt *ck = &w->ck;
	struct wal_ent *e;
	struct kvo_op *o;
	size_t n = 0, m = 0;
	uint64_t t1 = mono_now_ns();

	/* Every flush a flusher started is finished after this: one that
	 * started after the in-place writes were done covers them. */
	commit_flush_wait(st);
	if (ck->need_flush && __atomic_load_n(&st->flush_gen, __ATOMIC_SEQ_CST) == ck->flush_mark) {
		if (fdatasync(st->bfd)) {
			ckpt_fail(st, "flush of the block device failed");
			return -EIO;
		}
		__atomic_fetch_add(&st->flush_gen, 1, __ATOMIC_SEQ_CST);
	}
	st->perf.ckpt_flush_ns += mono_now_ns() - t1;
	pthread_mutex_lock(&w->lock);
	for (e = w->live_head; e && e->lsn <= ck->lsn_last; e = e->lnext)
		n++;
	for (o = w->kv_live_head; o && o->lsn <= ck->lsn_last; o = o->lnext)
		m++;
	ck->ents = malloc((n ? n : 1) * sizeof(*ck->ents));
	ck->ops = malloc((m ? m : 1) * sizeof(*ck->ops));
	if (!ck->ents || !ck->ops) {
		pthread_mutex_unlock(&w->lock);
		return -ENOMEM;	/* given up: tried again later */
	}
	for (e = w->live_head; e && e->lsn <= ck->lsn_last; e = e->lnext)
		if (!e->newer || e->newer->lsn > ck->lsn_last)	/* the newest wins */
			ck->ents[ck->nents++] = e;
	for (o = w->kv_live_head; o && o->lsn <= ck->lsn_last; o = o->lnext)
		ck->ops[ck->nops++] = o;
	pthread_mutex_unlock(&w->lock);
	qsort(ck->ents, ck->nents, sizeof(*ck->ents), ent_chunk_cmp);
	/* meta/seq: every batch up to here is durable but the kv batch
	 * awaiting its sync, which this commit's sync covers; no kv batch
	 * commits until the checkpoint is retired, so it never goes back. */
	ck->kv_seq = st->commit_seq;
	return 0;
}

/* The checkpoint's kv transaction: the logged kv mutations in log order,
 * then the chunk records' crcs, the log's new tail and meta/seq, committed
 * and synced.  Runs on the checkpointer, or on the commit thread when there is
 * none; it reads only what ckpt_prepare collected.  An error before the
 * commit gives the checkpoint up (tried again later); a failed commit or
 * sync stops the store. */
static int ckpt_kv_run(struct store *st, bool checkpointer)
{
	struct ckpt *ck = &st->wal.ck;
	MDB_txn *t;
	uint64_t t2 = mono_now_ns(), t3;
	int r, rc;

	rc = mdb_txn_begin(st->kv.env, NULL, 0, &t);
	if (rc)
		return kv_err(rc);
	while (checkpointer && __atomic_load_n(&st->test_ckpt_hold, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 1000 * 1000 };

		nanosleep(&ts, NULL);	/* with the write lock */
	}
	/* The mutations first, chunk records among them: the crcs go into
	 * the records as the log leaves them. */
	r = 0;
	for (size_t i = 0; i < ck->nops && !r; i++) {
		const struct kvo_op *o = ck->ops[i];
		MDB_dbi dbi = kvdb_dbi(&st->kv, o->db);
		uint8_t key[KVDB_KEY_MAX];
		size_t kl = kvdb_key(key, o->db, o->id, o->data, o->type == KVOP_CLEAR ? 0 : o->klen);

		if (o->type == KVOP_SET) {
			r = kv_put(t, dbi, key, kl, o->data + o->klen, o->vlen);
		} else if (o->type == KVOP_DEL) {
			r = kv_del(t, dbi, key, kl);
			if (r == -ENOENT)
				r = 0;
		} else {
			int64_t n = kv_del_prefix(t, dbi, key, 8);

			r = n < 0 ? (int)n : 0;
		}
	}
	if (!r)
		r = ckpt_set_crcs(st, t);
	if (!r)
		r = wal_state_put(t, &st->kv, ck->lsn_last, ck->tail);
	if (!r)
		r = kv_seq_put(t, &st->kv, ck->kv_seq);
	if (r) {
		mdb_txn_abort(t);
		return r;
	}
	t3 = mono_now_ns();
	st->perf.ckpt_build_ns += t3 - t2;
	rc = mdb_txn_commit(t);
	t2 = mono_now_ns();
	st->perf.ckpt_commit_ns += t2 - t3;
	if (!rc)
		rc = mdb_env_sync(st->kv.env, 1);
	st->perf.ckpt_sync_ns += mono_now_ns() - t2;
	if (rc) {
		ckpt_fail(st, "the log checkpoint's kv commit failed");
		return -EIO;
	}
	return 0;
}

/* The checkpoint's kv commit is durable (r 0): retires what it covered
 * (commit thread).  Readers that start from now on see the blocks in place
 * and the kv; those before keep the logged versions, visible below a
 * commit number taken now -- a reader can hold a kv snapshot from before
 * the commit only if it started before.  With r < 0 the checkpoint is
 * given up. */
static int64_t ckpt_retire(struct store *st, int r)
{
	struct wal *w = &st->wal;
	struct ckpt *ck = &w->ck;
	uint64_t seq, cnt = ck->cnt;
	struct wal_ent *e;

	if (r) {
		wal_ckpt_clear(ck);
		return r;
	}
	pthread_mutex_lock(&st->alloc_lock);
	/* durable_seq below names every batch committed so far. */
	commit_flush_wait(st);
	seq = ++st->commit_seq;
	pthread_mutex_lock(&w->lock);
	while (w->live_head && w->live_head->lsn <= ck->lsn_last) {
		e = w->live_head;
		if (e->end > seq)
			e->end = seq;
		w->live_head = e->lnext;
		e->lnext = w->retired;
		w->retired = e;
		w->nlive--;
	}
	if (!w->live_head)
		w->live_tail = NULL;
	while (w->kv_live_head && w->kv_live_head->lsn <= ck->lsn_last) {
		struct kvo_op *o = w->kv_live_head;

		o->end = seq;
		w->kv_live_head = o->lnext;
		o->lnext = w->kv_retired;
		w->kv_retired = o;
		w->kv_nlive--;
		w->kv_live_bytes -= sizeof(*o) + o->klen + o->vlen;
	}
	if (!w->kv_live_head)
		w->kv_live_tail = NULL;
	if (ck->k) {
		memmove(w->recs, w->recs + ck->k, (w->rn - ck->k) * sizeof(*w->recs));
		w->rn -= ck->k;
	}
	w->tail = ck->tail;
	w->ckpt_lsn = ck->lsn_last;
	pthread_mutex_unlock(&w->lock);
	st->deferred_blocks = w->nlive;
	__atomic_store_n(&st->deferred_kv_bytes, w->kv_live_bytes, __ATOMIC_RELAXED);
	st->perf.ckpts++;
	st->perf.ckpt_blocks += cnt;
	st->perf.ckpt_kv += ck->nops;
	st->perf.ckpt_ns += mono_now_ns() - ck->t0;
	pthread_mutex_lock(&st->rlock);
	st->durable_seq = st->commit_seq;
	pthread_mutex_unlock(&st->rlock);
	pthread_mutex_unlock(&st->alloc_lock);
	wal_ckpt_clear(ck);
	wal_gc(st);
	limbo_release(st);
	return (int64_t)(cnt ? cnt : 1);
}

/* The writes are done: prepares the kv transaction and hands it to the
 * checkpointer (async, 0: retired later) or runs and retires it here. */
static int64_t ckpt_finish(struct store *st, bool async)
{
	struct ckpt *ck = &st->wal.ck;
	int r = ckpt_prepare(st);

	if (r)
		return ckpt_retire(st, r);
	if (async && st->ckpt_running) {
		pthread_mutex_lock(&st->cklock);
		st->ckjob = true;
		st->ckdone = false;
		pthread_cond_signal(&st->ckcond);
		pthread_mutex_unlock(&st->cklock);
		ck->kv_handed = true;
		return 0;
	}
	return ckpt_retire(st, ckpt_kv_run(st, false));
}

/* Retires the checkpoint handed to the checkpointer once its commit is
 * done; without wait, 0 if it is not done yet. */
static int64_t ckpt_collect(struct store *st, bool wait)
{
	uint64_t t0 = mono_now_ns();
	bool done;
	int r;

	pthread_mutex_lock(&st->cklock);
	while (wait && !st->ckdone)
		pthread_cond_wait(&st->ckcond, &st->cklock);
	done = st->ckdone;
	r = st->ckerr;
	if (done)
		st->ckdone = false;
	pthread_mutex_unlock(&st->cklock);
	if (wait) {
		st->perf.ckpt_wait_ns += mono_now_ns() - t0;
		st->perf.ckpt_waits++;
	}
	return done ? ckpt_retire(st, r) : 0;
}

static void *ckpt_main(void *arg)
{
	struct store *st = arg;

	pthread_setname_np(pthread_self(), "store-ckpt");
	pthread_mutex_lock(&st->cklock);
	for (;;) {
		while (!st->ckjob && !st->ckstop)
			pthread_cond_wait(&st->ckcond, &st->cklock);
		if (!st->ckjob)
			break;
		st->ckjob = false;
		pthread_mutex_unlock(&st->cklock);
		int r = ckpt_kv_run(st, true);

		pthread_mutex_lock(&st->cklock);
		st->ckerr = r;
		st->ckdone = true;
		pthread_cond_broadcast(&st->ckcond);
		pthread_mutex_unlock(&st->cklock);
		/* An idle commit thread retires it now. */
		pthread_mutex_lock(&st->qlock);
		pthread_cond_signal(&st->qcond);
		pthread_mutex_unlock(&st->qlock);
		pthread_mutex_lock(&st->cklock);
	}
	pthread_mutex_unlock(&st->cklock);
	return NULL;
}

int wal_ckpt_thread_start(struct store *st)
{
	int r = -pthread_create(&st->ckpt_thread, NULL, ckpt_main, st);

	if (!r)
		st->ckpt_running = true;
	return r;
}

void wal_ckpt_thread_stop(struct store *st)
{
	if (!st->ckpt_running)
		return;
	wal_ckpt_kv_wait(st);
	pthread_mutex_lock(&st->cklock);
	st->ckstop = true;
	pthread_cond_signal(&st->ckcond);
	pthread_mutex_unlock(&st->cklock);
	pthread_join(st->ckpt_thread, NULL);
	st->ckpt_running = false;
}

bool wal_ckpt_active(const struct store *st)
{
	return st->wal.ck.active;
}

bool wal_ckpt_kv_busy(const struct store *st)
{
	return st->wal.ck.kv_handed;
}

int wal_ckpt_kv_wait(struct store *st)
{
	int64_t n = st->wal.ck.kv_handed ? ckpt_collect(st, true) : 0;

	return n < 0 ? (int)n : 0;
}

/* Waits for the in-place writes of the checkpoint in progress, then
 * finishes it here. */
static int64_t ckpt_complete(struct store *st)
{
	int r = ckpt_poll(st, true);

	if (r < 0) {
		wal_ckpt_clear(&st->wal.ck);
		return r;
	}
	return ckpt_finish(st, false);
}

int64_t wal_ckpt_step(struct store *st, uint64_t max_blocks)
{
	struct ckpt *ck = &st->wal.ck;
	int r;

	if (ck->kv_handed)
		return ckpt_collect(st, false);
	if (!ck->active) {
		r = ckpt_begin(st, max_blocks, false);
		if (r <= 0)
			return r;
	}
	r = ckpt_poll(st, false);
	if (r <= 0) {
		if (r < 0)
			wal_ckpt_clear(ck);
		return r;
	}
	return ckpt_finish(st, true);
}

int64_t wal_checkpoint(struct store *st, uint64_t max_blocks, bool force)
{
	struct ckpt *ck = &st->wal.ck;
	int64_t total = 0, n;
	int r;

	if (ck->active) {
		n = ck->kv_handed ? ckpt_collect(st, true) : ckpt_complete(st);
		if (n < 0 || max_blocks)
			return n;
		total += n;
		force = false;
	}
	r = ckpt_begin(st, max_blocks, force);
	if (r <= 0)
		return r < 0 ? r : total;
	n = ckpt_complete(st);
	return n < 0 ? n : total + n;
}
