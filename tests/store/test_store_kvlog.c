/*
 * test_store_kvlog.c - kv mutations in the write-ahead log.
 *
 * With kv_log on (the default) setattr, rmattr, omap_set, omap_rm,
 * omap_clear, the attribute/omap part of a remove, onodes and chunk
 * records go into the batch's log record and an in-memory overlay, and reach the kv only at the log's
 * checkpoint (doc/store.md, "Writing").  These tests pin what that must
 * not change: every lookup and listing sees the overlay merged with the
 * kv (values win, removals hide, a clear hides every kv key of the
 * object); a process that exits without closing leaves records that a
 * read-only open replays into the overlay (not checkpointed) and a
 * read-write open checkpoints, both reading the same state; a mutation too
 * big for a record makes the batch write the kv directly after the
 * overlay is checkpointed; fsck stays clean with removals still in the
 * overlay; kv_log off still works and a store switches between the two.
 *
 * The overlay is checkpointed when the store is idle for a moment, so a
 * test on an open store may see it checkpointed already: every check here
 * holds either way.  The tests that exit without closing are the ones
 * that reach the replayed, not yet checkpointed overlay for sure.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "store-int.h"	/* the commit profile's counters */

#define C1 1u
#define C9 9u	/* made by the kv transaction beside a checkpoint */

TestSuite(kvlog, .init = ts_init, .fini = ts_fini);

/* ---- a small model of one object's omap (or attributes) -------------- */

#define MAXK 64

struct kmodel {
	char key[MAXK][32];
	char val[MAXK][64];
	bool set[MAXK];
};

static void km_set(struct kmodel *m, int i, const char *v)
{
	snprintf(m->key[i], sizeof(m->key[i]), "k%03d", i);
	snprintf(m->val[i], sizeof(m->val[i]), "%s", v);
	m->set[i] = true;
}

struct listed {
	int n;
	char key[MAXK][32];
	char val[MAXK][64];
};

static int list_fn(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct listed *l = arg;

	cr_assert_lt(l->n, MAXK, "more keys listed than were ever set");
	cr_assert_lt(kl, sizeof(l->key[0]));
	cr_assert_lt(vl, sizeof(l->val[0]));
	memcpy(l->key[l->n], k, kl);
	l->key[l->n][kl] = 0;
	memcpy(l->val[l->n], v, vl);
	l->val[l->n][vl] = 0;
	l->n++;
	return 0;
}

static int attr_fn(void *arg, const char *name, const void *v, size_t vl)
{
	return list_fn(arg, name, strlen(name), v, vl);
}

/* The object's omap (omap) or attributes equal m: point lookups, the
 * full listing, paged listings from every key, and the attribute count. */
static void expect_keys(struct store *st, const char *oid, const struct kmodel *m, bool omap)
{
	struct listed l = { 0 };
	int want = 0, r;

	for (int i = 0; i < MAXK; i++) {
		char key[32];
		void *v = NULL;
		size_t vl = 0;

		snprintf(key, sizeof(key), "k%03d", i);
		r = omap ? store_omap_get(st, C1, oid, key, strlen(key), &v, &vl)
			 : store_getattr(st, C1, oid, key, &v, &vl);
		if (m->set[i]) {
			cr_assert_eq(r, 0, "%s %s: %s", oid, key, errstr(r));
			cr_assert_eq(vl, strlen(m->val[i]), "%s %s: length %zu", oid, key, vl);
			cr_assert_arr_eq(v, m->val[i], vl, "%s %s: wrong value", oid, key);
			want++;
		} else {
			cr_assert_eq(r, -ENODATA, "%s %s: %s, want -ENODATA", oid, key, errstr(r));
		}
		free(v);
	}
	r = omap ? store_omap_list(st, C1, oid, NULL, 0, 0, list_fn, &l)
		 : store_attrs(st, C1, oid, attr_fn, &l);
	cr_assert_geq(r, 0, "%s: listing: %s", oid, errstr(r));
	cr_assert_eq(l.n, want, "%s: %d keys listed, want %d", oid, l.n, want);
	for (int i = 0, j = 0; i < MAXK; i++) {
		if (!m->set[i])
			continue;
		cr_assert_str_eq(l.key[j], m->key[i], "%s: listed out of order", oid);
		cr_assert_str_eq(l.val[j], m->val[i], "%s: %s listed with a wrong value", oid,
				 m->key[i]);
		j++;
	}
	if (omap) {
		/* Pages of 3 after each listed key: the same sequence. */
		for (int j = 0; j < l.n; j++) {
			struct listed p = { 0 };

			r = store_omap_list(st, C1, oid, l.key[j], strlen(l.key[j]), 3, list_fn, &p);
			cr_assert_geq(r, 0);
			cr_assert_eq(p.n, l.n - j - 1 < 3 ? l.n - j - 1 : 3, "page after %s", l.key[j]);
			for (int q = 0; q < p.n; q++)
				cr_assert_str_eq(p.key[q], l.key[j + 1 + q]);
		}
	} else {
		struct store_stat s;

		OK(store_stat(st, C1, oid, &s));
		cr_assert_eq(s.nattrs, (uint32_t)want, "%s: stat counts %u attributes, want %d",
			     oid, s.nattrs, want);
	}
}

