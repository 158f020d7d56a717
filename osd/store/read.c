/*
 * read.c - reads: object data with libaio, attributes, omap, listings.
 *
 * A data read looks its object up in an LMDB read transaction (a
 * consistent snapshot), turns the chunks it touches into a few physical
 * reads (consecutive blocks coalesce into one aio), submits them and
 * returns; the read-completion thread checks every block's crc32c as it
 * arrives, decompresses compressed chunks, copies into the caller's buffer
 * (or reads straight into it when the request is block-aligned) and calls
 * back.  Nothing is cached: O_DIRECT reads come from the device.
 *
 * A read may still be reading blocks that a later commit has freed, so
 * every read registers as a reader with the number of commits visible
 * when it began; freed blocks wait in limbo until no older reader is left.
 *
 * Attribute and omap reads register too: logged kv mutations not yet
 * checkpointed live in the log's overlay (kvoverlay.c), and the reader's number
 * says which of them its kv snapshot lacks; lookups ask the overlay first,
 * listings merge its sorted view with a kv cursor.
 */
#include <errno.h>
#include <stddef.h>
#include <lz4.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "store-int.h"

#define BS STORE_BLOCK_SIZE

/* ---- readers and limbo ------------------------------------------------- */

void reader_enter(struct store *st, struct reader *r)
{
	pthread_mutex_lock(&st->rlock);
	r->seq = st->durable_seq;
	r->prev = st->readers.prev;
	r->next = &st->readers;
	st->readers.prev->next = r;
	st->readers.prev = r;
	pthread_mutex_unlock(&st->rlock);
}

void reader_exit(struct store *st, struct reader *r)
{
	pthread_mutex_lock(&st->rlock);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	pthread_mutex_unlock(&st->rlock);
}

static void limbo_push(struct store *st, uint64_t seq, struct runvec *runs, bool logged)
{
	struct limbo *l;

	if (!runs->n) {
		runvec_free(runs);
		return;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		/* Leaks the blocks until the next open rebuilds the allocator:
		 * safe, never wrong. */
		log_warn("store", "out of memory: %zu freed runs kept until restart", runs->n);
		runvec_free(runs);
		return;
	}
	l->seq = seq;
	l->runs = *runs;
	l->logged = logged;
	memset(runs, 0, sizeof(*runs));
	pthread_mutex_lock(&st->rlock);
	if (st->limbo_tail)
		st->limbo_tail->next = l;
	else
		st->limbo_head = l;
	st->limbo_tail = l;
	pthread_mutex_unlock(&st->rlock);
}

void limbo_add(struct store *st, uint64_t seq, struct runvec *runs)
{
	struct runvec logged = { 0 };

	/* Blocks that the log has versions of wait for its checkpoint too. */
	if (runs->n && wal_split_freed(st, runs, &logged))
		log_warn("store", "out of memory: freed blocks wait for the log's checkpoint");
	limbo_push(st, seq, runs, false);
	limbo_push(st, seq, &logged, true);
}

void limbo_release(struct store *st)
{
	struct limbo *ready = NULL, **tail = &ready, **pp, *last = NULL;
	/* A freed block the log names waits, too, until no log record from
	 * before its freeing commit is left: a stale logged version of it
	 * must never be replayed onto, or read from, its next owner. */
	uint64_t logged = wal_oldest_seq(st);

	pthread_mutex_lock(&st->rlock);
	/* Readers are listed in the order they began, so the first is oldest. */
	uint64_t oldest = st->readers.next != &st->readers ? st->readers.next->seq : UINT64_MAX;

	pp = &st->limbo_head;
	while (*pp && (*pp)->seq <= oldest) {
		struct limbo *l = *pp;

		if (l->logged && l->seq >= logged) {
			last = l;
			pp = &l->next;
			continue;
		}
		*pp = l->next;
		l->next = NULL;
		*tail = l;
		tail = &l->next;
	}
	if (!*pp)
		st->limbo_tail = last;
	pthread_mutex_unlock(&st->rlock);

	if (!ready)
		return;
	pthread_mutex_lock(&st->amutex);
	while (ready) {
		struct limbo *l = ready;

		ready = l->next;
		for (size_t i = 0; i < l->runs.n; i++)
			alloc_put(&st->alloc, l->runs.v[i].start, l->runs.v[i].len);
		runvec_free(&l->runs);
		free(l);
	}
	pthread_mutex_unlock(&st->amutex);
}

/* ---- lookups ------------------------------------------------------------- */

static int read_begin(struct store *st, MDB_txn **t)
{
	return kv_err(mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, t));
}

/* The onode of (coll, oid) in snapshot (t, rseq): a logged version in the
 * overlay (kvoverlay.c) wins over the kv's. */
