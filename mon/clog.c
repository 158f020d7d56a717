/*
 * clog.c - the cluster log in the monitor (clog.h; doc/quorum.md, "The
 * cluster log"): what `atoll -w` streams.
 *
 * The lines live in the replicated state (mon->clog), so every member
 * holds the same lines under the same seqs and a watcher that asks
 * another monitor after a leader change goes on from the seq it saw,
 * with no gap and no repeat.  Two kinds of entries add lines:
 *   - a map change: at apply, every member describes it (clog_map.c) with
 *     the leader's time from the incremental;
 *   - a cluster log entry, proposed by the leader on its tick (at most
 *     one per mon_cluster_log_interval, only when there is something to
 *     say): the summary of PG states and recovery, the health checks
 *     raised and cleared, and lines other code queued (mon_clog_say: the
 *     leader's election).  The leader compares with the memo of what was
 *     last summarized, kept in the replicated state, so a new leader goes
 *     on from its predecessor's summaries instead of repeating them; it
 *     summarizes nothing until the OSDs have reported their PGs to it.
 * The bound (mon_cluster_log_lines) travels in each entry, so every
 * member trims the same oldest lines.  Monitor thread (tick, command)
 * and raft thread (apply, snapshot), both under mon->lock.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll_assert.h"
#include "clog.h"
#include "cmd.h"
#include "encode.h"
#include "log.h"
#include "mon.h"
#include "pgstats.h"

#define LOG_REPLY_MAX		500	/* lines in one `log` answer */
#define LOG_LAST_DEFAULT	20
#define SETTLE_MS		3000	/* a new leader waits this long, */
#define SETTLE_MAX_MS		15000	/* and then for no unknown PG, at most this */

/* The log as apply finds it: created on first use, so a program that only
 * replays the log needs no set-up.  Its first bound is the default on
 * every member, not the member's own setting: the lines a member keeps
 * are replicated state, the same everywhere; the leader's first entry
 * brings the configured bound. */
static struct mon_clog *clog_of(struct mon *mon)
{
	if (!mon->clog.lines) {
		int r = mon_clog_init(&mon->clog, MON_CLOG_KEEP_DEFAULT);

		ATOLL_ASSERT(r == 0, "out of memory for the cluster log");
	}
	return &mon->clog;
}

void mon_clog_fini(struct mon *mon)
{
	mon_clog_free(&mon->clog);
	free(mon->clog_pending);
	mon->clog_pending = NULL;
}

/* ---- apply (raft thread, mon->lock held) ------------------------------------ */

bool mon_clog_apply(struct mon *mon, const void *buf, size_t len, int64_t *res)
{
	struct mon_clog_entry *e = malloc(sizeof(*e));
	struct mon_clog *c;
	int r;

	ATOLL_ASSERT(e, "out of memory applying a cluster log entry");
	r = mon_clog_entry_decode(buf, len, e);
	if (r == 0) {
		free(e);
		return false;
	}
	if (r < 0) {
		log_error("mon", "malformed cluster log entry in the log (%zu bytes): skipped",
			  len);
		free(e);
		*res = -EBADMSG;
		return true;
	}
	c = clog_of(mon);
	r = mon_clog_set_keep(c, e->keep);
	ATOLL_ASSERT(r == 0, "out of memory resizing the cluster log to %u lines", e->keep);
	for (uint32_t i = 0; i < e->n; i++)
		mon_clog_add(c, e->lines[i].stamp_ms, e->lines[i].sev, e->lines[i].text);
	if (e->has_memo)
		c->memo = e->memo;
	mon->digest = 0;
	*res = (int64_t)(c->next_seq - 1);
	free(e);
	return true;
}

struct add_ctx {
	struct mon_clog *c;
	uint64_t stamp;
};

static void add_line(void *arg, uint8_t sev, const char *text)
{
	struct add_ctx *a = arg;

	mon_clog_add(a->c, a->stamp, sev, text);
}

void mon_clog_map_applied(struct mon *mon, const struct osdmap *old,
			  const struct osdmap_inc *inc)
{
	struct add_ctx a = { clog_of(mon), inc->modified_ms };

	mon_clog_describe_map(old, inc, mon->map, add_line, &a);
}

void mon_clog_state_append(struct mon *mon, struct enc *e)
{
	mon_clog_state_encode(clog_of(mon), e);
}

