/*
 * storebench.c - atoll-storebench: the OSD store engine measured on a disk.
 *
 * Four workloads, each selectable, run against a real store (a block file
 * plus its kv folder) in one folder:
 *   write         whole 4 MiB objects, one transaction each, N in flight
 *   overwrite     4 KiB writes at random 4 KiB-aligned offsets of existing
 *                 objects, 32 in flight
 *   overwrite-kv  the same with an attribute and a pg-log update each (what
 *                 an OSD's replicated write adds; not part of all)
 *   read          4 KiB random reads with store_read_async, 32 in flight,
 *                 over a read set (4 GiB by default) written beforehand,
 *                 the store reopened first so that reads go to the disk
 *   smallobjects  1,000,000 small objects; then, in a fresh process, the
 *                 time store_open takes and the resident memory after it
 * Every op is counted when its completion fires (for writes: durable) and
 * its latency goes into an array that is sorted for p50/p99 at the end.
 *
 * The main thread alone issues ops; completions (on the store's threads)
 * only record the result and hand the slot back.  That keeps the store's
 * threads free of benchmark work and makes the number in flight exact.
 *
 * Output: one "store<TAB>metric<TAB>value<TAB>unit" line per figure on
 * stdout (the shape of ../shared/bench/disklimit.sh, for bench/
 * store-bench.sh), a human summary on stderr.  MB means MiB here, as in
 * disklimit.sh (fio's KiB / 1024), except the RSS figures, which are in
 * MB of 10^6 bytes to match the "300 MB" target literally.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "mono.h"
#include "store.h"

/* jemalloc's settings of atoll-osd (osd/main.c): freed pages are kept, not
 * given back after 10 s, so the engine is measured as the OSD runs it.
 * With the default decay the log's blocks (a 4 KiB copy each in the
 * index, freed by every checkpoint) and the checkpoint's buffer were
 * fresh pages again and again: ~6% of the samples in page faults, 4 KiB
 * durable writes 57,000 against 68,000-75,000 IOPS with these settings
 * (MALLOC_CONF in the environment still overrides them). */
extern const char *malloc_conf;
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

#define OBJ_SIZE	(4 * MiB)	/* objects of write, overwrite, read sets */
#define IO_SIZE		4096u		/* overwrite and read size */

/* Collection ids of the benchmark's data sets. */
#define COLL_WRITE	1
#define COLL_READ	2
#define COLL_OVERWRITE	3
#define COLL_SMALL	10

#define STAMP_MAGIC	0x61746f6c6c62656eull	/* "atollben" */

enum { T_WRITE = 1, T_OVERWRITE = 2, T_READ = 4, T_SMALL = 8, T_ALL = 15, T_OVERWRITE_KV = 16 };

struct opts {
	const char *dir;
	bool dir_given;
	bool keep;
	bool no_zero;		/* mkfs without writing zeros over the block */
	uint64_t size;
	double seconds;
	uint64_t count;
	unsigned qd;		/* 0 = each test's default */
	unsigned flushers;	/* 0 = the store's default */
	uint64_t prefill;
	uint64_t overwrite_set;
	uint64_t small_count;
	uint32_t small_size;
	uint32_t small_batch;
	uint64_t small_reads;
	unsigned stall_s;
	uint64_t seed;
	int tests;
};

