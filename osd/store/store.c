/*
 * store.c - creating, opening and closing a store.
 *
 * mkfs writes the superblock (with a fresh uuid) to the block and the
 * same uuid with the store's geometry into an empty kv.  open checks that
 * the two belong together, loads the counters, rebuilds the allocator
 * from the chunk records and starts the commit and read-completion
 * threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "encode.h"
#include "log.h"
#include "store-int.h"

#define KV_MIN (64ull << 20)

static int opt_copy(const struct store_options *in, struct store_options *out)
{
	if (!in || !in->block_path || !in->kv_path)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	/* Take only the fields the caller's version of the struct has. */
	memcpy(out, in, in->size_of && in->size_of < sizeof(*out) ? in->size_of : sizeof(*out));
	out->size_of = sizeof(*out);
	if (!out->object_max)
		out->object_max = STORE_DEFAULT_OBJECT_MAX;
	if (!out->inline_max)
		out->inline_max = 2048;
	if (out->inline_max > 65536)
		return -EINVAL;
	if (!out->batch_max)
		out->batch_max = 256;
	if (!out->defer_max)
		out->defer_max = 32u << 10;
	if (out->kv_log > STORE_KVLOG_OFF)
		return -EINVAL;
	if (!out->flushers)
		out->flushers = 1;
	if (out->flushers > STORE_FLUSHERS_MAX)
		return -EINVAL;
	return 0;
}

static uint64_t kv_default(uint64_t block_bytes)
{
	uint64_t v = block_bytes / 8;

	return v < KV_MIN ? KV_MIN : v;
}

static int meta_super_put(MDB_txn *t, struct kv *kv, const uint8_t uuid[16], uint64_t nblocks,
			  uint64_t kv_max)
{
	struct enc e;
	size_t h;
	int r;

	enc_init(&e);
	h = enc_begin(&e, 1, 1);
	enc_raw(&e, uuid, 16);
	enc_u32(&e, STORE_FORMAT_VERSION);
	enc_u64(&e, nblocks);
	enc_u64(&e, kv_max);
	enc_end(&e, h);
	r = e.err ? e.err : kv_put(t, kv->meta, "super", 5, e.buf, e.len);
	enc_free(&e);
	return r;
}

static int meta_super_get(MDB_txn *t, struct kv *kv, uint8_t uuid[16], uint64_t *nblocks,
			  uint64_t *kv_max)
{
	struct dec d, body;
	const void *v, *u;
	size_t vl;
	int r;

	r = kv_get(t, kv->meta, "super", 5, &v, &vl);
	if (r)
		return r == -ENOENT ? -EUCLEAN : r;
	dec_init(&d, v, vl);
	if (dec_msg_begin(&d, 1, &body))
		return -EUCLEAN;
	u = dec_raw(&body, 16);
	uint32_t fmt = dec_u32(&body);

	*nblocks = dec_u64(&body);
	*kv_max = dec_u64(&body);
	if (dec_end(&d, &body) || !u || fmt != STORE_FORMAT_VERSION)
		return -EUCLEAN;
	memcpy(uuid, u, 16);
	return 0;
}

/* Writes zeros over a whole regular file, 8 MiB at a time, with O_DIRECT. */
static int prefill(int fd)
{
	const size_t chunk = 8u << 20;
	uint64_t bytes, off;
	void *zero;
	int r;

	r = bio_size(fd, &bytes);
	if (r)
		return r;
	bytes -= bytes % STORE_BLOCK_SIZE;	/* O_DIRECT: whole blocks only */
	zero = bio_alloc(chunk);
	if (!zero)
		return -ENOMEM;
	for (off = 0; off < bytes && !r; off += chunk)
		r = bio_pwrite(fd, zero, (size_t)min_u64(chunk, bytes - off), off);
	free(zero);
	if (!r && fdatasync(fd))
		r = -errno;
	return r;
}

