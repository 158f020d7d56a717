/*
 * helpers.c - temporary stores, random data and small conveniences for
 * the store engine tests (see helpers.h).
 *
 * Cleanup has two layers: each test's .fini removes its own directory, and
 * the runner (parent) process removes the per-program root after all tests,
 * which catches directories left by a test that crashed or timed out.
 */
#include "helpers.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROOT_ENV "ATOLL_STORE_TEST_ROOT"

struct ts ts;

static char root_dir[PATH_MAX];

static const char *tmp_base(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/* Runs in the runner process before any test is started: the workers
 * inherit the environment, so they find the root there. */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	(void)set;
	snprintf(root_dir, sizeof(root_dir), "%s/atoll-store-tests-XXXXXX", tmp_base());
	if (!mkdtemp(root_dir)) {
		root_dir[0] = '\0';
		return;
	}
	setenv(ROOT_ENV, root_dir, 1);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	if (root_dir[0])
		rm_tree(root_dir);
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	if (type == FTW_DP)
		return rmdir(path) ? -errno : 0;
	return unlink(path) ? -errno : 0;
}

int ts_run_and_die(struct ts *t, int (*work)(struct store *st, void *arg), void *arg)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct store *st;
		int r;

		if (store_open(&t->opt, &st) != 0)
			_exit(EIO);
		r = work(st, arg);
		_exit(r < 0 ? -r : r);	/* no close */
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -ECHILD;
	return -WEXITSTATUS(status);
}

int rm_tree(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
		return -errno;
	return 0;
}

void ts_setup(struct ts *t, const char *dir, const char *name)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "%s", dir);
	snprintf(t->block_path, sizeof(t->block_path), "%s/%s.block", dir, name);
	snprintf(t->kv_path, sizeof(t->kv_path), "%s/%s.kv", dir, name);
	t->opt.size_of = sizeof(t->opt);
	t->opt.block_path = t->block_path;
	t->opt.kv_path = t->kv_path;
	t->opt.block_size = TS_BLOCK_SIZE_DEFAULT;
}

void ts_init(void)
{
	const char *root = getenv(ROOT_ENV);
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/atoll-store-XXXXXX",
		 root && *root ? root : tmp_base());
	cr_assert_not_null(mkdtemp(dir), "mkdtemp '%s': %s", dir, strerror(errno));
	ts_setup(&ts, dir, "st");
}

void ts_init_open(void)
{
	int r;

	ts_init();
	r = ts_mkfs_open(&ts);
	cr_assert_eq(r, 0, "store_mkfs/store_open: %s", errstr(r));
}

void ts_fini(void)
{
	ts_close(&ts);
	if (ts.dir[0])
		rm_tree(ts.dir);
	ts.dir[0] = '\0';
}

int ts_mkfs(struct ts *t)
{
	return store_mkfs(&t->opt);
}

int ts_open(struct ts *t)
{
	return store_open(&t->opt, &t->st);
}

int ts_mkfs_open(struct ts *t)
{
	int r = ts_mkfs(t);

	if (r < 0)
		return r;
	return ts_open(t);
}

void ts_close(struct ts *t)
{
	store_close(t->st);
	t->st = NULL;
}

int ts_reopen(struct ts *t)
{
	ts_close(t);
	return ts_open(t);
}

/* ---- random data -------------------------------------------------------- */

uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return rng_next(s) % n;
}

void rng_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = rng_next(s);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = rng_next(s);

		memcpy(p, &v, len);
	}
}

uint64_t test_seed(const char *what)
{
	const char *env = getenv("ATOLL_TEST_SEED");
	uint64_t seed;

	if (env && *env) {
		seed = strtoull(env, NULL, 0);
	} else {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		seed = (uint64_t)now.tv_sec * 1000000007ull + (uint64_t)now.tv_nsec
		       + (uint64_t)getpid();
	}
	fprintf(stderr, "%s: seed %" PRIu64 " (replay with ATOLL_TEST_SEED=%" PRIu64 ")\n",
		what, seed, seed);
	return seed;
}

void pattern_fill(void *buf, size_t len, uint64_t off, uint32_t tag)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++) {
		uint64_t pos = off + i;
		/* 8-byte words: the position's word index mixed with the tag,
		 * so that no two words of a file or of two tags repeat. */
		uint64_t w = ((pos >> 3) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)tag << 32) ^ tag;

		p[i] = (uint8_t)(w >> ((pos & 7) * 8));
	}
}

void text_fill(void *buf, size_t len, uint64_t off)
{
	static const char text[] =
		"the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs. ";
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)text[(off + i) % (sizeof(text) - 1)];
}

bool all_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- single-op transactions -------------------------------------------- */