static int onode_lookup(struct store *st, MDB_txn *t, uint64_t rseq, uint64_t coll,
			const char *oid, struct onode *o)
{
	const void *v;
	void *owned;
	size_t vl;
	int r = oid_check(oid);

	if (r)
		return r;
	r = kvo_lookup(st, NULL, t, KVDB_ONODE, coll, oid, strlen(oid), rseq, &v, &vl, &owned);
	if (r <= 0)
		return r ? r : -ENOENT;
	r = onode_decode(o, v, vl);
	free(owned);
	if (r == -EUCLEAN) {
		log_error("store", "onode of '%s' is damaged", oid);
		return -EIO;
	}
	return r;
}


static int snap_begin(struct store *st, struct reader *rd, MDB_txn **t);
static void snap_end(struct store *st, struct reader *rd, MDB_txn *t);

/* Adds a chunk record's blocks to *arg (a uint64_t). */
static int chunk_blocks_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct chunk ch;

	(void)k;
	(void)kl;
	if (chunk_decode(&ch, v, vl))
		return -EIO;
	*(uint64_t *)arg += chunk_used_blocks(&ch);
	return 0;
}

static int count_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)arg;
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	return 0;
}

int store_stat(struct store *st, uint64_t coll, const char *oid, struct store_stat *out)
{
	struct reader rd;
	MDB_txn *t;
	struct onode o;
	int r;

	if (!st || !out)
		return -EINVAL;
	r = snap_begin(st, &rd, &t);
	if (r)
		return r;
	r = onode_lookup(st, t, rd.vseq, coll, oid, &o);
	if (r)
		goto out;
	memset(out, 0, sizeof(*out));
	out->size = o.size;
	out->is_inline = !(o.flags & ONODE_CHUNKED);
	if (o.flags & ONODE_CHUNKED) {
		int n = kvo_walk(st, t, rd.vseq, st->kv.chunks, o.id, oid, NULL, 0, 0,
				 chunk_blocks_fn, &out->blocks);

		if (n < 0)
			r = n;
	}
	if (!r) {
		int n = kvo_walk(st, t, rd.vseq, st->kv.attrs, o.id, oid, NULL, 0, 0,
				     count_fn, NULL);

		if (n < 0)
			r = n;
		else
			out->nattrs = (uint32_t)n;
	}
	onode_clear(&o);
out:
	snap_end(st, &rd, t);
	return r;
}

int store_size(struct store *st, uint64_t coll, const char *oid, uint64_t *size)
{
	struct reader rd;
	MDB_txn *t;
	struct onode o;
	int r;

	if (!st || !size)
		return -EINVAL;
	r = snap_begin(st, &rd, &t);
	if (r)
		return r;
	r = onode_lookup(st, t, rd.vseq, coll, oid, &o);
	if (!r) {
		*size = o.size;
		onode_clear(&o);
	}
	snap_end(st, &rd, t);
	return r;
}

/* ---- data reads ----------------------------------------------------------- */

struct rpiece {
	struct iocb iocb;	/* first: events point back here */
	struct rreq *req;
	uint64_t pblk;
	uint32_t nblk;
	bool compressed;
	bool direct;		/* buf is the caller's buffer */
	uint8_t *buf;
	uint64_t lstart;	/* object offset of buf[0] (uncompressed) */
	uint64_t cstart;	/* compressed: object offset of the chunk */
	uint32_t clen;
	uint8_t lblocks;
	uint32_t crc[CHUNK_BLOCKS];
	int err;
};

struct rreq {
	struct store *st;
	struct reader rd;
	store_read_fn cb;
	void *arg;
	uint32_t *crc_out;	/* NULL, or where the crc of what is returned goes */
	uint8_t *out;
	uint64_t off;
	uint64_t len;		/* bytes to return */
	int pending;		/* aio not yet completed (completion thread) */
	bool polled;		/* on st->rpctx (store_read_poll_start) */
	size_t n, cap;
	struct rpiece **pieces;
	/* Most reads need one piece: it lives here, saving two allocations. */
	struct rpiece *one;
	struct rpiece first;
};

static void rreq_free(struct rreq *q)
{
	for (size_t i = 0; i < q->n; i++) {
		if (!q->pieces[i]->direct)
			free(q->pieces[i]->buf);
		if (q->pieces[i] != &q->first)
			free(q->pieces[i]);
	}
	if (q->pieces != &q->one)
		free(q->pieces);
	free(q);
}

static struct rpiece *rreq_piece(struct rreq *q)
{
	struct rpiece *p;

