/*
 * write.c - applying a transaction's ops inside the batch's kv transaction.
 *
 * Runs on the commit thread only.  Data never overwrites a block that a
 * committed record points at: every write goes to freshly allocated
 * blocks (collected as pending I/O, written and flushed before the kv
 * commit), and the blocks it replaces go to the batch's freed list.
 * Partial blocks are read, merged and written whole (read-modify-write),
 * reading from the batch's pending writes when an earlier op of the same
 * batch wrote them.
 *
 * Small objects (up to inline_max bytes) keep their data inside the onode
 * (with kv_log, onodes go into the batch's log record and reach the kv at
 * the log's checkpoint, wal.c); an object that grows past that moves to
 * chunks.  Chunks of a
 * compressing collection or write are rewritten whole, lz4-compressed
 * when that saves at least one block.
 */
#include <errno.h>
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "crc32c.h"
#include "log.h"

#define BS STORE_BLOCK_SIZE

int batch_keep_buf(struct batch *b, void *buf)
{
	if (b->nbufs == b->capbufs) {
		size_t cap = b->capbufs ? b->capbufs * 2 : 16;
		void **v = realloc(b->bufs, cap * sizeof(*v));

		if (!v) {
			free(buf);
			return -ENOMEM;
		}
		b->bufs = v;
		b->capbufs = cap;
	}
	b->bufs[b->nbufs++] = buf;
	return 0;
}

int pending_add(struct batch *b, uint64_t pblk, uint64_t nblk, uint8_t *buf)
{
	struct pending *p = &b->pend;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 32;
		struct pio *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n].pblk = pblk;
	p->v[p->n].nblk = nblk;
	p->v[p->n].buf = buf;
	p->n++;
	return 0;
}

bool pending_lookup(const struct pending *p, uint64_t pblk, void *out)
{
	if (!p)
		return false;
	/* Newest first: a block is written at most once per batch anyway,
	 * since freed blocks are not reused before the commit is durable. */
	for (size_t i = p->n; i-- > 0;) {
		const struct pio *io = &p->v[i];

		if (pblk >= io->pblk && pblk < io->pblk + io->nblk) {
			memcpy(out, io->buf + (pblk - io->pblk) * BS, BS);
			return true;
		}
	}
	return false;
}

/* ---- kv helpers ------------------------------------------------------- */

struct obj {
	struct onode o;
	uint8_t key[ONODE_KEY_MAX];
	size_t klen;
	uint32_t coll_flags;
	uint64_t old_size;	/* for the stored-bytes counter */
};

static int coll_get(struct batch *b, uint64_t coll, uint32_t *flags)
{
	return kv_coll_get(&b->st->kv, b->txn, coll, flags);
}

/* Loads the object of op; with create, a missing one is made (not yet
 * saved).  -ENOENT for a missing collection, or object without create. */
static int obj_load(struct batch *b, const struct op *op, bool create, struct obj *ob)
{
	const void *v;
	void *owned;
	size_t vl, nl = strlen(op->oid);
	int r;

	memset(ob, 0, sizeof(*ob));
	r = coll_get(b, op->coll, &ob->coll_flags);
	if (r)
		return r;
	ob->klen = key_onode(ob->key, op->coll, op->oid, nl);
	/* The batch's and the overlay's logged onodes first (kvoverlay.c). */
	r = kvo_lookup(b->st, b, b->txn, KVDB_ONODE, op->coll, op->oid, nl, UINT64_MAX - 1,
		       &v, &vl, &owned);
	if (r > 0) {
		r = onode_decode(&ob->o, v, vl);
		free(owned);
		if (r == -EUCLEAN) {
			log_error("store", "onode of '%s' is damaged", op->oid);
			r = -EIO;
		}
		ob->old_size = ob->o.size;
		return r;
	}
	if (r < 0 || !create)
		return r ? r : -ENOENT;
	ob->o.exists = false;
	ob->o.dirty = true;
	ob->o.id = b->next_id++;
	b->stats.objects++;
	return 0;
}

static int obj_save(struct batch *b, struct obj *ob)
{
	void *v;
	size_t vl;
	int r;

	if (!ob->o.dirty)
		return 0;
	r = onode_encode(&ob->o, &v, &vl);
	if (r)
		return r;
	if (b->kvlog) {
		r = walb_kv_add(b, KVOP_SET, KVDB_ONODE, get_be64(ob->key), ob->key + 8,
				ob->klen - 8, v, vl);
	} else {
		r = kv_put(b->txn, b->st->kv.onodes, ob->key, ob->klen, v, vl);
		b->changed = true;
	}
	free(v);
	if (r)
		return r;
	b->stats.stored += ob->o.size - ob->old_size;	/* wraps correctly */
	ob->old_size = ob->o.size;
	ob->o.exists = true;
	ob->o.dirty = false;
	return 0;
}

/* Chunk idx of object id as the batch sees it: its own changes, the log's
 * (kvoverlay.c), the kv's; empty when there is none. */
static int chunk_get(struct batch *b, uint64_t id, uint32_t idx, struct chunk *c)
{
	return kvo_chunk_get(b->st, b, b->txn, id, idx, UINT64_MAX - 1, c);
}

/* Saves chunk idx (an empty one: removes its record) in the batch's log
 * record (kv log mode) or straight into the kv.  fresh: the blocks just
 * given a new place, whose crcs are current (no logged version of them
 * can be newer). */
