/*
 * workload.c - deterministic transactions for the crash tests, the model
 * that replays them, and the comparison of a store with the model.
 *
 * Sizes are chosen for a small store (objects below 4.5 MiB, seven objects)
 * so that a 256 MiB sparse block file never fills, also with 32
 * transactions of 4 MiB writes in flight: a transaction that failed for
 * lack of space would break the "applied = a prefix" rule the test relies on.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcdisk.h"	/* pc_rand */
#include "workload.h"

#define MAX_EXTENT	(4608ull << 10)	/* 4.5 MiB: room for unaligned 4 MiB writes */
#define BIG_WRITE	(4ull << 20)

#define X10 "xxxxxxxxxx"
#define X100 X10 X10 X10 X10 X10 X10 X10 X10 X10 X10

const struct wl_object wl_objects[WL_NOBJ] = {
	{ WL_COLL, "obj.0" },
	{ WL_COLL, "obj.1" },
	{ WL_COLL, "obj.2" },
	{ WL_COLL, "obj.long." X100 X100 X100 },
	{ WL_CCOLL, "cobj.0" },
	{ WL_CCOLL, "cobj.1" },
	{ WL_COLL, "ledger" },
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "crash workload: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "crash workload: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

/* ---- generation ------------------------------------------------------ */

enum fill_kind { FILL_RANDOM, FILL_PATTERN, FILL_ZERO };

static unsigned char *gen_bytes(uint64_t *rng, size_t n, enum fill_kind kind)
{
	unsigned char *p = xmalloc(n);
	uint64_t s = pc_rand(rng), w;
	unsigned char motif[16];
	size_t i;

	switch (kind) {
	case FILL_RANDOM:
		for (i = 0; i + 8 <= n; i += 8) {
			w = pc_rand(&s);
			memcpy(p + i, &w, 8);
		}
		w = pc_rand(&s);
		memcpy(p + i, &w, n - i);
		break;
	case FILL_PATTERN:	/* compresses well, yet differs per write */
		for (i = 0; i < sizeof(motif); i++)
			motif[i] = (unsigned char)pc_rand(&s);
		for (i = 0; i < n; i++)
			p[i] = motif[i % sizeof(motif)];
		for (i = 0; i < n; i += 509)
			p[i] = (unsigned char)pc_rand(&s);
		break;
	case FILL_ZERO:
		memset(p, 0, n);
		break;
	}
	return p;
}

static struct wl_op *add_op(struct wl_txn *t, enum wl_op_type type, int obj)
{
	struct wl_op *op;

	if (t->nops >= WL_MAXOPS)
		abort();	/* the generator below never asks for more */
	op = &t->ops[t->nops++];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->obj = obj;
	return op;
}

static void gen_attr_name(uint64_t *rng, struct wl_op *op)
{
	if (pc_below(rng, 10) == 0) {
		memset(op->key, 'n', 200);	/* a long name */
		op->key[200] = '\0';
		op->klen = 200;
	} else {
		op->klen = (size_t)snprintf((char *)op->key, sizeof(op->key), "a%u",
					    (unsigned)pc_below(rng, 5));
	}
}

static void gen_omap_key(uint64_t *rng, struct wl_op *op)
{
	static const unsigned char alphabet[] = { 0x00, 0x01, 'a', 'b', 0xff };
	size_t i;

	op->klen = 1 + (size_t)pc_below(rng, 3);
	for (i = 0; i < op->klen; i++)
		op->key[i] = alphabet[pc_below(rng, sizeof(alphabet))];
}

static size_t gen_value_len(uint64_t *rng, size_t small, size_t large)
{
	return (size_t)(pc_below(rng, 10) ? pc_below(rng, small + 1)
					  : pc_below(rng, large + 1));
}

static void gen_write(uint64_t *rng, struct wl_op *op)
{
	unsigned c = (unsigned)pc_below(rng, 100);
	uint64_t len, off, span;
	unsigned kind;

	if (c < 30)
		len = 1 + pc_below(rng, 700);
	else if (c < 55)
		len = 1 + pc_below(rng, 20000);
	else if (c < 80)
		len = 4096 * (1 + pc_below(rng, 64));
	else if (c < 97)
		len = 262144 + pc_below(rng, 786432);
	else
		len = BIG_WRITE;
	/* half the writes stay near the start, so that objects are not all
	 * 6 MiB of holes */
	span = pc_below(rng, 2) ? 65536 : MAX_EXTENT;
	if (span < len)
		span = len;
	if (span > MAX_EXTENT)
		span = MAX_EXTENT;
	off = pc_below(rng, span - len + 1);
	if (c >= 55 && pc_below(rng, 2))
		off &= ~4095ull;
	op->off = off;
	op->len = len;
	op->flags = pc_below(rng, 4) == 0 ? STORE_WRITE_COMPRESS : 0;
	kind = (unsigned)pc_below(rng, 10);
	op->data = gen_bytes(rng, (size_t)len,
			     kind < 5 ? FILL_RANDOM : kind < 9 ? FILL_PATTERN : FILL_ZERO);
	op->dlen = (size_t)len;
}

static void gen_mixed(uint64_t *rng, struct wl_txn *t)
{
	unsigned nops = 1 + (unsigned)pc_below(rng, 4), i;

	for (i = 0; i < nops; i++) {
		int obj = (int)pc_below(rng, WL_LEDGER);
		unsigned r = (unsigned)pc_below(rng, 100);
		struct wl_op *op;

		if (r < 46) {
			gen_write(rng, add_op(t, WL_WRITE, obj));
			continue;
		}
		add_op(t, WL_TOUCH, obj);
		if (r < 53) {
			op = add_op(t, WL_ZERO, obj);
			op->off = pc_below(rng, MAX_EXTENT);
			op->len = 1 + pc_below(rng, MAX_EXTENT - op->off < (1u << 20)
						 ? MAX_EXTENT - op->off : (1u << 20));
		} else if (r < 60) {
			op = add_op(t, WL_TRUNCATE, obj);
			switch (pc_below(rng, 3)) {
			case 0:
				op->len = pc_below(rng, 65536);
				break;
			case 1:
				op->len = pc_below(rng, MAX_EXTENT + 1);
				break;
			default:
				op->len = 4096 * pc_below(rng, MAX_EXTENT / 4096 + 1);
				break;
			}
		} else if (r < 63) {
			add_op(t, WL_REMOVE, obj);
		} else if (r < 65) {
			add_op(t, WL_REMOVE, obj);
			add_op(t, WL_CREATE, obj);
		} else if (r < 81) {
			op = add_op(t, WL_SETATTR, obj);
			gen_attr_name(rng, op);
			op->dlen = gen_value_len(rng, 300, 8000);
			op->data = gen_bytes(rng, op->dlen, FILL_RANDOM);
			if (r >= 77) {	/* set, then remove in the same txn */
				struct wl_op *rm = add_op(t, WL_RMATTR, obj);

				memcpy(rm->key, op->key, sizeof(rm->key));
				rm->klen = op->klen;
			}
		} else if (r < 93) {
			op = add_op(t, WL_OMAP_SET, obj);
			gen_omap_key(rng, op);
			op->dlen = gen_value_len(rng, 500, 10000);
			op->data = gen_bytes(rng, op->dlen,
					     pc_below(rng, 2) ? FILL_RANDOM : FILL_PATTERN);
		} else if (r < 98) {
			gen_omap_key(rng, add_op(t, WL_OMAP_RM, obj));
		} else {
			add_op(t, WL_OMAP_CLEAR, obj);
		}
	}
}

/* Large writes of fresh random data, the kind whose loss a missing data
 * flush cannot hide; now and then a truncate to 0 so space comes back. */
static void gen_data(uint64_t *rng, struct wl_txn *t)
{
	int obj = (int)pc_below(rng, WL_LEDGER);
	struct wl_op *op;

	if (pc_below(rng, 10) == 0) {
		add_op(t, WL_TOUCH, obj);
		add_op(t, WL_TRUNCATE, obj);
		return;
	}
	op = add_op(t, WL_WRITE, obj);
	op->len = 4096 * (16 + pc_below(rng, 241));
	op->off = 4096 * pc_below(rng, (MAX_EXTENT - op->len) / 4096 + 1);
	op->data = gen_bytes(rng, (size_t)op->len, FILL_RANDOM);
	op->dlen = (size_t)op->len;
}

/* Large block-aligned writes of fresh data to the plain collection,
 * uncompressed, and nothing else that touches the block: the store writes
 * their whole blocks when they are queued (prewrite.c) and only a partial
 * last block goes to the journal, so a batch made of such transactions has
 * no copy-on-write data of its own (but for an object that is still inline
 * or has compressed chunks: those are rewritten copy-on-write).  That is
 * the batch whose block flush a store can forget while other batches'
 * flushes cover for it most of the time: commit.c write_data() once
 * returned early for a batch without copy-on-write data, prewritten or not.
 * Never zeros: a lost write of zeros to a fresh block reads back right. */
static void gen_aligned(uint64_t *rng, struct wl_txn *t)
{
	unsigned nw = pc_below(rng, 4) ? 1 : 2, i;

	for (i = 0; i < nw; i++) {
		struct wl_op *op = add_op(t, WL_WRITE, (int)pc_below(rng, 4));
		/* at most 4 MiB a transaction, as in gen_mixed mostly */
		unsigned c = i ? 1 + (unsigned)pc_below(rng, 7) : (unsigned)pc_below(rng, 8);

		if (c == 0)		/* a whole 4 MiB object */
			op->len = BIG_WRITE;
		else if (c < 3)		/* 1-2 MiB of whole blocks */
			op->len = 4096 * (256 + pc_below(rng, 257));
		else if (c < 6)		/* 256 KiB - 1 MiB of whole blocks */
			op->len = 4096 * (64 + pc_below(rng, 193));
		else			/* 256 KiB - 1 MiB, the tail journaled */
			op->len = 262144 + pc_below(rng, 786432);
		op->off = c == 0 && pc_below(rng, 2) ? 0
			: 4096 * pc_below(rng, (MAX_EXTENT - op->len) / 4096 + 1);
		op->data = gen_bytes(rng, (size_t)op->len,
				     pc_below(rng, 2) ? FILL_RANDOM : FILL_PATTERN);
		op->dlen = (size_t)op->len;
	}
	if (pc_below(rng, 4) == 0) {	/* metadata only: no block I/O */
		int obj = (int)pc_below(rng, 4);
		struct wl_op *op;

		add_op(t, WL_TOUCH, obj);
		op = add_op(t, WL_OMAP_SET, obj);
		gen_omap_key(rng, op);
		op->dlen = gen_value_len(rng, 500, 10000);
		op->data = gen_bytes(rng, op->dlen, FILL_RANDOM);
	}
}

/* Small block-aligned overwrites (4-12 KiB) near the start of objects
 * 0..3, where data usually is: the store logs them (wal.c) without a kv
 * commit, so with the ledger (also a logged block) a batch of such
 * transactions commits through the log alone and is acknowledged right
 * after the block's flush.  That is the flush a store could forget while
 * kv batches hide it most of the time. */
static void gen_small(uint64_t *rng, struct wl_txn *t)
{
	unsigned nw = 1 + (unsigned)pc_below(rng, 2), i;

	for (i = 0; i < nw; i++) {
		struct wl_op *op = add_op(t, WL_WRITE, (int)pc_below(rng, 4));

		op->len = 4096 * (1 + pc_below(rng, 3));
		op->off = 4096 * pc_below(rng, 48);
		op->data = gen_bytes(rng, (size_t)op->len,
				     pc_below(rng, 2) ? FILL_RANDOM : FILL_PATTERN);
		op->dlen = (size_t)op->len;
	}
}

/* In the mixed profile, transactions come in runs of WL_RUN; one run in
 * WL_RUN_ALIGNED is made of gen_aligned() transactions only, so that with
 * a few transactions in flight whole batches (and the batch after them,
 * whose kv flush acknowledges them) carry prewritten data only. */
#define WL_RUN		16
#define WL_RUN_ALIGNED	4

/* 0: a mixed run, 1: an aligned run, 2: a run of small overwrites */
static unsigned run_kind(uint64_t seed, uint64_t n)
{
	uint64_t r = seed ^ ((n / WL_RUN + 1) * 0x9fb21c651e98df25ull);

	pc_rand(&r);
	if (pc_below(&r, WL_RUN_ALIGNED) == 0)
		return 1;
	return pc_below(&r, 3) == 0 ? 2 : 0;
}

void wl_gen(uint64_t seed, uint64_t n, enum wl_profile prof, struct wl_txn *t)
{
	uint64_t rng = seed ^ (n * 0xd1342543de82ef95ull);
	struct wl_op *op;
	uint64_t v = n + 1;
	int i;

	pc_rand(&rng);
	memset(t, 0, sizeof(*t));
	t->n = n;
	if (prof == WL_PROFILE_DATA) {
		gen_data(&rng, t);
	} else {
		unsigned kind = run_kind(seed, n);

		if (kind == 1)
			gen_aligned(&rng, t);
		else if (kind == 2)
			gen_small(&rng, t);
		else
			gen_mixed(&rng, t);
	}
	/* the ledger: "applied" = n + 1, little endian, in the first 8 bytes
	 * of the ledger object's one 4 KiB block (an overwrite: logged) */
	op = add_op(t, WL_WRITE, WL_LEDGER);
	op->off = 0;
	op->len = WL_LEDGER_SIZE;
	op->data = xmalloc(WL_LEDGER_SIZE);
	memset(op->data, 0, WL_LEDGER_SIZE);
	for (i = 0; i < 8; i++)
		op->data[i] = (unsigned char)(v >> (8 * i));
	op->dlen = WL_LEDGER_SIZE;
}

void wl_txn_release(struct wl_txn *t)
{
	size_t i;

	for (i = 0; i < t->nops; i++) {
		free(t->ops[i].data);
		t->ops[i].data = NULL;
	}
	t->nops = 0;
}

int wl_to_store(const struct wl_txn *t, struct store_txn *st)
{
	size_t i;
	int r = 0;

	for (i = 0; i < t->nops && r == 0; i++) {
		const struct wl_op *op = &t->ops[i];
		uint64_t c = wl_objects[op->obj].coll;
		const char *o = wl_objects[op->obj].name;

		switch (op->type) {
		case WL_TOUCH:
			r = store_txn_touch(st, c, o);
			break;
		case WL_CREATE:
			r = store_txn_create(st, c, o);
			break;
		case WL_WRITE:
			r = store_txn_write(st, c, o, op->off, op->data, op->dlen, op->flags);
			break;
		case WL_ZERO:
			r = store_txn_zero(st, c, o, op->off, op->len);
			break;
		case WL_TRUNCATE:
			r = store_txn_truncate(st, c, o, op->len);
			break;
		case WL_REMOVE:
			r = store_txn_remove(st, c, o);
			break;
		case WL_SETATTR:
			r = store_txn_setattr(st, c, o, (const char *)op->key, op->data, op->dlen);
			break;
		case WL_RMATTR:
			r = store_txn_rmattr(st, c, o, (const char *)op->key);
			break;
		case WL_OMAP_SET:
			r = store_txn_omap_set(st, c, o, op->key, op->klen, op->data, op->dlen);
			break;
		case WL_OMAP_RM:
			r = store_txn_omap_rm(st, c, o, op->key, op->klen);
			break;
		case WL_OMAP_CLEAR:
			r = store_txn_omap_clear(st, c, o);
			break;
		}
	}
	return r;
}

void wl_describe(const struct wl_txn *t, char *buf, size_t len)
{
	static const char *const names[] = {
		"touch", "create", "write", "zero", "truncate", "remove",
		"setattr", "rmattr", "omap_set", "omap_rm", "omap_clear",
	};
	size_t i, used;

	used = (size_t)snprintf(buf, len, "txn %llu:", (unsigned long long)t->n);
	for (i = 0; i < t->nops && used < len; i++) {
		const struct wl_op *op = &t->ops[i];

		used += (size_t)snprintf(buf + used, len - used, " %s(%.12s",
					 names[op->type], wl_objects[op->obj].name);
		if (used >= len)
			break;
		if (op->type == WL_WRITE || op->type == WL_ZERO)
			used += (size_t)snprintf(buf + used, len - used, ",%llu+%llu%s)",
						 (unsigned long long)op->off,
						 (unsigned long long)op->len,
						 op->flags ? ",lz4" : "");
		else if (op->type == WL_TRUNCATE)
			used += (size_t)snprintf(buf + used, len - used, ",%llu)",
						 (unsigned long long)op->len);
		else
			used += (size_t)snprintf(buf + used, len - used, ")");
	}
}

/* ---- the model ------------------------------------------------------- */

static int key_cmp(const unsigned char *a, size_t al, const unsigned char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl ? 1 : 0;
}

/* index of key, or -(insertion point) - 1 */
static long kv_find(const struct wl_kv *v, size_t n, const unsigned char *k, size_t kl)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = key_cmp(v[mid].k, v[mid].klen, k, kl);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(long)lo - 1;
}

