/*
 * wal.c - the write-ahead log of small overwrites, in a region of the block.
 *
 * A durable 4 KiB overwrite through the kv cost 4-5 random kv page writes
 * and a kv flush (doc/store.md, "Where the time goes").  Instead, a small
 * overwrite of a block that already holds data goes into the batch's log
 * record: the commit thread writes one record per batch, sequentially, into
 * the log region (blocks SB_DATA_START .. data_start), with the data writes
 * of the batch's large writes, and one fdatasync of the block covers both.
 * A batch made only of such overwrites touches no kv page at all and
 * completes right after that flush.
 *
 * The record's blocks live in memory in an index keyed by physical block
 * (versions of one block chained newest first, each visible to readers
 * whose snapshot lies in [seq, end)).  Readers and the commit thread look
 * there before reading a block from the device.  The chunk records in the
 * kv are not touched by a logged write: they keep the crc of the block's
 * content on the device.
 *
 * Checkpoint (16 MiB logged or a quarter of the log used, no room for the
 * next batch, idle, close, open): the newest logged version of each block
 * is written in place (the one in-place overwrite of acknowledged data
 * the design allows: the replay of a journaled small write, doc/store.md) -- submitted
 * asynchronously while batches go on -- and flushed, then one kv
 * transaction sets the chunk records' crcs and the log's checkpoint (lsn
 * and position), and is synced.  That transaction runs on the checkpointer
 * thread while the commit thread applies the next batches read-only
 * (commit.c); the commit thread then retires what it covered under a new
 * commit number, and log space before it is reused.  Only records no
 * reader older than them remains for are applied (such a reader may still
 * read the block's old content).
 *
 * Open replays the records after the checkpoint: record N+1 lies right after
 * record N (or at the start of the region's next lap), carries lsn N+1 and
 * its own position, and a crc32c of header and entry table; each data block
 * has its crc in the table.  Replay stops at the first record that does not
 * fit.  A record whose header is good but a data block is not is either torn
 * (its flush never completed: the last record) or damaged (a later record,
 * or its kv part, proves it was complete): the first is dropped, the second
 * kept with that block marked lost, so reads of it fail with -EIO and the
 * checkpoint stores the lost content's crc, keeping it -EIO until rewritten.
 * A record whose batch also changed the kv (flag KV) counts only if the kv
 * reached that batch (meta/seq), so a transaction is never half applied.
 *
 * kv mutations ride in the same record, after the entry table and under
 * the header's crc: attributes and omap (set, remove, clear of an object's
 * keys) by object id, onodes (an object's creation, growth, truncation,
 * removal) by collection and object name, and the store's counters.  They
 * are kept in an overlay by id (versions visible in [seq, end) like the
 * blocks'), merged into every lookup and listing (read.c, and the apply
 * code's onode loads), replayed at open (the last record's counters
 * replace the kv's) and applied to the kv in log order by the
 * checkpoint's kv transaction.  A batch that commits the kv anyway (chunk
 * records, collections) puts its mutations there instead, when no overlay
 * mutation of the same ids is pending (kvo_batch_to_txn).
 *
 * Blocks freed by a commit are not reused before every record older than
 * that commit is checkpointed (limbo_release): a stale logged version of a
 * freed block is then never replayed onto, nor read from, its next owner.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "wal-int.h"

#define BS STORE_BLOCK_SIZE
#define WAL_MAGIC 0x4c415741u	/* "AWAL" */
/* 2: onode and counter mutations; 3: chunk record mutations.  1 and 2
 * are still read. */
#define WAL_VERSION 3u
#define WAL_HDR 64u
#define WAL_ENT 32u
#define WAL_F_KV 0x1u
#define HASH_BITS 14u

struct wal_hdr {		/* little-endian, WAL_HDR bytes */
	uint32_t magic;
	uint16_t version;
	uint16_t flags;
	uint32_t crc;		/* of header (this field 0) and entry table */
	uint32_t nent;
	uint64_t lsn;
	uint64_t vpos;		/* its own position, in blocks of the log's life */
	uint64_t seq;		/* the batch's commit number */
	uint32_t nblocks;	/* the whole record */
	uint32_t kvbytes;	/* kv mutations after the entry table */
	uint8_t reserved[16];
};

_Static_assert(sizeof(struct wal_hdr) == WAL_HDR, "log header layout");
_Static_assert(sizeof(struct walb_ent) == WAL_ENT, "log entry layout");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "log records are little-endian");


/* Header, entry table and kv mutations; the data blocks follow. */
static uint64_t table_bytes(uint64_t n, uint64_t kvbytes)
{
	return WAL_HDR + n * WAL_ENT + kvbytes;
}

static uint64_t table_blocks(uint64_t n, uint64_t kvbytes)
{
	return (table_bytes(n, kvbytes) + BS - 1) / BS;
}




static uint64_t hslot(uint64_t pblk)
{
	return (pblk * 0x9e3779b97f4a7c15ull) >> (64 - HASH_BITS);
}

/* ---- setup -------------------------------------------------------------- */

uint64_t wal_default_blocks(uint64_t nblocks)
{
	uint64_t w = nblocks / 32;

	if (w > WAL_MAX_BLOCKS)
		w = WAL_MAX_BLOCKS;
	if (w < WAL_MIN_BLOCKS)
		w = WAL_MIN_BLOCKS;
	return w;
}

