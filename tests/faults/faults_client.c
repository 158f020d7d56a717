/*
 * faults_client.c - the client side of the fault tests (tests/faults),
 * through the public API only (it links libatoll.so like a user program).
 *
 *   faults-client stale POOL KILL-CMD    16 ops in flight (appends and
 *       write_full+read pairs, with a ledger) while the map changes:
 *       noout set/unset, a pool created, one OSD killed (KILL-CMD, run
 *       with system()); then every op must have completed, appends
 *       applied once, reads equal to the last acknowledged write.
 *   faults-client resend POOL            the same workload without map
 *       changes, with the messenger's fault injection on
 *       (ms_inject_dup_permille, ms_inject_reset_permille): every append
 *       applied once, versions strictly increasing per object.
 *   faults-client limits POOL            each default limit at its edge,
 *       +-1: object size (128 MiB), op payload (64 MiB), omap entries
 *       per op (10,000).
 *   faults-client fill POOL SECONDS [BYTES]  writes objects of 4 MiB
 *       (or BYTES) until -ENOSPC (at most SECONDS); prints the count of
 *       objects written.
 *   faults-client drain POOL N           removes objects full-0..N-1.
 *   faults-client write-ok POOL          one 4 MiB write must succeed.
 *   faults-client full-try POOL          on a full cluster: a 4 KiB write
 *                                        fails, and succeeds with
 *                                        ATOLL_IOCTX_FULL_TRY.
 *   faults-client populate POOL N        writes objects obj-0..N-1 of
 *       varied sizes (16 in flight) and prints, per object, one line of
 *       JSON: the monitor's `osd map` answer plus "size".
 *
 * The cluster comes from $ATOLL_CONF (atoll-cluster up).  Exit 0 when
 * every check passed, 1 with a line per failure otherwise.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atoll/atoll.h>

#include "testutil.h"

#define CHECK(cond, ...) TU_CHECK(cond, (void)0, __VA_ARGS__)

/* Deterministic bytes for (a, b, c): a chunk's content is known from its
 * ledger entry alone. */
static void fill(uint8_t *p, size_t n, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t x = (a * 0x9e3779b97f4a7c15ull) ^ (b << 32) ^ c ^ 0x2545f4914f6cdd1dull;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = (uint8_t)x;
	}
}

static struct atoll_cluster *connect_cluster(const char *const *sets)
{
	struct atoll_cluster *c;
	int r;

	r = atoll_cluster_create(&c, NULL, 0);
	if (r < 0)
		tu_die("atoll_cluster_create: %s", atoll_strerror(r));
	for (; sets && sets[0]; sets += 2) {
		r = atoll_cluster_set(c, sets[0], sets[1]);
		if (r < 0)
			tu_die("atoll_cluster_set %s=%s: %s", sets[0], sets[1], atoll_strerror(r));
	}
	r = atoll_cluster_connect(c);
	if (r < 0)
		tu_die("atoll_cluster_connect: %s", atoll_strerror(r));
	return c;
}

static int mon_cmd(struct atoll_cluster *c, const char *json)
{
	char *status = NULL;
	int r = atoll_mon_command(c, json, &status, NULL, NULL);

	if (r < 0)
		fprintf(stderr, "command %s: %d %s\n", json, r, status ? status : "");
	atoll_free(status);
	return r;
}

/* ---- the ledger workload (stale, resend) ---------------------------- */

#define SLOTS		16
#define APP_SLOTS	8	/* slots 0..7 append; two per object */
#define APP_OBJS	4
#define WF_OBJS		(SLOTS - APP_SLOTS)	/* one object per slot */
#define CHUNK_MAX	8192
#define LEDGER_MAX	20000

struct app_entry {
	uint64_t version;
	uint32_t len;
	uint32_t slot, seq;
};

struct app_obj {
	struct app_entry *e;
	size_t n;
	uint64_t bytes;
	uint64_t last_version;		/* of this object's acks, in ack order */
	bool order_checked;		/* one writer: versions must grow in ack order */
};

struct slot {
	int idx;
	struct atoll_completion *comp;
	uint8_t buf[CHUNK_MAX];
	uint8_t rbuf[CHUNK_MAX + 1];
	uint32_t len, seq;
	bool reading;			/* write_full slots: read after write */
	uint64_t issued_ms;
	/* write_full slots: the last acknowledged content */
	uint32_t acked_len, acked_seq;
	uint64_t acked_version;
	bool acked;
};

