/*
 * test_store_model.c - long random op sequences checked against a model.
 *
 * A seeded generator makes transactions of random ops (writes of random
 * ranges, sizes and contents, some compressed; zero, truncate, remove,
 * create, touch, attributes, omap) over ~50 objects in three collections
 * (one with compression on).  Each op is applied to a simple in-memory
 * model as it is generated, and the transaction goes to the store, either
 * synchronously (store_apply) or queued (store_queue) with a callback that
 * checks its result.  Now and then a transaction ends in an op that must
 * fail; then none of it may show.  Periodically, after a reopen midway and
 * at the end, every object's size, data, attributes and omap, the listing
 * and the statfs counters are compared with the model, and at the end a
 * deep fsck must be clean.
 *
 * The same run is made with the default options (small overwrites
 * journaled in the kv), with journaling off, and with most writes
 * journaled, small batches and little inline data; a last test queues
 * everything in bursts so that commits group many transactions.
 *
 * The seed is printed; ATOLL_TEST_SEED=<n> replays a run and
 * ATOLL_MODEL_OPS=<n> changes its length (default 20000; the variants run
 * a quarter of it).  On a mismatch the last ops on the object are
 * printed.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "helpers.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

#define NCOLLS		3
#define NOBJS		51
#define MAX_END		(768 * KiB)	/* objects stay below this size */
#define NATTR_NAMES	8
#define HIST		24		/* ops remembered per object */
#define TXN_OPS_MAX	8

static const uint64_t colls[NCOLLS] = { 10, 11, 0xfeedface12345678ull };
static const uint32_t coll_flags[NCOLLS] = { 0, STORE_COLL_COMPRESS, 0 };

/* ---- the model ----------------------------------------------------------- */

struct kvent {
	uint8_t *k;
	size_t kl;
	uint8_t *v;
	size_t vl;
};

struct kvlist {
	struct kvent *e;
	size_t n, cap;
};

struct mobj {
	uint64_t coll;
	char name[STORE_NAME_MAX + 1];
	bool exists;
	uint64_t size;
	uint8_t *data;		/* MAX_END bytes; zero past size */
	struct kvlist attrs;
	struct kvlist omap;
	char hist[HIST][120];
	unsigned nhist;
};

static struct mobj objs[NOBJS];
static uint64_t rng;
static long opno;

static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	if (c)
		return c;
	return al < bl ? -1 : al > bl;
}

/* Index of key, or of where it would go; *found says which. */
static size_t kv_find(const struct kvlist *l, const void *k, size_t kl, bool *found)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = key_cmp(l->e[mid].k, l->e[mid].kl, k, kl);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static void *dup_bytes(const void *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	cr_assert_not_null(d);
	if (n)
		memcpy(d, p, n);
	return d;
}

static void kv_set(struct kvlist *l, const void *k, size_t kl, const void *v, size_t vl)
{
	bool found;
	size_t i = kv_find(l, k, kl, &found);

	if (found) {
		free(l->e[i].v);
	} else {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 16;
			l->e = realloc(l->e, l->cap * sizeof(*l->e));
			cr_assert_not_null(l->e);
		}
		memmove(&l->e[i + 1], &l->e[i], (l->n - i) * sizeof(*l->e));
		l->n++;
		l->e[i].k = dup_bytes(k, kl);
		l->e[i].kl = kl;
	}
	l->e[i].v = dup_bytes(v, vl);
	l->e[i].vl = vl;
}

static bool kv_rm(struct kvlist *l, const void *k, size_t kl)
{
	bool found;
	size_t i = kv_find(l, k, kl, &found);

	if (!found)
		return false;
	free(l->e[i].k);
	free(l->e[i].v);
	memmove(&l->e[i], &l->e[i + 1], (l->n - i - 1) * sizeof(*l->e));
	l->n--;
	return true;
}

static void kv_clear(struct kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->e[i].k);
		free(l->e[i].v);
	}
	free(l->e);
	memset(l, 0, sizeof(*l));
}