int wal_init(struct store *st)
{
	struct wal *w = &st->wal;

	w->start = SB_DATA_START;
	w->blocks = st->data_start - SB_DATA_START;
	w->rec_max = w->blocks / 4;
	w->next_lsn = 1;
	w->hash = calloc((size_t)1 << HASH_BITS, sizeof(*w->hash));
	w->ohash = calloc((size_t)1 << OHASH_BITS, sizeof(*w->ohash));
	w->khash = calloc((size_t)1 << KHASH_BITS, sizeof(*w->khash));
	if (!w->hash || !w->ohash || !w->khash)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->pool_lock, NULL);
	w->lock_ok = true;
	return 0;
}

/* Block buffers kept for reuse at most: as many as one checkpoint slice
 * frees at once (DEFER_APPLY_SLICE in commit.c), 16 MiB. */
#define WAL_POOL_MAX 4096u

struct wal_ent *wal_ent_new(struct wal *w)
{
	struct wal_ent *e = malloc(sizeof(*e));

	if (!e)
		return NULL;
	pthread_mutex_lock(&w->pool_lock);
	e->data = w->pool;
	if (e->data) {
		memcpy(&w->pool, e->data, sizeof(void *));
		w->npool--;
	}
	pthread_mutex_unlock(&w->pool_lock);
	if (!e->data && !(e->data = bio_alloc_uninit(BS))) {
		free(e);
		return NULL;
	}
	return e;
}

void wal_ent_free(struct wal *w, struct wal_ent *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&w->pool_lock);
	if (w->npool < WAL_POOL_MAX) {
		memcpy(e->data, &w->pool, sizeof(void *));
		w->pool = e->data;
		w->npool++;
		e->data = NULL;
	}
	pthread_mutex_unlock(&w->pool_lock);
	free(e->data);
	free(e);
}

static void free_list(struct wal *w, struct wal_ent *e)
{
	while (e) {
		struct wal_ent *n = e->lnext;

		wal_ent_free(w, e);
		e = n;
	}
}

void wal_destroy(struct store *st)
{
	struct wal *w = &st->wal;

	wal_ckpt_clear(&w->ck);
	free_list(w, w->live_head);
	free_list(w, w->retired);
	while (w->pool) {
		void *b = w->pool;

		memcpy(&w->pool, b, sizeof(void *));
		free(b);
	}
	w->npool = 0;
	for (struct kvo_op *o = w->kv_live_head, *n; o; o = n) {
		n = o->lnext;
		free(o);
	}
	for (struct kvo_op *o = w->kv_retired, *n; o; o = n) {
		n = o->lnext;
		free(o);
	}
	if (w->ohash)
		for (size_t i = 0; i < ((size_t)1 << OHASH_BITS); i++)
			for (struct kvo_obj *ob = w->ohash[i], *n; ob; ob = n) {
				n = ob->hnext;
				free(ob);
			}
	free(w->ohash);
	free(w->khash);
	free(w->hash);
	free(w->recs);
	if (w->lock_ok) {
		pthread_mutex_destroy(&w->lock);
		pthread_mutex_destroy(&w->pool_lock);
	}
	memset(w, 0, sizeof(*w));
}

/* ---- the batch's entries ------------------------------------------------ */

bool walb_room(const struct batch *b, uint64_t k)
{
	const struct wal *w = &b->st->wal;
	uint64_t n = b->wal.n + k;

	return w->rec_max && table_blocks(n, b->wal.kvlen) + n <= w->rec_max;
}

bool walb_any(const struct batch *b)
{
	return b->wal.n || b->wal.nkv;
}