static void expect_fsck_clean(struct store *st)
{
	struct fsck_log log;

	fsck_run(st, true, &log);
	if (log.problems)
		fsck_print(&log);
	cr_assert_eq(log.problems, 0, "fsck found %d problem(s)", log.problems);
	fsck_log_free(&log);
}

/* Sets keys 0..39 (even ones as attributes too) and a data block, then
 * closes: the kv holds them (open and close checkpoint). */
static void base_state(struct kmodel *om, struct kmodel *am)
{
	uint8_t blk[4096];
	struct store_txn *t;

	memset(om, 0, sizeof(*om));
	memset(am, 0, sizeof(*am));
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
	memset(blk, 7, sizeof(blk));
	OK(do_write(ts.st, C1, "o", 0, blk, sizeof(blk), 0));
	t = store_txn_new();
	for (int i = 0; i < 40; i++) {
		char v[32];

		snprintf(v, sizeof(v), "base-%d", i);
		km_set(om, i, v);
		OK(store_txn_omap_set(t, C1, "o", om->key[i], strlen(om->key[i]), v, strlen(v)));
		if (i % 2 == 0) {
			km_set(am, i, v);
			OK(store_txn_setattr(t, C1, "o", am->key[i], v, strlen(v)));
		}
	}
	OK(store_apply(ts.st, t));
	OK(do_setattr(ts.st, C1, "gone", "a", "1", 1));
	OK(do_omap_set(ts.st, C1, "gone", "x", 1, "2", 1));
	ts_close(&ts);
}

/* Mutations on top of the kv's state, each a transaction of an OSD's
 * kind: a 4 KiB overwrite with an attribute and an omap update; removals
 * of kv keys, new keys between them, overwrites; a removed object.  The
 * models follow; st NULL: only the models. */
static int mutate(struct store *st, struct kmodel *om, struct kmodel *am)
{
	if (!st) {
		for (int i = 0; i < 50; i++) {
			char v[32];

			snprintf(v, sizeof(v), "new-%d", i);
			if (i % 5 == 0)
				om->set[i] = false;
			else
				km_set(om, i, v);
			if (i % 4 == 0 && am->set[i])
				am->set[i] = false;
			else if (i % 3 == 0)
				km_set(am, i, v);
		}
		return 0;
	}

	uint8_t blk[4096];
	int r = 0;

	for (int i = 0; i < 50 && !r; i++) {
		struct store_txn *t = store_txn_new();
		char v[32];

		snprintf(v, sizeof(v), "new-%d", i);
		memset(blk, i, sizeof(blk));
		r = store_txn_write(t, C1, "o", 0, blk, sizeof(blk), 0);
		if (i % 5 == 0) {
			char key[32];

			snprintf(key, sizeof(key), "k%03d", i);
			if (!r)
				r = store_txn_omap_rm(t, C1, "o", key, strlen(key));
			om->set[i] = false;
		} else {
			km_set(om, i, v);
			if (!r)
				r = store_txn_omap_set(t, C1, "o", om->key[i], strlen(om->key[i]), v,
						       strlen(v));
		}
		if (i % 4 == 0 && am->set[i]) {
			if (!r)
				r = store_txn_rmattr(t, C1, "o", am->key[i]);
			am->set[i] = false;
		} else if (i % 3 == 0) {
			km_set(am, i, v);
			if (!r)
				r = store_txn_setattr(t, C1, "o", am->key[i], v, strlen(v));
		}
		if (!r)
			r = store_apply(st, t);
		else
			store_txn_free(t);
	}
	if (!r)
		r = do_remove(st, C1, "gone");
	/* A removed and recreated object starts without attributes. */
	if (!r)
		r = do_touch(st, C1, "gone");
	return r;
}