static void kv_set(struct wl_kv **v, size_t *n, size_t *cap, const unsigned char *k,
		   size_t kl, const unsigned char *val, size_t vl)
{
	long i = kv_find(*v, *n, k, kl);
	struct wl_kv *e;

	if (i >= 0) {
		e = &(*v)[i];
		free(e->v);
	} else {
		size_t at = (size_t)(-i - 1);

		if (*n == *cap) {
			*cap = *cap ? 2 * *cap : 8;
			*v = xrealloc(*v, *cap * sizeof(**v));
		}
		memmove(&(*v)[at + 1], &(*v)[at], (*n - at) * sizeof(**v));
		(*n)++;
		e = &(*v)[at];
		e->k = xmalloc(kl);
		memcpy(e->k, k, kl);
		e->klen = kl;
	}
	e->v = xmalloc(vl);
	memcpy(e->v, val, vl);
	e->vlen = vl;
}

static void kv_rm(struct wl_kv *v, size_t *n, const unsigned char *k, size_t kl)
{
	long i = kv_find(v, *n, k, kl);

	if (i < 0)
		return;
	free(v[i].k);
	free(v[i].v);
	memmove(&v[i], &v[i + 1], (*n - (size_t)i - 1) * sizeof(*v));
	(*n)--;
}