int walb_kv_add(struct batch *b, int type, int db, uint64_t id, const void *k, size_t kl,
		const void *v, size_t vl)
{
	const struct wal *w = &b->st->wal;
	struct walb *wb = &b->wal;
	struct kvop_hdr h = { (uint8_t)type, (uint8_t)db, (uint16_t)kl, (uint32_t)vl, id };
	size_t need = sizeof(h) + kl + vl;

	if (kl > UINT16_MAX || vl > UINT32_MAX ||
	    !w->rec_max || table_blocks(wb->n, wb->kvlen + need) + wb->n > w->rec_max)
		return -EOVERFLOW;
	if (wb->kvlen + need > wb->kvcap) {
		size_t cap = wb->kvcap ? wb->kvcap : 4096;
		uint8_t *n;

		while (cap < wb->kvlen + need)
			cap *= 2;
		n = realloc(wb->kv, cap);
		if (!n)
			return -ENOMEM;
		wb->kv = n;
		wb->kvcap = cap;
	}
	if (!wb->kvh && !(wb->kvh = calloc(WALB_KH, sizeof(*wb->kvh))))
		return -ENOMEM;
	if (wb->nkv == wb->kvecap) {
		uint32_t cap = wb->kvecap ? wb->kvecap * 2 : 64;
		struct walb_kvent *n = realloc(wb->kvent, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		wb->kvent = n;
		wb->kvecap = cap;
	}
	{
		uint32_t bkt = kvo_hash(db, id, k, type == KVOP_CLEAR ? 0 : kl) & (WALB_KH - 1);

		wb->kvent[wb->nkv].off = (uint32_t)wb->kvlen;
		wb->kvent[wb->nkv].prev = wb->kvh[bkt];
		wb->kvh[bkt] = wb->nkv + 1;
	}
	if (type == KVOP_CLEAR)
		wb->kvclear = true;
	memcpy(wb->kv + wb->kvlen, &h, sizeof(h));
	if (kl)
		memcpy(wb->kv + wb->kvlen + sizeof(h), k, kl);
	if (vl)
		memcpy(wb->kv + wb->kvlen + sizeof(h) + kl, v, vl);
	wb->kvlen += need;
	wb->nkv++;
	return 0;
}

void walb_kv_clear(struct walb *wb)
{
	if (wb->nkv && wb->kvh)
		memset(wb->kvh, 0, WALB_KH * sizeof(*wb->kvh));
	wb->kvlen = 0;
	wb->nkv = 0;
	wb->kvclear = false;
}

int walb_kv_meta(struct batch *b)
{
	struct store *st = b->st;
	uint8_t buf[64];
	int r = 0;

	if (memcmp(&b->stats, &st->stats, sizeof(b->stats)))
		r = walb_kv_add(b, KVOP_SET, KVDB_META, 0, "stats", 5, buf,
				stats_encode(&b->stats, buf));
	if (!r && b->next_id != st->next_id)
		r = walb_kv_add(b, KVOP_SET, KVDB_META, 0, "next_id", 7, &b->next_id, 8);
	return r;
}

int wal_kvops_decode(const uint8_t *p, size_t len, int db_max,
		     int (*fn)(void *arg, const struct wal_kvop *op), void *arg)
{
	size_t off = 0;
	int n = 0, r;

	while (off < len) {
		struct kvop_hdr h;
		struct wal_kvop op;

		if (len - off < sizeof(h))
			return -ENOENT;
		memcpy(&h, p + off, sizeof(h));
		off += sizeof(h);
		if (h.db > db_max || h.type < KVOP_SET || h.type > KVOP_CLEAR)
			return -ENOENT;
		if (h.type == KVOP_CLEAR ? h.klen || h.vlen || h.db > KVDB_OMAP :
		    !h.klen || h.klen > KVOP_KEY_MAX || (h.type == KVOP_DEL && h.vlen))
			return -ENOENT;
		if (len - off < (size_t)h.klen + h.vlen)
			return -ENOENT;
		if (h.db == KVDB_CHUNK && h.type != KVOP_CLEAR) {
			/* A chunk's number, and a record that decodes. */
			struct chunk c;

			if (h.klen != 4 ||
			    (h.type == KVOP_SET && chunk_decode(&c, p + off + 4, h.vlen)))
				return -ENOENT;
		}
		op = (struct wal_kvop){ h.type, h.db, h.id, p + off, p + off + h.klen, h.klen, h.vlen };
		off += (size_t)h.klen + h.vlen;
		if (fn && (r = fn(arg, &op)))
			return r;
		n++;
	}
	return n;
}

static int64_t walb_find(const struct walb *wb, uint64_t pblk)
{
	for (uint32_t j = wb->n; j-- > 0;)
		if (wb->ents[j].pblk == pblk)
			return j;
	return -1;
}

int walb_add(struct batch *b, uint64_t id, uint64_t lblk, uint64_t pblk,
	     const uint8_t *data, uint32_t crc)
{
	struct walb *wb = &b->wal;
	int64_t j = walb_find(wb, pblk);

	if (j < 0) {
		if (wb->n == wb->cap) {
			uint32_t cap = wb->cap ? wb->cap * 2 : 32;
			struct walb_ent *e = realloc(wb->ents, cap * sizeof(*e));
			uint8_t *nd;

			if (!e)
				return -ENOMEM;
			wb->ents = e;
			nd = realloc(wb->data, (size_t)cap * BS);
			if (!nd)
				return -ENOMEM;
			wb->data = nd;
			wb->cap = cap;
		}
		j = wb->n++;
	}
	wb->ents[j] = (struct walb_ent){ pblk, id, lblk, crc, 0 };
	memcpy(wb->data + (size_t)j * BS, data, BS);
	return 0;
}

bool walb_lookup(const struct batch *b, uint64_t pblk, void *out)
{
	int64_t j = walb_find(&b->wal, pblk);

	if (j < 0)
		return false;
	memcpy(out, b->wal.data + (size_t)j * BS, BS);
	return true;
}

void walb_free(struct walb *wb)
{
	free(wb->ents);
	free(wb->data);
	free(wb->kv);
	free(wb->kvh);
	free(wb->kvent);
	memset(wb, 0, sizeof(*wb));
}

/* ---- the index ----------------------------------------------------------- */

bool wal_active(struct store *st)
{
	return __atomic_load_n(&st->wal.nents, __ATOMIC_ACQUIRE) != 0;
}

static struct wal_ent *find_head(struct wal *w, uint64_t pblk, struct wal_ent ***link)
{
	struct wal_ent **pp = &w->hash[hslot(pblk)];

	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->pblk == pblk) {
			if (link)
				*link = pp;
			return *pp;
		}
	if (link)
		*link = pp;
	return NULL;
}

void wal_chunk_crcs(struct store *st, const struct batch *b, uint64_t id, uint32_t idx,
		    struct chunk *c, uint64_t fresh)
{
	struct wal *w = &st->wal;
	const struct walb *wb = &b->wal;

