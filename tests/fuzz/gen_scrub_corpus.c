/*
 * gen_scrub_corpus.c - writes the seed corpus of fuzz_scrub.c: one valid
 * encoding of each scrub message, behind its selector byte.  The seeds
 * osd-scrub-req and pg-scrub-req committed before version 2 are version 1
 * encodings (kept: a version 1 request must still decode); this program
 * now writes version 2 under those names.
 *   gen-scrub-corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "corpus_enc.h"
#include "encode.h"
#include "scrub_proto.h"

int main(int argc, char **argv)
{
	struct osd_scrub_req rq = { .pool = 1, .pg = 0x1a, .repair = 1 };
	struct scrub_error errs[2] = {
		{ .oid = "obj20", .osd = 1, .kind = SCRUB_READ_ERROR, .repaired = 1 },
		{ .oid = "x", .osd = 2, .kind = SCRUB_MISSING },
	};
	struct osd_scrub_reply rp = { .rc = 0, .epoch = 42, .objects = 9, .nmembers = 3,
				      .members = { 1, 0, 2 }, .nerrors = 2, .errors = errs };
	struct pg_scrub_req prq = { .pool = 1, .pg = 4, .epoch = 42 };
	struct scrub_obj objs[2] = {
		{ .oid = "a", .size = 100, .data_crc = 1, .attr_crc = 2, .omap_crc = 3 },
		{ .oid = "b", .size = 0, .err = -5 },
	};
	struct pg_scrub_map map = { .rc = 0, .n = 2, .objs = objs };
	struct scrub_stamps stamps = { .last_scrub = 1796050089, .last_deep = 1796050085 };
	struct pg_query_req qrq = { .pool = 1, .pg = 4 };
	static struct pg_query_reply qrp = {
		.rc = 0, .epoch = 12, .pool = 1, .pg = 4, .state = 0x1c,
		.state_name = "active+clean+degraded", .primary = 1, .nup = 3, .up = { 1, 0, 3 },
		.nacting = 3, .acting = { 1, 0, 2 }, .last_epoch_started = 10,
		.same_interval_since = 10, .last_update = { 10, 42 }, .last_complete = { 10, 40 },
		.log_tail = { 2, 5 }, .log_entries = 37, .objects = 12, .bytes = 98304,
		.npeers = 2, .peers = { { .osd = 0, .flags = 3, .last_update = { 10, 42 },
					   .last_complete = { 10, 42 }, .last_epoch_started = 10 },
					 { .osd = 2, .flags = 1 } },
		.ntargets = 2, .targets = { { .osd = 0, .kind = 1, .todo = 4, .done = 2 },
					    { .osd = 3, .kind = 2, .todo = 12, .done = 5,
					      .pos = "o7" } },
		.missing = 2, .stamps = { 1796050089, 1796050085 }, .scrubbing = 2,
		.scrub_errors = 1, .nbad = 1,
		.bad = { { .oid = "o0", .osd = 1, .kind = SCRUB_READ_ERROR } },
	};
	struct enc e;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-scrub-corpus DIR\n");
		return 2;
	}
	enc_init(&e);
	osd_scrub_req_encode(&rq, &e);
	r |= corpus_put_enc(argv[1], "osd-scrub-req", 0, &e);
	osd_scrub_reply_encode(&rp, &e);
	r |= corpus_put_enc(argv[1], "osd-scrub-reply", 1, &e);
	pg_scrub_req_encode(&prq, &e);
	r |= corpus_put_enc(argv[1], "pg-scrub-req", 2, &e);
	pg_scrub_map_encode(&map, &e);
	r |= corpus_put_enc(argv[1], "pg-scrub-map", 3, &e);
	/* version 2: the shallow flag, the stamps, the query */
	rq.repair = 0;
	rq.deep = 0;
	osd_scrub_req_encode(&rq, &e);
	r |= corpus_put_enc(argv[1], "osd-scrub-req-shallow", 0, &e);
	prq.flags = PG_SCRUB_F_STAMP;
	prq.last_scrub = 1796050089;
	prq.last_deep = 1796050085;
	pg_scrub_req_encode(&prq, &e);
	r |= corpus_put_enc(argv[1], "pg-scrub-req-stamp", 2, &e);
	scrub_stamps_encode(&stamps, &e);
	r |= corpus_put_enc(argv[1], "scrub-stamps", 4, &e);
	pg_query_req_encode(&qrq, &e);
	r |= corpus_put_enc(argv[1], "pg-query-req", 5, &e);
	pg_query_reply_encode(&qrp, &e);
	r |= corpus_put_enc(argv[1], "pg-query-reply", 6, &e);
	enc_free(&e);
	return r ? 1 : 0;
}
