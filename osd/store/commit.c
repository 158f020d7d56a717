/*
 * commit.c - the commit thread: group commit and durability.
 *
 * Transactions queue up while a commit is in progress; the commit thread
 * then takes all of them (up to batch_max) as one batch:
 *   1. apply every transaction inside one LMDB write transaction (if one
 *      fails, throw the attempt away and apply the batch again without
 *      it), collecting the data writes; while a log checkpoint's kv
 *      transaction holds LMDB's write lock (checkpoint.c), inside
 *      a read-only one, and a batch that turns out to write the kv waits
 *      for the checkpoint and applies again as a writer;
 *   2. write the data and the batch's log record (small overwrites,
 *      wal.c) with libaio and fdatasync the block, so every block the new
 *      records point at, and every logged block, is durable; a batch that
 *      only logged goes to the flusher threads instead: this thread
 *      submits its record write and applies the next batch, a flusher
 *      reaps the write, flushes and completes it (one flush covers every
 *      batch whose record was written before it began); work that needs
 *      every record durable first waits for the flushers
 *      (commit_flush_wait);
 *   3. commit the kv (MDB_NOMETASYNC: pages synced, meta page written);
 *   4. the sync of step 3 also made the previous batch's meta page
 *      durable, so the previous batch's completions fire now.  When no
 *      batch follows, an explicit mdb_env_sync() makes this one durable.
 * Completions fire in queue order.  Blocks freed by a batch go to the
 * allocator only after that batch is durable and no reader that started
 * before it is still reading (read.c).
 *
 * A failed data write or flush is not retried: after fsync has failed
 * the page state is unknown (the "fsyncgate" lesson), so the store stops
 * taking writes (-EIO) and the operator runs fsck.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "deadline.h"
#include "log.h"

/* Journaled blocks that trigger an apply between batches (16 MiB), and
 * how many one apply takes at most: a batch waits for one apply of 2 MiB
 * at most (measured: 4 MiB slices gave 4 KiB writes a p99 of ~30 ms,
 * 2 MiB ~17 ms, 1 MiB ~12 ms at ~10% less throughput); how long the store
 * must be idle before it applies the rest; how soon to retry when old
 * readers held the journal back. */
#define DEFER_APPLY_BLOCKS 8192u
#define DEFER_APPLY_SLICE 4096u
#define APPLY_IDLE_NS (20ull * 1000 * 1000)
#define APPLY_RETRY_NS (50ull * 1000 * 1000)
/* Logged kv mutations (bytes in memory) that trigger a checkpoint: bounds
 * the overlay's memory and the merge work of readers (kvoverlay.c). */
#define KV_APPLY_BYTES (4u << 20)
/* How often an idle commit thread looks at a checkpoint in progress. */
#define CKPT_POLL_NS (1000ull * 1000)
/* How often the commit thread measures the kv's use for the inline rule
 * once LMDB's high-water mark is past half the map (kv_measure). */
#define KV_INLINE_CHECK_NS (100ull * 1000 * 1000)
/* How long a committed batch waits for the next one to sync it. */
#define SYNC_LINGER_NS (200ull * 1000)

/* A batch that only logged, handed to the flushers with its record
 * write in flight. */
struct flush_item {
	struct flush_item *next;
	struct store_txn *list;		/* in queue order */
	uint64_t seq;
	uint64_t id;			/* handed over in this order */
	struct iocb cb;			/* the record's write */
	void *rec;			/* its buffer, freed once written */
	size_t len;
	bool written;
};

struct done {
	struct store_txn *list;		/* in queue order */
	uint32_t n;			/* transactions in list */
	struct runvec freed;
	uint64_t seq;
	bool active;
};

/* Nothing queued, running, awaiting its sync or with the flushers (qlock). */
static bool idle(const struct store *st)
{
	return !st->qhead && !st->busy && !st->unsynced && !st->flush_pending;
}

static void fire(struct store *st, struct store_txn *list)
{
	uint64_t now = list ? mono_now_ns() : 0;

	while (list) {
		struct store_txn *next = list->next;

		if (list->t_queued && list->t_taken) {
			uint64_t committed = list->t_committed ? list->t_committed : now;

			st->perf.queue_ns += list->t_taken - list->t_queued;
			st->perf.run_ns += committed - list->t_taken;
			st->perf.durable_ns += now - committed;
			st->perf.fired++;
		}

		/* The caller's by-reference write buffers are released before
		 * the completion: once it fires, the store holds none of them
		 * (their bytes are on disk or in the kv journal by now). */
		for (size_t i = 0; i < list->n; i++) {
			struct op *op = &list->ops[i];

			if (op->release) {
				op->release(op->release_arg);
				op->release = NULL;
				if (op->data_ref)
					op->data = NULL;
			}
		}
		if (list->cb)
			list->cb(list->arg, list->result);
		store_txn_free(list);
		list = next;
	}
	pthread_mutex_lock(&st->qlock);
	if (idle(st))
		pthread_cond_broadcast(&st->qidle);
	pthread_mutex_unlock(&st->qlock);
}

