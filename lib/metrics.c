/*
 * metrics.c - the metrics registry and the Prometheus text exposition
 * format (version 0.0.4) it encodes to.
 *
 * Families and series are linked lists under the registry's lock: they
 * are created at setup (tens of them), walked once per scrape, and never
 * freed before the registry, so the pointers the daemons keep stay
 * valid without reference counts.  A series' values are atomics updated
 * with relaxed order: each value is exact, and a scrape needs no ordering
 * between them.  A histogram keeps each bucket's own count (not the
 * cumulative one) so that an observation is two adds; the encoder sums.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "log.h"
#include "metrics.h"

struct family;

struct metric {
	struct family *fam;
	struct metric *next;
	char *labels;			/* k="v",k2="v2" (escaped), "" for none */
	_Atomic uint64_t count;		/* counter */
	_Atomic int64_t value;		/* gauge */
	_Atomic uint64_t sum;		/* histogram, in the observed unit */
	_Atomic uint64_t *buckets;	/* histogram: nbounds + 1 (the last is +Inf) */
};

struct family {
	struct family *next;
	char *name;
	char *help;
	enum metric_type type;
	unsigned nlabels;
	char *label_names[METRICS_MAX_LABELS];
	uint64_t bounds[METRICS_MAX_BUCKETS];
	unsigned nbounds;
	double scale;
	atomic_bool shown;
	struct metric *first, **lastp;
};

struct collect_hook {
	struct collect_hook *next;
	void (*fn)(void *arg);
	void *arg;
	void (*release)(void *arg);
};

struct metrics {
	pthread_mutex_t lock;		/* the lists below; not the values */
	struct family *first, **lastp;
	struct collect_hook *hooks;
};

const uint64_t metrics_latency_ns_bounds[] = {
	100000, 250000, 500000,
	1000000, 2500000, 5000000,
	10000000, 25000000, 50000000,
	100000000, 250000000, 500000000,
	1000000000, 2500000000, 5000000000,
	10000000000, 30000000000,
};
const unsigned metrics_latency_ns_nbounds =
	sizeof(metrics_latency_ns_bounds) / sizeof(metrics_latency_ns_bounds[0]);

struct metrics *metrics_new(void)
{
	struct metrics *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->lastp = &r->first;
	return r;
}

void metrics_free(struct metrics *r)
{
	struct family *f, *fn;
	struct metric *m, *mn;
	struct collect_hook *h, *hn;

	if (!r)
		return;
	for (f = r->first; f; f = fn) {
		fn = f->next;
		for (m = f->first; m; m = mn) {
			mn = m->next;
			free(m->labels);
			free(m->buckets);
			free(m);
		}
		for (unsigned i = 0; i < f->nlabels; i++)
			free(f->label_names[i]);
		free(f->name);
		free(f->help);
		free(f);
	}
	for (h = r->hooks; h; h = hn) {
		hn = h->next;
		if (h->release)
			h->release(h->arg);
		free(h);
	}
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* A growing text buffer; on allocation failure it stops growing and
 * remembers (b->failed). */
struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void sb_reserve(struct sbuf *b, size_t more)
{
	size_t ncap;
	char *np;

	if (b->failed || b->len + more + 1 <= b->cap)
		return;
	ncap = b->cap ? b->cap : 4096;
	while (ncap < b->len + more + 1)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np) {
		b->failed = true;
		return;
	}
	b->p = np;
	b->cap = ncap;
}