static struct app_obj apps[APP_OBJS];
static struct slot slots[SLOTS];
static uint64_t ops_done, ops_issued;

static void app_name(char *out, size_t n, int obj)
{
	snprintf(out, n, "app-%d", obj);
}

static void wf_name(char *out, size_t n, int s)
{
	snprintf(out, n, "wf-%d", s - APP_SLOTS);
}

static int issue(struct atoll_ioctx *io, struct slot *s)
{
	char oid[32];
	int r;

	if (s->comp)
		atoll_completion_release(s->comp);
	r = atoll_completion_create(NULL, NULL, NULL, &s->comp);
	if (r < 0)
		return r;
	s->issued_ms = tu_now_ms();
	if (s->idx < APP_SLOTS) {
		s->seq++;
		s->len = 1 + (uint32_t)((s->seq * 2654435761u + (uint32_t)s->idx * 97u) %
					CHUNK_MAX);
		fill(s->buf, s->len, (uint64_t)s->idx, s->seq, 1);
		app_name(oid, sizeof(oid), s->idx % APP_OBJS);
		r = atoll_aio_append(io, oid, s->comp, s->buf, s->len, 0);
	} else if (!s->reading) {
		s->seq++;
		s->len = 1 + (uint32_t)((s->seq * 40503u + (uint32_t)s->idx * 31u) % CHUNK_MAX);
		fill(s->buf, s->len, (uint64_t)s->idx, s->seq, 2);
		wf_name(oid, sizeof(oid), s->idx);
		r = atoll_aio_write_full(io, oid, s->comp, s->buf, s->len, 0);
	} else {
		wf_name(oid, sizeof(oid), s->idx);
		r = atoll_aio_read(io, oid, s->comp, s->rbuf, sizeof(s->rbuf), 0, 0);
	}
	if (r == 0)
		ops_issued++;
	return r;
}

/* The op of s completed: checks it and records it in the ledger. */
static void complete(struct slot *s)
{
	int64_t ret = atoll_completion_return(s->comp);
	uint64_t ver = atoll_completion_version(s->comp);

	ops_done++;
	if (s->idx < APP_SLOTS) {
		struct app_obj *o = &apps[s->idx % APP_OBJS];

		CHECK(ret == 0, "append %u of slot %d: %s", s->seq, s->idx,
		      atoll_strerror((int)ret));
		if (ret != 0)
			return;
		CHECK(ver > 0, "append %u of slot %d acknowledged version 0", s->seq, s->idx);
		if (o->n == LEDGER_MAX)
			tu_die("the ledger is full");
		o->e[o->n++] = (struct app_entry){ ver, s->len, (uint32_t)s->idx, s->seq };
		o->bytes += s->len;
		return;
	}
	if (!s->reading) {
		CHECK(ret == 0, "write_full %u of slot %d: %s", s->seq, s->idx,
		      atoll_strerror((int)ret));
		if (ret == 0) {
			CHECK(!s->acked || ver > s->acked_version,
			      "write_full of wf-%d: version %" PRIu64 " after %" PRIu64,
			      s->idx - APP_SLOTS, ver, s->acked_version);
			s->acked = true;
			s->acked_len = s->len;
			s->acked_seq = s->seq;
			s->acked_version = ver;
			s->reading = true;
		}
		return;
	}
	/* a read right after the acknowledged write_full: no stale data */
	{
		uint8_t want[CHUNK_MAX];

		s->reading = false;
		CHECK(ret == (int64_t)s->acked_len, "read of wf-%d: %" PRId64 " (%s), want %u bytes",
		      s->idx - APP_SLOTS, ret, ret < 0 ? atoll_strerror((int)ret) : "bytes",
		      s->acked_len);
		if (ret != (int64_t)s->acked_len)
			return;
		fill(want, s->acked_len, (uint64_t)s->idx, s->acked_seq, 2);
		CHECK(!memcmp(want, s->rbuf, s->acked_len),
		      "read of wf-%d returned other data than write %u (stale read)",
		      s->idx - APP_SLOTS, s->acked_seq);
		CHECK(ver >= s->acked_version, "read of wf-%d: version %" PRIu64 " < %" PRIu64,
		      s->idx - APP_SLOTS, ver, s->acked_version);
	}
}