static void set_unsynced(struct store *st, bool v)
{
	pthread_mutex_lock(&st->qlock);
	st->unsynced = v;
	pthread_mutex_unlock(&st->qlock);
}

void commit_drain(struct store *st)
{
	if (!st->commit_running)
		return;
	pthread_mutex_lock(&st->qlock);
	while (!idle(st))
		pthread_cond_wait(&st->qidle, &st->qlock);
	pthread_mutex_unlock(&st->qlock);
}

static void fail_all(struct store_txn *list, int r)
{
	for (; list; list = list->next)
		if (!list->result)
			list->result = r;
}

static void set_failed(struct store *st)
{
	pthread_mutex_lock(&st->qlock);
	st->failed = -EIO;
	pthread_mutex_unlock(&st->qlock);
}

/* Flushes the block (unless a test's unsafe option skips it): every write
 * completed before it is durable once it returns 0.  flush_gen counts the
 * flushes started. */
static int flush_block(struct store *st)
{
	if (st->opt.unsafe_skip_data_flush || st->opt.unsafe_skip_log_flush)
		return 0;
	__atomic_fetch_add(&st->flush_gen, 1, __ATOMIC_SEQ_CST);
	if (fdatasync(st->bfd)) {
		log_error("store", "flush of the block device failed: %s; the store stops writing",
			  strerror(errno));
		return -EIO;
	}
	return 0;
}

/* ---- the flushers --------------------------------------------------------- */

/* Completes, in order, the batches handed over that a finished flush made
 * durable (every one up to fdurable), or fails them all once a flush has
 * failed.  Called with flock held by a flusher whose flush just ended;
 * returns with it held.  Only one flusher completes at a time, so the
 * completions keep their order; one that finds another completing leaves
 * its batches to it (that one looks at fdurable again before it stops). */
static void flusher_complete(struct store *st)
{
	uint64_t n = 0;

	if (st->ffiring)
		return;
	st->ffiring = true;
	while (st->fhead && st->fhead != st->fnext &&
	       (st->ferr || st->fhead->id <= st->fdurable)) {
		struct flush_item *it = st->fhead;
		int err = st->ferr;

		st->fhead = it->next;
		if (!st->fhead)
			st->ftail = NULL;
		pthread_mutex_unlock(&st->flock);
		if (err)
			fail_all(it->list, err);
		else {
			pthread_mutex_lock(&st->rlock);
			if (st->durable_seq < it->seq)
				st->durable_seq = it->seq;	/* new readers see it */
			pthread_mutex_unlock(&st->rlock);
		}
		__atomic_fetch_add(&st->perf.fl_batches, 1, __ATOMIC_RELAXED);
		fire(st, it->list);
		free(it);
		n++;
		pthread_mutex_lock(&st->flock);
	}
	st->ffiring = false;
	if (n) {
		pthread_mutex_unlock(&st->flock);
		pthread_mutex_lock(&st->qlock);
		st->flush_pending -= n;
		if (idle(st))
			pthread_cond_broadcast(&st->qidle);
		pthread_mutex_unlock(&st->qlock);
		pthread_mutex_lock(&st->flock);
	}
	if (!st->fhead && !st->fbusy)
		pthread_cond_broadcast(&st->fidle);
}

/* Reaps finished record writes (one flusher at a time; flock held, and
 * released while it waits).  A failed write fails its batch and every
 * later one, and the store stops writing. */
static void flusher_reap(struct store *st)
{
	struct io_event ev[64];
	bool failed = false;
	int g;

	st->freaping = true;
	pthread_mutex_unlock(&st->flock);
	do
		g = io_getevents(st->lctx, 1, 64, ev, NULL);
	while (g == -EINTR);
	if (g < 0)
		log_error("store", "io_getevents failed: %s", strerror(-g));
	pthread_mutex_lock(&st->flock);
	for (int k = 0; k < g; k++) {
		struct flush_item *it = ev[k].data;

		if ((long)ev[k].res != (long)it->len) {
			log_error("store", "write of a log record (%zu bytes) failed: %s", it->len,
				  (long)ev[k].res < 0 ? strerror((int)-(long)ev[k].res) : "short write");
			failed = true;
		}
		free(it->rec);
		it->rec = NULL;
		it->written = true;
		st->fwrites--;
	}
	if (g < 0)
		failed = true;	/* nothing can be known of the writes in flight */
	if (failed && !st->ferr)
		st->ferr = -EIO;
	st->freaping = false;
	/* This flusher flushes what it reaped; another reaps the writes
	 * still in flight meanwhile (one wake-up, not every flusher's). */
	if (st->fwrites)
		pthread_cond_signal(&st->fcond);
	if (failed) {
		pthread_mutex_unlock(&st->flock);
		set_failed(st);
		pthread_mutex_lock(&st->flock);
	}
}

