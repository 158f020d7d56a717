/*
 * test_pglog.c - the PG log's on-disk records (osd/pglog.h): round trips,
 * corrupt and truncated input rejected, the in-memory dup index bounded,
 * and the log + dups written in one store transaction survive a reload.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "osd_proto.h"
#include "pglog.h"
#include "store.h"

static struct pglog_entry sample_entry(void)
{
	struct pglog_entry le = {
		.version = { 7, 42 }, .client = 0x1122334455667788ull, .tid = 99,
		.op = PGLOG_MODIFY, .result = 0, .prior = { 6, 40 },
		.oid = "rbd_data.1.0000", .oid_len = 15,
	};
	return le;
}

Test(pglog, entry_round_trip)
{
	struct pglog_entry le = sample_entry(), out;
	struct enc e;
	struct dec d;

	enc_init(&e);
	pglog_entry_encode(&le, &e);
	cr_assert_eq(e.err, 0);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), 0);
	cr_assert_eq(dec_finish(&d), 0);
	cr_assert_eq(out.version.epoch, 7);
	cr_assert_eq(out.version.seq, 42);
	cr_assert_eq(out.client, le.client);
	cr_assert_eq(out.tid, 99);
	cr_assert_eq(out.op, PGLOG_MODIFY);
	cr_assert_eq(out.prior.seq, 40);
	cr_assert_eq(out.oid_len, 15);
	cr_assert(!memcmp(out.oid, "rbd_data.1.0000", 15));
	enc_free(&e);
}

Test(pglog, entry_every_truncation_rejected)
{
	struct pglog_entry le = sample_entry(), out;
	struct enc e;

	enc_init(&e);
	pglog_entry_encode(&le, &e);
	for (size_t n = 0; n < e.len; n++) {
		struct dec d;

		dec_init(&d, e.buf, n);
		cr_assert_neq(pglog_entry_decode(&d, &out), 0, "truncated at %zu accepted", n);
	}
	enc_free(&e);
}

Test(pglog, entry_bad_fields_rejected)
{
	struct pglog_entry le = sample_entry(), out;
	struct enc e;
	struct dec d;

	/* an op kind that does not exist */
	le.op = 9;
	enc_init(&e);
	pglog_entry_encode(&le, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), -EBADMSG);
	/* a prior version not older than the version */
	le = sample_entry();
	le.prior = le.version;
	enc_reset(&e);
	pglog_entry_encode(&le, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), -EBADMSG);
	/* an empty object name */
	le = sample_entry();
	le.oid_len = 0;
	enc_reset(&e);
	pglog_entry_encode(&le, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), -EBADMSG);
	enc_free(&e);
}

Test(pglog, entry_newer_compat_refused_newer_version_skipped)
{
	struct pglog_entry le = sample_entry(), out;
	struct enc e;
	struct dec d;

	enc_init(&e);
	pglog_entry_encode(&le, &e);
	/* compat 2: a reader of version 1 must refuse */
	e.buf[1] = 2;
	e.buf[0] = 2;
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), -EPROTONOSUPPORT);
	/* version 2, compat 1, with a trailing field: read, extra skipped */
	enc_reset(&e);
	size_t h = enc_begin(&e, 2, 1);
	enc_u64(&e, 7); enc_u64(&e, 42);
	enc_u64(&e, 1); enc_u64(&e, 2);
	enc_u8(&e, PGLOG_DELETE);
	enc_u32(&e, 0);
	enc_u64(&e, 0); enc_u64(&e, 0);
	enc_blob(&e, "x", 1);
	enc_u64(&e, 0xdeadbeef);	/* a field from the future */
	enc_end(&e, h);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_entry_decode(&d, &out), 0);
	cr_assert_eq(dec_finish(&d), 0);
	cr_assert_eq(out.op, PGLOG_DELETE);
	enc_free(&e);
}

static void sample_info(struct pg_info *info)
{
	memset(info, 0, sizeof(*info));
	info->pool = 3;
	info->pg = 17;
	info->last_update = (struct pg_version){ 9, 100 };
	info->last_complete = (struct pg_version){ 9, 100 };
	info->log_tail = (struct pg_version){ 5, 50 };
	info->last_epoch_started = 8;
	info->same_interval_since = 9;
	info->nacting = 3;
	info->acting[0] = 2; info->acting[1] = 0; info->acting[2] = 1;
	info->primary = 2;
	struct pg_interval a = { .first = 4, .last = 6, .nacting = 2, .acting = { 0, 1 },
				 .primary = 0, .maybe_went_rw = 1 };
	struct pg_interval b = { .first = 7, .last = 8, .nacting = 1, .acting = { 1 },
				 .primary = 1, .maybe_went_rw = 0 };
	cr_assert_eq(pg_info_add_past(info, &b), 0);
	cr_assert_eq(pg_info_add_past(info, &a), 0);
	cr_assert_eq(pg_info_add_past(info, &a), 0);	/* no duplicate */
}

