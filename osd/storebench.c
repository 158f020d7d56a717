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
 * That engine, the output and the store helpers are storebench_run.c;
 * this file holds the workloads and the command line.
 *
 * Output: one "store<TAB>metric<TAB>value<TAB>unit" line per figure on
 * stdout (the shape of bench/disklimit.sh's, for bench/store-bench.sh), a
 * human summary on stderr.  MB means MiB here, as in disklimit.sh (fio's
 * KiB / 1024), except the RSS figures, which are in MB of 10^6 bytes to
 * match the "300 MB" target literally.
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
#include "storebench.h"

/* jemalloc's settings of atoll-osd (osd/main.c): freed pages are kept, not
 * given back after 10 s, so the engine is measured as the OSD runs it.
 * With the default decay the log's blocks (a 4 KiB copy each in the
 * index, freed by every checkpoint) and the checkpoint's buffer were
 * fresh pages again and again: ~6% of the samples in page faults, 4 KiB
 * durable writes 57,000 against 68,000-75,000 IOPS with these settings
 * (MALLOC_CONF in the environment still overrides them). */
extern const char *malloc_conf;
const char *malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";

enum { T_WRITE = 1, T_OVERWRITE = 2, T_READ = 4, T_SMALL = 8, T_ALL = 15, T_OVERWRITE_KV = 16 };

struct sb_opts sb_opt = {
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
		sb_stamp_block(fill.buf + b * IO_SIZE, obj, b);
	sb_obj_name(name, sizeof(name), fill.prefix, obj);
	rc = store_txn_write(t, fill.coll, name, 0, fill.buf, OBJ_SIZE, 0);
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, sb_txn_done, s);
}

/* Makes sure coll holds objects prefix.0 .. prefix.(n-1), writing the
 * missing ones (untimed setup). */
