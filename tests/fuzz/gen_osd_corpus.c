/*
 * gen_osd_corpus.c - writes the seed corpora for fuzz_osd_proto.c and
 * fuzz_pglog.c.
 *
 *   gen-osd-corpus osd_proto DIR
 *   gen-osd-corpus pglog DIR
 *
 * Run by hand (the output is committed under corpus/osd_proto/ and
 * corpus/pglog/).  Valid messages for every decoder, each prefixed with
 * the selector byte its target reads, so the fuzzer starts from
 * well-formed input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_enc.h"
#include "encode.h"
#include "osd_proto.h"
#include "pglog.h"

static const struct pglog_entry entry = {
	.version = { 5, 42 }, .client = 7, .tid = 9, .op = PGLOG_MODIFY, .result = 0,
	.prior = { 4, 17 }, .oid = "rbd_data.1.0000", .oid_len = 15,
};

static void sample_info(struct pg_info *in, struct pg_interval *past)
{
	memset(in, 0, sizeof(*in));
	in->pool = 1;
	in->pg = 3;
	in->last_update = (struct pg_version){ 5, 42 };
	in->last_complete = (struct pg_version){ 5, 40 };
	in->log_tail = (struct pg_version){ 2, 10 };
	in->last_epoch_started = 5;
	in->same_interval_since = 5;
	in->nacting = 3;
	in->acting[0] = 0;
	in->acting[1] = 2;
	in->acting[2] = 1;
	in->primary = 0;
	memset(past, 0, 2 * sizeof(*past));
	past[0] = (struct pg_interval){ .first = 1, .last = 3, .nacting = 2,
					.acting = { 0, 1 }, .primary = 0, .maybe_went_rw = 1 };
	past[1] = (struct pg_interval){ .first = 4, .last = 4, .nacting = 1,
					.acting = { 2 }, .primary = 2 };
	in->npast = 2;
	in->past = past;
}

static int osd_proto(const char *dir)
{
	static const char wdata[] = "hello, replica";
	struct osd_mut muts[4] = {
		{ .kind = MUT_WRITE, .off = 0, .len = sizeof(wdata) - 1 },
		{ .kind = MUT_SETATTR, .name = "_", .name_len = 1, .val = "v1", .val_len = 2 },
		{ .kind = MUT_OMAP_SET, .name = "key", .name_len = 3, .val = "val", .val_len = 3 },
		{ .kind = MUT_TRUNCATE, .off = 4096 },
	};
	struct osd_rep_op rep = { .pool = 1, .pg = 3, .epoch = 5, .same_interval_since = 5,
				  .entry = entry, .nmuts = 4, .muts = muts };
	struct osd_pg_query q = { .kind = PGQ_QUERY, .pool = 1, .pg = 3, .epoch = 5,
				  .same_interval_since = 5 };
	struct osd_pg_query act = { .kind = PGQ_ACTIVATE, .pool = 1, .pg = 3, .epoch = 6,
				    .same_interval_since = 5, .last_epoch_started = 6 };
	struct osd_pg_notify n = { .rc = 0, .epoch = 5 };
	struct osd_pg_notify none = { .rc = -2, .epoch = 5 };
	struct osd_ping ping = { .from = 2, .epoch = 5, .stamp_ms = 123456789 };
	struct osd_pg_query rm = { .kind = PGQ_REMOVE, .pool = 1, .pg = 3, .epoch = 7,
				   .same_interval_since = 6 };
	struct osd_pg_scan scan = { .kind = PGS_SCAN, .pool = 1, .pg = 3, .epoch = 7,
				    .same_interval_since = 6, .after = "obj1", .after_len = 4,
				    .max = 256 };
	struct osd_scan_obj objs[2] = {
		{ .oid = "obj2", .oid_len = 4, .version = { 5, 17 } },
		{ .oid = "obj3", .oid_len = 4, .version = { 6, 20 } },
	};
	struct osd_pg_scan scanr = { .kind = PGS_SCAN_REPLY, .end = 1, .pool = 1, .pg = 3,
				     .epoch = 7, .same_interval_since = 6, .nobjs = 2,
				     .objs = objs };
	struct pg_interval past[2];
	struct enc e;
	int r = 0;

	enc_init(&e);
	{
		/* selector, data length byte, front, data */
		uint8_t sel = 0, *all;
		size_t len, dlen = sizeof(wdata) - 1;
		void *buf;

		osd_rep_op_encode(&rep, &e);
		buf = enc_take(&e, &len);
		all = malloc(1 + len + dlen);
		if (!buf || !all)
			return -1;
		all[0] = (uint8_t)dlen;
		memcpy(all + 1, buf, len);
		memcpy(all + 1 + len, wdata, dlen);
		r |= corpus_write(dir, "rep-op", &sel, 1, all, 1 + len + dlen);
		free(all);
		free(buf);
	}
	osd_pg_query_encode(&q, &e);
	r |= corpus_put_enc(dir, "pg-query", 1, &e);
	osd_pg_query_encode(&act, &e);
	r |= corpus_put_enc(dir, "pg-activate", 1, &e);
	sample_info(&n.info, past);
	osd_pg_notify_encode(&n, &e);
	r |= corpus_put_enc(dir, "pg-notify", 2, &e);
	osd_pg_notify_encode(&none, &e);
	r |= corpus_put_enc(dir, "pg-notify-enoent", 2, &e);
	osd_ping_encode(&ping, &e);
	r |= corpus_put_enc(dir, "ping", 3, &e);
	osd_pg_query_encode(&rm, &e);
	r |= corpus_put_enc(dir, "pg-remove", 1, &e);
	rm.kind = PGQ_STRAY;
	osd_pg_query_encode(&rm, &e);
	r |= corpus_put_enc(dir, "pg-stray", 1, &e);
	osd_pg_scan_encode(&scan, &e);
	r |= corpus_put_enc(dir, "pg-scan", 4, &e);
	osd_pg_scan_encode(&scanr, &e);
	r |= corpus_put_enc(dir, "pg-scan-reply", 4, &e);
	enc_free(&e);
	return r;
}

static int pglog(const char *dir)
{
	struct pglog_entry del = entry;
	struct pglog_dup du = { .version = { 3, 11 }, .client = 7, .tid = 8, .result = -2 };
	struct pg_info in;
	struct pg_interval past[2];
	struct enc e;
	int r = 0;

	enc_init(&e);
	pglog_entry_encode(&entry, &e);
	r |= corpus_put_enc(dir, "entry", 0, &e);
	del.op = PGLOG_DELETE;
	del.result = -2;
	pglog_entry_encode(&del, &e);
	r |= corpus_put_enc(dir, "entry-delete", 0, &e);
	pglog_dup_encode(&du, &e);
	r |= corpus_put_enc(dir, "dup", 1, &e);
	sample_info(&in, past);
	pg_info_encode(&in, &e);
	r |= corpus_put_enc(dir, "info", 2, &e);
	in.npast = 0;
	in.past = NULL;
	pg_info_encode(&in, &e);
	r |= corpus_put_enc(dir, "info-no-past", 2, &e);
	enc_free(&e);
	return r;
}

int main(int argc, char **argv)
{
	int r;

	if (argc != 3 || (strcmp(argv[1], "osd_proto") && strcmp(argv[1], "pglog"))) {
		fprintf(stderr, "usage: %s osd_proto|pglog DIR\n", argv[0]);
		return 2;
	}
	r = !strcmp(argv[1], "osd_proto") ? osd_proto(argv[2]) : pglog(argv[2]);
	return r ? 1 : 0;
}
