/*
 * test_store_enospc.c - a full store refuses writes and stays usable.
 *
 * Two ways to be full: the block's data area (writes get -ENOSPC) and the
 * kv (every transaction that is not a pure delete gets -ENOSPC, since the
 * kv keeps a reserve for deletes).  In both cases reads go on working,
 * deletes succeed and free room so that writes succeed again, the counters
 * stay consistent, and fsck is clean after a reopen.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

#define C1 1u
#define KiB 1024ull
#define MiB (1024ull * 1024ull)

static void expect_consistent(void)
{
	struct store_statfs f;
	uint64_t blocks = 0, stored = 0, objects = 0;
	struct store_stat s;
	char oid[32];

	OK(store_statfs(ts.st, &f));
	cr_assert_eq(f.total, f.used + f.free);
	/* Every object here is fill-N, kv-N or small-N. */
	for (int kind = 0; kind < 3; kind++)
		for (int i = 0; i < 4096; i++) {
			static const char *prefix[] = { "fill", "kv", "small" };

			snprintf(oid, sizeof(oid), "%s-%d", prefix[kind], i);
			if (store_stat(ts.st, C1, oid, &s) < 0)
				continue;
			objects++;
			blocks += s.blocks;
			stored += s.size;
		}
	cr_assert_eq(f.objects, objects, "statfs.objects %" PRIu64 ", found %" PRIu64,
		     f.objects, objects);
	cr_assert_eq(f.used, blocks * STORE_BLOCK_SIZE, "statfs.used %" PRIu64 ", blocks %" PRIu64,
		     f.used, blocks);
	cr_assert_eq(f.stored, stored);
	cr_assert_leq(f.kv_used, f.kv_max);
}

static void expect_fsck_clean(void)
{
	struct fsck_log log;

	fsck_run(ts.st, true, &log);
	if (log.problems)
		fsck_print(&log);
	cr_assert_eq(log.problems, 0, "fsck found %d problem(s)", log.problems);
	fsck_log_free(&log);
}

/* ===== the block fills up =============================================== */

static void init_small_block(void)
{
	ts_init();
	ts.opt.block_size = 64 * MiB;
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
}

TestSuite(block_full, .init = init_small_block, .fini = ts_fini, .timeout = 300);

/* Writes fill-N objects of `size` bytes (pattern tag N) until -ENOSPC;
 * returns how many were written, starting at *next. */
static int fill_block(int *next, size_t size)
{
	uint8_t *buf = malloc(size);
	int n = 0;

	cr_assert_not_null(buf);
	for (;;) {
		char oid[32];
		int r;

		snprintf(oid, sizeof(oid), "fill-%d", *next);
		pattern_fill(buf, size, 0, (uint32_t)*next);
		r = do_write(ts.st, C1, oid, 0, buf, size, 0);
		if (r == -ENOSPC)
			break;
		cr_assert_eq(r, 0, "writing %s: %s", oid, errstr(r));
		(*next)++;
		n++;
		cr_assert_lt(n, 100000, "the block never fills");
	}
	free(buf);
	return n;
}

static size_t fill_size(int i, int first_small)
{
	return i < first_small ? 1 * MiB : 64 * KiB;
}

/* Fills the block with 1 MiB objects, then 64 KiB ones, then 4 KiB ones. */
static int fill_all(int *first_small, int *first_tiny)
{
	int next = 0;

	cr_assert_gt(fill_block(&next, 1 * MiB), 40);
	*first_small = next;
	fill_block(&next, 64 * KiB);
	*first_tiny = next;
	fill_block(&next, 4 * KiB);
	return next;
}

static size_t size_of_fill(int i, int first_small, int first_tiny)
{
	return i >= first_tiny ? 4 * KiB : fill_size(i, first_small);
}