static void expect_mutated(struct store *st, const struct kmodel *om, const struct kmodel *am)
{
	struct kmodel none;
	uint8_t blk[4096];

	memset(&none, 0, sizeof(none));
	expect_keys(st, "o", om, true);
	expect_keys(st, "o", am, false);
	expect_keys(st, "gone", &none, true);
	expect_keys(st, "gone", &none, false);
	memset(blk, 49, sizeof(blk));
	expect_content(st, C1, "o", blk, sizeof(blk));
}

Test(kvlog, lookups_and_listings_merge_the_overlay)
{
	struct kmodel om, am;

	base_state(&om, &am);
	OK(ts_open(&ts));
	OK(mutate(ts.st, &om, &am));
	expect_mutated(ts.st, &om, &am);
	expect_fsck_clean(ts.st);
	OK(ts_reopen(&ts));
	expect_mutated(ts.st, &om, &am);
	expect_fsck_clean(ts.st);
}

/* The mutations are acknowledged, then the process exits without closing:
 * a read-only open replays the records into the overlay (no checkpoint)
 * and must read the same as the read-write open that checkpoints them. */
static int mutate_work(struct store *st, void *arg)
{
	struct kmodel **m = arg;

	return mutate(st, m[0], m[1]);
}

Test(kvlog, replayed_overlay_reads_as_acknowledged)
{
	struct kmodel om, am;

	base_state(&om, &am);
	OK(ts_run_and_die(&ts, mutate_work, (struct kmodel *[]){ &om, &am }));
	mutate(NULL, &om, &am);	/* what the child did, to our models */
	ts.opt.readonly = true;
	OK(ts_open(&ts));
	expect_mutated(ts.st, &om, &am);
	expect_fsck_clean(ts.st);
	ts_close(&ts);
	ts.opt.readonly = false;
	OK(ts_open(&ts));
	expect_mutated(ts.st, &om, &am);
	expect_fsck_clean(ts.st);
}

/* A value too big for a log record: the batch checkpoints the overlay and
 * writes the kv directly; what was logged before stays, in order. */
Test(kvlog, mutation_too_big_for_a_record_goes_to_the_kv)
{
	size_t big = 2u << 20;	/* a 128 MiB store's log takes records of 1 MiB */
	uint8_t *v = malloc(big);
	void *got;
	size_t gl;
	struct kmodel om;
	struct store_txn *t;

	cr_assert_not_null(v);
	memset(&om, 0, sizeof(om));
	pattern_fill(v, big, 0, 9);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
	for (int i = 0; i < 10; i++) {
		km_set(&om, i, "small");
		OK(do_omap_set(ts.st, C1, "o", om.key[i], strlen(om.key[i]), "small", 5));
	}
	/* In one transaction: a small update logged first, then the big one. */
	t = store_txn_new();
	km_set(&om, 3, "changed");
	OK(store_txn_omap_set(t, C1, "o", "k003", 4, "changed", 7));
	OK(store_txn_omap_set(t, C1, "o", "big", 3, v, big));
	OK(store_txn_omap_rm(t, C1, "o", "k004", 4));
	om.set[4] = false;
	OK(store_apply(ts.st, t));
	OK(store_omap_get(ts.st, C1, "o", "big", 3, &got, &gl));
	cr_assert_eq(gl, big);
	cr_assert(memcmp(got, v, big) == 0, "the big value reads back wrong");
	free(got);
	OK(do_omap_rm(ts.st, C1, "o", "big", 3));
	expect_keys(ts.st, "o", &om, true);
	OK(ts_reopen(&ts));
	expect_keys(ts.st, "o", &om, true);
	expect_fsck_clean(ts.st);
	free(v);
}

/* kv_log off writes the kv directly; a store moves between the modes. */
Test(kvlog, kv_log_off_and_switching)
{
	struct kmodel om, am;

	ts.opt.kv_log = STORE_KVLOG_OFF;
	base_state(&om, &am);
	OK(ts_open(&ts));
	OK(mutate(ts.st, &om, &am));
	expect_mutated(ts.st, &om, &am);
	ts_close(&ts);
	ts.opt.kv_log = STORE_KVLOG_ON;
	OK(ts_open(&ts));
	expect_mutated(ts.st, &om, &am);
	OK(do_omap_set(ts.st, C1, "o", "k001", 4, "on", 2));
	km_set(&om, 1, "on");
	ts_close(&ts);
	ts.opt.kv_log = STORE_KVLOG_OFF;
	OK(ts_open(&ts));
	expect_keys(ts.st, "o", &om, true);
	expect_fsck_clean(ts.st);
	ts.opt.kv_log = 99;
	ts_close(&ts);
	FAILS(ts_open(&ts), -EINVAL);
	ts.opt.kv_log = STORE_KVLOG_DEFAULT;
}