	if (q->n == 0) {
		q->pieces = &q->one;
		q->cap = 1;
		p = &q->first;
		memset(p, 0, offsetof(struct rpiece, crc));	/* crc[] is filled as needed */
		p->err = 0;
		p->req = q;
		q->pieces[q->n++] = p;
		return p;
	}
	if (q->n == q->cap) {
		size_t cap = q->cap * 4;
		struct rpiece **v = malloc(cap * sizeof(*v));

		if (!v)
			return NULL;
		memcpy(v, q->pieces, q->n * sizeof(*v));
		if (q->pieces != &q->one)
			free(q->pieces);
		q->pieces = v;
		q->cap = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->req = q;
	q->pieces[q->n++] = p;
	return p;
}

/* Copies what a completed piece holds into the caller's buffer. */
static int piece_finish(struct rreq *q, struct rpiece *p)
{
	uint64_t qend = q->off + q->len;

	if (p->err)
		return p->err;
	for (uint32_t j = 0; j < p->nblk; j++)
		if (atoll__crc32c(0, p->buf + (size_t)j * BS, BS) != p->crc[j]) {
			log_error("store", "checksum mismatch in block %llu",
				  (unsigned long long)(p->pblk + j));
			return -EIO;
		}
	if (p->compressed) {
		uint8_t *plain = malloc(CHUNK_SIZE);
		int n;

		if (!plain)
			return -ENOMEM;
		n = LZ4_decompress_safe((const char *)p->buf, (char *)plain, (int)p->clen,
					(int)((size_t)p->lblocks * BS));
		if (n != (int)((size_t)p->lblocks * BS)) {
			free(plain);
			log_error("store", "compressed chunk at block %llu does not decompress",
				  (unsigned long long)p->pblk);
			return -EIO;
		}
		uint64_t lo = max_u64(q->off, p->cstart);
		uint64_t hi = min_u64(qend, p->cstart + (uint64_t)p->lblocks * BS);

		if (hi > lo)
			memcpy(q->out + (lo - q->off), plain + (lo - p->cstart), hi - lo);
		free(plain);
		return 0;
	}
	if (!p->direct) {
		uint64_t lo = max_u64(q->off, p->lstart);
		uint64_t hi = min_u64(qend, p->lstart + (uint64_t)p->nblk * BS);

		memcpy(q->out + (lo - q->off), p->buf + (lo - p->lstart), hi - lo);
	}
	return 0;
}

/* The crc32c of the bytes a finished request returns.  Blocks read from
 * the device straight into the caller's buffer had their stored crcs
 * verified (piece_finish), so those are joined in through a table; only
 * the rest (holes, logged blocks, partial or compressed blocks, inline
 * data) is read again.  For a 4 MiB read that is 1,024 table lookups
 * instead of a pass over 4 MiB, which the OSD hands to the messenger as
 * the reply's data crc. */
static uint32_t rreq_crc(const struct rreq *q)
{
	const struct crc32c_shift *block_shift = atoll__crc32c_shift_4k();
	uint64_t pos = q->off, end = q->off + q->len;
	uint32_t crc = 0;

	for (size_t i = 0; i < q->n; i++) {
		const struct rpiece *p = q->pieces[i];

		if (!p->direct || p->lstart < pos)
			continue;
		crc = atoll__crc32c(crc, q->out + (pos - q->off), p->lstart - pos);
		for (uint32_t j = 0; j < p->nblk; j++)
			crc = atoll__crc32c_shift_combine(block_shift, crc, p->crc[j]);
		pos = p->lstart + (uint64_t)p->nblk * BS;
	}
	return atoll__crc32c(crc, q->out + (pos - q->off), end - pos);
}

static void rreq_complete(struct rreq *q)
{
	struct store *st = q->st;
	int64_t r = (int64_t)q->len;

	for (size_t i = 0; i < q->n && r >= 0; i++) {
		int e = piece_finish(q, q->pieces[i]);

		if (e)
			r = e;
	}
	if (r >= 0 && q->crc_out)
		*q->crc_out = rreq_crc(q);
	bool polled = q->polled;

	reader_exit(st, &q->rd);
	q->cb(q->arg, r);
	rreq_free(q);
	pthread_mutex_lock(&st->rlock);
	if (!polled)
		st->reads_thread--;
	if (--st->reads_inflight == 0)
		pthread_cond_broadcast(&st->rcond);
	pthread_mutex_unlock(&st->rlock);
}

/* Finishes the pieces of n completed read events. */
static void reap_events(struct io_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		struct rpiece *p = (struct rpiece *)ev[i].obj;
		struct rreq *q = p->req;

		if ((long)ev[i].res != (long)((size_t)p->nblk * BS))
			p->err = -EIO;
		if (__atomic_sub_fetch(&q->pending, 1, __ATOMIC_ACQ_REL) == 0)
			rreq_complete(q);
	}
}

/* Reaps the reads of ctx that completed, at least min_nr of them
 * (waiting at most timeout); returns io_getevents' result. */
static int reap(io_context_t ctx, long min_nr, struct timespec *timeout)
{
	struct io_event ev[128];
	int n = io_getevents(ctx, min_nr, 128, ev, timeout);

	if (n > 0)
		reap_events(ev, n);
	return n;
}