static int entry_cmp(const void *a, const void *b)
{
	const struct app_entry *x = a, *y = b;

	return x->version < y->version ? -1 : x->version > y->version;
}

/* After the workload: every object as the ledger says. */
static void verify(struct atoll_ioctx *io)
{
	for (int i = 0; i < APP_OBJS; i++) {
		struct app_obj *o = &apps[i];
		uint64_t size = 0, off = 0;
		uint8_t *got, *want;
		char oid[32];
		int64_t n;
		int r;

		app_name(oid, sizeof(oid), i);
		r = atoll_stat(io, oid, &size, NULL, 0);
		CHECK(r == 0, "stat %s: %s", oid, atoll_strerror(r));
		CHECK(size == o->bytes, "%s has %" PRIu64 " bytes; the acknowledged appends "
		      "sum to %" PRIu64 " (%zu appends): %s", oid, size, o->bytes, o->n,
		      size > o->bytes ? "one was applied twice" : "one was lost");
		qsort(o->e, o->n, sizeof(*o->e), entry_cmp);
		for (size_t k = 1; k < o->n; k++)
			CHECK(o->e[k].version > o->e[k - 1].version,
			      "%s: two appends acknowledged version %" PRIu64, oid, o->e[k].version);
		got = malloc(o->bytes + 1);
		want = malloc(o->bytes + 1);
		if (!got || !want)
			tu_die("out of memory");
		for (size_t k = 0; k < o->n; k++) {
			fill(want + off, o->e[k].len, o->e[k].slot, o->e[k].seq, 1);
			off += o->e[k].len;
		}
		n = atoll_read(io, oid, got, o->bytes + 1, 0, 0);
		CHECK(n == (int64_t)o->bytes, "read %s: %" PRId64 " of %" PRIu64 " bytes", oid, n,
		      o->bytes);
		if (n == (int64_t)o->bytes) {
			size_t bad = 0;

			while (bad < o->bytes && got[bad] == want[bad])
				bad++;
			CHECK(bad == o->bytes, "%s differs from its ledger at byte %zu (appends "
			      "in version order)", oid, bad);
		}
		free(got);
		free(want);
	}
	for (int s = APP_SLOTS; s < SLOTS; s++) {
		struct slot *sl = &slots[s];
		uint8_t want[CHUNK_MAX], got[CHUNK_MAX + 1];
		char oid[32];
		int64_t n;

		if (!sl->acked)
			continue;
		wf_name(oid, sizeof(oid), s);
		n = atoll_read(io, oid, got, sizeof(got), 0, 0);
		fill(want, sl->acked_len, (uint64_t)s, sl->acked_seq, 2);
		CHECK(n == (int64_t)sl->acked_len && !memcmp(got, want, sl->acked_len),
		      "%s does not read back as its last acknowledged write (%" PRId64 " bytes)",
		      oid, n);
	}
}

/* Runs the workload for ms milliseconds; at[i] ms in, runs step i. */
typedef void step_fn(struct atoll_cluster *c, const char *arg, int i);

static void workload(struct atoll_cluster *c, struct atoll_ioctx *io, uint64_t ms,
		     uint64_t max_ops, const uint64_t *at, int nsteps, step_fn *step,
		     const char *arg)
{
	uint64_t t0 = tu_now_ms(), deadline = t0 + ms, hard = t0 + ms + 90000;
	int next = 0, inflight = 0, r;

	for (int i = 0; i < APP_OBJS; i++) {
		apps[i].e = calloc(LEDGER_MAX, sizeof(*apps[i].e));
		if (!apps[i].e)
			tu_die("out of memory");
	}
	for (int i = 0; i < SLOTS; i++) {
		slots[i].idx = i;
		r = issue(io, &slots[i]);
		if (r < 0)
			tu_die("issue: %s", atoll_strerror(r));
		inflight++;
	}
	while (inflight) {
		bool any = false;
		uint64_t now = tu_now_ms();
		bool more = now < deadline && ops_issued < max_ops;

		if (next < nsteps && now - t0 >= at[next]) {
			step(c, arg, next);
			next++;
		}
		if (now > hard)
			tu_die("%d ops did not complete within 90 s after the workload ended", inflight);
		for (int i = 0; i < SLOTS; i++) {
			struct slot *s = &slots[i];

			if (!s->comp || !atoll_completion_is_complete(s->comp))
				continue;
			any = true;
			complete(s);
			/* a write_full slot always reads what it wrote */
			if (more || (i >= APP_SLOTS && s->reading)) {
				r = issue(io, s);
				if (r < 0)
					tu_die("issue: %s", atoll_strerror(r));
			} else {
				atoll_completion_release(s->comp);
				s->comp = NULL;
				inflight--;
			}
		}
		if (!any)
			tu_sleep_ms(1);
	}
	while (next < nsteps)
		step(c, arg, next++);
	printf("%" PRIu64 " ops completed in %.1f s\n", ops_done, (tu_now_ms() - t0) / 1000.0);
}