static void note(struct mobj *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct mobj *o, const char *fmt, ...)
{
	va_list ap;
	char *h = o->hist[o->nhist++ % HIST];
	int n = snprintf(h, sizeof(o->hist[0]), "op %ld: ", opno);

	va_start(ap, fmt);
	vsnprintf(h + n, sizeof(o->hist[0]) - (size_t)n, fmt, ap);
	va_end(ap);
}

static void print_hist(const struct mobj *o)
{
	unsigned first = o->nhist > HIST ? o->nhist - HIST : 0;

	fprintf(stderr, "last ops on '%.40s%s' (coll %" PRIx64 "):\n", o->name,
		strlen(o->name) > 40 ? "..." : "", o->coll);
	for (unsigned i = first; i < o->nhist; i++)
		fprintf(stderr, "  %s\n", o->hist[i % HIST]);
}

static void model_init(void)
{
	for (int i = 0; i < NOBJS; i++) {
		struct mobj *o = &objs[i];

		memset(o, 0, sizeof(*o));
		o->coll = colls[i % NCOLLS];
		if (i == 0) {
			memset(o->name, 'L', STORE_NAME_MAX);	/* longest name */
			o->name[STORE_NAME_MAX] = '\0';
		} else if (i == 1) {
			snprintf(o->name, sizeof(o->name), "with space \xe2\x98\x83 %d", i);
		} else {
			snprintf(o->name, sizeof(o->name), "o%03d.%x", i, i * 2654435761u);
		}
		o->data = calloc(1, MAX_END);
		cr_assert_not_null(o->data);
	}
}

static void model_free(void)
{
	for (int i = 0; i < NOBJS; i++) {
		free(objs[i].data);
		kv_clear(&objs[i].attrs);
		kv_clear(&objs[i].omap);
	}
}

static void m_set_size(struct mobj *o, uint64_t size)
{
	if (size < o->size)
		memset(o->data + size, 0, o->size - size);
	o->size = size;
}

static void m_remove(struct mobj *o)
{
	m_set_size(o, 0);
	kv_clear(&o->attrs);
	kv_clear(&o->omap);
	o->exists = false;
}

/* ---- op generation -------------------------------------------------------- */

