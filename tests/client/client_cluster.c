/*
 * client_cluster.c - the client library against a live cluster, through
 * the public API only (it links libatoll.so like any user program).
 *
 * usage: client-cluster-test POOL [OBJECTS [MAX_TOTAL_MIB]]
 *   (the cluster comes from $ATOLL_CONF; client-cluster.sh starts one)
 *
 * Steps, each named in the output:
 *   workload   OBJECTS objects (default 2000) of random sizes, log-uniform
 *              in 0 B..8 MiB and at most MAX_TOTAL_MIB (default 1024) in
 *              all, written with async ops (the library's throttle bounds
 *              what is in flight), read back async and compared by
 *              checksum; then stat of each size.
 *   listing    every object exactly once, also when the listing is
 *              stopped half-way and resumed from its cursor on a new list.
 *   compound   guards (create exclusive, assert version, cmpxattr) make
 *              the whole op fail and change nothing; read ops fill every
 *              output; mixing reads and changes is refused.
 *   xattrs     set/get/getxattrs/rm, -ERANGE, -ENODATA.
 *   omap       set, paged list, get of some keys, rm, clear.
 *   cleanup    async removes; the pool lists empty.
 *   hold       between atoll_hold and atoll_release, on a handle whose
 *              throttle lets 4 ops fly: 16 async writes (the throttle
 *              waits), a synchronous stat and an atoll_completion_wait
 *              all return, nested holds, and every write completes with 0
 *              and reads back.  (It cannot force a held request to be the
 *              only thing the loop could wake for: the first call on an
 *              idle connection leaves from its caller's thread.)
 *   shutdown   a second handle shut down with writes in flight: each
 *              completion fires exactly once, with 0 or -ESHUTDOWN (at
 *              least one -ESHUTDOWN), before shutdown returns; an op
 *              issued from such a callback is refused with -ESHUTDOWN;
 *              each completion's free function runs once.
 */
#include <atoll/atoll.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define MAX_OBJ		(8u << 20)

#define CHECK(cond, ...) TU_CHECK(cond, return -1, __VA_ARGS__)

/* A checksum of n bytes, 8 at a time (FNV-1a's step on words, then a
 * shift to mix the high bits down): the test sums 1 GiB twice, in part on
 * the library's thread (completion callbacks), so it must be cheap. */