/* rmattr of a missing attribute fails the whole transaction, also when
 * the attribute was removed by an earlier logged transaction or earlier
 * in the same one. */
Test(kvlog, rmattr_sees_logged_removals)
{
	struct store_txn *t;
	void *v;
	size_t vl;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	OK(do_setattr(ts.st, C1, "o", "b", "2", 1));
	OK(do_rmattr(ts.st, C1, "o", "a"));
	FAILS(do_rmattr(ts.st, C1, "o", "a"), -ENODATA);
	t = store_txn_new();
	OK(store_txn_setattr(t, C1, "o", "c", "3", 1));
	OK(store_txn_rmattr(t, C1, "o", "b"));
	OK(store_txn_rmattr(t, C1, "o", "b"));
	FAILS(store_apply(ts.st, t), -ENODATA);
	/* Nothing of it applied. */
	FAILS(store_getattr(ts.st, C1, "o", "c", &v, &vl), -ENODATA);
	OK(store_getattr(ts.st, C1, "o", "b", &v, &vl));
	free(v);
	t = store_txn_new();
	OK(store_txn_omap_set(t, C1, "o", "x", 1, "1", 1));
	OK(store_txn_omap_clear(t, C1, "o"));
	OK(store_txn_omap_set(t, C1, "o", "y", 1, "2", 1));
	OK(store_apply(ts.st, t));
	FAILS(store_omap_get(ts.st, C1, "o", "x", 1, &v, &vl), -ENODATA);
	OK(store_omap_get(ts.st, C1, "o", "y", 1, &v, &vl));
	free(v);
	expect_fsck_clean(ts.st);
}

/* ---- onodes in the log ------------------------------------------------- */

#define C2 2u
#define NOBJ 120

/* What the onode workload leaves: object i of C1 exists with len[i]
 * bytes of pattern tag i (grown objects: two pieces), or not at all. */
struct omodel {
	bool exists[NOBJ];
	uint64_t len[NOBJ];
};

static void oname(char *buf, size_t n, int i)
{
	snprintf(buf, n, "obj.%03d", i);
}

/* Small objects created, grown, truncated, removed and recreated, one
 * grown past inline_max (chunked), and a second collection emptied and
 * removed. */
static int onode_work(struct store *st, struct omodel *m)
{
	uint8_t buf[8192];
	char name[32];
	int r = 0;

	memset(m, 0, sizeof(*m));
	for (int i = 0; i < NOBJ; i++) {
		m->exists[i] = true;
		m->len[i] = 100 + (uint64_t)i * 13 % 1800;
	}
	m->len[7] = 6000;	/* beyond inline_max (2048): chunked */
	m->exists[12] = false;
	m->len[11] = 0;		/* removed, then created again (empty) */
	m->len[20] = 50;	/* truncated */
	if (!st)
		return 0;
	for (int i = 0; i < NOBJ && !r; i++) {
		oname(name, sizeof(name), i);
		pattern_fill(buf, 100, 0, (uint32_t)i);
		r = do_write(st, C1, name, 0, buf, 100, 0);
	}
	for (int i = 0; i < NOBJ && !r; i++) {
		oname(name, sizeof(name), i);
		pattern_fill(buf, m->len[i], 0, (uint32_t)i);
		if (m->len[i] > 100)
			r = do_write(st, C1, name, 100, buf + 100, m->len[i] - 100, 0);
	}
	if (!r)
		r = do_truncate(st, C1, "obj.020", 50);
	if (!r)
		r = do_remove(st, C1, "obj.011");
	if (!r)
		r = do_remove(st, C1, "obj.012");
	if (!r)
		r = do_coll_create(st, C2, 0);
	for (int i = 0; i < 5 && !r; i++) {
		oname(name, sizeof(name), i);
		r = do_touch(st, C2, name);
	}
	if (!r)
		r = do_coll_remove(st, C2) == -ENOTEMPTY ? 0 : -EPROTO;
	for (int i = 0; i < 5 && !r; i++) {
		oname(name, sizeof(name), i);
		r = do_remove(st, C2, name);
	}
	if (!r)
		r = do_coll_remove(st, C2);
	/* After the collection's removal went through the kv, more in the log. */
	if (!r)
		r = do_create(st, C1, "obj.011");
	return r;
}

struct names {
	int n;
	char v[NOBJ][32];
};