/* Builds one txn with `build`'s op, applies it; a builder error frees the
 * txn and is returned as is. */
#define ONE_OP(st, call) do { \
	struct store_txn *t_ = store_txn_new(); \
	int r_; \
	if (!t_) \
		return -ENOMEM; \
	r_ = call; \
	if (r_ < 0) { \
		store_txn_free(t_); \
		return r_; \
	} \
	return store_apply(st, t_); \
} while (0)

int do_coll_create(struct store *st, uint64_t coll, uint32_t flags)
{
	ONE_OP(st, store_txn_coll_create(t_, coll, flags));
}

int do_coll_remove(struct store *st, uint64_t coll)
{
	ONE_OP(st, store_txn_coll_remove(t_, coll));
}

int do_create(struct store *st, uint64_t coll, const char *oid)
{
	ONE_OP(st, store_txn_create(t_, coll, oid));
}

int do_touch(struct store *st, uint64_t coll, const char *oid)
{
	ONE_OP(st, store_txn_touch(t_, coll, oid));
}

int do_write(struct store *st, uint64_t coll, const char *oid,
	     uint64_t off, const void *data, size_t len, uint32_t flags)
{
	ONE_OP(st, store_txn_write(t_, coll, oid, off, data, len, flags));
}

int do_zero(struct store *st, uint64_t coll, const char *oid,
	    uint64_t off, uint64_t len)
{
	ONE_OP(st, store_txn_zero(t_, coll, oid, off, len));
}

int do_truncate(struct store *st, uint64_t coll, const char *oid, uint64_t size)
{
	ONE_OP(st, store_txn_truncate(t_, coll, oid, size));
}

int do_remove(struct store *st, uint64_t coll, const char *oid)
{
	ONE_OP(st, store_txn_remove(t_, coll, oid));
}

int do_setattr(struct store *st, uint64_t coll, const char *oid,
	       const char *name, const void *val, size_t len)
{
	ONE_OP(st, store_txn_setattr(t_, coll, oid, name, val, len));
}

int do_rmattr(struct store *st, uint64_t coll, const char *oid, const char *name)
{
	ONE_OP(st, store_txn_rmattr(t_, coll, oid, name));
}

int do_omap_set(struct store *st, uint64_t coll, const char *oid,
		const void *key, size_t klen, const void *val, size_t vlen)
{
	ONE_OP(st, store_txn_omap_set(t_, coll, oid, key, klen, val, vlen));
}

int do_omap_rm(struct store *st, uint64_t coll, const char *oid,
	       const void *key, size_t klen)
{
	ONE_OP(st, store_txn_omap_rm(t_, coll, oid, key, klen));
}

int do_omap_clear(struct store *st, uint64_t coll, const char *oid)
{
	ONE_OP(st, store_txn_omap_clear(t_, coll, oid));
}

/* ---- reads -------------------------------------------------------------- */

int64_t obj_size(struct store *st, uint64_t coll, const char *oid)
{
	struct store_stat s;
	int r = store_stat(st, coll, oid, &s);

	return r < 0 ? r : (int64_t)s.size;
}

int read_all(struct store *st, uint64_t coll, const char *oid,
	     uint8_t **buf, uint64_t *size)
{
	int64_t sz = obj_size(st, coll, oid);
	uint64_t done = 0;
	uint8_t *b;

	*buf = NULL;
	*size = 0;
	if (sz < 0)
		return (int)sz;
	b = malloc(sz ? (size_t)sz : 1);
	if (!b)
		return -ENOMEM;
	while (done < (uint64_t)sz) {
		size_t want = (uint64_t)sz - done > (8u << 20) ? (8u << 20)
							       : (size_t)((uint64_t)sz - done);
		int64_t n = store_read(st, coll, oid, done, want, b + done);

		if (n < 0) {
			free(b);
			return (int)n;
		}
		if (n == 0) {
			free(b);
			return -EPIPE;	/* shorter than its stat size */
		}
		done += (uint64_t)n;
	}
	*buf = b;
	*size = (uint64_t)sz;
	return 0;
}

/* ---- fsck --------------------------------------------------------------- */

static void fsck_collect(void *arg, const char *problem)
{
	struct fsck_log *log = arg;
	char **m = realloc(log->msgs, (log->n + 1) * sizeof(*m));

	if (!m)
		return;
	log->msgs = m;
	log->msgs[log->n] = strdup(problem ? problem : "(null)");
	if (log->msgs[log->n])
		log->n++;
}

void fsck_run(struct store *st, bool deep, struct fsck_log *log)
{
	memset(log, 0, sizeof(*log));
	log->problems = store_fsck(st, deep, fsck_collect, log);
}

bool fsck_mentions(const struct fsck_log *log, const char *needle)
{
	for (size_t i = 0; i < log->n; i++)
		if (strstr(log->msgs[i], needle))
			return true;
	return false;
}

