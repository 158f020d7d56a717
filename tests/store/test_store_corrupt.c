/*
 * test_store_corrupt.c - damaged bytes are found, never returned.
 *
 * Each test writes something recognisable, closes the store, flips one
 * byte of it where it lives (in the block file's data area, or inside a
 * value of the kv), reopens, and checks that reading that item fails with
 * -EIO, that fsck reports a problem naming the object, and that the rest
 * of the store still works.
 *
 * The kv is edited with the LMDB API directly.  The store's database
 * names are its own business, so the tests find them by walking the
 * unnamed main database (whose keys are the sub-database names) and search
 * every one of them for the pattern.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

#define C1 1u
#define KiB 1024ull
#define MiB (1024ull * 1024ull)

TestSuite(corrupt, .init = ts_init_open, .fini = ts_fini);

static void expect_fsck_names(bool deep, const char *oid)
{
	struct fsck_log log;

	fsck_run(ts.st, deep, &log);
	fsck_print(&log);
	cr_assert_gt(log.problems, 0, "fsck(deep=%d) found no problem", deep);
	cr_assert_eq((size_t)log.problems, log.n, "fsck returned %d but reported %zu",
		     log.problems, log.n);
	cr_assert(fsck_mentions(&log, oid), "no fsck report names '%s'", oid);
	fsck_log_free(&log);
}

/* ---- the block file --------------------------------------------------- */

/* Closes the store, flips a byte `into` bytes after the start of pat in
 * every copy of pat in the block file (a small write's bytes are also in
 * the log region, which a closed store's checkpoint has left behind),
 * reopens. */
static void flip_in_block(const void *pat, size_t patlen, size_t into)
{
	int64_t at;
	int copies = 0;

	ts_close(&ts);
	for (uint64_t from = 0; (at = file_find_from(ts.block_path, pat, patlen, from)) >= 0;
	     from = (uint64_t)at + 1) {
		OK(file_flip_byte(ts.block_path, (uint64_t)at + into, 0x01));
		copies++;
	}
	cr_assert_gt(copies, 0, "pattern not found in the block file");
	OK(ts_open(&ts));
}

Test(corrupt, data_block_read_eio)
{
	const size_t len = 64 * KiB;
	uint8_t *data = malloc(len), *buf = malloc(len);

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, len, 0, 0xc0ffee);
	OK(do_write(ts.st, C1, "victim-data", 0, data, len, 0));
	OK(do_write(ts.st, C1, "bystander", 0, data, 8192, 0));
	/* Damage block 2 of the object (bytes 8192..12287). */
	flip_in_block(data + 8192, 64, 100);

	FAILS(store_read(ts.st, C1, "victim-data", 0, len, buf), -EIO);
	FAILS(store_read(ts.st, C1, "victim-data", 8192 + 50, 100, buf), -EIO);
	/* The blocks around it still read. */
	cr_assert_eq(store_read(ts.st, C1, "victim-data", 0, 8192, buf), 8192);
	cr_assert_arr_eq(buf, data, 8192);
	cr_assert_eq(store_read(ts.st, C1, "victim-data", 12288, len - 12288, buf),
		     (int64_t)(len - 12288));
	cr_assert_arr_eq(buf, data + 12288, len - 12288);
	expect_content(ts.st, C1, "bystander", data, 8192);
	expect_fsck_names(true, "victim-data");
	free(data);
	free(buf);
}

struct aslot {
	struct waiter w;
	int64_t r;
};

static void aread_done(void *arg, int64_t r)
{
	struct aslot *s = arg;

	s->r = r;
	waiter_done(&s->w, 0);
}

Test(corrupt, data_block_read_async_eio)
{
	uint8_t data[16384], buf[16384];
	struct aslot s = { .r = 1 };
	int r;

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0xa5a5);
	OK(do_write(ts.st, C1, "victim-async", 0, data, sizeof(data), 0));
	flip_in_block(data + 4096, 64, 4000);
	waiter_init(&s.w);
	waiter_add(&s.w, 1);
	r = store_read_async(ts.st, C1, "victim-async", 0, sizeof(buf), buf, aread_done, &s);
	if (r == 0) {
		cr_assert(waiter_wait(&s.w, 30));
		FAILS(s.r, -EIO);
	} else {
		FAILS(r, -EIO);
	}
	waiter_destroy(&s.w);
}