static void *read_main(void *arg)
{
	struct store *st = arg;

	pthread_setname_np(pthread_self(), "store-read");
	for (;;) {
		/* Sleep on the condition variable while none of the reads in
		 * flight is ours (the poller's are on rpctx; a close then
		 * wakes us at once); wait in io_getevents only when there are
		 * reads to reap.  The timeout covers a read whose submission
		 * failed after it was counted. */
		struct timespec ts = { 1, 0 };
		bool stop;

		pthread_mutex_lock(&st->rlock);
		while (!st->reads_thread && !st->read_stop)
			pthread_cond_wait(&st->rwork, &st->rlock);
		stop = st->read_stop && !st->reads_thread;
		pthread_mutex_unlock(&st->rlock);
		if (stop)
			break;

		int n = reap(st->rctx, 1, &ts);

		if (n < 0 && n != -EINTR) {
			log_error("store", "io_getevents on the read context failed: %s", strerror(-n));
			break;
		}
	}
	return NULL;
}

int store_read_poll_start(struct store *st, int efd)
{
	int r;

	if (!st || efd < 0 || !st->read_running)
		return -EINVAL;
	pthread_mutex_lock(&st->rlock);
	if (st->read_poll || st->read_efd >= 0) {
		pthread_mutex_unlock(&st->rlock);
		return -EBUSY;
	}
	r = io_setup(512, &st->rpctx);
	if (r) {
		pthread_mutex_unlock(&st->rlock);
		return r;
	}
	st->read_efd = efd;
	st->read_poll_thread = pthread_self();
	__atomic_store_n(&st->read_poll, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&st->rlock);
	return 0;
}