Test(pginfo, round_trip)
{
	struct pg_info in, out;
	struct enc e;
	struct dec d;

	sample_info(&in);
	cr_assert_eq(in.npast, 2);
	cr_assert_eq(in.past[0].first, 4, "past intervals are kept oldest first");
	enc_init(&e);
	pg_info_encode(&in, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pg_info_decode(&d, &out), 0);
	cr_assert_eq(out.pool, 3);
	cr_assert_eq(out.pg, 17);
	cr_assert_eq(out.last_update.seq, 100);
	cr_assert_eq(out.log_tail.seq, 50);
	cr_assert_eq(out.last_epoch_started, 8);
	cr_assert_eq(out.same_interval_since, 9);
	cr_assert_eq(out.nacting, 3);
	cr_assert_eq(out.acting[0], 2);
	cr_assert_eq(out.primary, 2);
	cr_assert_eq(out.npast, 2);
	cr_assert_eq(out.past[0].nacting, 2);
	cr_assert_eq(out.past[0].maybe_went_rw, 1);
	cr_assert_eq(out.past[1].first, 7);
	pg_info_prune_past(&out, 7);
	cr_assert_eq(out.npast, 1);
	pg_info_clear(&out);
	pg_info_clear(&in);
	enc_free(&e);
}

Test(pginfo, corrupt_rejected)
{
	struct pg_info in, out;
	struct enc e;

	sample_info(&in);
	enc_init(&e);
	pg_info_encode(&in, &e);
	for (size_t n = 0; n < e.len; n++) {
		struct dec d;

		dec_init(&d, e.buf, n);
		cr_assert_neq(pg_info_decode(&d, &out), 0, "truncated at %zu accepted", n);
		cr_assert_null(out.past);
	}
	/* an acting set larger than any pool */
	in.nacting = OSDMAP_SIZE_MAX + 1;
	enc_reset(&e);
	pg_info_encode(&in, &e);
	struct dec d;

	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pg_info_decode(&d, &out), -EBADMSG);
	/* log tail ahead of last_update */
	in.nacting = 3;
	in.log_tail = (struct pg_version){ 9, 101 };
	enc_reset(&e);
	pg_info_encode(&in, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pg_info_decode(&d, &out), -EBADMSG);
	/* a flipped byte in the body is either refused or decodes to
	 * something sane: never a crash (the fuzz targets go further) */
	for (size_t i = 0; i < e.len; i++) {
		e.buf[i] ^= 0xff;
		dec_init(&d, e.buf, e.len);
		if (pg_info_decode(&d, &out) == 0)
			pg_info_clear(&out);
		e.buf[i] ^= 0xff;
	}
	pg_info_clear(&in);
	enc_free(&e);
}

Test(pglog, dup_round_trip)
{
	struct pglog_dup du = { .version = { 3, 4 }, .client = 5, .tid = 6, .result = -17 }, out;
	struct enc e;
	struct dec d;

	enc_init(&e);
	pglog_dup_encode(&du, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pglog_dup_decode(&d, &out), 0);
	cr_assert_eq(out.result, -17);
	cr_assert_eq(out.client, 5);
	cr_assert_eq(out.tid, 6);
	dec_init(&d, e.buf, e.len - 1);
	cr_assert_neq(pglog_dup_decode(&d, &out), 0);
	enc_free(&e);
}

Test(pglog, keys_sort_by_seq)
{
	uint8_t a[PGLOG_KEY_LEN], b[PGLOG_KEY_LEN], c[PGLOG_KEY_LEN];

	pglog_key('l', 255, a);
	pglog_key('l', 256, b);
	pglog_key('d', 1000, c);
	cr_assert_lt(memcmp(a, b, PGLOG_KEY_LEN), 0);
	cr_assert_lt(memcmp(c, a, PGLOG_KEY_LEN), 0, "dups sort before log entries");
}