static uint64_t sum64(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ n, w;
	size_t k = 0;

	for (; k + 8 <= n; k += 8) {
		memcpy(&w, b + k, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Object i's bytes: a cheap stream that differs per object and offset,
 * 8 bytes per step. */
static void fill(unsigned char *p, size_t n, uint32_t i)
{
	uint64_t x = 0x2545f4914f6cdd1dull * (i + 1);

	for (size_t k = 0; k < n; k += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + k, &x, n - k < 8 ? n - k : 8);
	}
}

/* ---- workload ---- */

struct obj {
	char name[32];
	size_t size;
	uint64_t sum;
};

struct io_ctx {
	struct obj *o;
	unsigned char *buf;
	int64_t result;
	int kind;		/* 0 write, 1 read, 2 remove */
};

static struct obj *objs;
static uint32_t nobjs;
static atomic_int bad_results, mismatches, done_ops;

static void on_io(struct atoll_completion *comp, void *arg)
{
	struct io_ctx *x = arg;
	int64_t r = atoll_completion_return(comp);

	if (x->kind == 0 && r != 0) {
		fprintf(stderr, "write '%s' (%zu bytes): %s\n", x->o->name, x->o->size,
			atoll_strerror((int)r));
		atomic_fetch_add(&bad_results, 1);
	} else if (x->kind == 1) {
		if (r != (int64_t)x->o->size) {
			fprintf(stderr, "read '%s': %" PRId64 " bytes, expected %zu\n",
				x->o->name, r, x->o->size);
			atomic_fetch_add(&bad_results, 1);
		} else if (sum64(x->buf, x->o->size) != x->o->sum) {
			fprintf(stderr, "read '%s': checksum differs\n", x->o->name);
			atomic_fetch_add(&mismatches, 1);
		}
	} else if (x->kind == 2 && r != 0) {
		fprintf(stderr, "remove '%s': %s\n", x->o->name, atoll_strerror((int)r));
		atomic_fetch_add(&bad_results, 1);
	}
	free(x->buf);
	free(x);
	atomic_fetch_add(&done_ops, 1);
	/* released from the callback, as the header allows */
	atoll_completion_release(comp);
}

/* Issues one async op per object (kind), then waits for all of them. */
static int run_all(struct atoll_ioctx *io, int kind)
{
	atomic_store(&done_ops, 0);
	for (uint32_t i = 0; i < nobjs; i++) {
		struct atoll_completion *comp;
		struct io_ctx *x = calloc(1, sizeof(*x));
		int r;

		CHECK(x, "out of memory");
		x->o = &objs[i];
		x->kind = kind;
		if (kind != 2) {
			x->buf = malloc(objs[i].size + 1);
			CHECK(x->buf, "out of memory");
		}
		if (kind == 0)
			fill(x->buf, objs[i].size, i);
		CHECK(atoll_completion_create(on_io, x, NULL, &comp) == 0, "completion");
		if (kind == 0)
			r = atoll_aio_write_full(io, objs[i].name, comp, x->buf, objs[i].size, 0);
		else if (kind == 1)
			/* one byte more than written: an object too long shows */
			r = atoll_aio_read(io, objs[i].name, comp, x->buf, objs[i].size + 1, 0, 0);
		else
			r = atoll_aio_remove(io, objs[i].name, comp, 0);
		if (r < 0) {
			free(x->buf);
			free(x);
			atoll_completion_release(comp);
		}
		CHECK(r == 0, "issue op %d on '%s': %s", kind, objs[i].name,
		      atoll_strerror(r));
	}
	while ((uint32_t)atomic_load(&done_ops) < nobjs) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	return 0;
}

static int test_workload(struct atoll_ioctx *io, uint32_t n, uint64_t max_total)
{
	uint64_t total = 0;
	double t0;

	nobjs = n;
	objs = calloc(n, sizeof(*objs));
	CHECK(objs, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		double u = (double)(rnd() >> 11) / 9007199254740992.0;
		size_t size = (size_t)(exp(u * log((double)MAX_OBJ + 1.0)) - 1.0);

		if (size > MAX_OBJ)
			size = MAX_OBJ;
		if (total + size > max_total)
			size = (size_t)(max_total - total);
		/* the edges are always in the mix */
		if (i == 0)
			size = 0;
		if (i == 1 && total + MAX_OBJ <= max_total)
			size = MAX_OBJ;
		objs[i].size = size;
		total += size;
		snprintf(objs[i].name, sizeof(objs[i].name), "obj-%05u", i);
	}
	/* checksums from the same generator, before anything is sent */
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *b = malloc(objs[i].size + 1);

		CHECK(b, "out of memory");
		fill(b, objs[i].size, i);
		objs[i].sum = sum64(b, objs[i].size);
		free(b);
	}
	t0 = tu_now_s();
	if (run_all(io, 0) < 0)
		return -1;
	CHECK(atomic_load(&bad_results) == 0, "%d writes failed", atomic_load(&bad_results));
	printf("workload: wrote %u objects, %.1f MiB in %.1f s\n", n,
	       (double)total / (1 << 20), tu_now_s() - t0);
	t0 = tu_now_s();
	if (run_all(io, 1) < 0)
		return -1;
	CHECK(atomic_load(&bad_results) == 0, "%d reads failed", atomic_load(&bad_results));
	CHECK(atomic_load(&mismatches) == 0, "%d objects differ", atomic_load(&mismatches));
	printf("workload: read back and compared %u objects in %.1f s\n", n, tu_now_s() - t0);
	for (uint32_t i = 0; i < n && i < 50; i++) {
		uint64_t size = ~0ull, mtime = 0;
		int r = atoll_stat(io, objs[i].name, &size, &mtime, 0);

		CHECK(r == 0, "stat '%s': %s", objs[i].name, atoll_strerror(r));
		CHECK(size == objs[i].size, "stat '%s': size %" PRIu64 ", expected %zu",
		      objs[i].name, size, objs[i].size);
	}
	return 0;
}

/* ---- listing ---- */

/* Lists from l into seen[] (by object number); stops after stop names
 * (0 = to the end).  Returns the names seen or -1. */
static long list_into(struct atoll_list *l, unsigned char *seen, long stop)
{
	const char *oid;
	long count = 0;
	int r;

	while ((stop == 0 || count < stop) && (r = atoll_list_next(l, &oid)) == 0) {
		unsigned idx;

		count++;
		if (sscanf(oid, "obj-%05u", &idx) != 1 || idx >= nobjs)
			continue;	/* not ours (the compound/xattr objects) */
		if (seen[idx]++) {
			fprintf(stderr, "FAIL: '%s' listed twice\n", oid);
			return -1;
		}
	}
	if (stop == 0 && r != -ENOENT) {
		fprintf(stderr, "FAIL: list_next: %s\n", atoll_strerror(r));
		return -1;
	}
	return count;
}

static int test_listing(struct atoll_ioctx *io)
{
	unsigned char *seen = calloc(nobjs, 1);
	struct atoll_list *l, *l2;
	char cursor[512];
	long a, b;

	CHECK(seen, "out of memory");
	CHECK(atoll_list_open(io, &l, 0) == 0, "list_open");
	CHECK(list_into(l, seen, 0) >= 0, "full listing");
	atoll_list_close(l);
	for (uint32_t i = 0; i < nobjs; i++)
		CHECK(seen[i] == 1, "'%s' listed %d times", objs[i].name, seen[i]);

	/* half, then resume from the cursor on a new listing */
	memset(seen, 0, nobjs);
	CHECK(atoll_list_open(io, &l, 0) == 0, "list_open");
	a = list_into(l, seen, nobjs / 2);
	CHECK(a == nobjs / 2, "first half: %ld", a);
	CHECK(atoll_list_cursor(l, cursor, sizeof(cursor)) == 0, "cursor");
	CHECK(atoll_list_cursor(l, cursor, 2) == -ERANGE, "cursor in 2 bytes");
	atoll_list_close(l);
	CHECK(atoll_list_open(io, &l2, 0) == 0, "list_open");
	CHECK(atoll_list_seek(l2, cursor) == 0, "seek '%s'", cursor);
	CHECK(atoll_list_seek(l2, "not a cursor") == -EINVAL, "bad cursor accepted");
	CHECK(atoll_list_seek(l2, cursor) == 0, "seek '%s'", cursor);
	b = list_into(l2, seen, 0);
	CHECK(b >= 0, "second half");
	atoll_list_close(l2);
	for (uint32_t i = 0; i < nobjs; i++)
		CHECK(seen[i] == 1, "resumed listing: '%s' seen %d times", objs[i].name,
		      seen[i]);
	printf("listing: %u objects exactly once (also resumed at '%s')\n", nobjs, cursor);
	free(seen);
	return 0;
}

/* ---- compound ops ---- */

static int test_compound(struct atoll_ioctx *io)
{
	const char *oid = "compound-obj";
	char buf[64] = { 0 };
	size_t got = 0;
	uint64_t size = 0, mtime = 0, ver;
	struct atoll_kv_iter *xit = NULL;
	struct atoll_completion *comp;
	struct atoll_op *op;
	const void *k, *v;
	size_t kl, vl;
	int rv1 = 1, rv2 = 1, rv3 = 1, r;

	atoll_remove(io, oid, 0);
	/* exclusive create + write + xattr, atomically */
	op = atoll_op_create(0);
	atoll_op_create_object(op, 1);
	atoll_op_write_full(op, "version-one", 11);
	atoll_op_setxattr(op, "state", "one", 3);
	CHECK(atoll_completion_create(NULL, NULL, NULL, &comp) == 0, "completion");
	CHECK(atoll_aio_op_operate(op, io, oid, comp, 0) == 0, "aio operate");
	CHECK(atoll_completion_wait(comp) == 0, "create+write: %s",
	      atoll_strerror((int)atoll_completion_return(comp)));
	ver = atoll_completion_version(comp);
	CHECK(ver > 0, "no version after a write");
	atoll_completion_release(comp);
	atoll_op_release(op);

	/* exclusive create again: -EEXIST, and the write in it is not applied */
	op = atoll_op_create(0);
	atoll_op_create_object(op, 1);
	atoll_op_write_full(op, "clobbered!!", 11);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	CHECK(r == -EEXIST, "second exclusive create: %s", atoll_strerror(r));

	/* a wrong version: -ERANGE, nothing applied */
	op = atoll_op_create(0);
	atoll_op_assert_version(op, ver + 100);
	atoll_op_write_full(op, "clobbered!!", 11);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	CHECK(r == -ERANGE, "assert_version: %s", atoll_strerror(r));

	/* a false comparison: -ECANCELED, nothing applied */
	op = atoll_op_create(0);
	atoll_op_cmpxattr(op, "state", ATOLL_CMP_EQ, "two", 3);
	atoll_op_setxattr(op, "state", "bad", 3);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	CHECK(r == -ECANCELED, "cmpxattr false: %s", atoll_strerror(r));

	/* true guards: applied */
	op = atoll_op_create(0);
	atoll_op_assert_version(op, ver);
	atoll_op_cmpxattr(op, "state", ATOLL_CMP_EQ, "one", 3);
	atoll_op_cmpxattr(op, "state", ATOLL_CMP_LT, "p", 1);
	atoll_op_append(op, "+two", 4);
	atoll_op_setxattr(op, "state", "two", 3);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	CHECK(r == 0, "true guards: %s", atoll_strerror(r));

	/* a read op fills every output */
	op = atoll_op_create(0);
	atoll_op_assert_exists(op);
	atoll_op_read(op, 0, sizeof(buf), buf, &got, &rv1);
	atoll_op_stat(op, &size, &mtime, &rv2);
	atoll_op_getxattr(op, "state", &xit, &rv3);
	r = atoll_op_operate(op, io, oid, 0);
	atoll_op_release(op);
	CHECK(r == 0, "read op: %s", atoll_strerror(r));
	CHECK(rv1 == 0 && rv2 == 0 && rv3 == 0, "step results %d %d %d", rv1, rv2, rv3);
	CHECK(got == 15 && memcmp(buf, "version-one+two", 15) == 0, "read %zu '%.*s'",
	      got, (int)got, buf);
	CHECK(size == 15 && mtime > 0, "stat %" PRIu64 " %" PRIu64, size, mtime);
	CHECK(xit && atoll_kv_iter_next(xit, &k, &kl, &v, &vl) == 0, "getxattr iterator");
	CHECK(kl == 5 && memcmp(k, "state", 5) == 0 && vl == 3 && memcmp(v, "two", 3) == 0,
	      "getxattr entry");
	atoll_kv_iter_free(xit);

	/* mixing is refused before sending */
	op = atoll_op_create(0);
	atoll_op_read(op, 0, sizeof(buf), buf, NULL, NULL);
	atoll_op_truncate(op, 0);
	CHECK(atoll_op_operate(op, io, oid, 0) == -EINVAL, "mixed op accepted");
	atoll_op_release(op);

	/* a guard on a missing object */
	op = atoll_op_create(0);
	atoll_op_assert_exists(op);
	atoll_op_write(op, "x", 1, 0);
	r = atoll_op_operate(op, io, "compound-missing", 0);
	atoll_op_release(op);
	CHECK(r == -ENOENT, "assert_exists on a missing object: %s", atoll_strerror(r));
	CHECK(atoll_stat(io, "compound-missing", NULL, NULL, 0) == -ENOENT,
	      "a failed op created the object");

	CHECK(atoll_remove(io, oid, 0) == 0, "remove");
	printf("compound: guards, atomicity and read outputs ok\n");
	return 0;
}

/* ---- xattrs and omap ---- */

static int test_xattrs(struct atoll_ioctx *io)
{
	const char *oid = "xattr-obj";
	struct atoll_kv_iter *it;
	char buf[16];
	const void *k, *v;
	size_t kl, vl;
	int64_t n;
	int count = 0;

	CHECK(atoll_write_full(io, oid, "data", 4, 0) == 0, "write");
	CHECK(atoll_setxattr(io, oid, "user.a", "alpha", 5, 0) == 0, "setxattr a");
	CHECK(atoll_setxattr(io, oid, "user.b", "", 0, 0) == 0, "setxattr b (empty)");
	n = atoll_getxattr(io, oid, "user.a", buf, sizeof(buf), 0);
	CHECK(n == 5 && memcmp(buf, "alpha", 5) == 0, "getxattr a: %" PRId64, n);
	n = atoll_getxattr(io, oid, "user.a", buf, 2, 0);
	CHECK(n == -ERANGE, "getxattr into 2 bytes: %" PRId64, n);
	n = atoll_getxattr(io, oid, "user.none", buf, sizeof(buf), 0);
	CHECK(n == -ENODATA, "missing xattr: %" PRId64, n);
	n = atoll_getxattr(io, oid, "user.b", buf, sizeof(buf), 0);
	CHECK(n == 0, "empty xattr: %" PRId64, n);
	CHECK(atoll_getxattrs(io, oid, &it, 0) == 0, "getxattrs");
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (kl == 6 && memcmp(k, "user.a", 6) == 0)
			CHECK(vl == 5 && memcmp(v, "alpha", 5) == 0, "getxattrs a");
		count++;
	}
	atoll_kv_iter_free(it);
	CHECK(count == 2, "getxattrs: %d entries", count);
	CHECK(atoll_rmxattr(io, oid, "user.a", 0) == 0, "rmxattr");
	n = atoll_getxattr(io, oid, "user.a", buf, sizeof(buf), 0);
	CHECK(n == -ENODATA, "removed xattr: %" PRId64, n);
	CHECK(atoll_remove(io, oid, 0) == 0, "remove");
	printf("xattrs: ok\n");
	return 0;
}