int mon_clog_state_restore(struct mon *mon, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	struct mon_clog c;
	size_t off = 0;
	int r = 0;

	/* the tagged sections after the blob: auth (when set up), then ours */
	while (off < len) {
		r = mon_clog_state_decode(p + off, len - off, &c);
		if (r != 0)
			break;
		size_t l = mon_state_section_len(p + off, len - off);

		if (!l)
			break;
		off += l;
	}
	if (r < 0)
		return -EBADMSG;
	if (r == 0) {
		/* a snapshot from before the cluster log: it starts empty */
		r = mon_clog_init(&c, MON_CLOG_KEEP_DEFAULT);
		if (r < 0)
			return r;
	}
	mon_clog_free(&mon->clog);
	mon->clog = c;
	return 0;
}

/* ---- the leader's lines (monitor thread, mon->lock held) ------------------- */

static void pending_add(struct mon *mon, uint8_t sev, const char *fmt, va_list ap)
{
	struct mon_clog_entry *e = mon->clog_pending;
	struct mon_clog_line *l;

	if (!e) {
		e = mon->clog_pending = calloc(1, sizeof(*e));
		if (!e)
			return;
	}
	if (e->n == MON_CLOG_ENTRY_LINES_MAX) {
		/* the last slot says what did not fit */
		l = &e->lines[e->n - 1];
		snprintf(l->text, sizeof(l->text), "(more lines dropped: the leader queued over "
			 "%u at once)", MON_CLOG_ENTRY_LINES_MAX);
		return;
	}
	l = &e->lines[e->n++];
	l->stamp_ms = mon_wall_ms();
	l->sev = sev;
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
}

void mon_clog_say(struct mon *mon, uint8_t sev, const char *fmt, ...)
{
	va_list ap;

	if (!mon->qv.ready)
		return;
	va_start(ap, fmt);
	pending_add(mon, sev, fmt, ap);
	va_end(ap);
}