static int chunk_put(struct batch *b, uint64_t id, uint32_t idx, struct chunk *c,
		     uint64_t fresh)
{
	uint8_t k[12], v[CHUNK_REC_MAX];
	bool empty = chunk_empty(c);
	size_t vl;
	int r;

	key_chunk(k, id, idx);
	if (b->kvlog) {
		if (!empty)
			wal_chunk_crcs(b->st, b, id, idx, c, fresh);
		vl = empty ? 0 : chunk_encode(c, v);
		return walb_kv_add(b, empty ? KVOP_DEL : KVOP_SET, KVDB_CHUNK, id, k + 8, 4, v, vl);
	}
	vl = empty ? 0 : chunk_encode(c, v);
	b->changed = true;
	if (empty) {
		r = kv_del(b->txn, b->st->kv.chunks, k, sizeof(k));
		return r == -ENOENT ? 0 : r;
	}
	return kv_put(b->txn, b->st->kv.chunks, k, sizeof(k), v, vl);
}

/* Frees a chunk's blocks (to the batch's freed list) and empties it. */
static int chunk_release(struct batch *b, struct chunk *c)
{
	int r = chunk_runs(c, &b->freed);

	if (r)
		return r;
	b->stats.used_blocks -= chunk_used_blocks(c);
	if (c->flags & CHUNK_COMPRESSED)
		b->stats.compressed_saved -= (uint64_t)(c->lblocks - c->cblocks) * BS;
	memset(c, 0, sizeof(*c));
	return 0;
}

static int free_block(struct batch *b, uint64_t pblk)
{
	b->stats.used_blocks--;
	return runvec_push(&b->freed, pblk, 1);
}

static int alloc_blocks(struct batch *b, uint64_t n, bool contiguous, struct runvec *out)
{
	size_t first = out->n;
	int r;

	pthread_mutex_lock(&b->st->amutex);
	r = alloc_get(&b->st->alloc, n, contiguous, out);
	pthread_mutex_unlock(&b->st->amutex);

	if (r)
		return r;
	for (size_t i = first; i < out->n; i++) {
		r = runvec_push(&b->allocated, out->v[i].start, out->v[i].len);
		if (r)
			return r;
	}
	b->stats.used_blocks += n;
	return 0;
}

/* ---- reading old content for read-modify-write ------------------------ */

int block_read_checked(struct store *st, struct pending *p, uint64_t pblk,
		       uint32_t crc, void *buf)
{
	int r;

	if (pending_lookup(p, pblk, buf))
		return 0;
	r = bio_pread(st->bfd, buf, BS, pblk * BS);
	if (r) {
		log_error("store", "read of block %llu failed: %s",
			  (unsigned long long)pblk, strerror(-r));
		return -EIO;
	}
	if (atoll__crc32c(0, buf, BS) != crc) {
		log_error("store", "checksum mismatch in block %llu", (unsigned long long)pblk);
		return -EIO;
	}
	return 0;
}

int chunk_read_block(struct store *st, MDB_txn *t, struct batch *b, const struct chunk *c,
		     unsigned i, void *buf)
{
	int r;

	(void)t;
	if (b && walb_lookup(b, c->pblk[i], buf))
		return 0;
	r = wal_read(st, c->pblk[i], UINT64_MAX - 1, buf);
	if (r)
		return r < 0 ? r : 0;
	return block_read_checked(st, b ? &b->pend : NULL, c->pblk[i], c->crc[i], buf);
}

int chunk_read_all(struct store *st, MDB_txn *t, struct batch *b, const struct chunk *c,
		   uint8_t *buf)
{
	struct pending *p = b ? &b->pend : NULL;
	int r;

	memset(buf, 0, CHUNK_SIZE);
	if (c->flags & CHUNK_COMPRESSED) {
		uint8_t *cbuf = bio_alloc((size_t)c->cblocks * BS);

		if (!cbuf)
			return -ENOMEM;
		for (unsigned j = 0; j < c->cblocks; j++) {
			r = block_read_checked(st, p, c->pblk[0] + j, c->crc[j], cbuf + (size_t)j * BS);
			if (r) {
				free(cbuf);
				return r;
			}
		}
		int n = LZ4_decompress_safe((const char *)cbuf, (char *)buf, (int)c->clen,
					    (int)((size_t)c->lblocks * BS));

		free(cbuf);
		if (n != (int)((size_t)c->lblocks * BS)) {
			log_error("store", "compressed chunk at block %llu does not decompress",
				  (unsigned long long)c->pblk[0]);
			return -EIO;
		}
		return 0;
	}
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		if (!(c->present & (1ull << i)))
			continue;
		r = chunk_read_block(st, t, b, c, i, buf + (size_t)i * BS);
		if (r)
			return r;
	}
	return 0;
}

/* Current content of logical block lblk of a chunked object into buf. */
static int read_lblock(struct batch *b, const struct obj *ob, uint64_t lblk, uint8_t *buf)
{
	struct chunk c;
	unsigned i = (unsigned)(lblk % CHUNK_BLOCKS);
	int r;

	r = chunk_get(b, ob->o.id, (uint32_t)(lblk / CHUNK_BLOCKS), &c);
	if (r)
		return r;
	if (c.flags & CHUNK_COMPRESSED) {
		uint8_t *all = bio_alloc(CHUNK_SIZE);

		if (!all)
			return -ENOMEM;
		r = chunk_read_all(b->st, b->txn, b, &c, all);
		if (!r)
			memcpy(buf, all + (size_t)i * BS, BS);
		free(all);
		return r;
	}
	if (!(c.present & (1ull << i))) {
		memset(buf, 0, BS);
		return 0;
	}
	return chunk_read_block(b->st, b->txn, b, &c, i, buf);
}

/* ---- writing blocks ----------------------------------------------------- */

struct map_arg {
	const uint8_t *buf;
	const struct runvec *rv;
	const uint32_t *crcs;
	uint64_t *pblk;
	size_t ri;		/* current run */
	uint64_t rdone;		/* blocks of rv->v[ri] used so far */
};