static int test_omap(struct atoll_ioctx *io)
{
	const char *oid = "omap-obj";
	struct atoll_kv kv[100];
	char keys[100][8], vals[100][16];
	struct atoll_kv_iter *it;
	const void *k, *v;
	size_t kl, vl;
	char after[8];
	size_t afterlen = 0;
	int more = 1, total = 0, pages = 0;

	for (int i = 0; i < 100; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%03d", i);
		snprintf(vals[i], sizeof(vals[i]), "value-%d", i);
		kv[i] = (struct atoll_kv){ keys[i], 4, vals[i], strlen(vals[i]) };
	}
	CHECK(atoll_omap_set(io, oid, kv, 100, 0) == 0, "omap_set");
	/* pages of 30, in key order */
	while (more) {
		CHECK(atoll_omap_list(io, oid, afterlen ? after : NULL, afterlen, 30, &it,
				      &more, 0) == 0, "omap_list");
		pages++;
		while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
			CHECK(kl == 4 && memcmp(k, keys[total], 4) == 0, "key %d out of order",
			      total);
			CHECK(vl == strlen(vals[total]) && memcmp(v, vals[total], vl) == 0,
			      "value of %s", keys[total]);
			memcpy(after, k, kl);
			afterlen = kl;
			total++;
		}
		atoll_kv_iter_free(it);
		CHECK(pages < 10, "paging does not end");
	}
	CHECK(total == 100 && pages == 4, "listed %d in %d pages", total, pages);
	/* get: two present keys and one missing */
	struct atoll_kv want[3] = { { "k005", 4, NULL, 0 }, { "k099", 4, NULL, 0 },
				    { "zzz", 3, NULL, 0 } };
	CHECK(atoll_omap_get(io, oid, want, 3, &it, 0) == 0, "omap_get");
	CHECK(atoll_kv_iter_count(it) == 2, "omap_get: %zu entries", atoll_kv_iter_count(it));
	atoll_kv_iter_free(it);
	CHECK(atoll_omap_rm(io, oid, kv, 50, 0) == 0, "omap_rm");
	CHECK(atoll_omap_list(io, oid, NULL, 0, 0, &it, &more, 0) == 0, "omap_list");
	CHECK(atoll_kv_iter_count(it) == 50 && !more, "after rm: %zu", atoll_kv_iter_count(it));
	atoll_kv_iter_free(it);
	CHECK(atoll_omap_clear(io, oid, 0) == 0, "omap_clear");
	CHECK(atoll_omap_list(io, oid, NULL, 0, 0, &it, &more, 0) == 0, "omap_list");
	CHECK(atoll_kv_iter_count(it) == 0, "after clear: %zu", atoll_kv_iter_count(it));
	atoll_kv_iter_free(it);
	CHECK(atoll_remove(io, oid, 0) == 0, "remove");
	printf("omap: ok\n");
	return 0;
}