static void kv_clear(struct wl_kv *v, size_t *n)
{
	size_t i;

	for (i = 0; i < *n; i++) {
		free(v[i].k);
		free(v[i].v);
	}
	*n = 0;
}

static void mobj_free(struct wl_mobj *o)
{
	kv_clear(o->attrs, &o->nattrs);
	kv_clear(o->omap, &o->nomap);
	free(o->attrs);
	free(o->omap);
	free(o->data);
	memset(o, 0, sizeof(*o));
}

/* size becomes at least `to`; new bytes read as zeros */
static void mobj_grow(struct wl_mobj *o, uint64_t to)
{
	if (to <= o->size)
		return;
	if (to > o->cap) {
		uint64_t c = o->cap ? o->cap : 4096;

		while (c < to)
			c *= 2;
		o->data = xrealloc(o->data, (size_t)c);
		o->cap = c;
	}
	memset(o->data + o->size, 0, (size_t)(to - o->size));
	o->size = to;
}

void wl_model_init(struct wl_model *m)
{
	memset(m, 0, sizeof(*m));
	m->obj[WL_LEDGER].exists = true;
	m->obj[WL_LEDGER].data = xmalloc(WL_LEDGER_SIZE);
	memset(m->obj[WL_LEDGER].data, 0, WL_LEDGER_SIZE);
	m->obj[WL_LEDGER].size = m->obj[WL_LEDGER].cap = WL_LEDGER_SIZE;
}