void store_read_poll(struct store *st)
{
	struct timespec zero = { 0, 0 };
	uint64_t v;

	if (read(st->read_efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: reaped already by an earlier call */
	}
	while (reap(st->rpctx, 0, &zero) == 128)
		;
}

/* Reads of up to this many bytes are gathered (read_queue) and, with
 * store_read_poll_start, reaped by the poller; a larger one goes to the
 * device at once (its own transfer dwarfs a submission, and waiting for
 * the end of the loop's pass, which may be sending MiBs of replies, left
 * the device idle: 4 MiB reads lost 13% of their rate) and is reaped by
 * the read thread, whose crc checks of its blocks then run beside the
 * loop instead of on it. */
#define READ_GATHER_MAX (128u << 10)

/* Whether a read of len bytes is reaped by the poller (rlock, or the
 * poller's own thread). */
static bool read_polled(const struct store *st, size_t len)
{
	return __atomic_load_n(&st->read_poll, __ATOMIC_ACQUIRE) && len <= READ_GATHER_MAX;
}

/* The read poller's thread, waiting for one of its own reads of len
 * bytes: it reaps (every small read that completes meanwhile) until w is
 * done. */
static bool read_poll_wait(struct store *st, size_t len, struct sync_waiter *w)
{
	if (!read_polled(st, len) || !pthread_equal(pthread_self(), st->read_poll_thread))
		return false;
	for (;;) {
		struct timespec ts = { 1, 0 };
		bool done;

		pthread_mutex_lock(&w->lock);
		done = w->done;
		pthread_mutex_unlock(&w->lock);
		if (done)
			return true;
		reap(st->rpctx, 1, &ts);
	}
}

int read_thread_start(struct store *st)
{
	int r = io_setup(512, &st->rctx);

	if (r)
		return r;
	r = -pthread_create(&st->read_thread, NULL, read_main, st);
	if (r) {
		io_destroy(st->rctx);
		return r;
	}
	st->read_running = true;
	return 0;
}

void read_thread_stop(struct store *st)
{
	if (!st->read_running)
		return;
	pthread_mutex_lock(&st->rlock);
	/* the poller may be gone: its reads left are reaped here */
	if (st->read_poll) {
		__atomic_store_n(&st->read_poll, false, __ATOMIC_RELEASE);
		while (st->reads_inflight > st->reads_thread) {
			struct timespec ts = { 1, 0 };

			pthread_mutex_unlock(&st->rlock);
			reap(st->rpctx, 1, &ts);
			pthread_mutex_lock(&st->rlock);
		}
		io_destroy(st->rpctx);
	}
	while (st->reads_inflight)
		pthread_cond_wait(&st->rcond, &st->rlock);
	st->read_stop = true;
	pthread_cond_signal(&st->rwork);
	pthread_mutex_unlock(&st->rlock);
	pthread_join(st->read_thread, NULL);
	io_destroy(st->rctx);
	st->read_running = false;
}

/* Plans the physical reads of [q->off, q->off + q->len) of chunked object o. */
static int plan_reads(struct store *st, MDB_txn *t, struct rreq *q, const struct onode *o)
{
	uint64_t end = q->off + q->len;
	struct rpiece *cur = NULL;
	int r;

	for (uint64_t ci = q->off >> CHUNK_SHIFT; ci <= (end - 1) >> CHUNK_SHIFT; ci++) {
		uint64_t cs = ci << CHUNK_SHIFT;
		uint64_t lo = max_u64(q->off, cs), hi = min_u64(end, cs + CHUNK_SIZE);
		struct chunk c;

		r = kvo_chunk_get(st, NULL, t, o->id, (uint32_t)ci, q->rd.vseq, &c);
		if (r)
			return r;
		if (c.flags & CHUNK_COMPRESSED) {
			struct rpiece *p = rreq_piece(q);

			if (!p)
				return -ENOMEM;
			memset(q->out + (lo - q->off), 0, hi - lo);	/* past lblocks: zeros */
			p->compressed = true;
			p->pblk = c.pblk[0];
			p->nblk = c.cblocks;
			p->clen = c.clen;
			p->lblocks = c.lblocks;
			p->cstart = cs;
			memcpy(p->crc, c.crc, sizeof(uint32_t) * c.cblocks);
			cur = NULL;
			continue;
		}
		for (uint64_t lb = lo / BS; lb <= (hi - 1) / BS; lb++) {
			unsigned i = (unsigned)(lb % CHUNK_BLOCKS);

			if (!(c.present & (1ull << i))) {
				uint64_t b0 = max_u64(q->off, lb * BS), b1 = min_u64(end, lb * BS + BS);

				memset(q->out + (b0 - q->off), 0, b1 - b0);	/* a hole */
				cur = NULL;
				continue;
			}
			if (wal_active(st)) {
				/* Logged and not yet in place: copy it from the log's
				 * index (wal.c), as of this reader's snapshot. */
				uint8_t blk[BS] __attribute__((aligned(64)));
				uint64_t b0 = max_u64(q->off, lb * BS), b1 = min_u64(end, lb * BS + BS);

				r = wal_read(st, c.pblk[i], q->rd.vseq, blk);
				if (r < 0)
					return r;
				if (r) {
					memcpy(q->out + (b0 - q->off), blk + (b0 - lb * BS), b1 - b0);
					cur = NULL;
					continue;
				}
			}
			if (cur && cur->pblk + cur->nblk == c.pblk[i] &&
			    cur->lstart + (uint64_t)cur->nblk * BS == lb * BS &&
			    cur->nblk < CHUNK_BLOCKS) {
				cur->crc[cur->nblk++] = c.crc[i];
				continue;
			}
			cur = rreq_piece(q);
			if (!cur)
				return -ENOMEM;
			cur->pblk = c.pblk[i];
			cur->nblk = 1;
			cur->lstart = lb * BS;
			cur->crc[0] = c.crc[i];
		}
		cur = NULL;	/* pieces stay within a chunk (crc array size) */
	}
	/* Buffers: straight into the caller's when the piece lies inside the
	 * request on block boundaries and the address is aligned. */
	for (size_t k = 0; k < q->n; k++) {
		struct rpiece *p = q->pieces[k];
		size_t bytes = (size_t)p->nblk * BS;

		if (!p->compressed && p->lstart >= q->off && p->lstart + bytes <= end &&
		    ((uintptr_t)(q->out + (p->lstart - q->off)) % BS) == 0) {
			p->buf = q->out + (p->lstart - q->off);
			p->direct = true;
		} else {
			p->buf = bio_alloc(bytes);
			if (!p->buf)
				return -ENOMEM;
		}
		io_prep_pread(&p->iocb, st->bfd, p->buf, bytes, (long long)(p->pblk * BS));
	}
	return 0;
}

/* Submits n reads (pieces' iocbs); those the device refuses fail (-EIO)
 * and finish their request if they were its last. */
static void read_submit(io_context_t ctx, struct iocb **v, size_t n)
{
	size_t done = 0;

	while (done < n) {
		int s = io_submit(ctx, (long)(n - done), v + done);

		if (s == -EAGAIN || s == -EINTR)
			continue;
		if (s <= 0) {
			/* They will never complete: fail them here. */
			for (size_t i = done; i < n; i++) {
				struct rpiece *p = (struct rpiece *)v[i];

				p->err = -EIO;
				if (__atomic_sub_fetch(&p->req->pending, 1, __ATOMIC_ACQ_REL) == 0)
					rreq_complete(p->req);
			}
			break;
		}
		done += (size_t)s;
	}
}

/* Submits the queued reads (opt.defer ran it): one io_submit for all. */
static void read_flush(void *arg)
{
	struct store *st = arg;
	struct iocb **v;
	size_t n;

	pthread_mutex_lock(&st->rsub_lock);
	v = st->rsub;
	n = st->rsub_n;
	st->rsub = NULL;
	st->rsub_n = st->rsub_cap = 0;
	st->rsub_scheduled = false;
	pthread_mutex_unlock(&st->rsub_lock);
	/* the store may close once the last of them completes: st is not
	 * touched after the last submission (gathered reads are small: the
	 * poller's when there is one; read_queue gathers none across the
	 * switch) */
	read_submit(st->rsub_polled ? st->rpctx : st->rctx, v, n);
	free(v);
}


/* Queues q's reads for read_flush when the caller's thread defers it
 * (opt.defer); false: the caller submits them now. */
static bool read_queue(struct store *st, struct rreq *q)
{
	bool ok = false;

	if (!st->opt.defer || q->len > READ_GATHER_MAX)
		return false;
	pthread_mutex_lock(&st->rsub_lock);
	/* one batch, one context: a read of the other kind goes at once */
	if (st->rsub_n && st->rsub_polled != q->polled)
		goto out;
	st->rsub_polled = q->polled;
	if (st->rsub_n + q->n > st->rsub_cap) {
		size_t cap = st->rsub_cap ? st->rsub_cap : 64;
		struct iocb **v;

		while (cap < st->rsub_n + q->n)
			cap *= 2;
		v = realloc(st->rsub, cap * sizeof(*v));
		if (!v)
			goto out;
		st->rsub = v;
		st->rsub_cap = cap;
	}
	if (!st->rsub_scheduled) {
		if (!st->opt.defer(read_flush, st))
			goto out;
		st->rsub_scheduled = true;
	}
	for (size_t i = 0; i < q->n; i++)
		st->rsub[st->rsub_n++] = &q->pieces[i]->iocb;
	ok = true;
out:
	pthread_mutex_unlock(&st->rsub_lock);
	return ok;
}

int store_read_async(struct store *st, uint64_t coll, const char *oid, uint64_t off,
		     size_t len, void *buf, store_read_fn cb, void *arg)
{
	return store_read_async_crc(st, coll, oid, off, len, buf, NULL, cb, arg);
}

/* gather: the reads may wait for opt.defer's call (read_queue); never
 * for a caller that waits for them itself (store_read). */
static int read_async(struct store *st, uint64_t coll, const char *oid, uint64_t off,
		      size_t len, void *buf, uint32_t *crc, store_read_fn cb, void *arg,
		      bool gather)
{
	struct rreq *q;
	struct onode o;
	MDB_txn *t;
	int r;

	if (!st || !cb || (len && !buf))
		return -EINVAL;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	memset(q, 0, offsetof(struct rreq, first));
	q->st = st;
	q->cb = cb;
	q->arg = arg;
	q->crc_out = crc;
	q->out = buf;
	q->off = off;
	reader_enter(st, &q->rd);
	r = read_begin(st, &t);
	if (r)
		goto out_exit;
	wal_reader_seq(st, t, &q->rd);
	r = onode_lookup(st, t, q->rd.vseq, coll, oid, &o);
	if (r)
		goto out_abort;
	q->len = off < o.size ? min_u64(len, o.size - off) : 0;
	if (!(o.flags & ONODE_CHUNKED)) {
		uint64_t n = off < o.inline_len ? min_u64(q->len, o.inline_len - off) : 0;

		if (n)
			memcpy(buf, o.inl + off, n);
		memset((uint8_t *)buf + n, 0, q->len - n);	/* past the inline data */
	} else if (q->len) {
		r = plan_reads(st, t, q, &o);
	}
	onode_clear(&o);
	mdb_txn_abort(t);
	if (r)
		goto out_exit;
	if (q->n == 0) {
		/* Nothing to read from the device: answer now. */
		int64_t n = (int64_t)q->len;

		if (crc)
			*crc = atoll__crc32c(0, buf, q->len);
		reader_exit(st, &q->rd);
		rreq_free(q);
		cb(arg, n);
		return 0;
	}
	pthread_mutex_lock(&st->rlock);
	q->polled = read_polled(st, len);
	st->reads_inflight++;
	if (q->polled) {
		for (size_t i = 0; i < q->n; i++)
			io_set_eventfd(&q->pieces[i]->iocb, st->read_efd);
	} else if (st->reads_thread++ == 0) {
		pthread_cond_signal(&st->rwork);
	}
	pthread_mutex_unlock(&st->rlock);
	/* pending counts every piece before the first submit, so that the
	 * completion thread cannot finish the request while we still submit. */
	__atomic_store_n(&q->pending, (int)q->n + 1, __ATOMIC_RELEASE);
	if (!gather || !read_queue(st, q)) {
		struct iocb *ptrs[64];

		for (size_t done = 0; done < q->n;) {
			size_t cnt = min_u64(q->n - done, 64);

			for (size_t i = 0; i < cnt; i++)
				ptrs[i] = &q->pieces[done + i]->iocb;
			read_submit(q->polled ? st->rpctx : st->rctx, ptrs, cnt);
			done += cnt;
		}
	}
	/* Drop the submitter's reference. */
	if (__atomic_sub_fetch(&q->pending, 1, __ATOMIC_ACQ_REL) == 0)
		rreq_complete(q);
	return 0;

out_abort:
	mdb_txn_abort(t);
out_exit:
	reader_exit(st, &q->rd);
	rreq_free(q);
	return r;
}

int store_read_async_crc(struct store *st, uint64_t coll, const char *oid, uint64_t off,
			 size_t len, void *buf, uint32_t *crc, store_read_fn cb, void *arg)
{
	return read_async(st, coll, oid, off, len, buf, crc, cb, arg, true);
}

static void read_wait_done(void *arg, int64_t r)
{
	sync_waiter_done(arg, r);
}

int64_t store_read(struct store *st, uint64_t coll, const char *oid, uint64_t off,
		   size_t len, void *buf)
{
	struct sync_waiter w = SYNC_WAITER_INIT;
	/* not gathered: on the messenger's loop (recovery, scrub) the
	 * deferred submission would wait for this very wait to end */
	int r = read_async(st, coll, oid, off, len, buf, NULL, read_wait_done, &w, false);

	if (r)
		return r;
	read_poll_wait(st, len, &w);
	return sync_waiter_wait(&w);
}

/* ---- attributes and omap ------------------------------------------------- */

static int copy_out(const void *v, size_t vl, void **val, size_t *len)
{
	*val = malloc(vl ? vl : 1);
	if (!*val)
		return -ENOMEM;
	memcpy(*val, v, vl);
	*len = vl;
	return 0;
}

/* A snapshot for attribute and omap reads: a kv read transaction, and a
 * reader registration so that the overlay of logged kv mutations (kvoverlay.c)
 * shows the same state (rd.vseq). */
static int snap_begin(struct store *st, struct reader *rd, MDB_txn **t)
{
	int r;

	reader_enter(st, rd);
	r = read_begin(st, t);
	if (r) {
		reader_exit(st, rd);
		return r;
	}
	wal_reader_seq(st, *t, rd);
	return 0;
}

static void snap_end(struct store *st, struct reader *rd, MDB_txn *t)
{
	mdb_txn_abort(t);
	reader_exit(st, rd);
}

static int id_get(struct store *st, MDB_dbi dbi, uint64_t coll, const char *oid,
		  const void *k, size_t kl, void **val, size_t *len)
{
	uint8_t key[8 + STORE_OMAP_KEY_MAX];
	struct reader rd;
	struct onode o;
	MDB_txn *t;
	const void *v;
	size_t vl;
	int r;

	if (!st || !k || !kl || !val || !len)
		return -EINVAL;
	if (kl > STORE_OMAP_KEY_MAX)
		return -ENAMETOOLONG;
	r = snap_begin(st, &rd, &t);
	if (r)
		return r;
	r = onode_lookup(st, t, rd.vseq, coll, oid, &o);
	if (r)
		goto out;
	/* The overlay first: a logged mutation newer than the kv's state. */
	r = kvo_get(st, kvdb_of(&st->kv, dbi), o.id, k, kl, rd.vseq, val, len);
	if (r >= 0) {
		r = r ? 0 : -ENODATA;
		goto out_clear;
	}
	if (r != -ENOENT)
		goto out_clear;
	r = kv_get(t, dbi, key, key_id(key, o.id, k, kl), &v, &vl);
	if (r == -ENOENT)
		r = -ENODATA;
	if (r == -EIO)
		log_error("store", "checksum mismatch in a value of '%s'", oid);
	if (!r)
		r = copy_out(v, vl, val, len);
out_clear:
	onode_clear(&o);
out:
	snap_end(st, &rd, t);
	return r;
}

int store_getattr(struct store *st, uint64_t coll, const char *oid, const char *name,
		  void **val, size_t *len)
{
	if (!name)
		return -EINVAL;
	return id_get(st, st->kv.attrs, coll, oid, name, strlen(name), val, len);
}

int store_omap_get(struct store *st, uint64_t coll, const char *oid, const void *key,
		   size_t klen, void **val, size_t *vlen)
{
	return id_get(st, st->kv.omap, coll, oid, key, klen, val, vlen);
}

static int id_walk(struct store *st, MDB_dbi dbi, uint64_t coll, const char *oid,
		   const void *after, size_t alen, size_t max, kvo_walk_fn fn, void *arg)
{
	struct reader rd;
	struct onode o;
	MDB_txn *t;
	int r;

	if (alen > STORE_OMAP_KEY_MAX)
		return -ENAMETOOLONG;
	r = snap_begin(st, &rd, &t);
	if (r)
		return r;
	r = onode_lookup(st, t, rd.vseq, coll, oid, &o);
	if (r)
		goto out;
	r = kvo_walk(st, t, rd.vseq, dbi, o.id, oid, after, alen, max, fn, arg);
	onode_clear(&o);
out:
	snap_end(st, &rd, t);
	return r;
}

struct attr_walk {
	store_attr_fn fn;
	void *arg;
};

static int attr_walk_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct attr_walk *w = arg;
	char name[STORE_ATTR_NAME_MAX + 1];

	if (kl > STORE_ATTR_NAME_MAX)
		return -EIO;
	memcpy(name, k, kl);
	name[kl] = 0;
	return w->fn(w->arg, name, v, vl);
}

