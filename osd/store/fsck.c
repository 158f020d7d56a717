/*
 * fsck.c - rebuilding the allocator at open, and checking a whole store.
 *
 * The chunk records are the truth about which blocks hold data; the
 * allocator is derived from them at every open (a scan of the chunks
 * database only, so a store of a million small inline objects opens
 * fast).  fsck walks everything: every kv value's crc, every onode and
 * its chunks, blocks used twice or outside the data area, records that
 * belong to no object, the counters, the live allocator against the
 * records, and with deep every data block's crc.  Each problem is one
 * sentence naming the object.
 */
#include <errno.h>
#include <inttypes.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "log.h"
#include "store-int.h"

#define BS STORE_BLOCK_SIZE

/* The runs of a chunk record's value (pv, pl) into runs; false if it is
 * damaged or names blocks outside the data area. */
static bool chunk_value_runs(struct store *st, const void *pv, size_t pl, struct runvec *runs,
			     int *err)
{
	struct chunk ch;

	*err = 0;
	if (chunk_decode(&ch, pv, pl))
		return false;
	if (chunk_runs(&ch, runs)) {
		*err = -ENOMEM;
		return false;
	}
	for (size_t i = 0; i < runs->n; i++) {
		const struct run *r = &runs->v[i];

		if (r->start < st->data_start || r->start + r->len > st->nblocks ||
		    r->start + r->len < r->start)
			return false;
	}
	return true;
}

/* The chunk records the log holds (replayed into the overlay) replace the
 * kv's: first every replaced record's blocks are freed, then every logged
 * record's marked, since a block freed by one logged change may have gone
 * to another chunk since. */
static int alloc_logged_chunks(struct store *st, MDB_txn *t, uint64_t *used, uint64_t *bad)
{
	uint64_t *ids = NULL;
	size_t n = 0;
	int r = kvo_ids(st, KVDB_CHUNK, UINT64_MAX - 1, &ids, &n);

	for (int pass = 0; pass < 2 && !r; pass++) {
		for (size_t i = 0; i < n && !r; i++) {
			struct kv_view ov;

			r = kvo_view(st, KVDB_CHUNK, ids[i], UINT64_MAX - 1, &ov);
			for (size_t j = 0; j < ov.n && !r; j++) {
				uint8_t key[KVDB_KEY_MAX];
				struct runvec runs = { 0 };
				const void *pv = ov.e[j].v;
				size_t pl = ov.e[j].vl;
				bool ok;

				if (pass == 0 &&
				    kv_get(t, st->kv.chunks, key,
					   kvdb_key(key, KVDB_CHUNK, ids[i], ov.e[j].k, ov.e[j].kl),
					   &pv, &pl))
					continue;	/* none in the kv (or damaged: counted) */
				if (pass == 1 && ov.e[j].del)
					continue;
				ok = chunk_value_runs(st, pv, pl, &runs, &r);
				for (size_t x = 0; ok && x < runs.n; x++) {
					if (pass == 0) {
						alloc_put(&st->alloc, runs.v[x].start, runs.v[x].len);
						*used -= runs.v[x].len;
					} else {
						st->double_used += alloc_mark_used(&st->alloc,
										   runs.v[x].start,
										   runs.v[x].len);
						*used += runs.v[x].len;
					}
				}
				if (!ok && !r && pass == 1)
					(*bad)++;
				runvec_free(&runs);
			}
			kvo_view_free(&ov);
		}
	}
	free(ids);
	return r;
}