static int onode_work_fn(struct store *st, void *arg)
{
	return onode_work(st, arg);
}

static int name_fn(void *arg, const char *oid)
{
	struct names *l = arg;

	cr_assert_lt(l->n, NOBJ, "more objects listed than exist");
	cr_assert_lt(strlen(oid), sizeof(l->v[0]));
	strcpy(l->v[l->n++], oid);
	return 0;
}

static void expect_onodes(struct store *st, const struct omodel *m)
{
	uint8_t want[8192];
	char name[32];
	struct store_statfs sf;
	struct names all = { 0 };
	uint64_t objects = 0, stored = 0;
	int r;

	for (int i = 0; i < NOBJ; i++) {
		oname(name, sizeof(name), i);
		if (!m->exists[i]) {
			cr_assert_eq(obj_size(st, C1, name), -ENOENT, "%s: not removed", name);
			continue;
		}
		cr_assert_eq(obj_size(st, C1, name), (int64_t)m->len[i], "%s: wrong size", name);
		pattern_fill(want, m->len[i], 0, (uint32_t)i);
		expect_content(st, C1, name, want, m->len[i]);
		strcpy(all.v[objects], name);
		objects++;
		stored += m->len[i];
	}
	/* The listing, whole and in pages of 7: every object once, in order. */
	{
		struct names l = { 0 };

		r = store_list(st, C1, NULL, 0, name_fn, &l);
		cr_assert_eq(r, (int)objects, "listed %d objects, want %llu", r,
			     (unsigned long long)objects);
		for (int j = 0; j < l.n; j++)
			cr_assert_str_eq(l.v[j], all.v[j], "listing: %s where %s belongs", l.v[j],
					 all.v[j]);
		l.n = 0;
		do {
			int before = l.n;

			r = store_list(st, C1, before ? l.v[before - 1] : NULL, 7, name_fn, &l);
			cr_assert_geq(r, 0, "paged listing: %s", errstr(r));
			if (r == 0)
				break;
		} while (l.n < NOBJ);
		cr_assert_eq(l.n, (int)objects, "paged listing: %d objects", l.n);
		for (int j = 0; j < l.n; j++)
			cr_assert_str_eq(l.v[j], all.v[j], "paged listing out of order");
	}
	OK(store_statfs(st, &sf));
	cr_assert_eq(sf.objects, objects, "statfs: %llu objects, want %llu",
		     (unsigned long long)sf.objects, (unsigned long long)objects);
	cr_assert_eq(sf.stored, stored, "statfs: %llu bytes, want %llu",
		     (unsigned long long)sf.stored, (unsigned long long)stored);
	cr_assert_eq(store_coll_exists(st, C2), 0, "the removed collection is back");
	expect_fsck_clean(st);
}

/* Closes the store under test and makes a second one beside it, with
 * collection C1. */
static void second_store(void)
{
	char dir[PATH_MAX];

	ts_close(&ts);
	snprintf(dir, sizeof(dir), "%s", ts.dir);
	ts_setup(&ts, dir, "second");
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
}

/* Creations, growth, truncation and removals of small objects are logged
 * (no kv commit of their own): every read, listing and counter sees them
 * on the open store, after a crash (a read-only open replays them into
 * the overlay, a read-write open checkpoints them), and after reopening. */
Test(kvlog, small_objects_live_in_the_log)
{
	struct omodel m;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
	ts_close(&ts);
	OK(ts_run_and_die(&ts, onode_work_fn, &m));
	onode_work(NULL, &m);
	ts.opt.readonly = true;
	OK(ts_open(&ts));
	expect_onodes(ts.st, &m);
	ts_close(&ts);
	ts.opt.readonly = false;
	OK(ts_open(&ts));
	expect_onodes(ts.st, &m);
	/* The same work on an open store of its own, checked before the
	 * idle checkpoint has (most likely) run. */
	second_store();
	OK(onode_work(ts.st, &m));
	/* About 250 single-transaction batches; all but a handful (the
	 * collections) committed no kv. */
	cr_assert_gt(ts.st->perf.wal_only, 230, "only %llu of %llu batches were log-only",
		     (unsigned long long)ts.st->perf.wal_only,
		     (unsigned long long)ts.st->perf.batches);
	expect_onodes(ts.st, &m);
	OK(ts_reopen(&ts));
	expect_onodes(ts.st, &m);
}

/* ---- chunked objects: chunk records in the log -------------------------- */

#define NCHUNKY 12
#define CH_MAX (1280u << 10)	/* the largest object the work makes */