int store_mkfs(const struct store_options *opt_in)
{
	struct store_options opt;
	uint8_t uuid[16];
	uint64_t bytes, nblocks, kv_max, wal_blocks;
	struct stat sb;
	struct kv kv;
	MDB_txn *t;
	char path[4096];
	int fd, r;

	r = opt_copy(opt_in, &opt);
	if (r)
		return r;
	opt.block_size -= opt.block_size % STORE_BLOCK_SIZE;
	/* The kv directory: created if missing, must not hold a store. */
	if (mkdir(opt.kv_path, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/data.mdb", opt.kv_path);
	if (access(path, F_OK) == 0)
		return -EEXIST;

	bool existed = stat(opt.block_path, &sb) == 0;

	r = bio_open(opt.block_path, true, false, &fd);
	if (r)
		return r;
	if (existed) {
		uint8_t u[16];
		uint64_t nb, ds;
		int s = sb_read(fd, u, &nb, &ds, NULL);

		if (s == 0 || s == -EUCLEAN) {
			r = -EEXIST;	/* a store (maybe damaged) is there: never overwrite */
			goto out_close;
		}
	}
	if (!existed || S_ISREG(sb.st_mode)) {
		if (opt.block_size) {
			if (ftruncate(fd, (off_t)opt.block_size)) {
				r = -errno;
				goto out_close;
			}
			/* Reserve the space so the host file system cannot fill
			 * under us later; not every file system can. */
			if (fallocate(fd, 0, 0, (off_t)opt.block_size) && errno != EOPNOTSUPP) {
				r = -errno;
				goto out_close;
			}
		}
		if (opt.prefill) {
			r = prefill(fd);
			if (r)
				goto out_close;
		}
	}
	r = bio_size(fd, &bytes);
	if (r)
		goto out_close;
	nblocks = bytes / STORE_BLOCK_SIZE;
	wal_blocks = wal_default_blocks(nblocks);
	if (nblocks < SB_DATA_START + wal_blocks + 16) {
		r = -ENOSPC;	/* too small to be useful */
		goto out_close;
	}
	if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid)) {
		r = -EIO;
		goto out_close;
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);	/* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);

	kv_max = opt.kv_max ? opt.kv_max : kv_default(bytes);
	r = kv_open(&kv, opt.kv_path, kv_max, true, false);
	if (r)
		goto out_close;
	r = kv_err(mdb_txn_begin(kv.env, NULL, 0, &t));
	if (r)
		goto out_kv;
	{
		struct stats s = { 0 };
		uint8_t buf[64];
		uint64_t next_id = 1;

		r = meta_super_put(t, &kv, uuid, nblocks, kv_max);
		if (!r)
			r = kv_put(t, kv.meta, "stats", 5, buf, stats_encode(&s, buf));
		if (!r)
			r = kv_put(t, kv.meta, "next_id", 7, &next_id, 8);
	}
	if (r) {
		mdb_txn_abort(t);
		goto out_kv;
	}
	r = kv_err(mdb_txn_commit(t));
	if (!r)
		r = kv_err(mdb_env_sync(kv.env, 1));
	if (r)
		goto out_kv;
	/* The superblock last: a block without one is not a store yet. */
	{
		/* An empty log: no record where the first one will go. */
		uint8_t *z = bio_alloc(STORE_BLOCK_SIZE);

		r = z ? bio_pwrite(fd, z, STORE_BLOCK_SIZE, SB_DATA_START * STORE_BLOCK_SIZE) : -ENOMEM;
		free(z);
		if (r)
			goto out_kv;
	}
	r = sb_write(fd, uuid, nblocks, SB_DATA_START + wal_blocks, STORE_FORMAT_VERSION);
out_kv:
	kv_close(&kv);
out_close:
	close(fd);
	return r;
}

void store_uuid(const struct store *st, char out[37])
{
	uuid_format(st->uuid, out);
}