Test(corrupt, store_stays_usable_after_eio)
{
	uint8_t data[8192], buf[8192];

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0xbeef);
	OK(do_write(ts.st, C1, "victim-usable", 0, data, sizeof(data), 0));
	flip_in_block(data, 64, 7);
	FAILS(store_read(ts.st, C1, "victim-usable", 0, sizeof(buf), buf), -EIO);
	/* A bad checksum on read is not a device error: writes go on. */
	OK(do_write(ts.st, C1, "other", 0, data, sizeof(data), 0));
	expect_content(ts.st, C1, "other", data, sizeof(data));
	/* Rewriting the damaged block puts good data in a new one. */
	OK(do_write(ts.st, C1, "victim-usable", 0, data, 4096, 0));
	expect_content(ts.st, C1, "victim-usable", data, sizeof(data));
	/* Removing the damaged object leaves a clean store. */
	OK(do_remove(ts.st, C1, "victim-usable"));
	OK(ts_reopen(&ts));
	cr_assert_eq(store_fsck(ts.st, true, NULL, NULL), 0);
}

Test(corrupt, compressed_data_read_eio)
{
	const size_t len = 256 * KiB;
	uint8_t *data = malloc(len), *buf = malloc(len);
	uint64_t seed = 99;

	OK(do_coll_create(ts.st, C1, STORE_COLL_COMPRESS));
	/* Random bytes first (lz4 keeps them as literals, so they can be
	 * found in the block file), then text that compresses well. */
	rng_fill(&seed, data, 64);
	text_fill(data + 64, len - 64, 0);
	OK(do_write(ts.st, C1, "victim-lz4", 0, data, len, 0));
	flip_in_block(data, 32, 40);
	FAILS(store_read(ts.st, C1, "victim-lz4", 0, len, buf), -EIO);
	expect_fsck_names(true, "victim-lz4");
	free(data);
	free(buf);
}

Test(corrupt, shallow_fsck_does_not_read_data)
{
	uint8_t data[8192];
	struct fsck_log log;

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0x5eed);
	OK(do_write(ts.st, C1, "victim-shallow", 0, data, sizeof(data), 0));
	flip_in_block(data, 64, 1);
	/* Metadata is intact: the shallow check passes, the deep one does not. */
	fsck_run(ts.st, false, &log);
	cr_assert_eq(log.problems, 0);
	fsck_log_free(&log);
	expect_fsck_names(true, "victim-shallow");
}

/* ---- the kv ------------------------------------------------------------ */

/* Flips one byte (at `into` past the start of pat) of every kv value that
 * contains pat, in any database.  Writes the databases' names into
 * where_found.  Returns the number of values changed. */
static int kv_flip(const char *kv_path, const void *pat, size_t patlen, size_t into,
		   char *where_found, size_t wlen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi main_dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	char names[32][64];
	int nnames = 0, changed = 0, rc;

	where_found[0] = '\0';
	cr_assert_eq(mdb_env_create(&env), 0);
	cr_assert_eq(mdb_env_set_maxdbs(env, 64), 0);
	/* At least the store's map size; LMDB keeps the larger one. */
	cr_assert_eq(mdb_env_set_mapsize(env, 64 * MiB), 0);
	rc = mdb_env_open(env, kv_path, 0, 0600);
	cr_assert_eq(rc, 0, "mdb_env_open '%s': %s", kv_path, mdb_strerror(rc));
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);

	/* The unnamed database: its keys name the others. */
	cr_assert_eq(mdb_dbi_open(txn, NULL, 0, &main_dbi), 0);
	cr_assert_eq(mdb_cursor_open(txn, main_dbi, &cur), 0);
	while ((rc = mdb_cursor_get(cur, &k, &v, nnames ? MDB_NEXT : MDB_FIRST)) == 0) {
		cr_assert_lt(nnames, 32);
		cr_assert_lt(k.mv_size, sizeof(names[0]));
		memcpy(names[nnames], k.mv_data, k.mv_size);
		names[nnames][k.mv_size] = '\0';
		nnames++;
	}
	cr_assert_eq(rc, MDB_NOTFOUND);
	mdb_cursor_close(cur);
	cr_assert_gt(nnames, 0, "the kv has no named databases");

	for (int i = 0; i < nnames; i++) {
		MDB_dbi dbi;

		if (mdb_dbi_open(txn, names[i], 0, &dbi) != 0)
			continue;	/* a plain key of the main database */
		cr_assert_eq(mdb_cursor_open(txn, dbi, &cur), 0);
		for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
			uint8_t *hit = memmem(v.mv_data, v.mv_size, pat, patlen);
			MDB_val nv;
			uint8_t *copy;

			if (!hit)
				continue;
			copy = malloc(v.mv_size);
			cr_assert_not_null(copy);
			memcpy(copy, v.mv_data, v.mv_size);
			copy[(size_t)(hit - (uint8_t *)v.mv_data) + into] ^= 0x04;
			nv.mv_data = copy;
			nv.mv_size = v.mv_size;
			/* Replace the value in place: no key comparison, so the
			 * store's key order does not matter here. */
			rc = mdb_cursor_put(cur, &k, &nv, MDB_CURRENT);
			cr_assert_eq(rc, 0, "mdb_cursor_put: %s", mdb_strerror(rc));
			free(copy);
			changed++;
			snprintf(where_found + strlen(where_found), wlen - strlen(where_found),
				 "%s%s", where_found[0] ? "," : "", names[i]);
		}
		mdb_cursor_close(cur);
	}
	rc = mdb_txn_commit(txn);
	cr_assert_eq(rc, 0, "mdb_txn_commit: %s", mdb_strerror(rc));
	mdb_env_close(env);
	return changed;
}