struct cmodel {
	bool exists[NCHUNKY];
	uint64_t size[NCHUNKY];
	uint8_t *data[NCHUNKY];		/* CH_MAX bytes each */
};

static void cmodel_free(struct cmodel *m)
{
	for (int i = 0; i < NCHUNKY; i++)
		free(m->data[i]);
	memset(m, 0, sizeof(*m));
}

/* Chunked objects written every way the store writes data (small writes
 * into holes and over data: logged; large aligned ones: prewritten; large
 * unaligned ones: copy-on-write at the commit), zeroed, truncated,
 * removed and made again; with st NULL only the model is computed (the
 * same every time). */
static int chunk_work(struct store *st, struct cmodel *m)
{
	uint64_t seed = 0x5eedc0de;
	uint8_t *buf = malloc(CH_MAX);
	char name[32];
	int r = 0;

	memset(m, 0, sizeof(*m));
	cr_assert_not_null(buf);
	for (int i = 0; i < NCHUNKY; i++) {
		m->data[i] = calloc(1, CH_MAX);
		cr_assert_not_null(m->data[i]);
	}
	for (uint32_t step = 0; step < 400 && !r; step++) {
		int i = (int)rng_below(&seed, NCHUNKY);
		uint64_t kind = rng_below(&seed, 12), off, len, end;

		snprintf(name, sizeof(name), "chunky.%02d", i);
		if (kind < 5) {		/* small: logged */
			off = rng_below(&seed, CH_MAX - 16384);
			len = 1 + rng_below(&seed, 16384);
		} else if (kind < 7) {	/* large and aligned: prewritten */
			len = rng_below(&seed, 2) ? (1u << 20) : (256u << 10);
			off = rng_below(&seed, (CH_MAX - len) / 4096 + 1) * 4096;
		} else if (kind < 9) {	/* large, unaligned: copy-on-write */
			len = 40000 + rng_below(&seed, 90000);
			off = rng_below(&seed, CH_MAX - len);
		} else if (kind == 9) {
			off = rng_below(&seed, CH_MAX);
			len = 1 + rng_below(&seed, min_u64(300000, CH_MAX - off));
			if (!m->exists[i])
				continue;
			end = min_u64(off + len, m->size[i]);
			if (off < end)
				memset(m->data[i] + off, 0, end - off);
			m->size[i] = max_u64(m->size[i], off + len);
			if (st)
				r = do_zero(st, C1, name, off, len);
			continue;
		} else if (kind == 10) {
			uint64_t size = rng_below(&seed, CH_MAX);

			if (!m->exists[i])
				continue;
			if (size < m->size[i])
				memset(m->data[i] + size, 0, m->size[i] - size);
			m->size[i] = size;
			if (st)
				r = do_truncate(st, C1, name, size);
			continue;
		} else {
			if (!m->exists[i])
				continue;
			memset(m->data[i], 0, m->size[i]);
			m->exists[i] = false;
			m->size[i] = 0;
			if (st)
				r = do_remove(st, C1, name);
			continue;
		}
		pattern_fill(buf, len, off, step);
		memcpy(m->data[i] + off, buf, len);
		m->exists[i] = true;
		m->size[i] = max_u64(m->size[i], off + len);
		if (st)
			r = do_write(st, C1, name, off, buf, len, 0);
	}
	free(buf);
	return r;
}

static int chunk_work_fn(struct store *st, void *arg)
{
	struct cmodel m;
	int r = chunk_work(st, &m);

	(void)arg;
	cmodel_free(&m);
	return r;
}

static void expect_chunky(struct store *st, const struct cmodel *m)
{
	char name[32];

	for (int i = 0; i < NCHUNKY; i++) {
		snprintf(name, sizeof(name), "chunky.%02d", i);
		if (m->exists[i])
			expect_content(st, C1, name, m->data[i], m->size[i]);
		else
			cr_assert_eq(obj_size(st, C1, name), -ENOENT, "%s is back", name);
	}
	expect_fsck_clean(st);
}

/* Chunked objects' chunk records ride in the log like onodes: their
 * batches commit no kv, and what they wrote reads back on the open store,
 * after a crash (a read-only open replays the records into the overlay,
 * the allocator counting the log's chunk records; a read-write open
 * checkpoints them), and after reopening, with fsck clean each time. */
