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
 * DESIGN.md allows: the replay of a journaled small write) -- submitted
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
 * mutation of the same ids is pending (walb_kv_to_txn).
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

#include "batch.h"
#include "crc32c.h"
#include "log.h"

#define BS STORE_BLOCK_SIZE
#define WAL_MAGIC 0x4c415741u	/* "AWAL" */
#define WAL_VERSION 2u	/* 2: onode and counter mutations; 1 is still read */
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

struct wal_ent {
	struct wal_ent *hnext;		/* hash bucket (newest versions only) */
	struct wal_ent *newer, *older;	/* versions of the same block */
	struct wal_ent *lnext;		/* live list (lsn order) or retired list */
	uint64_t pblk, id, lblk;
	uint64_t seq, lsn, end;
	uint32_t crc;
	bool bad;			/* content lost (damaged record) */
	uint8_t data[BS];
};

static void ckpt_clear(struct ckpt *ck);
static void kvo_unlink(struct wal *w, struct kvo_op *o);

/* Header, entry table and kv mutations; the data blocks follow. */
static uint64_t table_blocks(uint64_t n, uint64_t kvbytes)
{
	return (WAL_HDR + n * WAL_ENT + kvbytes + BS - 1) / BS;
}

/* A kv mutation in a record: this header (little-endian), the key, the
 * value (KVOP_SET only). */
struct kvop_hdr {
	uint8_t type;		/* KVOP_SET, KVOP_DEL, KVOP_CLEAR */
	uint8_t db;		/* KVDB_ATTR .. KVDB_META */
	uint16_t klen;
	uint32_t vlen;
	uint64_t id;		/* object id; collection (onodes); 0 (counters) */
};

_Static_assert(sizeof(struct kvop_hdr) == 16, "kv mutation layout");

/* An overlay entry: one logged kv mutation. */
struct kvo_op {
	struct kvo_op *onext;		/* the object's mutations, lsn order */
	struct kvo_op *lnext;		/* live list (lsn order) or retired list */
	struct kvo_obj *obj;
	uint64_t id, seq, lsn, end;
	uint8_t type, db;
	uint16_t klen;
	uint32_t vlen;
	uint8_t data[];			/* key, then value */
};

struct kvo_obj {
	struct kvo_obj *hnext;
	uint64_t id;
	struct kvo_op *head, *tail;
};

#define OHASH_BITS 12u

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
	if (!w->hash || !w->ohash)
		return -ENOMEM;
	pthread_mutex_init(&w->lock, NULL);
	w->lock_ok = true;
	return 0;
}

static void free_list(struct wal_ent *e)
{
	while (e) {
		struct wal_ent *n = e->lnext;

		free(e);
		e = n;
	}
}