static void stale_step(struct atoll_cluster *c, const char *kill_cmd, int i)
{
	int r;

	switch (i) {
	case 0:
		r = mon_cmd(c, "{\"prefix\": \"osd set\", \"flag\": \"noout\"}");
		CHECK(r == 0, "osd set noout: %d", r);
		break;
	case 1:
		r = mon_cmd(c, "{\"prefix\": \"pool create\", \"name\": \"faults-new\", "
			    "\"pg_num\": 8}");
		CHECK(r == 0, "pool create: %d", r);
		break;
	case 2:
		r = mon_cmd(c, "{\"prefix\": \"osd unset\", \"flag\": \"noout\"}");
		CHECK(r == 0, "osd unset noout: %d", r);
		break;
	case 3:
		printf("running: %s\n", kill_cmd);
		fflush(stdout);
		r = system(kill_cmd);
		CHECK(r == 0, "'%s' failed (%d)", kill_cmd, r);
		break;
	case 4:
		r = mon_cmd(c, "{\"prefix\": \"osd set\", \"flag\": \"noout\"}");
		CHECK(r == 0, "osd set noout: %d", r);
		break;
	}
	printf("step %d done at epoch %" PRIu64 "\n", i, atoll_cluster_epoch(c));
	fflush(stdout);
}

static void run_ledger(const char *pool, const char *kill_cmd, const char *const *sets,
		       uint64_t ms, uint64_t max_ops)
{
	static const uint64_t at[] = { 1000, 2000, 3000, 4000, 9000 };
	struct atoll_cluster *c = connect_cluster(sets);
	struct atoll_ioctx *io;
	uint64_t e0 = atoll_cluster_epoch(c);
	int r = atoll_ioctx_create(c, pool, &io, 0);

	if (r < 0)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	workload(c, io, ms, max_ops, at, kill_cmd ? 5 : 0, stale_step, kill_cmd);
	if (kill_cmd) {
		/* the kill must have reached the client's map: the stale-map
		 * path was taken (noout, pool, noout, OSD down, noout) */
		uint64_t e1 = atoll_cluster_epoch(c);

		CHECK(e1 >= e0 + 5, "the map moved only from epoch %" PRIu64 " to %" PRIu64,
		      e0, e1);
	}
	verify(io);
	for (int i = 0; i < APP_OBJS; i++)
		printf("app-%d: %zu appends, %" PRIu64 " bytes\n", i, apps[i].n, apps[i].bytes);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	for (int i = 0; i < APP_OBJS; i++)
		free(apps[i].e);
}

/* ---- limits ---------------------------------------------------------- */

#define MiB (1024u * 1024u)

