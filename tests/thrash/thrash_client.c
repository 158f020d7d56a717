/*
 * thrash_client.c - the writer/verifier of the thrash test (thrash.sh).
 *
 *   thrash-client CONF POOL SEED LEDGER [THREADS]
 *
 * The ledger workload of the thrash test (thrash.sh) and of the ha tests
 * (tests/ha/): THREADS worker threads (default 8), each with one op in
 * flight, create, overwrite, append to, delete and read objects t0..t(6 x
 * THREADS - 1) of POOL while the test kills and restarts daemons.  Each object
 * belongs to one thread and has one op in flight at a time, so the model
 * of an object (exists, content, version) is exact: it changes only when
 * the cluster acknowledges a mutation, and every read must return the
 * model's content and version — a read issued after an acknowledged write
 * that returns older content is a stale read, a missing object a lost one.
 * Every acknowledged mutation is appended to LEDGER (one line: object, op,
 * offset, length, the version the cluster returned, crc of the content).
 *
 * An op that fails (only -ETIMEDOUT is expected, from client_op_timeout,
 * while a PG is below min_size) may or may not have been applied: the
 * object then has two candidate states and its next read settles which.
 *
 * Commands on stdin: "mark LABEL [OBJECT...]" notes the moment (e.g. a
 * daemon was just killed): the first mutation issued after it and
 * acknowledged (on one of the OBJECTs, e.g. those whose PG's primary was
 * killed, when named) prints "mark LABEL: first write acknowledged after N ms"; "stall" prints "stall: longest op
 * N ms" over the ops finished since the previous "stall" (or the start)
 * and starts a new window; "stop" ends the workload (threads finish their
 * op) and prints the counts and "longest op N ms, longest gap between
 * acknowledged writes N ms" over the whole run; "verify" reads every
 * object once and compares it with the model; the program prints its
 * counts and exits 0 only if nothing was lost, wrong or stale and no op
 * failed with anything but a timeout (the tests also require 0 timeouts).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll/atoll.h"

#define PER_THREAD	6		/* objects per thread */
#define THREADS_MAX	256
#define MARKS_MAX	64
#define MAX_SIZE	(256u << 10)
#define REPORT_MAX	20
#define OBJS_MAX	(THREADS_MAX * PER_THREAD)

struct state {
	bool exists;
	uint8_t *data;
	size_t size;
	uint64_t version;	/* 0 = unknown (after a failed op) */
};

struct object {
	char oid[16];
	struct state cur;
	bool uncertain;		/* a failed mutation: cur or alt */
	struct state alt;
	struct state prev;	/* the state before the last acknowledged change */
};

static struct atoll_ioctx *io;
static int nthreads = 8, nobj = 8 * PER_THREAD;
static struct object *objs;
static FILE *ledger;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stopping;

static struct counts {
	uint64_t creates, overwrites, appends, deletes, reads;
	uint64_t timeouts, errors;
	uint64_t lost, wrong, stale, version_bad;
	uint64_t reported;
} cnt;

/* Timing (CLOCK_MONOTONIC ns), under lock. */
static struct timing {
	uint64_t op_max, window_op_max;	/* longest op: run, since "stall" */
	uint64_t last_ack, gap_max;	/* acknowledged mutations */
	uint64_t mark_at[MARKS_MAX];
	char mark_label[MARKS_MAX][32];
	bool mark_open[MARKS_MAX];
	bool mark_some[MARKS_MAX];		/* only the objects in mark_obj count */
	bool mark_obj[MARKS_MAX][OBJS_MAX];
	int nmarks;
} tm;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The index of object "tN", or -1. */
static int obj_index(const char *oid)
{
	char *end;
	long i;

	if (oid[0] != 't' || oid[1] < '0' || oid[1] > '9')
		return -1;
	i = strtol(oid + 1, &end, 10);
	return *end || i >= OBJS_MAX ? -1 : (int)i;
}

/* An op on oid that took from start to now (ack: an acknowledged
 * mutation). */
