/*
 * storebench_run.c - the runner of atoll-storebench: the op engine that
 * keeps a number of ops in flight against the store and times each from
 * issue to completion, the results (percentiles) and their output, and
 * the store helpers (create or reuse a store in a folder, drop its
 * caches).  The workloads and the command line are in storebench.c.
 *
 * The main thread alone issues ops, unless a run chains (a completion
 * issues the next op itself, as an event-driven caller would);
 * completions, on the store's threads, only record the result and hand
 * the slot back, so the number in flight is exact.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mono.h"
#include "storebench.h"

#define STAMP_MAGIC	0x61746f6c6c62656eull	/* "atollben" */

volatile sig_atomic_t sb_interrupted;

void sb_on_signal(int sig)
{
	(void)sig;
	sb_interrupted = 1;
}

/* xorshift64*: the main thread's random numbers (offsets, object picks). */
/* Per thread: completions issue reads from the store's thread too.  A
 * thread's stream starts from the seed mixed with a per-thread number. */
static __thread uint64_t rng_state;
static uint64_t rng_seed = 1;
static unsigned rng_threads;

void sb_rng_init(uint64_t seed)
{
	rng_seed = seed ? seed : 1;
	rng_state = rng_seed;
}

uint64_t sb_rnd(void)
{
	uint64_t x = rng_state;

	if (!x) {
		unsigned k = __atomic_add_fetch(&rng_threads, 1, __ATOMIC_RELAXED);

		x = (rng_seed ^ (0x9E3779B97F4A7C15ull * k)) | 1;
	}

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void sb_fill_random(void *buf, size_t len)
{
	uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = sb_rnd();
}

/* Each 4 KiB block of the read and overwrite sets starts with a stamp
 * naming its object and block, so the read test can tell right data from
 * wrong data (it does not compare whole blocks: the store's crc does). */
void sb_stamp_block(void *blk, uint64_t obj, uint64_t bno)
{
	uint64_t s[2] = { STAMP_MAGIC ^ obj, bno };

	memcpy(blk, s, sizeof(s));
}

static bool stamp_ok(const void *blk, uint64_t obj, uint64_t bno)
{
	uint64_t s[2];

	memcpy(s, blk, sizeof(s));
	return s[0] == (STAMP_MAGIC ^ obj) && s[1] == bno;
}

/* mkdir -p: creates dir and its missing parents. */
static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	size_t n = strlen(dir);

	if (n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, n + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

char sb_tmp_dir[PATH_MAX];	/* our own temporary folder, removed at exit */

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb; (void)type; (void)ftw;
	remove(path);
	return 0;
}

void sb_rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void sb_cleanup_tmp(void)
{
	if (sb_tmp_dir[0] && !sb_opt.keep)
		sb_rm_tree(sb_tmp_dir);
	sb_tmp_dir[0] = 0;
}

void sb_die(const char *fmt, ...)
{
	va_list ap;

	if (sb_interrupted) {
		/* Ctrl-C or SIGTERM: whatever failed, failed because of it. */
		fputs("atoll-storebench: sb_interrupted\n", stderr);
		sb_cleanup_tmp();
		exit(130);
	}
	fputs("atoll-storebench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	sb_cleanup_tmp();
	exit(1);
}

const char *sb_errstr(int r)
{
	return strerror(r < 0 ? -r : r);
}

/* ---- output --------------------------------------------------------- */

void sb_metric(const char *name, double v, const char *unit)
{
	if (v == (double)(int64_t)v)
		printf("store\t%s\t%" PRId64 "\t%s\n", name, (int64_t)v, unit);
	else if (v < 100 && v > -100)
		printf("store\t%s\t%.3f\t%s\n", name, v, unit);
	else
		printf("store\t%s\t%.1f\t%s\n", name, v, unit);
	fflush(stdout);
}

void sb_human(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* ---- the op engine ---------------------------------------------------- */


static __thread int chain_depth;	/* nested submits from completions */

static void slot_done(struct slot *s, int r)
{
	struct run *run = s->run;
	uint64_t t = mono_now_ns() - s->t0;

	pthread_mutex_lock(&run->lock);
	if (r < 0) {
		if (!run->first_err)
			run->first_err = r;
	} else {
		if (run->nlat == run->cap) {
			size_t cap = run->cap ? run->cap * 2 : 65536;
			uint64_t *n = realloc(run->lat, cap * sizeof(*n));

			if (n) {
				run->lat = n;
				run->cap = cap;
			}
		}
		if (run->nlat < run->cap)
			run->lat[run->nlat++] = t;
		run->done++;
	}
	if (run->chain && chain_depth < 4 && !run->first_err && !sb_interrupted &&
	    (!run->deadline || mono_now_ns() < run->deadline) &&
	    (!run->limit_ops || run->seq < run->limit_ops)) {
		uint64_t seq = run->seq++;
		int rc;

		pthread_mutex_unlock(&run->lock);
		chain_depth++;
		s->t0 = mono_now_ns();
		rc = run->submit(run, s, seq);
		chain_depth--;
		if (rc >= 0)
			return;
		pthread_mutex_lock(&run->lock);
		if (!run->first_err)
			run->first_err = rc;
	}
	run->free_stack[run->nfree++] = s->idx;
	pthread_cond_signal(&run->cond);
	pthread_mutex_unlock(&run->lock);
}

/* Completion of a transaction (store commit thread). */
void sb_txn_done(void *arg, int r)
{
	slot_done(arg, r);
}

/* Completion of an asynchronous read (store read-completion thread). */
void sb_read_done(void *arg, int64_t n)
{
	struct slot *s = arg;
	struct run *run = s->run;

	if (n >= 0 && run->verify_reads &&
	    ((size_t)n != run->expect_len || !stamp_ok(s->buf, s->obj, s->bno))) {
		pthread_mutex_lock(&run->lock);
		run->verify_errors++;
		pthread_mutex_unlock(&run->lock);
	}
	slot_done(s, n < 0 ? (int)n : 0);
}

void sb_run_init(struct run *r, const char *what, struct store *st, unsigned qd,
		 size_t bufsize)
{
	memset(r, 0, sizeof(*r));
	r->what = what;
	r->st = st;
	r->qd = qd;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->slots = calloc(qd, sizeof(*r->slots));
	r->free_stack = calloc(qd, sizeof(*r->free_stack));
	if (!r->slots || !r->free_stack)
		sb_die("out of memory");
	for (unsigned i = 0; i < qd; i++) {
		r->slots[i].run = r;
		r->slots[i].idx = i;
		if (bufsize) {
			r->slots[i].buf = aligned_alloc(4096, bufsize);
			if (!r->slots[i].buf)
				sb_die("out of memory");
		}
		r->free_stack[r->nfree++] = qd - 1 - i;
	}
}

void sb_run_fini(struct run *r)
{
	for (unsigned i = 0; i < r->qd; i++)
		free(r->slots[i].buf);
	free(r->slots);
	free(r->free_stack);
	free(r->lat);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
}

/* Waits (lock held) for a free slot, or until every slot is back when
 * drain is set.  Gives up with a clear message if nothing completes for
 * sb_opt.stall_s seconds: a stuck store must not hang the benchmark or CI. */
static void run_wait(struct run *r, bool drain)
{
	uint64_t last_done = r->done, since = mono_now_ns();

	while (drain ? r->nfree < r->qd : r->nfree == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		if (r->done != last_done) {
			last_done = r->done;
			since = mono_now_ns();
		} else if (mono_now_ns() - since > (uint64_t)sb_opt.stall_s * 1000000000ull) {
			pthread_mutex_unlock(&r->lock);
			sb_die("%s: no op completed for %u s with %u in flight; the store seems stuck",
			       r->what, sb_opt.stall_s, r->qd - r->nfree);
		}
	}
}

/* Runs ops until the time or count limit, keeping qd in flight; returns
 * 0 or the first error of any op. */
int sb_run_go(struct run *r)
{
	uint64_t start = mono_now_ns();
	uint64_t deadline = r->seconds > 0 ? start + (uint64_t)(r->seconds * 1e9) : 0;
	int err = 0;

	pthread_mutex_lock(&r->lock);
	r->deadline = deadline;
	r->seq = 0;
	for (;;) {
		struct slot *s;
		uint64_t t;
		int rc;

		run_wait(r, false);
		if (r->first_err || sb_interrupted)
			break;
		t = mono_now_ns();
		if ((deadline && t >= deadline) || (r->limit_ops && r->seq >= r->limit_ops))
			break;
		s = &r->slots[r->free_stack[--r->nfree]];
		uint64_t seq = r->seq++;

		pthread_mutex_unlock(&r->lock);

		s->t0 = mono_now_ns();
		rc = r->submit(r, s, seq);

		pthread_mutex_lock(&r->lock);
		if (rc < 0) {
			r->free_stack[r->nfree++] = s->idx;
			if (!r->first_err)
				r->first_err = rc;
			break;
		}
	}
	run_wait(r, true);
	err = r->first_err;
	r->elapsed_ns = mono_now_ns() - start;
	pthread_mutex_unlock(&r->lock);
	if (!err && sb_interrupted)
		err = -EINTR;
	return err;
}

int sb_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}


struct result sb_run_result(struct run *r, size_t op_bytes)
{
	struct result res = { 0 };

	res.ops = r->done;
	res.secs = r->elapsed_ns / 1e9;
	if (res.secs > 0) {
		res.iops = r->done / res.secs;
		res.mbps = (double)r->done * op_bytes / MiB / res.secs;
	}
	if (r->nlat) {
		qsort(r->lat, r->nlat, sizeof(*r->lat), sb_cmp_u64);
		res.p50_us = r->lat[(r->nlat - 1) * 50 / 100] / 1e3;
		res.p99_us = r->lat[(r->nlat - 1) * 99 / 100] / 1e3;
		res.max_us = r->lat[r->nlat - 1] / 1e3;
	}
	return res;
}

void sb_report(const char *prefix, const struct result *res)
{
	char name[128];

#define M(suffix, v, unit) do { \
	snprintf(name, sizeof(name), "%s_%s", prefix, suffix); \
	sb_metric(name, v, unit); } while (0)
	M("MBps", res->mbps, "MB/s");
	M("IOPS", res->iops, "IOPS");
	M("lat_p50_us", res->p50_us, "us");
	M("lat_p99_us", res->p99_us, "us");
	M("ops", (double)res->ops, "ops");
#undef M
}

static void fmt_lat(char *out, size_t n, double us)
{
	if (us >= 10000)
		snprintf(out, n, "%.1f ms", us / 1000);
	else if (us >= 1000)
		snprintf(out, n, "%.2f ms", us / 1000);
	else
		snprintf(out, n, "%.0f us", us);
}

void sb_human_result(const char *what, const struct result *res)
{
	char p50[32], p99[32];

	fmt_lat(p50, sizeof(p50), res->p50_us);
	fmt_lat(p99, sizeof(p99), res->p99_us);
	sb_human("  %-22s %9.1f MB/s %9.0f IOPS   p50 %-9s p99 %-9s (%" PRIu64 " ops in %.1f s)\n",
		 what, res->mbps, res->iops, p50, p99, res->ops, res->secs);
}

/* ---- store helpers ---------------------------------------------------- */


void sb_paths_of(struct store_paths *p, const char *dir)
{
	if (snprintf(p->block, sizeof(p->block), "%s/block", dir) >= (int)sizeof(p->block) ||
	    snprintf(p->kv, sizeof(p->kv), "%s/kv", dir) >= (int)sizeof(p->kv))
		sb_die("folder name '%s' is too long", dir);
}

void sb_opts_of(struct store_options *so, const struct store_paths *p, uint64_t block_size,
		uint64_t kv_max)
{
	memset(so, 0, sizeof(*so));
	so->size_of = sizeof(*so);
	so->block_path = p->block;
	so->kv_path = p->kv;
	so->block_size = block_size;
	so->kv_max = kv_max;
	so->flushers = sb_opt.flushers;
}

static bool exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* Opens the store in dir, creating it (block_size, kv_max) first when the
 * folder holds none. */
struct store *sb_open_or_create(const char *dir, uint64_t block_size, uint64_t kv_max,
				bool *created)
{
	struct store_paths p;
	struct store_options so;
	struct store *st;
	int r;

	sb_paths_of(&p, dir);
	sb_opts_of(&so, &p, block_size, kv_max);
	*created = false;
	if (!exists(p.block) && !exists(p.kv)) {
		if (mkdir_p(dir) < 0)
			sb_die("cannot create folder '%s': %s", dir, strerror(errno));
		/* Real blocks behind the file, as an OSD has (see store.h). */
		so.prefill = !sb_opt.no_zero;
		if (so.prefill)
			sb_human("  creating a store of %" PRIu64 " MiB in '%s' (writing it whole once)...\n",
				 block_size / MiB, dir);
		r = store_mkfs(&so);
		so.prefill = false;
		if (r < 0)
			sb_die("cannot create a store in '%s': %s (a file system without O_DIRECT, "
			       "such as tmpfs, cannot hold one; pick another folder with --dir)",
			       dir, sb_errstr(r));
		*created = true;
	}
	r = store_open(&so, &st);
	if (r < 0)
		sb_die("cannot open the store in '%s': %s; remove the folder or pick another with --dir",
		       dir, sb_errstr(r));
	return st;
}

/* Drops the page-cache pages of a file (or of every file in a folder), so
 * that a reopened store starts as cold as after a reboot, without
 * touching the caches of anything else on the machine. */
static int drop_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	int fd;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return 0;
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}