Test(block_full, write_gets_enospc_and_applies_nothing)
{
	int first_small, first_tiny, n = fill_all(&first_small, &first_tiny);
	uint8_t buf[4096];
	struct store_stat s;
	struct store_txn *t = store_txn_new();
	struct store_statfs f;

	OK(store_statfs(ts.st, &f));
	cr_assert_lt(f.free, 1 * MiB, "free %" PRIu64 " after filling", f.free);
	memset(buf, 7, sizeof(buf));
	/* A txn whose write does not fit applies none of its other ops. */
	OK(store_txn_setattr(t, C1, "fill-0", "a", "v", 1));
	OK(store_txn_touch(t, C1, "small-0"));
	OK(store_txn_write(t, C1, "fill-new", 0, buf, sizeof(buf), 0));
	OK(store_txn_write(t, C1, "fill-new", 8192, buf, sizeof(buf), 0));
	FAILS(store_apply(ts.st, t), -ENOSPC);
	FAILS(store_stat(ts.st, C1, "fill-new", &s), -ENOENT);
	FAILS(store_stat(ts.st, C1, "small-0", &s), -ENOENT);
	OK(store_stat(ts.st, C1, "fill-0", &s));
	cr_assert_eq(s.nattrs, 0);
	expect_consistent();
	(void)n;
}

Test(block_full, reads_work_when_full)
{
	int first_small, first_tiny, n = fill_all(&first_small, &first_tiny);
	uint8_t *want = malloc(1 * MiB);

	for (int i = 0; i < n; i++) {
		char oid[32];
		size_t size = size_of_fill(i, first_small, first_tiny);

		snprintf(oid, sizeof(oid), "fill-%d", i);
		pattern_fill(want, size, 0, (uint32_t)i);
		expect_content(ts.st, C1, oid, want, size);
	}
	free(want);
}

Test(block_full, kv_only_ops_work_when_block_full)
{
	int first_small, first_tiny;
	void *v;
	size_t len;

	fill_all(&first_small, &first_tiny);
	/* Attributes and omap live in the kv, which has room. */
	OK(do_setattr(ts.st, C1, "fill-0", "a", "v", 1));
	OK(do_omap_set(ts.st, C1, "fill-0", "k", 1, "v", 1));
	OK(store_getattr(ts.st, C1, "fill-0", "a", &v, &len));
	free(v);
}

Test(block_full, remove_frees_space_for_writes)
{
	int first_small, first_tiny, n = fill_all(&first_small, &first_tiny);
	struct store_statfs f0, f1;
	uint8_t *buf = malloc(2 * MiB);

	OK(store_statfs(ts.st, &f0));
	OK(do_remove(ts.st, C1, "fill-1"));
	OK(do_remove(ts.st, C1, "fill-2"));
	OK(do_remove(ts.st, C1, "fill-3"));
	OK(store_statfs(ts.st, &f1));
	cr_assert_eq(f1.free - f0.free, 3 * MiB, "removing 3 MiB freed %" PRIu64, f1.free - f0.free);
	cr_assert_eq(f0.used - f1.used, 3 * MiB);
	cr_assert_eq(f0.objects - f1.objects, 3);
	expect_consistent();

	/* The freed blocks are durable-free once the remove's commit is:
	 * the next write may use them. */
	pattern_fill(buf, 2 * MiB, 0, 0x77);
	OK(do_write(ts.st, C1, "fill-1", 0, buf, 2 * MiB, 0));
	expect_content(ts.st, C1, "fill-1", buf, 2 * MiB);
	OK(do_write(ts.st, C1, "fill-2", 0, buf, 512 * KiB, 0));
	expect_consistent();

	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "fill-1", buf, 2 * MiB);
	expect_consistent();
	expect_fsck_clean();
	(void)n;
	free(buf);
}

Test(block_full, truncate_and_zero_free_space)
{
	int first_small, first_tiny;
	uint8_t *buf = malloc(1 * MiB);
	struct store_statfs f0, f1;

	fill_all(&first_small, &first_tiny);
	OK(store_statfs(ts.st, &f0));
	/* Shrinking is a delete too: it must work on a full store. */
	OK(do_truncate(ts.st, C1, "fill-4", 4096));
	OK(do_zero(ts.st, C1, "fill-5", 0, 1 * MiB));
	OK(store_statfs(ts.st, &f1));
	cr_assert_geq(f1.free - f0.free, 2 * MiB - 4096);
	pattern_fill(buf, 1 * MiB, 0, 0x88);
	OK(do_write(ts.st, C1, "small-1", 0, buf, 1 * MiB, 0));
	expect_consistent();
	free(buf);
}

