/*
 * test_store_ops.c - the store engine's operations, one behaviour per test.
 *
 * Checks the contract of osd/store/store.h op by op: store lifecycle
 * (mkfs, open, reopen, refusals), collections, object data (offsets,
 * holes, inline data, truncate, zero), attributes, omap, listing, stat and
 * statfs counters, transaction atomicity, concurrent queueing, async
 * reads, compression, journaled small writes, and reads racing writes.
 * Every error the header promises has a test that provokes it.  The
 * randomised cross-check against a model is in test_store_model.c.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crc32c.h"
#include "helpers.h"
#include "store-int.h"	/* the superblock, to write an older format */

#define C1 1u
#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static void coll1(void)
{
	OK(do_coll_create(ts.st, C1, 0));
}

/* Writes `len` pattern bytes for `tag` at off, into both the store and
 * the mirror buffer model[] (which must be big enough). */
static void write_mirror(const char *oid, uint8_t *model, uint64_t off, size_t len,
			 uint32_t tag)
{
	uint8_t *buf = malloc(len);

	cr_assert_not_null(buf);
	pattern_fill(buf, len, off, tag);
	OK(do_write(ts.st, C1, oid, off, buf, len, 0));
	memcpy(model + off, buf, len);
	free(buf);
}

static struct store_stat stat_of(uint64_t coll, const char *oid)
{
	struct store_stat s;

	OK(store_stat(ts.st, coll, oid, &s));
	return s;
}

static struct store_statfs statfs_of(void)
{
	struct store_statfs f;

	OK(store_statfs(ts.st, &f));
	cr_assert_eq(f.total, f.used + f.free, "statfs: total %" PRIu64 " != used %" PRIu64
		     " + free %" PRIu64, f.total, f.used, f.free);
	return f;
}

static void expect_fsck_clean(bool deep)
{
	struct fsck_log log;

	fsck_run(ts.st, deep, &log);
	if (log.problems != 0)
		fsck_print(&log);
	cr_assert_eq(log.problems, 0, "fsck(deep=%d) found %d problem(s)%s%s", deep,
		     log.problems, log.n ? ", first: " : "", log.n ? log.msgs[0] : "");
	fsck_log_free(&log);
}

/* ===== store lifecycle ================================================== */

TestSuite(lifecycle, .init = ts_init, .fini = ts_fini);

Test(lifecycle, mkfs_open_close)
{
	struct store_statfs f;

	OK(ts_mkfs(&ts));
	OK(ts_open(&ts));
	cr_assert_not_null(ts.st);
	f = statfs_of();
	cr_assert_eq(f.objects, 0);
	cr_assert_eq(f.stored, 0);
	cr_assert_gt(f.total, 64 * MiB, "data area of a 128 MiB block: %" PRIu64, f.total);
	cr_assert_leq(f.total, TS_BLOCK_SIZE_DEFAULT);
	expect_fsck_clean(true);
	ts_close(&ts);
}

Test(lifecycle, close_null_is_fine)
{
	store_close(NULL);
}

Test(lifecycle, reopen_keeps_data)
{
	uint8_t data[10000], val[300];
	void *got;
	size_t len;

	pattern_fill(data, sizeof(data), 0, 7);
	pattern_fill(val, sizeof(val), 0, 8);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 3, STORE_COLL_COMPRESS));
	OK(do_write(ts.st, 3, "big", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, 3, "small", 0, data, 100, 0));
	OK(do_setattr(ts.st, 3, "big", "user.a", val, sizeof(val)));
	OK(do_omap_set(ts.st, 3, "big", "k", 1, val, 20));

	for (int i = 0; i < 2; i++) {
		OK(ts_reopen(&ts));
		cr_assert_eq(store_coll_exists(ts.st, 3), 1);
		expect_content(ts.st, 3, "big", data, sizeof(data));
		expect_content(ts.st, 3, "small", data, 100);
		OK(store_getattr(ts.st, 3, "big", "user.a", &got, &len));
		cr_assert_eq(len, sizeof(val));
		cr_assert_arr_eq(got, val, len);
		free(got);
		OK(store_omap_get(ts.st, 3, "big", "k", 1, &got, &len));
		cr_assert_eq(len, 20);
		cr_assert_arr_eq(got, val, len);
		free(got);
		cr_assert_eq(statfs_of().objects, 2);
	}
	expect_fsck_clean(true);
}

/* Rewrites the superblock of the closed store as format fmt (its
 * geometry as the first call read it: a refused format does not read). */
static void superblock_as(uint32_t fmt)
{
	static uint8_t uuid[16];
	static uint64_t nb, ds;
	uint32_t was;
	int fd = open(ts.block_path, O_RDWR);

	cr_assert_geq(fd, 0);
	if (!nb)
		OK(sb_read(fd, uuid, &nb, &ds, &was));
	OK(sb_write(fd, uuid, nb, ds, fmt));
	close(fd);
}

static uint32_t superblock_format(void)
{
	uint8_t uuid[16];
	uint64_t nb, ds;
	uint32_t fmt = 0;
	int fd = open(ts.block_path, O_RDONLY);

	cr_assert_geq(fd, 0);
	OK(sb_read(fd, uuid, &nb, &ds, &fmt));
	close(fd);
	return fmt;
}

/* A store of format 2 (no chunk records in its log) opens; a read-only
 * open leaves it so, a read-write one moves it to format 3 with its data;
 * format 1 and formats from the future are refused. */
Test(lifecycle, format_2_is_moved_to_3)
{
	uint8_t data[20000];

	pattern_fill(data, sizeof(data), 0, 11);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 3, 0));
	OK(do_write(ts.st, 3, "o", 0, data, sizeof(data), 0));
	ts_close(&ts);
	cr_assert_eq(superblock_format(), STORE_FORMAT_VERSION);
	superblock_as(2);
	ts.opt.readonly = true;
	OK(ts_open(&ts));
	expect_content(ts.st, 3, "o", data, sizeof(data));
	ts_close(&ts);
	cr_assert_eq(superblock_format(), 2, "a read-only open wrote the superblock");
	ts.opt.readonly = false;
	OK(ts_open(&ts));
	cr_assert_eq(superblock_format(), 3, "a read-write open left format 2");
	expect_content(ts.st, 3, "o", data, sizeof(data));
	OK(do_write(ts.st, 3, "p", 0, data, 5000, 0));
	OK(ts_reopen(&ts));
	expect_content(ts.st, 3, "p", data, 5000);
	expect_fsck_clean(true);
	ts_close(&ts);
	superblock_as(1);
	FAILS(ts_open(&ts), -EUCLEAN);
	superblock_as(STORE_FORMAT_VERSION + 1);
	FAILS(ts_open(&ts), -EUCLEAN);
	superblock_as(STORE_FORMAT_VERSION);
	OK(ts_open(&ts));
	expect_content(ts.st, 3, "o", data, sizeof(data));
}

Test(lifecycle, mkfs_twice_eexist)
{
	OK(ts_mkfs(&ts));
	FAILS(ts_mkfs(&ts), -EEXIST);
	/* The refused mkfs did not clobber the store. */
	OK(ts_open(&ts));
	expect_fsck_clean(false);
}

Test(lifecycle, mkfs_over_existing_block_eexist)
{
	struct ts other;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "o", 0, "hello", 5, 0));
	ts_close(&ts);

	ts_setup(&other, ts.dir, "other");
	other.opt.block_path = ts.block_path;	/* same block, fresh kv */
	FAILS(ts_mkfs(&other), -EEXIST);

	OK(ts_open(&ts));
	expect_content(ts.st, 1, "o", "hello", 5);
}

Test(lifecycle, mkfs_over_existing_kv_eexist)
{
	struct ts other;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "o", 0, "hello", 5, 0));
	ts_close(&ts);

	ts_setup(&other, ts.dir, "other");
	other.opt.kv_path = ts.kv_path;	/* fresh block, same kv */
	FAILS(ts_mkfs(&other), -EEXIST);

	OK(ts_open(&ts));
	expect_content(ts.st, 1, "o", "hello", 5);
}

Test(lifecycle, mkfs_without_paths_einval)
{
	struct store_options o = ts.opt;

	o.block_path = NULL;
	FAILS(store_mkfs(&o), -EINVAL);
	o = ts.opt;
	o.kv_path = NULL;
	FAILS(store_mkfs(&o), -EINVAL);
}

Test(lifecycle, too_many_flushers_einval)
{
	struct store_options o = ts.opt;
	struct store *st = NULL;

	OK(store_mkfs(&o));
	o.flushers = STORE_FLUSHERS_MAX + 1;
	FAILS(store_open(&o, &st), -EINVAL);
	cr_assert_null(st);
	o.flushers = STORE_FLUSHERS_MAX;
	OK(store_open(&o, &st));
	store_close(st);
}

Test(lifecycle, open_without_paths_einval)
{
	struct store_options o;
	struct store *st = NULL;

	OK(ts_mkfs(&ts));
	o = ts.opt;
	o.block_path = NULL;
	FAILS(store_open(&o, &st), -EINVAL);
	o = ts.opt;
	o.kv_path = NULL;
	FAILS(store_open(&o, &st), -EINVAL);
}

Test(lifecycle, open_missing_store_fails)
{
	struct store *st = NULL;
	int r = store_open(&ts.opt, &st);

	cr_assert_lt(r, 0, "opening a store that was never made: %s", errstr(r));
}

Test(lifecycle, open_mismatched_block_and_kv_einval)
{
	struct ts b;
	struct store *st = NULL;
	struct store_options o;

	ts_setup(&b, ts.dir, "b");
	OK(ts_mkfs(&ts));
	OK(ts_mkfs(&b));

	o = ts.opt;
	o.kv_path = b.kv_path;
	FAILS(store_open(&o, &st), -EINVAL);
	o = b.opt;
	o.kv_path = ts.kv_path;
	FAILS(store_open(&o, &st), -EINVAL);

	/* Both stores are still whole. */
	OK(ts_open(&b));
	ts_close(&b);
	OK(ts_open(&ts));
}

Test(lifecycle, damaged_superblock_euclean)
{
	uint8_t junk[64];

	OK(ts_mkfs(&ts));
	memset(junk, 0xa5, sizeof(junk));
	{
		int fd = open(ts.block_path, O_WRONLY);

		cr_assert_geq(fd, 0);
		cr_assert_eq(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
		cr_assert_eq(fsync(fd), 0);
		close(fd);
	}
	FAILS(ts_open(&ts), -EUCLEAN);
}

Test(lifecycle, flipped_superblock_byte_euclean)
{
	OK(ts_mkfs(&ts));
	/* One bit, past any magic number: the superblock's checksum must see it. */
	OK(file_flip_byte(ts.block_path, 40, 0x10));
	FAILS(ts_open(&ts), -EUCLEAN);
}

Test(lifecycle, block_shorter_than_superblock_says_euclean)
{
	OK(ts_mkfs(&ts));
	cr_assert_eq(truncate(ts.block_path, (off_t)(TS_BLOCK_SIZE_DEFAULT / 2)), 0);
	FAILS(ts_open(&ts), -EUCLEAN);
}

Test(lifecycle, kv_max_chosen_at_mkfs_is_kept)
{
	ts.opt.kv_max = 96 * MiB;
	OK(ts_mkfs_open(&ts));
	cr_assert_eq(statfs_of().kv_max, 96 * MiB);
	ts_close(&ts);
	ts.opt.kv_max = 0;
	OK(ts_open(&ts));
	cr_assert_eq(statfs_of().kv_max, 96 * MiB);
}

Test(lifecycle, inline_max_changed_between_opens)
{
	uint8_t model[3001];

	pattern_fill(model, sizeof(model), 0, 1);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "inl", 0, model, 2000, 0));	/* inline under 2048 */
	OK(do_write(ts.st, 1, "chk", 0, model, 3000, 0));	/* chunked */
	ts_close(&ts);

	ts.opt.inline_max = 100;
	OK(ts_open(&ts));
	expect_content(ts.st, 1, "inl", model, 2000);
	OK(do_write(ts.st, 1, "inl", 2000, model + 2000, 1, 0));
	expect_content(ts.st, 1, "inl", model, 2001);
	ts_close(&ts);

	ts.opt.inline_max = 4000;
	OK(ts_open(&ts));
	expect_content(ts.st, 1, "chk", model, 3000);
	OK(do_write(ts.st, 1, "chk", 3000, model + 3000, 1, 0));
	expect_content(ts.st, 1, "chk", model, 3001);
	OK(do_truncate(ts.st, 1, "chk", 10));
	OK(do_truncate(ts.st, 1, "chk", 20));
	{
		uint8_t want[20] = {0};

		memcpy(want, model, 10);
		expect_content(ts.st, 1, "chk", want, 20);
	}
	expect_fsck_clean(true);
}

Test(lifecycle, mkfs_keeps_existing_file_size)
{
	int fd = open(ts.block_path, O_CREAT | O_RDWR, 0644);
	struct store_statfs f;

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)(96 * MiB)), 0);
	close(fd);
	ts.opt.block_size = 0;
	OK(ts_mkfs_open(&ts));
	f = statfs_of();
	cr_assert_leq(f.total, 96 * MiB);
	cr_assert_gt(f.total, 48 * MiB, "data area %" PRIu64, f.total);
}

Test(lifecycle, uuid_is_stable_and_unique)
{
	struct ts b;
	char u1[37], u2[37], u3[37];

	OK(ts_mkfs_open(&ts));
	store_uuid(ts.st, u1);
	cr_assert_eq(strlen(u1), 36);
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			cr_assert_eq(u1[i], '-', "uuid '%s'", u1);
		else
			cr_assert(strchr("0123456789abcdefABCDEF", u1[i]) && u1[i], "uuid '%s'", u1);
	}
	OK(ts_reopen(&ts));
	store_uuid(ts.st, u2);
	cr_assert_str_eq(u1, u2);

	ts_setup(&b, ts.dir, "b");
	OK(ts_mkfs_open(&b));
	store_uuid(b.st, u3);
	ts_close(&b);
	cr_assert_str_neq(u1, u3);
}

Test(lifecycle, readonly_refuses_queue_erofs)
{
	struct store_txn *t;

	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "o", 0, "data", 4, 0));
	ts_close(&ts);

	ts.opt.readonly = true;
	OK(ts_open(&ts));
	t = store_txn_new();
	OK(store_txn_write(t, 1, "o", 0, "DATA", 4, 0));
	FAILS(store_queue(ts.st, t, NULL, NULL), -EROFS);	/* t is the store's now */
	t = store_txn_new();
	OK(store_txn_touch(t, 1, "p"));
	FAILS(store_apply(ts.st, t), -EROFS);
	/* Reads work and nothing changed. */
	expect_content(ts.st, 1, "o", "data", 4);
	FAILS(store_stat(ts.st, 1, "p", &(struct store_stat){0}), -ENOENT);
	expect_fsck_clean(true);
}

Test(lifecycle, close_waits_for_queued_txns)
{
	struct waiter w;
	char oid[32];

	waiter_init(&w);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	for (int i = 0; i < 50; i++) {
		struct store_txn *t = store_txn_new();

		snprintf(oid, sizeof(oid), "o%02d", i);
		OK(store_txn_write(t, 1, oid, 0, oid, strlen(oid), 0));
		waiter_add(&w, 1);
		OK(store_queue(ts.st, t, waiter_done_cb, &w));
	}
	ts_close(&ts);
	cr_assert_eq(w.pending, 0, "%ld completions had not fired when store_close returned",
		     w.pending);
	cr_assert_eq(w.failed, 0);
	OK(ts_open(&ts));
	for (int i = 0; i < 50; i++) {
		snprintf(oid, sizeof(oid), "o%02d", i);
		expect_content(ts.st, 1, oid, oid, strlen(oid));
	}
	waiter_destroy(&w);
}

/* Small writes into "o" (model: its new content), then an object "p". */
static int small_writes_work(struct store *st, void *arg)
{
	const uint8_t *model = arg;
	int r = 0;

	for (int i = 0; i < 50 && !r; i++)
		r = do_write(st, 1, "o", (uint64_t)i * 5000, model + i * 5000, 100 + (size_t)i, 0);
	return r ? r : do_write(st, 1, "p", 0, "after", 5, 0);
}

/* A store left without store_close (the OSD died after the completions)
 * has every acknowledged write when opened again, journaled small writes
 * included. */