Test(kvlog, chunked_objects_live_in_the_log)
{
	struct cmodel m;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
	ts_close(&ts);
	OK(ts_run_and_die(&ts, chunk_work_fn, NULL));
	chunk_work(NULL, &m);
	ts.opt.readonly = true;
	OK(ts_open(&ts));
	expect_chunky(ts.st, &m);
	ts_close(&ts);
	ts.opt.readonly = false;
	OK(ts_open(&ts));
	expect_chunky(ts.st, &m);
	cmodel_free(&m);
	/* The same on an open store: no batch but the collection's
	 * committed the kv. */
	second_store();
	OK(chunk_work(ts.st, &m));
	cr_assert_eq(ts.st->perf.kv_commits, 1, "%llu batches committed the kv, %llu only logged",
		     (unsigned long long)ts.st->perf.kv_commits,
		     (unsigned long long)ts.st->perf.wal_only);
	expect_chunky(ts.st, &m);
	OK(ts_reopen(&ts));
	expect_chunky(ts.st, &m);
	cmodel_free(&m);
}

/* ---- batches beside a checkpoint's kv commit -------------------------- */

#define BIG_SIZE (1u << 20)
#define NBESIDE 20
#define CHUNKY_SIZE (64u << 10)

static bool ckpt_handed(struct store *st)
{
	return __atomic_load_n(&st->wal.ck.kv_handed, __ATOMIC_ACQUIRE);
}

static void hold_ckpt(struct store *st, bool on)
{
	__atomic_store_n(&st->test_ckpt_hold, on, __ATOMIC_RELEASE);
}

/* Logs something, then waits (up to 10 s) until the idle commit thread
 * has handed a checkpoint's kv transaction to the held checkpointer. */
static int start_held_ckpt(struct store *st)
{
	uint8_t buf[4096];

	hold_ckpt(st, true);
	pattern_fill(buf, sizeof(buf), 0, 99);
	int r = do_write(st, C1, "big", 0, buf, sizeof(buf), 0);

	for (int i = 0; !r && i < 10000 && !ckpt_handed(st); i++)
		usleep(1000);
	return r ? r : ckpt_handed(st) ? 0 : -ETIMEDOUT;
}

/* The set-up: a chunked object (its blocks are overwritten in the log)
 * and a small one with an attribute. */
static void beside_setup(struct store *st)
{
	uint8_t *buf = malloc(BIG_SIZE);

	cr_assert_not_null(buf);
	OK(do_coll_create(st, C1, 0));
	pattern_fill(buf, BIG_SIZE, 0, 1);
	OK(do_write(st, C1, "big", 0, buf, BIG_SIZE, 0));
	OK(do_write(st, C1, "s0", 0, "small", 5, 0));
	free(buf);
}

/* Log-only work while the checkpoint is held: overwrites of the chunked
 * object, attributes, omap keys and new small objects.  Each is its own
 * batch, applied read-only. */
static int beside_work(struct store *st)
{
	uint8_t buf[4096];
	char name[32], val[32];
	int r = 0;

	for (int i = 0; i < NBESIDE && !r; i++) {
		pattern_fill(buf, sizeof(buf), (uint64_t)i * 8192 + 4096, 100u + (uint32_t)i);
		r = do_write(st, C1, "big", (uint64_t)i * 8192 + 4096, buf, sizeof(buf), 0);
		snprintf(name, sizeof(name), "a%02d", i);
		snprintf(val, sizeof(val), "v%02d", i);
		if (!r)
			r = do_setattr(st, C1, "s0", name, val, strlen(val));
		if (!r)
			r = do_omap_set(st, C1, "s0", name, strlen(name), val, strlen(val));
		snprintf(name, sizeof(name), "new.%02d", i);
		pattern_fill(buf, 1000, 0, 200u + (uint32_t)i);
		if (!r)
			r = do_write(st, C1, name, 0, buf, 1000, 0);
	}
	return r;
}