static void run_limits(const char *pool)
{
	struct atoll_cluster *c = connect_cluster(NULL);
	struct atoll_ioctx *io;
	uint8_t *big = malloc(64 * MiB + 1);
	struct atoll_kv *kv = calloc(10001, sizeof(*kv));
	char (*keys)[16] = calloc(10001, 16);
	struct atoll_kv_iter *it = NULL;
	uint64_t size = 0;
	int64_t n;
	int r, more = 0;

	if (!big || !kv || !keys)
		tu_die("out of memory");
	r = atoll_ioctx_create(c, pool, &io, 0);
	if (r < 0)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	fill(big, 64 * MiB + 1, 7, 7, 7);

	/* object size: exactly 128 MiB in two 64 MiB pieces, then +1 */
	r = atoll_write(io, "big", big, 64 * MiB, 0, 0);
	CHECK(r == 0, "a 64 MiB write (the op payload limit exactly): %s", atoll_strerror(r));
	r = atoll_write(io, "big", big + 1, 64 * MiB, 64 * MiB, 0);
	CHECK(r == 0, "a 64 MiB write ending at 128 MiB exactly: %s", atoll_strerror(r));
	r = atoll_stat(io, "big", &size, NULL, 0);
	CHECK(r == 0 && size == 128ull * MiB, "big: stat %d, %" PRIu64 " bytes", r, size);
	r = atoll_write(io, "big", "x", 1, 128ull * MiB, 0);
	CHECK(r == -EFBIG, "one byte past 128 MiB: %d (%s), want -EFBIG", r, atoll_strerror(r));
	r = atoll_append(io, "big", "x", 1, 0);
	CHECK(r == -EFBIG, "an append to a 128 MiB object: %d, want -EFBIG", r);
	r = atoll_write(io, "big", "y", 1, 128ull * MiB - 1, 0);
	CHECK(r == 0, "a write of the last byte of a 128 MiB object: %s", atoll_strerror(r));
	n = atoll_read(io, "big", big, 16, 128ull * MiB - 8, 0);
	CHECK(n == 8 && big[7] == 'y', "the last 8 bytes of big: %" PRId64, n);
	r = atoll_stat(io, "big", &size, NULL, 0);
	CHECK(r == 0 && size == 128ull * MiB, "big after the refused writes: %" PRIu64 " bytes",
	      size);
	r = atoll_truncate(io, "big2", 128ull * MiB, 0);
	CHECK(r == 0, "truncate to 128 MiB exactly: %s", atoll_strerror(r));
	r = atoll_truncate(io, "big3", 128ull * MiB + 1, 0);
	CHECK(r == -EFBIG, "truncate to 128 MiB + 1: %d, want -EFBIG", r);
	atoll_remove(io, "big", 0);
	atoll_remove(io, "big2", 0);

	/* one op's payload: exactly 64 MiB, then +1 */
	fill(big, 64 * MiB + 1, 8, 8, 8);
	r = atoll_write_full(io, "pay", big, 64 * MiB, 0);
	CHECK(r == 0, "a 64 MiB write_full: %s", atoll_strerror(r));
	r = atoll_write_full(io, "pay", big, 64 * MiB + 1, 0);
	CHECK(r == -E2BIG, "a write_full of 64 MiB + 1: %d (%s), want -E2BIG", r,
	      atoll_strerror(r));
	r = atoll_append(io, "pay2", big, 64 * MiB + 1, 0);
	CHECK(r == -E2BIG, "an append of 64 MiB + 1: %d, want -E2BIG", r);
	r = atoll_stat(io, "pay", &size, NULL, 0);
	CHECK(r == 0 && size == 64ull * MiB, "pay: %" PRIu64 " bytes after the refused op", size);
	atoll_remove(io, "pay", 0);

	/* omap entries in one op: exactly 10,000, then +1 */
	for (int i = 0; i < 10001; i++) {
		snprintf(keys[i], 16, "k%06d", i);
		kv[i] = (struct atoll_kv){ keys[i], 7, keys[i], 7 };
	}
	r = atoll_omap_set(io, "om", kv, 10000, 0);
	CHECK(r == 0, "omap_set of 10,000 entries: %s", atoll_strerror(r));
	r = atoll_omap_set(io, "om2", kv, 10001, 0);
	CHECK(r == -E2BIG, "omap_set of 10,001 entries: %d, want -E2BIG", r);
	r = atoll_omap_list(io, "om", NULL, 0, 1000, &it, &more, 0);
	CHECK(r == 0 && atoll_kv_iter_count(it) == 1000 && more,
	      "omap_list of om: %d, %zu entries, more %d", r, it ? atoll_kv_iter_count(it) : 0,
	      more);
	atoll_kv_iter_free(it);
	it = NULL;
	r = atoll_omap_get(io, "om", kv, 10000, &it, 0);
	CHECK(r == 0 && atoll_kv_iter_count(it) == 10000,
	      "omap_get of 10,000 keys: %d, %zu entries", r, it ? atoll_kv_iter_count(it) : 0);
	atoll_kv_iter_free(it);
	it = NULL;
	r = atoll_omap_get(io, "om", kv, 10001, &it, 0);
	CHECK(r == -E2BIG, "omap_get of 10,001 keys: %d, want -E2BIG", r);
	atoll_kv_iter_free(it);
	r = atoll_omap_rm(io, "om", kv, 10001, 0);
	CHECK(r == -E2BIG, "omap_rm of 10,001 keys: %d, want -E2BIG", r);
	r = atoll_omap_rm(io, "om", kv, 10000, 0);
	CHECK(r == 0, "omap_rm of 10,000 keys: %s", atoll_strerror(r));
	atoll_remove(io, "om", 0);

	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	free(big);
	free(kv);
	free(keys);
}