void wl_model_free(struct wl_model *m)
{
	int i;

	for (i = 0; i < WL_NOBJ; i++)
		mobj_free(&m->obj[i]);
}

void wl_model_apply(struct wl_model *m, const struct wl_txn *t)
{
	size_t i;

	if (t->n != m->applied) {
		fprintf(stderr, "crash workload: model at %llu given txn %llu\n",
			(unsigned long long)m->applied, (unsigned long long)t->n);
		abort();
	}
	for (i = 0; i < t->nops; i++) {
		const struct wl_op *op = &t->ops[i];
		struct wl_mobj *o = &m->obj[op->obj];

		if (op->type == WL_TOUCH || op->type == WL_CREATE || op->type == WL_WRITE)
			o->exists = true;
		switch (op->type) {
		case WL_TOUCH:
		case WL_CREATE:
			break;
		case WL_WRITE:
			mobj_grow(o, op->off + op->len);
			memcpy(o->data + op->off, op->data, (size_t)op->len);
			break;
		case WL_ZERO:
			mobj_grow(o, op->off + op->len);
			memset(o->data + op->off, 0, (size_t)op->len);
			break;
		case WL_TRUNCATE:
			if (op->len > o->size)
				mobj_grow(o, op->len);
			else
				o->size = op->len;
			break;
		case WL_REMOVE:
			mobj_free(o);
			break;
		case WL_SETATTR:
			kv_set(&o->attrs, &o->nattrs, &o->capattrs, op->key, op->klen,
			       op->data, op->dlen);
			break;
		case WL_RMATTR:
			kv_rm(o->attrs, &o->nattrs, op->key, op->klen);
			break;
		case WL_OMAP_SET:
			kv_set(&o->omap, &o->nomap, &o->capomap, op->key, op->klen,
			       op->data, op->dlen);
			break;
		case WL_OMAP_RM:
			kv_rm(o->omap, &o->nomap, op->key, op->klen);
			break;
		case WL_OMAP_CLEAR:
			kv_clear(o->omap, &o->nomap);
			break;
		}
	}
	m->applied++;
}

