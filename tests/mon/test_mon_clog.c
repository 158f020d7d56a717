/*
 * test_mon_clog.c - the cluster log's pure parts (mon/clog_entry.c,
 * mon/clog_map.c): the bounded list of numbered lines, its entry and
 * snapshot bytes, and the lines a map change says.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clog.h"
#include "encode.h"
#include "osdmap.h"

Test(mon_clog, lines_get_consecutive_seqs_and_the_oldest_go_past_the_bound)
{
	struct mon_clog c;
	char t[32];

	cr_assert_eq(mon_clog_init(&c, MON_CLOG_KEEP_MIN), 0);
	for (int i = 1; i <= 40; i++) {
		snprintf(t, sizeof(t), "line %d", i);
		mon_clog_add(&c, (uint64_t)i, MON_CLOG_INF, t);
	}
	cr_assert_eq(c.n, MON_CLOG_KEEP_MIN);
	cr_assert_eq(c.next_seq, 41);
	cr_assert_eq(mon_clog_first_seq(&c), 41 - MON_CLOG_KEEP_MIN);
	for (uint32_t k = 0; k < c.n; k++)
		cr_assert_eq(mon_clog_at(&c, k)->seq, mon_clog_first_seq(&c) + k);
	cr_assert_str_eq(mon_clog_at(&c, c.n - 1)->text, "line 40");
	mon_clog_free(&c);
}

Test(mon_clog, a_smaller_bound_keeps_the_newest_lines)
{
	struct mon_clog c;
	char t[32];

	cr_assert_eq(mon_clog_init(&c, 100), 0);
	for (int i = 1; i <= 50; i++) {
		snprintf(t, sizeof(t), "line %d", i);
		mon_clog_add(&c, 0, MON_CLOG_WRN, t);
	}
	cr_assert_eq(mon_clog_set_keep(&c, 20), 0);
	cr_assert_eq(c.n, 20);
	cr_assert_str_eq(mon_clog_at(&c, 0)->text, "line 31");
	cr_assert_eq(mon_clog_at(&c, 0)->seq, 31);
	cr_assert_eq(mon_clog_set_keep(&c, 5), -EINVAL);
	mon_clog_free(&c);
}

Test(mon_clog, control_characters_never_reach_a_terminal)
{
	struct mon_clog c;

	cr_assert_eq(mon_clog_init(&c, 16), 0);
	mon_clog_add(&c, 0, MON_CLOG_INF, "a\033[2Jb\nc");
	cr_assert_str_eq(mon_clog_at(&c, 0)->text, "a [2Jb c");
	mon_clog_free(&c);
}

Test(mon_clog, an_entry_round_trips_and_other_entries_are_not_one)
{
	static struct mon_clog_entry e, d;
	struct enc b;

	e.keep = 500;
	e.has_memo = true;
	snprintf(e.memo.health, sizeof(e.memo.health), "HEALTH_WARN OSD_DOWN");
	e.memo.left = 12;
	e.n = 2;
	e.lines[0].stamp_ms = 5;
	e.lines[0].sev = MON_CLOG_WRN;
	snprintf(e.lines[0].text, sizeof(e.lines[0].text), "osd.1 down");
	e.lines[1].sev = MON_CLOG_INF;
	enc_init(&b);
	mon_clog_entry_encode(&e, &b);
	enc_raw(&b, "\0\0\0", 3);	/* the log's padding */
	cr_assert_eq(mon_clog_entry_decode(b.buf, b.len, &d), 1);
	cr_assert_eq(d.keep, 500);
	cr_assert_eq(d.n, 2);
	cr_assert_str_eq(d.lines[0].text, "osd.1 down");
	cr_assert_eq(d.lines[0].sev, MON_CLOG_WRN);
	cr_assert_str_eq(d.memo.health, "HEALTH_WARN OSD_DOWN");
	cr_assert_eq(d.memo.left, 12);
	/* cut anywhere: malformed, never a crash */
	for (size_t l = 8; l < b.len - 3; l++)
		cr_assert_eq(mon_clog_entry_decode(b.buf, l, &d), -EBADMSG, "cut at %zu", l);
	cr_assert_eq(mon_clog_entry_decode("ATINCARN\1\0\0\0\0\0\0\0", 16, &d), 0);
	enc_free(&b);
}

Test(mon_clog, a_snapshot_section_round_trips_and_a_gap_is_refused)
{
	struct mon_clog c, d;
	struct enc b;

	cr_assert_eq(mon_clog_init(&c, 16), 0);
	for (int i = 0; i < 20; i++)
		mon_clog_add(&c, 100 + (uint64_t)i, (uint8_t)(i % 3), "x");
	snprintf(c.memo.pgs, sizeof(c.memo.pgs), "64 pgs: 64 active+clean");
	enc_init(&b);
	mon_clog_state_encode(&c, &b);
	cr_assert_eq(mon_state_section_len(b.buf, b.len), b.len);
	cr_assert_eq(mon_clog_state_decode(b.buf, b.len, &d), 1);
	cr_assert_eq(d.next_seq, 21);
	cr_assert_eq(d.n, 16);
	cr_assert_eq(mon_clog_first_seq(&d), 5);
	cr_assert_str_eq(d.memo.pgs, "64 pgs: 64 active+clean");
	mon_clog_free(&d);
	/* the first line's seq (right after n) made one more: not consecutive */
	{
		size_t at = 8 + 6 + 8 + 4 + (4 + 0) + (4 + strlen(c.memo.pgs)) + 8 + 4;

		b.buf[at]++;
		cr_assert_eq(mon_clog_state_decode(b.buf, b.len, &d), -EBADMSG);
		cr_assert_null(d.lines);
	}
	cr_assert_eq(mon_clog_state_decode("ATAUTHS1", 8, &d), 0);
	enc_free(&b);
	mon_clog_free(&c);
}