Test(lifecycle, acknowledged_writes_survive_exit_without_close)
{
	static uint8_t model[256 * 1024];

	pattern_fill(model, sizeof(model), 0, 1);
	OK(ts_mkfs_open(&ts));
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "o", 0, model, sizeof(model), 0));
	ts_close(&ts);
	for (int i = 0; i < 50; i++)
		pattern_fill(model + i * 5000, 100 + (size_t)i, (uint64_t)i * 5000, 2);
	OK(ts_run_and_die(&ts, small_writes_work, model));
	OK(ts_open(&ts));
	expect_content(ts.st, 1, "o", model, sizeof(model));
	expect_content(ts.st, 1, "p", "after", 5);
	expect_fsck_clean(true);
	OK(ts_reopen(&ts));
	expect_content(ts.st, 1, "o", model, sizeof(model));
}

/* ===== collections ====================================================== */

TestSuite(coll, .init = ts_init_open, .fini = ts_fini);

struct coll_seen {
	size_t n;
	uint64_t id[16];
	uint32_t flags[16];
};

static int coll_cb(void *arg, uint64_t coll, uint32_t flags)
{
	struct coll_seen *s = arg;

	if (s->n < 16) {
		s->id[s->n] = coll;
		s->flags[s->n] = flags;
	}
	s->n++;
	return 0;
}

Test(coll, create_list_exists)
{
	struct coll_seen s = {0};

	OK(do_coll_create(ts.st, 5, 0));
	OK(do_coll_create(ts.st, UINT64_MAX, STORE_COLL_COMPRESS));
	OK(do_coll_create(ts.st, 0, 0));
	OK(do_coll_create(ts.st, 1, STORE_COLL_COMPRESS));
	OK(store_colls(ts.st, coll_cb, &s));
	cr_assert_eq(s.n, 4);
	cr_assert_eq(s.id[0], 0);
	cr_assert_eq(s.id[1], 1);
	cr_assert_eq(s.id[2], 5);
	cr_assert_eq(s.id[3], UINT64_MAX);
	cr_assert_eq(s.flags[0], 0);
	cr_assert_eq(s.flags[1], STORE_COLL_COMPRESS);
	cr_assert_eq(s.flags[2], 0);
	cr_assert_eq(s.flags[3], STORE_COLL_COMPRESS);
	cr_assert_eq(store_coll_exists(ts.st, 5), 1);
	cr_assert_eq(store_coll_exists(ts.st, UINT64_MAX), 1);
	cr_assert_eq(store_coll_exists(ts.st, 2), 0);
}

Test(coll, no_collections_at_first)
{
	struct coll_seen s = {0};

	OK(store_colls(ts.st, coll_cb, &s));
	cr_assert_eq(s.n, 0);
	cr_assert_eq(store_coll_exists(ts.st, 0), 0);
}

static int stop_at_second(void *arg, uint64_t coll, uint32_t flags)
{
	int *n = arg;

	(void)coll;
	(void)flags;
	return ++*n == 2 ? 42 : 0;
}

Test(coll, colls_walk_stops_with_fn_value)
{
	int n = 0;

	for (uint64_t c = 10; c < 15; c++)
		OK(do_coll_create(ts.st, c, 0));
	cr_assert_eq(store_colls(ts.st, stop_at_second, &n), 42);
	cr_assert_eq(n, 2);
}

Test(coll, create_twice_eexist)
{
	OK(do_coll_create(ts.st, 7, 0));
	FAILS(do_coll_create(ts.st, 7, 0), -EEXIST);
	FAILS(do_coll_create(ts.st, 7, STORE_COLL_COMPRESS), -EEXIST);
}

Test(coll, create_twice_in_one_txn_eexist_applies_nothing)
{
	struct store_txn *t = store_txn_new();

	OK(store_txn_coll_create(t, 8, 0));
	OK(store_txn_touch(t, 8, "o"));
	OK(store_txn_coll_create(t, 8, 0));
	FAILS(store_apply(ts.st, t), -EEXIST);
	cr_assert_eq(store_coll_exists(ts.st, 8), 0);
}

Test(coll, remove_empty)
{
	struct coll_seen s = {0};

	OK(do_coll_create(ts.st, 9, 0));
	OK(do_coll_create(ts.st, 10, 0));
	OK(do_coll_remove(ts.st, 9));
	cr_assert_eq(store_coll_exists(ts.st, 9), 0);
	OK(store_colls(ts.st, coll_cb, &s));
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.id[0], 10);
	/* The id can be used again. */
	OK(do_coll_create(ts.st, 9, 0));
}

Test(coll, remove_nonempty_enotempty)
{
	OK(do_coll_create(ts.st, 9, 0));
	OK(do_touch(ts.st, 9, "o"));
	FAILS(do_coll_remove(ts.st, 9), -ENOTEMPTY);
	cr_assert_eq(store_coll_exists(ts.st, 9), 1);
	OK(do_remove(ts.st, 9, "o"));
	OK(do_coll_remove(ts.st, 9));
}

Test(coll, remove_after_emptying_in_same_txn)
{
	struct store_txn *t = store_txn_new();

	OK(do_coll_create(ts.st, 9, 0));
	OK(do_write(ts.st, 9, "o", 0, "x", 1, 0));
	OK(store_txn_remove(t, 9, "o"));
	OK(store_txn_coll_remove(t, 9));
	OK(store_apply(ts.st, t));
	cr_assert_eq(store_coll_exists(ts.st, 9), 0);
	cr_assert_eq(statfs_of().objects, 0);
}

Test(coll, remove_missing_enoent)
{
	FAILS(do_coll_remove(ts.st, 4), -ENOENT);
}

Test(coll, object_ops_on_missing_coll_enoent)
{
	struct store_stat s;
	char buf[8];
	void *v;
	size_t vl;

	OK(do_coll_create(ts.st, 1, 0));
	OK(do_touch(ts.st, 1, "o"));
	FAILS(do_write(ts.st, 2, "o", 0, "x", 1, 0), -ENOENT);
	FAILS(do_touch(ts.st, 2, "o"), -ENOENT);
	FAILS(do_create(ts.st, 2, "o"), -ENOENT);
	FAILS(do_remove(ts.st, 2, "o"), -ENOENT);
	FAILS(do_setattr(ts.st, 2, "o", "a", "v", 1), -ENOENT);
	FAILS(do_omap_set(ts.st, 2, "o", "k", 1, "v", 1), -ENOENT);
	FAILS(do_truncate(ts.st, 2, "o", 10), -ENOENT);
	FAILS(do_zero(ts.st, 2, "o", 0, 10), -ENOENT);
	FAILS(store_stat(ts.st, 2, "o", &s), -ENOENT);
	FAILS(store_read(ts.st, 2, "o", 0, sizeof(buf), buf), -ENOENT);
	FAILS(store_getattr(ts.st, 2, "o", "a", &v, &vl), -ENOENT);
	FAILS(store_omap_get(ts.st, 2, "o", "k", 1, &v, &vl), -ENOENT);
	cr_assert_eq(store_coll_exists(ts.st, 2), 0);
}

static int count_names(void *arg, const char *oid)
{
	(void)oid;
	++*(int *)arg;
	return 0;
}

Test(coll, list_missing_coll_enoent)
{
	int n = 0;

	FAILS(store_list(ts.st, 77, NULL, 0, count_names, &n), -ENOENT);
	cr_assert_eq(n, 0);
}

Test(coll, same_name_in_two_colls_is_two_objects)
{
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_coll_create(ts.st, 2, 0));
	OK(do_write(ts.st, 1, "o", 0, "one", 3, 0));
	OK(do_write(ts.st, 2, "o", 0, "two!", 4, 0));
	expect_content(ts.st, 1, "o", "one", 3);
	expect_content(ts.st, 2, "o", "two!", 4);
	OK(do_remove(ts.st, 1, "o"));
	expect_content(ts.st, 2, "o", "two!", 4);
}

Test(coll, flags_persist_across_reopen)
{
	struct coll_seen s = {0};

	OK(do_coll_create(ts.st, 3, STORE_COLL_COMPRESS));
	OK(do_coll_create(ts.st, 4, 0));
	OK(ts_reopen(&ts));
	OK(store_colls(ts.st, coll_cb, &s));
	cr_assert_eq(s.n, 2);
	cr_assert_eq(s.flags[0], STORE_COLL_COMPRESS);
	cr_assert_eq(s.flags[1], 0);
}

/* ===== object data ====================================================== */

TestSuite(obj, .init = ts_init_open, .fini = ts_fini);

Test(obj, write_read_aligned)
{
	uint8_t model[8192];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, write_read_unaligned)
{
	uint8_t model[1234 + 5000] = {0};

	coll1();
	write_mirror("o", model, 1234, 5000, 1);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, overwrites_spanning_blocks)
{
	static uint8_t model[5 * 4096];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	write_mirror("o", model, 4000, 200, 2);		/* across block 0/1 */
	write_mirror("o", model, 8191, 2, 3);		/* two bytes, two blocks */
	write_mirror("o", model, 4096, 4096, 4);	/* one whole block */
	write_mirror("o", model, 100, 16000, 5);	/* most of it, unaligned */
	write_mirror("o", model, 20479, 1, 6);		/* last byte */
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, writes_spanning_chunk_boundaries)
{
	const uint64_t size = 1 * MiB + 3 * KiB;
	uint8_t *model = calloc(1, size);

	coll1();
	write_mirror("o", model, 200 * KiB + 17, 600 * KiB, 1);	/* across 256K and 512K */
	write_mirror("o", model, 256 * KiB - 5, 10, 2);
	write_mirror("o", model, 512 * KiB - 4096, 8192, 3);
	write_mirror("o", model, 768 * KiB - 1, 256 * KiB + 3 * KiB + 1, 4);	/* to the end */
	write_mirror("o", model, 0, 1, 5);
	expect_content(ts.st, C1, "o", model, size);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, size);
	expect_fsck_clean(true);
	free(model);
}

Test(obj, one_write_of_several_mib)
{
	const uint64_t size = 5 * MiB + 333;
	uint8_t *model = calloc(1, size);

	coll1();
	write_mirror("o", model, 0, size, 1);
	expect_content(ts.st, C1, "o", model, size);
	free(model);
}

Test(obj, sparse_write_holes_read_zero)
{
	const uint64_t size = 1 * MiB + 3 + 100;
	uint8_t *model = calloc(1, size);
	struct store_stat s;

	coll1();
	write_mirror("o", model, 0, 100, 1);
	write_mirror("o", model, 1 * MiB + 3, 100, 2);
	expect_content(ts.st, C1, "o", model, size);
	s = stat_of(C1, "o");
	cr_assert_eq(s.size, size);
	cr_assert_leq(s.blocks, 4, "a 1 MiB object with two small writes uses %" PRIu64
		      " blocks", s.blocks);
	free(model);
}

Test(obj, write_at_offset_of_new_object_leaves_hole)
{
	uint8_t model[300000] = {0};

	coll1();
	write_mirror("o", model, 299990, 10, 1);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, read_past_end_returns_zero)
{
	uint8_t buf[100];

	coll1();
	OK(do_write(ts.st, C1, "o", 0, "abc", 3, 0));
	cr_assert_eq(store_read(ts.st, C1, "o", 3, sizeof(buf), buf), 0);
	cr_assert_eq(store_read(ts.st, C1, "o", 100000, sizeof(buf), buf), 0);
	cr_assert_eq(store_read(ts.st, C1, "o", 5 * GiB, sizeof(buf), buf), 0);
	cr_assert_eq(store_read(ts.st, C1, "o", UINT64_MAX - 10, sizeof(buf), buf), 0);
	OK(do_touch(ts.st, C1, "empty"));
	cr_assert_eq(store_read(ts.st, C1, "empty", 0, sizeof(buf), buf), 0);
}

Test(obj, short_read_at_end)
{
	uint8_t model[10000], buf[4096];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	cr_assert_eq(store_read(ts.st, C1, "o", 8192, sizeof(buf), buf), 10000 - 8192);
	cr_assert_arr_eq(buf, model + 8192, 10000 - 8192);
	cr_assert_eq(store_read(ts.st, C1, "o", 9999, sizeof(buf), buf), 1);
	cr_assert_eq(buf[0], model[9999]);
}

Test(obj, read_zero_bytes)
{
	uint8_t buf[1];

	coll1();
	OK(do_write(ts.st, C1, "o", 0, "abc", 3, 0));
	cr_assert_eq(store_read(ts.st, C1, "o", 1, 0, buf), 0);
}

Test(obj, read_missing_object_enoent)
{
	uint8_t buf[10];
	struct store_stat s;

	coll1();
	FAILS(store_read(ts.st, C1, "nope", 0, sizeof(buf), buf), -ENOENT);
	FAILS(store_stat(ts.st, C1, "nope", &s), -ENOENT);
}

/* A store whose objects may be 16 GiB. */
static void init_big_objects(void)
{
	ts_init();
	ts.opt.object_max = 16 * GiB;
	OK(ts_mkfs_open(&ts));
}

Test(obj, offsets_beyond_4gib, .init = init_big_objects)
{
	uint8_t a[10000], b[300], buf[20000];
	const uint64_t off_a = 5 * GiB - 5000, off_b = 4 * GiB + 1;
	struct store_stat s;

	coll1();
	pattern_fill(a, sizeof(a), off_a, 1);
	pattern_fill(b, sizeof(b), off_b, 2);
	OK(do_write(ts.st, C1, "o", off_a, a, sizeof(a), 0));
	OK(do_write(ts.st, C1, "o", off_b, b, sizeof(b), 0));
	for (int pass = 0; pass < 2; pass++) {
		s = stat_of(C1, "o");
		cr_assert_eq(s.size, off_a + sizeof(a));
		cr_assert_leq(s.blocks, 8);
		cr_assert_eq(store_read(ts.st, C1, "o", off_a, sizeof(a), buf), (int64_t)sizeof(a));
		cr_assert_arr_eq(buf, a, sizeof(a));
		cr_assert_eq(store_read(ts.st, C1, "o", off_b - 100, 500, buf), 500);
		cr_assert(all_zero(buf, 100));
		cr_assert_arr_eq(buf + 100, b, sizeof(b));
		cr_assert(all_zero(buf + 400, 100));
		/* The hole across the 4 GiB line and the one before a. */
		cr_assert_eq(store_read(ts.st, C1, "o", 4 * GiB - 7000, 7001, buf), 7001);
		cr_assert(all_zero(buf, 7001));
		cr_assert_eq(store_read(ts.st, C1, "o", off_a - 20000, 20000, buf), 20000);
		cr_assert(all_zero(buf, 20000));
		/* Short read at the end. */
		cr_assert_eq(store_read(ts.st, C1, "o", off_a + sizeof(a) - 10, 100, buf), 10);
		cr_assert_arr_eq(buf, a + sizeof(a) - 10, 10);
		OK(ts_reopen(&ts));
	}
	OK(do_truncate(ts.st, C1, "o", 4 * GiB + 101));
	cr_assert_eq(store_read(ts.st, C1, "o", off_b, sizeof(b), buf), 100);
	cr_assert_arr_eq(buf, b, 100);
	expect_fsck_clean(true);
}

Test(obj, small_object_is_inline)
{
	uint8_t model[100];
	struct store_stat s;

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	s = stat_of(C1, "o");
	cr_assert(s.is_inline);
	cr_assert_eq(s.blocks, 0);
	cr_assert_eq(s.size, 100);
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, inline_up_to_inline_max)
{
	uint8_t model[2049];

	coll1();
	write_mirror("o", model, 0, 2048, 1);
	cr_assert(stat_of(C1, "o").is_inline, "2048 bytes (the default inline_max) not inline");
	write_mirror("o", model, 2048, 1, 2);
	cr_assert_not(stat_of(C1, "o").is_inline, "2049 bytes still inline");
	cr_assert_geq(stat_of(C1, "o").blocks, 1);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, inline_object_grows_past_inline_max)
{
	uint8_t model[70000] = {0};

	coll1();
	write_mirror("o", model, 0, 1000, 1);
	write_mirror("o", model, 500, 1000, 2);
	cr_assert(stat_of(C1, "o").is_inline);
	write_mirror("o", model, 1500, 3000, 3);
	cr_assert_not(stat_of(C1, "o").is_inline);
	write_mirror("o", model, 69999, 1, 4);
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
	expect_fsck_clean(true);
}