static struct opts o = {
	.size = 8 * GiB,
	.seconds = 15,
	.prefill = 4 * GiB,
	.overwrite_set = 1 * GiB,
	.small_count = 1000000,
	.small_size = 1024,
	.small_batch = 1000,
	.small_reads = 10000,
	.stall_s = 120,
	.seed = 0x5eed,
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* xorshift64*: the main thread's random numbers (offsets, object picks). */
/* Per thread: completions issue reads from the store's thread too.  A
 * thread's stream starts from the seed mixed with a per-thread number. */
static __thread uint64_t rng_state;
static uint64_t rng_seed = 1;
static unsigned rng_threads;

static uint64_t rnd(void)
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

static void fill_random(void *buf, size_t len)
{
	uint64_t *p = buf;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = rnd();
}

/* Each 4 KiB block of the read and overwrite sets starts with a stamp
 * naming its object and block, so the read test can tell right data from
 * wrong data (it does not compare whole blocks: the store's crc does). */
static void stamp_block(void *blk, uint64_t obj, uint64_t bno)
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

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

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

static char tmp_dir[PATH_MAX];	/* our own temporary folder, removed at exit */

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb; (void)type; (void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup_tmp(void)
{
	if (tmp_dir[0] && !o.keep)
		rm_tree(tmp_dir);
	tmp_dir[0] = 0;
}

static void die(const char *fmt, ...)
{
	va_list ap;

	if (interrupted) {
		/* Ctrl-C or SIGTERM: whatever failed, failed because of it. */
		fputs("atoll-storebench: interrupted\n", stderr);
		cleanup_tmp();
		exit(130);
	}
	fputs("atoll-storebench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cleanup_tmp();
	exit(1);
}

static const char *errstr(int r)
{
	return strerror(r < 0 ? -r : r);
}

/* ---- output --------------------------------------------------------- */

static void metric(const char *name, double v, const char *unit)
{
	if (v == (double)(int64_t)v)
		printf("store\t%s\t%" PRId64 "\t%s\n", name, (int64_t)v, unit);
	else if (v < 100 && v > -100)
		printf("store\t%s\t%.3f\t%s\n", name, v, unit);
	else
		printf("store\t%s\t%.1f\t%s\n", name, v, unit);
	fflush(stdout);
}

static void human(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void human(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fflush(stderr);
}

/* ---- the op engine ---------------------------------------------------- */

struct run;

struct slot {
	struct run *run;
	uint64_t t0;
	void *buf;		/* read buffer (read test) */
	uint64_t obj, bno;	/* what a read expects to find */
	unsigned idx;
};

/* Issues one op on s (s->t0 is set); returns 0 or a negative errno, in
 * which case no completion will come. */
typedef int (*submit_fn)(struct run *r, struct slot *s, uint64_t seq);

struct run {
	const char *what;
	struct store *st;
	unsigned qd;
	uint64_t limit_ops;	/* stop issuing after this many (0 = no limit) */
	double seconds;		/* stop issuing after this long (0 = no limit) */
	submit_fn submit;
	bool verify_reads;
	size_t expect_len;	/* read completions must return this many bytes */
	/* chain: a completion issues the next op itself, on the store's
	 * thread, as an event-driven caller (and fio) would; the main thread
	 * only fills the queue at the start and waits. */
	bool chain;
	uint64_t deadline;	/* ns, 0 = none */
	uint64_t seq;		/* ops issued (under lock) */

	pthread_mutex_t lock;	/* protects everything below */
	pthread_cond_t cond;	/* signalled when a slot comes back */
	struct slot *slots;
	unsigned *free_stack;
	unsigned nfree;
	uint64_t done;
	uint64_t verify_errors;
	int first_err;
	uint64_t *lat;		/* ns per completed op */
	size_t nlat, cap;

	uint64_t elapsed_ns;	/* first issue to last completion */
};

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
	if (run->chain && chain_depth < 4 && !run->first_err && !interrupted &&
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
static void txn_done(void *arg, int r)
{
	slot_done(arg, r);
}

/* Completion of an asynchronous read (store read-completion thread). */
static void read_done(void *arg, int64_t n)
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

static void run_init(struct run *r, const char *what, struct store *st, unsigned qd,
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
		die("out of memory");
	for (unsigned i = 0; i < qd; i++) {
		r->slots[i].run = r;
		r->slots[i].idx = i;
		if (bufsize) {
			r->slots[i].buf = aligned_alloc(4096, bufsize);
			if (!r->slots[i].buf)
				die("out of memory");
		}
		r->free_stack[r->nfree++] = qd - 1 - i;
	}
}

static void run_fini(struct run *r)
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
 * o.stall_s seconds: a stuck store must not hang the benchmark or CI. */
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
		} else if (mono_now_ns() - since > (uint64_t)o.stall_s * 1000000000ull) {
			pthread_mutex_unlock(&r->lock);
			die("%s: no op completed for %u s with %u in flight; the store seems stuck",
			    r->what, o.stall_s, r->qd - r->nfree);
		}
	}
}

/* Runs ops until the time or count limit, keeping qd in flight; returns
 * 0 or the first error of any op. */
static int run_go(struct run *r)
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
		if (r->first_err || interrupted)
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
	if (!err && interrupted)
		err = -EINTR;
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct result {
	double secs, iops, mbps, p50_us, p99_us, max_us;
	uint64_t ops;
};

static struct result run_result(struct run *r, size_t op_bytes)
{
	struct result res = { 0 };

	res.ops = r->done;
	res.secs = r->elapsed_ns / 1e9;
	if (res.secs > 0) {
		res.iops = r->done / res.secs;
		res.mbps = (double)r->done * op_bytes / MiB / res.secs;
	}
	if (r->nlat) {
		qsort(r->lat, r->nlat, sizeof(*r->lat), cmp_u64);
		res.p50_us = r->lat[(r->nlat - 1) * 50 / 100] / 1e3;
		res.p99_us = r->lat[(r->nlat - 1) * 99 / 100] / 1e3;
		res.max_us = r->lat[r->nlat - 1] / 1e3;
	}
	return res;
}

static void report(const char *prefix, const struct result *res)
{
	char name[128];

#define M(suffix, v, unit) do { \
	snprintf(name, sizeof(name), "%s_%s", prefix, suffix); \
	metric(name, v, unit); } while (0)
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

static void human_result(const char *what, const struct result *res)
{
	char p50[32], p99[32];

	fmt_lat(p50, sizeof(p50), res->p50_us);
	fmt_lat(p99, sizeof(p99), res->p99_us);
	human("  %-22s %9.1f MB/s %9.0f IOPS   p50 %-9s p99 %-9s (%" PRIu64 " ops in %.1f s)\n",
	      what, res->mbps, res->iops, p50, p99, res->ops, res->secs);
}

/* ---- store helpers ---------------------------------------------------- */

struct store_paths {
	char block[PATH_MAX];
	char kv[PATH_MAX];
};

static void paths_of(struct store_paths *p, const char *dir)
{
	if (snprintf(p->block, sizeof(p->block), "%s/block", dir) >= (int)sizeof(p->block) ||
	    snprintf(p->kv, sizeof(p->kv), "%s/kv", dir) >= (int)sizeof(p->kv))
		die("folder name '%s' is too long", dir);
}

static void opts_of(struct store_options *so, const struct store_paths *p, uint64_t block_size,
		    uint64_t kv_max)
{
	memset(so, 0, sizeof(*so));
	so->size_of = sizeof(*so);
	so->block_path = p->block;
	so->kv_path = p->kv;
	so->block_size = block_size;
	so->kv_max = kv_max;
	so->flushers = o.flushers;
}

static bool exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* Opens the store in dir, creating it (block_size, kv_max) first when the
 * folder holds none. */
static struct store *open_or_create(const char *dir, uint64_t block_size, uint64_t kv_max,
				    bool *created)
{
	struct store_paths p;
	struct store_options so;
	struct store *st;
	int r;

	paths_of(&p, dir);
	opts_of(&so, &p, block_size, kv_max);
	*created = false;
	if (!exists(p.block) && !exists(p.kv)) {
		if (mkdir_p(dir) < 0)
			die("cannot create folder '%s': %s", dir, strerror(errno));
		/* Real blocks behind the file, as an OSD has (see store.h). */
		so.prefill = !o.no_zero;
		if (so.prefill)
			human("  creating a store of %" PRIu64 " MiB in '%s' (writing it whole once)...\n",
			      block_size / MiB, dir);
		r = store_mkfs(&so);
		so.prefill = false;
		if (r < 0)
			die("cannot create a store in '%s': %s (a file system without O_DIRECT, "
			    "such as tmpfs, cannot hold one; pick another folder with --dir)",
			    dir, errstr(r));
		*created = true;
	}
	r = store_open(&so, &st);
	if (r < 0)
		die("cannot open the store in '%s': %s; remove the folder or pick another with --dir",
		    dir, errstr(r));
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

static void drop_cache(const char *dir)
{
	nftw(dir, drop_one, 16, FTW_PHYS);
}

static void ensure_coll(struct store *st, uint64_t coll)
{
	struct store_txn *t;
	int r = store_coll_exists(st, coll);

	if (r < 0)
		die("cannot look up collection 0x%" PRIx64 ": %s", coll, errstr(r));
	if (r)
		return;
	t = store_txn_new();
	if (!t)
		die("out of memory");
	r = store_txn_coll_create(t, coll, 0);
	if (r == 0)
		r = store_apply(st, t);
	else
		store_txn_free(t);
	if (r < 0)
		die("cannot create collection 0x%" PRIx64 ": %s", coll, errstr(r));
}

static int count_one(void *arg, const char *oid)
{
	(void)arg; (void)oid;
	return 0;
}

static uint64_t count_objects(struct store *st, uint64_t coll)
{
	int r = store_list(st, coll, NULL, 0, count_one, NULL);

	if (r < 0)
		die("cannot list collection 0x%" PRIx64 ": %s", coll, errstr(r));
	return (uint64_t)r;
}

static uint64_t free_bytes(struct store *st)
{
	struct store_statfs sf;
	int r = store_statfs(st, &sf);

	if (r < 0)
		die("statfs failed: %s", errstr(r));
	return sf.free;
}

/* "P.0000000042": formatted by hand, as snprintf costs about 1% of a
 * 4 KiB read here, which is the benchmark's own work, not the store's. */
static void obj_name(char *out, size_t n, char prefix, uint64_t i)
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

/* ---- filling a set of 4 MiB objects ----------------------------------- */

struct fill_ctx {
	uint64_t coll;
	char prefix;
	uint64_t first;
	uint8_t *buf;		/* OBJ_SIZE of random data, re-stamped per object */
};

static struct fill_ctx fill;

static int fill_submit(struct run *r, struct slot *s, uint64_t seq)
{
	uint64_t obj = fill.first + seq;
	char name[32];
	struct store_txn *t = store_txn_new();
	int rc;

	if (!t)
		return -ENOMEM;
	for (uint64_t b = 0; b < OBJ_SIZE / IO_SIZE; b++)
		stamp_block(fill.buf + b * IO_SIZE, obj, b);
	obj_name(name, sizeof(name), fill.prefix, obj);
	rc = store_txn_write(t, fill.coll, name, 0, fill.buf, OBJ_SIZE, 0);
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, txn_done, s);
}

/* Makes sure coll holds objects prefix.0 .. prefix.(n-1), writing the
 * missing ones (untimed setup). */
static void ensure_set(struct store *st, uint64_t coll, char prefix, uint64_t n,
		       const char *what)
{
	struct run r;
	uint64_t have, need_bytes, avail;
	int rc;

	ensure_coll(st, coll);
	have = count_objects(st, coll);
	if (have >= n)
		return;
	need_bytes = (n - have) * OBJ_SIZE;
	avail = free_bytes(st);
	if (need_bytes + 64 * MiB > avail)
		die("the %s needs %" PRIu64 " MiB more but the store has %" PRIu64 " MiB free; "
		    "use a bigger --size (new store) or a smaller set", what,
		    need_bytes / MiB, avail / MiB);
	human("  writing the %s: %" PRIu64 " objects of 4 MiB (%" PRIu64 " MiB)...\n",
	      what, n - have, need_bytes / MiB);
	fill.coll = coll;
	fill.prefix = prefix;
	fill.first = have;
	fill.buf = malloc(OBJ_SIZE);
	if (!fill.buf)
		die("out of memory");
	fill_random(fill.buf, OBJ_SIZE);
	run_init(&r, what, st, 8, 0);
	r.submit = fill_submit;
	r.limit_ops = n - have;
	rc = run_go(&r);
	if (rc < 0)
		die("writing the %s failed: %s", what, errstr(rc));
	run_fini(&r);
	free(fill.buf);
	fill.buf = NULL;
}

/* ---- write ------------------------------------------------------------ */

struct write_ctx {
	uint8_t *buf;
	uint64_t window;	/* objects kept; older ones removed in the same txn */
};

static struct write_ctx wr;

static int write_submit(struct run *r, struct slot *s, uint64_t seq)
{
	char name[32];
	struct store_txn *t = store_txn_new();
	int rc;

	if (!t)
		return -ENOMEM;
	memcpy(wr.buf, &seq, sizeof(seq));
	obj_name(name, sizeof(name), 'w', seq);
	rc = store_txn_write(t, COLL_WRITE, name, 0, wr.buf, OBJ_SIZE, 0);
	if (rc == 0 && seq >= wr.window) {
		obj_name(name, sizeof(name), 'w', seq - wr.window);
		rc = store_txn_remove(t, COLL_WRITE, name);
	}
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, txn_done, s);
}

struct name_list {
	char **names;
	size_t n, cap;
};

static int collect_name(void *arg, const char *oid)
{
	struct name_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		char **nn = realloc(l->names, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		l->names = nn;
		l->cap = cap;
	}
	l->names[l->n] = strdup(oid);
	if (!l->names[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

/* Removes every object of coll, 256 per transaction (untimed cleanup). */
static void empty_coll(struct store *st, uint64_t coll)
{
	struct name_list l = { 0 };
	int r = store_list(st, coll, NULL, 0, collect_name, &l);

	if (r < 0)
		die("cannot list collection 0x%" PRIx64 ": %s", coll, errstr(r));
	for (size_t i = 0; i < l.n; i += 256) {
		struct store_txn *t = store_txn_new();

		if (!t)
			die("out of memory");
		for (size_t j = i; j < l.n && j < i + 256; j++)
			if ((r = store_txn_remove(t, coll, l.names[j])) < 0)
				die("cannot remove '%s': %s", l.names[j], errstr(r));
		r = store_apply(st, t);
		if (r < 0)
			die("cleaning collection 0x%" PRIx64 " failed: %s", coll, errstr(r));
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.names[i]);
	free(l.names);
}

static void test_write(struct store *st)
{
	struct run r;
	struct result res;
	uint64_t avail, reserve;
	unsigned qd = o.qd ? o.qd : 8;
	int rc;

	human("write: 4 MiB objects, one transaction each, %u in flight\n", qd);
	ensure_coll(st, COLL_WRITE);
	empty_coll(st, COLL_WRITE);	/* leftovers of an interrupted run */
	avail = free_bytes(st);
	reserve = avail / 20 > 32 * MiB ? avail / 20 : 32 * MiB;
	wr.window = avail > reserve ? (avail - reserve) / OBJ_SIZE : 0;
	if (wr.window < 2 * (uint64_t)qd)
		die("write: the store has only %" PRIu64 " MiB free; it needs at least %" PRIu64
		    " MiB: use a bigger --size (new store) or a smaller --prefill",
		    avail / MiB, (2 * (uint64_t)qd * OBJ_SIZE + reserve) / MiB);
	wr.buf = malloc(OBJ_SIZE);
	if (!wr.buf)
		die("out of memory");
	fill_random(wr.buf, OBJ_SIZE);

	run_init(&r, "write", st, qd, 0);
	r.submit = write_submit;
	r.seconds = o.count ? 0 : o.seconds;
	r.limit_ops = o.count;
	rc = run_go(&r);
	if (rc < 0)
		die("write: %s", errstr(rc));
	res = run_result(&r, OBJ_SIZE);
	report("write_4M", &res);
	metric("write_4M_qd", qd, "ops");
	human_result("write 4 MiB objects", &res);
	if (r.done > wr.window)
		human("  (kept the newest %" PRIu64 " objects: each later transaction also removed "
		      "the oldest)\n", wr.window);
	run_fini(&r);
	free(wr.buf);
	empty_coll(st, COLL_WRITE);
}

/* ---- overwrite -------------------------------------------------------- */

struct overwrite_ctx {
	uint64_t nobj;
	uint8_t *buf;
};

static struct overwrite_ctx ow;

static int overwrite_submit(struct run *r, struct slot *s, uint64_t seq)
{
	uint64_t obj = rnd() % ow.nobj, bno = rnd() % (OBJ_SIZE / IO_SIZE);
	char name[32];
	struct store_txn *t = store_txn_new();
	int rc;

	(void)seq;
	if (!t)
		return -ENOMEM;
	stamp_block(ow.buf, obj, bno);
	obj_name(name, sizeof(name), 'o', obj);
	rc = store_txn_write(t, COLL_OVERWRITE, name, bno * IO_SIZE, ow.buf, IO_SIZE, 0);
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, txn_done, s);
}

/* Runs the 4 KiB overwrites of submit over the overwrite set (made by
 * the caller) and reports them as key / what. */
static void overwrite_run(struct store *st, const char *name, unsigned qd,
			  int (*submit)(struct run *, struct slot *, uint64_t),
			  const char *key, const char *what)
{
	struct run r;
	struct result res;
	int rc;

	ow.buf = aligned_alloc(4096, IO_SIZE);
	if (!ow.buf)
		die("out of memory");
	fill_random(ow.buf, IO_SIZE);
	run_init(&r, name, st, qd, 0);
	r.submit = submit;
	r.seconds = o.count ? 0 : o.seconds;
	r.limit_ops = o.count;
	rc = run_go(&r);
	if (rc < 0)
		die("%s: %s", name, errstr(rc));
	res = run_result(&r, IO_SIZE);
	report(key, &res);
	human_result(what, &res);
	run_fini(&r);
	free(ow.buf);
}

static uint64_t overwrite_set_objects(void)
{
	uint64_t n = o.overwrite_set / OBJ_SIZE;

	return n ? n : 1;
}

static void test_overwrite(struct store *st)
{
	unsigned qd = o.qd ? o.qd : 32;

	ow.nobj = overwrite_set_objects();
	human("overwrite: 4 KiB at random offsets of %" PRIu64 " objects of 4 MiB, %u in flight, "
	      "each counted when durable\n", ow.nobj, qd);
	ensure_set(st, COLL_OVERWRITE, 'o', ow.nobj, "overwrite set");
	metric("overwrite_4K_qd", qd, "ops");
	overwrite_run(st, "overwrite", qd, overwrite_submit, "overwrite_4K",
		      "overwrite 4 KiB durable");
}

/* ---- overwrite-kv ----------------------------------------------------- */

/* What an OSD's replicated 4 KiB write gives its store (osd/osd_proto.c,
 * osd/pglog.c): the data, the object's info attribute and, on its
 * placement group's meta object, a pg-log entry, the pg info and the
 * removal of the entry the log trims.  Small kv mutations beside a logged
 * overwrite: each such batch commits the kv too (doc/store.md). */
#define OWKV_PGS	8u
#define OWKV_LOG_MAX	1000u

static uint64_t owkv_seq[OWKV_PGS];
static uint8_t owkv_val[256];

static int overwrite_kv_submit(struct run *r, struct slot *s, uint64_t seq)
{
	uint64_t obj = rnd() % ow.nobj, bno = rnd() % (OBJ_SIZE / IO_SIZE);
	unsigned pg = (unsigned)(obj % OWKV_PGS);
	uint64_t v = __atomic_add_fetch(&owkv_seq[pg], 1, __ATOMIC_RELAXED);
	char name[32], meta[32], key[24];
	struct store_txn *t = store_txn_new();
	int rc;

	(void)seq;
	if (!t)
		return -ENOMEM;
	stamp_block(ow.buf, obj, bno);
	obj_name(name, sizeof(name), 'o', obj);
	snprintf(meta, sizeof(meta), "pgmeta.%u", pg);
	rc = store_txn_write(t, COLL_OVERWRITE, name, bno * IO_SIZE, ow.buf, IO_SIZE, 0);
	if (rc >= 0)
		rc = store_txn_setattr(t, COLL_OVERWRITE, name, "_", owkv_val, 256);
	snprintf(key, sizeof(key), "l%016" PRIx64, v);
	if (rc >= 0)
		rc = store_txn_omap_set(t, COLL_OVERWRITE, meta, key, strlen(key), owkv_val, 180);
	if (rc >= 0)
		rc = store_txn_omap_set(t, COLL_OVERWRITE, meta, "info", 4, owkv_val, 100);
	if (rc >= 0 && v > OWKV_LOG_MAX) {
		snprintf(key, sizeof(key), "l%016" PRIx64, v - OWKV_LOG_MAX);
		rc = store_txn_omap_rm(t, COLL_OVERWRITE, meta, key, strlen(key));
	}
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, txn_done, s);
}

static void test_overwrite_kv(struct store *st)
{
	unsigned qd = o.qd ? o.qd : 32;
	struct store_txn *t;
	int rc;

	ow.nobj = overwrite_set_objects();
	human("overwrite-kv: 4 KiB at random offsets of %" PRIu64 " objects of 4 MiB, each with an "
	      "attribute and a pg-log update (3 omap mutations) on one of %u meta objects, %u in "
	      "flight, each counted when durable\n", ow.nobj, OWKV_PGS, qd);
	ensure_set(st, COLL_OVERWRITE, 'o', ow.nobj, "overwrite set");
	t = store_txn_new();
	if (!t)
		die("out of memory");
	for (unsigned pg = 0; pg < OWKV_PGS; pg++) {
		char meta[32];

		snprintf(meta, sizeof(meta), "pgmeta.%u", pg);
		rc = store_txn_touch(t, COLL_OVERWRITE, meta);
		if (rc < 0)
			die("overwrite-kv: %s", errstr(rc));
	}
	rc = store_apply(st, t);
	if (rc < 0)
		die("overwrite-kv: cannot create the meta objects: %s", errstr(rc));
	fill_random(owkv_val, sizeof(owkv_val));
	overwrite_run(st, "overwrite-kv", qd, overwrite_kv_submit, "overwrite_kv_4K",
		      "overwrite+kv 4 KiB durable");
}

/* ---- read ------------------------------------------------------------- */

struct read_ctx {
	uint64_t nobj;
};

static struct read_ctx rd;

static int read_submit(struct run *r, struct slot *s, uint64_t seq)
{
	char name[32];

	(void)seq;
	s->obj = rnd() % rd.nobj;
	s->bno = rnd() % (OBJ_SIZE / IO_SIZE);
	obj_name(name, sizeof(name), 'r', s->obj);
	return store_read_async(r->st, COLL_READ, name, s->bno * IO_SIZE, IO_SIZE, s->buf,
				read_done, s);
}

/* Bytes this process made the kernel fetch from storage: with O_DIRECT
 * every read that reaches the device counts, a page-cache hit does not. */
static uint64_t proc_read_bytes(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "read_bytes: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

static struct store *test_read(struct store *st, const char *dir)
{
	struct run r;
	struct result res;
	unsigned qd = o.qd ? o.qd : 32;
	uint64_t io0, dev_bytes, want_bytes, hits;
	bool created;
	int rc;

	rd.nobj = o.prefill / OBJ_SIZE;
	if (rd.nobj == 0)
		rd.nobj = 1;
	human("read: 4 KiB random reads over %" PRIu64 " MiB (%" PRIu64 " objects), %u in flight, "
	      "store reopened first\n", rd.nobj * OBJ_SIZE / MiB, rd.nobj, qd);
	ensure_set(st, COLL_READ, 'r', rd.nobj, "read set");

	/* Reopen with cold caches: the data then comes from the disk. */
	store_close(st);
	drop_cache(dir);
	st = open_or_create(dir, o.size, 0, &created);

	run_init(&r, "read", st, qd, IO_SIZE);
	r.chain = true;
	r.submit = read_submit;
	r.verify_reads = true;
	r.expect_len = IO_SIZE;
	r.seconds = o.count ? 0 : o.seconds;
	r.limit_ops = o.count;
	io0 = proc_read_bytes();
	rc = run_go(&r);
	dev_bytes = proc_read_bytes() - io0;
	if (rc < 0)
		die("read: %s", errstr(rc));
	res = run_result(&r, IO_SIZE);
	report("randread_4K", &res);
	metric("randread_4K_qd", qd, "ops");
	want_bytes = r.done * IO_SIZE;
	/* The store reads data with O_DIRECT and keeps no data cache, so no
	 * read can be served from memory; the device counter confirms it
	 * (it also counts the kv's own metadata pages, so it may exceed
	 * what was asked for, never fall short of it when nothing hit). */
	hits = dev_bytes >= want_bytes ? 0 : (want_bytes - dev_bytes) / IO_SIZE;
	metric("randread_4K_cache_hits", (double)hits, "ops");
	metric("randread_4K_device_read_MB", (double)(dev_bytes / MiB), "MB");
	metric("randread_4K_set_MB", (double)(rd.nobj * OBJ_SIZE / MiB), "MB");
	metric("randread_4K_verify_errors", (double)r.verify_errors, "ops");
	human_result("read 4 KiB random", &res);
	human("  cache hits: %" PRIu64 " (the store reads with O_DIRECT and keeps no data cache; "
	      "the device delivered %" PRIu64 " MiB for %" PRIu64 " MiB asked)\n",
	      hits, dev_bytes / MiB, want_bytes / MiB);
	if (r.verify_errors)
		die("read: %" PRIu64 " reads returned wrong data", r.verify_errors);
	run_fini(&r);
	return st;
}

/* ---- smallobjects ------------------------------------------------------ */

struct small_ctx {
	uint8_t *buf;
	uint64_t count;
};

static struct small_ctx sm;

static void small_paths(char *out, size_t n, const char *dir)
{
	if (snprintf(out, n, "%s/small", dir) >= (int)n)
		die("folder name '%s' is too long", dir);
}

/* Small objects up to the store's inline limit (2048 bytes by default)
 * live in the kv; bigger ones need blocks.  The block file is allocated
 * whole by the store, so it gets only what the objects need. */
static uint64_t small_block_size(void)
{
	uint64_t per = o.small_size > 2048 ? ((uint64_t)o.small_size + 4095) / 4096 * 4096 : 0;

	return o.small_count * per / 4 * 5 + 256 * MiB;
}

static uint64_t small_kv_max(void)
{
	uint64_t b = o.small_count * ((uint64_t)o.small_size + 512) * 3;

	return b < GiB ? GiB : b;
}

static void small_fill_obj(uint8_t *buf, uint64_t i)
{
	memset(buf, (int)(i & 0xff), o.small_size);
	if (o.small_size >= 16)
		stamp_block(buf, i, 0);
}

static int small_submit(struct run *r, struct slot *s, uint64_t seq)
{
	uint64_t first = seq * o.small_batch;
	struct store_txn *t = store_txn_new();
	int rc = 0;

	if (!t)
		return -ENOMEM;
	for (uint64_t i = first; i < first + o.small_batch && i < sm.count && rc == 0; i++) {
		char name[32];

		obj_name(name, sizeof(name), 's', i);
		small_fill_obj(sm.buf, i);
		rc = store_txn_write(t, COLL_SMALL, name, 0, sm.buf, o.small_size, 0);
	}
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, txn_done, s);
}

static uint64_t status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kl = strlen(key);
	uint64_t v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtoull(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* kB (as /proc reports them, KiB really) to MB of 10^6 bytes. */
static double kb_to_mb(uint64_t kb)
{
	return (double)(int64_t)(kb * 1024 / 1000) / 1000.0;
}

/* The measuring half of smallobjects, in a process of its own (started
 * with the hidden option --measure-small) so that the memory the
 * creation left behind does not count. */
static int measure_small(const char *sdir)
{
	struct store_paths p;
	struct store_options so;
	struct store *st;
	uint64_t base_anon, t0, open_ns, anon1, file1, anon2, file2, bad = 0;
	uint64_t *lat;
	uint8_t *buf, *want;
	int r;

	paths_of(&p, sdir);
	opts_of(&so, &p, 0, small_kv_max());
	lat = calloc(o.small_reads ? o.small_reads : 1, sizeof(*lat));
	buf = malloc(o.small_size + 4096);
	want = malloc(o.small_size);
	if (!lat || !buf || !want)
		die("out of memory");
	drop_cache(sdir);
	base_anon = status_kb("RssAnon");
	t0 = mono_now_ns();
	r = store_open(&so, &st);
	open_ns = mono_now_ns() - t0;
	if (r < 0)
		die("smallobjects: cannot open the store in '%s': %s", sdir, errstr(r));
	anon1 = status_kb("RssAnon");
	file1 = status_kb("RssFile");

	for (uint64_t i = 0; i < o.small_reads; i++) {
		uint64_t k = rnd() % o.small_count;
		char name[32];
		int64_t n;

		obj_name(name, sizeof(name), 's', k);
		t0 = mono_now_ns();
		n = store_read(st, COLL_SMALL, name, 0, o.small_size + 4096, buf);
		lat[i] = mono_now_ns() - t0;
		small_fill_obj(want, k);
		if (n != (int64_t)o.small_size || memcmp(buf, want, o.small_size))
			bad++;
	}
	anon2 = status_kb("RssAnon");
	file2 = status_kb("RssFile");
	store_close(st);

	metric("small_open_s", (double)open_ns / 1e9, "s");
	metric("small_rss_anon_before_open_MB", kb_to_mb(base_anon), "MB");
	metric("small_rss_anon_open_MB", kb_to_mb(anon1), "MB");
	metric("small_rss_file_open_MB", kb_to_mb(file1), "MB");
	metric("small_rss_anon_MB", kb_to_mb(anon2), "MB");
	metric("small_rss_file_MB", kb_to_mb(file2), "MB");
	if (o.small_reads) {
		qsort(lat, o.small_reads, sizeof(*lat), cmp_u64);
		metric("small_read_lat_p50_us", (double)(lat[(o.small_reads - 1) / 2] / 1000), "us");
		metric("small_read_lat_p99_us",
		       (double)(lat[(o.small_reads - 1) * 99 / 100] / 1000), "us");
	}
	metric("small_read_errors", (double)bad, "ops");
	human("  open (cold cache)      %.3f s\n", open_ns / 1e9);
	human("  after open             RssAnon %.1f MB, RssFile %.1f MB (RssAnon before open %.1f MB)\n",
	      kb_to_mb(anon1), kb_to_mb(file1), kb_to_mb(base_anon));
	human("  after %-8" PRIu64 " reads   RssAnon %.1f MB, RssFile %.1f MB "
	      "(RssFile: the kv's mapped pages)\n", o.small_reads, kb_to_mb(anon2), kb_to_mb(file2));
	free(lat);
	free(buf);
	free(want);
	if (bad) {
		fprintf(stderr, "atoll-storebench: smallobjects: %" PRIu64 " reads returned wrong data\n",
			bad);
		return 1;
	}
	return 0;
}

static char self_exe[PATH_MAX];

static void test_small(const char *dir)
{
	char sdir[PATH_MAX], arg_count[32], arg_size[32], arg_reads[32], arg_seed[32];
	struct store *st;
	bool created;
	uint64_t have = 0;
	pid_t pid;
	int status;

	small_paths(sdir, sizeof(sdir), dir);
	human("smallobjects: %" PRIu64 " objects of %u bytes, %u per transaction\n",
	      o.small_count, o.small_size, o.small_batch);
	st = open_or_create(sdir, small_block_size(), small_kv_max(), &created);
	if (!created) {
		struct store_statfs sf;
		int r = store_statfs(st, &sf);

		if (r < 0)
			die("smallobjects: statfs failed: %s", errstr(r));
		have = sf.objects;
		if (have != o.small_count) {
			/* Another count, or an interrupted run: start over. */
			human("  the store in '%s' holds %" PRIu64 " objects; recreating it\n",
			      sdir, have);
			store_close(st);
			rm_tree(sdir);
			st = open_or_create(sdir, small_block_size(), small_kv_max(), &created);
			have = 0;
		}
	}
	if (have == 0) {
		struct run r;
		struct result res;
		int rc;

		ensure_coll(st, COLL_SMALL);
		sm.count = o.small_count;
		sm.buf = malloc(o.small_size);
		if (!sm.buf)
			die("out of memory");
		run_init(&r, "smallobjects", st, 4, 0);
		r.submit = small_submit;
		r.limit_ops = (o.small_count + o.small_batch - 1) / o.small_batch;
		rc = run_go(&r);
		if (rc < 0)
			die("smallobjects: creating the objects failed: %s", errstr(rc));
		res = run_result(&r, 0);
		metric("small_create_s", res.secs, "s");
		metric("small_create_objs_per_s", (double)(int64_t)(o.small_count / res.secs),
		       "objects/s");
		human("  created                %" PRIu64 " objects in %.1f s (%.0f objects/s)\n",
		      o.small_count, res.secs, o.small_count / res.secs);
		run_fini(&r);
		free(sm.buf);
	} else {
		human("  reusing the %" PRIu64 " objects already in '%s'\n", have, sdir);
	}
	metric("small_objects", (double)o.small_count, "objects");
	store_close(st);

	/* Measure in a fresh process: exec ourselves. */
	snprintf(arg_count, sizeof(arg_count), "%" PRIu64, o.small_count);
	snprintf(arg_size, sizeof(arg_size), "%u", o.small_size);
	snprintf(arg_reads, sizeof(arg_reads), "%" PRIu64, o.small_reads);
	snprintf(arg_seed, sizeof(arg_seed), "%" PRIu64, o.seed);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		die("fork failed: %s", strerror(errno));
	if (pid == 0) {
		char *args[] = { "atoll-storebench", "--small-count", arg_count,
				 "--small-size", arg_size, "--small-reads", arg_reads,
				 "--seed", arg_seed, "--measure-small", sdir, NULL };

		execv(self_exe, args);
		fprintf(stderr, "atoll-storebench: cannot run '%s': %s\n", self_exe, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid failed: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("smallobjects: the measuring process failed");
}

/* ---- command line ------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
"usage: atoll-storebench [OPTIONS] [TEST...]\n"
"\n"
"Measures atoll's OSD store engine on the disk under a folder.\n"
"\n"
"Tests (default: all, in this order):\n"
"  write         4 MiB objects, each written by one transaction, counted when\n"
"                durable (--qd in flight, default 8); once the store would fill,\n"
"                each transaction also removes the oldest object\n"
"  overwrite     4 KiB writes at random 4 KiB-aligned offsets of existing\n"
"                objects (--overwrite-set), 32 in flight, counted when durable\n"
"  overwrite-kv  the same, each write with what an OSD adds to it: an attribute\n"
"                and a pg-log update (3 omap mutations on one of 8 meta objects);\n"
"                not part of 'all'\n"
"  read          4 KiB random reads (store_read_async, 32 in flight) over the\n"
"                read set (--prefill), after reopening the store with cold caches\n"
"  smallobjects  creates --small-count objects of --small-size bytes in a second\n"
"                store (FOLDER/small), then, in a fresh process, times store_open\n"
"                and reports RssAnon/RssFile after it and after --small-reads reads\n"
"  all           every test above\n"
"\n"
"Options:\n"
"  --dir DIR            folder of the store (DIR/block, DIR/kv, DIR/small); reused\n"
"                       when it already holds one, kept at the end.  Default: a new\n"
"                       folder under $TMPDIR (or /var/tmp), removed at the end\n"
"  --size SIZE          block file size of a new store (default 8G; the store\n"
"                       allocates it whole, and the kv needs about 1/8 more)\n"
"  --seconds N          how long each timed test runs (default 15)\n"
"  --count N            run N ops per timed test instead of a duration\n"
"  --qd N               ops in flight for every timed test (default: 8 / 32 / 32)\n"
"  --prefill SIZE       size of the read set written before the read test when\n"
"                       missing (default 4G; objects already there are reused)\n"
"  --overwrite-set SIZE objects the overwrite test writes into (default 1G)\n"
"  --small-count N      objects of the smallobjects test (default 1000000)\n"
"  --small-size N       bytes per small object (default 1024)\n"
"  --small-batch N      small objects per transaction (default 1000)\n"
"  --small-reads N      random reads after reopening (default 10000)\n"
"  --quick              a tiny run for smoke tests: --size 512M --seconds 2\n"
"                       --prefill 64M --overwrite-set 16M --small-count 2000\n"
"                       --small-reads 500 (options given later still win)\n"
"  --no-zero-fill       create a new block file without writing zeros over it\n"
"                       (an OSD's mkfs writes them: see store.h, prefill)\n"
"  --flushers N         flushes of the block at once for batches that only\n"
"                       logged (default: the store's, 2; store.h, flushers)\n"
"  --keep               keep the temporary folder\n"
"  --seed N             random seed (default 0x5eed)\n"
"  --stall-timeout N    give up when no op completes for N seconds (default 120)\n"
"  -h, --help           this help\n"
"\n"
"SIZE takes a suffix K, M, G or T (powers of 1024).\n"
"Output: \"store<TAB>metric<TAB>value<TAB>unit\" lines on stdout (MB = MiB for\n"
"throughput, as in disklimit.sh; RSS in MB of 10^6 bytes), a summary on stderr.\n"
"bench/store-bench.sh runs this beside ../shared/bench/disklimit.sh and prints\n"
"the ratios (doc/benchmarks.md).\n");
}

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

enum {
	OPT_DIR = 256, OPT_SIZE, OPT_SECONDS, OPT_COUNT, OPT_QD, OPT_PREFILL, OPT_OWSET,
	OPT_SCOUNT, OPT_SSIZE, OPT_SBATCH, OPT_SREADS, OPT_QUICK, OPT_KEEP, OPT_SEED,
	OPT_STALL, OPT_MEASURE, OPT_NOZERO, OPT_FLUSHERS,
};

/* name is the long option without its dashes; hint (may be NULL) says
 * what is accepted. */
static void bad_value(const char *name, const char *v, const char *hint)
{
	fprintf(stderr, "atoll-storebench: option '--%s': '%s' is not valid%s%s; "
		"see atoll-storebench --help\n", name, v, hint ? ": " : "", hint ? hint : "");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dir", required_argument, NULL, OPT_DIR },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "qd", required_argument, NULL, OPT_QD },
		{ "prefill", required_argument, NULL, OPT_PREFILL },
		{ "overwrite-set", required_argument, NULL, OPT_OWSET },
		{ "small-count", required_argument, NULL, OPT_SCOUNT },
		{ "small-size", required_argument, NULL, OPT_SSIZE },
		{ "small-batch", required_argument, NULL, OPT_SBATCH },
		{ "small-reads", required_argument, NULL, OPT_SREADS },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "stall-timeout", required_argument, NULL, OPT_STALL },
		{ "measure-small", required_argument, NULL, OPT_MEASURE },
		{ "no-zero-fill", no_argument, NULL, OPT_NOZERO },
		{ "flushers", required_argument, NULL, OPT_FLUSHERS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	/* ATOLL_LOG=debug shows the store's own log, with the commit
	 * thread's time profile at each close (doc/benchmarks.md). */
	if (getenv("ATOLL_LOG")) {
		int lvl = log_level_parse(getenv("ATOLL_LOG"));

		if (lvl >= 0)
			log_open("storebench", (enum log_level)lvl, NULL);
	}
	const char *measure = NULL;
	struct store *st = NULL;
	struct sigaction sa;
	uint64_t v;
	char *endp;
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		const char *name = c >= OPT_DIR && c <= OPT_FLUSHERS ? lopts[c - OPT_DIR].name : "";

		switch (c) {
		case OPT_DIR: o.dir = optarg; o.dir_given = true; break;
		case OPT_SIZE:
			if (config_parse_size(optarg, &o.size) || o.size < 64 * MiB)
				bad_value(name, optarg, "give a size of at least 64M");
			break;
		case OPT_SECONDS:
			o.seconds = strtod(optarg, &endp);
			if (*endp || !(o.seconds > 0))
				bad_value(name, optarg, NULL);
			break;
		case OPT_COUNT:
			if (!parse_u64(optarg, &o.count) || !o.count)
				bad_value(name, optarg, NULL);
			break;
		case OPT_QD:
			if (!parse_u64(optarg, &v) || !v || v > 4096)
				bad_value(name, optarg, "give 1 to 4096");
			o.qd = (unsigned)v;
			break;
		case OPT_PREFILL:
			if (config_parse_size(optarg, &o.prefill) || o.prefill < OBJ_SIZE)
				bad_value(name, optarg, "give a size of at least 4M");
			break;
		case OPT_OWSET:
			if (config_parse_size(optarg, &o.overwrite_set) || o.overwrite_set < OBJ_SIZE)
				bad_value(name, optarg, "give a size of at least 4M");
			break;
		case OPT_SCOUNT:
			if (!parse_u64(optarg, &o.small_count) || !o.small_count ||
			    o.small_count > 100000000)
				bad_value(name, optarg, NULL);
			break;
		case OPT_SSIZE:
			if (config_parse_size(optarg, &v) || !v || v > 1 * MiB)
				bad_value(name, optarg, "give 1 to 1M bytes");
			o.small_size = (uint32_t)v;
			break;
		case OPT_SBATCH:
			if (!parse_u64(optarg, &v) || !v || v > 100000)
				bad_value(name, optarg, NULL);
			o.small_batch = (uint32_t)v;
			break;
		case OPT_SREADS:
			if (!parse_u64(optarg, &o.small_reads) || o.small_reads > 100000000)
				bad_value(name, optarg, NULL);
			break;
		case OPT_QUICK:
			o.size = 512 * MiB;
			o.seconds = 2;
			o.prefill = 64 * MiB;
			o.overwrite_set = 16 * MiB;
			o.small_count = 2000;
			o.small_reads = 500;
			break;
		case OPT_KEEP: o.keep = true; break;
		case OPT_FLUSHERS:
			if (!parse_u64(optarg, &v) || !v || v > STORE_FLUSHERS_MAX)
				bad_value(name, optarg, "give 1 to 8");
			o.flushers = (unsigned)v;
			break;
		case OPT_SEED:
			if (!parse_u64(optarg, &o.seed))
				bad_value(name, optarg, NULL);
			break;
		case OPT_STALL:
			if (!parse_u64(optarg, &v) || !v || v > 86400)
				bad_value(name, optarg, NULL);
			o.stall_s = (unsigned)v;
			break;
		case OPT_MEASURE: measure = optarg; break;
		case OPT_NOZERO: o.no_zero = true; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "see atoll-storebench --help\n");
			return 2;
		}
	}
	rng_seed = o.seed ? o.seed : 1;
	rng_state = rng_seed;

	if (measure)
		return measure_small(measure);

	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "write"))
			o.tests |= T_WRITE;
		else if (!strcmp(argv[i], "overwrite"))
			o.tests |= T_OVERWRITE;
		else if (!strcmp(argv[i], "overwrite-kv"))
			o.tests |= T_OVERWRITE_KV;
		else if (!strcmp(argv[i], "read"))
			o.tests |= T_READ;
		else if (!strcmp(argv[i], "smallobjects"))
			o.tests |= T_SMALL;
		else if (!strcmp(argv[i], "all"))
			o.tests |= T_ALL;
		else {
			fprintf(stderr, "atoll-storebench: unknown test '%s'; the tests are write, "
				"overwrite, overwrite-kv, read, smallobjects and all\n", argv[i]);
			return 2;
		}
	}
	if (!o.tests)
		o.tests = T_ALL;