struct said {
	int n;
	char text[16][MON_CLOG_TEXT_MAX + 1];
	uint8_t sev[16];
};

static void note(void *arg, uint8_t sev, const char *text)
{
	struct said *s = arg;

	if (s->n < 16) {
		s->sev[s->n] = sev;
		snprintf(s->text[s->n++], sizeof(s->text[0]), "%s", text);
	}
}

static struct osdmap *base_map(void)
{
	struct osdmap *m = osdmap_new(NULL);
	struct osdmap_inc inc;

	cr_assert_not_null(m);
	osdmap_inc_init(&inc, 1);
	for (uint32_t i = 0; i < 3; i++) {
		struct osdmap_osd o = { .id = i, .state = OSD_ST_EXISTS | OSD_ST_UP,
					.weight = OSD_WEIGHT_ONE, .reweight = OSD_WEIGHT_ONE,
					.up_from = 1 };

		snprintf(o.host, sizeof(o.host), "h%u", i);
		snprintf(o.addr, sizeof(o.addr), "127.0.0.%u:6800", i + 2);
		cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	}
	cr_assert_eq(osdmap_apply(m, &inc), 0);
	osdmap_inc_clear(&inc);
	return m;
}

/* Applies inc to a copy of old and returns what it says. */
static void describe(const struct osdmap *old, struct osdmap_inc *inc, struct said *s)
{
	struct osdmap *n = osdmap_clone(old);

	cr_assert_not_null(n);
	inc->epoch = old->epoch + 1;
	cr_assert_eq(osdmap_apply(n, inc), 0);
	memset(s, 0, sizeof(*s));
	mon_clog_describe_map(old, inc, n, note, s);
	osdmap_free(n);
	osdmap_inc_clear(inc);
}

Test(mon_clog, an_osd_going_down_then_up_is_said_with_the_counts)
{
	struct osdmap *m = base_map();
	struct osdmap_inc inc;
	struct osdmap_osd o = m->osds[1];
	struct said s;

	osdmap_inc_init(&inc, 0);
	o.state &= ~OSD_ST_UP;
	o.down_at = 2;
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	describe(m, &inc, &s);
	cr_assert_eq(s.n, 2);
	cr_assert_str_eq(s.text[0], "osd.1 down");
	cr_assert_eq(s.sev[0], MON_CLOG_WRN);
	cr_assert_str_eq(s.text[1], "osdmap e2: 3 osds: 2 up, 3 in");
	osdmap_free(m);
}

Test(mon_clog, pools_flags_and_out_are_said)
{
	struct osdmap *m = base_map();
	struct osdmap_pool p = { .id = 1, .size = 3, .min_size = 2, .pg_num = 32 };
	struct osdmap_osd o = m->osds[2];
	struct osdmap_inc inc;
	struct said s;

	snprintf(p.name, sizeof(p.name), "rbd");
	osdmap_inc_init(&inc, 0);
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	inc.has_flags = true;
	inc.flags = OSDMAP_F_NOOUT;
	o.reweight = 0;
	cr_assert_eq(osdmap_inc_set_osd(&inc, &o), 0);
	describe(m, &inc, &s);
	cr_assert_eq(s.n, 4);
	cr_assert_str_eq(s.text[0], "osd.2 out: its data moves to the other OSDs");
	cr_assert_str_eq(s.text[1], "pool 'rbd' (id 1) created: size 3, min_size 2, 32 pgs, "
			 "failure domain host");
	cr_assert_str_eq(s.text[2], "flag noout set: down OSDs stay in");
	cr_assert_str_eq(s.text[3], "osdmap e2: 3 osds: 3 up, 2 in");
	osdmap_free(m);
}

Test(mon_clog, a_pg_temp_change_says_nothing)
{
	struct osdmap *m = base_map();
	struct osdmap_pg_temp t = { .pool = 0, .pg = 0, .n = 2, .osds = { 0, 1 } };
	struct osdmap_pool p = { .id = 0, .size = 2, .min_size = 1, .pg_num = 8 };
	struct osdmap_inc inc;
	struct said s;

	snprintf(p.name, sizeof(p.name), "x");
	osdmap_inc_init(&inc, 0);
	cr_assert_eq(osdmap_inc_set_pool(&inc, &p), 0);
	describe(m, &inc, &s);
	m->epoch = 1;	/* (the pool is not in m: only the pg_temp below matters) */
	osdmap_inc_init(&inc, 0);
	cr_assert_eq(osdmap_inc_set_pg_temp(&inc, &t, 1), 0);
	{
		struct osdmap *n = osdmap_clone(m);

		inc.epoch = 2;
		if (osdmap_apply(n, &inc) == 0) {
			memset(&s, 0, sizeof(s));
			mon_clog_describe_map(m, &inc, n, note, &s);
			cr_assert_eq(s.n, 0);
		}
		osdmap_free(n);
		osdmap_inc_clear(&inc);
	}
	osdmap_free(m);
}