Test(pglog, index_bounded_and_finds_recent)
{
	struct pglog l;

	cr_assert_eq(pglog_init(&l, 10, 20), 0);
	for (uint64_t s = 1; s <= 100; s++)
		cr_assert_eq(pglog_load(&l, 7, 1000 + s, (struct pg_version){ 1, s }, (int32_t)s), 0);
	cr_assert_eq(pglog_nlog(&l), 10);
	cr_assert_eq(pglog_ndups(&l), 20);
	struct pg_version v;
	int32_t res;

	cr_assert(pglog_find(&l, 7, 1100, &v, &res));
	cr_assert_eq(v.seq, 100);
	cr_assert(pglog_find(&l, 7, 1071, &v, &res), "the oldest dup is kept");
	cr_assert_eq(res, 71);
	cr_assert_not(pglog_find(&l, 7, 1070, &v, &res), "older ones are forgotten");
	cr_assert_not(pglog_find(&l, 8, 1100, &v, &res));
	/* out of order is refused */
	cr_assert_eq(pglog_load(&l, 7, 1, (struct pg_version){ 1, 50 }, 0), -EUCLEAN);
	pglog_destroy(&l);
}

/* ---- with a store: append, trim, reload -------------------------------- */

static char dir[256];

static struct store *mkstore(void)
{
	char block[300], kv[300];
	struct store_options o = { .size_of = sizeof(o) };
	struct store *st;

	snprintf(dir, sizeof(dir), "/tmp/atoll-test-pglog.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(block, sizeof(block), "%s/block", dir);
	snprintf(kv, sizeof(kv), "%s/kv", dir);
	o.block_path = block;
	o.kv_path = kv;
	o.block_size = 64ull << 20;
	cr_assert_eq(store_mkfs(&o), 0);
	cr_assert_eq(store_open(&o, &st), 0);
	return st;
}

static void rmstore(struct store *st)
{
	char cmd[300];

	store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

struct count { int l, d; };

static int count_keys(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct count *c = arg;
	const char *k = key;

	(void)val; (void)vlen;
	if (klen == PGLOG_KEY_LEN && k[0] == 'l')
		c->l++;
	if (klen == PGLOG_KEY_LEN && k[0] == 'd')
		c->d++;
	return 0;
}

Test(pglog, append_trims_and_reloads)
{
	struct store *st = mkstore();
	uint64_t coll = 0x100000002ull;
	struct pg_info info = { .pool = 1, .pg = 2 };
	struct pglog l;
	struct store_txn *t = store_txn_new();

	cr_assert_eq(store_txn_coll_create(t, coll, 0), 0);
	cr_assert_eq(store_txn_touch(t, coll, PG_META_OID), 0);
	cr_assert_eq(pglog_write_info(&info, t, coll), 0);
	cr_assert_eq(store_apply(st, t), 0);
	cr_assert_eq(pglog_init(&l, 5, 7), 0);
	for (uint64_t s = 1; s <= 30; s++) {
		struct pglog_entry le = {
			.version = { 2, s }, .client = 1, .tid = s, .op = PGLOG_MODIFY,
			.prior = { 0, 0 }, .oid = "o", .oid_len = 1,
		};

		t = store_txn_new();
		cr_assert_eq(store_txn_write(t, coll, "o", 0, "x", 1, 0), 0);
		cr_assert_eq(pglog_append(&l, &info, &le, t, coll), 0);
		cr_assert_eq(store_apply(st, t), 0);
	}
	/* a sequence gap is refused */
	struct pglog_entry bad = { .version = { 2, 40 }, .client = 1, .tid = 40,
				   .op = PGLOG_MODIFY, .oid = "o", .oid_len = 1 };
	t = store_txn_new();
	cr_assert_eq(pglog_append(&l, &info, &bad, t, coll), -EINVAL);
	store_txn_free(t);

	struct count c = { 0, 0 };

	cr_assert_geq(store_omap_list(st, coll, PG_META_OID, NULL, 0, 0, count_keys, &c), 0);
	cr_assert_eq(c.l, 5, "the log holds log_max entries (%d)", c.l);
	cr_assert_eq(c.d, 7, "the dups hold dups_max records (%d)", c.d);
	cr_assert_eq(info.last_update.seq, 30);
	cr_assert_eq(info.log_tail.seq, 25);

	struct pg_info info2;
	struct pglog l2;

	cr_assert_eq(pglog_init(&l2, 5, 7), 0);
	cr_assert_eq(pglog_read(st, coll, &info2, &l2), 0);
	cr_assert_eq(info2.last_update.seq, 30);
	cr_assert_eq(pglog_nlog(&l2), 5);
	cr_assert_eq(pglog_ndups(&l2), 7);
	cr_assert(pglog_find(&l2, 1, 19, NULL, NULL));
	cr_assert_not(pglog_find(&l2, 1, 18, NULL, NULL));
	pglog_destroy(&l2);
	pg_info_clear(&info2);
	pglog_destroy(&l);
	rmstore(st);
}

/* ---- OSD-to-OSD messages -------------------------------------------- */

Test(osd_proto, rep_op_round_trip_and_data_bounds)
{
	struct osd_mut muts[3] = {
		{ .kind = MUT_TOUCH },
		{ .kind = MUT_WRITE, .off = 4096, .len = 5, .data = "hello" },
		{ .kind = MUT_SETATTR, .name = "_a", .name_len = 2, .val = "v", .val_len = 1 },
	};
	struct osd_rep_op r = { .pool = 1, .pg = 2, .epoch = 10, .same_interval_since = 8,
				.entry = sample_entry(), .nmuts = 3, .muts = muts }, out;
	struct enc e;
	struct dec d;

	enc_init(&e);
	osd_rep_op_encode(&r, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_rep_op_decode(&d, "hello", 5, &out), 0);
	cr_assert_eq(out.nmuts, 3);
	cr_assert_eq(out.muts[1].len, 5);
	cr_assert(!memcmp(out.muts[1].data, "hello", 5));
	cr_assert_eq(out.same_interval_since, 8);
	osd_rep_op_clear(&out);
	/* data segment too short or too long */
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_rep_op_decode(&d, "hell", 4, &out), -EBADMSG);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_rep_op_decode(&d, "hello!", 6, &out), -EBADMSG);
	for (size_t n = 0; n < e.len; n++) {
		dec_init(&d, e.buf, n);
		cr_assert_neq(osd_rep_op_decode(&d, "hello", 5, &out), 0);
	}
	enc_free(&e);
}