static int test_cleanup(struct atoll_ioctx *io)
{
	struct atoll_list *l;
	const char *oid;
	int r, left = 0;

	if (run_all(io, 2) < 0)
		return -1;
	CHECK(atomic_load(&bad_results) == 0, "%d removes failed", atomic_load(&bad_results));
	CHECK(atoll_list_open(io, &l, 0) == 0, "list_open");
	while ((r = atoll_list_next(l, &oid)) == 0) {
		fprintf(stderr, "left over: '%s'\n", oid);
		left++;
	}
	atoll_list_close(l);
	CHECK(r == -ENOENT && left == 0, "%d objects left after removing all", left);
	CHECK(atoll_stat(io, objs[0].name, NULL, NULL, 0) == -ENOENT, "removed object stats");
	printf("cleanup: every object removed\n");
	return 0;
}

/* ---- held wake-ups ---- */

#define HOLD_OPS	16

static int test_hold(const char *pool)
{
	struct atoll_completion *comp[HOLD_OPS] = { 0 };
	struct atoll_cluster *c;
	struct atoll_ioctx *io;
	/* each write keeps its buffer until it completes (no copy) */
	static char bufs[HOLD_OPS][64];
	char oid[32], back[64];
	int r, bad = 0;

	CHECK(atoll_cluster_create(&c, NULL, 0) == 0, "hold: cluster_create");
	/* no op timeout: its timer would wake the loop, held or not */
	atoll_cluster_set(c, "client_op_timeout", "0");
	atoll_cluster_set(c, "client_inflight_ops", "4");
	r = atoll_cluster_connect(c);
	if (r == 0)
		r = atoll_ioctx_create(c, pool, &io, 0);
	if (r < 0) {
		atoll_cluster_shutdown(c);
		CHECK(0, "hold: connect: %s", atoll_strerror(r));
	}
	/* connections up first: a connection coming up would send what is
	 * queued on it whether held or not */
	for (int i = 0; i < HOLD_OPS && !bad; i++) {
		snprintf(oid, sizeof(oid), "hold-%d", i);
		bad = atoll_write_full(io, oid, "x", 1, 0) != 0;
	}
	atoll_hold();
	atoll_hold();	/* nested: only the outer release wakes */
	for (int i = 0; i < HOLD_OPS && !bad; i++) {
		snprintf(oid, sizeof(oid), "hold-%d", i);
		snprintf(bufs[i], sizeof(bufs[i]), "held write %d", i);
		if (atoll_completion_create(NULL, NULL, NULL, &comp[i]) < 0 ||
		    atoll_aio_write_full(io, oid, comp[i], bufs[i], sizeof(bufs[i]), 0) < 0)
			bad = 1;
	}
	atoll_release();
	if (!bad) {
		/* still held: a wait inside the library lets them go */
		int64_t w = atoll_completion_wait(comp[HOLD_OPS - 1]);

		r = atoll_stat(io, "hold-0", NULL, NULL, 0);
		if (w != 0 || r != 0) {
			fprintf(stderr, "hold: the wait gave %lld, the stat %d\n", (long long)w, r);
			bad = 1;
		}
	}
	atoll_release();
	for (int i = 0; i < HOLD_OPS; i++) {
		if (comp[i] && atoll_completion_wait(comp[i]) != 0) {
			fprintf(stderr, "hold: write %d: %s\n", i,
				atoll_strerror((int)atoll_completion_wait(comp[i])));
			bad = 1;
		}
		atoll_completion_release(comp[i]);
		snprintf(oid, sizeof(oid), "hold-%d", i);
		r = atoll_read(io, oid, back, sizeof(back), 0, 0);
		if (r != (int)sizeof(back) || memcmp(back, bufs[i], sizeof(back))) {
			fprintf(stderr, "hold: '%s' reads back %d bytes%s\n", oid, r,
				r == (int)sizeof(back) ? ", not what was written" : "");
			bad = 1;
		}
		atoll_remove(io, oid, 0);
	}
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	CHECK(!bad, "hold: a held write failed or read back wrong");
	printf("hold: %d held writes completed\n", HOLD_OPS);
	return 0;
}