Test(block_full, full_again_after_refill)
{
	int first_small, first_tiny, next;

	next = fill_all(&first_small, &first_tiny);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 5; i++) {
			char oid[32];

			snprintf(oid, sizeof(oid), "fill-%d", round * 5 + i);
			OK(do_remove(ts.st, C1, oid));
		}
		cr_assert_geq(fill_block(&next, 256 * KiB), 19);
		expect_consistent();
	}
	OK(ts_reopen(&ts));
	expect_consistent();
	expect_fsck_clean();
}

struct slot {
	struct waiter *w;
	int r;
};

static void slot_done(void *arg, int r)
{
	struct slot *s = arg;

	s->r = r;
	waiter_done(s->w, r);
}

Test(block_full, enospc_txn_in_a_group_fails_alone)
{
	int first_small, first_tiny;
	struct waiter w;
	struct slot slots[3];
	struct store_txn *t[3];
	uint8_t *big = malloc(4 * MiB);
	struct store_stat s;

	fill_all(&first_small, &first_tiny);
	OK(do_remove(ts.st, C1, "fill-0"));	/* 1 MiB free */
	waiter_init(&w);
	memset(big, 9, 4 * MiB);
	for (int i = 0; i < 3; i++) {
		slots[i] = (struct slot){ .w = &w, .r = 1 };
		t[i] = store_txn_new();
	}
	OK(store_txn_write(t[0], C1, "small-0", 0, big, 256 * KiB, 0));
	OK(store_txn_write(t[1], C1, "small-1", 0, big, 4 * MiB, 0));	/* does not fit */
	OK(store_txn_write(t[2], C1, "small-2", 0, big, 256 * KiB, 0));
	waiter_add(&w, 3);
	for (int i = 0; i < 3; i++)
		OK(store_queue(ts.st, t[i], slot_done, &slots[i]));
	cr_assert(waiter_wait(&w, 60));
	cr_assert_eq(slots[0].r, 0, "%s", errstr(slots[0].r));
	cr_assert_eq(slots[1].r, -ENOSPC, "%s", errstr(slots[1].r));
	cr_assert_eq(slots[2].r, 0, "%s", errstr(slots[2].r));
	expect_content(ts.st, C1, "small-0", big, 256 * KiB);
	expect_content(ts.st, C1, "small-2", big, 256 * KiB);
	FAILS(store_stat(ts.st, C1, "small-1", &s), -ENOENT);
	expect_consistent();
	waiter_destroy(&w);
	free(big);
}

/* ===== the kv fills up ================================================== */

static void init_small_kv(void)
{
	ts_init();
	ts.opt.block_size = 64 * MiB;
	ts.opt.kv_max = 8 * MiB;
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
}

TestSuite(kv_full, .init = init_small_kv, .fini = ts_fini, .timeout = 300);

struct kvfill {
	int objects;		/* kv-0 .. kv-(objects-1) */
	long entries;
};

/* Fills the kv with omap entries on kv-N objects: batches of `per_txn`
 * values of vlen bytes until -ENOSPC, then ever smaller ones, until not
 * even one small entry fits. */
static void fill_kv(struct kvfill *kf)
{
	static const struct { int per_txn; size_t vlen; } steps[] = {
		{ 64, 1000 }, { 8, 1000 }, { 1, 1000 }, { 1, 100 }, { 1, 10 },
	};
	uint8_t val[1000];
	int r;

	memset(kf, 0, sizeof(*kf));
	for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		do {
			struct store_txn *t = store_txn_new();
			/* A new object every 500 entries, so that removing a few
			 * objects frees a good part of the kv. */
			bool new_obj = kf->entries / 500 >= kf->objects;
			char oid[32];

			snprintf(oid, sizeof(oid), "kv-%d", new_obj ? kf->objects : kf->objects - 1);
			if (new_obj)
				OK(store_txn_touch(t, C1, oid));
			for (int i = 0; i < steps[s].per_txn; i++) {
				char key[32];

				snprintf(key, sizeof(key), "key-%08ld", kf->entries + i);
				pattern_fill(val, steps[s].vlen, (uint64_t)(kf->entries + i) * 1000, 1);
				OK(store_txn_omap_set(t, C1, oid, key, strlen(key), val,
						      steps[s].vlen));
			}
			r = store_apply(ts.st, t);
			cr_assert(r == 0 || r == -ENOSPC, "filling the kv: %s", errstr(r));
			if (r == 0) {
				kf->entries += steps[s].per_txn;
				kf->objects += new_obj;
			}
			cr_assert_lt(kf->entries, 10000000, "the kv never fills");
		} while (r == 0);
	}
	cr_assert_gt(kf->entries, 1000, "the kv filled after %ld entries", kf->entries);
	fprintf(stderr, "kv full after %ld omap entries on %d objects\n", kf->entries,
		kf->objects);
}