static void ensure_set(struct store *st, uint64_t coll, char prefix, uint64_t n,
		       const char *what)
{
	struct run r;
	uint64_t have, need_bytes, avail;
	int rc;

	sb_ensure_coll(st, coll);
	have = sb_count_objects(st, coll);
	if (have >= n)
		return;
	need_bytes = (n - have) * OBJ_SIZE;
	avail = sb_free_bytes(st);
	if (need_bytes + 64 * MiB > avail)
		sb_die("the %s needs %" PRIu64 " MiB more but the store has %" PRIu64 " MiB free; "
		       "use a bigger --size (new store) or a smaller set", what,
		       need_bytes / MiB, avail / MiB);
	sb_human("  writing the %s: %" PRIu64 " objects of 4 MiB (%" PRIu64 " MiB)...\n",
		 what, n - have, need_bytes / MiB);
	fill.coll = coll;
	fill.prefix = prefix;
	fill.first = have;
	fill.buf = malloc(OBJ_SIZE);
	if (!fill.buf)
		sb_die("out of memory");
	sb_fill_random(fill.buf, OBJ_SIZE);
	sb_run_init(&r, what, st, 8, 0);
	r.submit = fill_submit;
	r.limit_ops = n - have;
	rc = sb_run_go(&r);
	if (rc < 0)
		sb_die("writing the %s failed: %s", what, sb_errstr(rc));
	sb_run_fini(&r);
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
	sb_obj_name(name, sizeof(name), 'w', seq);
	rc = store_txn_write(t, COLL_WRITE, name, 0, wr.buf, OBJ_SIZE, 0);
	if (rc == 0 && seq >= wr.window) {
		sb_obj_name(name, sizeof(name), 'w', seq - wr.window);
		rc = store_txn_remove(t, COLL_WRITE, name);
	}
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, sb_txn_done, s);
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
		sb_die("cannot list collection 0x%" PRIx64 ": %s", coll, sb_errstr(r));
	for (size_t i = 0; i < l.n; i += 256) {
		struct store_txn *t = store_txn_new();

		if (!t)
			sb_die("out of memory");
		for (size_t j = i; j < l.n && j < i + 256; j++)
			if ((r = store_txn_remove(t, coll, l.names[j])) < 0)
				sb_die("cannot remove '%s': %s", l.names[j], sb_errstr(r));
		r = store_apply(st, t);
		if (r < 0)
			sb_die("cleaning collection 0x%" PRIx64 " failed: %s", coll, sb_errstr(r));
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
	unsigned qd = sb_opt.qd ? sb_opt.qd : 8;
	int rc;

	sb_human("write: 4 MiB objects, one transaction each, %u in flight\n", qd);
	sb_ensure_coll(st, COLL_WRITE);
	empty_coll(st, COLL_WRITE);	/* leftovers of an sb_interrupted run */
	avail = sb_free_bytes(st);
	reserve = avail / 20 > 32 * MiB ? avail / 20 : 32 * MiB;
	wr.window = avail > reserve ? (avail - reserve) / OBJ_SIZE : 0;
	if (wr.window < 2 * (uint64_t)qd)
		sb_die("write: the store has only %" PRIu64 " MiB free; it needs at least %" PRIu64
		       " MiB: use a bigger --size (new store) or a smaller --prefill",
		       avail / MiB, (2 * (uint64_t)qd * OBJ_SIZE + reserve) / MiB);
	wr.buf = malloc(OBJ_SIZE);
	if (!wr.buf)
		sb_die("out of memory");
	sb_fill_random(wr.buf, OBJ_SIZE);

	sb_run_init(&r, "write", st, qd, 0);
	r.submit = write_submit;
	r.seconds = sb_opt.count ? 0 : sb_opt.seconds;
	r.limit_ops = sb_opt.count;
	rc = sb_run_go(&r);
	if (rc < 0)
		sb_die("write: %s", sb_errstr(rc));
	res = sb_run_result(&r, OBJ_SIZE);
	sb_report("write_4M", &res);
	sb_metric("write_4M_qd", qd, "ops");
	sb_human_result("write 4 MiB objects", &res);
	if (r.done > wr.window)
		sb_human("  (kept the newest %" PRIu64 " objects: each later transaction also removed "
			 "the oldest)\n", wr.window);
	sb_run_fini(&r);
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
	uint64_t obj = sb_rnd() % ow.nobj, bno = sb_rnd() % (OBJ_SIZE / IO_SIZE);
	char name[32];
	struct store_txn *t = store_txn_new();
	int rc;

	(void)seq;
	if (!t)
		return -ENOMEM;
	sb_stamp_block(ow.buf, obj, bno);
	sb_obj_name(name, sizeof(name), 'o', obj);
	rc = store_txn_write(t, COLL_OVERWRITE, name, bno * IO_SIZE, ow.buf, IO_SIZE, 0);
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, sb_txn_done, s);
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
		sb_die("out of memory");
	sb_fill_random(ow.buf, IO_SIZE);
	sb_run_init(&r, name, st, qd, 0);
	r.submit = submit;
	r.seconds = sb_opt.count ? 0 : sb_opt.seconds;
	r.limit_ops = sb_opt.count;
	rc = sb_run_go(&r);
	if (rc < 0)
		sb_die("%s: %s", name, sb_errstr(rc));
	res = sb_run_result(&r, IO_SIZE);
	sb_report(key, &res);
	sb_human_result(what, &res);
	sb_run_fini(&r);
	free(ow.buf);
}

static uint64_t overwrite_set_objects(void)
{
	uint64_t n = sb_opt.overwrite_set / OBJ_SIZE;

	return n ? n : 1;
}

static void test_overwrite(struct store *st)
{
	unsigned qd = sb_opt.qd ? sb_opt.qd : 32;

	ow.nobj = overwrite_set_objects();
	sb_human("overwrite: 4 KiB at random offsets of %" PRIu64 " objects of 4 MiB, %u in flight, "
		 "each counted when durable\n", ow.nobj, qd);
	ensure_set(st, COLL_OVERWRITE, 'o', ow.nobj, "overwrite set");
	sb_metric("overwrite_4K_qd", qd, "ops");
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
	uint64_t obj = sb_rnd() % ow.nobj, bno = sb_rnd() % (OBJ_SIZE / IO_SIZE);
	unsigned pg = (unsigned)(obj % OWKV_PGS);
	uint64_t v = __atomic_add_fetch(&owkv_seq[pg], 1, __ATOMIC_RELAXED);
	char name[32], meta[32], key[24];
	struct store_txn *t = store_txn_new();
	int rc;

	(void)seq;
	if (!t)
		return -ENOMEM;
	sb_stamp_block(ow.buf, obj, bno);
	sb_obj_name(name, sizeof(name), 'o', obj);
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
	return store_queue(r->st, t, sb_txn_done, s);
}