/* ---- shutdown with ops in flight ---- */

#define SHUT_OPS	32
#define SHUT_LEN	(1u << 20)

struct shut_op {
	struct atoll_ioctx *io;
	atomic_int calls;
	atomic_int freed;
	int64_t result;
	int reissue;		/* what an op issued from the callback got */
};

static void shut_cb(struct atoll_completion *comp, void *arg)
{
	struct shut_op *o = arg;
	struct atoll_completion *again;

	o->result = atoll_completion_return(comp);
	if (o->result == -ESHUTDOWN &&
	    atoll_completion_create(NULL, NULL, NULL, &again) == 0) {
		o->reissue = atoll_aio_remove(o->io, "shutdown-obj-0", again, 0);
		atoll_completion_release(again);
	}
	atomic_fetch_add(&o->calls, 1);
}

static void shut_free(void *arg)
{
	struct shut_op *o = arg;

	atomic_fetch_add(&o->freed, 1);
}

/* One round: returns the number of ops that got -ESHUTDOWN, or -1. */
static int shutdown_round(const char *pool, const char *payload)
{
	static struct shut_op ops[SHUT_OPS];
	struct atoll_completion *comp[SHUT_OPS] = { NULL };
	struct atoll_cluster *c;
	struct atoll_ioctx *io;
	int issued = 0, eshutdown = 0;
	char oid[32];

	CHECK(atoll_cluster_create(&c, NULL, 0) == 0, "create: %s", atoll_last_error());
	CHECK(atoll_cluster_connect(c) == 0, "connect: %s", atoll_last_error());
	CHECK(atoll_ioctx_create(c, pool, &io, 0) == 0, "ioctx: %s", atoll_last_error());
	for (int i = 0; i < SHUT_OPS; i++) {
		ops[i] = (struct shut_op){ .io = io, .reissue = 1 };
		snprintf(oid, sizeof(oid), "shutdown-obj-%d", i);
		if (atoll_completion_create(shut_cb, &ops[i], shut_free, &comp[i]) ||
		    atoll_aio_write_full(io, oid, comp[i], payload, SHUT_LEN, 0))
			break;
		issued++;
	}
	atoll_cluster_shutdown(c);	/* with most of them in flight */
	atoll_ioctx_destroy(io);
	for (int i = 0; i < issued; i++) {
		struct shut_op *o = &ops[i];

		CHECK(atomic_load(&o->calls) == 1, "op %d: callback ran %d times", i,
		      atomic_load(&o->calls));
		CHECK(atoll_completion_is_complete(comp[i]), "op %d not complete", i);
		CHECK(atoll_completion_return(comp[i]) == o->result, "op %d", i);
		CHECK(o->result == 0 || o->result == -ESHUTDOWN, "op %d: %s", i,
		      atoll_strerror((int)o->result));
		if (o->result == -ESHUTDOWN) {
			CHECK(o->reissue == -ESHUTDOWN, "op %d: an op issued from its "
			      "callback got %d, not -ESHUTDOWN", i, o->reissue);
			eshutdown++;
		}
		CHECK(atomic_load(&o->freed) == 0, "op %d: user data freed early", i);
		atoll_completion_release(comp[i]);
		CHECK(atomic_load(&o->freed) == 1, "op %d: freed %d times", i,
		      atomic_load(&o->freed));
	}
	CHECK(issued == SHUT_OPS, "only %d of %d writes issued", issued, SHUT_OPS);
	return eshutdown;
}