void wl_model_advance(struct wl_model *m, uint64_t seed, enum wl_profile prof, uint64_t upto)
{
	struct wl_txn t;

	while (m->applied < upto) {
		wl_gen(seed, m->applied, prof, &t);
		wl_model_apply(m, &t);
		wl_txn_release(&t);
	}
}

/* ---- the store side -------------------------------------------------- */

int wl_setup_store(struct store *st)
{
	static const unsigned char zero[WL_LEDGER_SIZE];
	struct store_txn *t = store_txn_new();
	const char *ledger = wl_objects[WL_LEDGER].name;
	int r;

	if (!t)
		return -ENOMEM;
	r = store_txn_coll_create(t, WL_COLL, 0);
	if (!r)
		r = store_txn_coll_create(t, WL_CCOLL, STORE_COLL_COMPRESS);
	if (!r)
		r = store_txn_touch(t, WL_COLL, ledger);
	if (!r)
		r = store_txn_write(t, WL_COLL, ledger, 0, zero, WL_LEDGER_SIZE, 0);
	if (r) {
		store_txn_free(t);
		return r;
	}
	return store_apply(st, t);
}

int64_t wl_read_ledger(struct store *st)
{
	unsigned char buf[WL_LEDGER_SIZE];
	uint64_t v = 0;
	int64_t r;
	int i;

	r = store_read(st, WL_COLL, wl_objects[WL_LEDGER].name, 0, sizeof(buf), buf);
	if (r < 0)
		return r;
	if (r != (int64_t)sizeof(buf))
		return -EBADMSG;
	for (i = 0; i < 8; i++)
		v |= (uint64_t)buf[i] << (8 * i);
	return (int64_t)v;
}