int store_rebuild_alloc(struct store *st, MDB_txn *t)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t used = 0, bad = 0;
	int rc, lr;

	rc = mdb_cursor_open(t, st->kv.chunks, &c);
	if (rc)
		return kv_err(rc);
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		const void *pv;
		size_t pl;
		struct chunk ch;
		struct runvec runs = { 0 };

		if (kv_unwrap(&v, &pv, &pl) || chunk_decode(&ch, pv, pl)) {
			bad++;
			continue;
		}
		if (chunk_runs(&ch, &runs)) {
			mdb_cursor_close(c);
			return -ENOMEM;
		}
		for (size_t i = 0; i < runs.n; i++) {
			struct run *r = &runs.v[i];

			if (r->start < st->data_start || r->start + r->len > st->nblocks ||
			    r->start + r->len < r->start) {
				bad++;
				continue;
			}
			st->double_used += alloc_mark_used(&st->alloc, r->start, r->len);
			used += r->len;
		}
		runvec_free(&runs);
	}
	mdb_cursor_close(c);
	if (rc != MDB_NOTFOUND)
		return kv_err(rc);
	lr = alloc_logged_chunks(st, t, &used, &bad);
	if (lr)
		return lr;
	if (bad || st->double_used)
		log_error("store", "%" PRIu64 " damaged chunk records and %" PRIu64
			  " blocks used twice: run fsck", bad, st->double_used);
	if (used != st->stats.used_blocks)
		log_warn("store", "chunk records use %" PRIu64 " blocks, the counter says %" PRIu64
			 ": run fsck", used, st->stats.used_blocks);
	return 0;
}

/* ---- fsck ------------------------------------------------------------------ */

struct oref {
	uint64_t id;
	uint64_t coll;
	uint64_t size;
	bool chunked;
	char *name;
};

struct fsck {
	struct store *st;
	MDB_txn *t;
	bool deep;
	store_report_fn report;
	void *arg;
	int problems;
	struct oref *objs;
	size_t nobjs, cap;
	uint64_t *bitmap;	/* blocks referenced by records */
	uint64_t used;
	uint64_t stored;
	uint64_t saved;
	uint8_t *blk;		/* one aligned block */
	struct reader rd;	/* rd.vseq: which logged blocks fsck sees */
};