	{
		ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

		if (n < 0)
			die("cannot find my own program file: %s", strerror(errno));
		self_exe[n] = 0;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (!o.dir) {
		const char *base = getenv("TMPDIR");

		if (!base || !*base)
			base = "/var/tmp";
		if (snprintf(tmp_dir, sizeof(tmp_dir), "%s/atoll-storebench.XXXXXX", base) >=
		    (int)sizeof(tmp_dir))
			die("TMPDIR '%s' is too long", base);
		if (!mkdtemp(tmp_dir))
			die("cannot create a folder under '%s': %s; pick one with --dir", base,
			    strerror(errno));
		o.dir = tmp_dir;
	}

	human("atoll-storebench in '%s'%s\n", o.dir,
	      o.dir_given ? "" : (o.keep ? " (kept)" : " (removed at the end)"));
	metric("seconds_per_test", o.seconds, "s");

	if (o.tests & (T_WRITE | T_OVERWRITE | T_OVERWRITE_KV | T_READ)) {
		bool created;

		st = open_or_create(o.dir, o.size, 0, &created);
		{
			struct store_statfs sf;

			if (store_statfs(st, &sf) == 0)
				human("  store: %" PRIu64 " MiB data area, %" PRIu64 " MiB free%s\n",
				      sf.total / MiB, sf.free / MiB, created ? " (new)" : "");
		}
		if (o.tests & T_WRITE && !interrupted)
			test_write(st);
		if (o.tests & T_OVERWRITE && !interrupted)
			test_overwrite(st);
		if (o.tests & T_OVERWRITE_KV && !interrupted)
			test_overwrite_kv(st);
		if (o.tests & T_READ && !interrupted)
			st = test_read(st, o.dir);
		store_close(st);
	}
	if (o.tests & T_SMALL && !interrupted)
		test_small(o.dir);

	cleanup_tmp();
	if (interrupted) {
		fprintf(stderr, "atoll-storebench: interrupted\n");
		return 130;
	}
	return 0;
}