Test(obj, inline_object_grows_by_sparse_write)
{
	uint8_t model[1 * MiB] = {0};

	coll1();
	write_mirror("o", model, 0, 10, 1);
	write_mirror("o", model, sizeof(model) - 10, 10, 2);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

static void init_inline_100(void)
{
	ts_init();
	ts.opt.inline_max = 100;
	OK(ts_mkfs_open(&ts));
}

Test(obj, inline_max_option_is_honoured, .init = init_inline_100)
{
	uint8_t model[101];

	coll1();
	write_mirror("a", model, 0, 100, 1);
	cr_assert(stat_of(C1, "a").is_inline);
	write_mirror("b", model, 0, 101, 1);
	cr_assert_not(stat_of(C1, "b").is_inline);
	expect_content(ts.st, C1, "b", model, 101);
}

Test(obj, truncate_down)
{
	uint8_t model[10000], buf[100];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	OK(do_truncate(ts.st, C1, "o", 5000));
	cr_assert_eq(stat_of(C1, "o").size, 5000);
	expect_content(ts.st, C1, "o", model, 5000);
	cr_assert_eq(store_read(ts.st, C1, "o", 5000, sizeof(buf), buf), 0);
	OK(do_truncate(ts.st, C1, "o", 0));
	cr_assert_eq(stat_of(C1, "o").size, 0);
	cr_assert_eq(stat_of(C1, "o").blocks, 0);
}

Test(obj, truncate_up_reads_zeros)
{
	uint8_t model[12000] = {0};

	coll1();
	write_mirror("o", model, 0, 3000, 1);
	OK(do_truncate(ts.st, C1, "o", sizeof(model)));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

/* The partial last block keeps its old bytes on disk past the new end;
 * they must not come back when the object grows again. */
Test(obj, truncate_down_then_up_zeroes_partial_block)
{
	uint8_t model[12000] = {0};

	coll1();
	write_mirror("o", model, 0, 10000, 1);
	OK(do_truncate(ts.st, C1, "o", 5000));
	memset(model + 5000, 0, sizeof(model) - 5000);
	OK(do_truncate(ts.st, C1, "o", sizeof(model)));
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, truncate_down_then_write_past_end_zeroes_gap)
{
	uint8_t model[12000] = {0};

	coll1();
	write_mirror("o", model, 0, 10000, 1);
	OK(do_truncate(ts.st, C1, "o", 5000));
	memset(model + 5000, 0, sizeof(model) - 5000);
	write_mirror("o", model, 11000, 1000, 2);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, truncate_inline_down_then_up)
{
	uint8_t model[1500] = {0};

	coll1();
	write_mirror("o", model, 0, 1000, 1);
	OK(do_truncate(ts.st, C1, "o", 500));
	memset(model + 500, 0, 500);
	OK(do_truncate(ts.st, C1, "o", sizeof(model)));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, truncate_frees_blocks)
{
	uint8_t model[40960];
	struct store_statfs f0, f1;

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	cr_assert_geq(stat_of(C1, "o").blocks, 10);
	f0 = statfs_of();
	OK(do_truncate(ts.st, C1, "o", 4096 + 10));
	cr_assert_leq(stat_of(C1, "o").blocks, 2);
	f1 = statfs_of();
	cr_assert_lt(f1.used, f0.used);
	cr_assert_eq(f0.stored - f1.stored, sizeof(model) - 4096 - 10);
	expect_content(ts.st, C1, "o", model, 4096 + 10);
}

Test(obj, truncate_to_same_size_is_noop)
{
	uint8_t model[5000];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	OK(do_truncate(ts.st, C1, "o", sizeof(model)));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, zero_range_reads_zero)
{
	uint8_t model[5 * 4096];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	OK(do_zero(ts.st, C1, "o", 1000, 14000));
	memset(model + 1000, 0, 14000);
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, zero_whole_blocks_frees_them)
{
	uint8_t model[8 * 4096];
	uint64_t before;

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	before = stat_of(C1, "o").blocks;
	OK(do_zero(ts.st, C1, "o", 2 * 4096, 4 * 4096));
	memset(model + 2 * 4096, 0, 4 * 4096);
	cr_assert_leq(stat_of(C1, "o").blocks, before - 4,
		      "zeroing 4 whole blocks of %" PRIu64 " left %" PRIu64, before,
		      stat_of(C1, "o").blocks);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, zero_inline_range)
{
	uint8_t model[1000];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	OK(do_zero(ts.st, C1, "o", 10, 20));
	memset(model + 10, 0, 20);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, zero_past_end_grows_object)
{
	uint8_t model[2000] = {0};

	coll1();
	write_mirror("o", model, 0, 100, 1);
	OK(do_zero(ts.st, C1, "o", 1000, 1000));
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, zero_then_write_inside)
{
	uint8_t model[300 * 1024];

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	OK(do_zero(ts.st, C1, "o", 0, sizeof(model)));
	memset(model, 0, sizeof(model));
	write_mirror("o", model, 100000, 33, 2);
	expect_content(ts.st, C1, "o", model, sizeof(model));
}

Test(obj, remove_object)
{
	uint8_t buf[10];
	struct store_stat s;
	int n = 0;

	coll1();
	OK(do_write(ts.st, C1, "o", 0, "0123456789", 10, 0));
	OK(do_remove(ts.st, C1, "o"));
	FAILS(store_stat(ts.st, C1, "o", &s), -ENOENT);
	FAILS(store_read(ts.st, C1, "o", 0, sizeof(buf), buf), -ENOENT);
	OK(store_list(ts.st, C1, NULL, 0, count_names, &n));
	cr_assert_eq(n, 0);
	cr_assert_eq(statfs_of().objects, 0);
}

Test(obj, remove_missing_enoent)
{
	coll1();
	FAILS(do_remove(ts.st, C1, "o"), -ENOENT);
	OK(do_touch(ts.st, C1, "o"));
	OK(do_remove(ts.st, C1, "o"));
	FAILS(do_remove(ts.st, C1, "o"), -ENOENT);
}

/* store_txn_remove_if_exists: decided when the transaction applies, so a
 * remove queued before it (recovery's push raced with one) is no error,
 * and the rest of its transaction goes on. */
static int remove_if_exists_then_write(const char *oid, const void *data, size_t len)
{
	struct store_txn *t = store_txn_new();
	int r;

	if (!t)
		return -ENOMEM;
	r = store_txn_remove_if_exists(t, C1, oid);
	if (!r)
		r = store_txn_write(t, C1, oid, 0, data, len, 0);
	if (r) {
		store_txn_free(t);
		return r;
	}
	return store_apply(ts.st, t);
}

Test(obj, remove_if_exists)
{
	uint8_t buf[16];

	coll1();
	OK(remove_if_exists_then_write("o", "fresh", 5));	/* missing: no error */
	cr_assert_eq(store_read(ts.st, C1, "o", 0, sizeof(buf), buf), 5);
	cr_assert_arr_eq(buf, "fresh", 5);
	OK(do_setattr(ts.st, C1, "o", "a", "x", 1));
	OK(remove_if_exists_then_write("o", "new", 3));	/* there: removed whole */
	cr_assert_eq(store_read(ts.st, C1, "o", 0, sizeof(buf), buf), 3);
	cr_assert_arr_eq(buf, "new", 3);
	{
		void *v = NULL;
		size_t vl = 0;

		FAILS(store_getattr(ts.st, C1, "o", "a", &v, &vl), -ENODATA);
		free(v);
	}
	/* removed by a transaction queued just before */
	{
		struct store_txn *t1 = store_txn_new(), *t2 = store_txn_new();

		cr_assert(t1 && t2);
		OK(store_txn_remove(t1, C1, "o"));
		OK(store_txn_remove_if_exists(t2, C1, "o"));
		OK(store_queue(ts.st, t1, NULL, NULL));
		OK(store_apply(ts.st, t2));
	}
	FAILS(do_remove(ts.st, C1, "o"), -ENOENT);
}

static int count_attrs(void *arg, const char *name, const void *val, size_t len)
{
	(void)name;
	(void)val;
	(void)len;
	++*(int *)arg;
	return 0;
}

static int count_kv(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	++*(int *)arg;
	return 0;
}

Test(obj, recreated_object_starts_empty)
{
	uint8_t big[50000];
	int n = 0;
	struct store_stat s;

	coll1();
	pattern_fill(big, sizeof(big), 0, 1);
	OK(do_write(ts.st, C1, "o", 0, big, sizeof(big), 0));
	OK(do_setattr(ts.st, C1, "o", "a", "v", 1));
	OK(do_omap_set(ts.st, C1, "o", "k", 1, "v", 1));
	OK(do_remove(ts.st, C1, "o"));
	OK(do_touch(ts.st, C1, "o"));
	s = stat_of(C1, "o");
	cr_assert_eq(s.size, 0);
	cr_assert_eq(s.blocks, 0);
	cr_assert_eq(s.nattrs, 0);
	cr_assert_eq(store_attrs(ts.st, C1, "o", count_attrs, &n), 0);
	cr_assert_eq(store_omap_list(ts.st, C1, "o", NULL, 0, 0, count_kv, &n), 0);
	cr_assert_eq(n, 0);
	expect_fsck_clean(false);
}

Test(obj, remove_and_write_in_one_txn)
{
	uint8_t model[8192];
	struct store_txn *t = store_txn_new();

	coll1();
	pattern_fill(model, sizeof(model), 0, 1);
	OK(do_write(ts.st, C1, "o", 0, model, sizeof(model), 0));
	OK(do_setattr(ts.st, C1, "o", "a", "v", 1));
	OK(store_txn_remove(t, C1, "o"));
	OK(store_txn_write(t, C1, "o", 0, "new", 3, 0));
	OK(store_apply(ts.st, t));
	expect_content(ts.st, C1, "o", "new", 3);
	cr_assert_eq(stat_of(C1, "o").nattrs, 0);
	expect_fsck_clean(true);
}

Test(obj, create_exclusive_eexist)
{
	coll1();
	OK(do_create(ts.st, C1, "o"));
	cr_assert_eq(stat_of(C1, "o").size, 0);
	FAILS(do_create(ts.st, C1, "o"), -EEXIST);
	OK(do_write(ts.st, C1, "w", 0, "x", 1, 0));
	FAILS(do_create(ts.st, C1, "w"), -EEXIST);
	expect_content(ts.st, C1, "w", "x", 1);
}

Test(obj, create_twice_in_one_txn_eexist)
{
	struct store_txn *t = store_txn_new();
	struct store_stat s;

	coll1();
	OK(store_txn_create(t, C1, "o"));
	OK(store_txn_create(t, C1, "o"));
	FAILS(store_apply(ts.st, t), -EEXIST);
	FAILS(store_stat(ts.st, C1, "o", &s), -ENOENT);
}

Test(obj, touch_creates_and_keeps_data)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	cr_assert_eq(stat_of(C1, "o").size, 0);
	cr_assert_eq(statfs_of().objects, 1);
	OK(do_write(ts.st, C1, "o", 0, "abc", 3, 0));
	OK(do_touch(ts.st, C1, "o"));
	expect_content(ts.st, C1, "o", "abc", 3);
	cr_assert_eq(statfs_of().objects, 1);
}

static void init_object_max_1m(void)
{
	ts_init();
	ts.opt.object_max = 1 * MiB;
	OK(ts_mkfs_open(&ts));
}

Test(obj, write_up_to_object_max, .init = init_object_max_1m)
{
	coll1();
	OK(do_write(ts.st, C1, "o", 1 * MiB - 10, "0123456789", 10, 0));
	cr_assert_eq(stat_of(C1, "o").size, 1 * MiB);
}

Test(obj, write_beyond_object_max_efbig, .init = init_object_max_1m)
{
	struct store_stat s;

	coll1();
	FAILS(do_write(ts.st, C1, "o", 1 * MiB - 10, "0123456789!", 11, 0), -EFBIG);
	FAILS(do_write(ts.st, C1, "o", 2 * MiB, "x", 1, 0), -EFBIG);
	FAILS(store_stat(ts.st, C1, "o", &s), -ENOENT);
	OK(do_touch(ts.st, C1, "o"));
	FAILS(do_truncate(ts.st, C1, "o", 1 * MiB + 1), -EFBIG);
	FAILS(do_zero(ts.st, C1, "o", 1 * MiB - 1, 2), -EFBIG);
	cr_assert_eq(stat_of(C1, "o").size, 0);
}

Test(obj, default_object_max_efbig)
{
	coll1();
	FAILS(do_write(ts.st, C1, "o", STORE_DEFAULT_OBJECT_MAX, "x", 1, 0), -EFBIG);
	OK(do_write(ts.st, C1, "o", STORE_DEFAULT_OBJECT_MAX - 1, "x", 1, 0));
}

Test(obj, write_offset_overflow_refused)
{
	struct store_txn *t = store_txn_new();
	uint8_t buf[100] = {0};
	int r;

	coll1();
	r = store_txn_write(t, C1, "o", UINT64_MAX - 10, buf, sizeof(buf), 0);
	if (r == 0)
		FAILS(store_apply(ts.st, t), -EFBIG);
	else {
		cr_assert_eq(r, -EINVAL, "builder: %s", errstr(r));
		store_txn_free(t);
	}
}

static char *name_of_len(size_t len)
{
	char *s = malloc(len + 1);

	cr_assert_not_null(s);
	for (size_t i = 0; i < len; i++)
		s[i] = (char)('a' + i % 26);
	s[len] = '\0';
	return s;
}

Test(obj, object_name_too_long_enametoolong)
{
	char *longest = name_of_len(STORE_NAME_MAX);
	char *too_long = name_of_len(STORE_NAME_MAX + 1);
	struct store_txn *t = store_txn_new();

	coll1();
	FAILS(store_txn_write(t, C1, too_long, 0, "x", 1, 0), -ENAMETOOLONG);
	FAILS(store_txn_touch(t, C1, too_long), -ENAMETOOLONG);
	FAILS(store_txn_create(t, C1, too_long), -ENAMETOOLONG);
	FAILS(store_txn_remove(t, C1, too_long), -ENAMETOOLONG);
	FAILS(store_txn_truncate(t, C1, too_long, 1), -ENAMETOOLONG);
	FAILS(store_txn_zero(t, C1, too_long, 0, 1), -ENAMETOOLONG);
	FAILS(store_txn_setattr(t, C1, too_long, "a", "v", 1), -ENAMETOOLONG);
	FAILS(store_txn_rmattr(t, C1, too_long, "a"), -ENAMETOOLONG);
	FAILS(store_txn_omap_set(t, C1, too_long, "k", 1, "v", 1), -ENAMETOOLONG);
	FAILS(store_txn_omap_rm(t, C1, too_long, "k", 1), -ENAMETOOLONG);
	FAILS(store_txn_omap_clear(t, C1, too_long), -ENAMETOOLONG);
	cr_assert_eq(store_txn_ops(t), 0, "refused ops were added to the txn");
	/* The longest allowed name works end to end. */
	OK(store_txn_write(t, C1, longest, 0, "x", 1, 0));
	OK(store_apply(ts.st, t));
	expect_content(ts.st, C1, longest, "x", 1);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, longest, "x", 1);
	free(longest);
	free(too_long);
}

Test(obj, txn_ops_counts_ops)
{
	struct store_txn *t = store_txn_new();

	cr_assert_not_null(t);
	cr_assert_eq(store_txn_ops(t), 0);
	OK(store_txn_coll_create(t, 1, 0));
	OK(store_txn_write(t, 1, "o", 0, "x", 1, 0));
	OK(store_txn_setattr(t, 1, "o", "a", "v", 1));
	cr_assert_eq(store_txn_ops(t), 3);
	store_txn_free(t);
	store_txn_free(NULL);
}

Test(obj, builder_copies_its_arguments)
{
	char name[8] = "obj";
	char data[8] = "payload";
	struct store_txn *t = store_txn_new();

	coll1();
	OK(store_txn_write(t, C1, name, 0, data, 7, 0));
	memset(name, 'X', 7);
	memset(data, 'Y', 7);
	OK(store_apply(ts.st, t));
	expect_content(ts.st, C1, "obj", "payload", 7);
}

/* Small overwrites may go through the kv and be copied into the block
 * later: they must show at once, survive a reopen, and never land on
 * blocks that have since gone to another object. */
Test(obj, small_overwrites_survive_reopen)
{
	uint8_t model[64 * 1024];
	uint64_t seed = 42;

	coll1();
	write_mirror("o", model, 0, sizeof(model), 1);
	for (int i = 0; i < 200; i++) {
		uint64_t off = rng_below(&seed, sizeof(model) - 100);
		size_t len = 1 + (size_t)rng_below(&seed, 100);

		write_mirror("o", model, off, len, (uint32_t)(100 + i));
		if (i % 50 == 0)
			expect_content(ts.st, C1, "o", model, sizeof(model));
	}
	expect_content(ts.st, C1, "o", model, sizeof(model));
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, sizeof(model));
	expect_fsck_clean(true);
}