/* A flusher: flushes the block for the batches handed over whose records
 * are written and that no flush has taken yet, then completes what is
 * durable; reaps the record writes when no other flusher does.  While it
 * flushes, another flusher may take the batches written since. */
static void *flusher_main(void *arg)
{
	struct store *st = arg;

	pthread_setname_np(pthread_self(), "store-flush");
	pthread_mutex_lock(&st->flock);
	for (;;) {
		if (st->fnext && st->fnext->written) {
			struct flush_item *last = st->fnext;

			while (last->next && last->next->written)
				last = last->next;
			uint64_t cover = last->id;

			st->fnext = last->next;
			st->fbusy++;
			pthread_mutex_unlock(&st->flock);

			uint64_t t0 = mono_now_ns();
			int fr = flush_block(st);

			__atomic_fetch_add(&st->perf.fl_flush_ns, mono_now_ns() - t0, __ATOMIC_RELAXED);
			__atomic_fetch_add(&st->perf.fl_flushes, 1, __ATOMIC_RELAXED);
			if (fr)
				set_failed(st);
			pthread_mutex_lock(&st->flock);
			st->fbusy--;
			if (fr && !st->ferr)
				st->ferr = fr;
			if (!fr && st->fdurable < cover)
				st->fdurable = cover;
			flusher_complete(st);
			continue;
		}
		if (st->fwrites && !st->freaping) {
			flusher_reap(st);
			continue;
		}
		if (!st->fnext && st->fstop)
			break;
		pthread_cond_wait(&st->fcond, &st->flock);
	}
	pthread_mutex_unlock(&st->flock);
	return NULL;
}

/* Hands a batch that only logged to the flushers, its record (lw, in the
 * buffer rec, which the flushers free) written asynchronously; false if
 * they cannot take it (then the caller writes and flushes itself). */
static bool flusher_write(struct store *st, struct store_txn *list, uint64_t seq,
			  const struct bio_write *lw, void *rec)
{
	struct flush_item *it;
	struct iocb *p;
	int s;

	if (!st->flusher_running || !(it = calloc(1, sizeof(*it))))
		return false;
	it->list = list;
	it->seq = seq;
	it->rec = rec;
	it->len = lw->len;
	io_prep_pwrite(&it->cb, st->bfd, rec, lw->len, (long long)lw->off);
	it->cb.data = it;
	p = &it->cb;
	pthread_mutex_lock(&st->qlock);
	st->flush_pending++;
	pthread_mutex_unlock(&st->qlock);
	/* Submitted under flock: a flusher reaps only writes it counts in
	 * fwrites, and marks them written only once they are in the list. */
	pthread_mutex_lock(&st->flock);
	s = 0;
	if (st->fwrites < FLUSH_WRITES_MAX) {
		do
			s = io_submit(st->lctx, 1, &p);
		while (s == -EINTR);
	}
	if (s != 1) {
		pthread_mutex_unlock(&st->flock);
		pthread_mutex_lock(&st->qlock);
		st->flush_pending--;
		pthread_mutex_unlock(&st->qlock);
		free(it);
		return false;
	}
	st->fwrites++;
	it->id = ++st->fids;
	if (st->ftail)
		st->ftail->next = it;
	else
		st->fhead = it;
	st->ftail = it;
	if (!st->fnext)
		st->fnext = it;
	/* A flusher reaping already takes this write's completion with the
	 * others (and then signals for the rest): wake one only when none is */
	if (!st->freaping)
		pthread_cond_signal(&st->fcond);
	pthread_mutex_unlock(&st->flock);
	return true;
}

/* Stops the flushers once they have completed everything handed over. */
static void flusher_stop(struct store *st)
{
	if (!st->flusher_running)
		return;
	pthread_mutex_lock(&st->flock);
	st->fstop = true;
	pthread_cond_broadcast(&st->fcond);
	pthread_mutex_unlock(&st->flock);
	for (unsigned i = 0; i < st->nflushers; i++)
		pthread_join(st->flusher[i], NULL);
	st->nflushers = 0;
	st->flusher_running = false;
}

void commit_flush_wait(struct store *st)
{
	if (!st->flusher_running)
		return;
	pthread_mutex_lock(&st->flock);
	/* ffiring: a flusher may have taken the last batch off fhead and
	 * be firing it with flock dropped */
	while (st->fhead || st->fbusy || st->ffiring)
		pthread_cond_wait(&st->fidle, &st->flock);
	pthread_mutex_unlock(&st->flock);
}

/* The batch in d is durable: free its blocks (via limbo) and complete. */
static void complete(struct store *st, struct done *d)
{
	if (!d->active)
		return;
	st->unsynced_from = UINT64_MAX;
	limbo_add(st, d->seq, &d->freed);
	limbo_release(st);
	set_unsynced(st, false);
	fire(st, d->list);
	memset(d, 0, sizeof(*d));
}