int store_attrs(struct store *st, uint64_t coll, const char *oid, store_attr_fn fn, void *arg)
{
	struct attr_walk w = { fn, arg };
	int r;

	if (!st || !fn)
		return -EINVAL;
	r = id_walk(st, st->kv.attrs, coll, oid, NULL, 0, 0, attr_walk_fn, &w);
	return r > 0 ? 0 : r;
}

int store_omap_list(struct store *st, uint64_t coll, const char *oid, const void *after,
		    size_t after_len, size_t max, store_kv_fn fn, void *arg)
{
	if (!st || !fn)
		return -EINVAL;
	return id_walk(st, st->kv.omap, coll, oid, after, after_len, max, fn, arg);
}

/* ---- listings --------------------------------------------------------------- */

int store_coll_exists(struct store *st, uint64_t coll)
{
	MDB_txn *t;
	int r;

	if (!st)
		return -EINVAL;
	r = read_begin(st, &t);
	if (r)
		return r;
	r = kv_coll_get(&st->kv, t, coll, NULL);
	mdb_txn_abort(t);
	if (r == -ENOENT)
		return 0;
	return r ? r : 1;
}

struct list_walk {
	store_name_fn fn;
	void *arg;
};

static int list_walk_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct list_walk *w = arg;
	char name[STORE_NAME_MAX + 1];

	(void)v;
	(void)vl;
	if (!kl || kl > STORE_NAME_MAX)
		return -EIO;
	memcpy(name, k, kl);
	name[kl] = 0;
	return w->fn(w->arg, name);
}