	if (c->flags & CHUNK_COMPRESSED)
		return;
	if (wal_active(st)) {
		pthread_mutex_lock(&w->lock);
		for (unsigned i = 0; i < CHUNK_BLOCKS; i++) {
			const struct wal_ent *e;

			if (!(c->present & ~fresh & (1ull << i)))
				continue;
			e = find_head(w, c->pblk[i], NULL);
			/* Live: not yet in place, so the kv's crc may be older. */
			if (e && e->end == UINT64_MAX && e->id == id &&
			    e->lblk == (uint64_t)idx * CHUNK_BLOCKS + i)
				c->crc[i] = e->crc;
		}
		pthread_mutex_unlock(&w->lock);
	}
	for (uint32_t j = 0; j < wb->n; j++) {
		const struct walb_ent *be = &wb->ents[j];
		unsigned i = (unsigned)(be->lblk % CHUNK_BLOCKS);

		if (be->id == id && be->lblk / CHUNK_BLOCKS == idx &&
		    (c->present & ~fresh & (1ull << i)) &&
		    c->pblk[i] == be->pblk)
			c->crc[i] = be->crc;
	}
}

int wal_read(struct store *st, uint64_t pblk, uint64_t rseq, void *out)
{
	struct wal *w = &st->wal;
	struct wal_ent *e;
	int r = 0;

	if (!wal_active(st))
		return 0;
	pthread_mutex_lock(&w->lock);
	e = find_head(w, pblk, NULL);
	while (e && e->seq > rseq)
		e = e->older;
	if (e && rseq < e->end) {
		if (e->bad || atoll__crc32c(0, e->data, BS) != e->crc) {
			log_error("store", "logged block %llu (log record %llu) is lost or damaged",
				  (unsigned long long)pblk, (unsigned long long)e->lsn);
			r = -EIO;
		} else {
			memcpy(out, e->data, BS);
			r = 1;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

/* Adds one entry as the newest version of its block (w->lock held). */
static void index_add(struct wal *w, struct wal_ent *e)
{
	struct wal_ent **link;
	struct wal_ent *head = find_head(w, e->pblk, &link);

	e->newer = NULL;
	e->older = head;
	if (head) {
		if (head->end == UINT64_MAX)
			head->end = e->seq;
		head->newer = e;
		e->hnext = head->hnext;
		head->hnext = NULL;
	} else {
		e->hnext = NULL;
	}
	*link = e;
	e->lnext = NULL;
	if (w->live_tail)
		w->live_tail->lnext = e;
	else
		w->live_head = e;
	w->live_tail = e;
	w->nlive++;
	__atomic_store_n(&w->nents, w->nents + 1, __ATOMIC_RELEASE);
}

static void index_unlink(struct wal *w, struct wal_ent *e)
{
	if (e->newer) {
		e->newer->older = e->older;
	} else {
		struct wal_ent **link;

		find_head(w, e->pblk, &link);
		if (e->older) {
			e->older->hnext = e->hnext;
			*link = e->older;
		} else {
			*link = e->hnext;
		}
	}
	if (e->older)
		e->older->newer = e->newer;
	__atomic_store_n(&w->nents, w->nents - 1, __ATOMIC_RELEASE);
}

static int rec_push(struct wal *w, const struct wal_rec *r)
{
	if (w->rn == w->rcap) {
		size_t cap = w->rcap ? w->rcap * 2 : 64;
		struct wal_rec *n = realloc(w->recs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		w->recs = n;
		w->rcap = cap;
	}
	w->recs[w->rn++] = *r;
	return 0;
}

uint64_t wal_free_blocks(const struct store *st)
{
	return st->wal.blocks - (st->wal.head - st->wal.tail);
}

uint64_t wal_used_blocks(const struct store *st)
{
	return st->wal.head - st->wal.tail;
}

uint64_t wal_oldest_reader(struct store *st)
{
	uint64_t oldest;

	pthread_mutex_lock(&st->rlock);
	oldest = st->readers.next != &st->readers ? st->readers.next->seq : UINT64_MAX;
	pthread_mutex_unlock(&st->rlock);
	return oldest;
}

uint64_t wal_oldest_seq(struct store *st)
{
	uint64_t s;

	pthread_mutex_lock(&st->wal.lock);
	s = st->wal.rn ? st->wal.recs[0].seq : UINT64_MAX;
	pthread_mutex_unlock(&st->wal.lock);
	return s;
}

/* Frees retired versions no reader can see any more. */
void wal_gc(struct store *st)
{
	struct wal *w = &st->wal;
	uint64_t oldest = wal_oldest_reader(st);
	struct wal_ent **pp;

	pthread_mutex_lock(&w->lock);
	pp = &w->retired;
	while (*pp) {
		struct wal_ent *e = *pp;

		if (e->end <= oldest) {
			*pp = e->lnext;
			index_unlink(w, e);
			wal_ent_free(w, e);
		} else {
			pp = &e->lnext;
		}
	}
	for (struct kvo_op **op = &w->kv_retired; *op;) {
		struct kvo_op *o = *op;

		if (o->end <= oldest) {
			*op = o->lnext;
			kvo_unlink(w, o);
			free(o);
		} else {
			op = &o->lnext;
		}
	}
	pthread_mutex_unlock(&w->lock);
}

/* ---- writing records ------------------------------------------------------ */

/* Sets the crc of the record's first len bytes (header, table, kv
 * mutations). */
static void hdr_seal(uint8_t *rec, size_t len)
{
	struct wal_hdr h;
	uint32_t crc;

	memcpy(&h, rec, WAL_HDR);
	h.crc = 0;
	memcpy(rec, &h, WAL_HDR);
	crc = atoll__crc32c(0, rec, len);
	h.crc = crc;
	memcpy(rec, &h, WAL_HDR);
}

int wal_prepare(struct store *st, struct batch *b, bool kv, struct bio_write *out)
{
	struct wal *w = &st->wal;
	struct walb *wb = &b->wal;
	uint64_t tb = table_blocks(wb->n, wb->kvlen), nb = tb + wb->n, pos = w->head;
	struct wal_hdr h;
	uint8_t *rec;

	if (nb > w->rec_max)
		return -EOVERFLOW;
	if (pos % w->blocks + nb > w->blocks)
		pos = (pos / w->blocks + 1) * w->blocks;	/* next lap */
	if (pos + nb - w->tail > w->blocks)
		return -ENOSPC;	/* commit.c makes room before every batch */
	rec = bio_alloc_uninit(nb * BS);
	if (!rec)
		return -ENOMEM;
	/* what the table blocks leave over goes to the device: zeros, not
	 * old heap contents (the data blocks are written whole below) */
	size_t used = table_bytes(wb->n, wb->kvlen);
	memset(rec + used, 0, tb * BS - used);
	memset(&h, 0, sizeof(h));
	h.magic = WAL_MAGIC;
	h.version = WAL_VERSION;
	h.flags = kv ? WAL_F_KV : 0;
	h.nent = wb->n;
	h.lsn = w->next_lsn;
	h.vpos = pos;
	h.seq = wb->seq;
	h.nblocks = (uint32_t)nb;
	h.kvbytes = (uint32_t)wb->kvlen;
	memcpy(h.reserved, st->uuid, 16);
	memcpy(rec, &h, WAL_HDR);
	if (wb->n)
		memcpy(rec + WAL_HDR, wb->ents, (size_t)wb->n * WAL_ENT);
	if (wb->kvlen)
		memcpy(rec + WAL_HDR + (size_t)wb->n * WAL_ENT, wb->kv, wb->kvlen);
	hdr_seal(rec, used);
	if (wb->n)
		memcpy(rec + tb * BS, wb->data, (size_t)wb->n * BS);
	wb->rec = rec;
	wb->vpos = pos;
	wb->nblocks = nb;
	out->off = (w->start + pos % w->blocks) * BS;
	out->len = nb * BS;
	out->buf = rec;
	return 0;
}

int wal_publish(struct store *st, struct batch *b)
{
	struct wal *w = &st->wal;
	struct walb *wb = &b->wal;
	struct wal_rec rec = { w->next_lsn, wb->vpos, wb->seq, (uint32_t)wb->nblocks, wb->n };
	struct wal_ent **es = calloc(wb->n ? wb->n : 1, sizeof(*es));
	int r = 0;

	if (!es)
		return -ENOMEM;
	/* The kv mutations first: their overlay entries are visible to the
	 * same readers as the blocks (seq), once the batch is published. */
	r = kvo_publish(w, wb->kv, wb->kvlen, wb->nkv, wb->seq, w->next_lsn);
	if (r) {
		free(es);
		return r;
	}
	for (uint32_t j = 0; j < wb->n; j++) {
		es[j] = wal_ent_new(w);
		if (!es[j]) {
			r = -ENOMEM;
			goto out;
		}
	}
	pthread_mutex_lock(&w->lock);
	r = rec_push(w, &rec);
	if (!r) {
		for (uint32_t j = 0; j < wb->n; j++) {
			struct wal_ent *e = es[j];
			const struct walb_ent *be = &wb->ents[j];

			e->pblk = be->pblk;
			e->id = be->id;
			e->lblk = be->lblk;
			e->crc = be->crc;
			e->seq = wb->seq;
			e->lsn = w->next_lsn;
			e->end = UINT64_MAX;
			e->bad = false;
			memcpy(e->data, wb->data + (size_t)j * BS, BS);
			index_add(w, e);
			es[j] = NULL;
		}
		w->next_lsn++;
		w->head = wb->vpos + wb->nblocks;
	}
	pthread_mutex_unlock(&w->lock);
out:
	for (uint32_t j = 0; j < wb->n; j++)
		wal_ent_free(w, es[j]);
	free(es);
	st->deferred_blocks = w->nlive;
	__atomic_store_n(&st->deferred_kv_bytes, w->kv_live_bytes, __ATOMIC_RELAXED);
	return r;
}

/* ---- kv records of the log ----------------------------------------------- */

int wal_state_put(MDB_txn *t, struct kv *kv, uint64_t ckpt_lsn, uint64_t tail)
{
	uint64_t v[2] = { ckpt_lsn, tail };

	return kv_put(t, kv->meta, "wal", 3, v, sizeof(v));
}

int kv_seq_put(MDB_txn *t, struct kv *kv, uint64_t seq)
{
	return kv_put(t, kv->meta, "seq", 3, &seq, 8);
}

uint64_t kv_seq_get(MDB_txn *t, struct kv *kv)
{
	const void *v;
	size_t vl;
	uint64_t s = 0;

	if (!kv_get(t, kv->meta, "seq", 3, &v, &vl) && vl == 8)
		memcpy(&s, v, 8);
	return s;
}

static int wal_state_get(MDB_txn *t, struct kv *kv, uint64_t *ckpt_lsn, uint64_t *tail)
{
	const void *v;
	size_t vl;
	uint64_t s[2];
	int r = kv_get(t, kv->meta, "wal", 3, &v, &vl);

	if (r == -ENOENT) {
		*ckpt_lsn = 0;
		*tail = 0;
		return 0;
	}
	if (r)
		return r;
	if (vl != sizeof(s))
		return -EUCLEAN;
	memcpy(s, v, sizeof(s));
	*ckpt_lsn = s[0];
	*tail = s[1];
	return 0;
}

/* ---- replay at open ------------------------------------------------------- */

struct loaded {
	struct loaded *next;
	struct wal_rec rec;
	struct wal_hdr_info h;
	uint8_t *buf;		/* the whole record */
	uint64_t nbad;
	bool *bad;
};

int wal_hdr_decode(const void *hb, uint64_t vpos, const uint8_t uuid[16], uint64_t rec_max,
		   uint64_t room, struct wal_hdr_info *out)
{
	struct wal_hdr h;
	uint64_t nb;

	memcpy(&h, hb, WAL_HDR);
	if (h.magic != WAL_MAGIC || h.version < 1 || h.version > WAL_VERSION || h.vpos != vpos ||
	    memcmp(h.reserved, uuid, 16))
		return -ENOENT;
	nb = table_blocks(h.nent, h.kvbytes) + h.nent;
	if (h.nblocks != nb || nb > rec_max || nb > room)
		return -ENOENT;
	*out = (struct wal_hdr_info){ h.lsn, h.seq, h.nent, h.nblocks, h.crc, h.kvbytes,
				      h.version, h.flags };
	return 0;
}

int wal_rec_verify(const uint8_t *buf, const struct wal_hdr_info *h, bool *bad, uint64_t *nbad)
{
	uint64_t tb = table_blocks(h->nent, h->kvbytes);
	struct wal_hdr hc;
	uint32_t crc;

	/* The header's crc covers the header (crc field 0), the table and
	 * the kv mutations. */
	memcpy(&hc, buf, WAL_HDR);
	hc.crc = 0;
	crc = atoll__crc32c(0, &hc, WAL_HDR);
	crc = atoll__crc32c(crc, buf + WAL_HDR, (size_t)h->nent * WAL_ENT + h->kvbytes);
	if (crc != h->crc)
		return -ENOENT;
	/* A good crc over mutations that do not decode: not a record of ours
	 * (chunk record mutations only from version 3 on). */
	if (h->kvbytes && wal_kvops_decode(buf + WAL_HDR + (size_t)h->nent * WAL_ENT, h->kvbytes,
					   h->version >= 3 ? KVDB_CHUNK : KVDB_META, NULL,
					   NULL) < 0)
		return -ENOENT;
	*nbad = 0;
	for (uint32_t j = 0; j < h->nent; j++) {
		struct walb_ent de;

		memcpy(&de, buf + WAL_HDR + (size_t)j * WAL_ENT, WAL_ENT);
		bad[j] = atoll__crc32c(0, buf + (tb + j) * BS, BS) != de.crc;
		*nbad += bad[j];
	}
	return 0;
}

/* Reads and checks the record at vpos; 0 and *out, or -ENOENT. */
static int load_at(struct store *st, uint64_t vpos, uint64_t lsn, struct loaded **out,
		   uint64_t *seen_lsn, uint64_t *seen_seq)
{
	struct wal *w = &st->wal;
	uint64_t phys = vpos % w->blocks;
	uint8_t *hb = bio_alloc(BS), *buf = NULL;
	struct wal_hdr_info h;
	struct loaded *l = NULL;
	int r = -ENOENT;

	if (!hb)
		return -ENOMEM;
	if (bio_pread(st->bfd, hb, BS, (w->start + phys) * BS))
		goto out;
	if (wal_hdr_decode(hb, vpos, st->uuid, w->rec_max, w->blocks - phys, &h))
		goto out;
	buf = bio_alloc((size_t)h.nblocks * BS);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	if (bio_pread(st->bfd, buf, (size_t)h.nblocks * BS, (w->start + phys) * BS))
		goto out;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->bad = calloc(h.nent ? h.nent : 1, sizeof(bool)))) {
		r = -ENOMEM;
		goto out;
	}
	if (wal_rec_verify(buf, &h, l->bad, &l->nbad))
		goto out;
	/* A good header: its numbers are real, whether or not it is the next. */
	if (h.lsn > *seen_lsn)
		*seen_lsn = h.lsn;
	if (h.seq > *seen_seq)
		*seen_seq = h.seq;
	if (h.lsn != lsn)
		goto out;
	l->rec = (struct wal_rec){ h.lsn, vpos, h.seq, h.nblocks, h.nent };
	l->h = h;
	l->buf = buf;
	buf = NULL;
	*out = l;
	l = NULL;
	r = 0;
out:
	if (l)
		free(l->bad);
	free(l);
	free(buf);
	free(hb);
	return r;
}

static void loaded_free(struct loaded *l)
{
	while (l) {
		struct loaded *n = l->next;

		free(l->buf);
		free(l->bad);
		free(l);
		l = n;
	}
}

/* A replayed record's counters (the store's stats and next id, as its
 * batch left them) replace those read from the kv. */
static int replay_meta(void *arg, const struct wal_kvop *op)
{
	struct store *st = arg;

	if (op->db != KVDB_META || op->type != KVOP_SET)
		return 0;
	if (op->kl == 5 && !memcmp(op->k, "stats", 5))
		return stats_decode(&st->stats, op->v, op->vl) ? -EUCLEAN : 0;
	if (op->kl == 7 && !memcmp(op->k, "next_id", 7)) {
		if (op->vl != 8)
			return -EUCLEAN;
		memcpy(&st->next_id, op->v, 8);
	}
	return 0;
}

int wal_replay(struct store *st, MDB_txn *t, uint64_t *max_seq)
{
	struct wal *w = &st->wal;
	uint64_t kv_seq = kv_seq_get(t, &st->kv), ckpt, pos, lsn, seen_lsn = 0, seen_seq = 0;
	struct loaded *head = NULL, **tailp = &head, *last = NULL;
	int r;

	r = wal_state_get(t, &st->kv, &ckpt, &pos);
	if (r)
		return r;
	w->ckpt_lsn = ckpt;
	w->tail = w->head = pos;
	lsn = ckpt + 1;
	for (;;) {
		struct loaded *l = NULL;

		r = load_at(st, pos, lsn, &l, &seen_lsn, &seen_seq);
		if (r == -ENOENT && pos % w->blocks) {
			pos = (pos / w->blocks + 1) * w->blocks;
			r = load_at(st, pos, lsn, &l, &seen_lsn, &seen_seq);
		}
		if (r == -ENOENT)
			break;
		if (r)
			goto out;
		if ((l->h.flags & WAL_F_KV) && l->rec.seq > kv_seq) {
			/* Its batch's kv commit never became durable: neither
			 * did the batch, nor anything after it. */
			loaded_free(l);
			break;
		}
		*tailp = l;
		tailp = &l->next;
		last = l;
		pos = l->rec.vpos + l->rec.nblocks;
		lsn++;
	}
	/* A last record with a bad block and nothing proving it complete was
	 * torn by a crash during its write: it was never acknowledged. */
	if (last && last->nbad && !((last->h.flags & WAL_F_KV) && last->rec.seq <= kv_seq)) {
		struct loaded **pp = &head;

		log_info("store", "log record %llu was torn by a crash; dropped",
			 (unsigned long long)last->rec.lsn);
		while (*pp != last)
			pp = &(*pp)->next;
		*pp = NULL;
		loaded_free(last);
		last = NULL;
	}
	for (struct loaded *l = head; l; l = l->next) {
		uint64_t tb = table_blocks(l->h.nent, l->h.kvbytes);

		r = rec_push(w, &l->rec);
		if (r)
			goto out;
		if (l->h.kvbytes) {
			const uint8_t *kp = l->buf + WAL_HDR + (size_t)l->rec.nent * WAL_ENT;
			int nk = wal_kvops_decode(kp, l->h.kvbytes, KVDB_MAX, NULL, NULL);

			r = nk < 0 ? -EIO : kvo_publish(w, kp, l->h.kvbytes, (uint32_t)nk, l->rec.seq,
							l->rec.lsn);
			if (!r)
				r = wal_kvops_decode(kp, l->h.kvbytes, KVDB_MAX, replay_meta, st);
			if (r < 0)
				goto out;
		}
		for (uint32_t j = 0; j < l->rec.nent; j++) {
			struct walb_ent de;
			struct wal_ent *e = wal_ent_new(w);

			if (!e) {
				r = -ENOMEM;
				goto out;
			}
			memcpy(&de, l->buf + WAL_HDR + (size_t)j * WAL_ENT, WAL_ENT);
			e->pblk = de.pblk;
			e->id = de.id;
			e->lblk = de.lblk;
			e->crc = de.crc;
			e->seq = l->rec.seq;
			e->lsn = l->rec.lsn;
			e->end = UINT64_MAX;
			e->bad = l->bad[j];
			if (e->bad)
				log_error("store", "log record %llu: block %llu of object id %llu is "
					  "damaged; it reads as -EIO until rewritten",
					  (unsigned long long)l->rec.lsn, (unsigned long long)de.pblk,
					  (unsigned long long)de.id);
			memcpy(e->data, l->buf + (tb + j) * BS, BS);
			index_add(w, e);
		}
		w->head = l->rec.vpos + l->rec.nblocks;
	}
	/* Continue numbering after everything seen, dropped records too, so
	 * that a stale record never passes for a new one. */
	w->next_lsn = max_u64(lsn, seen_lsn + 1);
	if (w->next_lsn < ckpt + 1)
		w->next_lsn = ckpt + 1;
	*max_seq = max_u64(kv_seq, seen_seq);
	st->deferred_blocks = w->nlive;
	__atomic_store_n(&st->deferred_kv_bytes, w->kv_live_bytes, __ATOMIC_RELAXED);
	r = 0;
out:
	loaded_free(head);
	return r;
}

/* ---- fsck ------------------------------------------------------------------- */

int wal_check(struct store *st, void (*report)(void *arg, const char *msg), void *arg)
{
	struct wal *w = &st->wal;
	char msg[256];
	int problems = 0;

	pthread_mutex_lock(&w->lock);
	if (w->head < w->tail || w->head - w->tail > w->blocks) {
		snprintf(msg, sizeof(msg), "log: head %llu and tail %llu do not fit a log of %llu "
			 "blocks", (unsigned long long)w->head, (unsigned long long)w->tail,
			 (unsigned long long)w->blocks);
		report(arg, msg);
		problems++;
	}
	/* A checkpoint writes every block's newest version in place. */
	for (struct wal_ent *e = w->live_head; e; e = e->lnext) {
		if (e->newer)
			continue;
		if (e->pblk < st->data_start || e->pblk >= st->nblocks) {
			snprintf(msg, sizeof(msg), "log: block %llu of object id %llu lies outside "
				 "the data area", (unsigned long long)e->pblk,
				 (unsigned long long)e->id);
			report(arg, msg);
			problems++;
		}
	}
	/* The records on the device, from the checkpoint on, read back whole. */
	{
		uint64_t lsn = w->ckpt_lsn + 1;

		for (size_t k = 0; k < w->rn; k++, lsn++) {
			struct loaded *l = NULL;
			uint64_t sl = 0, ss = 0;
			int r = load_at(st, w->recs[k].vpos, w->recs[k].lsn, &l, &sl, &ss);

			if (r || w->recs[k].lsn != lsn) {
				snprintf(msg, sizeof(msg), "log: record %llu at position %llu does not "
					 "read back", (unsigned long long)w->recs[k].lsn,
					 (unsigned long long)w->recs[k].vpos);
				report(arg, msg);
				problems++;
			} else if (l->nbad) {
				snprintf(msg, sizeof(msg), "log: record %llu has %llu damaged block(s)",
					 (unsigned long long)w->recs[k].lsn,
					 (unsigned long long)l->nbad);
				report(arg, msg);
				problems++;
			}
			loaded_free(l);
		}
	}
	pthread_mutex_unlock(&w->lock);
	return problems;
}

/* ---- offline inspection ----------------------------------------------------- */

static int count_kvop(void *arg, const struct wal_kvop *op)
{
	uint32_t *m = arg;

	if (op->db < STORE_LOG_NDB)
		m[op->db]++;
	return 0;
}

_Static_assert(KVDB_ATTR == STORE_LOG_ATTR && KVDB_OMAP == STORE_LOG_OMAP &&
	       KVDB_ONODE == STORE_LOG_ONODE && KVDB_META == STORE_LOG_META &&
	       KVDB_CHUNK == STORE_LOG_CHUNK, "the log listing counts mutations by KVDB_*");

int store_log_list(struct store *st, struct store_log_info *info,
		   int (*fn)(void *arg, const struct store_log_record *r), void *arg)
{
	struct wal *w;
	struct wal_rec *recs;
	size_t n;
	int r = 0;

	if (!st || !fn)
		return -EINVAL;
	w = &st->wal;
	pthread_mutex_lock(&w->lock);
	n = w->rn;
	recs = malloc((n ? n : 1) * sizeof(*recs));
	if (recs)
		memcpy(recs, w->recs, n * sizeof(*recs));
	if (info)
		*info = (struct store_log_info){ w->ckpt_lsn, w->tail, w->head, w->blocks };
	pthread_mutex_unlock(&w->lock);
	if (!recs)
		return -ENOMEM;
	for (size_t k = 0; k < n && !r; k++) {
		struct store_log_record out;
		struct loaded *l = NULL;
		uint64_t sl = 0, ss = 0;

		memset(&out, 0, sizeof(out));
		out.lsn = recs[k].lsn;
		out.seq = recs[k].seq;
		out.pos = recs[k].vpos;
		out.nblocks = recs[k].nblocks;
		out.blocks = recs[k].nent;
		r = load_at(st, recs[k].vpos, recs[k].lsn, &l, &sl, &ss);
		if (r == -ENOMEM)
			break;
		if (r) {
			out.error = -EIO;
		} else {
			out.version = l->h.version;
			out.kv = l->h.flags & WAL_F_KV;
			out.bad_blocks = (uint32_t)l->nbad;
			if (l->h.kvbytes &&
			    wal_kvops_decode(l->buf + WAL_HDR + (size_t)l->h.nent * WAL_ENT,
					     l->h.kvbytes, KVDB_MAX, count_kvop, out.mutations) < 0)
				out.error = -EIO;
		}
		loaded_free(l);
		r = fn(arg, &out);
	}
	free(recs);
	return r;
}

void wal_reader_seq(struct store *st, MDB_txn *t, struct reader *r)
{
	r->vseq = r->seq;
	if (wal_active(st) || kvo_active(st)) {
		/* The snapshot may already hold a batch whose commit number
		 * was not yet published when the reader entered: its logged
		 * blocks (published before its kv commit) belong with it. */
		uint64_t k = kv_seq_get(t, &st->kv);

		if (k > r->vseq)
			r->vseq = k;
	}
}

int wal_split_freed(struct store *st, struct runvec *runs, struct runvec *logged)
{
	struct wal *w = &st->wal;
	struct runvec keep = { 0 };
	int r = 0;

	if (!wal_active(st))
		return 0;
	pthread_mutex_lock(&w->lock);
	for (size_t k = 0; k < runs->n && !r; k++) {
		uint64_t s = runs->v[k].start, e = s + runs->v[k].len, from = s;

		for (uint64_t p = s; p < e && !r; p++) {
			if (!find_head(w, p, NULL))
				continue;
			if (p > from)
				r = runvec_push(&keep, from, p - from);
			if (!r)
				r = runvec_push(logged, p, 1);
			from = p + 1;
		}
		if (!r && e > from)
			r = runvec_push(&keep, from, e - from);
	}
	pthread_mutex_unlock(&w->lock);
	if (r) {
		/* Out of memory: hold every block back, the safe way. */
		runvec_free(&keep);
		for (size_t k = 0; k < runs->n && !r; k++)
			r = runvec_push(logged, runs->v[k].start, runs->v[k].len);
		runs->n = 0;
		return r;
	}
	runvec_free(runs);
	*runs = keep;
	return 0;
}