static void sync_and_complete(struct store *st, struct done *d)
{
	int rc;

	if (!d->active)
		return;
	uint64_t t0 = mono_now_ns();

	st->perf.synced_alone++;
	rc = mdb_env_sync(st->kv.env, 1);
	st->perf.sync_ns += mono_now_ns() - t0;
	st->perf.syncs++;
	if (rc) {
		log_error("store", "key-value store sync failed: %s; the store stops writing",
			  mdb_strerror(rc));
		pthread_mutex_lock(&st->qlock);
		st->failed = -EIO;
		pthread_mutex_unlock(&st->qlock);
		fail_all(d->list, -EIO);
		/* Its blocks may still be referenced by a durable commit. */
		runvec_free(&d->freed);
		st->unsynced_from = UINT64_MAX;
		set_unsynced(st, false);
		fire(st, d->list);
		memset(d, 0, sizeof(*d));
		return;
	}
	complete(st, d);
}

static void batch_reset(struct batch *b, bool undo)
{
	if (b->txn)
		mdb_txn_abort(b->txn);
	b->txn = NULL;
	if (undo) {
		pthread_mutex_lock(&b->st->amutex);
		for (size_t i = 0; i < b->allocated.n; i++)
			alloc_put(&b->st->alloc, b->allocated.v[i].start, b->allocated.v[i].len);
		pthread_mutex_unlock(&b->st->amutex);
	}
	for (size_t i = 0; i < b->nbufs; i++)
		free(b->bufs[i]);
	b->nbufs = 0;
	b->wal.n = 0;
	walb_kv_clear(&b->wal);
	free(b->wal.rec);
	b->wal.rec = NULL;
	b->pend.n = 0;
	b->allocated.n = 0;
	b->freed.n = 0;
}

static void batch_destroy(struct batch *b)
{
	batch_reset(b, false);
	free(b->bufs);
	free(b->pend.v);
	free(b->wal.rec);
	walb_free(&b->wal);
	runvec_free(&b->allocated);
	runvec_free(&b->freed);
}

static int write_meta(struct batch *b)
{
	uint8_t buf[64];
	int r;

	r = kv_put(b->txn, b->st->kv.meta, "stats", 5, buf, stats_encode(&b->stats, buf));
	if (r)
		return r;
	memcpy(buf, &b->next_id, 8);
	r = kv_put(b->txn, b->st->kv.meta, "next_id", 7, buf, 8);
	if (!r)
		r = kv_seq_put(b->txn, &b->st->kv, b->wal.seq);
	return r;
}

/* Writes the batch's copy-on-write data, each write durable when it
 * completes (RWF_DSYNC, as prewritten data is), then its log record (if
 * any), and flushes the block once for the record: after that every block
 * the batch's records point at, and every logged block, is durable.  The
 * data is durable before the record is even written, so no crash leaves
 * a record that names blocks whose data did not land.  With defer, a
 * batch that does not commit the kv has its record prepared in *lw and
 * neither written nor flushed here (1 returned): the flushers write and
 * flush it (flusher_write). */
static int write_data(struct batch *b, bool kv, bool defer, struct bio_write *lw)
{
	struct store *st = b->st;
	struct bio_write rw;
	uint64_t t0 = mono_now_ns();
	int r;

	if (b->pend.n) {
		struct bio_write *w = malloc(b->pend.n * sizeof(*w));

		if (!w)
			return -ENOMEM;
		for (size_t i = 0; i < b->pend.n; i++) {
			w[i].off = b->pend.v[i].pblk * STORE_BLOCK_SIZE;
			w[i].len = b->pend.v[i].nblk * STORE_BLOCK_SIZE;
			w[i].buf = b->pend.v[i].buf;
		}
		r = bio_write_all(st->wctx, st->bfd, w, b->pend.n, bio_data_flags(st));
		free(w);
		st->perf.data_ns += mono_now_ns() - t0;
		if (r)
			return r;
	}
	if (!walb_any(b))
		return 0;
	r = wal_prepare(st, b, kv, defer && !kv ? lw : &rw);
	if (r) {
		log_error("store", "cannot build the batch's log record: %s", strerror(-r));
		return -EIO;
	}
	if (defer && !kv)
		return 1;
	t0 = mono_now_ns();
	r = bio_write_all(st->wctx, st->bfd, &rw, 1, 0);
	st->perf.data_ns += mono_now_ns() - t0;
	if (r)
		return r;
	t0 = mono_now_ns();
	r = flush_block(st);
	st->perf.flush_ns += mono_now_ns() - t0;
	return r;
}

static int64_t apply_journal(struct store *st, struct done *prev, uint64_t max_blocks);

/* Checkpoints every logged kv mutation, so that a batch may write
 * attributes and omap straight into the kv (a record with no room for its
 * mutations): the kv then holds everything the overlay would hide. */
static int kv_flush_overlay(struct store *st, struct done *prev)
{
	while (st->deferred_kv_bytes && !st->failed) {
		int64_t n = apply_journal(st, prev, 0);

		if (n < 0)
			return (int)n;
		if (n == 0) {
			struct timespec ts = { 0, 1000 * 1000 };

			nanosleep(&ts, NULL);	/* old readers hold it back */
		}
	}
	return st->failed ? -EIO : 0;
}