static void init_block_64m(void)
{
	ts_init();
	ts.opt.block_size = 64 * MiB;
	OK(ts_mkfs_open(&ts));
}

Test(obj, small_overwrites_of_removed_object_hit_nothing, .init = init_block_64m, .timeout = 200)
{
	const int rounds = 70, keep = 30;
	uint8_t *big = malloc(1 * MiB);
	uint8_t small[64 * 1024];
	char oid[32];

	coll1();
	for (int r = 0; r < rounds; r++) {
		snprintf(oid, sizeof(oid), "b%03d", r);
		pattern_fill(big, 1 * MiB, 0, (uint32_t)r);
		OK(do_write(ts.st, C1, oid, 0, big, 1 * MiB, 0));
		if (r >= keep) {
			snprintf(oid, sizeof(oid), "b%03d", r - keep);
			OK(do_remove(ts.st, C1, oid));
		}
		pattern_fill(small, sizeof(small), 0, 0xdead0000u + (uint32_t)r);
		OK(do_write(ts.st, C1, "a", 0, small, sizeof(small), 0));
		for (int i = 0; i < 8; i++)
			OK(do_write(ts.st, C1, "a", (uint64_t)i * 7919, "OVERWRITE", 9, 0));
		OK(do_remove(ts.st, C1, "a"));
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int r = rounds - keep; r < rounds; r++) {
			snprintf(oid, sizeof(oid), "b%03d", r);
			pattern_fill(big, 1 * MiB, 0, (uint32_t)r);
			expect_content(ts.st, C1, oid, big, 1 * MiB);
		}
		OK(ts_reopen(&ts));
	}
	expect_fsck_clean(true);
	free(big);
}

/* ===== attributes ======================================================= */

TestSuite(attr, .init = ts_init_open, .fini = ts_fini);

static void expect_attr(const char *oid, const char *name, const void *want, size_t wlen)
{
	void *v = NULL;
	size_t len = 12345;

	OK(store_getattr(ts.st, C1, oid, name, &v, &len));
	cr_assert_eq(len, wlen, "attr '%s' of '%s': length %zu, want %zu", name, oid, len, wlen);
	if (wlen)
		cr_assert_arr_eq(v, want, wlen);
	free(v);
}

Test(attr, set_get)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "user.x", "value", 5));
	expect_attr("o", "user.x", "value", 5);
	cr_assert_eq(stat_of(C1, "o").nattrs, 1);
}

Test(attr, setattr_creates_nothing_else)
{
	coll1();
	OK(do_write(ts.st, C1, "o", 0, "data", 4, 0));
	OK(do_setattr(ts.st, C1, "o", "a", "v", 1));
	expect_content(ts.st, C1, "o", "data", 4);
}

Test(attr, overwrite)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "a", "first value", 11));
	OK(do_setattr(ts.st, C1, "o", "a", "2nd", 3));
	expect_attr("o", "a", "2nd", 3);
	cr_assert_eq(stat_of(C1, "o").nattrs, 1);
}

Test(attr, empty_value)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "empty", "", 0));
	expect_attr("o", "empty", "", 0);
}

Test(attr, large_value)
{
	const size_t len = 1 * MiB + 7;
	uint8_t *val = malloc(len);

	coll1();
	pattern_fill(val, len, 0, 3);
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "big", val, len));
	expect_attr("o", "big", val, len);
	OK(ts_reopen(&ts));
	expect_attr("o", "big", val, len);
	free(val);
}

struct attr_seen {
	int n;
	char names[8][32];
	char vals[8][32];
};

static int attr_cb(void *arg, const char *name, const void *val, size_t len)
{
	struct attr_seen *s = arg;

	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		snprintf(s->vals[s->n], sizeof(s->vals[0]), "%.*s", (int)len, (const char *)val);
	}
	s->n++;
	return 0;
}

Test(attr, listed_in_name_order)
{
	static const char *names[] = { "b", "a", "\xc3\xa9", "ab", "z", "A", "_" };
	static const char *sorted[] = { "A", "_", "a", "ab", "b", "z", "\xc3\xa9" };
	struct attr_seen s = {0};

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	for (size_t i = 0; i < 7; i++) {
		char v[16];

		snprintf(v, sizeof(v), "v-%s", names[i]);
		OK(do_setattr(ts.st, C1, "o", names[i], v, strlen(v)));
	}
	OK(store_attrs(ts.st, C1, "o", attr_cb, &s));
	cr_assert_eq(s.n, 7);
	for (int i = 0; i < 7; i++) {
		char v[16];

		snprintf(v, sizeof(v), "v-%s", sorted[i]);
		cr_assert_str_eq(s.names[i], sorted[i]);
		cr_assert_str_eq(s.vals[i], v);
	}
	cr_assert_eq(stat_of(C1, "o").nattrs, 7);
}

static int attr_stop(void *arg, const char *name, const void *val, size_t len)
{
	(void)name;
	(void)val;
	(void)len;
	return ++*(int *)arg == 2 ? -77 : 0;
}

Test(attr, walk_stops_with_fn_value)
{
	int n = 0;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	for (int i = 0; i < 5; i++) {
		char name[8];

		snprintf(name, sizeof(name), "a%d", i);
		OK(do_setattr(ts.st, C1, "o", name, "v", 1));
	}
	cr_assert_eq(store_attrs(ts.st, C1, "o", attr_stop, &n), -77);
	cr_assert_eq(n, 2);
}

Test(attr, rmattr)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	OK(do_setattr(ts.st, C1, "o", "b", "2", 1));
	OK(do_rmattr(ts.st, C1, "o", "a"));
	FAILS(store_getattr(ts.st, C1, "o", "a", &v, &len), -ENODATA);
	expect_attr("o", "b", "2", 1);
	cr_assert_eq(stat_of(C1, "o").nattrs, 1);
}

Test(attr, rmattr_missing_enodata)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	FAILS(do_rmattr(ts.st, C1, "o", "never"), -ENODATA);
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	OK(do_rmattr(ts.st, C1, "o", "a"));
	FAILS(do_rmattr(ts.st, C1, "o", "a"), -ENODATA);
}

Test(attr, getattr_missing_enodata)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	FAILS(store_getattr(ts.st, C1, "o", "nope", &v, &len), -ENODATA);
}

Test(attr, getattr_missing_object_enoent)
{
	void *v;
	size_t len;

	coll1();
	FAILS(store_getattr(ts.st, C1, "nope", "a", &v, &len), -ENOENT);
	FAILS(store_attrs(ts.st, C1, "nope", count_attrs, &(int){0}), -ENOENT);
}

Test(attr, name_too_long_enametoolong)
{
	char *longest = name_of_len(STORE_ATTR_NAME_MAX);
	char *too_long = name_of_len(STORE_ATTR_NAME_MAX + 1);
	struct store_txn *t = store_txn_new();

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	FAILS(store_txn_setattr(t, C1, "o", too_long, "v", 1), -ENAMETOOLONG);
	FAILS(store_txn_rmattr(t, C1, "o", too_long), -ENAMETOOLONG);
	OK(store_txn_setattr(t, C1, "o", longest, "v", 1));
	OK(store_apply(ts.st, t));
	expect_attr("o", longest, "v", 1);
	free(longest);
	free(too_long);
}

Test(attr, value_too_big_einval)
{
	uint8_t *val = malloc(STORE_VALUE_MAX + 1ul);
	struct store_txn *t = store_txn_new();

	cr_assert_not_null(val);
	memset(val, 1, STORE_VALUE_MAX + 1ul);
	FAILS(store_txn_setattr(t, C1, "o", "a", val, STORE_VALUE_MAX + 1ul), -EINVAL);
	FAILS(store_txn_omap_set(t, C1, "o", "k", 1, val, STORE_VALUE_MAX + 1ul), -EINVAL);
	cr_assert_eq(store_txn_ops(t), 0);
	store_txn_free(t);
	free(val);
}

Test(attr, removed_with_object)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	OK(do_remove(ts.st, C1, "o"));
	FAILS(store_getattr(ts.st, C1, "o", "a", &v, &len), -ENOENT);
}

/* ===== omap ============================================================= */

TestSuite(omap, .init = ts_init_open, .fini = ts_fini);

static void expect_omap(const char *oid, const void *key, size_t klen,
			const void *want, size_t wlen)
{
	void *v = NULL;
	size_t len = 12345;

	OK(store_omap_get(ts.st, C1, oid, key, klen, &v, &len));
	cr_assert_eq(len, wlen, "omap value length %zu, want %zu", len, wlen);
	if (wlen)
		cr_assert_arr_eq(v, want, wlen);
	free(v);
}

Test(omap, set_get)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "key", 3, "value", 5));
	expect_omap("o", "key", 3, "value", 5);
	OK(do_omap_set(ts.st, C1, "o", "key", 3, "other value", 11));
	expect_omap("o", "key", 3, "other value", 11);
	OK(do_omap_set(ts.st, C1, "o", "empty", 5, "", 0));
	expect_omap("o", "empty", 5, "", 0);
}

Test(omap, get_missing_enodata)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	FAILS(store_omap_get(ts.st, C1, "o", "k", 1, &v, &len), -ENODATA);
	OK(do_omap_set(ts.st, C1, "o", "k", 1, "v", 1));
	FAILS(store_omap_get(ts.st, C1, "o", "k\0", 2, &v, &len), -ENODATA);
	FAILS(store_omap_get(ts.st, C1, "o", "kk", 2, &v, &len), -ENODATA);
}

Test(omap, get_missing_object_enoent)
{
	void *v;
	size_t len;

	coll1();
	FAILS(store_omap_get(ts.st, C1, "o", "k", 1, &v, &len), -ENOENT);
	FAILS(store_omap_list(ts.st, C1, "o", NULL, 0, 0, count_kv, &(int){0}), -ENOENT);
}

Test(omap, rm)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "a", 1, "1", 1));
	OK(do_omap_set(ts.st, C1, "o", "b", 1, "2", 1));
	OK(do_omap_rm(ts.st, C1, "o", "a", 1));
	FAILS(store_omap_get(ts.st, C1, "o", "a", 1, &v, &len), -ENODATA);
	expect_omap("o", "b", 1, "2", 1);
}

Test(omap, rm_missing_key_is_fine)
{
	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_rm(ts.st, C1, "o", "never", 5));
}

Test(omap, clear)
{
	int n = 0;

	coll1();
	OK(do_write(ts.st, C1, "o", 0, "data", 4, 0));
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	for (int i = 0; i < 100; i++) {
		char k[16];

		snprintf(k, sizeof(k), "key%03d", i);
		OK(do_omap_set(ts.st, C1, "o", k, strlen(k), k, strlen(k)));
	}
	OK(do_omap_clear(ts.st, C1, "o"));
	cr_assert_eq(store_omap_list(ts.st, C1, "o", NULL, 0, 0, count_kv, &n), 0);
	cr_assert_eq(n, 0);
	/* Data and attributes stay. */
	expect_content(ts.st, C1, "o", "data", 4);
	expect_attr("o", "a", "1", 1);
	/* Clear of an empty omap is fine, and it can be filled again. */
	OK(do_omap_clear(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "x", 1, "y", 1));
	expect_omap("o", "x", 1, "y", 1);
}

Test(omap, clear_then_set_in_one_txn)
{
	struct store_txn *t = store_txn_new();
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "old", 3, "1", 1));
	OK(store_txn_omap_clear(t, C1, "o"));
	OK(store_txn_omap_set(t, C1, "o", "new", 3, "2", 1));
	OK(store_apply(ts.st, t));
	FAILS(store_omap_get(ts.st, C1, "o", "old", 3, &v, &len), -ENODATA);
	expect_omap("o", "new", 3, "2", 1);
}

Test(omap, large_value)
{
	const size_t len = 4 * MiB + 1;
	uint8_t *val = malloc(len);

	coll1();
	pattern_fill(val, len, 0, 9);
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "big", 3, val, len));
	expect_omap("o", "big", 3, val, len);
	OK(ts_reopen(&ts));
	expect_omap("o", "big", 3, val, len);
	free(val);
}

struct kv_seen {
	int n;
	size_t klen[64];
	uint8_t key[64][16];
};

static int kv_cb(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct kv_seen *s = arg;

	/* Every value here is its key reversed-then-tagged: check it. */
	cr_assert_eq(vlen, klen + 1);
	cr_assert_eq(((const uint8_t *)val)[0], 'V');
	cr_assert_arr_eq((const uint8_t *)val + 1, key, klen);
	if (s->n < 64 && klen <= 16) {
		memcpy(s->key[s->n], key, klen);
		s->klen[s->n] = klen;
	}
	s->n++;
	return 0;
}

static void omap_set_tagged(const char *oid, const void *key, size_t klen)
{
	uint8_t v[64];

	v[0] = 'V';
	memcpy(v + 1, key, klen);
	OK(do_omap_set(ts.st, C1, oid, key, klen, v, klen + 1));
}

Test(omap, binary_keys_in_memcmp_order)
{
	/* memcmp order, shorter first on a tie. */
	static const struct { const char *k; size_t len; } sorted[] = {
		{ "\x00", 1 }, { "\x00\x00", 2 }, { "\x00\x01", 2 }, { "a", 1 },
		{ "a\x00", 2 }, { "a\x00\xff", 3 }, { "ab", 2 }, { "b", 1 },
		{ "\x7f", 1 }, { "\x80", 1 }, { "\xff", 1 }, { "\xff\xff", 2 },
	};
	const int n = (int)(sizeof(sorted) / sizeof(sorted[0]));
	struct kv_seen s = {0};

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	for (int i = n - 1; i >= 0; i -= 2)
		omap_set_tagged("o", sorted[i].k, sorted[i].len);
	for (int i = n - 2; i >= 0; i -= 2)
		omap_set_tagged("o", sorted[i].k, sorted[i].len);
	cr_assert_eq(store_omap_list(ts.st, C1, "o", NULL, 0, 0, kv_cb, &s), n);
	cr_assert_eq(s.n, n);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(s.klen[i], sorted[i].len, "entry %d", i);
		cr_assert_arr_eq(s.key[i], sorted[i].k, sorted[i].len, "entry %d", i);
	}
	/* Each binary key reads back by exact key. */
	for (int i = 0; i < n; i++) {
		uint8_t v[8];

		v[0] = 'V';
		memcpy(v + 1, sorted[i].k, sorted[i].len);
		expect_omap("o", sorted[i].k, sorted[i].len, v, sorted[i].len + 1);
	}
}

Test(omap, list_paged_with_after)
{
	struct kv_seen all = {0};
	int total = 0, pages = 0;
	uint8_t after[16];
	size_t after_len = 0;
	bool first = true;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	for (int i = 0; i < 50; i++) {
		char k[8];

		snprintf(k, sizeof(k), "k%02d", (i * 37) % 50);	/* out of order */
		omap_set_tagged("o", k, strlen(k));
	}
	for (;;) {
		struct kv_seen page = {0};
		int r = store_omap_list(ts.st, C1, "o", first ? NULL : after, after_len, 7,
					kv_cb, &page);

		cr_assert_geq(r, 0, "%s", errstr(r));
		cr_assert_eq(r, page.n);
		cr_assert_leq(r, 7);
		if (r == 0)
			break;
		for (int i = 0; i < page.n; i++) {
			char want[8];

			snprintf(want, sizeof(want), "k%02d", total + i);
			cr_assert_eq(page.klen[i], 3);
			cr_assert_arr_eq(page.key[i], want, 3, "page %d entry %d", pages, i);
		}
		total += page.n;
		pages++;
		memcpy(after, page.key[page.n - 1], page.klen[page.n - 1]);
		after_len = page.klen[page.n - 1];
		first = false;
	}
	cr_assert_eq(total, 50);
	cr_assert_eq(pages, 8);
	/* `after` need not be a key that exists. */
	cr_assert_eq(store_omap_list(ts.st, C1, "o", "k25x", 4, 0, kv_cb, &all), 24);
	cr_assert_arr_eq(all.key[0], "k26", 3);
}

static int kv_stop(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	(void)key;
	(void)klen;
	(void)val;
	(void)vlen;
	return ++*(int *)arg == 3 ? 5 : 0;
}