Test(osd_proto, query_notify_ping)
{
	struct osd_pg_query q = { .kind = PGQ_QUERY, .pool = 1, .pg = 2, .epoch = 3,
				  .same_interval_since = 3 }, q2;
	struct osd_pg_notify n = { .rc = 0, .epoch = 4 }, n2;
	struct osd_ping p = { .from = 3, .epoch = 9, .stamp_ms = 1234, .grant = 5u << 20,
			      .grant_seq = 7, .kv_scale = 8192 }, p2;
	struct enc e;
	struct dec d;

	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_query_decode(&d, &q2), 0);
	cr_assert_eq(q2.kind, PGQ_QUERY);
	e.buf[6] = 77;	/* an unknown kind */
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_query_decode(&d, &q2), -EBADMSG);

	sample_info(&n.info);
	enc_reset(&e);
	osd_pg_notify_encode(&n, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_pg_notify_decode(&d, &n2), 0);
	cr_assert_eq(n2.info.npast, 2);
	cr_assert_eq(n2.info.last_update.seq, 100);
	pg_info_clear(&n2.info);
	pg_info_clear(&n.info);

	enc_reset(&e);
	osd_ping_encode(&p, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_ping_decode(&d, &p2), 0);
	cr_assert_eq(p2.stamp_ms, 1234);
	cr_assert_eq(p2.grant, 5u << 20);
	cr_assert_eq(p2.grant_seq, 7);
	cr_assert_eq(p2.kv_scale, 8192);

	/* a version 2 ping (no kv_scale): its grants count data bytes only */
	enc_reset(&e);
	size_t h = enc_begin(&e, 2, 1);

	enc_u32(&e, 3);
	enc_u64(&e, 9);
	enc_u64(&e, 1234);
	enc_u64(&e, 4096);
	enc_u64(&e, 2);
	enc_end(&e, h);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(osd_ping_decode(&d, &p2), 0);
	cr_assert_eq(p2.grant, 4096);
	cr_assert_eq(p2.grant_seq, 2);
	cr_assert_eq(p2.kv_scale, 0);
	enc_free(&e);
}

/* Random and mutated input to every decoder: refused or decoded, never a
 * read past the buffer (the sanitizer build checks that). */
