/*
 * test_backfill_proto.c - the encodings backfill added (doc/recovery.md):
 * MT_PG_SCAN request and reply, the PGQ_REMOVE and PGQ_STRAY query kinds, the
 * PGL_BACKFILL_DONE log kind and the monitor's OSD_PG_TEMP request; round
 * trips, and every malformed input refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd_proto.h"
#include "proto.h"

static void *enc_scan(const struct osd_pg_scan *s, size_t *len)
{
	struct enc e;
	void *b;

	enc_init(&e);
	osd_pg_scan_encode(s, &e);
	b = enc_take(&e, len);
	cr_assert_not_null(b);
	return b;
}

static int dec_scan(const void *b, size_t len, struct osd_pg_scan *s)
{
	struct dec d;

	dec_init(&d, b, len);
	return osd_pg_scan_decode(&d, s);
}

static struct osd_scan_obj objs[3] = {
	{ .oid = "a", .oid_len = 1, .version = { 2, 5 } },
	{ .oid = "ab", .oid_len = 2, .version = { 3, 9 } },
	{ .oid = "b", .oid_len = 1, .version = { 0, 0 } },
};

Test(backfill_proto, scan_round_trip)
{
	struct osd_pg_scan q = { .kind = PGS_SCAN, .pool = 1, .pg = 7, .epoch = 9,
				 .same_interval_since = 8, .after = "o12", .after_len = 3,
				 .max = 256 }, r = { .kind = PGS_SCAN_REPLY, .end = 1, .rc = 0,
				 .pool = 1, .pg = 7, .nobjs = 3, .objs = objs }, out;
	size_t len;
	void *b = enc_scan(&q, &len);

	cr_assert_eq(dec_scan(b, len, &out), 0);
	cr_expect_eq(out.kind, PGS_SCAN);
	cr_expect_eq(out.max, 256);
	cr_expect_eq(out.after_len, 3);
	cr_expect_eq(memcmp(out.after, "o12", 3), 0);
	osd_pg_scan_clear(&out);
	free(b);
	b = enc_scan(&r, &len);
	cr_assert_eq(dec_scan(b, len, &out), 0);
	cr_expect_eq(out.nobjs, 3);
	cr_expect_eq(out.end, 1);
	cr_expect_eq(out.objs[1].oid_len, 2);
	cr_expect_eq(out.objs[1].version.seq, 9);
	osd_pg_scan_clear(&out);
	/* every truncation is refused */
	for (size_t n = 0; n < len; n++) {
		cr_expect_neq(dec_scan(b, n, &out), 0, "truncated to %zu", n);
		cr_expect_null(out.objs);
	}
	free(b);
}

Test(backfill_proto, scan_bad_fields_refused)
{
	struct osd_scan_obj unordered[2] = { objs[1], objs[0] }, dup[2] = { objs[0], objs[0] };
	struct osd_scan_obj nul = { .oid = "a\0b", .oid_len = 3 };
	struct osd_pg_scan bad[] = {
		{ .kind = 0, .max = 1 },
		{ .kind = 3, .max = 1 },
		{ .kind = PGS_SCAN, .max = 0 },
		{ .kind = PGS_SCAN, .max = OSD_PG_SCAN_MAX + 1 },
		{ .kind = PGS_SCAN, .max = 1, .nobjs = 1, .objs = objs },
		{ .kind = PGS_SCAN, .max = 1, .after = "x\0y", .after_len = 3 },
		{ .kind = PGS_SCAN_REPLY, .end = 2 },
		{ .kind = PGS_SCAN_REPLY, .nobjs = 2, .objs = unordered },
		{ .kind = PGS_SCAN_REPLY, .nobjs = 2, .objs = dup },
		{ .kind = PGS_SCAN_REPLY, .nobjs = 1, .objs = &nul },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct osd_pg_scan out;
		size_t len;
		void *b = enc_scan(&bad[i], &len);

		cr_expect_eq(dec_scan(b, len, &out), -EBADMSG, "case %zu", i);
		free(b);
	}
}

Test(backfill_proto, remove_query_and_done_log_kinds)
{
	struct osd_pg_query q = { .kind = PGQ_REMOVE, .pool = 1, .pg = 2, .epoch = 3 }, q2;
	struct osd_pg_log l = { .kind = PGL_BACKFILL_DONE, .pool = 1, .pg = 2,
				.log_tail = { 3, 40 }, .last_epoch_started = 5 }, l2;
	struct enc e;
	struct dec d;

	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_query_decode(&d, &q2), 0);
	cr_expect_eq(q2.kind, PGQ_REMOVE);
	enc_free(&e);
	q.kind = PGQ_STRAY;
	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_expect_eq(osd_pg_query_decode(&d, &q2), 0);
	cr_expect_eq(q2.kind, PGQ_STRAY);
	enc_free(&e);
	q.kind = PGQ_STRAY + 1;
	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_expect_eq(osd_pg_query_decode(&d, &q2), -EBADMSG);
	enc_free(&e);
	enc_init(&e);
	osd_pg_log_encode(&l, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_log_decode(&d, &l2), 0);
	cr_expect_eq(l2.kind, PGL_BACKFILL_DONE);
	cr_expect_eq(l2.log_tail.seq, 40);
	osd_pg_log_clear(&l2);
	enc_free(&e);
}

Test(backfill_proto, pg_temp_request)
{
	struct osd_pg_temp_req q = { .from = 3, .epoch = 12, .pool = 1, .pg = 5, .n = 2,
				     .osds = { 3, 1 } }, out;
	struct enc e;
	struct dec d;

	enc_init(&e);
	osd_pg_temp_req_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_temp_req_decode(&d, &out), 0);
	cr_expect_eq(out.n, 2);
	cr_expect_eq(out.osds[1], 1);
	for (size_t n = 0; n < e.len; n++) {
		dec_init(&d, e.buf, n);
		cr_expect_neq(osd_pg_temp_req_decode(&d, &out), 0, "truncated to %zu", n);
	}
	enc_free(&e);
	/* n over the cap, a negative id */
	enc_init(&e);
	size_t h = enc_begin(&e, 1, 1);

	enc_u32(&e, 3);
	enc_u64(&e, 12);
	enc_u32(&e, 1);
	enc_u32(&e, 5);
	enc_u8(&e, 11);
	for (int i = 0; i < 11; i++)
		enc_u32(&e, (uint32_t)i);
	enc_end(&e, h);
	dec_init(&d, e.buf, e.len);
	cr_expect_eq(osd_pg_temp_req_decode(&d, &out), -EBADMSG);
	enc_free(&e);
	q.n = 1;
	q.osds[0] = -1;
	enc_init(&e);
	osd_pg_temp_req_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_expect_eq(osd_pg_temp_req_decode(&d, &out), -EBADMSG);
	enc_free(&e);
}