static int test_shutdown(const char *pool)
{
	char *payload = malloc(SHUT_LEN);
	int got = 0;

	CHECK(payload, "out of memory");
	memset(payload, 's', SHUT_LEN);
	/* some writes may finish before shutdown; a round in which all of
	 * them did proves nothing, so try again (rarely needed) */
	for (int round = 0; round < 5 && got == 0; round++) {
		got = shutdown_round(pool, payload);
		if (got < 0)
			break;
		printf("shutdown: round %d: %d of %d writes in flight got -ESHUTDOWN\n",
		       round, got, SHUT_OPS);
	}
	free(payload);
	CHECK(got > 0, "no write was in flight at shutdown in 5 rounds");
	return 0;
}

int main(int argc, char **argv)
{
	struct atoll_cluster *c;
	struct atoll_ioctx *io;
	uint32_t n = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 2000;
	uint64_t max_mib = argc > 3 ? strtoull(argv[3], NULL, 10) : 1024;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* progress shows in test logs */
	if (argc < 2) {
		fprintf(stderr, "usage: client-cluster-test POOL [OBJECTS [MAX_TOTAL_MIB]]\n");
		return 2;
	}
	if (getenv("CLIENT_TEST_SEED"))
		rng_state = strtoull(getenv("CLIENT_TEST_SEED"), NULL, 0) | 1;
	r = atoll_cluster_create(&c, NULL, 0);
	if (r < 0) {
		fprintf(stderr, "cluster_create: %s\n", atoll_strerror(r));
		return 1;
	}
	/* a stuck cluster fails the test instead of hanging it */
	atoll_cluster_set(c, "client_op_timeout",
			  getenv("CLIENT_TEST_OP_TIMEOUT") ? getenv("CLIENT_TEST_OP_TIMEOUT")
							    : "240s");
	r = atoll_cluster_connect(c);
	if (r < 0) {
		fprintf(stderr, "connect: %s\n", atoll_strerror(r));
		atoll_cluster_shutdown(c);
		return 1;
	}
	r = atoll_ioctx_create(c, argv[1], &io, 0);
	if (r < 0) {
		fprintf(stderr, "ioctx '%s': %s\n", argv[1], atoll_strerror(r));
		atoll_cluster_shutdown(c);
		return 1;
	}
	if (test_workload(io, n, max_mib << 20) == 0 && test_listing(io) == 0) {
		test_compound(io);
		test_xattrs(io);
		test_omap(io);
		test_cleanup(io);
		test_hold(argv[1]);
		test_shutdown(argv[1]);
	}
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	free(objs);
	if (tu_failures) {
		fprintf(stderr, "%d check(s) failed\n", tu_failures);
		return 1;
	}
	printf("all client checks passed\n");
	return 0;
}