/* ---- comparison ------------------------------------------------------ */

struct vctx {
	wl_report_fn report;
	void *arg;
	int problems;
	/* walks */
	const struct wl_kv *want;
	size_t nwant, seen;
	const char *what, *obj;
	int bad;
	char **names;
	size_t nnames, capnames;
	uint32_t collflags[3];
	int ncolls, strange_colls;
};

static void problem(struct vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(struct vctx *v, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	v->problems++;
	if (v->report)
		v->report(v->arg, buf);
}

static int coll_cb(void *arg, uint64_t coll, uint32_t flags)
{
	struct vctx *v = arg;

	if (coll == WL_COLL || coll == WL_CCOLL)
		v->collflags[coll] = flags, v->ncolls++;
	else
		v->strange_colls++;
	return 0;
}

static int name_cb(void *arg, const char *oid)
{
	struct vctx *v = arg;

	if (v->nnames == v->capnames) {
		v->capnames = v->capnames ? 2 * v->capnames : 16;
		v->names = xrealloc(v->names, v->capnames * sizeof(*v->names));
	}
	v->names[v->nnames] = strdup(oid);
	if (!v->names[v->nnames])
		abort();
	v->nnames++;
	return 0;
}

static int kv_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct vctx *v = arg;
	const struct wl_kv *w;

	if (v->seen >= v->nwant) {
		if (!v->bad++)
			problem(v, "object '%.40s': the store has more %s than expected "
				"(%zu expected)", v->obj, v->what, v->nwant);
		v->seen++;
		return 0;
	}
	w = &v->want[v->seen++];
	if (key_cmp(key, klen, w->k, w->klen) != 0) {
		if (!v->bad++)
			problem(v, "object '%.40s': %s #%zu has key of %zu bytes, expected "
				"'%.*s' (%zu bytes)", v->obj, v->what, v->seen - 1, klen,
				(int)w->klen, (const char *)w->k, w->klen);
	} else if (vlen != w->vlen || memcmp(val, w->v, vlen) != 0) {
		if (!v->bad++)
			problem(v, "object '%.40s': %s '%.*s' has a %zu-byte value, expected "
				"%zu bytes%s", v->obj, v->what, (int)klen, (const char *)key,
				vlen, w->vlen, vlen == w->vlen ? " (contents differ)" : "");
	}
	return 0;
}