int store_list(struct store *st, uint64_t coll, const char *after, size_t max,
	       store_name_fn fn, void *arg)
{
	struct list_walk w = { fn, arg };
	struct reader rd;
	MDB_txn *t;
	int r;

	if (!st || !fn)
		return -EINVAL;
	if (after && (r = oid_check(after)))
		return r;
	r = snap_begin(st, &rd, &t);
	if (r)
		return r;
	r = kv_coll_get(&st->kv, t, coll, NULL);
	/* The collection's onodes: the kv's merged with the logged ones. */
	if (!r)
		r = kvo_walk(st, t, rd.vseq, st->kv.onodes, coll, NULL, after,
				 after ? strlen(after) : 0, max, list_walk_fn, &w);
	snap_end(st, &rd, t);
	return r;
}

int store_colls(struct store *st, store_coll_fn fn, void *arg)
{
	MDB_txn *t;
	MDB_cursor *c;
	MDB_val k, v;
	int r, rc;

	if (!st || !fn)
		return -EINVAL;
	r = read_begin(st, &t);
	if (r)
		return r;
	rc = mdb_cursor_open(t, st->kv.colls, &c);
	if (rc) {
		mdb_txn_abort(t);
		return kv_err(rc);
	}
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		const void *pv;
		size_t pl;
		uint32_t flags = 0;

		if (k.mv_size != 8 || kv_unwrap(&v, &pv, &pl) || pl < 4) {
			r = -EIO;
			break;
		}
		memcpy(&flags, pv, 4);
		r = fn(arg, get_be64(k.mv_data), flags);
		if (r)
			break;
	}
	mdb_cursor_close(c);
	mdb_txn_abort(t);
	if (!r && rc != MDB_NOTFOUND)
		r = kv_err(rc);
	return r;
}

int store_statfs_quick(struct store *st, struct store_statfs *out)
{
	if (!st || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&st->stats_lock);
	out->total = (st->nblocks - st->data_start) * BS;
	out->used = st->stats.used_blocks * BS;
	out->objects = st->stats.objects;
	out->stored = st->stats.stored;
	out->compressed_saved = st->stats.compressed_saved;
	pthread_mutex_unlock(&st->stats_lock);
	out->free = out->total - min_u64(out->used, out->total);
	return 0;
}

int store_statfs(struct store *st, struct store_statfs *out)
{
	MDB_txn *t;
	int r;

	r = store_statfs_quick(st, out);
	if (r)
		return r;
	out->kv_max = st->kv.map_size;
	r = read_begin(st, &t);
	if (r)
		return r;
	r = kv_used_bytes(&st->kv, t, &out->kv_used);
	mdb_txn_abort(t);
	out->kv_held = st->kv.reserve +
		       KV_OVERLAY_COST * __atomic_load_n(&st->deferred_kv_bytes, __ATOMIC_RELAXED);
	return r;
}