static uint64_t rnd(uint64_t n)
{
	return rng_below(&rng, n);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void fill_data(uint8_t *buf, size_t len, bool *compressible)
{
	switch (rnd(4)) {
	case 0:
		rng_fill(&rng, buf, len);
		*compressible = false;
		break;
	case 1:
		text_fill(buf, len, rnd(1000));
		*compressible = true;
		break;
	case 2:
		memset(buf, (int)rnd(256), len);
		*compressible = true;
		break;
	default:
		/* Half text, half random: compresses some. */
		text_fill(buf, len / 2, rnd(1000));
		rng_fill(&rng, buf + len / 2, len - len / 2);
		*compressible = false;
		break;
	}
}

static void pick_range(const struct mobj *o, uint64_t *off, uint64_t *len)
{
	uint64_t r = rnd(100), l, f;

	if (r < 45)
		l = 1 + rnd(600);
	else if (r < 80)
		l = 1 + rnd(32 * KiB);
	else
		l = 32 * KiB + rnd(300 * KiB);
	l = min_u64(l, MAX_END);
	r = rnd(100);
	if (r < 40)
		f = rnd(min_u64(o->size, MAX_END - l) + 1);	/* overwrite or append */
	else if (r < 55)
		f = (1 + rnd(2)) * 256 * KiB - rnd(300);	/* across a chunk edge */
	else
		f = rnd(MAX_END - l + 1);
	if (rnd(4) == 0) {	/* block aligned */
		f &= ~(uint64_t)4095;
		l = (l + 4095) & ~(uint64_t)4095;
	}
	if (f + l > MAX_END)
		l = MAX_END - f;
	if (l == 0) {
		f = 0;
		l = 1;
	}
	*off = f;
	*len = l;
}

static void attr_name(char *buf, size_t n, uint64_t i)
{
	static const char *names[NATTR_NAMES] = {
		"_", "a", "ab", "snapset", "user.x", "user.xattr.long.name", "z", "\x7f",
	};

	snprintf(buf, n, "%s", names[i % NATTR_NAMES]);
}

/* Omap keys: 1-3 bytes over a small alphabet, so keys collide and share
 * prefixes, and include NUL and 0xff. */
static size_t omap_key(uint8_t *k)
{
	static const uint8_t alpha[] = { 0x00, 0x01, 'a', 'b', 0x7f, 0xff };
	size_t kl = 1 + rnd(3);

	for (size_t i = 0; i < kl; i++)
		k[i] = alpha[rnd(sizeof(alpha))];
	return kl;
}

static struct mobj *pick_obj(int want_exists)	/* 1, 0, or -1 for any */
{
	for (int tries = 0; tries < 200; tries++) {
		struct mobj *o = &objs[rnd(NOBJS)];

		if (want_exists < 0 || o->exists == (want_exists == 1))
			return o;
	}
	return NULL;
}

/* Adds one random valid op to t and applies it to the model (unless
 * apply is false: then the model is left alone, for a txn that is going
 * to fail).  Returns false if no op could be made. */
static bool gen_op(struct store_txn *t, bool apply)
{
	uint64_t r = rnd(100);
	struct mobj *o;
	uint64_t off, len;
	int rc;

	if (r < 30) {			/* write */
		bool compressible;
		uint8_t *buf;
		uint32_t flags;

		o = pick_obj(-1);
		pick_range(o, &off, &len);
		buf = malloc(len);
		cr_assert_not_null(buf);
		fill_data(buf, len, &compressible);
		flags = rnd(4) == 0 ? STORE_WRITE_COMPRESS : 0;
		rc = store_txn_write(t, o->coll, o->name, off, buf, len, flags);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			if (!o->exists) {
				o->exists = true;
				o->size = 0;
			}
			memcpy(o->data + off, buf, len);
			if (off + len > o->size)
				o->size = off + len;
			note(o, "write %" PRIu64 "~%" PRIu64 "%s%s", off, len,
			     flags ? " compress" : "", compressible ? " (compressible)" : "");
		}
		free(buf);
		return true;
	}
	if (r < 38) {			/* zero */
		o = pick_obj(1);
		if (!o)
			return false;
		pick_range(o, &off, &len);
		rc = store_txn_zero(t, o->coll, o->name, off, len);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			memset(o->data + off, 0, min_u64(len, o->size > off ? o->size - off : 0));
			if (off + len > o->size)
				o->size = off + len;	/* "may grow the object" */
			note(o, "zero %" PRIu64 "~%" PRIu64, off, len);
		}
		return true;
	}
	if (r < 46) {			/* truncate */
		uint64_t size, k = rnd(10);

		o = pick_obj(1);
		if (!o)
			return false;
		if (k < 4)
			size = rnd(o->size + 1);
		else if (k < 6)
			size = min_u64((1 + rnd(2)) * 256 * KiB + rnd(9) - 4, MAX_END);
		else if (k < 7)
			size = rnd(3000);	/* around inline sizes */
		else
			size = rnd(MAX_END + 1);
		rc = store_txn_truncate(t, o->coll, o->name, size);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			m_set_size(o, size);
			note(o, "truncate %" PRIu64, size);
		}
		return true;
	}
	if (r < 50) {			/* remove */
		o = pick_obj(1);
		if (!o)
			return false;
		rc = store_txn_remove(t, o->coll, o->name);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			m_remove(o);
			note(o, "remove");
		}
		return true;
	}
	if (r < 53) {			/* create (exclusive) */
		o = pick_obj(0);
		if (!o || !apply)
			return false;	/* two creates in one failing txn would race */
		rc = store_txn_create(t, o->coll, o->name);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		o->exists = true;
		o->size = 0;
		note(o, "create");
		return true;
	}
	if (r < 56) {			/* touch */
		o = pick_obj(-1);
		rc = store_txn_touch(t, o->coll, o->name);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			o->exists = true;
			note(o, "touch");
		}
		return true;
	}
	if (r < 68) {			/* setattr */
		char name[64];
		uint8_t val[9000];
		size_t vl = rnd(20) == 0 ? 4000 + rnd(5000) : rnd(300);

		o = pick_obj(1);
		if (!o)
			return false;
		attr_name(name, sizeof(name), rnd(NATTR_NAMES));
		rng_fill(&rng, val, vl);
		rc = store_txn_setattr(t, o->coll, o->name, name, val, vl);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			kv_set(&o->attrs, name, strlen(name), val, vl);
			note(o, "setattr '%s' (%zu bytes)", name, vl);
		}
		return true;
	}
	if (r < 72) {			/* rmattr of an existing attribute */
		char name[64];
		struct kvent *e;

		o = pick_obj(1);
		if (!o || o->attrs.n == 0)
			return false;
		e = &o->attrs.e[rnd(o->attrs.n)];
		snprintf(name, sizeof(name), "%.*s", (int)e->kl, (const char *)e->k);
		rc = store_txn_rmattr(t, o->coll, o->name, name);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			kv_rm(&o->attrs, name, strlen(name));
			note(o, "rmattr '%s'", name);
		}
		return true;
	}
	if (r < 88) {			/* omap set */
		uint8_t k[4], val[12000];
		size_t kl, vl = rnd(30) == 0 ? 5000 + rnd(7000) : rnd(200);

		o = pick_obj(1);
		if (!o)
			return false;
		kl = omap_key(k);
		rng_fill(&rng, val, vl);
		rc = store_txn_omap_set(t, o->coll, o->name, k, kl, val, vl);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			kv_set(&o->omap, k, kl, val, vl);
			note(o, "omap_set key of %zu bytes (%zu bytes)", kl, vl);
		}
		return true;
	}
	if (r < 97) {			/* omap rm (the key may be missing) */
		uint8_t k[4];
		size_t kl;

		o = pick_obj(1);
		if (!o)
			return false;
		kl = omap_key(k);
		rc = store_txn_omap_rm(t, o->coll, o->name, k, kl);
		cr_assert_eq(rc, 0, "%s", errstr(rc));
		if (apply) {
			bool had = kv_rm(&o->omap, k, kl);

			note(o, "omap_rm key of %zu bytes (%s)", kl, had ? "present" : "missing");
		}
		return true;
	}
	o = pick_obj(1);		/* omap clear */
	if (!o)
		return false;
	rc = store_txn_omap_clear(t, o->coll, o->name);
	cr_assert_eq(rc, 0, "%s", errstr(rc));
	if (apply) {
		kv_clear(&o->omap);
		note(o, "omap_clear");
	}
	return true;
}