static void say(struct mon *mon, uint8_t sev, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(struct mon *mon, uint8_t sev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pending_add(mon, sev, fmt, ap);
	va_end(ap);
}

static int cmp_state(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_code(const void *a, const void *b)
{
	return strcmp(a, b);	/* char[48] elements */
}

/* Appends to buf (at *off, of len) without overflowing. */
static void cat(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void cat(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
}

/* The PG states as "64 pgs: 54 active+clean, 10 active+degraded" (sorted
 * by name, so the same states give the same words). */
static void states_str(const struct mon_pg_summary *s, char *buf, size_t len)
{
	const char *names[PG_SUMMARY_STATES];
	size_t off = 0;

	for (uint32_t k = 0; k < s->nstates; k++)
		names[k] = s->states[k].name;
	qsort(names, s->nstates, sizeof(names[0]), cmp_state);
	buf[0] = '\0';
	cat(buf, len, &off, "%u pgs%s", s->total, s->nstates ? ":" : "");
	for (uint32_t k = 0; k < s->nstates; k++)
		for (uint32_t j = 0; j < s->nstates; j++)
			if (s->states[j].name == names[k])
				cat(buf, len, &off, "%s %u %s", k ? "," : "", s->states[j].n,
				    s->states[j].name);
}

static void summarize_pgs(struct mon *mon, const struct mon_pg_summary *s,
			  const struct mon_io_rates *io, struct mon_clog_memo *memo)
{
	const struct mon_clog_memo *old = &mon->clog.memo;
	char states[MON_CLOG_MEMO_MAX + 1], line[MON_CLOG_TEXT_MAX + 1], b1[32], b2[32];
	uint64_t left = s->degraded + s->misplaced;
	size_t off = 0;

	states_str(s, states, sizeof(states));
	snprintf(memo->pgs, sizeof(memo->pgs), "%s; %llu degraded, %llu misplaced, "
		 "%llu unfound", states, (unsigned long long)s->degraded,
		 (unsigned long long)s->misplaced, (unsigned long long)s->unfound);
	/* the copies left to a recovery or backfill that runs: a PG short of
	 * a member counts its objects degraded while nothing can copy them */
	memo->left = s->recovering_pgs ? left : 0;
	if (!old->left && memo->left)
		say(mon, MON_CLOG_WRN, "recovery started: %llu object copies degraded, %llu "
		    "misplaced (about %s to copy)", (unsigned long long)s->degraded,
		    (unsigned long long)s->misplaced,
		    (cmd_human_bytes(io->recovery_left_bytes, b1, sizeof(b1)), b1));
	if (!strcmp(memo->pgs, old->pgs))
		goto out_done;
	cmd_human_bytes(s->bytes, b1, sizeof(b1));
	cat(line, sizeof(line), &off, "pgmap: %s; %llu objects, %s", states,
	    (unsigned long long)s->objects, b1);
	if (s->degraded)
		cat(line, sizeof(line), &off, "; %llu/%llu object copies degraded (%.1f%%)",
		    (unsigned long long)s->degraded, (unsigned long long)s->copies,
		    s->copies ? 100.0 * (double)s->degraded / (double)s->copies : 0.0);
	if (s->misplaced)
		cat(line, sizeof(line), &off, "; %llu misplaced", (unsigned long long)s->misplaced);
	if (s->unfound)
		cat(line, sizeof(line), &off, "; %llu unfound", (unsigned long long)s->unfound);
	if (left && (s->rate > 0 || io->recovery_bytes_per_s > 0)) {
		cmd_human_bytes((uint64_t)io->recovery_bytes_per_s, b2, sizeof(b2));
		cat(line, sizeof(line), &off, "; recovering %.1f objects/s, %s/s", s->rate, b2);
		if (s->rate > 0) {
			char eta[48];

			mon_pg_duration_str((uint64_t)((double)left / s->rate + 0.5), eta,
					    sizeof(eta));
			cat(line, sizeof(line), &off, ", about %s left", eta);
		}
	}
	say(mon, s->unfound || s->inactive ? MON_CLOG_ERR : s->degraded_pgs || left ?
	    MON_CLOG_WRN : MON_CLOG_INF, "%s", line);
out_done:
	if (old->left && !left)
		say(mon, MON_CLOG_INF, "recovery done: every object copy is in place");
}

/* Whether code (a whole word) is in list ("HEALTH_WARN OSD_DOWN ..."). */
static bool has_word(const char *list, const char *code)
{
	size_t l = strlen(code);

	for (const char *p = list; (p = strstr(p, code)); p += l)
		if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
			return true;
	return false;
}

static void summarize_health(struct mon *mon, struct mon_clog_memo *memo)
{
	const char *old = mon->clog.memo.health;
	char oldst[16] = "", codes[32][48];
	cJSON *h = mon_health(mon, false), *c;
	const char *status;
	size_t off = 0;
	uint32_t n = 0;

	if (!h)
		return;
	status = cJSON_GetStringValue(cJSON_GetObjectItem(h, "status"));
	if (!status)
		status = "HEALTH_ERR";
	sscanf(old, "%15s", oldst);
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(h, "checks")) {
		const char *code = cJSON_GetStringValue(cJSON_GetObjectItem(c, "code"));
		const char *sum = cJSON_GetStringValue(cJSON_GetObjectItem(c, "summary"));
		const char *sev = cJSON_GetStringValue(cJSON_GetObjectItem(c, "severity"));

		if (!code || n == 32)
			continue;
		snprintf(codes[n++], sizeof(codes[0]), "%s", code);
		if (!has_word(old, code))
			say(mon, sev && !strcmp(sev, "HEALTH_ERR") ? MON_CLOG_ERR : MON_CLOG_WRN,
			    "health check failed: %s (%s)", sum ? sum : "", code);
	}
	qsort(codes, n, sizeof(codes[0]), cmp_code);
	memo->health[0] = '\0';
	cat(memo->health, sizeof(memo->health), &off, "%s", status);
	for (uint32_t k = 0; k < n; k++)
		cat(memo->health, sizeof(memo->health), &off, " %s", codes[k]);
	/* the codes of the old memo that are gone */
	for (const char *p = strchr(old, ' '); p && *p; ) {
		char code[48];
		bool still = false;

		p++;
		if (sscanf(p, "%47s", code) != 1)
			break;
		for (uint32_t k = 0; k < n; k++)
			still |= !strcmp(codes[k], code);
		if (!still)
			say(mon, MON_CLOG_INF, "health check cleared: %s", code);
		p = strchr(p, ' ');
	}
	if (strcmp(oldst, status) && (oldst[0] || strcmp(status, "HEALTH_OK"))) {
		if (!strcmp(status, "HEALTH_OK"))
			say(mon, MON_CLOG_INF, "cluster is now healthy (HEALTH_OK)");
		else
			say(mon, !strcmp(status, "HEALTH_ERR") ? MON_CLOG_ERR : MON_CLOG_WRN,
			    "health: %s (was %s)", status, oldst[0] ? oldst : "unknown");
	}
	cJSON_Delete(h);
}

void mon_clog_tick(struct mon *mon)
{
	struct mon_clog_memo memo;
	struct mon_pg_summary *s;
	struct mon_io_rates io;
	struct mon_clog_entry *e;
	uint64_t now = mono_now_ms();
	int64_t res = 0;
	struct enc enc;
	int r;

	if (!mon->qv.ready)
		return;
	if (mon->clog_term != mon->qv.term) {
		mon->clog_term = mon->qv.term;
		mon_clog_say(mon, MON_CLOG_INF, "mon.%s is the leader (term %llu)",
			     mon->self.name, (unsigned long long)mon->qv.term);
		mon->clog_next_ms = 0;
	}
	if (now < mon->clog_next_ms)
		return;
	mon->clog_next_ms = now + (mon->opts.clog_interval_ms ? mon->opts.clog_interval_ms : 2000);
	memo = clog_of(mon)->memo;
	s = malloc(sizeof(*s));
	if (!s)
		return;
	mon_pg_summarize(mon, s);
	/* a new leader hears the PGs from the OSDs' next beacons: until then
	 * they are unknown, which is no news */
	if (now - mon->qv.won_ms >= SETTLE_MS &&
	    (s->unknown == 0 || now - mon->qv.won_ms >= SETTLE_MAX_MS)) {
		mon_io_rates(mon, &io);
		summarize_pgs(mon, s, &io, &memo);
		summarize_health(mon, &memo);
	}
	free(s);
	e = mon->clog_pending;
	if ((!e || !e->n) && !memcmp(&memo, &mon->clog.memo, sizeof(memo)))
		return;
	if (!e) {
		e = mon->clog_pending = calloc(1, sizeof(*e));
		if (!e)
			return;
	}
	e->keep = mon->opts.clog_keep ? mon->opts.clog_keep : MON_CLOG_KEEP_DEFAULT;
	e->has_memo = true;
	e->memo = memo;
	enc_init(&enc);
	mon_clog_entry_encode(e, &enc);
	/* the lines go whatever happens: a leader that lost the vote leaves
	 * them to its successor's summaries */
	memset(e, 0, sizeof(*e));
	r = enc.err;
	if (r == 0)
		r = mon_quorum_propose(mon, enc.buf, enc.len, &res);
	enc_free(&enc);
	if (r < 0)
		log_info("mon", "cluster log lines not committed: %s", r == MON_ENOTLEADER ?
			 "not the leader" : strerror(-r));
}

/* ---- the `log` command ----------------------------------------------------- */

static void time_str(uint64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(ms % 1000));
}

int cmd_log(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const struct mon_clog *c = clog_of(mon);
	uint64_t first = mon_clog_first_seq(c), last = c->next_seq - 1, from, missed = 0;
	int64_t since = 0, nlast = LOG_LAST_DEFAULT;
	bool has_since, has_last, more = false;
	cJSON *arr = NULL;
	uint32_t k, sent = 0;

	if (cmd_arg_int(a, "since", 0, INT64_MAX, &since, &has_since, o) < 0 ||
	    cmd_arg_int(a, "last", 0, MON_CLOG_KEEP_MAX, &nlast, &has_last, o) < 0)
		return o->rc;
	if (has_since && has_last)
		return cmd_fail(o, -EINVAL, "give 'since' or 'last', not both");
	if (has_since) {
		from = (uint64_t)since + 1;
		if (from < first) {
			missed = first - from;	/* trimmed before the watcher asked */
			from = first;
		}
	} else {
		from = last + 1 > (uint64_t)nlast + first ? last + 1 - (uint64_t)nlast : first;
	}
	if (o->json) {
		cJSON_AddNumberToObject(o->j, "first_seq", (double)first);
		cJSON_AddNumberToObject(o->j, "last_seq", (double)last);
		cJSON_AddNumberToObject(o->j, "missed", (double)missed);
		arr = cJSON_AddArrayToObject(o->j, "lines");
	} else if (missed) {
		fprintf(o->txt, "(%llu lines trimmed before they were read)\n",
			(unsigned long long)missed);
	}
	for (k = (uint32_t)(from >= first && from <= last ? from - first : c->n); k < c->n; k++) {
		const struct mon_clog_line *l = mon_clog_at(c, k);
		char ts[72];

		if (sent == LOG_REPLY_MAX) {
			more = true;
			break;
		}
		time_str(l->stamp_ms, ts, sizeof(ts));
		if (arr) {
			cJSON *j = cJSON_CreateObject();

			cJSON_AddNumberToObject(j, "seq", (double)l->seq);
			cJSON_AddNumberToObject(j, "stamp_ms", (double)l->stamp_ms);
			cJSON_AddStringToObject(j, "time", ts);
			cJSON_AddStringToObject(j, "severity", mon_clog_sev_name(l->sev));
			cJSON_AddStringToObject(j, "message", l->text);
			cJSON_AddItemToArray(arr, j);
		} else {
			fprintf(o->txt, "%s [%s] %s\n", ts, mon_clog_sev_name(l->sev), l->text);
		}
		sent++;
	}
	if (o->json)
		cJSON_AddBoolToObject(o->j, "more", more);
	return 0;
}