/* Near the kv's end, measure what is really in use (free pages count);
 * LMDB only lets a read transaction look at its free list.  Also decides
 * whether new data may still go inline (b->no_inline): not once half the
 * kv is in use, counting the logged mutations KV_OVERLAY_COST times.  That is measured
 * when an estimate (the last measure, plus what LMDB's high-water mark
 * and the logged mutations grew since) passes the half, and while inline
 * is off, every KV_INLINE_CHECK_NS (deletes may have made room). */
static void kv_measure(struct store *st, struct batch *b)
{
	uint64_t half = st->kv.map_size / 2, pending = KV_OVERLAY_COST * st->deferred_kv_bytes;
	MDB_envinfo info;
	MDB_txn *rt;

	b->kv_measured = false;
	mdb_env_info(st->kv.env, &info);
	uint64_t hw = ((uint64_t)info.me_last_pgno + 1) * st->kv.psize;
	bool near_end = hw + st->kv.reserve + pending > st->kv.map_size;
	uint64_t est = st->kv_inl.used + (hw > st->kv_inl.hw ? hw - st->kv_inl.hw : 0) +
		       (pending > st->kv_inl.pending ? pending - st->kv_inl.pending : 0);
	bool check;

	if (hw + pending <= half) {
		st->kv_no_inline = false;
		check = false;
	} else if (st->kv_no_inline)
		check = mono_now_ns() - st->kv_inl.at >= KV_INLINE_CHECK_NS;
	else
		check = est + pending > half;
	if ((near_end || check) && !mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, &rt)) {
		uint64_t used;

		if (!kv_used_bytes(&st->kv, rt, &used)) {
			b->kv_measured = near_end;
			b->kv_used = used;
			st->kv_no_inline = used + pending > half;
			st->kv_inl.used = used;
			st->kv_inl.hw = hw;
			st->kv_inl.pending = pending;
			st->kv_inl.at = mono_now_ns();
		}
		mdb_txn_abort(rt);
	}
	b->no_inline = st->kv_no_inline;
}

/* Applies, writes and commits one batch; returns true if it committed
 * something to the kv (then it becomes *prev), false if nothing changed
 * or it failed (then its completions fire here, after *prev's). */