/* ---- queued transactions -------------------------------------------------- */

static struct waiter inflight;
static atomic_long unexpected;		/* txns whose result was not the expected one */
static atomic_int first_bad_result;
static atomic_long first_bad_op = -1;

struct qslot {
	bool expect_fail;
	long opno;
	long qno;		/* queued in this order */
};

/* Queued transactions complete in queue order (store.h): qslot_queued
 * numbers them, queued_done checks the numbers come back in order. */
static atomic_long queued_next, done_next, out_of_order = -1;

static struct qslot *qslot_new(bool fail, long op)
{
	struct qslot *s = malloc(sizeof(*s));

	cr_assert_not_null(s);
	s->expect_fail = fail;
	s->opno = op;
	s->qno = atomic_fetch_add(&queued_next, 1);
	return s;
}

static void queued_done(void *arg, int r)
{
	struct qslot *s = arg;
	long unset = -1;

	if (atomic_fetch_add(&done_next, 1) != s->qno)
		atomic_compare_exchange_strong(&out_of_order, &unset, s->qno);
	if ((r < 0) != s->expect_fail) {
		long none = -1;

		unexpected++;
		if (atomic_compare_exchange_strong(&first_bad_op, &none, s->opno))
			first_bad_result = r;
	}
	free(s);
	waiter_done(&inflight, 0);
}