static void flip_in_kv(const void *pat, size_t patlen, size_t into)
{
	char where[256];
	int n;

	ts_close(&ts);
	n = kv_flip(ts.kv_path, pat, patlen, into, where, sizeof(where));
	cr_assert_eq(n, 1, "pattern found in %d kv values (databases: %s)", n, where);
	fprintf(stderr, "corrupted a value in kv database '%s'\n", where);
	OK(ts_open(&ts));
}

Test(corrupt, inline_data_read_eio)
{
	uint8_t data[200], buf[200];

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0x1111);
	OK(do_write(ts.st, C1, "victim-inline", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, C1, "bystander", 0, data, 100, 0));
	{
		struct store_stat s;

		OK(store_stat(ts.st, C1, "victim-inline", &s));
		cr_assert(s.is_inline);
	}
	flip_in_kv(data, sizeof(data), 150);
	FAILS(store_read(ts.st, C1, "victim-inline", 0, sizeof(buf), buf), -EIO);
	expect_content(ts.st, C1, "bystander", data, 100);
	expect_fsck_names(false, "victim-inline");
}

static int attr_count(void *arg, const char *name, const void *val, size_t len)
{
	(void)name;
	(void)val;
	(void)len;
	++*(int *)arg;
	return 0;
}

Test(corrupt, attr_value_getattr_eio)
{
	uint8_t val[300];
	void *v;
	size_t len;
	int n = 0;

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(val, sizeof(val), 0, 0x2222);
	OK(do_write(ts.st, C1, "victim-attr", 0, "data", 4, 0));
	OK(do_touch(ts.st, C1, "bystander"));
	OK(do_setattr(ts.st, C1, "victim-attr", "user.bad", val, sizeof(val)));
	OK(do_setattr(ts.st, C1, "bystander", "user.good", val, 10));
	flip_in_kv(val, sizeof(val), 123);
	FAILS(store_getattr(ts.st, C1, "victim-attr", "user.bad", &v, &len), -EIO);
	FAILS(store_attrs(ts.st, C1, "victim-attr", attr_count, &n), -EIO);
	OK(store_getattr(ts.st, C1, "bystander", "user.good", &v, &len));
	free(v);
	expect_fsck_names(false, "victim-attr");
}

struct om_walk {
	int n;
};

static int om_count(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	((struct om_walk *)arg)->n++;
	return 0;
}

Test(corrupt, omap_value_get_eio)
{
	uint8_t val[500];
	struct om_walk w = {0};
	void *v;
	size_t len;

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(val, sizeof(val), 0, 0x3333);
	OK(do_touch(ts.st, C1, "victim-omap"));
	OK(do_touch(ts.st, C1, "bystander"));
	OK(do_omap_set(ts.st, C1, "victim-omap", "a-good", 6, "fine", 4));
	OK(do_omap_set(ts.st, C1, "victim-omap", "b-bad", 5, val, sizeof(val)));
	OK(do_omap_set(ts.st, C1, "bystander", "k", 1, val, 20));
	flip_in_kv(val, sizeof(val), 250);
	FAILS(store_omap_get(ts.st, C1, "victim-omap", "b-bad", 5, &v, &len), -EIO);
	FAILS(store_omap_list(ts.st, C1, "victim-omap", NULL, 0, 0, om_count, &w), -EIO);
	OK(store_omap_get(ts.st, C1, "victim-omap", "a-good", 6, &v, &len));
	free(v);
	OK(store_omap_get(ts.st, C1, "bystander", "k", 1, &v, &len));
	free(v);
	expect_fsck_names(false, "victim-omap");
}