/* ---- a full cluster --------------------------------------------------- */

static void run_fill(const char *pool, unsigned seconds, size_t len)
{
	struct atoll_cluster *c = connect_cluster((const char *const[]){
		"client_op_timeout", "30s", NULL });
	struct atoll_ioctx *io;
	uint8_t *buf = malloc(len);
	uint64_t t0 = tu_now_ms();
	int r = 0, i;

	if (!buf)
		tu_die("out of memory");
	r = atoll_ioctx_create(c, pool, &io, 0);
	if (r < 0)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	fill(buf, len, 9, 9, 9);
	for (i = 0; tu_now_ms() - t0 < seconds * 1000ull; i++) {
		char oid[32];

		snprintf(oid, sizeof(oid), "full-%d", i);
		r = atoll_write_full(io, oid, buf, len, 0);
		if (r < 0)
			break;
	}
	CHECK(r == -ENOSPC, "writing objects of %zu bytes for %u s ended with %d (%s), not -ENOSPC",
	      len, seconds, r, atoll_strerror(r));
	printf("%d\n", i);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	free(buf);
}

static void run_drain(const char *pool, int count)
{
	struct atoll_cluster *c = connect_cluster(NULL);
	struct atoll_ioctx *io;
	int r = atoll_ioctx_create(c, pool, &io, 0);

	if (r < 0)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	for (int i = 0; i < count; i++) {
		char oid[32];

		snprintf(oid, sizeof(oid), "full-%d", i);
		r = atoll_remove(io, oid, 0);
		CHECK(r == 0, "remove %s on a full cluster: %s", oid, atoll_strerror(r));
	}
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
}

static void run_write_ok(const char *pool, bool want_ok)
{
	struct atoll_cluster *c = connect_cluster((const char *const[]){
		"client_op_timeout", "30s", NULL });
	struct atoll_ioctx *io;
	uint8_t *buf = malloc(4 * MiB);
	int r = atoll_ioctx_create(c, pool, &io, 0);

	if (r < 0 || !buf)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	fill(buf, 4 * MiB, 10, 10, 10);
	r = atoll_write_full(io, "after-full", buf, 4 * MiB, 0);
	if (want_ok)
		CHECK(r == 0, "a write after the deletes: %s", atoll_strerror(r));
	else
		CHECK(r == -ENOSPC, "a write on the full cluster: %d, want -ENOSPC", r);
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	free(buf);
}

/* On a full cluster: a small write fails with -ENOSPC through a plain
 * ioctx and succeeds through one with ATOLL_IOCTX_FULL_TRY (what the MDS
 * uses for its journal); an unknown flag is -EINVAL. */
static void run_full_try(const char *pool)
{
	struct atoll_cluster *c = connect_cluster((const char *const[]){
		"client_op_timeout", "30s", NULL });
	struct atoll_ioctx *io;
	uint8_t buf[4096];
	int r = atoll_ioctx_create(c, pool, &io, 0);

	if (r < 0)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	fill(buf, sizeof(buf), 12, 12, 12);
	r = atoll_ioctx_set_flags(io, 0x80);
	CHECK(r == -EINVAL, "atoll_ioctx_set_flags with an unknown flag: %d, want -EINVAL", r);
	r = atoll_write_full(io, "full-try", buf, sizeof(buf), 0);
	CHECK(r == -ENOSPC, "a plain small write on the full cluster: %d, want -ENOSPC", r);
	r = atoll_ioctx_set_flags(io, ATOLL_IOCTX_FULL_TRY);
	CHECK(r == 0, "atoll_ioctx_set_flags(FULL_TRY): %s", atoll_strerror(r));
	r = atoll_write_full(io, "full-try", buf, sizeof(buf), 0);
	CHECK(r == 0, "a FULL_TRY write on the full cluster: %s", atoll_strerror(r));
	r = atoll_ioctx_set_flags(io, 0);
	CHECK(r == 0, "clearing the flags: %s", atoll_strerror(r));
	r = atoll_write_full(io, "full-try-2", buf, sizeof(buf), 0);
	CHECK(r == -ENOSPC, "a write after clearing FULL_TRY: %d, want -ENOSPC", r);
	r = atoll_remove(io, "full-try", 0);
	CHECK(r == 0, "removing the FULL_TRY object: %s", atoll_strerror(r));
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
}