/* Points chunk c's blocks i0..i0+n-1 (the range's blocks k0..) at the next
 * blocks of m->rv, freeing what they replace; with m->pblk, only the
 * blocks the range has no place for (pblk[k] == UINT64_MAX), whose places
 * it fills in.  *set: the blocks it pointed. */
static int map_span(struct batch *b, struct chunk *c, unsigned i0, unsigned n, uint64_t k0,
		    struct map_arg *m, uint64_t *set)
{
	int r;

	*set = 0;
	if (c->flags & CHUNK_COMPRESSED) {
		log_error("store", "write_blocks over a compressed chunk");
		return -EIO;	/* caller bug: would leave a compressed chunk half replaced */
	}
	for (unsigned i = i0; i < i0 + n; i++) {
		uint64_t k = k0 + (i - i0);

		if (m->pblk && m->pblk[k] != UINT64_MAX)
			continue;
		if (c->present & (1ull << i)) {
			r = free_block(b, c->pblk[i]);
			if (r)
				return r;
		}
		c->deferred &= ~(1ull << i);	/* its journaled content is stale now */
		c->present |= 1ull << i;
		c->pblk[i] = m->rv->v[m->ri].start + m->rdone;
		c->crc[i] = m->crcs ? m->crcs[k] : atoll__crc32c(0, m->buf + k * BS, BS);
		if (m->pblk)
			m->pblk[k] = c->pblk[i];
		*set |= 1ull << i;
		if (++m->rdone == m->rv->v[m->ri].len) {
			m->ri++;
			m->rdone = 0;
		}
	}
	return 0;
}

/* Points logical blocks [lblk, lblk+nblk) at the blocks of given, in
 * order, with crcs (or computed from buf), freeing what they replace;
 * with pblk, only those whose pblk[k] is UINT64_MAX (map_span).  Saves
 * each chunk it changed. */
static int map_blocks(struct batch *b, struct obj *ob, uint64_t lblk, uint64_t nblk,
		      const uint8_t *buf, const struct runvec *given, const uint32_t *crcs,
		      uint64_t *pblk)
{
	struct map_arg m = { buf, given, crcs, pblk, 0, 0 };
	uint64_t done = 0;
	int r;

	while (done < nblk) {
		uint64_t cur = lblk + done, set;
		uint32_t idx = (uint32_t)(cur / CHUNK_BLOCKS);
		unsigned i0 = (unsigned)(cur % CHUNK_BLOCKS);
		unsigned n = (unsigned)min_u64(CHUNK_BLOCKS - i0, nblk - done);
		struct chunk c;

		r = chunk_get(b, ob->o.id, idx, &c);
		if (r)
			return r;
		r = map_span(b, &c, i0, n, done, &m, &set);
		if (r)
			return r;
		if (set && (r = chunk_put(b, ob->o.id, idx, &c, set)))
			return r;
		done += n;
	}
	return 0;
}

/* Writes nblk logical blocks from lblk (content in buf, which stays alive
 * until the batch's I/O is done) into fresh blocks, and points the
 * chunks at them, freeing what they replace.  No chunk in the range may
 * be compressed (callers rewrite those whole first). */
static int write_blocks(struct batch *b, struct obj *ob, uint64_t lblk, uint64_t nblk,
			uint8_t *buf)
{
	struct runvec runs = { 0 };
	int r;

	r = alloc_blocks(b, nblk, false, &runs);
	if (r)
		goto out;
	for (size_t k = 0; k < runs.n; k++) {
		uint64_t boff = 0;

		for (size_t j = 0; j < k; j++)
			boff += runs.v[j].len;
		/* One aio per run, at most IO_MAX_BYTES each. */
		for (uint64_t x = 0; x < runs.v[k].len; x += IO_MAX_BYTES / BS) {
			uint64_t n = min_u64(runs.v[k].len - x, IO_MAX_BYTES / BS);

			r = pending_add(b, runs.v[k].start + x, n, buf + (boff + x) * BS);
			if (r)
				goto out;
		}
	}
	r = map_blocks(b, ob, lblk, nblk, buf, &runs, NULL, NULL);
out:
	runvec_free(&runs);
	return r;
}

/* Logs nblk logical blocks from lblk (content in buf) in the batch's log
 * record instead of writing them now (wal.c).  A block that has a place
 * already keeps it (the chunk record is not touched); a hole gets a fresh
 * block, which the chunk record names at once (in the record too, kv log
 * mode) and the checkpoint writes in place.  A compressed chunk in the
 * range is written copy-on-write instead (callers rewrite those whole). */
static int log_blocks(struct batch *b, struct obj *ob, uint64_t lblk, uint64_t nblk,
		      uint8_t *buf)
{
	uint64_t *pblk = malloc(nblk * sizeof(*pblk));
	uint32_t *crc = malloc(nblk * sizeof(*crc));
	struct runvec fresh = { 0 };
	struct chunk c;
	uint32_t have = UINT32_MAX;
	uint64_t holes = 0;
	int r = 0;

	if (!pblk || !crc) {
		r = -ENOMEM;
		goto out;
	}
	for (uint64_t k = 0; k < nblk; k++) {
		uint32_t idx = (uint32_t)((lblk + k) / CHUNK_BLOCKS);
		unsigned i = (unsigned)((lblk + k) % CHUNK_BLOCKS);

		if (idx != have) {
			r = chunk_get(b, ob->o.id, idx, &c);
			if (r)
				goto out;
			have = idx;
		}
		if (c.flags & CHUNK_COMPRESSED) {
			r = write_blocks(b, ob, lblk, nblk, buf);
			goto out;
		}
		pblk[k] = c.present & (1ull << i) ? c.pblk[i] : UINT64_MAX;
		holes += pblk[k] == UINT64_MAX;
		crc[k] = atoll__crc32c(0, buf + k * BS, BS);
	}
	if (holes) {
		r = alloc_blocks(b, holes, false, &fresh);
		if (!r)
			r = map_blocks(b, ob, lblk, nblk, NULL, &fresh, crc, pblk);
	}
	for (uint64_t k = 0; k < nblk && !r; k++) {
		r = walb_add(b, ob->o.id, lblk + k, pblk[k], buf + k * BS, crc[k]);
	}
out:
	runvec_free(&fresh);
	free(pblk);
	free(crc);
	return r;
}