static void store_free(struct store *st)
{
	if (st->wctx_ok)
		io_destroy(st->wctx);
	if (st->pctx_ok)
		io_destroy(st->pctx);
	if (st->cctx_ok)
		io_destroy(st->cctx);
	if (st->lctx_ok)
		io_destroy(st->lctx);
	kv_close(&st->kv);
	if (st->bfd >= 0)
		close(st->bfd);
	alloc_destroy(&st->alloc);
	wal_destroy(st);
	while (st->limbo_head) {
		struct limbo *l = st->limbo_head;

		st->limbo_head = l->next;
		runvec_free(&l->runs);
		free(l);
	}
	pthread_mutex_destroy(&st->alloc_lock);
	pthread_mutex_destroy(&st->stats_lock);
	pthread_mutex_destroy(&st->amutex);
	pthread_mutex_destroy(&st->flock);
	pthread_cond_destroy(&st->fcond);
	pthread_cond_destroy(&st->fidle);
	pthread_mutex_destroy(&st->cklock);
	pthread_cond_destroy(&st->ckcond);
	pthread_mutex_destroy(&st->qlock);
	pthread_cond_destroy(&st->qcond);
	pthread_cond_destroy(&st->qidle);
	pthread_mutex_destroy(&st->rlock);
	pthread_cond_destroy(&st->rcond);
	pthread_cond_destroy(&st->rwork);
	pthread_mutex_destroy(&st->rsub_lock);
	free(st->rsub);
	free(st->block_path);
	free(st->kv_path);
	free(st);
}