static void problem(struct fsck *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void problem(struct fsck *f, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	f->problems++;
	log_warn("fsck", "%s", msg);
	if (f->report)
		f->report(f->arg, msg);
}

static int oref_cmp(const void *a, const void *b)
{
	const struct oref *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct oref *oref_find(struct fsck *f, uint64_t id)
{
	struct oref key = { .id = id };

	if (!f->nobjs)
		return NULL;
	return bsearch(&key, f->objs, f->nobjs, sizeof(key), oref_cmp);
}

static const char *dbname(struct fsck *f, MDB_dbi dbi)
{
	struct kv *kv = &f->st->kv;

	return dbi == kv->attrs ? "attribute" : dbi == kv->omap ? "omap value" : "record";
}

/* One object's onode (value pv, pl bytes): checked and collected. */
static int check_onode(struct fsck *f, uint64_t coll, const char *name, const void *pv, size_t pl)
{
	struct onode o;

	if (onode_decode(&o, pv, pl)) {
		problem(f, "object '%s' in collection 0x%" PRIx64 ": its onode is malformed",
			name, coll);
		return 0;
	}
	if (kv_coll_get(&f->st->kv, f->t, coll, NULL))
		problem(f, "object '%s' belongs to collection 0x%" PRIx64 ", which does not exist",
			name, coll);
	if (o.id >= f->st->next_id)
		problem(f, "object '%s' in collection 0x%" PRIx64 " has id %" PRIu64
			" beyond the next id %" PRIu64, name, coll, o.id, f->st->next_id);
	if (f->nobjs == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		struct oref *n = realloc(f->objs, cap * sizeof(*n));

		if (!n) {
			onode_clear(&o);
			return -ENOMEM;
		}
		f->objs = n;
		f->cap = cap;
	}
	f->objs[f->nobjs].id = o.id;
	f->objs[f->nobjs].coll = coll;
	f->objs[f->nobjs].size = o.size;
	f->objs[f->nobjs].chunked = o.flags & ONODE_CHUNKED;
	f->objs[f->nobjs].name = strdup(name);
	onode_clear(&o);
	if (!f->objs[f->nobjs].name)
		return -ENOMEM;
	f->stored += f->objs[f->nobjs].size;
	f->nobjs++;
	return 0;
}

/* Calls fn for each key of db that only the log holds (set since its
 * checkpoint, missing from the kv, which the kv passes walk): those of
 * every id the overlay names.  fn's non-zero value stops the walk. */
static int each_logged_only(struct fsck *f, int db,
			    int (*fn)(struct fsck *f, uint64_t id, const struct kv_view_ent *e))
{
	struct store *st = f->st;
	uint64_t *ids = NULL;
	size_t n = 0;
	int r = kvo_ids(st, db, f->rd.vseq, &ids, &n);

	for (size_t i = 0; i < n && !r; i++) {
		struct kv_view ov;

		r = kvo_view(st, db, ids[i], f->rd.vseq, &ov);
		for (size_t j = 0; j < ov.n && !r; j++) {
			uint8_t key[KVDB_KEY_MAX];
			const void *v;
			size_t vl;

			if (ov.e[j].del || !ov.e[j].kl)
				continue;
			if (kv_get(f->t, kvdb_dbi(&st->kv, db), key,
				   kvdb_key(key, db, ids[i], ov.e[j].k, ov.e[j].kl), &v, &vl) != -ENOENT)
				continue;	/* the kv pass saw it */
			r = fn(f, ids[i], &ov.e[j]);
		}
		kvo_view_free(&ov);
	}
	free(ids);
	return r;
}

static int logged_onode(struct fsck *f, uint64_t coll, const struct kv_view_ent *e)
{
	char name[STORE_NAME_MAX + 1];

	if (e->kl > STORE_NAME_MAX)
		return 0;
	memcpy(name, e->k, e->kl);
	name[e->kl] = 0;
	return check_onode(f, coll, name, e->v, e->vl);
}

/* Pass 1: onodes, the kv's merged with the log's.  Collects every
 * object's id and name. */
static int check_onodes(struct fsck *f)
{
	struct kv *kv = &f->st->kv;
	MDB_cursor *c;
	MDB_val k, v;
	int r = 0, rc;

	rc = mdb_cursor_open(f->t, kv->onodes, &c);
	if (rc)
		return kv_err(rc);
	while (!r && (rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		char name[STORE_NAME_MAX + 1];
		uint64_t coll;
		const void *pv;
		void *lv;
		size_t pl, nl;

		if (k.mv_size <= 8 || k.mv_size > 8 + STORE_NAME_MAX) {
			problem(f, "an object key of %zu bytes is malformed", k.mv_size);
			continue;
		}
		coll = get_be64(k.mv_data);
		nl = k.mv_size - 8;
		memcpy(name, (uint8_t *)k.mv_data + 8, nl);
		name[nl] = 0;
		/* A logged version (or removal) of the onode is the newer. */
		r = kvo_get(f->st, KVDB_ONODE, coll, name, nl, f->rd.vseq, &lv, &pl);
		if (r >= 0) {
			bool found = r > 0;

			r = found ? check_onode(f, coll, name, lv, pl) : 0;
			if (found)
				free(lv);
			continue;
		}
		if (r != -ENOENT)
			break;
		r = 0;
		if (kv_unwrap(&v, &pv, &pl)) {
			problem(f, "object '%s' in collection 0x%" PRIx64 ": its onode (size, "
				"inline data) has a bad checksum", name, coll);
			continue;
		}
		r = check_onode(f, coll, name, pv, pl);
	}
	mdb_cursor_close(c);
	if (r)
		return r;
	if (rc != MDB_NOTFOUND)
		return kv_err(rc);
	r = each_logged_only(f, KVDB_ONODE, logged_onode);
	if (r)
		return r;
	if (f->nobjs)
		qsort(f->objs, f->nobjs, sizeof(*f->objs), oref_cmp);
	for (size_t i = 1; i < f->nobjs; i++)
		if (f->objs[i].id == f->objs[i - 1].id)
			problem(f, "objects '%s' and '%s' share id %" PRIu64, f->objs[i - 1].name,
				f->objs[i].name, f->objs[i].id);
	return 0;
}

static void mark_blocks(struct fsck *f, const struct oref *o, uint64_t start, uint64_t len)
{
	struct store *st = f->st;

	if (start < st->data_start || start + len > st->nblocks || start + len < start) {
		problem(f, "object '%s': blocks %" PRIu64 "..%" PRIu64 " lie outside the data area",
			o->name, start, start + len - 1);
		return;
	}
	for (uint64_t b = start; b < start + len; b++) {
		uint64_t i = b - st->data_start;

		if (f->bitmap[i >> 6] & (1ull << (i & 63)))
			problem(f, "object '%s': block %" PRIu64 " is also used by another record",
				o->name, b);
		f->bitmap[i >> 6] |= 1ull << (i & 63);
	}
	f->used += len;
}

static void deep_check(struct fsck *f, const struct oref *o, uint32_t idx, const struct chunk *ch)
{
	struct store *st = f->st;

	if (ch->flags & CHUNK_COMPRESSED) {
		uint8_t *cbuf = bio_alloc((size_t)ch->cblocks * BS);
		uint8_t *plain = malloc(CHUNK_SIZE);
		bool ok = cbuf && plain;

		for (unsigned j = 0; ok && j < ch->cblocks; j++) {
			if (bio_pread(st->bfd, cbuf + (size_t)j * BS, BS, (ch->pblk[0] + j) * BS) ||
			    atoll__crc32c(0, cbuf + (size_t)j * BS, BS) != ch->crc[j]) {
				problem(f, "object '%s': block %" PRIu64 " (chunk %u, compressed) has a "
					"bad checksum", o->name, ch->pblk[0] + j, idx);
				ok = false;
			}
		}
		if (ok && LZ4_decompress_safe((const char *)cbuf, (char *)plain, (int)ch->clen,
					      (int)((size_t)ch->lblocks * BS)) !=
				  (int)((size_t)ch->lblocks * BS))
			problem(f, "object '%s': chunk %u does not decompress", o->name, idx);
		free(cbuf);
		free(plain);
		return;
	}
	for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
		if (!(ch->present & (1ull << i)))
			continue;
		{
			/* Logged and not yet in place: check the logged content. */
			int lr = wal_read(st, ch->pblk[i], f->rd.vseq, f->blk);

			if (lr < 0)
				problem(f, "object '%s': logged block at offset %" PRIu64 " (block %"
					PRIu64 ") is lost or has a bad checksum", o->name,
					((uint64_t)idx * CHUNK_BLOCKS + i) * BS, ch->pblk[i]);
			if (lr)
				continue;
		}
		if (bio_pread(st->bfd, f->blk, BS, ch->pblk[i] * BS) ||
		    atoll__crc32c(0, f->blk, BS) != ch->crc[i])
			problem(f, "object '%s': block %" PRIu64 " (offset %" PRIu64 ") has a bad checksum",
				o->name, ch->pblk[i], ((uint64_t)idx * CHUNK_BLOCKS + i) * BS);
	}
}

/* One chunk record (value pv, pl bytes; NULL: its crc is bad). */
static void check_chunk(struct fsck *f, uint64_t id, uint32_t idx, const void *pv, size_t pl)
{
	struct oref *o = oref_find(f, id);
	struct chunk ch;

	if (!o) {
		problem(f, "chunk %u of object id %" PRIu64 " belongs to no object", idx, id);
		return;
	}
	if (!pv) {
		problem(f, "object '%s': the record of chunk %u has a bad checksum", o->name, idx);
		return;
	}
	if (chunk_decode(&ch, pv, pl)) {
		problem(f, "object '%s': the record of chunk %u is malformed", o->name, idx);
		return;
	}
	if (!o->chunked)
		problem(f, "object '%s' keeps its data inline but has chunk %u", o->name, idx);
	if ((uint64_t)idx * CHUNK_SIZE >= o->size)
		problem(f, "object '%s': chunk %u lies past its size %" PRIu64, o->name, idx,
			o->size);
	if (ch.flags & CHUNK_COMPRESSED) {
		mark_blocks(f, o, ch.pblk[0], ch.cblocks);
		f->saved += (uint64_t)(ch.lblocks - ch.cblocks) * BS;
	} else {
		for (unsigned i = 0; i < CHUNK_BLOCKS; i++)
			if (ch.present & (1ull << i))
				mark_blocks(f, o, ch.pblk[i], 1);
	}
	if (f->deep)
		deep_check(f, o, idx, &ch);
}

static int logged_chunk(struct fsck *f, uint64_t id, const struct kv_view_ent *e)
{
	if (e->kl == 4)
		check_chunk(f, id, get_be32(e->k), e->v, e->vl);
	return 0;
}

/* Pass 2: chunk records, the kv's merged with the log's. */
static int check_chunks(struct fsck *f)
{
	MDB_cursor *c;
	MDB_val k, v;
	int r = 0, rc;

	rc = mdb_cursor_open(f->t, f->st->kv.chunks, &c);
	if (rc)
		return kv_err(rc);
	while (!r && (rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		const void *pv;
		void *lv;
		size_t pl;
		uint64_t id;
		uint32_t idx;

		if (k.mv_size != 12) {
			problem(f, "a chunk key of %zu bytes is malformed", k.mv_size);
			continue;
		}
		id = get_be64(k.mv_data);
		idx = get_be32((uint8_t *)k.mv_data + 8);
		/* A logged version (or removal) of the record is the newer. */
		r = kvo_get(f->st, KVDB_CHUNK, id, (uint8_t *)k.mv_data + 8, 4, f->rd.vseq, &lv, &pl);
		if (r >= 0) {
			if (r > 0) {
				check_chunk(f, id, idx, lv, pl);
				free(lv);
			}
			r = 0;
			continue;
		}
		if (r != -ENOENT)
			break;
		r = 0;
		if (kv_unwrap(&v, &pv, &pl))
			pv = NULL;
		check_chunk(f, id, idx, pv, pl);
	}
	mdb_cursor_close(c);
	if (r)
		return r;
	if (rc != MDB_NOTFOUND)
		return kv_err(rc);
	/* The chunk records only the log holds (written since its checkpoint). */
	return each_logged_only(f, KVDB_CHUNK, logged_chunk);
}

/* Pass 3: attributes and omap values: crc and owner. */
static int check_values(struct fsck *f, MDB_dbi dbi)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	rc = mdb_cursor_open(f->t, dbi, &c);
	if (rc)
		return kv_err(rc);
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		const void *pv;
		size_t pl;
		struct oref *o;
		char key[80];
		size_t kl;

		if (k.mv_size <= 8) {
			problem(f, "a %s key of %zu bytes is malformed", dbname(f, dbi), k.mv_size);
			continue;
		}
		/* A printable rendering of the key for the report. */
		kl = min_u64(k.mv_size - 8, sizeof(key) - 1);
		for (size_t i = 0; i < kl; i++) {
			char ch = ((char *)k.mv_data)[8 + i];

			key[i] = ch >= 32 && ch < 127 ? ch : '?';
		}
		key[kl] = 0;
		o = oref_find(f, get_be64(k.mv_data));
		if (!o && kvo_cleared(f->st, kvdb_of(&f->st->kv, dbi),
				      get_be64(k.mv_data), f->rd.vseq))
			continue;	/* removed; the log's checkpoint drops it */
		if (!o) {
			problem(f, "%s '%s' belongs to no object (id %" PRIu64 ")", dbname(f, dbi), key,
				get_be64(k.mv_data));
			continue;
		}
		if (kv_unwrap(&v, &pv, &pl))
			problem(f, "object '%s' in collection 0x%" PRIx64 ": %s '%s' has a bad checksum",
				o->name, o->coll, dbname(f, dbi), key);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : kv_err(rc);
}

static int check_meta(struct fsck *f)
{
	struct kv *kv = &f->st->kv;
	MDB_dbi dbs[2] = { kv->meta, kv->colls };

	for (int i = 0; i < 2; i++) {
		MDB_cursor *c;
		MDB_val k, v;
		int rc = mdb_cursor_open(f->t, dbs[i], &c);

		if (rc)
			return kv_err(rc);
		while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
			const void *pv;
			size_t pl;

			if (kv_unwrap(&v, &pv, &pl))
				problem(f, "a %s record (key of %zu bytes) has a bad checksum",
					i ? "collection" : "store metadata", k.mv_size);
		}
		mdb_cursor_close(c);
		if (rc != MDB_NOTFOUND)
			return kv_err(rc);
	}
	return 0;
}

/* Pass 4: counters and the live allocator. */
static void check_counters(struct fsck *f)
{
	struct store *st = f->st;
	uint64_t nblk = st->nblocks - st->data_start;

	if (st->stats.objects != f->nobjs)
		problem(f, "the object counter says %" PRIu64 ", there are %zu objects",
			st->stats.objects, f->nobjs);
	if (st->stats.used_blocks != f->used)
		problem(f, "the used-block counter says %" PRIu64 ", records use %" PRIu64,
			st->stats.used_blocks, f->used);
	if (st->stats.stored != f->stored)
		problem(f, "the stored-bytes counter says %" PRIu64 ", objects hold %" PRIu64,
			st->stats.stored, f->stored);
	if (st->stats.compressed_saved != f->saved)
		problem(f, "the compression counter says %" PRIu64 " bytes saved, records save %" PRIu64,
			st->stats.compressed_saved, f->saved);

	/* Blocks in limbo are freed but may still be read, and prewritten
	 * blocks wait for their commit: neither are leaks. */
	uint64_t *limbo = calloc((nblk + 63) / 64 + 1, 8);

	if (!limbo)
		return;
	pthread_mutex_lock(&st->rlock);
	for (struct limbo *l = st->limbo_head; l; l = l->next)
		for (size_t i = 0; i < l->runs.n; i++)
			for (uint64_t b = l->runs.v[i].start; b < l->runs.v[i].start + l->runs.v[i].len; b++)
				limbo[(b - st->data_start) >> 6] |= 1ull << ((b - st->data_start) & 63);
	pthread_mutex_unlock(&st->rlock);

	uint64_t leaked = 0, first_leak = 0, wrong = 0, first_wrong = 0;

	pthread_mutex_lock(&st->amutex);
	/* Blocks prewritten for transactions not yet committed: in use. */
	for (struct prewrite *pw = st->prew_head; pw; pw = pw->next)
		for (size_t i = 0; i < pw->runs.n; i++)
			for (uint64_t b = pw->runs.v[i].start; b < pw->runs.v[i].start + pw->runs.v[i].len; b++)
				limbo[(b - st->data_start) >> 6] |= 1ull << ((b - st->data_start) & 63);
	for (uint64_t i = 0; i < nblk; i++) {
		bool ref = f->bitmap[i >> 6] & (1ull << (i & 63));
		bool lim = limbo[i >> 6] & (1ull << (i & 63));
		bool fre = alloc_is_free(&st->alloc, st->data_start + i);

		if (ref && fre && !wrong++)
			first_wrong = st->data_start + i;
		if (!ref && !fre && !lim && !leaked++)
			first_leak = st->data_start + i;
	}
	pthread_mutex_unlock(&st->amutex);
	free(limbo);
	if (wrong)
		problem(f, "the allocator holds %" PRIu64 " blocks in use as free (first: %" PRIu64 ")",
			wrong, first_wrong);
	if (leaked)
		problem(f, "%" PRIu64 " blocks are allocated but hold no data (first: %" PRIu64 ")",
			leaked, first_leak);
}

static void wal_problem(void *arg, const char *msg)
{
	problem(arg, "%s", msg);
}

int store_fsck(struct store *st, bool deep, store_report_fn report, void *arg)
{
	struct fsck f;
	uint64_t nblk;
	int r;

	if (!st)
		return -EINVAL;
	memset(&f, 0, sizeof(f));
	f.st = st;
	f.deep = deep;
	f.report = report;
	f.arg = arg;
	f.rd.vseq = UINT64_MAX - 1;	/* a quiet store: the newest of everything */
	nblk = st->nblocks - st->data_start;
	f.bitmap = calloc((nblk + 63) / 64 + 1, 8);
	f.blk = bio_alloc(BS);
	if (!f.bitmap || !f.blk) {
		r = -ENOMEM;
		goto out;
	}
	/* Check a quiet store: no batch half way, allocator and kv in step.
	 * (Not under a lock: completions may queue more work.) */
	commit_drain(st);
	pthread_mutex_lock(&st->alloc_lock);
	r = kv_err(mdb_txn_begin(st->kv.env, NULL, MDB_RDONLY, &f.t));
	if (r)
		goto out_unlock;
	if (st->double_used)
		problem(&f, "%" PRIu64 " blocks were found used twice when the store was opened",
			st->double_used);
	r = check_meta(&f);
	if (!r)
		r = check_onodes(&f);
	if (!r)
		r = check_chunks(&f);
	if (!r)
		r = check_values(&f, st->kv.attrs);
	if (!r)
		r = check_values(&f, st->kv.omap);
	if (!r)
		check_counters(&f);
	if (!r)
		wal_check(st, wal_problem, &f);
	mdb_txn_abort(f.t);
out_unlock:
	pthread_mutex_unlock(&st->alloc_lock);
out:
	for (size_t i = 0; i < f.nobjs; i++)
		free(f.objs[i].name);
	free(f.objs);
	free(f.bitmap);
	free(f.blk);
	return r ? r : f.problems;
}