/* Writes nblk logical blocks from lblk: into the batch's log record when
 * the bytes asked for are few (defer_max; an unaligned write of defer_max
 * bytes touches a block more) and it has room, else copy-on-write. */
static int put_blocks(struct batch *b, struct obj *ob, uint64_t lblk, uint64_t nblk,
		      uint8_t *buf, uint64_t bytes)
{
	const struct store_options *o = &b->st->opt;

	if (o->defer_max != STORE_DEFER_OFF && bytes <= o->defer_max && walb_room(b, nblk))
		return log_blocks(b, ob, lblk, nblk, buf);
	return write_blocks(b, ob, lblk, nblk, buf);
}

/* Rewrites chunk idx whole from content (CHUNK_SIZE bytes; blocks past
 * lblocks are dropped), compressed when asked and worth it.  The old
 * chunk has been released by the caller.  content is kept by the batch. */
static int store_chunk_whole(struct batch *b, struct obj *ob, uint32_t idx, uint8_t *content,
			     unsigned lblocks, bool compress)
{
	struct chunk c;
	int r;

	if (lblocks == 0)
		return 0;
	if (compress) {
		int bound = LZ4_compressBound((int)(lblocks * BS));
		uint8_t *cbuf = bio_alloc(((size_t)bound + BS - 1) / BS * BS);
		int clen;

		if (!cbuf)
			return -ENOMEM;
		clen = LZ4_compress_default((const char *)content, (char *)cbuf,
					    (int)(lblocks * BS), bound);
		unsigned cblocks = clen > 0 ? (unsigned)((clen + BS - 1) / BS) : lblocks;

		if (clen > 0 && cblocks < lblocks) {
			struct runvec run = { 0 };

			r = alloc_blocks(b, cblocks, true, &run);
			if (r == 0) {
				memset(&c, 0, sizeof(c));
				c.flags = CHUNK_COMPRESSED;
				c.lblocks = (uint8_t)lblocks;
				c.cblocks = (uint8_t)cblocks;
				c.clen = (uint32_t)clen;
				c.pblk[0] = run.v[0].start;
				for (unsigned j = 0; j < cblocks; j++)
					c.crc[j] = atoll__crc32c(0, cbuf + (size_t)j * BS, BS);
				runvec_free(&run);
				r = batch_keep_buf(b, cbuf);
				if (r)
					return r;
				r = pending_add(b, c.pblk[0], cblocks, cbuf);
				if (r)
					return r;
				b->stats.compressed_saved += (uint64_t)(lblocks - cblocks) * BS;
				return chunk_put(b, ob->o.id, idx, &c, 0);
			}
			runvec_free(&run);
			if (r != -ENOSPC)
				return r;
			/* No contiguous room: store it uncompressed below. */
		}
		free(cbuf);
	}
	return write_blocks(b, ob, (uint64_t)idx * CHUNK_BLOCKS, lblocks, content);
}

/* Applies fn to chunk idx's whole content (decompressing it), then stores
 * it again.  Used for any change to a compressed chunk, and for every
 * write when compression is on. */
typedef void (*patch_fn)(uint8_t *content, const void *arg);

static int rewrite_chunk(struct batch *b, struct obj *ob, uint32_t idx, patch_fn fn,
			 const void *arg, bool compress)
{
	uint64_t cs = (uint64_t)idx * CHUNK_SIZE;
	uint8_t *content = bio_alloc(CHUNK_SIZE);
	struct chunk c;
	unsigned lblocks;
	int r;

	if (!content)
		return -ENOMEM;
	r = batch_keep_buf(b, content);
	if (r)
		return r;
	r = chunk_get(b, ob->o.id, idx, &c);
	if (r)
		return r;
	r = chunk_read_all(b->st, b->txn, b, &c, content);
	if (r)
		return r;
	fn(content, arg);
	r = chunk_release(b, &c);
	if (r)
		return r;
	r = chunk_put(b, ob->o.id, idx, &c, 0);	/* deletes the record */
	if (r)
		return r;
	lblocks = ob->o.size > cs ? (unsigned)((min_u64(ob->o.size - cs, CHUNK_SIZE) + BS - 1) / BS) : 0;
	/* Bytes past the object's end must read as zeros later. */
	if (ob->o.size < cs + CHUNK_SIZE && ob->o.size > cs)
		memset(content + (ob->o.size - cs), 0, CHUNK_SIZE - (ob->o.size - cs));
	return store_chunk_whole(b, ob, idx, content, lblocks, compress);
}

struct patch_copy {
	uint64_t lo, len;
	const uint8_t *src;	/* NULL: zeros */
};

static void patch_copy_fn(uint8_t *content, const void *arg)
{
	const struct patch_copy *pc = arg;

	if (pc->src)
		memcpy(content + pc->lo, pc->src, pc->len);
	else
		memset(content + pc->lo, 0, pc->len);
}