static int count_kv(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	++*(long *)arg;
	return 0;
}

Test(kv_full, non_delete_txns_get_enospc)
{
	struct kvfill kf;
	struct store_stat s;
	uint8_t data[8192];

	fill_kv(&kf);
	memset(data, 1, sizeof(data));
	FAILS(do_setattr(ts.st, C1, "kv-0", "a", "v", 1), -ENOSPC);
	FAILS(do_touch(ts.st, C1, "small-0"), -ENOSPC);
	FAILS(do_write(ts.st, C1, "small-1", 0, data, 10, 0), -ENOSPC);
	FAILS(do_write(ts.st, C1, "small-2", 0, data, sizeof(data), 0), -ENOSPC);
	FAILS(do_coll_create(ts.st, 2, 0), -ENOSPC);
	FAILS(store_stat(ts.st, C1, "small-0", &s), -ENOENT);
	FAILS(store_stat(ts.st, C1, "small-2", &s), -ENOENT);
	cr_assert_eq(store_coll_exists(ts.st, 2), 0);
	expect_consistent();
}

Test(kv_full, reads_work_when_kv_full)
{
	struct kvfill kf;
	long n = 0;
	void *v;
	size_t len;
	uint8_t want[1000];

	fill_kv(&kf);
	OK(store_omap_get(ts.st, C1, "kv-0", "key-00000007", 12, &v, &len));
	pattern_fill(want, 1000, 7 * 1000, 1);
	cr_assert_eq(len, 1000);
	cr_assert_arr_eq(v, want, 1000);
	free(v);
	for (int i = 0; i < kf.objects; i++) {
		char oid[32];
		int r;

		snprintf(oid, sizeof(oid), "kv-%d", i);
		r = store_omap_list(ts.st, C1, oid, NULL, 0, 0, count_kv, &n);
		cr_assert_geq(r, 0, "%s", errstr(r));
	}
	cr_assert_eq(n, kf.entries);
}

Test(kv_full, deletes_work_and_make_room)
{
	struct kvfill kf;
	struct store_statfs f0, f1;
	uint8_t val[1000];

	fill_kv(&kf);
	cr_assert_geq(kf.objects, 3);
	OK(store_statfs(ts.st, &f0));
	/* Every kind of delete works on a full kv. */
	OK(do_omap_rm(ts.st, C1, "kv-2", "key-00001000", 12));
	OK(do_omap_clear(ts.st, C1, "kv-1"));
	OK(do_remove(ts.st, C1, "kv-0"));
	{
		struct store_txn *t = store_txn_new();

		OK(store_txn_remove(t, C1, "kv-1"));
		OK(store_txn_remove(t, C1, "kv-2"));
		OK(store_apply(ts.st, t));
	}
	OK(store_statfs(ts.st, &f1));
	cr_assert_lt(f1.kv_used, f0.kv_used, "kv_used %" PRIu64 " -> %" PRIu64 " after deletes",
		     f0.kv_used, f1.kv_used);
	cr_assert_eq(f0.objects - f1.objects, 3);

	/* And then writes work again. */
	OK(do_setattr(ts.st, C1, "kv-3", "a", "v", 1));
	OK(do_touch(ts.st, C1, "small-0"));
	memset(val, 3, sizeof(val));
	for (int i = 0; i < 100; i++) {
		char key[16];

		snprintf(key, sizeof(key), "new-%d", i);
		OK(do_omap_set(ts.st, C1, "small-0", key, strlen(key), val, sizeof(val)));
	}
	OK(do_write(ts.st, C1, "small-1", 0, val, sizeof(val), 0));
	expect_consistent();
	OK(ts_reopen(&ts));
	expect_consistent();
	expect_fsck_clean();
}