/* Deletes every kv record whose key contains pat (in any database);
 * returns how many. */
static int kv_delete_keys(const char *kv_path, const void *pat, size_t patlen)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi main_dbi;
	MDB_cursor *cur;
	MDB_val k, v;
	char names[32][64];
	int nnames = 0, deleted = 0, rc;

	cr_assert_eq(mdb_env_create(&env), 0);
	cr_assert_eq(mdb_env_set_maxdbs(env, 64), 0);
	cr_assert_eq(mdb_env_set_mapsize(env, 64 * MiB), 0);
	cr_assert_eq(mdb_env_open(env, kv_path, 0, 0600), 0);
	cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	cr_assert_eq(mdb_dbi_open(txn, NULL, 0, &main_dbi), 0);
	cr_assert_eq(mdb_cursor_open(txn, main_dbi, &cur), 0);
	while (mdb_cursor_get(cur, &k, &v, nnames ? MDB_NEXT : MDB_FIRST) == 0 && nnames < 32) {
		snprintf(names[nnames], sizeof(names[0]), "%.*s", (int)k.mv_size,
			 (const char *)k.mv_data);
		nnames++;
	}
	mdb_cursor_close(cur);
	for (int i = 0; i < nnames; i++) {
		MDB_dbi dbi;

		if (mdb_dbi_open(txn, names[i], 0, &dbi) != 0)
			continue;
		cr_assert_eq(mdb_cursor_open(txn, dbi, &cur), 0);
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		while (rc == 0) {
			if (memmem(k.mv_data, k.mv_size, pat, patlen)) {
				cr_assert_eq(mdb_cursor_del(cur, 0), 0);
				deleted++;
				rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
				if (rc == 0)
					continue;	/* now at the next record */
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
				continue;
			}
			rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
		}
		mdb_cursor_close(cur);
	}
	cr_assert_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	return deleted;
}

/* An onode lost from the kv leaves its chunks, attributes and omap behind,
 * and its blocks allocated to nothing: fsck must see that. */
Test(corrupt, fsck_finds_records_of_a_lost_object)
{
	uint8_t data[3 * 4096];
	struct fsck_log log;
	struct store_stat s;

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0x4444);
	OK(do_write(ts.st, C1, "lost-object", 0, data, sizeof(data), 0));
	OK(do_setattr(ts.st, C1, "lost-object", "a", "v", 1));
	OK(do_omap_set(ts.st, C1, "lost-object", "k", 1, "v", 1));
	OK(do_write(ts.st, C1, "bystander", 0, data, sizeof(data), 0));
	ts_close(&ts);
	cr_assert_eq(kv_delete_keys(ts.kv_path, "lost-object", 11), 1,
		     "the object name should be in exactly one kv key");
	OK(ts_open(&ts));
	FAILS(store_stat(ts.st, C1, "lost-object", &s), -ENOENT);
	expect_content(ts.st, C1, "bystander", data, sizeof(data));
	fsck_run(ts.st, false, &log);
	fsck_print(&log);
	cr_assert_geq(log.problems, 3, "want reports of orphan chunks, attrs, omap, blocks or "
		      "counters; got %d", log.problems);
	fsck_log_free(&log);
}

/* Flips byte at of the 64 bytes at needle, wherever a small write put
 * them: in the write-ahead log region of the block and/or already applied
 * in place (every copy in the block file), or in a kv value. */
static void damage_small_write(const uint8_t *needle, size_t at)
{
	char where[256];
	int n = kv_flip(ts.kv_path, needle, 64, at, where, sizeof(where));
	int copies = 0;
	int64_t pos;

	cr_assert_eq(n, 0, "the small write is in %d kv values (%s): the log keeps it in the "
		     "block", n, where);
	while ((pos = file_find(ts.block_path, needle, 64)) >= 0) {
		OK(file_flip_byte(ts.block_path, (uint64_t)pos + at, 0x04));
		copies++;
	}
	cr_assert_gt(copies, 0, "the small write is nowhere in the block");
	fprintf(stderr, "the small write had %d copies in the block\n", copies);
}

/* A small overwrite sits in the log (its block checked against the crc in
 * the record) and, after a checkpoint, in place: wherever its bytes are,
 * damage to them must come out as -EIO. */