static bool chunk_is_compressed(struct batch *b, struct obj *ob, uint32_t idx, int *err)
{
	struct chunk c;

	*err = chunk_get(b, ob->o.id, idx, &c);
	return !*err && (c.flags & CHUNK_COMPRESSED);
}

/* ---- inline data -------------------------------------------------------- */

/* Moves an inline object's data into chunks. */
static int make_chunked(struct batch *b, struct obj *ob)
{
	uint64_t nblk = (ob->o.inline_len + BS - 1) / BS;
	int r = 0;

	if (ob->o.flags & ONODE_CHUNKED)
		return 0;
	if (nblk) {
		uint8_t *buf = bio_alloc(nblk * BS);

		if (!buf)
			return -ENOMEM;
		memcpy(buf, ob->o.inl, ob->o.inline_len);
		r = batch_keep_buf(b, buf);
		if (!r)
			r = put_blocks(b, ob, 0, nblk, buf, nblk * BS);
	}
	free(ob->o.inl);
	ob->o.inl = NULL;
	ob->o.inline_len = 0;
	ob->o.flags |= ONODE_CHUNKED;
	ob->o.dirty = true;
	return r;
}

static int inline_patch(struct obj *ob, uint64_t off, const void *data, uint64_t len)
{
	uint64_t end = off + len;

	if (end > ob->o.inline_len) {
		uint8_t *n;

		if (!data && off >= ob->o.inline_len)
			return 0;	/* zeroing past the inline data: already zeros */
		if (!data)
			end = ob->o.inline_len;
		n = realloc(ob->o.inl, end);
		if (!n)
			return -ENOMEM;
		memset(n + ob->o.inline_len, 0, end - ob->o.inline_len);
		ob->o.inl = n;
		ob->o.inline_len = (uint32_t)end;
	}
	if (data)
		memcpy(ob->o.inl + off, data, len);
	else
		memset(ob->o.inl + off, 0, min_u64(end, ob->o.inline_len) - off);
	ob->o.dirty = true;
	return 0;
}

/* ---- ops ------------------------------------------------------------------ */

static int do_write(struct batch *b, struct obj *ob, uint64_t off, uint8_t *data,
		    uint64_t len, bool compress, struct prewrite *pw)
{
	uint64_t end = off + len;
	int r;

	if (len == 0)
		return 0;
	if (!(ob->o.flags & ONODE_CHUNKED)) {
		if (end <= b->st->opt.inline_max && !b->no_inline) {
			r = inline_patch(ob, off, data, len);
			ob->o.size = max_u64(ob->o.size, end);
			return r;
		}
		r = make_chunked(b, ob);
		if (r)
			return r;
	}
	if (end > ob->o.size) {
		/* Only a growing object changes its onode: an overwrite inside
		 * it may leave the kv untouched (wal.c). */
		ob->o.size = end;
		ob->o.dirty = true;
	}

	uint32_t c0 = (uint32_t)(off >> CHUNK_SHIFT), c1 = (uint32_t)((end - 1) >> CHUNK_SHIFT);
	bool any_compressed = compress;

	for (uint32_t ci = c0; ci <= c1 && !any_compressed; ci++) {
		any_compressed = chunk_is_compressed(b, ob, ci, &r);
		if (r)
			return r;
	}
	if (any_compressed) {
		/* Chunk by chunk, each rewritten whole. */
		for (uint32_t ci = c0; ci <= c1; ci++) {
			uint64_t cs = (uint64_t)ci << CHUNK_SHIFT;
			uint64_t lo = max_u64(off, cs), hi = min_u64(end, cs + CHUNK_SIZE);
			struct patch_copy pc = { lo - cs, hi - lo, data + (lo - off) };

			r = rewrite_chunk(b, ob, ci, patch_copy_fn, &pc, compress);
			if (r)
				return r;
		}
		return 0;
	}
	/* Uncompressed: one buffer over the blocks touched. */
	uint64_t l0 = off / BS, l1 = (end - 1) / BS, nblk = l1 - l0 + 1;
	uint8_t *buf;

	if (pw && pw->err) {
		log_error("store", "a data write failed; the store stops writing");
		pthread_mutex_lock(&b->st->qlock);
		b->st->failed = -EIO;
		pthread_mutex_unlock(&b->st->qlock);
		return -EIO;
	}
	if (pw && pw->runs.n && pw->nblk) {
		/* The whole blocks are on the device already (prewrite): point
		 * the chunks at them; only a partial last block remains. */
		r = map_blocks(b, ob, l0, pw->nblk, NULL, &pw->runs, pw->crc, NULL);
		if (r)
			return r;
		b->stats.used_blocks += pw->nblk;
		pw->applied = true;	/* durable already (RWF_DSYNC) */
		if (len % BS == 0)
			return 0;
		off += pw->nblk * BS;
		data += pw->nblk * BS;
		len -= pw->nblk * BS;
		l0 += pw->nblk;
		nblk = 1;
	}

	if (off % BS == 0 && ((uintptr_t)data % BS) == 0) {
		buf = data;	/* the op's own buffer: aligned and padded */
	} else {
		buf = bio_alloc(nblk * BS);
		if (!buf)
			return -ENOMEM;
		r = batch_keep_buf(b, buf);
		if (r)
			return r;
		memcpy(buf + off % BS, data, len);
	}
	/* Merge partial first and last blocks with what is there. */
	if (off % BS) {
		uint8_t old[BS] __attribute__((aligned(4096)));

		r = read_lblock(b, ob, l0, old);
		if (r)
			return r;
		memcpy(buf, old, off % BS);
		if (l0 == l1 && end % BS)
			memcpy(buf + end % BS, old + end % BS, BS - end % BS);
	}
	if (end % BS && (l0 != l1 || off % BS == 0)) {
		uint8_t old[BS] __attribute__((aligned(4096)));

		r = read_lblock(b, ob, l1, old);
		if (r)
			return r;
		memcpy(buf + (nblk - 1) * BS + end % BS, old + end % BS, BS - end % BS);
	}
	return put_blocks(b, ob, l0, nblk, buf, len);
}