static void test_overwrite_kv(struct store *st)
{
	unsigned qd = sb_opt.qd ? sb_opt.qd : 32;
	struct store_txn *t;
	int rc;

	ow.nobj = overwrite_set_objects();
	sb_human("overwrite-kv: 4 KiB at random offsets of %" PRIu64 " objects of 4 MiB, each with an "
		 "attribute and a pg-log update (3 omap mutations) on one of %u meta objects, %u in "
		 "flight, each counted when durable\n", ow.nobj, OWKV_PGS, qd);
	ensure_set(st, COLL_OVERWRITE, 'o', ow.nobj, "overwrite set");
	t = store_txn_new();
	if (!t)
		sb_die("out of memory");
	for (unsigned pg = 0; pg < OWKV_PGS; pg++) {
		char meta[32];

		snprintf(meta, sizeof(meta), "pgmeta.%u", pg);
		rc = store_txn_touch(t, COLL_OVERWRITE, meta);
		if (rc < 0)
			sb_die("overwrite-kv: %s", sb_errstr(rc));
	}
	rc = store_apply(st, t);
	if (rc < 0)
		sb_die("overwrite-kv: cannot create the meta objects: %s", sb_errstr(rc));
	sb_fill_random(owkv_val, sizeof(owkv_val));
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
	s->obj = sb_rnd() % rd.nobj;
	s->bno = sb_rnd() % (OBJ_SIZE / IO_SIZE);
	sb_obj_name(name, sizeof(name), 'r', s->obj);
	return store_read_async(r->st, COLL_READ, name, s->bno * IO_SIZE, IO_SIZE, s->buf,
				sb_read_done, s);
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
	unsigned qd = sb_opt.qd ? sb_opt.qd : 32;
	uint64_t io0, dev_bytes, want_bytes, hits;
	bool created;
	int rc;

	rd.nobj = sb_opt.prefill / OBJ_SIZE;
	if (rd.nobj == 0)
		rd.nobj = 1;
	sb_human("read: 4 KiB random reads over %" PRIu64 " MiB (%" PRIu64 " objects), %u in flight, "
		 "store reopened first\n", rd.nobj * OBJ_SIZE / MiB, rd.nobj, qd);
	ensure_set(st, COLL_READ, 'r', rd.nobj, "read set");

	/* Reopen with cold caches: the data then comes from the disk. */
	store_close(st);
	sb_drop_cache(dir);
	st = sb_open_or_create(dir, sb_opt.size, 0, &created);

	sb_run_init(&r, "read", st, qd, IO_SIZE);
	r.chain = true;
	r.submit = read_submit;
	r.verify_reads = true;
	r.expect_len = IO_SIZE;
	r.seconds = sb_opt.count ? 0 : sb_opt.seconds;
	r.limit_ops = sb_opt.count;
	io0 = proc_read_bytes();
	rc = sb_run_go(&r);
	dev_bytes = proc_read_bytes() - io0;
	if (rc < 0)
		sb_die("read: %s", sb_errstr(rc));
	res = sb_run_result(&r, IO_SIZE);
	sb_report("randread_4K", &res);
	sb_metric("randread_4K_qd", qd, "ops");
	want_bytes = r.done * IO_SIZE;
	/* The store reads data with O_DIRECT and keeps no data cache, so no
	 * read can be served from memory; the device counter confirms it
	 * (it also counts the kv's own metadata pages, so it may exceed
	 * what was asked for, never fall short of it when nothing hit). */
	hits = dev_bytes >= want_bytes ? 0 : (want_bytes - dev_bytes) / IO_SIZE;
	sb_metric("randread_4K_cache_hits", (double)hits, "ops");
	sb_metric("randread_4K_device_read_MB", (double)(dev_bytes / MiB), "MB");
	sb_metric("randread_4K_set_MB", (double)(rd.nobj * OBJ_SIZE / MiB), "MB");
	sb_metric("randread_4K_verify_errors", (double)r.verify_errors, "ops");
	sb_human_result("read 4 KiB random", &res);
	sb_human("  cache hits: %" PRIu64 " (the store reads with O_DIRECT and keeps no data cache; "
		 "the device delivered %" PRIu64 " MiB for %" PRIu64 " MiB asked)\n",
		 hits, dev_bytes / MiB, want_bytes / MiB);
	if (r.verify_errors)
		sb_die("read: %" PRIu64 " reads returned wrong data", r.verify_errors);
	sb_run_fini(&r);
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
		sb_die("folder name '%s' is too long", dir);
}