Test(omap, list_stops_with_fn_value)
{
	int n = 0;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	for (int i = 0; i < 10; i++) {
		char k[8];

		snprintf(k, sizeof(k), "k%d", i);
		OK(do_omap_set(ts.st, C1, "o", k, strlen(k), "v", 1));
	}
	cr_assert_eq(store_omap_list(ts.st, C1, "o", NULL, 0, 0, kv_stop, &n), 5);
	cr_assert_eq(n, 3);
}

Test(omap, key_too_long_enametoolong)
{
	uint8_t key[STORE_OMAP_KEY_MAX + 1];
	struct store_txn *t = store_txn_new();

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	memset(key, 0xee, sizeof(key));
	FAILS(store_txn_omap_set(t, C1, "o", key, sizeof(key), "v", 1), -ENAMETOOLONG);
	FAILS(store_txn_omap_rm(t, C1, "o", key, sizeof(key)), -ENAMETOOLONG);
	OK(store_txn_omap_set(t, C1, "o", key, STORE_OMAP_KEY_MAX, "v", 1));
	OK(store_apply(ts.st, t));
	expect_omap("o", key, STORE_OMAP_KEY_MAX, "v", 1);
}

Test(omap, objects_do_not_share_omap)
{
	void *v;
	size_t len;
	int n = 0;

	coll1();
	OK(do_touch(ts.st, C1, "a"));
	OK(do_touch(ts.st, C1, "ab"));
	OK(do_omap_set(ts.st, C1, "a", "k", 1, "1", 1));
	OK(do_omap_set(ts.st, C1, "ab", "k", 1, "2", 1));
	OK(do_omap_set(ts.st, C1, "ab", "z", 1, "3", 1));
	expect_omap("a", "k", 1, "1", 1);
	FAILS(store_omap_get(ts.st, C1, "a", "z", 1, &v, &len), -ENODATA);
	cr_assert_eq(store_omap_list(ts.st, C1, "a", NULL, 0, 0, count_kv, &n), 1);
	OK(do_omap_clear(ts.st, C1, "a"));
	expect_omap("ab", "k", 1, "2", 1);
	OK(do_remove(ts.st, C1, "a"));
	expect_omap("ab", "z", 1, "3", 1);
}

Test(omap, removed_with_object)
{
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "o"));
	OK(do_omap_set(ts.st, C1, "o", "k", 1, "1", 1));
	OK(do_remove(ts.st, C1, "o"));
	OK(do_touch(ts.st, C1, "o"));
	FAILS(store_omap_get(ts.st, C1, "o", "k", 1, &v, &len), -ENODATA);
	expect_fsck_clean(false);
}

/* ===== listing ========================================================== */

TestSuite(list, .init = ts_init_open, .fini = ts_fini);

struct names {
	size_t n, cap;
	char **v;
};

static int names_cb(void *arg, const char *oid)
{
	struct names *ns = arg;

	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? 2 * ns->cap : 64;
		ns->v = realloc(ns->v, ns->cap * sizeof(*ns->v));
		cr_assert_not_null(ns->v);
	}
	ns->v[ns->n++] = strdup(oid);
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(list, paged_equals_full_sorted_list)
{
	struct names want = {0}, full = {0}, paged = {0};
	struct store_txn *t = store_txn_new();
	uint64_t seed = 12345;

	coll1();
	/* 1000 names of varied lengths and bytes, created in random order. */
	for (int i = 0; i < 1000; i++) {
		char name[64];
		int len = snprintf(name, sizeof(name), "%c%d-%0*d", 'A' + (int)rng_below(&seed, 58),
				   (int)rng_below(&seed, 1000), (int)rng_below(&seed, 20), i);

		(void)len;
		names_cb(&want, name);
		OK(store_txn_touch(t, C1, name));
		if (store_txn_ops(t) == 100) {
			OK(store_apply(ts.st, t));
			t = store_txn_new();
		}
	}
	OK(store_apply(ts.st, t));
	qsort(want.v, want.n, sizeof(char *), cmp_str);

	cr_assert_eq(store_list(ts.st, C1, NULL, 0, names_cb, &full), 1000);
	cr_assert_eq(full.n, 1000);
	for (size_t i = 0; i < 1000; i++)
		cr_assert_str_eq(full.v[i], want.v[i], "full list entry %zu", i);

	for (;;) {
		size_t before = paged.n;
		int r = store_list(ts.st, C1, paged.n ? paged.v[paged.n - 1] : NULL, 7,
				   names_cb, &paged);

		cr_assert_geq(r, 0, "%s", errstr(r));
		cr_assert_eq((size_t)r, paged.n - before);
		cr_assert_leq(r, 7);
		if (r == 0)
			break;
		cr_assert_leq(paged.n, 1000, "paging does not end");
	}
	cr_assert_eq(paged.n, 1000);
	for (size_t i = 0; i < 1000; i++)
		cr_assert_str_eq(paged.v[i], want.v[i], "paged list entry %zu", i);
	cr_assert_eq(statfs_of().objects, 1000);
	names_free(&want);
	names_free(&full);
	names_free(&paged);
}

Test(list, empty_collection)
{
	int n = 0;

	coll1();
	cr_assert_eq(store_list(ts.st, C1, NULL, 0, count_names, &n), 0);
	cr_assert_eq(n, 0);
}

Test(list, after_a_name_that_does_not_exist)
{
	struct names got = {0};

	coll1();
	OK(do_touch(ts.st, C1, "apple"));
	OK(do_touch(ts.st, C1, "melon"));
	OK(do_touch(ts.st, C1, "zucchini"));
	cr_assert_eq(store_list(ts.st, C1, "m", 0, names_cb, &got), 2);
	cr_assert_str_eq(got.v[0], "melon");
	cr_assert_str_eq(got.v[1], "zucchini");
	names_free(&got);
	cr_assert_eq(store_list(ts.st, C1, "zz", 0, names_cb, &got), 0);
	cr_assert_eq(store_list(ts.st, C1, "melon", 1, names_cb, &got), 1);
	cr_assert_str_eq(got.v[0], "zucchini");
	names_free(&got);
}

Test(list, only_its_own_collection)
{
	struct names got = {0};

	OK(do_coll_create(ts.st, 1, 0));
	OK(do_coll_create(ts.st, 2, 0));
	OK(do_coll_create(ts.st, 3, 0));
	OK(do_touch(ts.st, 1, "one"));
	OK(do_touch(ts.st, 2, "two-a"));
	OK(do_touch(ts.st, 2, "two-b"));
	OK(do_touch(ts.st, 3, "three"));
	cr_assert_eq(store_list(ts.st, 2, NULL, 0, names_cb, &got), 2);
	cr_assert_str_eq(got.v[0], "two-a");
	cr_assert_str_eq(got.v[1], "two-b");
	names_free(&got);
}

static int name_stop(void *arg, const char *oid)
{
	(void)oid;
	return ++*(int *)arg == 4 ? 99 : 0;
}

Test(list, stops_with_fn_value)
{
	int n = 0;

	coll1();
	for (int i = 0; i < 10; i++) {
		char name[8];

		snprintf(name, sizeof(name), "o%d", i);
		OK(do_touch(ts.st, C1, name));
	}
	cr_assert_eq(store_list(ts.st, C1, NULL, 0, name_stop, &n), 99);
	cr_assert_eq(n, 4);
}

/* ===== stat and statfs ================================================== */

TestSuite(stat, .init = ts_init_open, .fini = ts_fini);

Test(stat, fields)
{
	uint8_t data[3 * 4096 + 1];
	struct store_stat s;

	coll1();
	pattern_fill(data, sizeof(data), 0, 1);
	OK(do_write(ts.st, C1, "o", 0, data, sizeof(data), 0));
	OK(do_setattr(ts.st, C1, "o", "a", "1", 1));
	OK(do_setattr(ts.st, C1, "o", "b", "2", 1));
	s = stat_of(C1, "o");
	cr_assert_eq(s.size, sizeof(data));
	cr_assert_eq(s.blocks, 4);
	cr_assert_eq(s.nattrs, 2);
	cr_assert_not(s.is_inline);

	OK(do_touch(ts.st, C1, "empty"));
	s = stat_of(C1, "empty");
	cr_assert_eq(s.size, 0);
	cr_assert_eq(s.blocks, 0);
	cr_assert_eq(s.nattrs, 0);
}

Test(stat, size_alone_matches_stat)
{
	static const char *oids[] = { "inline", "chunked", "sparse", "empty", "cut" };
	uint8_t data[3 * 4096 + 1];
	uint64_t size = 7;

	coll1();
	pattern_fill(data, sizeof(data), 0, 1);
	OK(do_write(ts.st, C1, "inline", 0, data, 100, 0));
	OK(do_write(ts.st, C1, "chunked", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, C1, "sparse", 5 * MiB, data, 10, 0));
	OK(do_touch(ts.st, C1, "empty"));
	OK(do_write(ts.st, C1, "cut", 0, data, sizeof(data), 0));
	struct store_txn *t = store_txn_new();

	cr_assert_not_null(t);
	OK(store_txn_truncate(t, C1, "cut", 4097));
	OK(store_apply(ts.st, t));
	for (int i = 0; i < 5; i++) {
		OK(store_size(ts.st, C1, oids[i], &size));
		cr_assert_eq(size, stat_of(C1, oids[i]).size, "%s: %" PRIu64, oids[i], size);
	}
	cr_assert_eq(size, 4097);
	cr_assert_eq(store_size(ts.st, C1, "missing", &size), -ENOENT);
	cr_assert_eq(store_size(ts.st, C1, "", &size), -EINVAL);
	cr_assert_eq(store_size(ts.st, C1, "inline", NULL), -EINVAL);
}

Test(stat, statfs_counts_objects_used_stored)
{
	uint8_t data[40000];
	struct store_statfs f0, f1, f2;
	uint64_t blocks = 0;
	static const char *oids[] = { "inline", "plain", "sparse", "empty" };

	coll1();
	pattern_fill(data, sizeof(data), 0, 1);
	f0 = statfs_of();
	OK(do_write(ts.st, C1, "inline", 0, data, 100, 0));
	OK(do_write(ts.st, C1, "plain", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, C1, "sparse", 3 * MiB, data, 5000, 0));
	OK(do_touch(ts.st, C1, "empty"));
	f1 = statfs_of();
	cr_assert_eq(f1.objects - f0.objects, 4);
	cr_assert_eq(f1.stored - f0.stored, 100 + sizeof(data) + 3 * MiB + 5000);
	for (int i = 0; i < 4; i++)
		blocks += stat_of(C1, oids[i]).blocks;
	cr_assert_eq(f1.used - f0.used, blocks * STORE_BLOCK_SIZE,
		     "used grew by %" PRIu64 " for %" PRIu64 " blocks", f1.used - f0.used, blocks);
	cr_assert_eq(f1.total, f0.total);

	OK(ts_reopen(&ts));
	f2 = statfs_of();
	cr_assert_eq(f2.objects, f1.objects);
	cr_assert_eq(f2.used, f1.used);
	cr_assert_eq(f2.stored, f1.stored);

	for (int i = 0; i < 4; i++)
		OK(do_remove(ts.st, C1, oids[i]));
	f2 = statfs_of();
	cr_assert_eq(f2.objects, f0.objects);
	cr_assert_eq(f2.used, f0.used);
	cr_assert_eq(f2.stored, f0.stored);
	cr_assert_eq(f2.free, f0.free);
}

Test(stat, statfs_tracks_overwrite_and_truncate)
{
	uint8_t data[20000];
	struct store_statfs f0, f1;

	coll1();
	pattern_fill(data, sizeof(data), 0, 1);
	f0 = statfs_of();
	OK(do_write(ts.st, C1, "o", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, C1, "o", 100, data, 1000, 0));	/* overwrite: no growth */
	f1 = statfs_of();
	cr_assert_eq(f1.stored - f0.stored, sizeof(data));
	cr_assert_eq(f1.used - f0.used, stat_of(C1, "o").blocks * STORE_BLOCK_SIZE);
	OK(do_truncate(ts.st, C1, "o", 50000));
	f1 = statfs_of();
	cr_assert_eq(f1.stored - f0.stored, 50000);
	cr_assert_eq(f1.used - f0.used, stat_of(C1, "o").blocks * STORE_BLOCK_SIZE);
	expect_fsck_clean(true);
}

Test(stat, statfs_kv_fields)
{
	struct store_statfs f = statfs_of();

	/* Default kv_max: 1/8 of a 128 MiB block, at least 64 MiB. */
	cr_assert_eq(f.kv_max, 64 * MiB);
	cr_assert_gt(f.kv_used, 0);
	cr_assert_lt(f.kv_used, f.kv_max);
}

static void init_kv_96m(void)
{
	ts_init();
	ts.opt.block_size = 512 * MiB;
	ts.opt.kv_max = 96 * MiB;
	OK(ts_mkfs_open(&ts));
}

Test(stat, statfs_kv_max_option, .init = init_kv_96m)
{
	cr_assert_eq(statfs_of().kv_max, 96 * MiB);
}

/* ===== transactions ===================================================== */

TestSuite(txn, .init = ts_init_open, .fini = ts_fini);

Test(txn, failing_op_applies_nothing)
{
	struct store_txn *t = store_txn_new();
	struct store_stat s;
	void *v;
	size_t len;

	coll1();
	OK(do_touch(ts.st, C1, "b"));
	OK(store_txn_write(t, C1, "a", 0, "new object", 10, 0));
	OK(store_txn_setattr(t, C1, "b", "attr", "v", 1));
	OK(store_txn_coll_create(t, 2, 0));
	OK(store_txn_remove(t, C1, "missing"));
	FAILS(store_apply(ts.st, t), -ENOENT);
	FAILS(store_stat(ts.st, C1, "a", &s), -ENOENT);
	FAILS(store_getattr(ts.st, C1, "b", "attr", &v, &len), -ENODATA);
	cr_assert_eq(store_coll_exists(ts.st, 2), 0);
	cr_assert_eq(statfs_of().objects, 1);
	/* Later transactions work. */
	OK(do_write(ts.st, C1, "a", 0, "later", 5, 0));
	expect_content(ts.st, C1, "a", "later", 5);
	expect_fsck_clean(true);
}

Test(txn, failing_op_keeps_old_content)
{
	uint8_t old[50000], new[50000];
	struct store_txn *t = store_txn_new();
	struct store_statfs f0;

	coll1();
	pattern_fill(old, sizeof(old), 0, 1);
	pattern_fill(new, sizeof(new), 0, 2);
	OK(do_write(ts.st, C1, "o", 0, old, sizeof(old), 0));
	OK(do_omap_set(ts.st, C1, "o", "k", 1, "v", 1));
	f0 = statfs_of();
	OK(store_txn_write(t, C1, "o", 0, new, sizeof(new), 0));
	OK(store_txn_write(t, C1, "o", sizeof(new), new, 1000, 0));
	OK(store_txn_omap_clear(t, C1, "o"));
	OK(store_txn_rmattr(t, C1, "o", "missing"));
	FAILS(store_apply(ts.st, t), -ENODATA);
	expect_content(ts.st, C1, "o", old, sizeof(old));
	expect_omap("o", "k", 1, "v", 1);
	/* The blocks written for the failed txn went back to the free space. */
	cr_assert_eq(statfs_of().used, f0.used);
	cr_assert_eq(statfs_of().stored, f0.stored);
	expect_fsck_clean(true);
}

Test(txn, ops_apply_in_order_within_a_txn)
{
	uint8_t model[10000] = {0};
	uint8_t buf[10000];
	struct store_txn *t = store_txn_new();

	coll1();
	pattern_fill(buf, sizeof(buf), 0, 1);
	OK(store_txn_write(t, C1, "o", 0, buf, sizeof(buf), 0));
	OK(store_txn_truncate(t, C1, "o", 3000));
	OK(store_txn_write(t, C1, "o", 6000, buf, 100, 0));
	OK(store_txn_zero(t, C1, "o", 10, 10));
	OK(store_txn_setattr(t, C1, "o", "a", "1", 1));
	OK(store_txn_setattr(t, C1, "o", "a", "2", 1));
	OK(store_txn_omap_set(t, C1, "o", "k", 1, "x", 1));
	OK(store_txn_omap_rm(t, C1, "o", "k", 1));
	OK(store_apply(ts.st, t));
	memcpy(model, buf, 3000);
	memcpy(model + 6000, buf, 100);
	memset(model + 10, 0, 10);
	expect_content(ts.st, C1, "o", model, 6100);
	expect_attr("o", "a", "2", 1);
	cr_assert_eq(store_omap_list(ts.st, C1, "o", NULL, 0, 0, count_kv, &(int){0}), 0);
}