static void run_batch(struct store *st, struct store_txn *list, struct done *prev)
{
	struct batch b;
	struct store_txn *t;
	bool kv_direct = !st->kvlog, need_writer;
	int r, rc;

	uint64_t t0 = mono_now_ns();

	prewrite_wait(st, list);
	t0 = mono_now_ns();
	memset(&b, 0, sizeof(b));
	b.st = st;
	uint32_t ntxns = 0;

	for (t = list; t; t = t->next)
		ntxns++;
	st->perf.batches++;
	st->perf.txns += ntxns;
	pthread_mutex_lock(&st->alloc_lock);
	kv_measure(st, &b);
	if (b.kv_measured && !kv_direct) {
		/* Near the kv's end: kv space is what counts now, so the batch
		 * writes attributes and omap straight into the kv (a delete
		 * frees its space at once), after the overlay is in. */
		kv_direct = true;
		if (st->deferred_kv_bytes) {
			pthread_mutex_unlock(&st->alloc_lock);
			r = kv_flush_overlay(st, prev);
			pthread_mutex_lock(&st->alloc_lock);
			st->perf.kv_direct++;
			if (r) {
				fail_all(list, -EIO);
				goto out_unchanged;
			}
			kv_measure(st, &b);
		}
	}
attempt:
	b.wal.seq = st->commit_seq + 1;	/* the number this commit will get */
	b.stats = st->stats;
	b.next_id = st->next_id;
	b.changed = false;
	b.kvlog = !kv_direct;
	/* While the checkpointer commits, a batch that only logs needs no
	 * write lock: it applies read-only, and one that turns out to write
	 * the kv waits for the checkpoint and applies again as a writer. */
	b.ro = wal_ckpt_kv_busy(st);
	if (b.ro) {
		st->perf.ro_batches++;
		kv_write_refused_take();
	}
	rc = mdb_txn_begin(st->kv.env, NULL, b.ro ? MDB_RDONLY : 0, &b.txn);
	if (rc) {
		log_error("store", "cannot begin a key-value transaction: %s", mdb_strerror(rc));
		fail_all(list, kv_err(rc));
		goto out_unchanged;
	}
	for (t = list; t; t = t->next)
		for (size_t i = 0; i < t->n; i++)
			if (t->ops[i].prew)
				t->ops[i].prew->applied = false;
	r = 0;
	need_writer = false;
	for (t = list; t && !r; t = t->next) {
		if (t->result)
			continue;
		r = apply_txn(&b, t);
		/* Refused whatever error the apply code made of it. */
		need_writer = b.ro && (kv_write_refused_take() || b.changed);
		if (need_writer)
			break;
		if (r && !(r == -EOVERFLOW && b.kvlog)) {
			t->result = r;
			batch_reset(&b, true);
			goto attempt;
		}
	}
	if (need_writer) {
		st->perf.ro_retries++;
		batch_reset(&b, true);
		pthread_mutex_unlock(&st->alloc_lock);
		wal_ckpt_kv_wait(st);	/* a checkpoint given up is tried again later */
		pthread_mutex_lock(&st->alloc_lock);
		if (st->failed) {
			fail_all(list, -EIO);
			goto out_unchanged;
		}
		goto attempt;
	}
	/* The batch's counters ride in its record (a replay restores them). */
	if (!r && b.kvlog)
		r = walb_kv_meta(&b);
	if (r == -EOVERFLOW) {
		/* The record has no room for the batch's kv mutations, or a
		 * transaction needs the kv itself (a collection's removal):
		 * checkpoint the overlay and write them into the kv. */
		batch_reset(&b, true);
		pthread_mutex_unlock(&st->alloc_lock);
		r = kv_flush_overlay(st, prev);
		pthread_mutex_lock(&st->alloc_lock);
		kv_direct = true;
		st->perf.kv_direct++;
		if (r) {
			fail_all(list, -EIO);
			goto out_unchanged;
		}
		goto attempt;
	}
	if (r) {
		fail_all(list, r);
		batch_reset(&b, true);
		goto out_unchanged;
	}
	if (!b.changed && !walb_any(&b)) {
		batch_reset(&b, false);
		goto out_unchanged;
	}
	st->perf.apply_ns += mono_now_ns() - t0;
	bool kv = b.changed, deferred = false;
	struct bio_write lw = { 0 };

	/* A kv commit names its batch's seq in the kv (meta/seq), and a
	 * record counts at replay only when every record before it is
	 * there: the flushers' records must be durable first. */
	if (kv)
		commit_flush_wait(st);

	/* A batch that commits the kv anyway (objects created, grown, ...)
	 * gains nothing from logging its attribute and omap mutations: they
	 * go into that commit when no pending overlay mutation is in the way. */
	r = kv ? kvo_batch_to_txn(&b) : 0;
	if (r > 0)
		st->perf.kv_in_commit++;
	if (r >= 0)
		r = kv ? write_meta(&b) : 0;
	if (r) {
		/* Only -ENOSPC in practice: the kv is full to the last page. */
		fail_all(list, r);
		batch_reset(&b, true);
		goto out_unchanged;
	}
	r = write_data(&b, kv, st->flusher_running && !b.freed.n, &lw);
	deferred = r == 1;
	if (deferred)
		r = 0;
	if (!r && walb_any(&b))
		r = wal_publish(st, &b);
	if (r) {
		set_failed(st);
		fail_all(list, -EIO);
		batch_reset(&b, true);
		goto out_unchanged;
	}
	if (kv) {
		t0 = mono_now_ns();
		rc = mdb_txn_commit(b.txn);
		st->perf.kv_ns += mono_now_ns() - t0;
		b.txn = NULL;
		if (!rc)
			st->perf.kv_commits++;
		if (rc) {
			log_error("store", "key-value commit failed: %s", mdb_strerror(rc));
			fail_all(list, kv_err(rc));
			/* A logged record of this batch is on the device and in
			 * the index: the store cannot go on without it. */
			if (rc != MDB_MAP_FULL || walb_any(&b))
				set_failed(st);
			batch_reset(&b, true);
			goto out_unchanged;
		}
	} else {
		/* Only logged: nothing for the kv. */
		mdb_txn_abort(b.txn);
		b.txn = NULL;
		st->perf.wal_only++;
	}
	pthread_mutex_lock(&st->stats_lock);
	st->stats = b.stats;
	pthread_mutex_unlock(&st->stats_lock);
	st->next_id = b.next_id;
	st->commit_seq++;
	{
		uint64_t now = mono_now_ns();

		for (t = list; t; t = t->next)
			t->t_committed = now;
	}
	if (kv && prev->active)
		st->perf.synced_by_next++;
	prewrite_release_unused(st, list);
	pthread_mutex_unlock(&st->alloc_lock);

	if (deferred) {
		/* Complete after the batch before it; new readers see it once
		 * a flusher has made it durable. */
		void *rec = b.wal.rec;

		b.wal.rec = NULL;	/* the flushers free it */
		sync_and_complete(st, prev);
		batch_destroy(&b);
		if (!flusher_write(st, list, st->commit_seq, &lw, rec)) {
			/* Write and flush it here, and complete it after the
			 * batches the flushers hold. */
			uint64_t t1 = mono_now_ns();

			r = bio_write_all(st->wctx, st->bfd, &lw, 1, 0);
			free(rec);
			if (!r)
				r = flush_block(st);
			st->perf.flush_ns += mono_now_ns() - t1;
			commit_flush_wait(st);
			if (r) {
				set_failed(st);
				fail_all(list, -EIO);
			} else {
				pthread_mutex_lock(&st->rlock);
				st->durable_seq = st->commit_seq;
				pthread_mutex_unlock(&st->rlock);
			}
			fire(st, list);
		}
		return;
	}

	/* A batch that wrote its record (and data) and flushed them itself
	 * is durable only once the records the flushers still hold are: at
	 * replay a record counts only when every record before it is there.
	 * (A kv commit waited for them above.)  Its completions come after
	 * theirs too. */
	if (!kv)
		commit_flush_wait(st);

	/* New readers may now see this commit (read.c). */
	pthread_mutex_lock(&st->rlock);
	st->durable_seq = st->commit_seq;
	pthread_mutex_unlock(&st->rlock);

	if (!kv) {
		/* Durable already (the block's flush covered the record):
		 * complete now, after the batch before it. */
		sync_and_complete(st, prev);
		limbo_add(st, st->commit_seq, &b.freed);
		limbo_release(st);
		batch_destroy(&b);
		fire(st, list);
		return;
	}
	/* This commit's page sync made prev's meta page durable. */
	complete(st, prev);
	prev->active = true;
	prev->list = list;
	prev->n = ntxns;
	prev->seq = st->commit_seq;
	st->unsynced_from = prev->seq;
	prev->freed = b.freed;
	memset(&b.freed, 0, sizeof(b.freed));
	set_unsynced(st, true);
	batch_destroy(&b);
	return;

out_unchanged:
	prewrite_release_unused(st, list);
	pthread_mutex_unlock(&st->alloc_lock);
	commit_flush_wait(st);	/* completions in queue order */
	batch_destroy(&b);
	sync_and_complete(st, prev);
	fire(st, list);
}