void fsck_print(const struct fsck_log *log)
{
	fprintf(stderr, "fsck: %d problem(s)\n", log->problems);
	for (size_t i = 0; i < log->n; i++)
		fprintf(stderr, "  fsck: %s\n", log->msgs[i]);
}

void fsck_log_free(struct fsck_log *log)
{
	for (size_t i = 0; i < log->n; i++)
		free(log->msgs[i]);
	free(log->msgs);
	memset(log, 0, sizeof(*log));
}

/* ---- waiting for completions ------------------------------------------- */

void waiter_init(struct waiter *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->pending = 0;
	w->failed = 0;
}

void waiter_destroy(struct waiter *w)
{
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
}

void waiter_add(struct waiter *w, long n)
{
	pthread_mutex_lock(&w->mu);
	w->pending += n;
	pthread_mutex_unlock(&w->mu);
}

void waiter_done(struct waiter *w, int r)
{
	pthread_mutex_lock(&w->mu);
	w->pending--;
	if (r < 0)
		w->failed++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

void waiter_done_cb(void *arg, int r)
{
	waiter_done(arg, r);
}

bool waiter_wait(struct waiter *w, int timeout_s)
{
	struct timespec until;
	bool ok = true;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_s;
	pthread_mutex_lock(&w->mu);
	while (w->pending > 0 && ok)
		ok = pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT;
	ok = w->pending <= 0;
	pthread_mutex_unlock(&w->mu);
	return ok;
}

/* ---- raw file access (for corruption tests) ---------------------------- */

int64_t file_find(const char *path, const void *pat, size_t patlen)
{
	return file_find_from(path, pat, patlen, 0);
}

int64_t file_find_from(const char *path, const void *pat, size_t patlen, uint64_t from)
{
	const size_t chunk = 1u << 20;
	int64_t found = -1;
	uint8_t *buf;
	off_t off = (off_t)from, end;
	int fd;

	if (patlen == 0 || patlen > chunk)
		return -1;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	buf = malloc(chunk + patlen);
	if (!buf)
		goto out_close;
	end = lseek(fd, 0, SEEK_END);
	while (off < end) {
		off_t data = lseek(fd, off, SEEK_DATA);
		ssize_t n;

		if (data < 0)
			break;
		/* Each read overlaps the next by patlen - 1 bytes, so that a
		 * match across two reads is seen. */
		off = data;
		n = pread(fd, buf, chunk + patlen - 1, off);
		if (n <= 0)
			break;
		if ((size_t)n >= patlen) {
			uint8_t *hit = memmem(buf, (size_t)n, pat, patlen);

			if (hit) {
				found = off + (hit - buf);
				break;
			}
		}
		off += (off_t)chunk;
	}
	free(buf);
out_close:
	close(fd);
	return found;
}

int file_flip_byte(const char *path, uint64_t off, uint8_t mask)
{
	uint8_t b;
	int r = 0;
	int fd = open(path, O_RDWR);

	if (fd < 0)
		return -errno;
	if (pread(fd, &b, 1, (off_t)off) != 1) {
		r = -EIO;
		goto out_close;
	}
	b ^= mask;
	if (pwrite(fd, &b, 1, (off_t)off) != 1 || fsync(fd) < 0)
		r = -EIO;
out_close:
	close(fd);
	return r;
}

const char *errstr(int64_t r)
{
	static __thread char bufs[4][96];
	static __thread unsigned next;
	char *b = bufs[next++ % 4];

	if (r < 0)
		snprintf(b, sizeof(bufs[0]), "r = %" PRId64 " (%s)", r, strerror((int)-r));
	else
		snprintf(b, sizeof(bufs[0]), "r = %" PRId64, r);
	return b;
}

void expect_content(struct store *st, uint64_t coll, const char *oid,
		    const void *want, uint64_t len)
{
	uint8_t *got;
	uint64_t size;
	int r = read_all(st, coll, oid, &got, &size);

	cr_assert_eq(r, 0, "reading '%s' (coll %" PRIu64 "): %s", oid, coll, errstr(r));
	if (size != len) {
		free(got);
		cr_assert_fail("'%s' (coll %" PRIu64 ") has size %" PRIu64 ", want %" PRIu64,
			       oid, coll, size, len);
	}
	for (uint64_t i = 0; i < len; i++) {
		uint8_t g = got[i], w = ((const uint8_t *)want)[i];

		if (g != w) {
			free(got);
			cr_assert_fail("'%s' (coll %" PRIu64 ") differs first at byte %" PRIu64
				       ": got 0x%02x, want 0x%02x", oid, coll, i, g, w);
		}
	}
	free(got);
}