static void note_op(const char *oid, uint64_t start, bool ack)
{
	int obj = obj_index(oid);
	uint64_t now, d;

	pthread_mutex_lock(&lock);
	now = now_ns();	/* under the lock: acks are noted in time order */
	d = now - start;
	if (d > tm.op_max)
		tm.op_max = d;
	if (d > tm.window_op_max)
		tm.window_op_max = d;
	if (ack) {
		if (tm.last_ack && now - tm.last_ack > tm.gap_max)
			tm.gap_max = now - tm.last_ack;
		tm.last_ack = now;
		for (int i = 0; i < tm.nmarks; i++) {
			/* an op issued before the mark may have been served
			 * before the event it marks */
			if (!tm.mark_open[i] || start < tm.mark_at[i])
				continue;
			if (tm.mark_some[i] && (obj < 0 || !tm.mark_obj[i][obj]))
				continue;
			tm.mark_open[i] = false;
			printf("mark %s: first write acknowledged after %.0f ms\n",
			       tm.mark_label[i], (double)(now - tm.mark_at[i]) / 1e6);
			fflush(stdout);
		}
	}
	pthread_mutex_unlock(&lock);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static uint32_t crc_of(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void report(const char *kind, const struct object *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(const char *kind, const struct object *o, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&lock);
	if (cnt.reported++ < REPORT_MAX) {
		fprintf(stderr, "thrash-client: %s %s: ", kind, o->oid);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	pthread_mutex_unlock(&lock);
}

static void state_free(struct state *s)
{
	free(s->data);
	memset(s, 0, sizeof(*s));
}

static void state_copy(struct state *dst, const struct state *src)
{
	state_free(dst);
	*dst = *src;
	dst->data = NULL;
	if (src->size) {
		dst->data = malloc(src->size);
		if (!dst->data)
			abort();
		memcpy(dst->data, src->data, src->size);
	}
}

static bool state_equal(const struct state *s, bool exists, const uint8_t *d, size_t n)
{
	if (s->exists != exists)
		return false;
	if (!exists)
		return true;
	return s->size == n && (n == 0 || memcmp(s->data, d, n) == 0);
}

static void fill(uint8_t *p, size_t n, uint64_t *seed)
{
	uint64_t x = rng_next(seed);

	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			x = rng_next(seed);
		p[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

static void log_ack(const struct object *o, const char *op, uint64_t off, uint64_t len)
{
	pthread_mutex_lock(&lock);
	fprintf(ledger, "%s %s %" PRIu64 " %" PRIu64 " v%" PRIu64 " size %zu crc %08x\n",
		o->oid, op, off, len, o->cur.version, o->cur.size,
		o->cur.exists ? crc_of(o->cur.data, o->cur.size) : 0);
	pthread_mutex_unlock(&lock);
}

enum mut { M_CREATE, M_OVERWRITE, M_APPEND, M_DELETE };
static const char *const mut_name[] = { "create", "overwrite", "append", "delete" };

/* Runs one mutation synchronously; returns its result, *ver the version. */
static int64_t submit(enum mut m, const char *oid, const uint8_t *buf, size_t len,
		      uint64_t off, uint64_t *ver)
{
	struct atoll_completion *c;
	uint64_t start = now_ns();
	int64_t r;

	r = atoll_completion_create(NULL, NULL, NULL, &c);
	if (r)
		return r;
	switch (m) {
	case M_CREATE: r = atoll_aio_write_full(io, oid, c, buf, len, 0); break;
	case M_OVERWRITE: r = atoll_aio_write(io, oid, c, buf, len, off, 0); break;
	case M_APPEND: r = atoll_aio_append(io, oid, c, buf, len, 0); break;
	case M_DELETE: r = atoll_aio_remove(io, oid, c, 0); break;
	}
	if (r == 0) {
		r = atoll_completion_wait(c);
		*ver = atoll_completion_version(c);
	}
	atoll_completion_release(c);
	note_op(oid, start, r >= 0 || (m == M_DELETE && r == -ENOENT));
	return r;
}

/* The state the object has if mutation m (buf, len, off) applied to s. */
static void apply(struct state *s, enum mut m, const uint8_t *buf, size_t len, uint64_t off)
{
	size_t end;

	switch (m) {
	case M_DELETE:
		state_free(s);
		return;
	case M_CREATE:
		state_free(s);
		s->exists = true;
		s->size = len;
		s->data = malloc(len ? len : 1);
		if (!s->data)
			abort();
		memcpy(s->data, buf, len);
		return;
	case M_APPEND:
		off = s->exists ? s->size : 0;
		/* fallthrough */
	case M_OVERWRITE:
		end = off + len;
		if (!s->exists) {
			s->exists = true;
			s->size = 0;
		}
		if (end > s->size) {
			s->data = realloc(s->data, end);
			if (!s->data)
				abort();
			memset(s->data + s->size, 0, end - s->size);
			s->size = end;
		}
		memcpy(s->data + off, buf, len);
		return;
	}
}

/* Reads o and checks it against the model; settles an uncertain object. */
static void check_read(struct object *o)
{
	struct atoll_completion *c;
	size_t cap = (o->cur.exists ? o->cur.size : 0) + (o->uncertain ? MAX_SIZE : 4096);
	uint8_t *buf = malloc(cap + 1);
	uint64_t start = now_ns();
	int64_t r;
	uint64_t ver = 0;

	if (!buf || atoll_completion_create(NULL, NULL, NULL, &c))
		abort();
	r = atoll_aio_read(io, o->oid, c, buf, cap + 1, 0, 0);
	if (r == 0) {
		r = atoll_completion_wait(c);
		ver = atoll_completion_version(c);
	}
	atoll_completion_release(c);
	note_op(o->oid, start, false);
	__atomic_add_fetch(&cnt.reads, 1, __ATOMIC_RELAXED);
	if (r < 0 && r != -ENOENT) {
		if (r == -ETIMEDOUT)
			__atomic_add_fetch(&cnt.timeouts, 1, __ATOMIC_RELAXED);
		else {
			__atomic_add_fetch(&cnt.errors, 1, __ATOMIC_RELAXED);
			report("read-error", o, "%s", atoll_strerror((int)r));
		}
		free(buf);
		return;
	}
	bool exists = r >= 0;
	size_t n = exists ? (size_t)r : 0;

	if (o->uncertain) {
		if (state_equal(&o->cur, exists, buf, n)) {
			o->uncertain = false;
		} else if (state_equal(&o->alt, exists, buf, n)) {
			state_copy(&o->cur, &o->alt);
			o->uncertain = false;
		} else {
			__atomic_add_fetch(&cnt.wrong, 1, __ATOMIC_RELAXED);
			report("wrong", o, "matches neither state an unsure op may have left "
			       "(%s, %zu bytes)", exists ? "exists" : "missing", n);
		}
		state_free(&o->alt);
		o->cur.version = exists ? ver : 0;
		free(buf);
		return;
	}
	if (!state_equal(&o->cur, exists, buf, n)) {
		if (o->cur.exists && !exists) {
			__atomic_add_fetch(&cnt.lost, 1, __ATOMIC_RELAXED);
			report("lost", o, "acknowledged at v%" PRIu64 " (%zu bytes), reads ENOENT",
			       o->cur.version, o->cur.size);
		} else if (state_equal(&o->prev, exists, buf, n)) {
			__atomic_add_fetch(&cnt.stale, 1, __ATOMIC_RELAXED);
			report("stale", o, "read v%" PRIu64 " returns the content before the "
			       "acknowledged v%" PRIu64, ver, o->cur.version);
		} else {
			__atomic_add_fetch(&cnt.wrong, 1, __ATOMIC_RELAXED);
			report("wrong", o, "want %s %zu bytes v%" PRIu64 ", read %s %zu bytes v%"
			       PRIu64, o->cur.exists ? "existing" : "missing", o->cur.size,
			       o->cur.version, exists ? "existing" : "missing", n, ver);
		}
		/* Take what is there, so one fault is counted once. */
		state_free(&o->cur);
		if (exists) {
			struct state s = { true, buf, n, ver };

			state_copy(&o->cur, &s);
		}
	} else if (exists && o->cur.version && ver != o->cur.version) {
		__atomic_add_fetch(&cnt.version_bad, 1, __ATOMIC_RELAXED);
		report("version", o, "read v%" PRIu64 ", acknowledged v%" PRIu64, ver,
		       o->cur.version);
		o->cur.version = ver;
	}
	free(buf);
}

static void mutate(struct object *o, enum mut m, uint64_t *seed)
{
	size_t len = 0;
	uint64_t off = 0, ver = 0;
	uint8_t *buf;
	int64_t r;

	if (m == M_CREATE)
		len = rng_next(seed) % (64u << 10);
	else if (m == M_OVERWRITE) {
		len = 1 + rng_next(seed) % (16u << 10);
		off = o->cur.exists ? rng_next(seed) % (o->cur.size + 1) : 0;
		if (off + len > MAX_SIZE)
			off = MAX_SIZE - len;
	} else if (m == M_APPEND) {
		len = 1 + rng_next(seed) % (8u << 10);
		if (o->cur.exists && o->cur.size + len > MAX_SIZE)
			m = M_CREATE;
	}
	buf = malloc(len ? len : 1);
	if (!buf)
		abort();
	fill(buf, len, seed);
	r = submit(m, o->oid, buf, len, off, &ver);
	if (m == M_DELETE && r == -ENOENT && !o->cur.exists)
		r = 0;
	if (r < 0) {
		if (r == -ETIMEDOUT) {
			__atomic_add_fetch(&cnt.timeouts, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_add_fetch(&cnt.errors, 1, __ATOMIC_RELAXED);
			report("error", o, "%s failed: %s", mut_name[m], atoll_strerror((int)r));
		}
		/* Applied or not: the next read decides. */
		state_copy(&o->alt, &o->cur);
		apply(&o->alt, m, buf, len, off);
		o->uncertain = true;
		free(buf);
		check_read(o);
		return;
	}
	if (o->cur.version && ver && ver <= o->cur.version && !(m == M_DELETE && !o->cur.exists)) {
		__atomic_add_fetch(&cnt.version_bad, 1, __ATOMIC_RELAXED);
		report("version", o, "%s acknowledged with v%" PRIu64 " after v%" PRIu64,
		       mut_name[m], ver, o->cur.version);
	}
	state_copy(&o->prev, &o->cur);
	apply(&o->cur, m, buf, len, off);
	o->cur.version = o->cur.exists ? ver : 0;
	free(buf);
	switch (m) {
	case M_CREATE: __atomic_add_fetch(&cnt.creates, 1, __ATOMIC_RELAXED); break;
	case M_OVERWRITE: __atomic_add_fetch(&cnt.overwrites, 1, __ATOMIC_RELAXED); break;
	case M_APPEND: __atomic_add_fetch(&cnt.appends, 1, __ATOMIC_RELAXED); break;
	case M_DELETE: __atomic_add_fetch(&cnt.deletes, 1, __ATOMIC_RELAXED); break;
	}
	log_ack(o, mut_name[m], off, len);
}

struct worker {
	pthread_t tid;
	int idx;
	uint64_t seed;
};

static void *work(void *arg)
{
	struct worker *w = arg;

	while (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
		uint64_t x = rng_next(&w->seed);
		struct object *o = &objs[w->idx + nthreads * (int)(x % PER_THREAD)];
		unsigned p = (unsigned)((x >> 32) % 100);

		if (o->uncertain || p < 30) {
			check_read(o);
			continue;
		}
		if (!o->cur.exists)
			mutate(o, p < 90 ? M_CREATE : M_DELETE, &w->seed);
		else if (p < 55)
			mutate(o, M_OVERWRITE, &w->seed);
		else if (p < 75)
			mutate(o, M_APPEND, &w->seed);
		else if (p < 88)
			mutate(o, M_CREATE, &w->seed);
		else
			mutate(o, M_DELETE, &w->seed);
	}
	return NULL;
}

static void print_counts(const char *when)
{
	printf("%s: creates %" PRIu64 " overwrites %" PRIu64 " appends %" PRIu64
	       " deletes %" PRIu64 " reads %" PRIu64 " timeouts %" PRIu64 " errors %" PRIu64
	       " lost %" PRIu64 " wrong %" PRIu64 " stale %" PRIu64 " version_bad %" PRIu64 "\n",
	       when, cnt.creates, cnt.overwrites, cnt.appends, cnt.deletes, cnt.reads,
	       cnt.timeouts, cnt.errors, cnt.lost, cnt.wrong, cnt.stale, cnt.version_bad);
	fflush(stdout);
}

/* "mark LABEL [OBJECT...]" and "stall" while the workload runs; false on
 * "stop". */
static bool command(char *line)
{
	if (strncmp(line, "stop", 4) == 0)
		return false;
	pthread_mutex_lock(&lock);
	if (strncmp(line, "mark", 4) == 0 && tm.nmarks < MARKS_MAX) {
		int i = tm.nmarks++;
		char *save = NULL, *w = strtok_r(line + 4, " \n", &save);

		snprintf(tm.mark_label[i], sizeof(tm.mark_label[i]), "%s", w ? w : "");
		while ((w = strtok_r(NULL, " \n", &save))) {
			int obj = obj_index(w);

			if (obj < 0) {
				fprintf(stderr, "mark %s: '%s' is not an object tN of this "
					"workload; ignored\n", tm.mark_label[i], w);
				continue;
			}
			tm.mark_some[i] = true;
			tm.mark_obj[i][obj] = true;
		}
		tm.mark_at[i] = now_ns();
		tm.mark_open[i] = true;
	} else if (strncmp(line, "stall", 5) == 0) {
		printf("stall: longest op %.0f ms\n", (double)tm.window_op_max / 1e6);
		fflush(stdout);
		tm.window_op_max = 0;
	}
	pthread_mutex_unlock(&lock);
	return true;
}

int main(int argc, char **argv)
{
	struct atoll_cluster *cl;
	struct worker *w;
	char line[8192];
	uint64_t seed;
	int r;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: thrash-client CONF POOL SEED LEDGER [THREADS]\n");
		return 2;
	}
	if (argc == 6) {
		nthreads = atoi(argv[5]);
		if (nthreads < 1 || nthreads > THREADS_MAX) {
			fprintf(stderr, "thrash-client: THREADS must be 1..%d\n", THREADS_MAX);
			return 2;
		}
		nobj = nthreads * PER_THREAD;
	}
	objs = calloc((size_t)nobj, sizeof(*objs));
	w = calloc((size_t)nthreads, sizeof(*w));
	if (!objs || !w)
		abort();
	seed = strtoull(argv[3], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
	ledger = fopen(argv[4], "w");
	if (!ledger) {
		perror(argv[4]);
		return 1;
	}
	setvbuf(ledger, NULL, _IOLBF, 0);
	r = atoll_cluster_create(&cl, argv[1], 0);
	if (!r)
		r = atoll_cluster_connect(cl);
	if (!r)
		r = atoll_ioctx_create(cl, argv[2], &io, 0);
	if (r) {
		fprintf(stderr, "thrash-client: cannot connect: %s\n", atoll_strerror(r));
		return 1;
	}
	for (int i = 0; i < nobj; i++)
		snprintf(objs[i].oid, sizeof(objs[i].oid), "t%d", i);
	for (int i = 0; i < nthreads; i++) {
		w[i].idx = i;
		w[i].seed = seed + (uint64_t)i * 7919;
		if (pthread_create(&w[i].tid, NULL, work, &w[i]))
			abort();
	}
	printf("running\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && command(line))
		;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].tid, NULL);
	print_counts("stopped");
	printf("longest op %.0f ms, longest gap between acknowledged writes %.0f ms\n",
	       (double)tm.op_max / 1e6, (double)tm.gap_max / 1e6);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "verify", 6) != 0)
		;
	uint64_t before = cnt.reads;

	for (int i = 0; i < nobj; i++)
		check_read(&objs[i]);
	for (int i = 0; i < nobj; i++)
		if (objs[i].uncertain) {
			cnt.wrong++;
			report("unsettled", &objs[i], "still unsure after the final read");
		}
	printf("verified %" PRIu64 " objects\n", cnt.reads - before);
	print_counts("final");
	bool bad = cnt.lost || cnt.wrong || cnt.stale || cnt.errors || cnt.version_bad;

	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(cl);
	for (int i = 0; i < nobj; i++) {
		state_free(&objs[i].cur);
		state_free(&objs[i].alt);
		state_free(&objs[i].prev);
	}
	free(objs);
	free(w);
	fclose(ledger);
	return bad ? 1 : 0;
}