static void drain(void)
{
	cr_assert(waiter_wait(&inflight, 120), "queued transactions did not complete: %ld left",
		  inflight.pending);
	cr_assert_eq(unexpected, 0,
		     "%ld queued txn(s) had an unexpected result; first at op %ld: %s",
		     (long)unexpected, (long)first_bad_op, errstr(first_bad_result));
	cr_assert_eq(out_of_order, -1, "queued txn #%ld completed out of queue order",
		     (long)out_of_order);
}

/* ---- comparison ----------------------------------------------------------- */

struct walk {
	const struct kvlist *want;
	size_t i;
	const char *what;
	const struct mobj *o;
};

static int walk_cmp(struct walk *w, const void *k, size_t kl, const void *v, size_t vl)
{
	const struct kvent *e;

	if (w->i >= w->want->n) {
		print_hist(w->o);
		cr_assert_fail("%s of '%s': store has more entries than the model's %zu",
			       w->what, w->o->name, w->want->n);
	}
	e = &w->want->e[w->i];
	if (key_cmp(k, kl, e->k, e->kl) != 0 || vl != e->vl || (vl && memcmp(v, e->v, vl))) {
		print_hist(w->o);
		cr_assert_fail("%s of '%s': entry %zu differs (store key %zu bytes value %zu bytes, "
			       "model key %zu bytes value %zu bytes, keys %s)", w->what, w->o->name,
			       w->i, kl, vl, e->kl, e->vl,
			       key_cmp(k, kl, e->k, e->kl) ? "differ" : "equal");
	}
	w->i++;
	return 0;
}

static int attr_walk(void *arg, const char *name, const void *val, size_t len)
{
	return walk_cmp(arg, name, strlen(name), val, len);
}

static int omap_walk(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	return walk_cmp(arg, k, kl, v, vl);
}

struct list_ck {
	uint64_t coll;
	size_t n;
	char prev[STORE_NAME_MAX + 1];
};

static int list_walk(void *arg, const char *oid)
{
	struct list_ck *l = arg;
	bool known = false;

	if (l->n)
		cr_assert_lt(strcmp(l->prev, oid), 0, "store_list out of order");
	snprintf(l->prev, sizeof(l->prev), "%s", oid);
	for (int i = 0; i < NOBJS; i++)
		if (objs[i].coll == l->coll && strcmp(objs[i].name, oid) == 0) {
			cr_assert(objs[i].exists, "store_list shows '%s', which the model has removed",
				  oid);
			known = true;
		}
	cr_assert(known, "store_list shows unknown object '%s'", oid);
	l->n++;
	return 0;
}

/* Reads of random ranges (unaligned, inside compressed chunks, across
 * the end) against the model. */
static void verify_ranges(struct store *st, const struct mobj *o)
{
	static uint8_t buf[MAX_END + 8192];

	for (int i = 0; i < 4; i++) {
		uint64_t off = rnd(o->size + 5000);
		size_t len = (size_t)(1 + rnd(rnd(2) ? 9000 : MAX_END));
		uint64_t want = off >= o->size ? 0 : min_u64(len, o->size - off);
		int64_t n = store_read(st, o->coll, o->name, off, len, buf);

		if (n != (int64_t)want)
			print_hist(o);
		cr_assert_eq(n, (int64_t)want, "'%s': read %" PRIu64 "~%zu of %" PRIu64
			     " bytes: %s, want %" PRIu64, o->name, off, len, o->size, errstr(n), want);
		if (want && memcmp(buf, o->data + off, want) != 0) {
			print_hist(o);
			cr_assert_fail("'%s': read %" PRIu64 "~%zu differs from the model", o->name,
				       off, len);
		}
	}
}

