/*
 * clog.h - the cluster log: a bounded list of numbered lines kept in the
 * monitors' replicated state (doc/quorum.md, "The cluster log"), what
 * `atoll -w` streams.
 *
 * The pure part (clog_entry.c, clog_map.c; in the mon_entry library so
 * that tests/fuzz and tests/mon link it alone): the lines in memory, the
 * log entry that adds lines, the snapshot section, and the lines a map
 * change says.  The monitor's part (clog.c): applying entries, the
 * leader's summaries of PG states and health, the `log` command.
 */
#ifndef ATOLL_MON_CLOG_H
#define ATOLL_MON_CLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct enc;
struct osdmap;
struct osdmap_inc;

#define MON_CLOG_TEXT_MAX	255	/* bytes of one line's text */
#define MON_CLOG_MEMO_MAX	511	/* bytes of a memo (below) */
#define MON_CLOG_KEEP_MIN	16	/* mon_cluster_log_lines bounds */
#define MON_CLOG_KEEP_MAX	10000
#define MON_CLOG_KEEP_DEFAULT	1000
#define MON_CLOG_ENTRY_LINES_MAX 64	/* lines one entry adds */

/* severities */
enum { MON_CLOG_INF = 0, MON_CLOG_WRN = 1, MON_CLOG_ERR = 2 };
/* "INF", "WRN", "ERR" ("???" out of range) */
const char *mon_clog_sev_name(uint8_t sev);

struct mon_clog_line {
	uint64_t seq;			/* 1, 2, ...: given at apply, in log order */
	uint64_t stamp_ms;		/* the leader's wall clock (ms since 1970) */
	uint8_t sev;			/* MON_CLOG_* */
	char text[MON_CLOG_TEXT_MAX + 1];
};

/* What the leader last summarized, replicated so that a new leader goes
 * on from it instead of repeating it: the health ("HEALTH_WARN OSD_DOWN
 * PG_DEGRADED"), the PG states ("64 pgs: 10 active+..., 54
 * active+clean; 120 degraded, 0 misplaced, 0 unfound") and the object
 * copies left to a recovery or backfill that runs (0: none runs). */
struct mon_clog_memo {
	char health[MON_CLOG_MEMO_MAX + 1];
	char pgs[MON_CLOG_MEMO_MAX + 1];
	uint64_t left;
};

/* The lines kept: a ring of at most keep lines, oldest first; seqs are
 * consecutive (the oldest kept is next_seq - n). */
struct mon_clog {
	uint64_t next_seq;		/* the seq of the next line (1 at first) */
	uint32_t keep;			/* the bound (set by the last entry) */
	uint32_t n, head;		/* lines[(head + k) % keep], k < n */
	struct mon_clog_line *lines;	/* keep slots, malloc'd */
	struct mon_clog_memo memo;
};

/* An empty log of keep lines: 0 or -ENOMEM / -EINVAL (keep out of
 * MON_CLOG_KEEP_MIN..MAX). */
int mon_clog_init(struct mon_clog *c, uint32_t keep);
void mon_clog_free(struct mon_clog *c);
/* Changes the bound; the oldest lines past it go.  0 or -ENOMEM (the log
 * is unchanged). */
int mon_clog_set_keep(struct mon_clog *c, uint32_t keep);
/* Appends a line (seq next_seq), dropping the oldest when full; text is
 * cut at MON_CLOG_TEXT_MAX and control characters become spaces. */
void mon_clog_add(struct mon_clog *c, uint64_t stamp_ms, uint8_t sev, const char *text);
/* The k-th oldest line kept (k < n). */
const struct mon_clog_line *mon_clog_at(const struct mon_clog *c, uint32_t k);
/* The seq of the oldest line kept (next_seq when none). */
uint64_t mon_clog_first_seq(const struct mon_clog *c);

/* A log entry: lines to append (their seq unused), the bound, and the
 * memo when has_memo (the leader's summaries). */
struct mon_clog_entry {
	uint32_t keep;
	bool has_memo;
	struct mon_clog_memo memo;
	uint32_t n;
	struct mon_clog_line lines[MON_CLOG_ENTRY_LINES_MAX];
};
void mon_clog_entry_encode(const struct mon_clog_entry *e, struct enc *out);
/* 1 and *e for a cluster log entry; 0: not one (another entry type);
 * -EBADMSG: one, malformed.  Trailing bytes (the log's padding) are
 * ignored. */
int mon_clog_entry_decode(const void *buf, size_t len, struct mon_clog_entry *e);

/* The snapshot section (after the state blob, the incarnation trailer
 * and the auth section). */
void mon_clog_state_encode(const struct mon_clog *c, struct enc *out);
/* 1 and *c (allocated: mon_clog_free) when buf starts with a cluster log
 * section; 0: it does not (an older snapshot; *c empty, not allocated);
 * -EBADMSG: malformed (*c empty, not allocated). */
int mon_clog_state_decode(const void *buf, size_t len, struct mon_clog *c);
/* The length of the tagged section at buf (8 bytes of tag, then a
 * versioned section: the auth and cluster log sections of a snapshot),
 * or 0 when buf does not hold a whole one. */
size_t mon_state_section_len(const void *buf, size_t len);

/* clog_map.c: the lines the change inc makes from old to new (new is old
 * with inc applied) says, in order, through add; pure, so every member
 * makes the same lines from the same entry. */
typedef void mon_clog_add_fn(void *arg, uint8_t sev, const char *text);
void mon_clog_describe_map(const struct osdmap *old, const struct osdmap_inc *inc,
			   const struct osdmap *new, mon_clog_add_fn *add, void *arg);

#endif