/* ---- populate (placement) --------------------------------------------- */

static void run_populate(const char *pool, int count)
{
	struct atoll_cluster *c = connect_cluster(NULL);
	struct atoll_completion *comp[16] = { 0 };
	uint8_t *buf = malloc(256 * 1024);
	struct atoll_ioctx *io;
	int r = atoll_ioctx_create(c, pool, &io, 0);

	if (r < 0 || !buf)
		tu_die("ioctx %s: %s", pool, atoll_strerror(r));
	fill(buf, 256 * 1024, 11, 11, 11);
	for (int i = 0; i < count + 16; i++) {
		struct atoll_completion **cp = &comp[i % 16];
		char oid[32];

		if (*cp) {
			r = (int)atoll_completion_wait(*cp);
			CHECK(r == 0, "write of obj-%d: %s", i - 16, atoll_strerror(r));
			atoll_completion_release(*cp);
			*cp = NULL;
		}
		if (i >= count)
			continue;
		snprintf(oid, sizeof(oid), "obj-%d", i);
		r = atoll_completion_create(NULL, NULL, NULL, cp);
		if (r == 0)
			r = atoll_aio_write_full(io, oid, *cp, buf,
						 ((size_t)i * 7919u) % (256 * 1024), 0);
		if (r < 0)
			tu_die("write of %s: %s", oid, atoll_strerror(r));
	}
	for (int i = 0; i < count; i++) {
		char cmd[160], *out = NULL, *status = NULL;
		size_t outlen = 0;

		snprintf(cmd, sizeof(cmd), "{\"prefix\": \"osd map\", \"pool\": \"%s\", "
			 "\"object\": \"obj-%d\", \"format\": \"json\"}", pool, i);
		r = atoll_mon_command(c, cmd, &status, &out, &outlen);
		if (r < 0 || !out || outlen < 2 || out[outlen - 1] != '}')
			tu_die("osd map of obj-%d: %d %s", i, r, status ? status : "");
		out[outlen - 1] = '\0';
		printf("%s, \"size\": %zu}\n", out, ((size_t)i * 7919u) % (256 * 1024));
		atoll_free(out);
		atoll_free(status);
	}
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "stale") && argc == 4)
		run_ledger(argv[2], argv[3], (const char *const[]){
			"client_op_timeout", "60s", NULL }, 12000, UINT64_MAX);
	else if (!strcmp(mode, "resend") && argc == 3)
		run_ledger(argv[2], NULL, (const char *const[]){
			"client_op_timeout", "60s",
			"ms_inject_dup_permille", "150",
			"ms_inject_reset_permille", "40", NULL }, 15000, 3000);
	else if (!strcmp(mode, "limits") && argc == 3)
		run_limits(argv[2]);
	else if (!strcmp(mode, "fill") && (argc == 4 || argc == 5))
		run_fill(argv[2], (unsigned)atoi(argv[3]),
			 argc == 5 && atoi(argv[4]) > 0 ? (size_t)atoi(argv[4]) : 4 * MiB);
	else if (!strcmp(mode, "drain") && argc == 4)
		run_drain(argv[2], atoi(argv[3]));
	else if (!strcmp(mode, "populate") && argc == 4)
		run_populate(argv[2], atoi(argv[3]));
	else if (!strcmp(mode, "write-ok") && argc == 3)
		run_write_ok(argv[2], true);
	else if (!strcmp(mode, "write-full") && argc == 3)
		run_write_ok(argv[2], false);
	else if (!strcmp(mode, "full-try") && argc == 3)
		run_full_try(argv[2]);
	else {
		fprintf(stderr, "usage: faults-client stale POOL KILL-CMD | resend POOL | "
			"limits POOL | fill POOL SECONDS [BYTES] | drain POOL N | write-ok POOL | "
			"write-full POOL | full-try POOL\n");
		return 2;
	}
	if (tu_failures)
		fprintf(stderr, "%d check(s) failed\n", tu_failures);
	return tu_failures ? 1 : 0;
}
