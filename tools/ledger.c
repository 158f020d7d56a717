/*
 * ledger.c - the ledger workload (ledger.h): worker threads that mutate
 * and read their own objects, the model of each object, the checks of
 * every read against it, and the timing the tests ask for (marks, the
 * longest op, the longest gap between acknowledged writes).
 */
#include "ledger.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MARKS_MAX	64
#define MAX_SIZE	(256u << 10)
#define REPORT_MAX	20
#define OBJS_MAX	(LEDGER_THREADS_MAX * LEDGER_PER_THREAD)
#define OID_MAX		256

struct state {
	bool exists;
	uint8_t *data;
	size_t size;
	uint64_t version;	/* 0 = unknown (after a failed op) */
};

struct object {
	char oid[OID_MAX];
	struct state cur;
	bool uncertain;		/* a failed mutation: cur or alt */
	struct state alt;
	struct state prev;	/* the state before the last acknowledged change */
};

struct worker {
	pthread_t tid;
	struct ledger *l;
	int idx;
	uint64_t seed;
};

struct mark {
	uint64_t at;
	char label[32];
	bool open;
	bool some;			/* only the objects in obj count */
	bool obj[OBJS_MAX];
	FILE *out;
};

struct ledger {
	struct atoll_ioctx *io;
	struct ledger_opts o;
	size_t prefix_len;
	int nobj;
	struct object *objs;
	struct worker *w;
	int nstarted;
	int stopping;			/* atomic */
	pthread_mutex_t lock;		/* counts' report, record, timing */
	struct ledger_counts cnt;	/* atomics, or under lock */
	uint64_t reported;
	/* timing (CLOCK_MONOTONIC ns), under lock */
	uint64_t op_max, window_op_max;	/* longest op: run, since ledger_stall */
	uint64_t last_ack, gap_max;	/* acknowledged mutations */
	struct mark *marks;
	int nmarks;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* The index of object "tN" (without the prefix), or -1. */
static int obj_index(const struct ledger *l, const char *name)
{
	char *end;
	long i;

	if (name[0] != 't' || name[1] < '0' || name[1] > '9')
		return -1;
	i = strtol(name + 1, &end, 10);
	return *end || i >= l->nobj ? -1 : (int)i;
}

/* An op on object obj that took from start to now (ack: an acknowledged
 * mutation). */
static void note_op(struct ledger *l, int obj, uint64_t start, bool ack)
{
	uint64_t now, d;

	pthread_mutex_lock(&l->lock);
	now = now_ns();	/* under the lock: acks are noted in time order */
	d = now - start;
	if (d > l->op_max)
		l->op_max = d;
	if (d > l->window_op_max)
		l->window_op_max = d;
	if (ack) {
		if (l->last_ack && now - l->last_ack > l->gap_max)
			l->gap_max = now - l->last_ack;
		l->last_ack = now;
		for (int i = 0; i < l->nmarks; i++) {
			struct mark *m = &l->marks[i];

			/* an op issued before the mark may have been served
			 * before the event it marks */
			if (!m->open || start < m->at || (m->some && !m->obj[obj]))
				continue;
			m->open = false;
			fprintf(m->out, "mark %s: first write acknowledged after %.0f ms\n",
				m->label, (double)(now - m->at) / 1e6);
			fflush(m->out);
		}
	}
	pthread_mutex_unlock(&l->lock);
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

static void report(struct ledger *l, const char *kind, const struct object *o,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void report(struct ledger *l, const char *kind, const struct object *o,
		   const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&l->lock);
	if (l->reported++ < REPORT_MAX) {
		fprintf(l->o.report, "%s: %s %s: ", l->o.who, kind, o->oid);
		va_start(ap, fmt);
		vfprintf(l->o.report, fmt, ap);
		va_end(ap);
		fputc('\n', l->o.report);
	}
	pthread_mutex_unlock(&l->lock);
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

static void record(struct ledger *l, const struct object *o, const char *op, uint64_t off,
		   uint64_t len)
{
	if (!l->o.record)
		return;
	pthread_mutex_lock(&l->lock);
	fprintf(l->o.record, "%s %s %" PRIu64 " %" PRIu64 " v%" PRIu64 " size %zu crc %08x\n",
		o->oid, op, off, len, o->cur.version, o->cur.size,
		o->cur.exists ? crc_of(o->cur.data, o->cur.size) : 0);
	pthread_mutex_unlock(&l->lock);
}

enum mut { M_CREATE, M_OVERWRITE, M_APPEND, M_DELETE };
static const char *const mut_name[] = { "create", "overwrite", "append", "delete" };

/* Runs one mutation synchronously; returns its result, *ver the version. */
static int64_t submit(struct ledger *l, int obj, enum mut m, const uint8_t *buf, size_t len,
		      uint64_t off, uint64_t *ver)
{
	const char *oid = l->objs[obj].oid;
	struct atoll_completion *c;
	uint64_t start = now_ns();
	int64_t r;

	r = atoll_completion_create(NULL, NULL, NULL, &c);
	if (r)
		return r;
	switch (m) {
	case M_CREATE: r = atoll_aio_write_full(l->io, oid, c, buf, len, 0); break;
	case M_OVERWRITE: r = atoll_aio_write(l->io, oid, c, buf, len, off, 0); break;
	case M_APPEND: r = atoll_aio_append(l->io, oid, c, buf, len, 0); break;
	case M_DELETE: r = atoll_aio_remove(l->io, oid, c, 0); break;
	}
	if (r == 0) {
		r = atoll_completion_wait(c);
		*ver = atoll_completion_version(c);
	}
	atoll_completion_release(c);
	note_op(l, obj, start, r >= 0 || (m == M_DELETE && r == -ENOENT));
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

/* Reads object obj and checks it against the model; settles an
 * uncertain object. */
static void check_read(struct ledger *l, int obj)
{
	struct object *o = &l->objs[obj];
	struct atoll_completion *c;
	size_t cap = (o->cur.exists ? o->cur.size : 0) + (o->uncertain ? MAX_SIZE : 4096);
	uint8_t *buf = malloc(cap + 1);
	uint64_t start = now_ns();
	int64_t r;
	uint64_t ver = 0;

	if (!buf || atoll_completion_create(NULL, NULL, NULL, &c))
		abort();
	r = atoll_aio_read(l->io, o->oid, c, buf, cap + 1, 0, 0);
	if (r == 0) {
		r = atoll_completion_wait(c);
		ver = atoll_completion_version(c);
	}
	atoll_completion_release(c);
	note_op(l, obj, start, false);
	count(&l->cnt.reads);
	if (r < 0 && r != -ENOENT) {
		if (r == -ETIMEDOUT) {
			count(&l->cnt.timeouts);
		} else {
			count(&l->cnt.errors);
			report(l, "read-error", o, "%s", atoll_strerror((int)r));
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
			count(&l->cnt.wrong);
			report(l, "wrong", o, "matches neither state an unsure op may have left "
			       "(%s, %zu bytes)", exists ? "exists" : "missing", n);
		}
		state_free(&o->alt);
		o->cur.version = exists ? ver : 0;
		free(buf);
		return;
	}
	if (!state_equal(&o->cur, exists, buf, n)) {
		if (o->cur.exists && !exists) {
			count(&l->cnt.lost);
			report(l, "lost", o, "acknowledged at v%" PRIu64 " (%zu bytes), reads ENOENT",
			       o->cur.version, o->cur.size);
		} else if (state_equal(&o->prev, exists, buf, n)) {
			count(&l->cnt.stale);
			report(l, "stale", o, "read v%" PRIu64 " returns the content before the "
			       "acknowledged v%" PRIu64, ver, o->cur.version);
		} else {
			count(&l->cnt.wrong);
			report(l, "wrong", o, "want %s %zu bytes v%" PRIu64 ", read %s %zu bytes v%"
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
		count(&l->cnt.version_bad);
		report(l, "version", o, "read v%" PRIu64 ", acknowledged v%" PRIu64, ver,
		       o->cur.version);
		o->cur.version = ver;
	}
	free(buf);
}

static void mutate(struct ledger *l, int obj, enum mut m, uint64_t *seed)
{
	struct object *o = &l->objs[obj];
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
	r = submit(l, obj, m, buf, len, off, &ver);
	if (m == M_DELETE && r == -ENOENT && !o->cur.exists)
		r = 0;
	if (r < 0) {
		if (r == -ETIMEDOUT) {
			count(&l->cnt.timeouts);
		} else {
			count(&l->cnt.errors);
			report(l, "error", o, "%s failed: %s", mut_name[m], atoll_strerror((int)r));
		}
		/* Applied or not: the next read decides. */
		state_copy(&o->alt, &o->cur);
		apply(&o->alt, m, buf, len, off);
		o->uncertain = true;
		free(buf);
		check_read(l, obj);
		return;
	}
	if (o->cur.version && ver && ver <= o->cur.version && !(m == M_DELETE && !o->cur.exists)) {
		count(&l->cnt.version_bad);
		report(l, "version", o, "%s acknowledged with v%" PRIu64 " after v%" PRIu64,
		       mut_name[m], ver, o->cur.version);
	}
	state_copy(&o->prev, &o->cur);
	apply(&o->cur, m, buf, len, off);
	o->cur.version = o->cur.exists ? ver : 0;
	free(buf);
	switch (m) {
	case M_CREATE: count(&l->cnt.creates); break;
	case M_OVERWRITE: count(&l->cnt.overwrites); break;
	case M_APPEND: count(&l->cnt.appends); break;
	case M_DELETE: count(&l->cnt.deletes); break;
	}
	record(l, o, mut_name[m], off, len);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct ledger *l = w->l;
	int nthreads = l->o.threads;

	while (!__atomic_load_n(&l->stopping, __ATOMIC_ACQUIRE)) {
		uint64_t x = rng_next(&w->seed);
		int obj = w->idx + nthreads * (int)(x % LEDGER_PER_THREAD);
		const struct object *o = &l->objs[obj];
		unsigned p = (unsigned)((x >> 32) % 100);

		if (o->uncertain || p < 30) {
			check_read(l, obj);
			continue;
		}
		if (!o->cur.exists)
			mutate(l, obj, p < 90 ? M_CREATE : M_DELETE, &w->seed);
		else if (p < 55)
			mutate(l, obj, M_OVERWRITE, &w->seed);
		else if (p < 75)
			mutate(l, obj, M_APPEND, &w->seed);
		else if (p < 88)
			mutate(l, obj, M_CREATE, &w->seed);
		else
			mutate(l, obj, M_DELETE, &w->seed);
	}
	return NULL;
}

struct ledger *ledger_start(struct atoll_ioctx *io, const struct ledger_opts *o)
{
	struct ledger *l;

	if (o->threads < 1 || o->threads > LEDGER_THREADS_MAX ||
	    strlen(o->prefix) + 16 > OID_MAX)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->io = io;
	l->o = *o;
	if (!l->o.report)
		l->o.report = stderr;
	if (!l->o.who)
		l->o.who = "ledger";
	l->nobj = o->threads * LEDGER_PER_THREAD;
	l->objs = calloc((size_t)l->nobj, sizeof(*l->objs));
	l->w = calloc((size_t)o->threads, sizeof(*l->w));
	l->marks = calloc(MARKS_MAX, sizeof(*l->marks));
	pthread_mutex_init(&l->lock, NULL);
	if (!l->objs || !l->w || !l->marks) {
		ledger_free(l);
		return NULL;
	}
	for (int i = 0; i < l->nobj; i++)
		snprintf(l->objs[i].oid, sizeof(l->objs[i].oid), "%st%d", o->prefix, i);
	for (int i = 0; i < o->threads; i++) {
		l->w[i].l = l;
		l->w[i].idx = i;
		l->w[i].seed = o->seed * 0x9E3779B97F4A7C15ull + 1 + (uint64_t)i * 7919;
		if (pthread_create(&l->w[i].tid, NULL, work, &l->w[i])) {
			ledger_stop(l);
			ledger_free(l);
			return NULL;
		}
		l->nstarted++;
	}
	return l;
}

int ledger_mark(struct ledger *l, const char *label, char *const *objs, int n, FILE *out)
{
	struct mark *m;
	int ret = 0;

	pthread_mutex_lock(&l->lock);
	if (l->nmarks == MARKS_MAX) {
		pthread_mutex_unlock(&l->lock);
		return -ENOSPC;
	}
	m = &l->marks[l->nmarks++];
	snprintf(m->label, sizeof(m->label), "%s", label);
	for (int i = 0; i < n; i++) {
		int obj = obj_index(l, objs[i]);

		if (obj < 0) {
			ret = -EINVAL;
			continue;
		}
		m->some = true;
		m->obj[obj] = true;
	}
	m->out = out;
	m->at = now_ns();
	m->open = true;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

uint64_t ledger_stall(struct ledger *l)
{
	uint64_t v;

	pthread_mutex_lock(&l->lock);
	v = l->window_op_max;
	l->window_op_max = 0;
	pthread_mutex_unlock(&l->lock);
	return v;
}

void ledger_stop(struct ledger *l)
{
	__atomic_store_n(&l->stopping, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < l->nstarted; i++)
		pthread_join(l->w[i].tid, NULL);
	l->nstarted = 0;
}

void ledger_timing(struct ledger *l, uint64_t *op_max, uint64_t *gap_max)
{
	pthread_mutex_lock(&l->lock);
	*op_max = l->op_max;
	*gap_max = l->gap_max;
	pthread_mutex_unlock(&l->lock);
}

uint64_t ledger_verify(struct ledger *l)
{
	uint64_t before = l->cnt.reads;

	for (int i = 0; i < l->nobj; i++)
		check_read(l, i);
	for (int i = 0; i < l->nobj; i++)
		if (l->objs[i].uncertain) {
			count(&l->cnt.wrong);
			report(l, "unsettled", &l->objs[i], "still unsure after the final read");
		}
	return l->cnt.reads - before;
}

int ledger_remove_objects(struct ledger *l)
{
	int first = 0;

	for (int i = 0; i < l->nobj; i++) {
		int r = atoll_remove(l->io, l->objs[i].oid, 0);

		if (r && r != -ENOENT && !first)
			first = r;
	}
	return first;
}

void ledger_counts(struct ledger *l, struct ledger_counts *c)
{
	pthread_mutex_lock(&l->lock);
	*c = l->cnt;
	pthread_mutex_unlock(&l->lock);
}

bool ledger_bad(const struct ledger_counts *c)
{
	return c->lost || c->wrong || c->stale || c->errors || c->version_bad;
}

void ledger_free(struct ledger *l)
{
	if (!l)
		return;
	for (int i = 0; l->objs && i < l->nobj; i++) {
		state_free(&l->objs[i].cur);
		state_free(&l->objs[i].alt);
		state_free(&l->objs[i].prev);
	}
	free(l->objs);
	free(l->w);
	free(l->marks);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