static void sb_putc(struct sbuf *b, char c)
{
	sb_reserve(b, 1);
	if (b->failed)
		return;
	b->p[b->len++] = c;
	b->p[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	sb_reserve(b, n);
	if (b->failed)
		return;
	memcpy(b->p + b->len, s, n + 1);
	b->len += n;
}

__attribute__((format(printf, 2, 3)))
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->failed = true;
		return;
	}
	sb_reserve(b, (size_t)n);
	if (b->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Label values: backslash, double quote and line feed are escaped; HELP
 * text: backslash and line feed (the format's two escaping rules). */
static void sb_escaped(struct sbuf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			sb_puts(b, "\\\\");
		else if (*s == '\n')
			sb_puts(b, "\\n");
		else if (*s == '"' && quote)
			sb_puts(b, "\\\"");
		else
			sb_putc(b, *s);
	}
}

static bool name_ok(const char *s, bool label)
{
	if (!s || !*s)
		return false;
	if (label && s[0] == '_' && s[1] == '_')
		return false;	/* reserved for Prometheus itself */
	for (const char *p = s; *p; p++) {
		char c = *p;
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			     (!label && c == ':');

		if (!alpha && !(p != s && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

/* Finds or creates family name (lock held); NULL on a mismatch. */
static struct family *family_get(struct metrics *r, const char *name, const char *help,
				 enum metric_type type, const char **lnames, unsigned nl,
				 const uint64_t *bounds, unsigned nbounds, double scale)
{
	struct family *f;

	for (f = r->first; f; f = f->next)
		if (!strcmp(f->name, name))
			break;
	if (f) {
		bool same = f->type == type && f->nlabels == nl;

		for (unsigned i = 0; same && i < nl; i++)
			same = !strcmp(f->label_names[i], lnames[i]);
		if (!same) {
			log_error("metrics", "metric '%s' registered twice with different types or labels", name);
			return NULL;
		}
		return f;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	f->type = type;
	f->scale = scale;
	f->nbounds = nbounds;
	if (nbounds)
		memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	atomic_init(&f->shown, true);
	f->lastp = &f->first;
	for (unsigned i = 0; i < nl; i++)
		if (!(f->label_names[f->nlabels++] = strdup(lnames[i])))
			goto out_free;
	if (!f->name || !f->help)
		goto out_free;
	*r->lastp = f;
	r->lastp = &f->next;
	return f;

out_free:
	for (unsigned i = 0; i < f->nlabels; i++)
		free(f->label_names[i]);
	free(f->name);
	free(f->help);
	free(f);
	return NULL;
}

static struct metric *series_get(struct metrics *r, const char *name, const char *help,
				 enum metric_type type, const uint64_t *bounds,
				 unsigned nbounds, double scale, va_list ap)
{
	const char *lnames[METRICS_MAX_LABELS], *lvals[METRICS_MAX_LABELS];
	struct sbuf lb = {0};
	struct family *f;
	struct metric *m = NULL;
	unsigned nl = 0;
	const char *k;

	if (!r)
		return NULL;
	while ((k = va_arg(ap, const char *)) != NULL) {
		const char *v = va_arg(ap, const char *);

		if (nl == METRICS_MAX_LABELS || !name_ok(k, true) || !v) {
			log_error("metrics", "metric '%s': bad or too many labels", name);
			return NULL;
		}
		lnames[nl] = k;
		lvals[nl++] = v;
	}
	if (!name_ok(name, false) || nbounds > METRICS_MAX_BUCKETS) {
		log_error("metrics", "metric '%s': bad name or too many buckets", name);
		return NULL;
	}
	for (unsigned i = 1; i < nbounds; i++)
		if (bounds[i] <= bounds[i - 1]) {
			log_error("metrics", "metric '%s': bucket bounds not increasing", name);
			return NULL;
		}
	sb_puts(&lb, "");
	for (unsigned i = 0; i < nl; i++) {
		sb_printf(&lb, "%s%s=\"", i ? "," : "", lnames[i]);
		sb_escaped(&lb, lvals[i], true);
		sb_putc(&lb, '"');
	}
	if (lb.failed)
		goto out_free_lb;

	pthread_mutex_lock(&r->lock);
	f = family_get(r, name, help, type, lnames, nl, bounds, nbounds, scale);
	if (!f)
		goto out_unlock;
	for (m = f->first; m; m = m->next)
		if (!strcmp(m->labels, lb.p))
			goto out_unlock;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out_unlock;
	if (type == METRIC_HISTOGRAM) {
		m->buckets = calloc(f->nbounds + 1, sizeof(*m->buckets));
		if (!m->buckets) {
			free(m);
			m = NULL;
			goto out_unlock;
		}
	}
	m->fam = f;
	m->labels = lb.p;
	lb.p = NULL;
	*f->lastp = m;
	f->lastp = &m->next;
out_unlock:
	pthread_mutex_unlock(&r->lock);
out_free_lb:
	free(lb.p);
	return m;
}

struct metric *metrics_counter(struct metrics *r, const char *name, const char *help, ...)
{
	struct metric *m;
	va_list ap;

	va_start(ap, help);
	m = series_get(r, name, help, METRIC_COUNTER, NULL, 0, 1, ap);
	va_end(ap);
	return m;
}

struct metric *metrics_gauge(struct metrics *r, const char *name, const char *help, ...)
{
	struct metric *m;
	va_list ap;

	va_start(ap, help);
	m = series_get(r, name, help, METRIC_GAUGE, NULL, 0, 1, ap);
	va_end(ap);
	return m;
}

struct metric *metrics_histogram(struct metrics *r, const char *name, const char *help,
				 const uint64_t *bounds, unsigned nbounds, double scale, ...)
{
	struct metric *m;
	va_list ap;

	va_start(ap, scale);
	m = series_get(r, name, help, METRIC_HISTOGRAM, bounds, nbounds, scale, ap);
	va_end(ap);
	return m;
}

void metric_inc(struct metric *m)
{
	metric_add(m, 1);
}

void metric_add(struct metric *m, uint64_t n)
{
	if (!m)
		return;
	if (m->fam->type == METRIC_GAUGE)
		atomic_fetch_add_explicit(&m->value, (int64_t)n, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&m->count, n, memory_order_relaxed);
}

void metric_gauge_add(struct metric *m, int64_t delta)
{
	if (m)
		atomic_fetch_add_explicit(&m->value, delta, memory_order_relaxed);
}

void metric_set(struct metric *m, int64_t v)
{
	if (!m)
		return;
	if (m->fam->type == METRIC_COUNTER)
		atomic_store_explicit(&m->count, (uint64_t)v, memory_order_relaxed);
	else
		atomic_store_explicit(&m->value, v, memory_order_relaxed);
}

void metric_observe(struct metric *m, uint64_t v)
{
	const struct family *f;
	unsigned i;

	if (!m || !m->buckets)
		return;
	f = m->fam;
	/* a few bounds: a linear walk beats a binary search's branches */
	for (i = 0; i < f->nbounds && v > f->bounds[i]; i++)
		;
	atomic_fetch_add_explicit(&m->buckets[i], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&m->sum, v, memory_order_relaxed);
}

int64_t metric_value(const struct metric *m)
{
	if (!m)
		return 0;
	if (m->fam->type == METRIC_GAUGE)
		return atomic_load_explicit(&m->value, memory_order_relaxed);
	return (int64_t)atomic_load_explicit(&m->count, memory_order_relaxed);
}

void metrics_show(struct metrics *r, const char *name, bool shown)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	for (struct family *f = r->first; f; f = f->next)
		if (!strcmp(f->name, name))
			atomic_store(&f->shown, shown);
	pthread_mutex_unlock(&r->lock);
}

int metrics_on_collect(struct metrics *r, void (*fn)(void *arg), void *arg,
		       void (*release)(void *arg))
{
	struct collect_hook *h = calloc(1, sizeof(*h));

	if (!h) {
		if (release)
			release(arg);
		return -ENOMEM;
	}
	h->fn = fn;
	h->arg = arg;
	h->release = release;
	pthread_mutex_lock(&r->lock);
	h->next = r->hooks;
	r->hooks = h;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* name{labels[,extra]} with the braces left out when both are empty */
static void sb_series(struct sbuf *b, const char *name, const char *suffix,
		      const char *labels, const char *extra)
{
	sb_puts(b, name);
	sb_puts(b, suffix);
	if (!*labels && !extra)
		return;
	sb_putc(b, '{');
	sb_puts(b, labels);
	if (extra) {
		if (*labels)
			sb_putc(b, ',');
		sb_puts(b, extra);
	}
	sb_putc(b, '}');
}

static void encode_histogram(struct sbuf *b, const struct family *f, const struct metric *m)
{
	uint64_t cum = 0;
	char le[64];

	for (unsigned i = 0; i <= f->nbounds; i++) {
		cum += atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
		if (i < f->nbounds)
			snprintf(le, sizeof(le), "le=\"%.15g\"", (double)f->bounds[i] * f->scale);
		else
			snprintf(le, sizeof(le), "le=\"+Inf\"");
		sb_series(b, f->name, "_bucket", m->labels, le);
		sb_printf(b, " %llu\n", (unsigned long long)cum);
	}
	sb_series(b, f->name, "_sum", m->labels, NULL);
	sb_printf(b, " %.15g\n",
		  (double)atomic_load_explicit(&m->sum, memory_order_relaxed) * f->scale);
	sb_series(b, f->name, "_count", m->labels, NULL);
	sb_printf(b, " %llu\n", (unsigned long long)cum);
}

static const char *type_name(enum metric_type t)
{
	switch (t) {
	case METRIC_COUNTER: return "counter";
	case METRIC_GAUGE: return "gauge";
	case METRIC_HISTOGRAM: return "histogram";
	}
	return "untyped";
}

int metrics_encode(struct metrics *r, char **out, size_t *len)
{
	struct sbuf b = {0};

	pthread_mutex_lock(&r->lock);
	/* hooks may create series: they run without the lock, and the list
	 * of hooks only grows at its head, so walking it unlocked is safe */
	struct collect_hook *hooks = r->hooks;
	pthread_mutex_unlock(&r->lock);
	for (struct collect_hook *h = hooks; h; h = h->next)
		h->fn(h->arg);

	sb_puts(&b, "");
	pthread_mutex_lock(&r->lock);
	for (const struct family *f = r->first; f; f = f->next) {
		if (!atomic_load(&f->shown) || !f->first)
			continue;
		sb_printf(&b, "# HELP %s ", f->name);
		sb_escaped(&b, f->help, false);
		sb_printf(&b, "\n# TYPE %s %s\n", f->name, type_name(f->type));
		for (const struct metric *m = f->first; m; m = m->next) {
			switch (f->type) {
			case METRIC_COUNTER:
				sb_series(&b, f->name, "", m->labels, NULL);
				sb_printf(&b, " %llu\n", (unsigned long long)
					  atomic_load_explicit(&m->count, memory_order_relaxed));
				break;
			case METRIC_GAUGE:
				sb_series(&b, f->name, "", m->labels, NULL);
				sb_printf(&b, " %lld\n", (long long)
					  atomic_load_explicit(&m->value, memory_order_relaxed));
				break;
			case METRIC_HISTOGRAM:
				encode_histogram(&b, f, m);
				break;
			}
		}
	}
	pthread_mutex_unlock(&r->lock);
	if (b.failed) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	*len = b.len;
	return 0;
}