void wal_destroy(struct store *st)
{
	struct wal *w = &st->wal;

	ckpt_clear(&w->ck);
	free_list(w->live_head);
	free_list(w->retired);
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
	free(w->hash);
	free(w->recs);
	if (w->lock_ok)
		pthread_mutex_destroy(&w->lock);
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
	memcpy(wb->kv + wb->kvlen, &h, sizeof(h));
	if (kl)
		memcpy(wb->kv + wb->kvlen + sizeof(h), k, kl);
	if (vl)
		memcpy(wb->kv + wb->kvlen + sizeof(h) + kl, v, vl);
	wb->kvlen += need;
	wb->nkv++;
	return 0;
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

int wal_kvops_decode(const uint8_t *p, size_t len,
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
		if (h.db > KVDB_MAX || h.type < KVOP_SET || h.type > KVOP_CLEAR)
			return -ENOENT;
		if (h.type == KVOP_CLEAR ? h.klen || h.vlen || h.db > KVDB_OMAP :
		    !h.klen || h.klen > KVOP_KEY_MAX || (h.type == KVOP_DEL && h.vlen))
			return -ENOENT;
		if (len - off < (size_t)h.klen + h.vlen)
			return -ENOENT;
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

static uint64_t oldest_reader(struct store *st)
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
	uint64_t oldest = oldest_reader(st);
	struct wal_ent **pp;

	pthread_mutex_lock(&w->lock);
	pp = &w->retired;
	while (*pp) {
		struct wal_ent *e = *pp;

		if (e->end <= oldest) {
			*pp = e->lnext;
			index_unlink(w, e);
			free(e);
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

/* ---- the overlay of logged kv mutations ----------------------------------- */

bool wal_kv_active(struct store *st)
{
	return __atomic_load_n(&st->wal.kv_nall, __ATOMIC_ACQUIRE) != 0;
}

static struct kvo_obj *kvo_find(struct wal *w, uint64_t id, bool create)
{
	struct kvo_obj **pp = &w->ohash[(id * 0x9e3779b97f4a7c15ull) >> (64 - OHASH_BITS)];

	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->id == id)
			return *pp;
	if (!create)
		return NULL;
	*pp = calloc(1, sizeof(**pp));
	if (*pp)
		(*pp)->id = id;
	return *pp;
}

static struct kvo_op *kvo_new(const struct wal_kvop *op, uint64_t seq, uint64_t lsn)
{
	struct kvo_op *o = malloc(sizeof(*o) + op->kl + op->vl);

	if (!o)
		return NULL;
	memset(o, 0, sizeof(*o));
	o->id = op->id;
	o->seq = seq;
	o->lsn = lsn;
	o->end = UINT64_MAX;
	o->type = op->type;
	o->db = op->db;
	o->klen = (uint16_t)op->kl;
	o->vlen = (uint32_t)op->vl;
	if (op->kl)
		memcpy(o->data, op->k, op->kl);
	if (op->vl)
		memcpy(o->data + op->kl, op->v, op->vl);
	return o;
}

/* Adds o as the newest mutation of object id (w->lock held; obj made). */
static void kvo_add(struct wal *w, struct kvo_obj *ob, struct kvo_op *o)
{
	o->obj = ob;
	o->onext = NULL;
	if (ob->tail)
		ob->tail->onext = o;
	else
		ob->head = o;
	ob->tail = o;
	o->lnext = NULL;
	if (w->kv_live_tail)
		w->kv_live_tail->lnext = o;
	else
		w->kv_live_head = o;
	w->kv_live_tail = o;
	w->kv_nlive++;
	w->kv_live_bytes += sizeof(*o) + o->klen + o->vlen;
	__atomic_store_n(&w->kv_nall, w->kv_nall + 1, __ATOMIC_RELEASE);
}

/* Removes a retired mutation for good (w->lock held). */
static void kvo_unlink(struct wal *w, struct kvo_op *o)
{
	struct kvo_obj *ob = o->obj;
	struct kvo_op **pp = &ob->head, *prev = NULL;

	while (*pp != o) {
		prev = *pp;
		pp = &(*pp)->onext;
	}
	*pp = o->onext;
	if (ob->tail == o)
		ob->tail = prev;
	__atomic_store_n(&w->kv_nall, w->kv_nall - 1, __ATOMIC_RELEASE);
	if (!ob->head) {
		struct kvo_obj **op = &w->ohash[(ob->id * 0x9e3779b97f4a7c15ull) >> (64 - OHASH_BITS)];

		while (*op != ob)
			op = &(*op)->hnext;
		*op = ob->hnext;
		free(ob);
	}
}

static bool kvo_visible(const struct kvo_op *o, uint64_t rseq)
{
	return o->seq <= rseq && rseq < o->end;
}

static bool kvo_matches(const struct kvo_op *o, int db, const void *k, size_t kl)
{
	return o->db == db && (o->type == KVOP_CLEAR ||
			       (o->klen == kl && !memcmp(o->data, k, kl)));
}

/* The newest mutation of key k visible at rseq (w->lock held), or NULL. */
static const struct kvo_op *kvo_lookup(struct wal *w, int db, uint64_t id, const void *k,
				       size_t kl, uint64_t rseq)
{
	struct kvo_obj *ob = kvo_find(w, id, false);
	const struct kvo_op *found = NULL;

	if (!ob)
		return NULL;
	for (const struct kvo_op *o = ob->head; o; o = o->onext)
		if (kvo_visible(o, rseq) && kvo_matches(o, db, k, kl))
			found = o;
	return found;
}

int wal_kv_get(struct store *st, int db, uint64_t id, const void *k, size_t kl, uint64_t rseq,
	       void **val, size_t *vl)
{
	struct wal *w = &st->wal;
	const struct kvo_op *o;
	int r = -ENOENT;

	if (!wal_kv_active(st))
		return -ENOENT;
	pthread_mutex_lock(&w->lock);
	o = kvo_lookup(w, db, id, k, kl, rseq);
	if (o && o->type == KVOP_SET) {
		*val = malloc(o->vlen ? o->vlen : 1);
		if (!*val) {
			r = -ENOMEM;
		} else {
			memcpy(*val, o->data + o->klen, o->vlen);
			*vl = o->vlen;
			r = 1;
		}
	} else if (o) {
		r = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

/* The batch's own newest mutation of key k: -1 if it has none, 0 if it
 * removes the key, 1 if it sets it (then *v and *vl, into the batch). */
static int walb_kv_find(const struct batch *b, int db, uint64_t id, const void *k, size_t kl,
			const uint8_t **v, size_t *vl)
{
	const uint8_t *p = b ? b->wal.kv : NULL;
	size_t off = 0;
	int found = -1;

	if (!b || !b->wal.nkv)
		return -1;
	while (off < b->wal.kvlen) {
		struct kvop_hdr h;

		memcpy(&h, p + off, sizeof(h));
		if (h.id == id && h.db == db &&
		    (h.type == KVOP_CLEAR || (h.klen == kl && !memcmp(p + off + sizeof(h), k, kl)))) {
			found = h.type == KVOP_SET;
			if (found) {
				*v = p + off + sizeof(h) + h.klen;
				*vl = h.vlen;
			}
		}
		off += sizeof(h) + h.klen + h.vlen;
	}
	return found;
}

int wal_kv_lookup(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
		  const void *k, size_t kl, uint64_t rseq, const void **v, size_t *vl,
		  void **owned)
{
	const uint8_t *bv;
	int r;

	*owned = NULL;
	r = walb_kv_find(b, db, id, k, kl, &bv, vl);
	if (r > 0)
		*v = bv;
	if (r >= 0)
		return r;
	r = wal_kv_get(st, db, id, k, kl, rseq, owned, vl);
	if (r > 0)
		*v = *owned;
	if (r >= 0)
		return r;
	if (r != -ENOENT)
		return r;
	{
		uint8_t key[KVDB_KEY_MAX];

		r = kv_get(t, kvdb_dbi(&st->kv, db), key, kvdb_key(key, db, id, k, kl), v, vl);
	}
	return r == -ENOENT ? 0 : r ? r : 1;
}

int wal_kv_exists(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
		  const void *k, size_t kl, uint64_t rseq)
{
	const void *v;
	void *owned;
	size_t vl;
	int r = wal_kv_lookup(st, b, t, db, id, k, kl, rseq, &v, &vl, &owned);

	free(owned);
	return r;
}

bool wal_kv_cleared(struct store *st, int db, uint64_t id, uint64_t rseq)
{
	struct wal *w = &st->wal;
	struct kvo_obj *ob;
	bool r = false;

	if (!wal_kv_active(st))
		return false;
	pthread_mutex_lock(&w->lock);
	ob = kvo_find(w, id, false);
	for (const struct kvo_op *o = ob ? ob->head : NULL; o && !r; o = o->onext)
		r = o->db == db && o->type == KVOP_CLEAR && kvo_visible(o, rseq);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int wal_kv_ids(struct store *st, int db, uint64_t rseq, uint64_t **ids, size_t *n)
{
	struct wal *w = &st->wal;
	size_t cap = 0;
	int r = 0;

	*ids = NULL;
	*n = 0;
	if (!wal_kv_active(st))
		return 0;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < ((size_t)1 << OHASH_BITS) && !r; i++) {
		for (struct kvo_obj *ob = w->ohash[i]; ob && !r; ob = ob->hnext) {
			const struct kvo_op *o = ob->head;

			while (o && !(o->db == db && kvo_visible(o, rseq)))
				o = o->onext;
			if (!o)
				continue;
			if (*n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				uint64_t *nv = realloc(*ids, nc * sizeof(*nv));

				if (!nv) {
					r = -ENOMEM;
					break;
				}
				*ids = nv;
				cap = nc;
			}
			(*ids)[(*n)++] = ob->id;
		}
	}
	pthread_mutex_unlock(&w->lock);
	if (r) {
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
	return r;
}

void wal_kv_view_free(struct kv_view *v)
{
	for (size_t i = 0; i < v->n; i++) {
		free(v->e[i].k);
		free(v->e[i].v);
	}
	free(v->e);
	memset(v, 0, sizeof(*v));
}

struct kvo_ref {
	const struct kvo_op *o;
	size_t i;		/* position in the object's list: log order */
};

/* By key in the kv's order (memcmp, shorter first on a tie), then by log
 * order (mutations of one record share an lsn, hence the position). */
static int kvo_ref_cmp(const void *a, const void *b)
{
	const struct kvo_ref *x = a, *y = b;
	size_t n = x->o->klen < y->o->klen ? x->o->klen : y->o->klen;
	int c = memcmp(x->o->data, y->o->data, n);

	if (c)
		return c;
	if (x->o->klen != y->o->klen)
		return x->o->klen < y->o->klen ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int wal_kv_view(struct store *st, int db, uint64_t id, uint64_t rseq, struct kv_view *out)
{
	struct wal *w = &st->wal;
	struct kvo_obj *ob;
	struct kvo_ref *v = NULL;
	size_t n = 0, cap = 0, m = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!wal_kv_active(st))
		return 0;
	pthread_mutex_lock(&w->lock);
	ob = kvo_find(w, id, false);
	/* The visible mutations after the last visible clear, in log order;
	 * then sorted by key (a stable order within a key: position in the
	 * object's list, which is log order), the newest of each key wins. */
	for (const struct kvo_op *o = ob ? ob->head : NULL; o; o = o->onext) {
		if (!kvo_visible(o, rseq) || o->db != db)
			continue;
		if (o->type == KVOP_CLEAR) {
			n = 0;
			out->cleared = true;
			continue;
		}
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct kvo_ref *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				r = -ENOMEM;
				goto out_unlock;
			}
			v = nv;
			cap = nc;
		}
		v[n] = (struct kvo_ref){ o, n };
		n++;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), kvo_ref_cmp);
	out->e = calloc(n ? n : 1, sizeof(*out->e));
	if (!out->e) {
		r = -ENOMEM;
		goto out_unlock;
	}
	for (size_t i = 0; i < n; i++) {
		const struct kvo_op *o = v[i].o;
		struct kv_view_ent *e;

		if (i + 1 < n && v[i + 1].o->klen == o->klen &&
		    !memcmp(v[i + 1].o->data, o->data, o->klen))
			continue;	/* a newer mutation of the key follows */
		e = &out->e[m++];
		e->k = malloc(o->klen);
		e->kl = o->klen;
		e->del = o->type == KVOP_DEL;
		if (!e->k || (!e->del && !(e->v = malloc(o->vlen ? o->vlen : 1)))) {
			r = -ENOMEM;
			break;
		}
		memcpy(e->k, o->data, o->klen);
		if (!e->del) {
			memcpy(e->v, o->data + o->klen, o->vlen);
			e->vl = o->vlen;
		}
	}
	out->n = m;
out_unlock:
	pthread_mutex_unlock(&w->lock);
	free(v);
	if (r)
		wal_kv_view_free(out);
	return r;
}

/* The batch commits the kv anyway: its kv mutations go into that commit
 * instead of the log and the overlay, when no object they touch has a
 * mutation in the overlay not yet checkpointed (a logged one would be
 * applied over them at the next checkpoint).  1 if moved, 0 if not,
 * -errno (the batch's kv transaction is then unusable). */
int walb_kv_to_txn(struct batch *b)
{
	struct store *st = b->st;
	struct wal *w = &st->wal;
	struct walb *wb = &b->wal;
	size_t off = 0;
	bool clash = false;

	if (!wb->nkv)
		return 0;
	if (wal_kv_active(st)) {
		pthread_mutex_lock(&w->lock);
		while (off < wb->kvlen && !clash) {
			struct kvop_hdr h;
			struct kvo_obj *ob;

			memcpy(&h, wb->kv + off, sizeof(h));
			ob = kvo_find(w, h.id, false);
			for (const struct kvo_op *o = ob ? ob->head : NULL; o && !clash; o = o->onext)
				clash = o->end == UINT64_MAX;
			off += sizeof(h) + h.klen + h.vlen;
		}
		pthread_mutex_unlock(&w->lock);
		if (clash)
			return 0;
	}
	for (off = 0; off < wb->kvlen;) {
		struct kvop_hdr h;
		const uint8_t *k;
		uint8_t key[KVDB_KEY_MAX];
		MDB_dbi dbi;
		size_t kl;
		int r;

		memcpy(&h, wb->kv + off, sizeof(h));
		k = wb->kv + off + sizeof(h);
		dbi = kvdb_dbi(&st->kv, h.db);
		kl = kvdb_key(key, h.db, h.id, k, h.klen);
		if (h.type == KVOP_SET) {
			r = kv_put(b->txn, dbi, key, kl, k + h.klen, h.vlen);
		} else if (h.type == KVOP_DEL) {
			r = kv_del(b->txn, dbi, key, kl);
			if (r == -ENOENT)
				r = 0;
		} else {
			int64_t n = kv_del_prefix(b->txn, dbi, key, 8);

			r = n < 0 ? (int)n : 0;
		}
		if (r)
			return r;
		off += sizeof(h) + h.klen + h.vlen;
	}
	wb->kvlen = 0;
	wb->nkv = 0;
	return 1;
}

/* Publishes the mutations of a record (p, len bytes) at seq/lsn. */
struct kvpub {
	struct wal *w;
	uint64_t seq, lsn;
	struct kvo_op **ops;	/* one per mutation */
	size_t i;
};

static int kvpub_prep(void *arg, const struct wal_kvop *op)
{
	struct kvpub *p = arg;

	p->ops[p->i] = kvo_new(op, p->seq, p->lsn);
	if (!p->ops[p->i])
		return -ENOMEM;
	p->i++;
	return 0;
}

/* Builds the overlay entries of a record's mutations, then adds them
 * under the lock: all of them or none. */
static int kv_publish(struct wal *w, const uint8_t *p, size_t len, uint32_t nkv, uint64_t seq,
		      uint64_t lsn)
{
	struct kvpub pb = { w, seq, lsn, NULL, 0 };
	int r;

	if (!nkv)
		return 0;
	pb.ops = calloc(nkv, sizeof(*pb.ops));
	if (!pb.ops)
		return -ENOMEM;
	r = wal_kvops_decode(p, len, kvpub_prep, &pb);
	if (r >= 0 && (uint32_t)r != nkv)
		r = -EIO;
	if (r < 0)
		goto out;
	r = 0;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < pb.i && !r; i++)
		if (!kvo_find(w, pb.ops[i]->id, true))
			r = -ENOMEM;	/* an empty object left behind is harmless */
	for (size_t i = 0; i < pb.i && !r; i++) {
		kvo_add(w, kvo_find(w, pb.ops[i]->id, false), pb.ops[i]);
		pb.ops[i] = NULL;
	}
	pthread_mutex_unlock(&w->lock);
out:
	for (size_t i = 0; i < pb.i; i++)
		free(pb.ops[i]);
	free(pb.ops);
	return r;
}

/* ---- writing records ------------------------------------------------------ */

static void hdr_seal(uint8_t *rec, uint64_t nent, uint64_t kvbytes)
{
	struct wal_hdr h;
	uint32_t crc;

	memcpy(&h, rec, WAL_HDR);
	h.crc = 0;
	memcpy(rec, &h, WAL_HDR);
	crc = atoll__crc32c(0, rec, WAL_HDR + nent * WAL_ENT + kvbytes);
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
	rec = bio_alloc(nb * BS);
	if (!rec)
		return -ENOMEM;
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
	hdr_seal(rec, wb->n, wb->kvlen);
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
	r = kv_publish(w, wb->kv, wb->kvlen, wb->nkv, wb->seq, w->next_lsn);
	if (r) {
		free(es);
		return r;
	}
	for (uint32_t j = 0; j < wb->n; j++) {
		es[j] = malloc(sizeof(struct wal_ent));
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
		free(es[j]);
	free(es);
	st->deferred_blocks = w->nlive;
	st->deferred_kv_bytes = w->kv_live_bytes;
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

/* ---- checkpoint ----------------------------------------------------------- */

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

/* Does the chunk record in t still map e's block to e's physical block? */
static int ent_current(MDB_txn *t, struct kv *kv, const struct wal_ent *e, struct chunk *c)
{
	int r = chunk_load(t, kv, e->id, (uint32_t)(e->lblk / CHUNK_BLOCKS), c);

	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	return chunk_maps(c, e);
}

/* A checkpoint runs in two steps, both on the commit thread: begin picks
 * the records (a prefix, each with no reader older than it) and submits
 * the in-place writes of their newest versions, sorted and coalesced; the
 * batches that follow go on meanwhile.  finish, once the writes are done,
 * makes them durable (a batch's flush after them counts), sets the chunk
 * crcs and the checkpoint in one kv transaction, syncs it fully, and frees
 * the log space. */
#define CKPT_QD 128u

struct ckpt_blk {
	uint64_t pblk;
	const uint8_t *data;
};

static int ckpt_blk_cmp(const void *a, const void *b)
{
	const struct ckpt_blk *x = a, *y = b;

	return x->pblk < y->pblk ? -1 : x->pblk > y->pblk;
}

static void ckpt_clear(struct ckpt *ck)
{
	free(ck->buf);
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
			const struct bio_write *bw = &ck->w[ck->submitted + n];

			io_prep_pwrite(cb, st->bfd, (void *)bw->buf, bw->len, (long long)bw->off);
			cb->data = (void *)bw;
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
	oldest = oldest_reader(st);
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
	ck->t0 = now_ns();
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
	ck->buf = nb ? bio_alloc(nb * BS) : NULL;
	ck->w = malloc((nb ? nb : 1) * sizeof(*ck->w));
	ck->cbs = calloc(nb ? nb : 1, sizeof(*ck->cbs));
	if ((nb && !ck->buf) || !ck->w || !ck->cbs) {
		free(blks);
		ckpt_clear(ck);
		return -ENOMEM;
	}
	for (size_t j = 0; j < nb; j++) {
		uint8_t *dst = ck->buf + j * BS;

		memcpy(dst, blks[j].data, BS);
		if (ck->nw && ck->w[ck->nw - 1].off + ck->w[ck->nw - 1].len == blks[j].pblk * BS &&
		    ck->w[ck->nw - 1].len < IO_MAX_BYTES)
			ck->w[ck->nw - 1].len += BS;	/* adjacent: one write */
		else
			ck->w[ck->nw++] = (struct bio_write){ blks[j].pblk * BS, BS, dst };
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
			const struct bio_write *bw = ev[j].data;

			if ((long)ev[j].res != (long)bw->len)
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
	uint64_t t1 = now_ns();

	/* Every flush the flusher started is finished after this: one that
	 * started after the in-place writes were done covers them. */
	commit_flush_wait(st);
	if (ck->need_flush && __atomic_load_n(&st->flush_gen, __ATOMIC_SEQ_CST) == ck->flush_mark) {
		if (fdatasync(st->bfd)) {
			ckpt_fail(st, "flush of the block device failed");
			return -EIO;
		}
		__atomic_fetch_add(&st->flush_gen, 1, __ATOMIC_SEQ_CST);
	}
	st->perf.ckpt_flush_ns += now_ns() - t1;
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

/* The checkpoint's kv transaction: the chunk records' crcs, the logged kv
 * mutations in log order, the log's new tail and meta/seq, committed and
 * synced.  Runs on the checkpointer, or on the commit thread when there is
 * none; it reads only what ckpt_prepare collected.  An error before the
 * commit gives the checkpoint up (tried again later); a failed commit or
 * sync stops the store. */
static int ckpt_kv_run(struct store *st, bool checkpointer)
{
	struct ckpt *ck = &st->wal.ck;
	MDB_txn *t;
	uint64_t t2 = now_ns(), t3;
	int r, rc;

	rc = mdb_txn_begin(st->kv.env, NULL, 0, &t);
	if (rc)
		return kv_err(rc);
	while (checkpointer && __atomic_load_n(&st->test_ckpt_hold, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { 0, 1000 * 1000 };

		nanosleep(&ts, NULL);	/* with the write lock */
	}
	r = ckpt_set_crcs(st, t);
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
		r = wal_state_put(t, &st->kv, ck->lsn_last, ck->tail);
	if (!r)
		r = kv_seq_put(t, &st->kv, ck->kv_seq);
	if (r) {
		mdb_txn_abort(t);
		return r;
	}
	t3 = now_ns();
	st->perf.ckpt_build_ns += t3 - t2;
	rc = mdb_txn_commit(t);
	t2 = now_ns();
	st->perf.ckpt_commit_ns += t2 - t3;
	if (!rc)
		rc = mdb_env_sync(st->kv.env, 1);
	st->perf.ckpt_sync_ns += now_ns() - t2;
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
		ckpt_clear(ck);
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
	st->deferred_kv_bytes = w->kv_live_bytes;
	st->perf.ckpts++;
	st->perf.ckpt_blocks += cnt;
	st->perf.ckpt_kv += ck->nops;
	st->perf.ckpt_ns += now_ns() - ck->t0;
	pthread_mutex_lock(&st->rlock);
	st->durable_seq = st->commit_seq;
	pthread_mutex_unlock(&st->rlock);
	pthread_mutex_unlock(&st->alloc_lock);
	ckpt_clear(ck);
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
	uint64_t t0 = now_ns();
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
		st->perf.ckpt_wait_ns += now_ns() - t0;
		st->perf.ckpt_waits++;
	}
	return done ? ckpt_retire(st, r) : 0;
}

static void *ckpt_main(void *arg)
{
	struct store *st = arg;

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
		ckpt_clear(&st->wal.ck);
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
			ckpt_clear(ck);
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

/* ---- replay at open ------------------------------------------------------- */

struct loaded {
	struct loaded *next;
	struct wal_rec rec;
	uint16_t flags;
	uint32_t kvbytes;
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
	*out = (struct wal_hdr_info){ h.lsn, h.seq, h.nent, h.nblocks, h.crc, h.kvbytes, h.flags };
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
	/* A good crc over mutations that do not decode: not a record of ours. */
	if (h->kvbytes && wal_kvops_decode(buf + WAL_HDR + (size_t)h->nent * WAL_ENT, h->kvbytes,
					   NULL, NULL) < 0)
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
	l->flags = h.flags;
	l->kvbytes = h.kvbytes;
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
		if ((l->flags & WAL_F_KV) && l->rec.seq > kv_seq) {
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
	if (last && last->nbad && !((last->flags & WAL_F_KV) && last->rec.seq <= kv_seq)) {
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
		uint64_t tb = table_blocks(l->rec.nent, l->kvbytes);

		r = rec_push(w, &l->rec);
		if (r)
			goto out;
		if (l->kvbytes) {
			const uint8_t *kp = l->buf + WAL_HDR + (size_t)l->rec.nent * WAL_ENT;
			int nk = wal_kvops_decode(kp, l->kvbytes, NULL, NULL);

			r = nk < 0 ? -EIO : kv_publish(w, kp, l->kvbytes, (uint32_t)nk, l->rec.seq,
						       l->rec.lsn);
			if (!r)
				r = wal_kvops_decode(kp, l->kvbytes, replay_meta, st);
			if (r < 0)
				goto out;
		}
		for (uint32_t j = 0; j < l->rec.nent; j++) {
			struct walb_ent de;
			struct wal_ent *e = malloc(sizeof(*e));

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
	st->deferred_kv_bytes = w->kv_live_bytes;
	r = 0;
out:
	loaded_free(head);
	return r;
}

/* ---- fsck ------------------------------------------------------------------- */

int wal_check(struct store *st, MDB_txn *t, void (*report)(void *arg, const char *msg),
	      void *arg)
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
	for (struct wal_ent *e = w->live_head; e; e = e->lnext) {
		struct chunk c;
		int cur;

		if (e->newer)
			continue;
		if (e->bad || atoll__crc32c(0, e->data, BS) != e->crc)
			continue;	/* named by the object's deep check */
		cur = ent_current(t, &st->kv, e, &c);
		if (cur > 0 && (e->pblk < st->data_start || e->pblk >= st->nblocks)) {
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

void wal_reader_seq(struct store *st, MDB_txn *t, struct reader *r)
{
	r->vseq = r->seq;
	if (wal_active(st) || wal_kv_active(st)) {
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