static void verify_obj(struct store *st, const struct mobj *o)
{
	struct store_stat s;
	uint8_t *got;
	uint64_t size;
	int r = store_stat(st, o->coll, o->name, &s);
	struct walk w;

	if (!o->exists) {
		if (r != -ENOENT)
			print_hist(o);
		cr_assert_eq(r, -ENOENT, "'%s' should not exist: %s", o->name, errstr(r));
		return;
	}
	if (r < 0)
		print_hist(o);
	cr_assert_eq(r, 0, "stat '%s': %s", o->name, errstr(r));
	if (s.size != o->size) {
		print_hist(o);
		cr_assert_fail("'%s': size %" PRIu64 ", model %" PRIu64, o->name, s.size, o->size);
	}
	if (s.nattrs != o->attrs.n) {
		print_hist(o);
		cr_assert_fail("'%s': nattrs %u, model %zu", o->name, s.nattrs, o->attrs.n);
	}
	r = read_all(st, o->coll, o->name, &got, &size);
	if (r < 0)
		print_hist(o);
	cr_assert_eq(r, 0, "reading '%s': %s", o->name, errstr(r));
	for (uint64_t i = 0; i < size; i++)
		if (got[i] != o->data[i]) {
			uint64_t j = i;

			while (j < size && got[j] != o->data[j])
				j++;
			print_hist(o);
			cr_assert_fail("'%s': data differs at %" PRIu64 "..%" PRIu64 " (size %" PRIu64
				       "): got 0x%02x, model 0x%02x", o->name, i, j, size, got[i],
				       o->data[i]);
		}
	free(got);
	verify_ranges(st, o);

	w = (struct walk){ .want = &o->attrs, .what = "attrs", .o = o };
	r = store_attrs(st, o->coll, o->name, attr_walk, &w);
	cr_assert_eq(r, 0, "attrs of '%s': %s", o->name, errstr(r));
	cr_assert_eq(w.i, o->attrs.n, "attrs of '%s': %zu listed, model has %zu", o->name, w.i,
		     o->attrs.n);
	w = (struct walk){ .want = &o->omap, .what = "omap", .o = o };
	r = store_omap_list(st, o->coll, o->name, NULL, 0, 0, omap_walk, &w);
	cr_assert_eq(r, (int)o->omap.n, "omap of '%s': %s, model has %zu", o->name, errstr(r),
		     o->omap.n);
	cr_assert_eq(w.i, o->omap.n);
	/* Spot-check single gets too. */
	if (o->omap.n) {
		const struct kvent *e = &o->omap.e[rnd(o->omap.n)];
		void *v;
		size_t vl;

		r = store_omap_get(st, o->coll, o->name, e->k, e->kl, &v, &vl);
		cr_assert_eq(r, 0, "omap_get on '%s': %s", o->name, errstr(r));
		cr_assert(vl == e->vl && (!vl || memcmp(v, e->v, vl) == 0));
		free(v);
	}
}