static int do_zero(struct batch *b, struct obj *ob, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	int r;

	if (len == 0)
		return 0;
	if (!(ob->o.flags & ONODE_CHUNKED)) {
		r = inline_patch(ob, off, NULL, len);
		if (end > ob->o.size) {
			ob->o.size = end;
			ob->o.dirty = true;
		}
		return r;
	}
	uint64_t zend = min_u64(end, ob->o.size);	/* past the end is zeros already */

	if (end > ob->o.size) {
		ob->o.size = end;
		ob->o.dirty = true;
	}
	if (off >= zend)
		return 0;
	for (uint32_t ci = (uint32_t)(off >> CHUNK_SHIFT); ci <= (uint32_t)((zend - 1) >> CHUNK_SHIFT); ci++) {
		uint64_t cs = (uint64_t)ci << CHUNK_SHIFT;
		uint64_t lo = max_u64(off, cs) - cs, hi = min_u64(zend, cs + CHUNK_SIZE) - cs;
		struct chunk c;

		r = chunk_get(b, ob->o.id, ci, &c);
		if (r)
			return r;
		if (chunk_empty(&c))
			continue;
		if (c.flags & CHUNK_COMPRESSED) {
			struct patch_copy pc = { lo, hi - lo, NULL };

			r = rewrite_chunk(b, ob, ci, patch_copy_fn, &pc, true);
			if (r)
				return r;
			continue;
		}
		/* Whole blocks become holes; partial ones are rewritten. */
		unsigned b0 = (unsigned)(lo / BS), b1 = (unsigned)((hi - 1) / BS);
		bool changed = false;

		for (unsigned i = b0; i <= b1; i++) {
			uint64_t bs = (uint64_t)i * BS;
			bool whole = lo <= bs && hi >= bs + BS;

			if (!(c.present & (1ull << i)) || !whole)
				continue;
			r = free_block(b, c.pblk[i]);
			if (r)
				return r;
			c.present &= ~(1ull << i);
			c.deferred &= ~(1ull << i);
			changed = true;
		}
		if (changed) {
			r = chunk_put(b, ob->o.id, ci, &c, 0);
			if (r)
				return r;
		}
		for (unsigned i = b0; i <= b1; i++) {
			uint64_t bs = (uint64_t)i * BS;
			uint64_t zlo = max_u64(lo, bs) - bs, zhi = min_u64(hi, bs + BS) - bs;
			uint8_t *blk;

			if (!(c.present & (1ull << i)) || (zlo == 0 && zhi == BS))
				continue;
			blk = bio_alloc(BS);
			if (!blk)
				return -ENOMEM;
			r = batch_keep_buf(b, blk);
			if (r)
				return r;
			r = chunk_read_block(b->st, b->txn, b, &c, i, blk);
			if (r)
				return r;
			memset(blk + zlo, 0, zhi - zlo);
			r = put_blocks(b, ob, (uint64_t)ci * CHUNK_BLOCKS + i, 1, blk, BS);
			if (r)
				return r;
		}
	}
	return 0;
}

/* The numbers of an object's chunk records (some maybe removed by the
 * batch), collected before they change. */
struct chunk_nums {
	uint32_t *v;
	size_t n, cap;
	uint32_t first;
};

static int chunk_num_add(void *arg, const void *k, size_t kl)
{
	struct chunk_nums *cn = arg;
	uint32_t idx;

	if (kl != 4)
		return -EIO;
	idx = get_be32(k);
	if (idx < cn->first)
		return 0;
	if (cn->n == cn->cap) {
		size_t cap = cn->cap ? cn->cap * 2 : 16;
		uint32_t *nv = realloc(cn->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		cn->v = nv;
		cn->cap = cap;
	}
	cn->v[cn->n++] = idx;
	return 0;
}

static int chunk_walk_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)v;
	(void)vl;
	return chunk_num_add(arg, k, kl);
}

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Frees chunks idx >= first: those of the kv and the log (kvo_walk) and
 * those the batch made. */
static int drop_chunks_from(struct batch *b, struct obj *ob, uint32_t first)
{
	struct chunk_nums cn = { NULL, 0, 0, first };
	uint8_t after[4];
	int r;

	if (first)
		put_be32(after, first - 1);
	r = kvo_walk(b->st, b->txn, UINT64_MAX - 1, b->st->kv.chunks, ob->o.id, NULL,
		     first ? after : NULL, first ? 4 : 0, 0, chunk_walk_fn, &cn);
	if (r >= 0)
		r = kvo_batch_keys(b, KVDB_CHUNK, ob->o.id, chunk_num_add, &cn);
	if (r > 0)
		r = 0;
	if (cn.n > 1)
		qsort(cn.v, cn.n, sizeof(*cn.v), u32_cmp);
	for (size_t i = 0; i < cn.n && !r; i++) {
		struct chunk c;

		if (i && cn.v[i] == cn.v[i - 1])
			continue;
		r = chunk_get(b, ob->o.id, cn.v[i], &c);
		if (r || chunk_empty(&c))
			continue;
		r = chunk_release(b, &c);
		if (!r)
			r = chunk_put(b, ob->o.id, cn.v[i], &c, 0);
	}
	free(cn.v);
	return r;
}