Test(corrupt, journaled_small_write_read_eio)
{
	uint8_t data[64 * 1024], patch[4096], buf[64 * 1024];

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0x6666);
	pattern_fill(patch, sizeof(patch), 0, 0x7777);
	OK(do_write(ts.st, C1, "victim-journal", 0, data, sizeof(data), 0));
	OK(do_write(ts.st, C1, "victim-journal", 8192, patch, sizeof(patch), 0));
	memcpy(data + 8192, patch, sizeof(patch));
	expect_content(ts.st, C1, "victim-journal", data, sizeof(data));
	ts_close(&ts);

	damage_small_write(patch + 1000, 10);
	OK(ts_open(&ts));
	FAILS(store_read(ts.st, C1, "victim-journal", 0, sizeof(buf), buf), -EIO);
	cr_assert_eq(store_read(ts.st, C1, "victim-journal", 0, 8192, buf), 8192);
	cr_assert_arr_eq(buf, data, 8192);
	expect_fsck_names(true, "victim-journal");
}

/* Opens the store in a child process, applies one write to "victim-slot", and exits
 * without closing: as if the OSD died right after the completion.  What
 * the store journaled stays journaled. */
static void write_then_die(uint64_t off, const void *data, size_t len)
{
	pid_t pid;
	int status;

	ts_close(&ts);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct store *st;

		if (store_open(&ts.opt, &st) != 0 ||
		    do_write(st, C1, "victim-slot", off, data, len, 0) != 0)
			_exit(1);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* A logged write damaged before its record is replayed: a later record
 * proves the damaged one was complete (record N+1 is written only after
 * N's flush), so its block must read as -EIO, not as the old data. */
Test(corrupt, journal_slot_damaged_before_replay_read_eio)
{
	uint8_t data[64 * 1024], patch[4096], later[4096], buf[64 * 1024];

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0x8888);
	pattern_fill(patch, sizeof(patch), 0, 0x9999);
	pattern_fill(later, sizeof(later), 0, 0xaaaa);
	OK(do_write(ts.st, C1, "victim-slot", 0, data, sizeof(data), 0));
	write_then_die(4096, patch, sizeof(patch));
	write_then_die(32768, later, sizeof(later));
	memcpy(data + 32768, later, sizeof(later));
	damage_small_write(patch + 2000, 5);
	/* Opening replays the log; the damaged block must not become
	 * good-looking data, and one bad block must not keep the store shut. */
	OK(ts_open(&ts));
	FAILS(store_read(ts.st, C1, "victim-slot", 4096, 4096, buf), -EIO);
	cr_assert_eq(store_read(ts.st, C1, "victim-slot", 8192, 8192, buf), 8192);
	cr_assert_arr_eq(buf, data + 8192, 8192);
	cr_assert_eq(store_read(ts.st, C1, "victim-slot", 32768, 4096, buf), 4096);
	cr_assert_arr_eq(buf, later, 4096);
	expect_fsck_names(true, "victim-slot");
	OK(ts_reopen(&ts));
	FAILS(store_read(ts.st, C1, "victim-slot", 0, sizeof(buf), buf), -EIO);
}

/* The last record with a bad block and nothing after it is what a crash
 * during its write leaves (a torn write, never acknowledged): replay drops
 * it, the object keeps its old content and fsck is clean.  (Damage to the
 * very last record after its acknowledgement looks the same and loses that
 * one write; doc/store.md says so.) */
Test(corrupt, torn_last_log_record_dropped)
{
	uint8_t data[64 * 1024], patch[4096], buf[64 * 1024];

	OK(do_coll_create(ts.st, C1, 0));
	pattern_fill(data, sizeof(data), 0, 0xbbbb);
	pattern_fill(patch, sizeof(patch), 0, 0xcccc);
	OK(do_write(ts.st, C1, "victim-slot", 0, data, sizeof(data), 0));
	write_then_die(4096, patch, sizeof(patch));
	damage_small_write(patch + 100, 3);
	OK(ts_open(&ts));
	cr_assert_eq(store_read(ts.st, C1, "victim-slot", 0, sizeof(buf), buf), (ssize_t)sizeof(buf));
	cr_assert_arr_eq(buf, data, sizeof(buf));
	{
		struct fsck_log log;

		fsck_run(ts.st, true, &log);
		fsck_print(&log);
		cr_assert_eq(log.problems, 0, "fsck found %d problems", log.problems);
		fsck_log_free(&log);
	}
}