static void verify_all(struct store *st, const char *when)
{
	struct store_statfs f;
	uint64_t nobj = 0, stored = 0, blocks = 0;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	drain();
	for (int i = 0; i < NOBJS; i++) {
		verify_obj(st, &objs[i]);
		if (objs[i].exists) {
			struct store_stat s;

			cr_assert_eq(store_stat(st, objs[i].coll, objs[i].name, &s), 0);
			nobj++;
			stored += objs[i].size;
			blocks += s.blocks;
		}
	}
	for (int c = 0; c < NCOLLS; c++) {
		struct list_ck l = { .coll = colls[c] };
		size_t want = 0;
		int r = store_list(st, colls[c], NULL, 0, list_walk, &l);

		for (int i = 0; i < NOBJS; i++)
			want += objs[i].coll == colls[c] && objs[i].exists;
		cr_assert_eq(r, (int)want, "store_list of coll %" PRIx64 ": %s, model has %zu",
			     colls[c], errstr(r), want);
	}
	cr_assert_eq(store_statfs(st, &f), 0);
	cr_assert_eq(f.objects, nobj, "statfs.objects %" PRIu64 ", model %" PRIu64, f.objects, nobj);
	cr_assert_eq(f.stored, stored, "statfs.stored %" PRIu64 ", model %" PRIu64, f.stored, stored);
	cr_assert_eq(f.used, blocks * STORE_BLOCK_SIZE, "statfs.used %" PRIu64 ", objects' blocks %"
		     PRIu64, f.used, blocks);
	cr_assert_eq(f.total, f.used + f.free);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "model: verified %s (op %ld): %" PRIu64 " objects, %" PRIu64
		" bytes, %" PRIu64 " blocks, %.2f s\n", when, opno, nobj, stored, blocks,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* ---- the run -------------------------------------------------------------- */

static void init_model_store(void)
{
	ts_init();
	ts.opt.block_size = 256 * MiB;
	OK(ts_mkfs_open(&ts));
}

static void fini_model_store(void)
{
	model_free();
	ts_fini();
}

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 0) : dflt;
}

/* Builds and submits one transaction; returns the number of ops in it. */
static long one_txn(bool may_fail)
{
	struct store_txn *t = store_txn_new();
	bool fail = may_fail && rnd(25) == 0;
	bool async = rnd(100) < 60;
	size_t nops = 1 + rnd(rnd(4) == 0 ? TXN_OPS_MAX : 3);
	long made = 0;

	cr_assert_not_null(t);
	for (size_t i = 0; i < nops; i++)
		made += gen_op(t, !fail);
	if (fail) {
		/* An op that fails whatever came before it in the txn. */
		if (rnd(2)) {
			OK(store_txn_remove(t, colls[rnd(NCOLLS)], "ghost: never created"));
		} else {
			struct mobj *o = pick_obj(1);

			if (o)
				OK(store_txn_rmattr(t, o->coll, o->name, "never set"));
			else
				OK(store_txn_remove(t, colls[0], "ghost: never created"));
		}
	}
	if (store_txn_ops(t) == 0) {
		store_txn_free(t);
		return 0;
	}
	if (async) {
		struct qslot *s = qslot_new(fail, opno);

		waiter_add(&inflight, 1);
		OK(store_queue(ts.st, t, queued_done, s));
	} else {
		int r = store_apply(ts.st, t);

		if (fail)
			cr_assert_lt(r, 0, "txn at op %ld should have failed", opno);
		else
			cr_assert_eq(r, 0, "txn at op %ld: %s", opno, errstr(r));
	}
	return made;
}

TestSuite(model, .init = init_model_store, .fini = fini_model_store, .timeout = 600);

