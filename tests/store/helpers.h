/*
 * helpers.h - shared scaffolding for the store engine tests.
 *
 * Every test works on a store of its own in a fresh temporary directory.
 * The Criterion runner makes one root directory per test program (a report
 * hook in the parent process, so that a crashed test leaves nothing
 * behind either); each test's fixture makes its directory under that root
 * and removes it in .fini, which Criterion runs after a failed assertion
 * too.
 *
 * Fixtures:  TestSuite(x, .init = ts_init_open, .fini = ts_fini) gives each
 * test a freshly made and opened store in `ts`; .init = ts_init gives only
 * the directory and default options, for tests that need other options or
 * make several stores.
 */
#ifndef ATOLL_TESTS_STORE_HELPERS_H
#define ATOLL_TESTS_STORE_HELPERS_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "store.h"

#define TS_BLOCK_SIZE_DEFAULT	(128ull << 20)

/* One store under test: its files and options.  opt.block_path and
 * opt.kv_path point into this struct. */
struct ts {
	char dir[PATH_MAX];		/* this test's temporary directory */
	char block_path[PATH_MAX];
	char kv_path[PATH_MAX];
	struct store_options opt;
	struct store *st;		/* NULL while closed */
};

/* The fixture's store (one per test process). */
extern struct ts ts;

/* Fixtures. */
void ts_init(void);		/* temp dir + default options, no store */
void ts_init_open(void);	/* ts_init, then mkfs and open */
void ts_fini(void);		/* close whatever is open, remove the dir */

/* Fills t with default options for a store named `name` inside dir. */
void ts_setup(struct ts *t, const char *dir, const char *name);
int ts_mkfs(struct ts *t);
int ts_open(struct ts *t);	/* opens with t->opt */
int ts_mkfs_open(struct ts *t);
void ts_close(struct ts *t);
/* Closes and opens again (read-write); returns store_open's result. */
int ts_reopen(struct ts *t);

/* Opens t's store in a child process, runs work on it and exits without
 * closing (as an OSD that died after its completions); returns work's
 * result as the child saw it (-EIO if the open failed, -ECHILD if the
 * child died).  The parent's t stays closed. */
int ts_run_and_die(struct ts *t, int (*work)(struct store *st, void *arg), void *arg);

/* Removes a directory tree (or a file); 0 or -errno. */
int rm_tree(const char *path);

/* Deterministic random numbers (splitmix64). */
uint64_t rng_next(uint64_t *s);
uint64_t rng_below(uint64_t *s, uint64_t n);	/* [0, n), n > 0 */
void rng_fill(uint64_t *s, void *buf, size_t len);
/* Seed from $ATOLL_TEST_SEED, or else from the clock; printed to stderr
 * so that a failure can be replayed. */
uint64_t test_seed(const char *what);

/* Bytes that depend on (tag, absolute offset): any window of the result
 * identifies where it came from. */
void pattern_fill(void *buf, size_t len, uint64_t off, uint32_t tag);
/* Compressible bytes: short runs of text. */
void text_fill(void *buf, size_t len, uint64_t off);
bool all_zero(const void *buf, size_t len);

/* Single-op transactions through store_apply (they return its result,
 * or the builder's error). */
int do_coll_create(struct store *st, uint64_t coll, uint32_t flags);
int do_coll_remove(struct store *st, uint64_t coll);
int do_create(struct store *st, uint64_t coll, const char *oid);
int do_touch(struct store *st, uint64_t coll, const char *oid);
int do_write(struct store *st, uint64_t coll, const char *oid,
	     uint64_t off, const void *data, size_t len, uint32_t flags);
int do_zero(struct store *st, uint64_t coll, const char *oid,
	    uint64_t off, uint64_t len);
int do_truncate(struct store *st, uint64_t coll, const char *oid, uint64_t size);
int do_remove(struct store *st, uint64_t coll, const char *oid);
int do_setattr(struct store *st, uint64_t coll, const char *oid,
	       const char *name, const void *val, size_t len);
int do_rmattr(struct store *st, uint64_t coll, const char *oid, const char *name);
int do_omap_set(struct store *st, uint64_t coll, const char *oid,
		const void *key, size_t klen, const void *val, size_t vlen);
int do_omap_rm(struct store *st, uint64_t coll, const char *oid,
	       const void *key, size_t klen);
int do_omap_clear(struct store *st, uint64_t coll, const char *oid);

/* Reads the whole object into a malloc'd buffer (caller frees; a zero
 * size gives a non-NULL buffer).  0 or the first error. */
int read_all(struct store *st, uint64_t coll, const char *oid,
	     uint8_t **buf, uint64_t *size);
/* Size from store_stat, or a negative errno. */
int64_t obj_size(struct store *st, uint64_t coll, const char *oid);

/* store_fsck with its reports collected. */
struct fsck_log {
	int problems;		/* store_fsck's return */
	size_t n;
	char **msgs;
};
void fsck_run(struct store *st, bool deep, struct fsck_log *log);
bool fsck_mentions(const struct fsck_log *log, const char *needle);
void fsck_print(const struct fsck_log *log);	/* to stderr */
void fsck_log_free(struct fsck_log *log);

/* Counts completions: waiter_add() before queueing, waiter_done() from
 * the callback, waiter_wait() blocks until all are done. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	long pending;
	long failed;		/* completions with r < 0 */
};
void waiter_init(struct waiter *w);
void waiter_destroy(struct waiter *w);
void waiter_add(struct waiter *w, long n);
void waiter_done(struct waiter *w, int r);
/* waiter_done as a store completion callback (arg: the waiter). */
void waiter_done_cb(void *arg, int r);
/* Waits up to timeout_s seconds; false on timeout. */
bool waiter_wait(struct waiter *w, int timeout_s);

/* Finds the first occurrence of pat in a file (skipping holes); returns
 * its offset or -1. */
int64_t file_find(const char *path, const void *pat, size_t patlen);
/* The same, from byte offset from on. */
int64_t file_find_from(const char *path, const void *pat, size_t patlen, uint64_t from);
/* XORs the byte at off with mask and syncs the file; 0 or -errno. */
int file_flip_byte(const char *path, uint64_t off, uint8_t mask);

/* Criterion message helper: "r = -5 (Input/output error)". */
const char *errstr(int64_t r);

/* Asserts that the object has exactly `len` bytes equal to want (reports
 * the first differing offset).  Call from a test. */
void expect_content(struct store *st, uint64_t coll, const char *oid,
		    const void *want, uint64_t len);

/* Assertions on 0-or-negative-errno results (for test files, which
 * include criterion.h). */
#define OK(expr) do { \
	int64_t ok_r_ = (expr); \
	cr_assert_eq(ok_r_, 0, "%s: %s", #expr, errstr(ok_r_)); \
} while (0)
#define FAILS(expr, err) do { \
	int64_t fails_r_ = (expr); \
	cr_assert_eq(fails_r_, (int64_t)(err), "%s: %s, want %s", #expr, \
		     errstr(fails_r_), errstr(err)); \
} while (0)

#endif