/* Small objects up to the store's inline limit (2048 bytes by default)
 * live in the kv; bigger ones need blocks.  The block file is allocated
 * whole by the store, so it gets only what the objects need. */
static uint64_t small_block_size(void)
{
	uint64_t per = sb_opt.small_size > 2048 ? ((uint64_t)sb_opt.small_size + 4095) / 4096 * 4096 : 0;

	return sb_opt.small_count * per / 4 * 5 + 256 * MiB;
}

static uint64_t small_kv_max(void)
{
	uint64_t b = sb_opt.small_count * ((uint64_t)sb_opt.small_size + 512) * 3;

	return b < GiB ? GiB : b;
}

static void small_fill_obj(uint8_t *buf, uint64_t i)
{
	memset(buf, (int)(i & 0xff), sb_opt.small_size);
	if (sb_opt.small_size >= 16)
		sb_stamp_block(buf, i, 0);
}

static int small_submit(struct run *r, struct slot *s, uint64_t seq)
{
	uint64_t first = seq * sb_opt.small_batch;
	struct store_txn *t = store_txn_new();
	int rc = 0;

	if (!t)
		return -ENOMEM;
	for (uint64_t i = first; i < first + sb_opt.small_batch && i < sm.count && rc == 0; i++) {
		char name[32];

		sb_obj_name(name, sizeof(name), 's', i);
		small_fill_obj(sm.buf, i);
		rc = store_txn_write(t, COLL_SMALL, name, 0, sm.buf, sb_opt.small_size, 0);
	}
	if (rc < 0) {
		store_txn_free(t);
		return rc;
	}
	return store_queue(r->st, t, sb_txn_done, s);
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

	sb_paths_of(&p, sdir);
	sb_opts_of(&so, &p, 0, small_kv_max());
	lat = calloc(sb_opt.small_reads ? sb_opt.small_reads : 1, sizeof(*lat));
	buf = malloc(sb_opt.small_size + 4096);
	want = malloc(sb_opt.small_size);
	if (!lat || !buf || !want)
		sb_die("out of memory");
	sb_drop_cache(sdir);
	base_anon = status_kb("RssAnon");
	t0 = mono_now_ns();
	r = store_open(&so, &st);
	open_ns = mono_now_ns() - t0;
	if (r < 0)
		sb_die("smallobjects: cannot open the store in '%s': %s", sdir, sb_errstr(r));
	anon1 = status_kb("RssAnon");
	file1 = status_kb("RssFile");

	for (uint64_t i = 0; i < sb_opt.small_reads; i++) {
		uint64_t k = sb_rnd() % sb_opt.small_count;
		char name[32];
		int64_t n;

		sb_obj_name(name, sizeof(name), 's', k);
		t0 = mono_now_ns();
		n = store_read(st, COLL_SMALL, name, 0, sb_opt.small_size + 4096, buf);
		lat[i] = mono_now_ns() - t0;
		small_fill_obj(want, k);
		if (n != (int64_t)sb_opt.small_size || memcmp(buf, want, sb_opt.small_size))
			bad++;
	}
	anon2 = status_kb("RssAnon");
	file2 = status_kb("RssFile");
	store_close(st);

	sb_metric("small_open_s", (double)open_ns / 1e9, "s");
	sb_metric("small_rss_anon_before_open_MB", kb_to_mb(base_anon), "MB");
	sb_metric("small_rss_anon_open_MB", kb_to_mb(anon1), "MB");
	sb_metric("small_rss_file_open_MB", kb_to_mb(file1), "MB");
	sb_metric("small_rss_anon_MB", kb_to_mb(anon2), "MB");
	sb_metric("small_rss_file_MB", kb_to_mb(file2), "MB");
	if (sb_opt.small_reads) {
		qsort(lat, sb_opt.small_reads, sizeof(*lat), sb_cmp_u64);
		sb_metric("small_read_lat_p50_us", (double)(lat[(sb_opt.small_reads - 1) / 2] / 1000), "us");
		sb_metric("small_read_lat_p99_us",
			  (double)(lat[(sb_opt.small_reads - 1) * 99 / 100] / 1000), "us");
	}
	sb_metric("small_read_errors", (double)bad, "ops");
	sb_human("  open (cold cache)      %.3f s\n", open_ns / 1e9);
	sb_human("  after open             RssAnon %.1f MB, RssFile %.1f MB (RssAnon before open %.1f MB)\n",
		 kb_to_mb(anon1), kb_to_mb(file1), kb_to_mb(base_anon));
	sb_human("  after %-8" PRIu64 " reads   RssAnon %.1f MB, RssFile %.1f MB "
		 "(RssFile: the kv's mapped pages)\n", sb_opt.small_reads, kb_to_mb(anon2), kb_to_mb(file2));
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
	sb_human("smallobjects: %" PRIu64 " objects of %u bytes, %u per transaction\n",
		 sb_opt.small_count, sb_opt.small_size, sb_opt.small_batch);
	st = sb_open_or_create(sdir, small_block_size(), small_kv_max(), &created);
	if (!created) {
		struct store_statfs sf;
		int r = store_statfs(st, &sf);

		if (r < 0)
			sb_die("smallobjects: statfs failed: %s", sb_errstr(r));
		have = sf.objects;
		if (have != sb_opt.small_count) {
			/* Another count, or an sb_interrupted run: start over. */
			sb_human("  the store in '%s' holds %" PRIu64 " objects; recreating it\n",
				 sdir, have);
			store_close(st);
			sb_rm_tree(sdir);
			st = sb_open_or_create(sdir, small_block_size(), small_kv_max(), &created);
			have = 0;
		}
	}
	if (have == 0) {
		struct run r;
		struct result res;
		int rc;

		sb_ensure_coll(st, COLL_SMALL);
		sm.count = sb_opt.small_count;
		sm.buf = malloc(sb_opt.small_size);
		if (!sm.buf)
			sb_die("out of memory");
		sb_run_init(&r, "smallobjects", st, 4, 0);
		r.submit = small_submit;
		r.limit_ops = (sb_opt.small_count + sb_opt.small_batch - 1) / sb_opt.small_batch;
		rc = sb_run_go(&r);
		if (rc < 0)
			sb_die("smallobjects: creating the objects failed: %s", sb_errstr(rc));
		res = sb_run_result(&r, 0);
		sb_metric("small_create_s", res.secs, "s");
		sb_metric("small_create_objs_per_s", (double)(int64_t)(sb_opt.small_count / res.secs),
			  "objects/s");
		sb_human("  created                %" PRIu64 " objects in %.1f s (%.0f objects/s)\n",
			 sb_opt.small_count, res.secs, sb_opt.small_count / res.secs);
		sb_run_fini(&r);
		free(sm.buf);
	} else {
		sb_human("  reusing the %" PRIu64 " objects already in '%s'\n", have, sdir);
	}
	sb_metric("small_objects", (double)sb_opt.small_count, "objects");
	store_close(st);

	/* Measure in a fresh process: exec ourselves. */
	snprintf(arg_count, sizeof(arg_count), "%" PRIu64, sb_opt.small_count);
	snprintf(arg_size, sizeof(arg_size), "%u", sb_opt.small_size);
	snprintf(arg_reads, sizeof(arg_reads), "%" PRIu64, sb_opt.small_reads);
	snprintf(arg_seed, sizeof(arg_seed), "%" PRIu64, sb_opt.seed);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		sb_die("fork failed: %s", strerror(errno));
	if (pid == 0) {
		char *args[] = { "atoll-storebench", "--small-count", arg_count,
				 "--small-size", arg_size, "--small-reads", arg_reads,
				 "--seed", arg_seed, "--measure-small", sdir, NULL, NULL, NULL };

		if (sb_opt.log) {	/* the log goes on in the measuring process */
			args[11] = "--log";
			args[12] = (char *)sb_opt.log;
		}

		execv(self_exe, args);
		fprintf(stderr, "atoll-storebench: cannot run '%s': %s\n", self_exe, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			sb_die("waitpid failed: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		sb_die("smallobjects: the measuring process failed");
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
"                       logged (default: the store's, 1; store.h, flushers)\n"
"  --keep               keep the temporary folder\n"
"  --seed N             random seed (default 0x5eed)\n"
"  --stall-timeout N    give up when no op completes for N seconds (default 120)\n"
"  --log LEVEL          the store's own log on stderr (error, warn, info, debug;\n"
"                       debug adds the commit thread's time profile)\n"
"  -h, --help           this help\n"
"\n"
"SIZE takes a suffix K, M, G or T (powers of 1024).\n"
"Output: \"store<TAB>metric<TAB>value<TAB>unit\" lines on stdout (MB = MiB for\n"
"throughput, as in disklimit.sh; RSS in MB of 10^6 bytes), a summary on stderr.\n"
"bench/store-bench.sh runs this beside bench/disklimit.sh and prints\n"
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
	OPT_STALL, OPT_MEASURE, OPT_NOZERO, OPT_FLUSHERS, OPT_LOG,
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
		{ "log", required_argument, NULL, OPT_LOG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};

	const char *measure = NULL;
	struct store *st = NULL;
	struct sigaction sa;
	uint64_t v;
	char *endp;
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		const char *name = c >= OPT_DIR && c <= OPT_LOG ? lopts[c - OPT_DIR].name : "";

		switch (c) {
		case OPT_DIR: sb_opt.dir = optarg; sb_opt.dir_given = true; break;
		case OPT_SIZE:
			if (config_parse_size(optarg, &sb_opt.size) || sb_opt.size < 64 * MiB)
				bad_value(name, optarg, "give a size of at least 64M");
			break;
		case OPT_SECONDS:
			sb_opt.seconds = strtod(optarg, &endp);
			if (*endp || !(sb_opt.seconds > 0))
				bad_value(name, optarg, NULL);
			break;
		case OPT_COUNT:
			if (!parse_u64(optarg, &sb_opt.count) || !sb_opt.count)
				bad_value(name, optarg, NULL);
			break;
		case OPT_QD:
			if (!parse_u64(optarg, &v) || !v || v > 4096)
				bad_value(name, optarg, "give 1 to 4096");
			sb_opt.qd = (unsigned)v;
			break;
		case OPT_PREFILL:
			if (config_parse_size(optarg, &sb_opt.prefill) || sb_opt.prefill < OBJ_SIZE)
				bad_value(name, optarg, "give a size of at least 4M");
			break;
		case OPT_OWSET:
			if (config_parse_size(optarg, &sb_opt.overwrite_set) || sb_opt.overwrite_set < OBJ_SIZE)
				bad_value(name, optarg, "give a size of at least 4M");
			break;
		case OPT_SCOUNT:
			if (!parse_u64(optarg, &sb_opt.small_count) || !sb_opt.small_count ||
			    sb_opt.small_count > 100000000)
				bad_value(name, optarg, NULL);
			break;
		case OPT_SSIZE:
			if (config_parse_size(optarg, &v) || !v || v > 1 * MiB)
				bad_value(name, optarg, "give 1 to 1M bytes");
			sb_opt.small_size = (uint32_t)v;
			break;
		case OPT_SBATCH:
			if (!parse_u64(optarg, &v) || !v || v > 100000)
				bad_value(name, optarg, NULL);
			sb_opt.small_batch = (uint32_t)v;
			break;
		case OPT_SREADS:
			if (!parse_u64(optarg, &sb_opt.small_reads) || sb_opt.small_reads > 100000000)
				bad_value(name, optarg, NULL);
			break;
		case OPT_QUICK:
			sb_opt.size = 512 * MiB;
			sb_opt.seconds = 2;
			sb_opt.prefill = 64 * MiB;
			sb_opt.overwrite_set = 16 * MiB;
			sb_opt.small_count = 2000;
			sb_opt.small_reads = 500;
			break;
		case OPT_KEEP: sb_opt.keep = true; break;
		case OPT_FLUSHERS:
			if (!parse_u64(optarg, &v) || !v || v > STORE_FLUSHERS_MAX)
				bad_value(name, optarg, "give 1 to 8");
			sb_opt.flushers = (unsigned)v;
			break;
		case OPT_SEED:
			if (!parse_u64(optarg, &sb_opt.seed))
				bad_value(name, optarg, NULL);
			break;
		case OPT_STALL:
			if (!parse_u64(optarg, &v) || !v || v > 86400)
				bad_value(name, optarg, NULL);
			sb_opt.stall_s = (unsigned)v;
			break;
		case OPT_MEASURE: measure = optarg; break;
		case OPT_LOG: {
			/* --log debug shows the store's own log on stderr, with
			 * the commit thread's time profile at each close */
			int lvl = log_level_parse(optarg);

			if (lvl < 0)
				bad_value(name, optarg, "give error, warn, info or debug");
			sb_opt.log = optarg;
			log_open("storebench", (enum log_level)lvl, NULL);
			break;
		}
		case OPT_NOZERO: sb_opt.no_zero = true; break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "see atoll-storebench --help\n");
			return 2;
		}
	}
	sb_rng_init(sb_opt.seed);

	if (measure)
		return measure_small(measure);

	for (int i = optind; i < argc; i++) {
		if (!strcmp(argv[i], "write"))
			sb_opt.tests |= T_WRITE;
		else if (!strcmp(argv[i], "overwrite"))
			sb_opt.tests |= T_OVERWRITE;
		else if (!strcmp(argv[i], "overwrite-kv"))
			sb_opt.tests |= T_OVERWRITE_KV;
		else if (!strcmp(argv[i], "read"))
			sb_opt.tests |= T_READ;
		else if (!strcmp(argv[i], "smallobjects"))
			sb_opt.tests |= T_SMALL;
		else if (!strcmp(argv[i], "all"))
			sb_opt.tests |= T_ALL;
		else {
			fprintf(stderr, "atoll-storebench: unknown test '%s'; the tests are write, "
				"overwrite, overwrite-kv, read, smallobjects and all\n", argv[i]);
			return 2;
		}
	}
	if (!sb_opt.tests)
		sb_opt.tests = T_ALL;

	{
		ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);

		if (n < 0)
			sb_die("cannot find my own program file: %s", strerror(errno));
		self_exe[n] = 0;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sb_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	if (!sb_opt.dir) {
		const char *base = getenv("TMPDIR");

		if (!base || !*base)
			base = "/var/tmp";
		if (snprintf(sb_tmp_dir, sizeof(sb_tmp_dir), "%s/atoll-storebench.XXXXXX", base) >=
		    (int)sizeof(sb_tmp_dir))
			sb_die("TMPDIR '%s' is too long", base);
		if (!mkdtemp(sb_tmp_dir))
			sb_die("cannot create a folder under '%s': %s; pick one with --dir", base,
			       strerror(errno));
		sb_opt.dir = sb_tmp_dir;
	}

	sb_human("atoll-storebench in '%s'%s\n", sb_opt.dir,
		 sb_opt.dir_given ? "" : (sb_opt.keep ? " (kept)" : " (removed at the end)"));
	sb_metric("seconds_per_test", sb_opt.seconds, "s");

	if (sb_opt.tests & (T_WRITE | T_OVERWRITE | T_OVERWRITE_KV | T_READ)) {
		bool created;

		st = sb_open_or_create(sb_opt.dir, sb_opt.size, 0, &created);
		{
			struct store_statfs sf;

			if (store_statfs(st, &sf) == 0)
				sb_human("  store: %" PRIu64 " MiB data area, %" PRIu64 " MiB free%s\n",
					 sf.total / MiB, sf.free / MiB, created ? " (new)" : "");
		}
		if (sb_opt.tests & T_WRITE && !sb_interrupted)
			test_write(st);
		if (sb_opt.tests & T_OVERWRITE && !sb_interrupted)
			test_overwrite(st);
		if (sb_opt.tests & T_OVERWRITE_KV && !sb_interrupted)
			test_overwrite_kv(st);
		if (sb_opt.tests & T_READ && !sb_interrupted)
			st = test_read(st, sb_opt.dir);
		store_close(st);
	}
	if (sb_opt.tests & T_SMALL && !sb_interrupted)
		test_small(sb_opt.dir);

	sb_cleanup_tmp();
	if (sb_interrupted) {
		fprintf(stderr, "atoll-storebench: sb_interrupted\n");
		return 130;
	}
	return 0;
}