static void beside_expect(struct store *st, bool chunky)
{
	uint8_t *want = malloc(BIG_SIZE);
	char name[32], val[32];
	void *v;
	size_t vl;

	cr_assert_not_null(want);
	pattern_fill(want, BIG_SIZE, 0, 1);
	pattern_fill(want, 4096, 0, 99);
	for (int i = 0; i < NBESIDE; i++)
		pattern_fill(want + i * 8192 + 4096, 4096, (uint64_t)i * 8192 + 4096,
			     100u + (uint32_t)i);
	expect_content(st, C1, "big", want, BIG_SIZE);
	for (int i = 0; i < NBESIDE; i++) {
		snprintf(name, sizeof(name), "a%02d", i);
		snprintf(val, sizeof(val), "v%02d", i);
		OK(store_getattr(st, C1, "s0", name, &v, &vl));
		cr_assert(vl == strlen(val) && !memcmp(v, val, vl), "attribute %s", name);
		free(v);
		OK(store_omap_get(st, C1, "s0", name, strlen(name), &v, &vl));
		cr_assert(vl == strlen(val) && !memcmp(v, val, vl), "omap key %s", name);
		free(v);
		snprintf(name, sizeof(name), "new.%02d", i);
		pattern_fill(want, 1000, 0, 200u + (uint32_t)i);
		expect_content(st, C1, name, want, 1000);
	}
	if (chunky) {
		pattern_fill(want, CHUNKY_SIZE, 0, 7);
		expect_content(st, C1, "chunky", want, CHUNKY_SIZE);
	} else {
		/* Queued but never acknowledged: all of it or nothing. */
		int64_t sz = obj_size(st, C1, "chunky");

		cr_assert(sz == -ENOENT || sz == CHUNKY_SIZE, "chunky: %s", errstr(sz));
		if (sz == CHUNKY_SIZE) {
			pattern_fill(want, CHUNKY_SIZE, 0, 7);
			expect_content(st, C1, "chunky", want, CHUNKY_SIZE);
		}
	}
	free(want);
	expect_fsck_clean(st);
}

/* A transaction that needs the kv (a new collection, with a new chunked
 * object), queued while the checkpoint is held, and a log-only one behind
 * it. */
static void queue_kv_txn(struct store *st, struct waiter *w)
{
	uint8_t *buf = malloc(CHUNKY_SIZE);
	struct store_txn *t;

	cr_assert_not_null(buf);
	pattern_fill(buf, CHUNKY_SIZE, 0, 7);
	waiter_add(w, 2);
	t = store_txn_new();
	OK(store_txn_coll_create(t, C9, 0));
	OK(store_txn_write(t, C1, "chunky", 0, buf, CHUNKY_SIZE, 0));
	OK(store_queue(st, t, waiter_done_cb, w));
	t = store_txn_new();
	OK(store_txn_setattr(t, C1, "s0", "after", "x", 1));
	OK(store_queue(st, t, waiter_done_cb, w));
	free(buf);
}

/* While the checkpointer holds a checkpoint's kv transaction (and LMDB's
 * write lock), batches that only log still commit and complete: they
 * apply read-only.  One that writes the kv waits for the checkpoint, then
 * applies again as a writer, and completions stay in queue order. */
Test(kvlog, batches_run_beside_a_checkpoint)
{
	struct waiter w;
	uint64_t ro, retries;

	OK(ts_mkfs_open(&ts));
	beside_setup(ts.st);
	OK(start_held_ckpt(ts.st));
	ro = ts.st->perf.ro_batches;
	OK(beside_work(ts.st));
	cr_assert_geq(ts.st->perf.ro_batches - ro, 4 * NBESIDE, "%llu read-only batches",
		      (unsigned long long)(ts.st->perf.ro_batches - ro));
	cr_assert(ckpt_handed(ts.st), "the held checkpoint finished");
	waiter_init(&w);
	retries = ts.st->perf.ro_retries;
	queue_kv_txn(ts.st, &w);
	usleep(200 * 1000);
	cr_assert(ckpt_handed(ts.st), "the held checkpoint finished");
	cr_assert_eq(__atomic_load_n(&w.pending, __ATOMIC_ACQUIRE), 2,
		     "a kv batch completed while the checkpoint held the kv");
	hold_ckpt(ts.st, false);
	cr_assert(waiter_wait(&w, 10), "the kv batch never completed");
	cr_assert_eq(w.failed, 0);
	waiter_destroy(&w);
	cr_assert_geq(ts.st->perf.ro_retries - retries, 1, "the kv batch did not wait");
	beside_expect(ts.st, true);
	OK(ts_reopen(&ts));
	beside_expect(ts.st, true);
}

static int beside_die_fn(struct store *st, void *arg)
{
	struct waiter *w = arg;
	int r = start_held_ckpt(st);

	if (!r)
		r = beside_work(st);
	if (!r)
		queue_kv_txn(st, w);
	return r;
}

/* A process that dies while the checkpoint is held: what the batches
 * beside it acknowledged is there after the replay. */
Test(kvlog, dying_beside_a_checkpoint_keeps_acknowledged_work)
{
	struct waiter w;

	OK(ts_mkfs_open(&ts));
	beside_setup(ts.st);
	ts_close(&ts);
	waiter_init(&w);
	OK(ts_run_and_die(&ts, beside_die_fn, &w));
	waiter_destroy(&w);
	OK(ts_open(&ts));
	beside_expect(ts.st, false);
}