Test(txn, empty_txn_succeeds)
{
	OK(store_apply(ts.st, store_txn_new()));
}

struct result_slot {
	struct waiter *w;
	int r;
	int calls;
};

static void slot_done(void *arg, int r)
{
	struct result_slot *s = arg;

	s->r = r;
	s->calls++;
	waiter_done(s->w, r);
}

Test(txn, failing_txn_in_a_group_fails_alone)
{
	struct waiter w;
	struct result_slot slots[3];
	struct store_txn *t[3];
	struct store_stat s;

	coll1();
	waiter_init(&w);
	for (int i = 0; i < 3; i++) {
		slots[i] = (struct result_slot){ .w = &w, .r = 1 };
		t[i] = store_txn_new();
	}
	OK(store_txn_write(t[0], C1, "first", 0, "1", 1, 0));
	OK(store_txn_write(t[1], C1, "bad", 0, "2", 1, 0));
	OK(store_txn_create(t[1], C1, "first"));	/* exists by then: -EEXIST */
	OK(store_txn_write(t[2], C1, "third", 0, "3", 1, 0));
	waiter_add(&w, 3);
	for (int i = 0; i < 3; i++)
		OK(store_queue(ts.st, t[i], slot_done, &slots[i]));
	cr_assert(waiter_wait(&w, 60));
	cr_assert_eq(slots[0].r, 0);
	cr_assert_eq(slots[1].r, -EEXIST, "%s", errstr(slots[1].r));
	cr_assert_eq(slots[2].r, 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(slots[i].calls, 1);
	expect_content(ts.st, C1, "first", "1", 1);
	expect_content(ts.st, C1, "third", "3", 1);
	FAILS(store_stat(ts.st, C1, "bad", &s), -ENOENT);
	waiter_destroy(&w);
}

Test(txn, queue_with_null_callback)
{
	struct store_txn *t = store_txn_new();

	coll1();
	OK(store_txn_write(t, C1, "o", 0, "abc", 3, 0));
	OK(store_queue(ts.st, t, NULL, NULL));
	/* Transactions apply in queue order: a later apply sees the write. */
	OK(do_write(ts.st, C1, "o", 3, "def", 3, 0));
	expect_content(ts.st, C1, "o", "abcdef", 6);
}

#define QT_THREADS 4
#define QT_TXNS 250

struct qthread {
	int id;
	_Atomic int fired[QT_TXNS];
	_Atomic int next_expected;	/* completions in queue order */
	_Atomic int out_of_order;
	_Atomic int errors;
	struct waiter *w;
};

struct qarg {
	struct qthread *qt;
	int seq;
};

static struct qarg qargs[QT_THREADS][QT_TXNS];

static void qt_done(void *arg, int r)
{
	struct qarg *a = arg;
	struct qthread *qt = a->qt;

	if (r != 0)
		qt->errors++;
	qt->fired[a->seq]++;
	if (atomic_fetch_add(&qt->next_expected, 1) != a->seq)
		qt->out_of_order++;
	waiter_done(qt->w, r);
}

static void *qt_main(void *arg)
{
	struct qthread *qt = arg;

	for (int i = 0; i < QT_TXNS; i++) {
		struct store_txn *t = store_txn_new();
		char oid[32], val[32], last[16];
		uint32_t seq = (uint32_t)i;

		snprintf(oid, sizeof(oid), "t%d-%03d", qt->id, i);
		snprintf(val, sizeof(val), "v%d", i);
		snprintf(last, sizeof(last), "last%d", qt->id);
		if (store_txn_write(t, C1, oid, 0, oid, strlen(oid), 0) < 0 ||
		    store_txn_setattr(t, C1, oid, "a", val, strlen(val)) < 0 ||
		    /* Every txn of a thread overwrites the same bytes: the
		     * last one queued must win. */
		    store_txn_write(t, C1, last, 0, &seq, sizeof(seq), 0) < 0) {
			qt->errors++;
			store_txn_free(t);
			continue;
		}
		qargs[qt->id][i] = (struct qarg){ .qt = qt, .seq = i };
		waiter_add(qt->w, 1);
		if (store_queue(ts.st, t, qt_done, &qargs[qt->id][i]) < 0) {
			qt->errors++;
			waiter_done(qt->w, -1);
		}
	}
	return NULL;
}

Test(txn, concurrent_queue_from_threads, .timeout = 120)
{
	static struct qthread qts[QT_THREADS];
	pthread_t th[QT_THREADS];
	struct waiter w;

	coll1();
	waiter_init(&w);
	for (int i = 0; i < QT_THREADS; i++) {
		memset(&qts[i], 0, sizeof(qts[i]));
		qts[i].id = i;
		qts[i].w = &w;
		cr_assert_eq(pthread_create(&th[i], NULL, qt_main, &qts[i]), 0);
	}
	for (int i = 0; i < QT_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_assert(waiter_wait(&w, 100), "completions still pending: %ld", w.pending);
	/* Let a stray second call show up before checking. */
	usleep(100000);
	for (int i = 0; i < QT_THREADS; i++) {
		char last[16];
		uint32_t want = QT_TXNS - 1;

		cr_assert_eq(qts[i].errors, 0, "thread %d: %d errors", i, qts[i].errors);
		cr_assert_eq(qts[i].out_of_order, 0, "thread %d: %d completions out of queue order",
			     i, qts[i].out_of_order);
		for (int j = 0; j < QT_TXNS; j++)
			cr_assert_eq(qts[i].fired[j], 1, "thread %d txn %d: callback fired %d times",
				     i, j, qts[i].fired[j]);
		snprintf(last, sizeof(last), "last%d", i);
		expect_content(ts.st, C1, last, &want, sizeof(want));
		for (int j = 0; j < QT_TXNS; j += 17) {
			char oid[32], val[32];

			snprintf(oid, sizeof(oid), "t%d-%03d", i, j);
			snprintf(val, sizeof(val), "v%d", j);
			expect_content(ts.st, C1, oid, oid, strlen(oid));
			expect_attr(oid, "a", val, strlen(val));
		}
	}
	cr_assert_eq(statfs_of().objects, QT_THREADS * (QT_TXNS + 1));
	waiter_destroy(&w);
	expect_fsck_clean(true);
}

struct chain {
	struct waiter w;
	int depth;
	int result;
};

static void chain_done(void *arg, int r)
{
	struct chain *c = arg;

	if (r < 0)
		c->result = r;
	if (r == 0 && c->depth < 10) {
		/* Completions may queue more transactions. */
		struct store_txn *t = store_txn_new();
		char oid[32];

		c->depth++;
		snprintf(oid, sizeof(oid), "chain%d", c->depth);
		if (store_txn_touch(t, C1, oid) < 0 || store_queue(ts.st, t, chain_done, c) < 0) {
			c->result = -EIO;
			waiter_done(&c->w, -1);
			return;
		}
		return;
	}
	waiter_done(&c->w, r);
}

Test(txn, callback_may_queue_more)
{
	struct chain c = { .depth = 0 };
	struct store_txn *t = store_txn_new();

	coll1();
	waiter_init(&c.w);
	waiter_add(&c.w, 1);
	OK(store_txn_touch(t, C1, "chain0"));
	OK(store_queue(ts.st, t, chain_done, &c));
	cr_assert(waiter_wait(&c.w, 60), "chained completions did not finish");
	cr_assert_eq(c.result, 0, "%s", errstr(c.result));
	cr_assert_eq(c.depth, 10);
	cr_assert_eq(statfs_of().objects, 11);
	waiter_destroy(&c.w);
}

Test(txn, big_txn_of_many_ops)
{
	struct store_txn *t = store_txn_new();
	uint8_t val[64];

	coll1();
	for (int i = 0; i < 1000; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "many%04d", i);
		pattern_fill(val, sizeof(val), 0, (uint32_t)i);
		OK(store_txn_write(t, C1, oid, (uint64_t)i * 100, val, sizeof(val), 0));
		OK(store_txn_setattr(t, C1, oid, "a", val, 8));
		OK(store_txn_omap_set(t, C1, oid, val, 4, val, sizeof(val)));
	}
	cr_assert_eq(store_txn_ops(t), 3000);
	OK(store_apply(ts.st, t));
	cr_assert_eq(statfs_of().objects, 1000);
	for (int i = 0; i < 1000; i += 111) {
		char oid[16];
		uint8_t got[64];

		snprintf(oid, sizeof(oid), "many%04d", i);
		pattern_fill(val, sizeof(val), 0, (uint32_t)i);
		cr_assert_eq(store_read(ts.st, C1, oid, (uint64_t)i * 100, sizeof(got), got), 64);
		cr_assert_arr_eq(got, val, sizeof(val));
		expect_omap(oid, val, 4, val, sizeof(val));
	}
	expect_fsck_clean(false);
}

Test(txn, write_bigger_than_one_io)
{
	const size_t len = 20 * MiB + 4095;
	uint8_t *model = malloc(len + 1);

	coll1();
	model[0] = 0;
	pattern_fill(model + 1, len, 1, 9);
	OK(do_write(ts.st, C1, "o", 1, model + 1, len, 0));
	expect_content(ts.st, C1, "o", model, len + 1);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, len + 1);
	free(model);
}

static void init_batch_1(void)
{
	ts_init();
	ts.opt.batch_max = 1;
	OK(ts_mkfs_open(&ts));
}

Test(txn, batch_max_one_commits_each_alone, .init = init_batch_1)
{
	struct waiter w;

	coll1();
	waiter_init(&w);
	for (int i = 0; i < 100; i++) {
		struct store_txn *t = store_txn_new();
		uint32_t v = (uint32_t)i;

		OK(store_txn_write(t, C1, "o", 0, &v, sizeof(v), 0));
		waiter_add(&w, 1);
		OK(store_queue(ts.st, t, waiter_done_cb, &w));
	}
	cr_assert(waiter_wait(&w, 60));
	cr_assert_eq(w.failed, 0);
	{
		uint32_t want = 99;

		expect_content(ts.st, C1, "o", &want, sizeof(want));
	}
	waiter_destroy(&w);
}

/* ===== async reads ====================================================== */

TestSuite(aread, .init = ts_init_open, .fini = ts_fini);

struct aread_slot {
	struct waiter *w;
	int64_t r;
	int calls;
};

static void aread_done(void *arg, int64_t r)
{
	struct aread_slot *s = arg;

	s->r = r;
	s->calls++;
	waiter_done(s->w, r < 0 ? -1 : 0);
}

Test(aread, read_async)
{
	uint8_t model[100000], buf[100000];
	struct waiter w;
	struct aread_slot s = { .w = &w };

	coll1();
	waiter_init(&w);
	pattern_fill(model, sizeof(model), 0, 1);
	OK(do_write(ts.st, C1, "o", 0, model, sizeof(model), 0));
	waiter_add(&w, 1);
	OK(store_read_async(ts.st, C1, "o", 5, sizeof(buf), buf, aread_done, &s));
	cr_assert(waiter_wait(&w, 30));
	cr_assert_eq(s.r, (int64_t)sizeof(model) - 5);
	cr_assert_eq(s.calls, 1);
	cr_assert_arr_eq(buf, model + 5, sizeof(model) - 5);
	waiter_destroy(&w);
}

Test(aread, read_async_missing_object_enoent)
{
	uint8_t buf[16];
	struct waiter w;
	struct aread_slot s = { .w = &w, .r = 1 };
	int r;

	coll1();
	waiter_init(&w);
	waiter_add(&w, 1);
	r = store_read_async(ts.st, C1, "nope", 0, sizeof(buf), buf, aread_done, &s);
	if (r < 0) {
		/* Refused up front: the callback must not fire. */
		cr_assert_eq(r, -ENOENT, "%s", errstr(r));
		usleep(50000);
		cr_assert_eq(s.calls, 0);
	} else {
		cr_assert(waiter_wait(&w, 30));
		cr_assert_eq(s.r, -ENOENT, "%s", errstr(s.r));
		cr_assert_eq(s.calls, 1);
	}
	waiter_destroy(&w);
}

Test(aread, many_reads_in_flight)
{
	enum { N = 64, LEN = 20000 };
	static uint8_t bufs[N][LEN];
	static struct aread_slot slots[N];
	uint8_t *model = malloc(N * LEN);
	struct waiter w;

	coll1();
	waiter_init(&w);
	pattern_fill(model, N * LEN, 0, 4);
	OK(do_write(ts.st, C1, "o", 0, model, N * LEN, 0));
	OK(do_write(ts.st, C1, "small", 0, model, 100, 0));
	waiter_add(&w, N);
	for (int i = 0; i < N; i++) {
		slots[i] = (struct aread_slot){ .w = &w, .r = -1 };
		if (i % 8 == 7)
			OK(store_read_async(ts.st, C1, "small", 0, LEN, bufs[i], aread_done,
					    &slots[i]));
		else
			OK(store_read_async(ts.st, C1, "o", (uint64_t)i * LEN, LEN, bufs[i],
					    aread_done, &slots[i]));
	}
	cr_assert(waiter_wait(&w, 60));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(slots[i].calls, 1);
		if (i % 8 == 7) {
			cr_assert_eq(slots[i].r, 100);
			cr_assert_arr_eq(bufs[i], model, 100);
		} else {
			cr_assert_eq(slots[i].r, LEN, "read %d: %s", i, errstr(slots[i].r));
			cr_assert_arr_eq(bufs[i], model + (size_t)i * LEN, LEN, "read %d", i);
		}
	}
	waiter_destroy(&w);
	free(model);
}

/* opt.defer: small reads wait for the deferred call and then go to the
 * device together; a large one, or one made where nothing defers, goes at
 * once. */
static void (*deferred_fn)(void *);
static void *deferred_arg;
static int defer_calls;
static bool defer_on = true;

static bool test_defer(void (*fn)(void *arg), void *arg)
{
	if (!defer_on)
		return false;
	defer_calls++;
	deferred_fn = fn;
	deferred_arg = arg;
	return true;
}

Test(aread, small_reads_wait_for_the_deferred_call_and_go_together)
{
	enum { N = 24, LEN = 8192 };
	static uint8_t bufs[N][LEN], big[1 << 20];
	static struct aread_slot slots[N], bigslot;
	uint8_t *model = malloc(2 << 20);
	struct waiter w, wb;

	coll1();
	pattern_fill(model, 2 << 20, 0, 9);
	OK(do_write(ts.st, C1, "o", 0, model, 2 << 20, 0));
	ts.opt.defer = test_defer;
	OK(ts_reopen(&ts));
	waiter_init(&w);
	waiter_init(&wb);
	waiter_add(&w, N);
	for (int i = 0; i < N; i++) {
		slots[i] = (struct aread_slot){ .w = &w, .r = -1 };
		OK(store_read_async(ts.st, C1, "o", (uint64_t)i * 65536, LEN, bufs[i], aread_done,
				    &slots[i]));
	}
	cr_assert_eq(defer_calls, 1, "one deferred call for the whole burst");
	/* a large read does not wait */
	waiter_add(&wb, 1);
	bigslot = (struct aread_slot){ .w = &wb, .r = -1 };
	OK(store_read_async(ts.st, C1, "o", 4096, sizeof(big), big, aread_done, &bigslot));
	cr_assert(waiter_wait(&wb, 30));
	cr_assert_eq(bigslot.r, (int64_t)sizeof(big));
	cr_assert_arr_eq(big, model + 4096, sizeof(big));
	usleep(50000);
	for (int i = 0; i < N; i++)
		cr_assert_eq(slots[i].calls, 0, "read %d went before the deferred call", i);
	deferred_fn(deferred_arg);
	cr_assert(waiter_wait(&w, 30));
	for (int i = 0; i < N; i++) {
		cr_assert_eq(slots[i].r, LEN, "read %d: %s", i, errstr(slots[i].r));
		cr_assert_arr_eq(bufs[i], model + (size_t)i * 65536, LEN, "read %d", i);
	}
	/* a synchronous read never waits for a deferred call (on the OSD's
	 * loop, recovery and scrub read so: it would wait for itself) */
	cr_assert_eq(store_read(ts.st, C1, "o", 65536, LEN, bufs[0]), LEN);
	cr_assert_arr_eq(bufs[0], model + 65536, LEN);
	cr_assert_eq(defer_calls, 1);
	/* where nothing defers, a read goes at once */
	defer_on = false;
	waiter_add(&w, 1);
	slots[0] = (struct aread_slot){ .w = &w, .r = -1 };
	OK(store_read_async(ts.st, C1, "o", 0, LEN, bufs[0], aread_done, &slots[0]));
	cr_assert(waiter_wait(&w, 30));
	cr_assert_eq(slots[0].r, LEN);
	cr_assert_eq(defer_calls, 1);
	waiter_destroy(&w);
	waiter_destroy(&wb);
	free(model);
}