int store_open(const struct store_options *opt_in, struct store **out)
{
	struct store *st;
	uint8_t kv_uuid[16];
	uint64_t kv_nblocks, kv_max, bytes;
	uint32_t format = STORE_FORMAT_VERSION;
	MDB_txn *t;
	const void *v;
	size_t vl;
	int r;

	if (!out)
		return -EINVAL;
	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->bfd = -1;
	pthread_mutex_init(&st->alloc_lock, NULL);
	pthread_mutex_init(&st->stats_lock, NULL);
	pthread_mutex_init(&st->amutex, NULL);
	pthread_mutex_init(&st->flock, NULL);
	pthread_cond_init(&st->fcond, NULL);
	pthread_cond_init(&st->fidle, NULL);
	pthread_mutex_init(&st->cklock, NULL);
	pthread_cond_init(&st->ckcond, NULL);
	pthread_mutex_init(&st->qlock, NULL);
	pthread_cond_init(&st->qcond, NULL);
	pthread_cond_init(&st->qidle, NULL);
	pthread_mutex_init(&st->rlock, NULL);
	pthread_cond_init(&st->rcond, NULL);
	pthread_cond_init(&st->rwork, NULL);
	pthread_mutex_init(&st->rsub_lock, NULL);
	st->readers.next = st->readers.prev = &st->readers;
	st->read_efd = -1;
	st->unsynced_from = UINT64_MAX;
	r = opt_copy(opt_in, &st->opt);
	if (r)
		goto out_free;
	st->block_path = strdup(st->opt.block_path);
	st->kv_path = strdup(st->opt.kv_path);
	if (!st->block_path || !st->kv_path) {
		r = -ENOMEM;
		goto out_free;
	}
	st->opt.block_path = st->block_path;
	st->opt.kv_path = st->kv_path;

	r = bio_open(st->block_path, false, st->opt.readonly, &st->bfd);
	if (r)
		goto out_free;
	r = sb_read(st->bfd, st->uuid, &st->nblocks, &st->data_start, &format);
	if (r) {
		if (r == -ENODATA)
			r = -EUCLEAN;	/* no magic: never a store, or its superblock is gone */
		log_error("store", "'%s' holds no valid store superblock", st->block_path);
		goto out_free;
	}
	r = bio_size(st->bfd, &bytes);
	if (r)
		goto out_free;
	if (bytes / STORE_BLOCK_SIZE < st->nblocks) {
		log_error("store", "'%s' is smaller than its superblock says", st->block_path);
		r = -EUCLEAN;
		goto out_free;
	}
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/data.mdb", st->kv_path);
		if (access(path, F_OK)) {
			r = -ENOENT;
			log_error("store", "no key-value store in '%s'", st->kv_path);
			goto out_free;
		}
	}
	r = kv_open(&st->kv, st->kv_path, st->opt.kv_max, false, st->opt.readonly);
	if (r)
		goto out_free;
	r = kv_err(mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, &t));
	if (r)
		goto out_free;
	r = meta_super_get(t, &st->kv, kv_uuid, &kv_nblocks, &kv_max);
	if (r) {
		mdb_txn_abort(t);
		goto out_free;
	}
	if (memcmp(kv_uuid, st->uuid, 16) || kv_nblocks != st->nblocks) {
		char a[37], b[37];

		uuid_format(st->uuid, a);
		uuid_format(kv_uuid, b);
		log_error("store", "block '%s' (store %s) and key-value store '%s' (store %s) "
			  "belong to different stores", st->block_path, a, st->kv_path, b);
		mdb_txn_abort(t);
		r = -EINVAL;
		goto out_free;
	}
	if (!st->opt.kv_max && kv_max > st->kv.map_size) {
		/* Reopen with the size chosen at mkfs. */
		mdb_txn_abort(t);
		kv_close(&st->kv);
		r = kv_open(&st->kv, st->kv_path, kv_max, false, st->opt.readonly);
		if (r)
			goto out_free;
		r = kv_err(mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, &t));
		if (r)
			goto out_free;
	}
	st->kv.reserve = st->opt.kv_reserve ? st->opt.kv_reserve : st->kv.map_size / 64;
	if (st->kv.reserve < (1u << 20))
		st->kv.reserve = 1u << 20;
	r = kv_get(t, st->kv.meta, "stats", 5, &v, &vl);
	if (!r)
		r = stats_decode(&st->stats, v, vl);
	if (!r)
		r = kv_get(t, st->kv.meta, "next_id", 7, &v, &vl);
	if (!r && vl != 8)
		r = -EUCLEAN;
	if (!r)
		memcpy(&st->next_id, v, 8);
	uint64_t jseq = 0;

	if (!r)
		r = wal_init(st);
	if (!r)
		r = wal_replay(st, t, &jseq);
	/* After the replay: the log's chunk records count as the kv's. */
	if (!r)
		r = alloc_init(&st->alloc, st->data_start, st->nblocks - st->data_start);
	if (!r)
		r = store_rebuild_alloc(st, t);
	mdb_txn_abort(t);
	if (r) {
		if (r == -ENOENT)
			r = -EUCLEAN;
		goto out_free;
	}
	if (!st->opt.readonly) {
		r = io_setup(256, &st->wctx);
		if (r)
			goto out_free;
		st->wctx_ok = true;
		r = io_setup(1024, &st->pctx);
		if (r)
			goto out_free;
		st->pctx_ok = true;
		r = io_setup(256, &st->cctx);
		if (r)
			goto out_free;
		st->cctx_ok = true;
		r = io_setup(FLUSH_WRITES_MAX, &st->lctx);
		if (r)
			goto out_free;
		st->lctx_ok = true;
		/* Commit numbers continue after the kv's and the log's. */
		st->commit_seq = jseq;
		st->durable_seq = jseq;
		st->kvlog = st->opt.kv_log != STORE_KVLOG_OFF;
		/* Writes logged before a crash or stop go to their blocks now,
		 * and the checkpoint moves past any torn record. */
		int64_t n = wal_checkpoint(st, 0, true);

		if (n < 0) {
			log_error("store", "cannot apply the logged writes of '%s' to their blocks",
				  st->block_path);
			r = (int)n;
			goto out_free;
		}
		/* The log is empty now: records of the current format may
		 * follow once the superblock says so. */
		if (format < STORE_FORMAT_VERSION) {
			r = sb_write(st->bfd, st->uuid, st->nblocks, st->data_start,
				     STORE_FORMAT_VERSION);
			if (!r && fdatasync(st->bfd))
				r = -errno;
			if (r) {
				log_error("store", "cannot move '%s' to format %u: %s", st->block_path,
					  STORE_FORMAT_VERSION, strerror(-r));
				goto out_free;
			}
			log_info("store", "'%s' moved from format %u to format %u", st->block_path,
				 format, STORE_FORMAT_VERSION);
		}
	} else {
		st->commit_seq = jseq;
		st->durable_seq = jseq;
	}
	r = read_thread_start(st);
	if (r)
		goto out_free;
	if (!st->opt.readonly) {
		r = commit_start(st);
		if (r)
			goto out_read;
	}
	*out = st;
	return 0;