static void patch_truncate_fn(uint8_t *content, const void *arg)
{
	const uint64_t *keep = arg;

	memset(content + *keep, 0, CHUNK_SIZE - *keep);
}

static int do_truncate(struct batch *b, struct obj *ob, uint64_t size)
{
	int r;

	if (size == ob->o.size && ob->o.exists)
		return 0;
	if (!(ob->o.flags & ONODE_CHUNKED)) {
		if (size < ob->o.inline_len) {
			ob->o.inline_len = (uint32_t)size;
			if (size == 0) {
				free(ob->o.inl);
				ob->o.inl = NULL;
			}
		}
		ob->o.size = size;
		ob->o.dirty = true;
		return 0;
	}
	if (size < ob->o.size) {
		uint32_t last = size ? (uint32_t)((size - 1) >> CHUNK_SHIFT) : 0;

		r = drop_chunks_from(b, ob, size ? last + 1 : 0);
		if (r)
			return r;
		if (size) {
			uint64_t cs = (uint64_t)last << CHUNK_SHIFT;
			uint64_t keep = size - cs;	/* bytes of the last chunk kept */
			struct chunk c;

			r = chunk_get(b, ob->o.id, last, &c);
			if (r)
				return r;
			ob->o.size = size;
			if (c.flags & CHUNK_COMPRESSED) {
				r = rewrite_chunk(b, ob, last, patch_truncate_fn, &keep, true);
				if (r)
					return r;
			} else if (!chunk_empty(&c)) {
				unsigned kb = (unsigned)((keep + BS - 1) / BS);
				bool changed = false;

				for (unsigned i = kb; i < CHUNK_BLOCKS; i++) {
					if (!(c.present & (1ull << i)))
						continue;
					r = free_block(b, c.pblk[i]);
					if (r)
						return r;
					c.present &= ~(1ull << i);
					c.deferred &= ~(1ull << i);
					changed = true;
				}
				if (changed && (r = chunk_put(b, ob->o.id, last, &c, 0)))
					return r;
				/* Zero the tail of the last, partial block. */
				if (keep % BS && (c.present & (1ull << (kb - 1)))) {
					uint8_t *blk = bio_alloc(BS);

					if (!blk)
						return -ENOMEM;
					r = batch_keep_buf(b, blk);
					if (r)
						return r;
					r = chunk_read_block(b->st, b->txn, b, &c, kb - 1, blk);
					if (r)
						return r;
					memset(blk + keep % BS, 0, BS - keep % BS);
					r = put_blocks(b, ob, (uint64_t)last * CHUNK_BLOCKS + kb - 1, 1, blk, BS);
					if (r)
						return r;
				}
			}
		}
	}
	ob->o.size = size;
	ob->o.dirty = true;
	if (size == 0) {
		ob->o.flags &= ~ONODE_CHUNKED;	/* empty again: back to inline */
	}
	return 0;
}

static int do_remove(struct batch *b, struct obj *ob)
{
	uint8_t k[8];
	int64_t n;
	int r;

	if (ob->o.flags & ONODE_CHUNKED) {
		r = drop_chunks_from(b, ob, 0);
		if (r)
			return r;
	}
	if (b->kvlog) {
		/* Its kv keys go at the checkpoint; until then the overlay
		 * hides them (and a new object never gets this id). */
		r = walb_kv_add(b, KVOP_CLEAR, KVDB_ATTR, ob->o.id, NULL, 0, NULL, 0);
		if (!r)
			r = walb_kv_add(b, KVOP_CLEAR, KVDB_OMAP, ob->o.id, NULL, 0, NULL, 0);
		if (!r)
			r = walb_kv_add(b, KVOP_DEL, KVDB_ONODE, get_be64(ob->key), ob->key + 8,
					ob->klen - 8, NULL, 0);
		if (r)
			return r;
		b->stats.objects--;
		b->stats.stored -= ob->o.size;
		return 0;
	} else {
		key_id(k, ob->o.id, NULL, 0);
		n = kv_del_prefix(b->txn, b->st->kv.attrs, k, 8);
		if (n < 0)
			return (int)n;
		n = kv_del_prefix(b->txn, b->st->kv.omap, k, 8);
		if (n < 0)
			return (int)n;
	}
	r = kv_del(b->txn, b->st->kv.onodes, ob->key, ob->klen);
	if (r)
		return r;
	b->stats.objects--;
	b->stats.stored -= ob->o.size;
	b->changed = true;
	return 0;
}

/* Attribute and omap mutations: into the batch's log record (kv log
 * mode, wal.c) or straight into the kv. */
static int id_key_put(struct batch *b, MDB_dbi dbi, uint64_t id, const void *k, size_t kl,
		      const void *v, size_t vl)
{
	uint8_t key[8 + STORE_OMAP_KEY_MAX];

	if (b->kvlog)
		return walb_kv_add(b, KVOP_SET, kvdb_of(&b->st->kv, dbi), id, k, kl, v, vl);
	key_id(key, id, k, kl);
	b->changed = true;
	return kv_put(b->txn, dbi, key, 8 + kl, v, vl);
}

/* -ENOENT if the key is missing (checked only when must_exist in kv log
 * mode: a removed omap key that is missing is no error). */
static int id_key_del(struct batch *b, MDB_dbi dbi, uint64_t id, const void *k, size_t kl,
		      bool must_exist)
{
	uint8_t key[8 + STORE_OMAP_KEY_MAX];
	int db = kvdb_of(&b->st->kv, dbi);

	if (b->kvlog) {
		if (must_exist) {
			int e = kvo_exists(b->st, b, b->txn, db, id, k, kl, UINT64_MAX - 1);

			if (e <= 0)
				return e < 0 ? e : -ENOENT;
		}
		return walb_kv_add(b, KVOP_DEL, db, id, k, kl, NULL, 0);
	}
	key_id(key, id, k, kl);
	b->changed = true;
	return kv_del(b->txn, dbi, key, 8 + kl);
}