void sb_drop_cache(const char *dir)
{
	nftw(dir, drop_one, 16, FTW_PHYS);
}

void sb_ensure_coll(struct store *st, uint64_t coll)
{
	struct store_txn *t;
	int r = store_coll_exists(st, coll);

	if (r < 0)
		sb_die("cannot look up collection 0x%" PRIx64 ": %s", coll, sb_errstr(r));
	if (r)
		return;
	t = store_txn_new();
	if (!t)
		sb_die("out of memory");
	r = store_txn_coll_create(t, coll, 0);
	if (r == 0)
		r = store_apply(st, t);
	else
		store_txn_free(t);
	if (r < 0)
		sb_die("cannot create collection 0x%" PRIx64 ": %s", coll, sb_errstr(r));
}

static int count_one(void *arg, const char *oid)
{
	(void)arg; (void)oid;
	return 0;
}

uint64_t sb_count_objects(struct store *st, uint64_t coll)
{
	int r = store_list(st, coll, NULL, 0, count_one, NULL);

	if (r < 0)
		sb_die("cannot list collection 0x%" PRIx64 ": %s", coll, sb_errstr(r));
	return (uint64_t)r;
}

uint64_t sb_free_bytes(struct store *st)
{
	struct store_statfs sf;
	int r = store_statfs(st, &sf);

	if (r < 0)
		sb_die("statfs failed: %s", sb_errstr(r));
	return sf.free;
}

/* "P.0000000042": formatted by hand, as snprintf costs about 1% of a
 * 4 KiB read here, which is the benchmark's own work, not the store's. */
void sb_obj_name(char *out, size_t n, char prefix, uint64_t i)
{
	if (n < 13 || i >= 10000000000ull) {
		snprintf(out, n, "%c.%010" PRIu64, prefix, i);
		return;
	}
	out[0] = prefix;
	out[1] = '.';
	for (int k = 11; k >= 2; k--, i /= 10)
		out[k] = (char)('0' + i % 10);
	out[12] = '\0';
}