Test(kv_full, full_kv_survives_reopen)
{
	struct kvfill kf;

	fill_kv(&kf);
	OK(ts_reopen(&ts));
	FAILS(do_touch(ts.st, C1, "small-0"), -ENOSPC);
	OK(do_remove(ts.st, C1, "kv-0"));
	OK(do_touch(ts.st, C1, "small-0"));
	expect_consistent();
	expect_fsck_clean();
}

/* ===== small objects past half the kv =================================== */

static void init_small_objects(void)
{
	ts_init();
	ts.opt.block_size = 128 * MiB;
	ts.opt.kv_max = 16 * MiB;
	ts.opt.inline_max = 4096;	/* 4 KiB objects inline (osd_store_inline_max=4K) */
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, C1, 0));
}

TestSuite(kv_half, .init = init_small_objects, .fini = ts_fini, .timeout = 300);

static int stat_of_inline(const char *oid)
{
	struct store_stat s;

	OK(store_stat(ts.st, C1, oid, &s));
	return s.is_inline;
}

/* An inline 4 KiB object takes two 4 KiB pages of LMDB: 16 MiB of kv
 * would be full after about 2,000 of them, with the block nearly empty.
 * Once half the kv is in use, new objects keep their data in blocks
 * (a few hundred bytes of kv each), so 4,000 of them (16 MiB, an eighth
 * of the block) all go in. */
Test(kv_half, small_objects_leave_the_kv_once_half_of_it_is_used)
{
	enum { N = 4000, PER_TXN = 50 };
	uint8_t *buf = malloc(4096);
	struct store_statfs f;
	int inl = 0;

	cr_assert(buf);
	for (int i = 0; i < N; i += PER_TXN) {
		struct store_txn *t = store_txn_new();
		char oid[32];

		cr_assert(t);
		for (int j = i; j < i + PER_TXN; j++) {
			snprintf(oid, sizeof(oid), "small-%d", j);
			pattern_fill(buf, 4096, 0, (uint32_t)j);
			OK(store_txn_write(t, C1, oid, 0, buf, 4096, 0));
		}
		int r = store_apply(ts.st, t);

		cr_assert_eq(r, 0, "object %d: %s", i, errstr(r));
	}
	for (int i = 0; i < N; i++) {
		char oid[32];

		snprintf(oid, sizeof(oid), "small-%d", i);
		inl += stat_of_inline(oid);
	}
	OK(store_statfs(ts.st, &f));
	fprintf(stderr, "%d of %d objects inline; kv %" PRIu64 " of %" PRIu64 " KiB used, "
		"%" PRIu64 " KiB of blocks\n", inl, N, (uint64_t)(f.kv_used / KiB),
		(uint64_t)(f.kv_max / KiB), (uint64_t)(f.used / KiB));
	cr_assert_gt(inl, 100, "the first objects should be inline");
	cr_assert_lt(inl, N / 2, "%d objects inline: the kv kept taking their data", inl);
	cr_assert_geq(f.used, (uint64_t)(N - inl) * 4096);
	cr_assert_lt(f.kv_used, f.kv_max * 3 / 4, "kv %" PRIu64 " of %" PRIu64, f.kv_used,
		     f.kv_max);
	for (int i = 0; i < N; i += 397) {
		char oid[32];

		snprintf(oid, sizeof(oid), "small-%d", i);
		pattern_fill(buf, 4096, 0, (uint32_t)i);
		expect_content(ts.st, C1, oid, buf, 4096);
	}
	expect_consistent();
	OK(ts_reopen(&ts));
	snprintf((char *)buf, 32, "small-%d", N - 1);
	cr_assert(!stat_of_inline((const char *)buf));
	expect_fsck_clean();
	free(buf);
}