static int attr_cb(void *arg, const char *name, const void *val, size_t len)
{
	return kv_cb(arg, name, strlen(name), val, len);
}

static void verify_object(struct store *st, struct vctx *v, int i, const struct wl_mobj *o)
{
	const struct wl_object *wo = &wl_objects[i];
	struct store_stat sb;
	unsigned char *buf;
	unsigned char tail;
	int64_t n;
	int r;

	r = store_stat(st, wo->coll, wo->name, &sb);
	if (r < 0) {
		problem(v, "object '%.40s': stat failed: %s", wo->name, strerror(-r));
		return;
	}
	if (sb.size != o->size)
		problem(v, "object '%.40s': size %llu, expected %llu", wo->name,
			(unsigned long long)sb.size, (unsigned long long)o->size);
	if (sb.nattrs != o->nattrs)
		problem(v, "object '%.40s': %u attributes, expected %zu", wo->name,
			sb.nattrs, o->nattrs);
	buf = xmalloc((size_t)o->size + 1);
	n = store_read(st, wo->coll, wo->name, 0, (size_t)o->size + 1, buf);
	if (n < 0) {
		problem(v, "object '%.40s': read of %llu bytes failed: %s", wo->name,
			(unsigned long long)o->size, strerror((int)-n));
	} else if ((uint64_t)n != o->size) {
		problem(v, "object '%.40s': read returned %lld bytes, expected %llu",
			wo->name, (long long)n, (unsigned long long)o->size);
	} else if (o->size && memcmp(buf, o->data, (size_t)o->size) != 0) {
		size_t k = 0;

		while (buf[k] == o->data[k])
			k++;
		problem(v, "object '%.40s': data differs from byte %zu (block %zu) of %llu",
			wo->name, k, k / STORE_BLOCK_SIZE, (unsigned long long)o->size);
	}
	free(buf);
	n = store_read(st, wo->coll, wo->name, o->size, 1, &tail);
	if (n != 0 && (uint64_t)o->size == sb.size)
		problem(v, "object '%.40s': read at its end returned %lld, expected 0",
			wo->name, (long long)n);

	v->obj = wo->name;
	v->what = "attributes";
	v->want = o->attrs;
	v->nwant = o->nattrs;
	v->seen = 0;
	v->bad = 0;
	r = store_attrs(st, wo->coll, wo->name, attr_cb, v);
	if (r < 0)
		problem(v, "object '%.40s': listing attributes failed: %s", wo->name, strerror(-r));
	else if (!v->bad && v->seen != o->nattrs)
		problem(v, "object '%.40s': %zu attributes listed, expected %zu", wo->name,
			v->seen, o->nattrs);

	v->what = "omap entries";
	v->want = o->omap;
	v->nwant = o->nomap;
	v->seen = 0;
	v->bad = 0;
	r = store_omap_list(st, wo->coll, wo->name, NULL, 0, 0, kv_cb, v);
	if (r < 0)
		problem(v, "object '%.40s': listing the omap failed: %s", wo->name, strerror(-r));
	else if (!v->bad && v->seen != o->nomap)
		problem(v, "object '%.40s': %zu omap entries listed, expected %zu", wo->name,
			v->seen, o->nomap);
}