/* Reads asked from read callbacks (a chained client, as atoll-storebench:
 * they are submitted from the read thread): 16 chains of 40 reads each,
 * every 5th read spanning many chunks (many pieces), each read checked
 * against the model. */
struct rchain {
	struct waiter *w;
	const uint8_t *model;
	uint8_t *buf;
	int id, left, bad;
	uint64_t off, len;
};

enum { CHAIN_OBJ = 3u << 20, CHAINS = 16 };

static void rchain_next(struct rchain *c);

static void rchain_done(void *arg, int64_t r)
{
	struct rchain *c = arg;

	if (r != (int64_t)c->len || memcmp(c->buf, c->model + c->off, c->len))
		c->bad++;
	if (--c->left == 0) {
		waiter_done(c->w, 0);
		return;
	}
	rchain_next(c);
}

static void rchain_next(struct rchain *c)
{
	/* a block-aligned 4 KiB read, or a long unaligned one (many pieces) */
	uint64_t k = (uint64_t)c->left * 7919u + (uint64_t)c->id * 104729u;

	if (c->left % 5 == 0) {
		c->len = (1u << 20) + 123;
		c->off = k % (CHAIN_OBJ - c->len);
	} else {
		c->len = 4096;
		c->off = (k % (CHAIN_OBJ / 4096)) * 4096;
	}
	if (store_read_async(ts.st, C1, "o", c->off, c->len, c->buf, rchain_done, c)) {
		c->bad++;
		c->left = 1;
		rchain_done(c, -1);
	}
}

Test(aread, reads_chained_from_callbacks)
{
	uint8_t *model = malloc(CHAIN_OBJ);
	static struct rchain ch[CHAINS];
	struct waiter w;

	cr_assert(model);
	coll1();
	waiter_init(&w);
	pattern_fill(model, CHAIN_OBJ, 0, 9);
	OK(do_write(ts.st, C1, "o", 0, model, CHAIN_OBJ, 0));
	waiter_add(&w, CHAINS);
	for (int i = 0; i < CHAINS; i++) {
		ch[i] = (struct rchain){ .w = &w, .model = model, .id = i, .left = 40 };
		ch[i].buf = aligned_alloc(4096, (2u << 20));
		cr_assert(ch[i].buf);
		rchain_next(&ch[i]);
	}
	cr_assert(waiter_wait(&w, 120));
	for (int i = 0; i < CHAINS; i++) {
		cr_assert_eq(ch[i].bad, 0, "chain %d: %d bad reads", i, ch[i].bad);
		free(ch[i].buf);
	}
	waiter_destroy(&w);
	free(model);
}

/* store_read_poll_start: every small read's callback runs on the
 * poller's thread once it calls store_read_poll (async reads issued there
 * and on another thread, a synchronous read on another thread, which
 * waits for the poller), a synchronous read on the poller reaps by itself
 * (and completes the async read in flight beside it), large reads stay
 * with the read thread, and a close with reads in flight and nobody
 * polling completes them. */
struct pread_slot {
	uint8_t buf[8192];
	uint64_t off;
	int64_t r;
	pthread_t ran_on;
	char ran_name[16];
	atomic_int calls;
};

static void pread_done(void *arg, int64_t r)
{
	struct pread_slot *s = arg;

	s->r = r;
	s->ran_on = pthread_self();
	pthread_getname_np(s->ran_on, s->ran_name, sizeof(s->ran_name));
	atomic_fetch_add(&s->calls, 1);
}

struct pread_thread {
	struct pread_slot *slots;
	int n;
	bool sync;		/* one store_read per slot instead */
	atomic_bool done;
};

static void *pread_thread_main(void *arg)
{
	struct pread_thread *t = arg;

	for (int i = 0; i < t->n; i++) {
		struct pread_slot *s = &t->slots[i];

		if (t->sync) {
			s->r = store_read(ts.st, C1, "o", s->off, sizeof(s->buf), s->buf);
			atomic_fetch_add(&s->calls, 1);
		} else if (store_read_async(ts.st, C1, "o", s->off, sizeof(s->buf), s->buf,
					    pread_done, s)) {
			s->r = -1;
		}
	}
	atomic_store(&t->done, true);
	return NULL;
}

/* Polls efd until every slot's callback ran (and *done, when given). */
static void poll_until(int efd, struct pread_slot *v, int n, atomic_bool *done)
{
	for (int round = 0; round < 3000; round++) {
		struct pollfd pf = { .fd = efd, .events = POLLIN };
		int left = 0;

		for (int i = 0; i < n; i++)
			left += atomic_load(&v[i].calls) == 0;
		if (!left && (!done || atomic_load(done)))
			return;
		if (poll(&pf, 1, 10) > 0)
			store_read_poll(ts.st);
	}
	cr_assert_fail("the reads did not complete within 30 s of polling");
}

/* here: each callback ran on this thread, or on issuer's (a read whose
 * blocks came before the issuer let go of it completes there, as does
 * one answered without the device) */
static void pread_check(const uint8_t *model, struct pread_slot *v, int n, bool here,
			pthread_t issuer)
{
	for (int i = 0; i < n; i++) {
		cr_assert_eq(atomic_load(&v[i].calls), 1, "read %d", i);
		cr_assert_eq(v[i].r, (int64_t)sizeof(v[i].buf), "read %d: %s", i, errstr(v[i].r));
		cr_assert_arr_eq(v[i].buf, model + v[i].off, sizeof(v[i].buf), "read %d", i);
		if (here)
			cr_assert(pthread_equal(v[i].ran_on, pthread_self()) ||
				  pthread_equal(v[i].ran_on, issuer),
				  "read %d's callback ran on thread '%s'", i, v[i].ran_name);
	}
}

Test(aread, reads_reaped_by_a_poller)
{
	enum { N = 32, OBJ = 1 << 20 };
	static struct pread_slot mine[N], theirs[N], sync[4], late[8];
	static struct pread_thread th;
	uint8_t *model = malloc(OBJ);
	uint8_t buf[8192];
	pthread_t tid;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);

	cr_assert(model && efd >= 0);
	coll1();
	pattern_fill(model, OBJ, 0, 21);
	OK(do_write(ts.st, C1, "o", 0, model, OBJ, 0));
	OK(ts_reopen(&ts));	/* the data on its blocks, not in the log */
	OK(store_read_poll_start(ts.st, efd));
	cr_assert_eq(store_read_poll_start(ts.st, efd), -EBUSY);

	/* async reads from this thread and from another one */
	for (int i = 0; i < N; i++) {
		mine[i] = (struct pread_slot){ .off = (uint64_t)i * 20000 % (OBJ - 8192) };
		theirs[i] = (struct pread_slot){ .off = (uint64_t)i * 31337 % (OBJ - 8192) };
		OK(store_read_async(ts.st, C1, "o", mine[i].off, sizeof(mine[i].buf),
				    mine[i].buf, pread_done, &mine[i]));
	}
	th = (struct pread_thread){ .slots = theirs, .n = N };
	cr_assert_eq(pthread_create(&tid, NULL, pread_thread_main, &th), 0);
	poll_until(efd, mine, N, NULL);
	poll_until(efd, theirs, N, &th.done);
	pthread_join(tid, NULL);
	pread_check(model, mine, N, true, pthread_self());
	pread_check(model, theirs, N, true, tid);

	/* a synchronous read here reaps by itself, and the async read in
	 * flight beside it completes too */
	mine[0] = (struct pread_slot){ .off = 4096 };
	OK(store_read_async(ts.st, C1, "o", mine[0].off, sizeof(mine[0].buf), mine[0].buf,
			    pread_done, &mine[0]));
	cr_assert_eq(store_read(ts.st, C1, "o", 12345, sizeof(buf), buf), (int64_t)sizeof(buf));
	cr_assert_arr_eq(buf, model + 12345, sizeof(buf));
	poll_until(efd, mine, 1, NULL);
	pread_check(model, mine, 1, true, pthread_self());

	/* large reads (over 128 KiB) stay with the read thread: they
	 * complete with nobody polling, synchronous or not */
	{
		uint8_t *big = aligned_alloc(4096, 512 << 10);
		struct waiter w;
		struct aread_slot bs;

		cr_assert(big);
		cr_assert_eq(store_read(ts.st, C1, "o", 4096, 512 << 10, big), 512 << 10);
		cr_assert_arr_eq(big, model + 4096, 512 << 10);
		waiter_init(&w);
		bs = (struct aread_slot){ .w = &w, .r = -1 };
		waiter_add(&w, 1);
		OK(store_read_async(ts.st, C1, "o", 8192, 512 << 10, big, aread_done, &bs));
		cr_assert(waiter_wait(&w, 30));
		cr_assert_eq(bs.r, 512 << 10);
		cr_assert_arr_eq(big, model + 8192, 512 << 10);
		waiter_destroy(&w);
		free(big);
	}

	/* synchronous reads on another thread wait for this one's polling */
	for (int i = 0; i < 4; i++)
		sync[i] = (struct pread_slot){ .off = (uint64_t)i * 77777 };
	th = (struct pread_thread){ .slots = sync, .n = 4, .sync = true };
	cr_assert_eq(pthread_create(&tid, NULL, pread_thread_main, &th), 0);
	poll_until(efd, sync, 4, &th.done);
	pthread_join(tid, NULL);
	pread_check(model, sync, 4, false, tid);

	/* reads in flight at a close, nobody polling: the read thread
	 * completes them */
	for (int i = 0; i < 8; i++) {
		late[i] = (struct pread_slot){ .off = (uint64_t)i * 99991 };
		OK(store_read_async(ts.st, C1, "o", late[i].off, sizeof(late[i].buf),
				    late[i].buf, pread_done, &late[i]));
	}
	OK(ts_reopen(&ts));
	pread_check(model, late, 8, false, tid);
	close(efd);
	free(model);
}

/* store_read_async_crc: the crc it reports is the crc of the bytes it
 * returned, over every kind of range: whole blocks read from the device
 * (joined from their stored crcs), unaligned edges, holes, blocks still in
 * the write-ahead log, compressed chunks and inline objects. */
static void aread_crc_check(const char *oid, uint64_t off, size_t len)
{
	/* Block-aligned, as the OSD's buffers are, so that whole blocks are
	 * read straight into it and their crcs joined. */
	uint8_t *buf = aligned_alloc(4096, (len + 4095) / 4096 * 4096 + 4096);
	struct waiter w;
	struct aread_slot s;
	uint32_t crc = 0xdeadbeefu;

	waiter_init(&w);
	s = (struct aread_slot){ .w = &w };
	waiter_add(&w, 1);
	OK(store_read_async_crc(ts.st, C1, oid, off, len, buf, &crc, aread_done, &s));
	cr_assert(waiter_wait(&w, 30));
	cr_assert_geq(s.r, 0, "%s at %" PRIu64 "+%zu: %s", oid, off, len, errstr(s.r));
	cr_assert_eq(crc, atoll__crc32c(0, buf, (size_t)s.r), "%s at %" PRIu64 "+%zu",
		     oid, off, len);
	waiter_destroy(&w);
	free(buf);
}

Test(aread, read_crc_is_the_crc_of_what_was_read)
{
	const size_t big = 5 * MiB;
	uint8_t *model = malloc(big);
	const uint64_t offs[] = { 0, 1, 4095, 4096, 8192 + 17, 1 * MiB, 4 * MiB - 4096 };
	const size_t lens[] = { 1, 4096, 4097, 12288, 1 * MiB + 5, 4 * MiB };

	coll1();
	pattern_fill(model, big, 0, 9);
	OK(do_write(ts.st, C1, "o", 0, model, big, 0));
	OK(do_write(ts.st, C1, "o", 6 * MiB, model, 70000, 0));	/* a hole before it */
	OK(do_write(ts.st, C1, "o", 8192, model + 100, 4096, 0));	/* a logged overwrite */
	OK(do_write(ts.st, C1, "o", 40000, model + 200, 3000, 0));	/* a partial one */
	OK(do_write(ts.st, C1, "tiny", 0, model, 300, 0));
	OK(do_coll_create(ts.st, 3, STORE_COLL_COMPRESS));
	text_fill(model, 1 * MiB, 0);
	OK(do_write(ts.st, 3, "z", 0, model, 1 * MiB, 0));
	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		for (size_t j = 0; j < sizeof(lens) / sizeof(lens[0]); j++)
			aread_crc_check("o", offs[i], lens[j]);
	aread_crc_check("o", 5 * MiB - 3000, 2 * MiB);	/* data, hole, data */
	aread_crc_check("o", 0, 8 * MiB);			/* to the end */
	aread_crc_check("o", 20 * MiB, 4096);		/* past the end: 0 bytes */
	aread_crc_check("tiny", 0, 4096);
	aread_crc_check("tiny", 7, 100);
	{
		struct waiter w;
		struct aread_slot s;
		uint8_t buf[8192];
		uint32_t crc = 0;

		waiter_init(&w);
		s = (struct aread_slot){ .w = &w };
		waiter_add(&w, 1);
		OK(store_read_async_crc(ts.st, 3, "z", 4096 * 3 + 5, sizeof(buf), buf, &crc,
					aread_done, &s));
		cr_assert(waiter_wait(&w, 30));
		cr_assert_eq(s.r, (int64_t)sizeof(buf));
		cr_assert_eq(crc, atoll__crc32c(0, buf, sizeof(buf)), "compressed");
		waiter_destroy(&w);
	}
	free(model);
}

/* ===== compression ====================================================== */

TestSuite(compress, .init = ts_init_open, .fini = ts_fini);

Test(compress, collection_compresses_and_reads_back)
{
	const size_t len = 1 * MiB;
	uint8_t *model = malloc(len);
	struct store_statfs f0, f1;
	struct store_stat s;

	f0 = statfs_of();
	OK(do_coll_create(ts.st, C1, STORE_COLL_COMPRESS));
	text_fill(model, len, 0);
	OK(do_write(ts.st, C1, "o", 0, model, len, 0));
	expect_content(ts.st, C1, "o", model, len);
	f1 = statfs_of();
	cr_assert_gt(f1.compressed_saved, f0.compressed_saved, "nothing saved by compression");
	s = stat_of(C1, "o");
	cr_assert_lt(s.blocks, len / STORE_BLOCK_SIZE / 2,
		     "1 MiB of text compressed into %" PRIu64 " blocks", s.blocks);
	cr_assert_eq(f1.used - f0.used, s.blocks * STORE_BLOCK_SIZE);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, len);
	expect_fsck_clean(true);
	free(model);
}

Test(compress, write_flag_compresses_in_plain_collection)
{
	const size_t len = 512 * KiB + 100;
	uint8_t *model = malloc(len);

	coll1();
	text_fill(model, len, 0);
	OK(do_write(ts.st, C1, "o", 0, model, len, STORE_WRITE_COMPRESS));
	expect_content(ts.st, C1, "o", model, len);
	cr_assert_gt(statfs_of().compressed_saved, 0);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, len);
	free(model);
}

Test(compress, incompressible_data_reads_back)
{
	const size_t len = 300 * KiB + 1;
	uint8_t *want = calloc(1, len + 3);
	uint64_t seed = 7;

	OK(do_coll_create(ts.st, C1, STORE_COLL_COMPRESS));
	rng_fill(&seed, want + 3, len);
	OK(do_write(ts.st, C1, "o", 3, want + 3, len, STORE_WRITE_COMPRESS));
	expect_content(ts.st, C1, "o", want, len + 3);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", want, len + 3);
	expect_fsck_clean(true);
	free(want);
}

