/*
 * kvoverlay.c - the overlay of logged kv mutations.
 *
 * Onode, attribute, omap, chunk record and counter mutations that ride in
 * a batch's log record (wal.c) are kept here in memory until the log's
 * checkpoint puts them into the kv (checkpoint.c): by id (the object's;
 * for onodes the collection's), versions visible to readers whose
 * snapshot lies in [seq, end).  Every lookup and listing of read.c, the
 * apply code's onode and chunk loads and fsck merge it over the kv
 * (kvo_lookup, kvo_walk): values win, removals hide, a clear hides every
 * kv key of the object.  kvo_lookup() puts a batch's own
 * mutations not yet logged over it, and kvo_batch_to_txn() moves a
 * batch's mutations into its kv commit when the overlay allows.  The
 * functions carry the prefix kvo_ (the kv overlay); the overlay's state
 * is in struct wal (store-int.h), under w->lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "wal-int.h"

bool kvo_active(struct store *st)
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

uint32_t kvo_hash(int db, uint64_t id, const void *k, size_t kl)
{
	uint64_t x = (id ^ ((uint64_t)db << 56)) * 0x9e3779b97f4a7c15ull;

	return atoll__crc32c((uint32_t)(x >> 32), k, kl) ^ (uint32_t)x;
}

static uint32_t kvo_bucket(int db, uint64_t id, const void *k, size_t kl)
{
	return kvo_hash(db, id, k, kl) & ((1u << KHASH_BITS) - 1);
}

/* Adds o as the newest mutation of object id (w->lock held; obj made). */
static void kvo_add(struct wal *w, struct kvo_obj *ob, struct kvo_op *o)
{
	struct kvo_op **kb;

	o->obj = ob;
	o->onext = NULL;
	o->oprev = ob->tail;
	if (ob->tail)
		ob->tail->onext = o;
	else
		ob->head = o;
	ob->tail = o;
	o->ord = ++w->kv_ord;
	o->kbucket = kvo_bucket(o->db, o->id, o->data, o->type == KVOP_CLEAR ? 0 : o->klen);
	kb = &w->khash[o->kbucket];
	o->kprev = NULL;
	o->knext = *kb;
	if (*kb)
		(*kb)->kprev = o;
	*kb = o;
	if (o->type == KVOP_CLEAR)
		w->kv_nclear++;
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
void kvo_unlink(struct wal *w, struct kvo_op *o)
{
	struct kvo_obj *ob = o->obj;

	if (o->oprev)
		o->oprev->onext = o->onext;
	else
		ob->head = o->onext;
	if (o->onext)
		o->onext->oprev = o->oprev;
	else
		ob->tail = o->oprev;
	if (o->kprev)
		o->kprev->knext = o->knext;
	else
		w->khash[o->kbucket] = o->knext;
	if (o->knext)
		o->knext->kprev = o->kprev;
	if (o->type == KVOP_CLEAR)
		w->kv_nclear--;
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

/* The newest mutation visible at rseq of key k (clear: of every key) of
 * id in database db (w->lock held), or NULL. */
static const struct kvo_op *kvo_newest(struct wal *w, int db, uint64_t id, const void *k,
				       size_t kl, bool clear, uint64_t rseq)
{
	for (const struct kvo_op *o = w->khash[kvo_bucket(db, id, k, kl)]; o; o = o->knext)
		if (o->id == id && o->db == db &&
		    (clear ? o->type == KVOP_CLEAR :
			     o->type != KVOP_CLEAR && o->klen == kl && !memcmp(o->data, k, kl)) &&
		    kvo_visible(o, rseq))
			return o;
	return NULL;
}

/* The newest mutation of key k visible at rseq, a clear of the object's
 * keys included (w->lock held), or NULL. */
static const struct kvo_op *kvo_find_op(struct wal *w, int db, uint64_t id, const void *k,
					size_t kl, uint64_t rseq)
{
	const struct kvo_op *found = kvo_newest(w, db, id, k, kl, false, rseq), *c;

	if (w->kv_nclear && (c = kvo_newest(w, db, id, NULL, 0, true, rseq)) &&
	    (!found || c->ord > found->ord))
		found = c;
	return found;
}

int kvo_get(struct store *st, int db, uint64_t id, const void *k, size_t kl, uint64_t rseq,
	    void **val, size_t *vl)
{
	struct wal *w = &st->wal;
	const struct kvo_op *o;
	int r = -ENOENT;

	if (!kvo_active(st))
		return -ENOENT;
	pthread_mutex_lock(&w->lock);
	o = kvo_find_op(w, db, id, k, kl, rseq);
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

/* The batch's newest mutation of key k (clear: of every key) of id in
 * database db: its number, or -1. */
static int64_t batch_newest(const struct walb *wb, int db, uint64_t id, const void *k, size_t kl,
			    bool clear)
{
	uint32_t e = wb->kvh[kvo_hash(db, id, k, kl) & (WALB_KH - 1)];

	for (; e; e = wb->kvent[e - 1].prev) {
		const uint8_t *p = wb->kv + wb->kvent[e - 1].off;
		struct kvop_hdr h;

		memcpy(&h, p, sizeof(h));
		if (h.id == id && h.db == db &&
		    (clear ? h.type == KVOP_CLEAR :
			     h.type != KVOP_CLEAR && h.klen == kl && !memcmp(p + sizeof(h), k, kl)))
			return (int64_t)e - 1;
	}
	return -1;
}

/* The batch's own newest mutation of key k: -1 if it has none, 0 if it
 * removes the key, 1 if it sets it (then *v and *vl, into the batch). */
static int batch_kv_find(const struct batch *b, int db, uint64_t id, const void *k, size_t kl,
			 const uint8_t **v, size_t *vl)
{
	const struct walb *wb = b ? &b->wal : NULL;
	struct kvop_hdr h;
	int64_t i, c;

	if (!wb || !wb->nkv)
		return -1;
	i = batch_newest(wb, db, id, k, kl, false);
	if (wb->kvclear && (c = batch_newest(wb, db, id, NULL, 0, true)) > i)
		i = c;
	if (i < 0)
		return -1;
	memcpy(&h, wb->kv + wb->kvent[i].off, sizeof(h));
	if (h.type != KVOP_SET)
		return 0;
	*v = wb->kv + wb->kvent[i].off + sizeof(h) + h.klen;
	*vl = h.vlen;
	return 1;
}

int kvo_lookup(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
	       const void *k, size_t kl, uint64_t rseq, const void **v, size_t *vl,
	       void **owned)
{
	const uint8_t *bv;
	int r;

	*owned = NULL;
	r = batch_kv_find(b, db, id, k, kl, &bv, vl);
	if (r > 0)
		*v = bv;
	if (r >= 0)
		return r;
	r = kvo_get(st, db, id, k, kl, rseq, owned, vl);
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

int kvo_exists(struct store *st, const struct batch *b, MDB_txn *t, int db, uint64_t id,
	       const void *k, size_t kl, uint64_t rseq)
{
	const void *v;
	void *owned;
	size_t vl;
	int r = kvo_lookup(st, b, t, db, id, k, kl, rseq, &v, &vl, &owned);

	free(owned);
	return r;
}

bool kvo_cleared(struct store *st, int db, uint64_t id, uint64_t rseq)
{
	struct wal *w = &st->wal;
	struct kvo_obj *ob;
	bool r = false;

	if (!kvo_active(st))
		return false;
	pthread_mutex_lock(&w->lock);
	ob = kvo_find(w, id, false);
	for (const struct kvo_op *o = ob ? ob->head : NULL; o && !r; o = o->onext)
		r = o->db == db && o->type == KVOP_CLEAR && kvo_visible(o, rseq);
	pthread_mutex_unlock(&w->lock);
	return r;
}

int kvo_ids(struct store *st, int db, uint64_t rseq, uint64_t **ids, size_t *n)
{
	struct wal *w = &st->wal;
	size_t cap = 0;
	int r = 0;

	*ids = NULL;
	*n = 0;
	if (!kvo_active(st))
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

void kvo_view_free(struct kv_view *v)
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

/* The kv's order of keys: memcmp, the shorter first on a tie. */
static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

/* By key in the kv's order, then by log order (mutations of one record
 * share an lsn, hence the position). */
static int kvo_ref_cmp(const void *a, const void *b)
{
	const struct kvo_ref *x = a, *y = b;
	int c = key_cmp(x->o->data, x->o->klen, y->o->data, y->o->klen);

	if (c)
		return c;
	return x->i < y->i ? -1 : x->i > y->i;
}

int kvo_view(struct store *st, int db, uint64_t id, uint64_t rseq, struct kv_view *out)
{
	struct wal *w = &st->wal;
	struct kvo_obj *ob;
	struct kvo_ref *v = NULL;
	size_t n = 0, cap = 0, m = 0;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!kvo_active(st))
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
		kvo_view_free(out);
	return r;
}

int kvo_walk(struct store *st, MDB_txn *t, uint64_t rseq, MDB_dbi dbi, uint64_t id,
	     const char *oid, const void *after, size_t alen, size_t max, kvo_walk_fn fn,
	     void *arg)
{
	uint8_t key[KVDB_KEY_MAX];
	struct kv_view ov;
	size_t oi = 0;
	MDB_cursor *c = NULL;
	MDB_val k, v;
	int r, rc = MDB_NOTFOUND, count = 0;

	r = kvo_view(st, kvdb_of(&st->kv, dbi), id, rseq, &ov);
	if (r)
		return r;
	while (after && oi < ov.n && key_cmp(ov.e[oi].k, ov.e[oi].kl, after, alen) <= 0)
		oi++;
	if (!ov.cleared) {
		k.mv_size = key_id(key, id, after, after ? alen : 0);
		k.mv_data = key;
		rc = mdb_cursor_open(t, dbi, &c);
		if (rc) {
			r = kv_err(rc);
			goto out;
		}
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (!rc && after && k.mv_size == 8 + alen &&
		    !memcmp((uint8_t *)k.mv_data + 8, after, alen))
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);	/* strictly after */
	}
	while (!max || (size_t)count < max) {
		bool kv_ok = c && !rc && k.mv_size >= 8 && get_be64(k.mv_data) == id;
		int cmp;

		if (!kv_ok && oi == ov.n)
			break;
		if (kv_ok && oi < ov.n)
			cmp = key_cmp((uint8_t *)k.mv_data + 8, k.mv_size - 8, ov.e[oi].k, ov.e[oi].kl);
		else
			cmp = kv_ok ? -1 : 1;
		if (cmp < 0) {
			const void *pv = NULL;
			size_t pl = 0;

			r = oid ? kv_unwrap(&v, &pv, &pl) : 0;
			if (r) {
				log_error("store", "checksum mismatch in a value of '%s'", oid);
				break;
			}
			r = fn(arg, (uint8_t *)k.mv_data + 8, k.mv_size - 8, pv, pl);
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		} else {
			const struct kv_view_ent *e = &ov.e[oi++];

			if (cmp == 0)
				rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
			if (e->del)
				continue;
			r = fn(arg, e->k, e->kl, e->v, e->vl);
		}
		if (r)
			break;
		count++;
	}
	if (!r && c && rc && rc != MDB_NOTFOUND)
		r = kv_err(rc);
	if (!r)
		r = count;
out:
	if (c)
		mdb_cursor_close(c);
	kvo_view_free(&ov);
	return r;
}

int kvo_chunk_get(struct store *st, const struct batch *b, MDB_txn *t, uint64_t id,
		  uint32_t idx, uint64_t rseq, struct chunk *c)
{
	uint8_t k[4];
	const void *v;
	void *owned;
	size_t vl;
	int r;

	put_be32(k, idx);
	r = kvo_lookup(st, b, t, KVDB_CHUNK, id, k, sizeof(k), rseq, &v, &vl, &owned);
	if (r <= 0) {
		memset(c, 0, sizeof(*c));
		return r;
	}
	r = chunk_decode(c, v, vl) ? -EIO : 0;
	free(owned);
	return r;
}

int kvo_batch_keys(const struct batch *b, int db, uint64_t id,
		   int (*fn)(void *arg, const void *k, size_t kl), void *arg)
{
	const struct walb *wb = &b->wal;
	int r = 0;

	for (size_t off = 0; off < wb->kvlen && !r;) {
		struct kvop_hdr h;

		memcpy(&h, wb->kv + off, sizeof(h));
		if (h.db == db && h.id == id && h.type != KVOP_CLEAR)
			r = fn(arg, wb->kv + off + sizeof(h), h.klen);
		off += sizeof(h) + h.klen + h.vlen;
	}
	return r;
}

/* The batch commits the kv anyway: its kv mutations go into that commit
 * instead of the log and the overlay, when no object they touch has a
 * mutation in the overlay not yet checkpointed (a logged one would be
 * applied over them at the next checkpoint).  1 if moved, 0 if not,
 * -errno (the batch's kv transaction is then unusable). */
int kvo_batch_to_txn(struct batch *b)
{
	struct store *st = b->st;
	struct wal *w = &st->wal;
	struct walb *wb = &b->wal;
	size_t off = 0;
	bool clash = false;

	if (!wb->nkv)
		return 0;
	if (kvo_active(st)) {
		pthread_mutex_lock(&w->lock);
		while (off < wb->kvlen && !clash) {
			struct kvop_hdr h;
			struct kvo_obj *ob;

			memcpy(&h, wb->kv + off, sizeof(h));
			ob = kvo_find(w, h.id, false);
			/* Live mutations are the object's newest. */
			clash = ob && ob->tail && ob->tail->end == UINT64_MAX;
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
	walb_kv_clear(wb);
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
int kvo_publish(struct wal *w, const uint8_t *p, size_t len, uint32_t nkv, uint64_t seq,
		uint64_t lsn)
{
	struct kvpub pb = { w, seq, lsn, NULL, 0 };
	int r;

	if (!nkv)
		return 0;
	pb.ops = calloc(nkv, sizeof(*pb.ops));
	if (!pb.ops)
		return -ENOMEM;
	r = wal_kvops_decode(p, len, KVDB_MAX, kvpub_prep, &pb);
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