int wl_verify(struct store *st, const struct wl_model *m, wl_report_fn report, void *arg)
{
	static const uint64_t colls[] = { WL_COLL, WL_CCOLL };
	struct vctx v;
	size_t c, k;
	int i, r;

	memset(&v, 0, sizeof(v));
	v.report = report;
	v.arg = arg;
	r = store_colls(st, coll_cb, &v);
	if (r < 0)
		problem(&v, "listing collections failed: %s", strerror(-r));
	else if (v.ncolls != 2 || v.strange_colls ||
		 (v.collflags[WL_CCOLL] & STORE_COLL_COMPRESS) == 0)
		problem(&v, "collections differ: %d expected ones, %d strange ones, "
			"compressed flag %s", v.ncolls, v.strange_colls,
			v.collflags[WL_CCOLL] & STORE_COLL_COMPRESS ? "set" : "missing");

	for (c = 0; c < 2; c++) {
		v.nnames = 0;
		r = store_list(st, colls[c], NULL, 0, name_cb, &v);
		if (r < 0) {
			problem(&v, "listing collection %llu failed: %s",
				(unsigned long long)colls[c], strerror(-r));
			continue;
		}
		for (k = 0; k < v.nnames; k++) {
			bool known = false;

			for (i = 0; i < WL_NOBJ; i++)
				if (wl_objects[i].coll == colls[c] && m->obj[i].exists &&
				    strcmp(wl_objects[i].name, v.names[k]) == 0)
					known = true;
			if (!known)
				problem(&v, "collection %llu lists object '%.40s' which should "
					"not exist", (unsigned long long)colls[c], v.names[k]);
		}
		for (i = 0; i < WL_NOBJ; i++) {
			bool listed = false;

			if (wl_objects[i].coll != colls[c] || !m->obj[i].exists)
				continue;
			for (k = 0; k < v.nnames; k++)
				if (strcmp(wl_objects[i].name, v.names[k]) == 0)
					listed = true;
			if (!listed)
				problem(&v, "object '%.40s' is missing from collection %llu",
					wl_objects[i].name, (unsigned long long)colls[c]);
		}
		for (k = 0; k < v.nnames; k++)
			free(v.names[k]);
	}
	free(v.names);

	{
		struct store_statfs sf;
		uint64_t objects = 0, stored = 0;

		for (i = 0; i < WL_NOBJ; i++)
			if (m->obj[i].exists) {
				objects++;
				stored += m->obj[i].size;
			}
		r = store_statfs(st, &sf);
		if (r < 0)
			problem(&v, "statfs failed: %s", strerror(-r));
		else if (sf.objects != objects || sf.stored != stored)
			problem(&v, "statfs counts %llu objects of %llu bytes, expected %llu "
				"objects of %llu bytes", (unsigned long long)sf.objects,
				(unsigned long long)sf.stored, (unsigned long long)objects,
				(unsigned long long)stored);
	}
	for (i = 0; i < WL_NOBJ; i++) {
		struct store_stat sb;

		if (m->obj[i].exists) {
			verify_object(st, &v, i, &m->obj[i]);
		} else if ((r = store_stat(st, wl_objects[i].coll, wl_objects[i].name, &sb)) != -ENOENT) {
			problem(&v, "object '%.40s' should not exist, stat says %s",
				wl_objects[i].name, r == 0 ? "it does" : strerror(-r));
		}
	}
	return v.problems;
}