Test(osd_proto, decoders_survive_garbage)
{
	struct pglog_entry le = sample_entry();
	struct pg_info info;
	struct osd_mut muts[2] = {
		{ .kind = MUT_WRITE, .off = 0, .len = 3, .data = "abc" },
		{ .kind = MUT_OMAP_SET, .name = "k", .name_len = 1, .val = "v", .val_len = 1 },
	};
	struct osd_rep_op rep = { .pool = 1, .entry = le, .nmuts = 2, .muts = muts };
	struct enc samples[4];
	uint32_t seed = 12345;

	sample_info(&info);
	for (int i = 0; i < 4; i++)
		enc_init(&samples[i]);
	pglog_entry_encode(&le, &samples[0]);
	pg_info_encode(&info, &samples[1]);
	osd_rep_op_encode(&rep, &samples[2]);
	struct osd_pg_notify n = { .rc = 0, .epoch = 1, .info = info };

	osd_pg_notify_encode(&n, &samples[3]);
	for (int iter = 0; iter < 20000; iter++) {
		const struct enc *src = &samples[iter % 4];
		size_t len = src->len;
		uint8_t *buf = malloc(len + 1);

		memcpy(buf, src->buf, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			buf[(seed >> 8) % len] ^= (uint8_t)(seed >> 24 | 1);
		}
		seed = seed * 1103515245u + 12345u;
		if (seed % 5 == 0)
			len = (seed >> 8) % len;
		/* a heap buffer of exactly len bytes so that ASan sees overreads */
		uint8_t *exact = malloc(len ? len : 1);

		memcpy(exact, buf, len);
		struct dec d;
		struct pglog_entry e2;
		struct pg_info i2;
		struct osd_rep_op r2;
		struct osd_pg_notify n2;
		struct osd_pg_query q2;
		struct osd_ping p2;
		struct pglog_dup du;

		dec_init(&d, exact, len);
		pglog_entry_decode(&d, &e2);
		dec_init(&d, exact, len);
		if (pg_info_decode(&d, &i2) == 0)
			pg_info_clear(&i2);
		dec_init(&d, exact, len);
		if (osd_rep_op_decode(&d, "abc", 3, &r2) == 0)
			osd_rep_op_clear(&r2);
		dec_init(&d, exact, len);
		if (osd_pg_notify_decode(&d, &n2) == 0)
			pg_info_clear(&n2.info);
		dec_init(&d, exact, len);
		osd_pg_query_decode(&d, &q2);
		dec_init(&d, exact, len);
		osd_ping_decode(&d, &p2);
		dec_init(&d, exact, len);
		pglog_dup_decode(&d, &du);
		free(exact);
		free(buf);
	}
	for (int i = 0; i < 4; i++)
		enc_free(&samples[i]);
	pg_info_clear(&info);
}

Test(pginfo, a_hole_survives_a_full_list_and_round_trips)
{
	struct pg_info in, out;
	struct pg_interval hole = { .first = 1, .last = 3, .nacting = 0, .primary = 2,
				    .maybe_went_rw = 1 };
	struct enc e;
	struct dec d;

	memset(&in, 0, sizeof(in));
	cr_assert_eq(pg_info_add_past(&in, &hole), 0);
	for (uint64_t k = 0; k < PG_PAST_INTERVALS_MAX + 5; k++) {
		struct pg_interval iv = { .first = 10 + 2 * k, .last = 11 + 2 * k, .nacting = 1,
					  .acting = { 1 }, .primary = 1, .maybe_went_rw = 1 };

		cr_assert_eq(pg_info_add_past(&in, &iv), 0);
	}
	cr_assert_eq(in.npast, PG_PAST_INTERVALS_MAX);
	cr_assert(pg_interval_is_hole(&in.past[0]), "the hole was dropped");
	cr_assert_eq(in.past[1].first, 10 + 2 * 6, "the oldest others go first");
	enc_init(&e);
	pg_info_encode(&in, &e);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(pg_info_decode(&d, &out), 0);
	cr_assert(pg_interval_is_hole(&out.past[0]));
	cr_assert_eq(out.past[0].primary, 2);
	cr_assert_eq(out.past[0].last, 3);
	pg_info_prune_past(&out, 4);
	cr_assert_eq(out.npast, PG_PAST_INTERVALS_MAX - 1, "pruned like any interval");
	enc_free(&e);
	pg_info_clear(&in);
	pg_info_clear(&out);
}