/* Waits on cond for at most ns nanoseconds. */
static void cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t ns)
{
	struct timespec ts = deadline_ns(CLOCK_REALTIME, ns);

	pthread_cond_timedwait(cond, lock, &ts);
}

/* Applies journaled writes now, making every committed batch durable
 * first (a blob may be applied only once its commit is durable). */
static int64_t apply_journal(struct store *st, struct done *prev, uint64_t max_blocks)
{
	sync_and_complete(st, prev);
	return wal_checkpoint(st, max_blocks, false);
}

/* Makes room in the log for the largest record before a batch: half the
 * log is free (a record may skip the rest of a lap).  Readers older than
 * the oldest records hold them back; they finish soon. */
static void make_room(struct store *st, struct done *prev)
{
	while (wal_free_blocks(st) < 2 * st->wal.rec_max && !st->failed) {
		int64_t n = apply_journal(st, prev, 0);

		if (n < 0)
			break;
		if (n == 0) {
			struct timespec ts = { 0, 1000 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

static void *commit_main(void *arg)
{
	struct store *st = arg;
	struct done prev;
	bool apply_stuck = false;	/* readers hold the journal back */

	pthread_setname_np(pthread_self(), "store-commit");
	memset(&prev, 0, sizeof(prev));
	for (;;) {
		struct store_txn *list, *last;
		uint32_t n = 0;

		pthread_mutex_lock(&st->qlock);
		uint64_t idle_since = mono_now_ns();

		for (;;) {
			uint64_t wait;

			if (st->qhead || st->stopping)
				break;
			if (prev.active) {
				/* A committed batch awaits its sync.  Under load (it held
				 * several transactions), new work arriving within a moment
				 * will carry it: the next commit's flush makes it durable.
				 * A lone transaction is synced at once. */
				wait = prev.n > 1 ? SYNC_LINGER_NS : 0;
			} else if (!st->deferred_blocks && !st->deferred_kv_bytes &&
				   !wal_ckpt_active(st)) {
				pthread_cond_wait(&st->qcond, &st->qlock);
				idle_since = mono_now_ns();
				continue;
			} else if (wal_ckpt_active(st)) {
				/* Move the checkpoint in progress on soon: its writes
				 * (polled) or its kv commit (signalled) finish. */
				wait = CKPT_POLL_NS;
			} else {
				/* Journaled writes wait for a quiet moment (or for old
				 * readers to finish) before they are applied, so that a
				 * brief gap in the load does not cost a flush each. */
				wait = apply_stuck ? APPLY_RETRY_NS : APPLY_IDLE_NS;
			}
			uint64_t now = mono_now_ns();

			if (now - idle_since >= wait) {
				if (!prev.active)
					apply_stuck = false;
				break;
			}
			cond_wait_ns(&st->qcond, &st->qlock, wait - (now - idle_since));
		}
		if (!st->qhead) {
			bool stopping = st->stopping;

			pthread_mutex_unlock(&st->qlock);
			if (prev.active) {
				/* Idle: make the last batch durable now. */
				sync_and_complete(st, &prev);
				continue;
			}
			if ((st->deferred_blocks || st->deferred_kv_bytes || wal_ckpt_active(st)) &&
			    !apply_stuck && !st->failed) {
				if (stopping) {
					apply_stuck = apply_journal(st, &prev, 0) <= 0;
				} else {
					/* Idle: checkpoint everything, without blocking
					 * the batches that may arrive meanwhile. */
					int64_t done = wal_ckpt_step(st, 0);

					apply_stuck = done < 0 || (done == 0 && !wal_ckpt_active(st));
				}
				continue;
			}
			if (stopping)
				break;
			continue;
		}
		list = last = st->qhead;
		n = 1;
		while (last->next && n < st->opt.batch_max) {
			last = last->next;
			n++;
		}
		st->qhead = last->next;
		if (!st->qhead)
			st->qtail = NULL;
		last->next = NULL;
		st->queued -= n;
		st->busy = true;
		pthread_mutex_unlock(&st->qlock);
		{
			uint64_t now = mono_now_ns();

			for (struct store_txn *t = list; t; t = t->next)
				t->t_taken = now;
		}

		make_room(st, &prev);
		run_batch(st, list, &prev);
		apply_stuck = false;
		/* Checkpoints run beside the batches: started when enough is
		 * logged, moved on after every batch (checkpoint.c). */
		if (!st->failed && (wal_ckpt_active(st) ||
				    st->deferred_blocks >= DEFER_APPLY_BLOCKS ||
				    st->deferred_kv_bytes >= KV_APPLY_BYTES ||
				    wal_used_blocks(st) > st->wal.blocks / 4)) {
			wal_ckpt_step(st, DEFER_APPLY_SLICE);
		}

		pthread_mutex_lock(&st->qlock);
		st->busy = false;
		if (!st->qhead && !st->unsynced)
			pthread_cond_broadcast(&st->qidle);
		pthread_mutex_unlock(&st->qlock);
	}
	pthread_mutex_lock(&st->qlock);
	pthread_cond_broadcast(&st->qidle);
	pthread_mutex_unlock(&st->qlock);
	return NULL;
}

int commit_start(struct store *st)
{
	int r = 0;

	st->fstop = false;
	for (unsigned i = 0; i < st->opt.flushers && !r; i++) {
		r = -pthread_create(&st->flusher[i], NULL, flusher_main, st);
		if (!r)
			st->nflushers++;
	}
	st->flusher_running = st->nflushers > 0;
	if (r) {
		flusher_stop(st);
		return r;
	}
	r = wal_ckpt_thread_start(st);
	if (r) {
		flusher_stop(st);
		return r;
	}
	r = -pthread_create(&st->commit_thread, NULL, commit_main, st);
	if (r) {
		wal_ckpt_thread_stop(st);
		flusher_stop(st);
		return r;
	}
	st->commit_running = true;
	return 0;
}

void commit_stop(struct store *st)
{
	if (!st->commit_running)
		return;
	pthread_mutex_lock(&st->qlock);
	st->stopping = true;
	pthread_cond_broadcast(&st->qcond);
	pthread_mutex_unlock(&st->qlock);
	pthread_join(st->commit_thread, NULL);
	st->commit_running = false;
	wal_ckpt_thread_stop(st);	/* retires a checkpoint it still runs */
	flusher_stop(st);
}

int store_queue(struct store *st, struct store_txn *t, store_done_fn cb, void *arg)
{
	int r = 0;

	if (!st || !t) {
		store_txn_free(t);
		return -EINVAL;
	}
	if (st->opt.readonly) {
		store_txn_free(t);
		return -EROFS;
	}
	t->cb = cb;
	t->arg = arg;
	t->result = 0;
	t->next = NULL;
	t->t_queued = mono_now_ns();
	pthread_mutex_lock(&st->qlock);
	if (st->failed)
		r = st->failed;
	else if (st->stopping)
		r = -ESHUTDOWN;
	pthread_mutex_unlock(&st->qlock);
	/* Start the device on large writes now; a failure to prewrite only
	 * means the commit thread writes them itself. */
	if (!r)
		prewrite_submit(st, t);
	pthread_mutex_lock(&st->qlock);
	if (!r) {
		if (st->qtail)
			st->qtail->next = t;
		else
			st->qhead = t;
		st->qtail = t;
		st->queued++;
		if (!st->busy)
			pthread_cond_signal(&st->qcond);
	}
	pthread_mutex_unlock(&st->qlock);
	if (r)
		store_txn_free(t);
	return r;
}

void sync_waiter_done(struct sync_waiter *w, int64_t r)
{
	pthread_mutex_lock(&w->lock);
	w->r = r;
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int64_t sync_waiter_wait(struct sync_waiter *w)
{
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	return w->r;
}

static void apply_done(void *arg, int r)
{
	sync_waiter_done(arg, r);
}

int store_apply(struct store *st, struct store_txn *t)
{
	struct sync_waiter w = SYNC_WAITER_INIT;
	int r = store_queue(st, t, apply_done, &w);

	return r ? r : (int)sync_waiter_wait(&w);
}