/* Is the kv so full that only deletes may go on?  b->kv_used was measured
 * before the batch began (commit.c), when LMDB's high-water mark said the
 * kv might be near full; 0 means it was not. */
static int kv_check_space(struct batch *b, bool frees_only)
{
	struct kv *kv = &b->st->kv;

	if (frees_only || !b->kv_measured)
		return 0;
	/* Logged kv mutations reach the kv at the checkpoint: count them. */
	return b->kv_used + kv->reserve +
	       KV_OVERLAY_COST * (b->st->deferred_kv_bytes + b->wal.kvlen) >
	       kv->map_size ? -ENOSPC : 0;
}

static int apply_op(struct batch *b, struct op *op)
{
	struct obj ob;
	uint8_t k[8];
	int r;

	switch (op->type) {
	case OP_COLL_CREATE: {
		uint32_t flags;

		r = coll_get(b, op->coll, &flags);
		if (r == 0)
			return -EEXIST;
		if (r != -ENOENT)
			return r;
		put_be64(k, op->coll);
		b->changed = true;
		return kv_put(b->txn, b->st->kv.colls, k, 8, &op->flags, 4);
	}
	case OP_COLL_REMOVE: {
		MDB_cursor *cur;
		MDB_val key = { 8, k }, val;
		uint32_t flags;
		int rc;

		r = coll_get(b, op->coll, &flags);
		if (r)
			return r;
		/* Whether it is empty is the kv's answer only once no logged
		 * onode is pending: ask commit.c to checkpoint the overlay and
		 * apply the batch straight to the kv (rare: a collection
		 * goes when its placement group leaves the OSD). */
		if (b->kvlog)
			return -EOVERFLOW;
		put_be64(k, op->coll);
		rc = mdb_cursor_open(b->txn, b->st->kv.onodes, &cur);
		if (rc)
			return kv_err(rc);
		rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
		bool empty = rc != 0 || key.mv_size < 8 || get_be64(key.mv_data) != op->coll;

		mdb_cursor_close(cur);
		if (rc && rc != MDB_NOTFOUND)
			return kv_err(rc);
		if (!empty)
			return -ENOTEMPTY;
		put_be64(k, op->coll);
		b->changed = true;
		return kv_del(b->txn, b->st->kv.colls, k, 8);
	}
	default:
		break;
	}

	bool create = op->type == OP_TOUCH || op->type == OP_CREATE || op->type == OP_WRITE ||
		      op->type == OP_ZERO || op->type == OP_TRUNCATE || op->type == OP_SETATTR ||
		      op->type == OP_OMAP_SET;

	r = obj_load(b, op, create, &ob);
	if (r == -ENOENT && op->type == OP_REMOVE && (op->flags & OPF_MISSING_OK))
		return 0;
	if (r)
		return r;
	switch (op->type) {
	case OP_TOUCH:
		break;
	case OP_CREATE:
		if (ob.o.exists)
			r = -EEXIST;
		break;
	case OP_WRITE:
		if (op->off + op->len > b->st->opt.object_max)
			r = -EFBIG;
		else
			r = do_write(b, &ob, op->off, op->data, op->len,
				     (op->flags & STORE_WRITE_COMPRESS) ||
				     (ob.coll_flags & STORE_COLL_COMPRESS), op->prew);
		break;
	case OP_ZERO:
		if (op->off + op->len > b->st->opt.object_max)
			r = -EFBIG;
		else
			r = do_zero(b, &ob, op->off, op->len);
		break;
	case OP_TRUNCATE:
		if (op->off > b->st->opt.object_max)
			r = -EFBIG;
		else
			r = do_truncate(b, &ob, op->off);
		break;
	case OP_REMOVE:
		r = do_remove(b, &ob);
		onode_clear(&ob.o);
		return r;
	case OP_SETATTR:
		r = id_key_put(b, b->st->kv.attrs, ob.o.id, op->key, op->klen, op->data, op->len);
		break;
	case OP_RMATTR:
		r = id_key_del(b, b->st->kv.attrs, ob.o.id, op->key, op->klen, true);
		if (r == -ENOENT)
			r = -ENODATA;
		break;
	case OP_OMAP_SET:
		r = id_key_put(b, b->st->kv.omap, ob.o.id, op->key, op->klen, op->data, op->len);
		break;
	case OP_OMAP_RM:
		r = id_key_del(b, b->st->kv.omap, ob.o.id, op->key, op->klen, false);
		if (r == -ENOENT)
			r = 0;
		break;
	case OP_OMAP_CLEAR: {
		int64_t n;

		if (b->kvlog) {
			r = walb_kv_add(b, KVOP_CLEAR, KVDB_OMAP, ob.o.id, NULL, 0, NULL, 0);
			break;
		}
		key_id(k, ob.o.id, NULL, 0);
		n = kv_del_prefix(b->txn, b->st->kv.omap, k, 8);
		r = n < 0 ? (int)n : 0;
		if (n > 0)
			b->changed = true;
		break;
	}
	default:
		r = -EINVAL;
	}
	if (!r)
		r = obj_save(b, &ob);
	onode_clear(&ob.o);
	return r;
}

int apply_txn(struct batch *b, struct store_txn *t)
{
	int r = kv_check_space(b, t->frees_only);

	for (size_t i = 0; i < t->n && !r; i++)
		r = apply_op(b, &t->ops[i]);
	return r;
}