Test(compress, partial_overwrite_of_compressed_range)
{
	const size_t len = 1 * MiB;
	uint8_t *model = malloc(len + 5000);
	uint8_t patch[6000];

	OK(do_coll_create(ts.st, C1, STORE_COLL_COMPRESS));
	text_fill(model, len, 0);
	OK(do_write(ts.st, C1, "o", 0, model, len, 0));
	pattern_fill(patch, sizeof(patch), 0, 5);
	OK(do_write(ts.st, C1, "o", 300007, patch, sizeof(patch), 0));
	memcpy(model + 300007, patch, sizeof(patch));
	OK(do_write(ts.st, C1, "o", 262140, patch, 10, STORE_WRITE_COMPRESS));	/* chunk edge */
	memcpy(model + 262140, patch, 10);
	expect_content(ts.st, C1, "o", model, len);
	OK(do_zero(ts.st, C1, "o", 500000, 70000));
	memset(model + 500000, 0, 70000);
	OK(do_write(ts.st, C1, "o", len - 10, patch, 5010, 0));	/* grows it */
	memcpy(model + len - 10, patch, 5010);
	expect_content(ts.st, C1, "o", model, len + 5000);
	OK(do_truncate(ts.st, C1, "o", 700001));
	expect_content(ts.st, C1, "o", model, 700001);
	OK(ts_reopen(&ts));
	expect_content(ts.st, C1, "o", model, 700001);
	expect_fsck_clean(true);
	free(model);
}

Test(compress, removing_compressed_object_returns_savings)
{
	const size_t len = 256 * KiB;
	uint8_t *model = malloc(len);
	struct store_statfs f0 = statfs_of(), f1;

	OK(do_coll_create(ts.st, C1, STORE_COLL_COMPRESS));
	text_fill(model, len, 0);
	OK(do_write(ts.st, C1, "o", 0, model, len, 0));
	OK(do_remove(ts.st, C1, "o"));
	f1 = statfs_of();
	cr_assert_eq(f1.compressed_saved, f0.compressed_saved);
	cr_assert_eq(f1.used, f0.used);
	free(model);
}

/* ===== fsck ============================================================= */

TestSuite(fsck, .init = ts_init_open, .fini = ts_fini);

Test(fsck, fresh_store_is_clean)
{
	expect_fsck_clean(false);
	expect_fsck_clean(true);
}

Test(fsck, populated_store_is_clean)
{
	uint8_t data[70000];

	pattern_fill(data, sizeof(data), 0, 1);
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_coll_create(ts.st, 2, STORE_COLL_COMPRESS));
	for (int i = 0; i < 20; i++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "o%d", i);
		OK(do_write(ts.st, 1 + (i & 1), oid, (uint64_t)i * 1000, data,
			    (size_t)(i * 3500), i % 3 ? 0 : STORE_WRITE_COMPRESS));
		OK(do_setattr(ts.st, 1 + (i & 1), oid, "a", data, (size_t)i * 10));
		OK(do_omap_set(ts.st, 1 + (i & 1), oid, oid, strlen(oid), data, (size_t)i * 100));
	}
	expect_fsck_clean(true);
	OK(ts_reopen(&ts));
	expect_fsck_clean(true);
}

Test(fsck, report_may_be_null)
{
	OK(do_coll_create(ts.st, 1, 0));
	OK(do_write(ts.st, 1, "o", 0, "x", 1, 0));
	cr_assert_eq(store_fsck(ts.st, true, NULL, NULL), 0);
}

/* ===== reads racing writes ============================================== */

/* Writers rewrite objects, version after version, while readers read
 * them.  Every block of a version holds one repeated word naming the
 * object, the block and the version, so a reader can tell a torn block
 * (or one reused by a later write while it was being read) from a whole
 * one, and a block that went back to an older version.  Whole rewrites
 * go copy-on-write and free the old blocks (the block is small, so they
 * are reused soon); small rewrites are journaled and later applied in
 * place, under the readers' feet. */

#define RACE_OBJS	4
#define RACE_SIZE	(1 * MiB + 3 * 4096)
#define RACE_BLOCKS	(RACE_SIZE / 4096)
#define RACE_VERSIONS	25
#define RACE_SMALL_VERSIONS 600

struct race {
	bool small;		/* small in-place rewrites instead of whole ones */
	_Atomic bool stop;
	_Atomic long reads, errors, torn, backwards, mixed;
	char first_problem[256];
	pthread_mutex_t mu;
};

static struct race race;

static void race_problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void race_problem(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&race.mu);
	if (!race.first_problem[0]) {
		va_start(ap, fmt);
		vsnprintf(race.first_problem, sizeof(race.first_problem), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&race.mu);
}

static uint64_t race_word(int obj, uint64_t blk, uint64_t version)
{
	return (version << 32) | ((uint64_t)obj << 24) | blk;
}

static void race_fill(uint8_t *buf, int obj, uint64_t first_blk, uint64_t nblk, uint64_t version)
{
	for (uint64_t b = 0; b < nblk; b++) {
		uint64_t w = race_word(obj, first_blk + b, version);

		for (size_t i = 0; i < 4096; i += 8)
			memcpy(buf + b * 4096 + i, &w, 8);
	}
}

static int race_whole(struct store_txn *t, const char *oid, int obj, uint64_t v, uint8_t *buf)
{
	int r;

	race_fill(buf, obj, 0, RACE_BLOCKS, v);
	/* Sometimes compressed, sometimes in two writes. */
	if (v % 3 == 0) {
		r = store_txn_write(t, C1, oid, 0, buf, RACE_SIZE / 2, 0);
		if (!r)
			r = store_txn_write(t, C1, oid, RACE_SIZE / 2, buf + RACE_SIZE / 2,
					    RACE_SIZE - RACE_SIZE / 2, 0);
		return r;
	}
	return store_txn_write(t, C1, oid, 0, buf, RACE_SIZE, v % 3 == 1 ? STORE_WRITE_COMPRESS : 0);
}

static int race_small(struct store_txn *t, const char *oid, int obj, uint64_t v, uint8_t *buf,
		      unsigned *seed)
{
	/* One to three blocks somewhere, at most 12 KiB: journaled. */
	uint64_t nblk = 1 + rand_r(seed) % 3;
	uint64_t blk = rand_r(seed) % (RACE_BLOCKS - nblk + 1);

	race_fill(buf, obj, blk, nblk, v);
	return store_txn_write(t, C1, oid, blk * 4096, buf, nblk * 4096, 0);
}

static void *race_writer(void *arg)
{
	int first = (int)(intptr_t)arg;
	uint8_t *buf = malloc(RACE_SIZE);
	unsigned seed = (unsigned)first + 77;
	uint64_t versions = race.small ? RACE_SMALL_VERSIONS : RACE_VERSIONS;

	for (uint64_t v = 1; v <= versions; v++)
		for (int obj = first; obj < RACE_OBJS; obj += 2) {
			struct store_txn *t = store_txn_new();
			char oid[16];
			int r;

			snprintf(oid, sizeof(oid), "race%d", obj);
			r = race.small ? race_small(t, oid, obj, v, buf, &seed)
				       : race_whole(t, oid, obj, v, buf);
			if (!r)
				r = store_apply(ts.st, t);
			else
				store_txn_free(t);
			if (r) {
				race.errors++;
				race_problem("writing %s version %" PRIu64 ": %s", oid, v, errstr(r));
			}
		}
	free(buf);
	return NULL;
}

/* last[]: the newest version this reader has seen of each block. */
static void race_check(const uint8_t *buf, int64_t n, int obj, uint64_t *last)
{
	uint64_t first_v = UINT64_MAX;
	bool mixed = false;

	race.reads++;
	if (n != RACE_SIZE) {
		race.errors++;
		race_problem("reading race%d: %s, want %u bytes", obj, errstr(n), (unsigned)RACE_SIZE);
		return;
	}
	for (uint64_t b = 0; b < RACE_BLOCKS; b++) {
		uint64_t w, v;

		memcpy(&w, buf + b * 4096, 8);
		for (size_t i = 8; i < 4096; i += 8)
			if (memcmp(buf + b * 4096 + i, &w, 8) != 0) {
				race.torn++;
				race_problem("race%d block %" PRIu64 " is torn at byte %zu", obj, b, i);
				return;
			}
		if ((w & 0xffffffffu) != race_word(obj, b, 0)) {
			race.torn++;
			race_problem("race%d block %" PRIu64 " holds block %" PRIu64 " of race%d", obj,
				     b, w & 0xffffff, (int)((w >> 24) & 0xff));
			return;
		}
		v = w >> 32;
		if (first_v == UINT64_MAX)
			first_v = v;
		else if (v != first_v)
			mixed = true;
		if (v < last[b]) {
			race.backwards++;
			race_problem("race%d block %" PRIu64 ": version %" PRIu64 " read after %" PRIu64,
				     obj, b, v, last[b]);
			return;
		}
		last[b] = v;
	}
	if (mixed)
		race.mixed++;
}

static void *race_reader(void *arg)
{
	uint8_t *buf = malloc(RACE_SIZE);
	uint64_t (*last)[RACE_BLOCKS] = calloc(RACE_OBJS, sizeof(*last));
	unsigned seed = (unsigned)(intptr_t)arg;

	while (!race.stop) {
		int obj = (int)(rand_r(&seed) % RACE_OBJS);
		char oid[16];

		snprintf(oid, sizeof(oid), "race%d", obj);
		race_check(buf, store_read(ts.st, C1, oid, 0, RACE_SIZE, buf), obj, last[obj]);
	}
	free(last);
	free(buf);
	return NULL;
}

static void init_race(void)
{
	ts_init();
	ts.opt.block_size = 64 * MiB;
	OK(ts_mkfs_open(&ts));
	memset(&race, 0, sizeof(race));
	pthread_mutex_init(&race.mu, NULL);
}

static void run_race(bool small)
{
	pthread_t w[2], r[2];
	uint8_t *buf = malloc(RACE_SIZE);

	race.small = small;
	coll1();
	for (int obj = 0; obj < RACE_OBJS; obj++) {
		char oid[16];

		snprintf(oid, sizeof(oid), "race%d", obj);
		race_fill(buf, obj, 0, RACE_BLOCKS, 0);
		OK(do_write(ts.st, C1, oid, 0, buf, RACE_SIZE, 0));
	}
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pthread_create(&r[i], NULL, race_reader, (void *)(intptr_t)(i + 1)), 0);
		cr_assert_eq(pthread_create(&w[i], NULL, race_writer, (void *)(intptr_t)i), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	race.stop = true;
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	fprintf(stderr, "race (%s rewrites): %ld reads, %ld errors, %ld torn, %ld backwards, "
		"%ld mixed versions\n", small ? "small" : "whole", (long)race.reads,
		(long)race.errors, (long)race.torn, (long)race.backwards, (long)race.mixed);
	free(buf);
}

TestSuite(race, .init = init_race, .fini = ts_fini, .timeout = 240);

Test(race, reads_during_rewrites_see_whole_blocks)
{
	run_race(false);
	cr_assert_eq(race.errors, 0, "%s", race.first_problem);
	cr_assert_eq(race.torn, 0, "%s", race.first_problem);
	cr_assert_eq(race.backwards, 0, "%s", race.first_problem);
	cr_assert_gt(race.reads, 10);
	expect_fsck_clean(true);
}

/* Not spelled out by store.h, but a transaction is atomic: one read
 * should not see half of it. */
Test(race, one_read_sees_one_version)
{
	run_race(false);
	cr_assert_eq(race.errors + race.torn + race.backwards, 0, "%s", race.first_problem);
	cr_assert_eq(race.mixed, 0, "%ld reads saw parts of two versions of an object",
		     (long)race.mixed);
}

Test(race, reads_during_small_rewrites_see_whole_blocks)
{
	run_race(true);
	cr_assert_eq(race.errors, 0, "%s", race.first_problem);
	cr_assert_eq(race.torn, 0, "%s", race.first_problem);
	cr_assert_eq(race.backwards, 0, "%s", race.first_problem);
	cr_assert_gt(race.reads, 10);
	OK(ts_reopen(&ts));
	expect_fsck_clean(true);
}

/* ---- writes by reference (store_txn_write_ref) --------------------------- */

static void count_release(void *arg)
{
	(*(int *)arg)++;
}

Test(txn, write_ref_aligned_and_not)
{
	const size_t big = 1u << 20, small = 8192;
	uint8_t *a = NULL, *b = NULL, *u = malloc(small + 1);
	int released = 0;
	struct store_txn *t;

	cr_assert_not_null(u);
	cr_assert_eq(posix_memalign((void **)&a, STORE_BLOCK_SIZE, big), 0);
	cr_assert_eq(posix_memalign((void **)&b, STORE_BLOCK_SIZE, small), 0);
	pattern_fill(a, big, 0, 3);
	pattern_fill(b, small, 0, 4);
	pattern_fill(u + 1, small, 0, 5);
	cr_assert(store_write_ref_ok(a, 0, big));
	cr_assert(!store_write_ref_ok(u + 1, 0, small));
	cr_assert(!store_write_ref_ok(a, 100, small));
	cr_assert(!store_write_ref_ok(a, 0, 1000));
	coll1();

	/* big: prewritten from the caller's buffer; small: journaled from it;
	 * unaligned: copied, released at once */
	t = store_txn_new();
	OK(store_txn_write_ref(t, C1, "big", 0, a, big, 0, NULL, count_release, &released));
	OK(store_txn_write_ref(t, C1, "small", 4096, b, small, 0, NULL, count_release, &released));
	OK(store_txn_write_ref(t, C1, "copy", 0, u + 1, small, 0, NULL, count_release, &released));
	cr_assert_eq(released, 1, "the copied write is released at once");
	OK(store_apply(ts.st, t));
	cr_assert_eq(released, 3, "each write is released once, by the time it completes");
	expect_content(ts.st, C1, "big", a, big);
	{
		uint8_t *want = calloc(1, 4096 + small);

		cr_assert_not_null(want);
		memcpy(want + 4096, b, small);
		expect_content(ts.st, C1, "small", want, 4096 + small);
		free(want);
	}
	expect_content(ts.st, C1, "copy", u + 1, small);

	/* a txn freed without being queued releases too */
	t = store_txn_new();
	OK(store_txn_write_ref(t, C1, "never", 0, a, big, 0, NULL, count_release, &released));
	store_txn_free(t);
	cr_assert_eq(released, 4);
	/* a failing txn releases and changes nothing */
	t = store_txn_new();
	OK(store_txn_write_ref(t, C1, "big", 0, b, small, 0, NULL, count_release, &released));
	OK(store_txn_remove(t, C1, "missing"));
	FAILS(store_apply(ts.st, t), -ENOENT);
	cr_assert_eq(released, 5);
	expect_content(ts.st, C1, "big", a, big);
	free(a);
	free(b);
	free(u);
	expect_fsck_clean(true);
}

/* A big by-reference write with the caller's block crcs: the store takes
 * them as the blocks' checksums (prewrite) instead of computing them, so
 * right ones read back, and a wrong one makes the read of that block fail
 * its check (and fsck report it): the crcs are used, not recomputed. */
Test(txn, write_ref_takes_the_callers_block_crcs)
{
	const size_t big = 1u << 20, nblk = big / STORE_BLOCK_SIZE;
	uint32_t *crcs = malloc(nblk * sizeof(uint32_t));
	uint8_t *a = NULL, *back = malloc(big);
	int released = 0;
	struct store_txn *t;

	cr_assert(crcs && back);
	cr_assert_eq(posix_memalign((void **)&a, STORE_BLOCK_SIZE, big), 0);
	pattern_fill(a, big, 0, 7);
	for (size_t i = 0; i < nblk; i++)
		crcs[i] = atoll__crc32c(0, a + i * STORE_BLOCK_SIZE, STORE_BLOCK_SIZE);
	coll1();
	t = store_txn_new();
	OK(store_txn_write_ref(t, C1, "given", 0, a, big, 0, crcs, count_release, &released));
	OK(store_apply(ts.st, t));
	expect_content(ts.st, C1, "given", a, big);

	crcs[5] ^= 1;	/* as if block 5's bytes had changed after the pass */
	t = store_txn_new();
	OK(store_txn_write_ref(t, C1, "wrong", 0, a, big, 0, crcs, count_release, &released));
	OK(store_apply(ts.st, t));
	cr_assert_eq(released, 2);
	cr_expect_eq(store_read(ts.st, C1, "wrong", 0, STORE_BLOCK_SIZE, back),
		     (int64_t)STORE_BLOCK_SIZE, "block 0's crc is right");
	cr_expect_eq(store_read(ts.st, C1, "wrong", 5 * STORE_BLOCK_SIZE, STORE_BLOCK_SIZE, back),
		     -EIO, "block 5 was stored with the caller's wrong crc");
	free(crcs);
	free(back);
	free(a);
}