out_read:
	read_thread_stop(st);
out_free:
	store_free(st);
	return r;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	commit_stop(st);
	if (st->perf.batches) {
		struct commit_perf *p = &st->perf;

		log_info("store", "commit profile: %llu txns in %llu batches; per batch us: "
			  "apply %.1f data %.1f flush %.1f kv %.1f; %llu extra syncs of %.1f us",
			  (unsigned long long)p->txns, (unsigned long long)p->batches,
			  p->apply_ns / 1e3 / p->batches, p->data_ns / 1e3 / p->batches,
			  p->flush_ns / 1e3 / p->batches, p->kv_ns / 1e3 / p->batches,
			  (unsigned long long)p->syncs, p->syncs ? p->sync_ns / 1e3 / p->syncs : 0.0);
		if (p->fired)
			log_info("store", "commit profile: per transaction us: queued %.1f, in its "
				 "batch %.1f, committed to durable %.1f; batches made durable by "
				 "the next commit %llu, by their own sync %llu",
				 p->queue_ns / 1e3 / p->fired, p->run_ns / 1e3 / p->fired,
				 p->durable_ns / 1e3 / p->fired,
				 (unsigned long long)p->synced_by_next,
				 (unsigned long long)p->synced_alone);
		log_info("store", "commit profile: %llu batches only logged (no kv commit), %llu "
			 "committed the kv; %llu log "
			 "checkpoints of %.1f blocks and %.1f kv mutations, %.1f us each; %llu "
			 "kv batches committed their attribute and omap mutations, %llu flushed "
			 "the overlay to write them directly",
			 (unsigned long long)p->wal_only, (unsigned long long)p->kv_commits,
			 (unsigned long long)p->ckpts,
			 p->ckpts ? (double)p->ckpt_blocks / p->ckpts : 0.0,
			 p->ckpts ? (double)p->ckpt_kv / p->ckpts : 0.0,
			 p->ckpts ? p->ckpt_ns / 1e3 / p->ckpts : 0.0,
			 (unsigned long long)p->kv_in_commit, (unsigned long long)p->kv_direct);
		if (p->fl_flushes)
			log_info("store", "commit profile: the flusher completed %llu batches "
				 "with %llu flushes of %.1f us",
				 (unsigned long long)p->fl_batches,
				 (unsigned long long)p->fl_flushes, p->fl_flush_ns / 1e3 / p->fl_flushes);
		if (p->ckpts)
			log_info("store", "commit profile: per checkpoint us: flush %.1f (commit "
				 "thread), kv build %.1f, kv commit %.1f, kv sync %.1f (checkpointer); "
				 "%llu batches applied read-only beside it, %llu of them again as "
				 "writers; the commit thread waited %llu times, %.1f us each",
				 p->ckpt_flush_ns / 1e3 / p->ckpts, p->ckpt_build_ns / 1e3 / p->ckpts,
				 p->ckpt_commit_ns / 1e3 / p->ckpts, p->ckpt_sync_ns / 1e3 / p->ckpts,
				 (unsigned long long)p->ro_batches, (unsigned long long)p->ro_retries,
				 (unsigned long long)p->ckpt_waits,
				 p->ckpt_waits ? p->ckpt_wait_ns / 1e3 / p->ckpt_waits : 0.0);
	}
	read_thread_stop(st);
	store_free(st);
}