static void run_model(long total)
{
	long verify_every = total / 8 > 0 ? total / 8 : 1;
	long next_verify = verify_every;
	bool reopened = false;
	struct fsck_log log;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	rng = test_seed("test_store_model");
	waiter_init(&inflight);
	model_init();
	for (int c = 0; c < NCOLLS; c++)
		OK(do_coll_create(ts.st, colls[c], coll_flags[c]));

	while (opno < total) {
		opno += one_txn(true);
		if (opno >= next_verify) {
			verify_all(ts.st, "periodically");
			next_verify += verify_every;
		}
		if (!reopened && opno >= total / 2) {
			drain();
			OK(ts_reopen(&ts));
			verify_all(ts.st, "after reopen");
			reopened = true;
		}
	}
	verify_all(ts.st, "at the end");
	OK(ts_reopen(&ts));
	verify_all(ts.st, "after the final reopen");

	fsck_run(ts.st, true, &log);
	if (log.problems)
		fsck_print(&log);
	cr_assert_eq(log.problems, 0, "deep fsck found %d problem(s)%s%s", log.problems,
		     log.n ? ", first: " : "", log.n ? log.msgs[0] : "");
	fsck_log_free(&log);
	waiter_destroy(&inflight);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "model: %ld ops in %.1f s\n", opno,
		(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* Default options: small overwrites are journaled (defer_max 32 KiB). */
Test(model, random_ops_match_model)
{
	run_model(env_long("ATOLL_MODEL_OPS", 20000));
}

static void init_model_no_defer(void)
{
	ts_init();
	ts.opt.block_size = 256 * MiB;
	ts.opt.defer_max = STORE_DEFER_OFF;
	OK(ts_mkfs_open(&ts));
}

/* Every write copy-on-write. */
Test(model, random_ops_match_model_without_defer, .init = init_model_no_defer)
{
	run_model(env_long("ATOLL_MODEL_OPS", 20000) / 4);
}

static void init_model_big_defer(void)
{
	ts_init();
	ts.opt.block_size = 256 * MiB;
	ts.opt.defer_max = 256 * 1024;
	ts.opt.inline_max = 512;
	ts.opt.batch_max = 8;
	OK(ts_mkfs_open(&ts));
}

/* Most writes journaled, small batches, little inline data. */
Test(model, random_ops_match_model_big_defer, .init = init_model_big_defer)
{
	run_model(env_long("ATOLL_MODEL_OPS", 20000) / 4);
}

/* Only queued transactions, many in flight at once, so that they are
 * grouped into commits; with failing ones among them. */
static void run_burst(long total)
{

	rng = test_seed("test_store_model burst") ^ 0x5bd1e995;
	waiter_init(&inflight);
	model_init();
	for (int c = 0; c < NCOLLS; c++)
		OK(do_coll_create(ts.st, colls[c], coll_flags[c]));
	while (opno < total) {
		for (int i = 0; i < 64 && opno < total; i++) {
			struct store_txn *t = store_txn_new();
			bool fail = rnd(10) == 0;
			size_t nops = 1 + rnd(4);

			for (size_t j = 0; j < nops; j++)
				opno += gen_op(t, !fail);
			if (fail)
				OK(store_txn_remove(t, colls[1], "ghost: never created"));
			if (store_txn_ops(t) == 0) {
				store_txn_free(t);
				continue;
			}
			struct qslot *s = qslot_new(fail, opno);

			waiter_add(&inflight, 1);
			OK(store_queue(ts.st, t, queued_done, s));
		}
		drain();
	}
	verify_all(ts.st, "after bursts");
	OK(ts_reopen(&ts));
	verify_all(ts.st, "after reopen");
	cr_assert_eq(store_fsck(ts.st, true, NULL, NULL), 0);
	waiter_destroy(&inflight);
}

Test(model, queued_burst_matches_model)
{
	run_burst(env_long("ATOLL_MODEL_OPS", 20000) / 4);
}

static void init_model_flushers(unsigned n)
{
	ts_init();
	ts.opt.block_size = 256 * MiB;
	ts.opt.flushers = n;
	OK(ts_mkfs_open(&ts));
}

static void init_model_one_flusher(void)
{
	init_model_flushers(1);
}

static void init_model_most_flushers(void)
{
	init_model_flushers(STORE_FLUSHERS_MAX);
}

/* Batches that only log are written and flushed by the flushers; with
 * one, flushes follow each other; with the most, many run at once and
 * end in any order, and completions must still come in queue order. */
Test(model, queued_burst_matches_model_one_flusher, .init = init_model_one_flusher)
{
	run_burst(env_long("ATOLL_MODEL_OPS", 20000) / 8);
}

Test(model, queued_burst_matches_model_most_flushers, .init = init_model_most_flushers)
{
	run_burst(env_long("ATOLL_MODEL_OPS", 20000) / 8);
}
