/*
 * gen_scrub_corpus.c - writes the seed corpus of fuzz_scrub.c: one valid
 * encoding of each scrub message, behind its selector byte.
 *   gen-scrub-corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "corpus_file.h"
#include "encode.h"
#include "scrub_proto.h"

static int put(const char *dir, const char *name, uint8_t sel, struct enc *e)
{
	int r = corpus_write(dir, name, &sel, 1, e->buf, e->len);

	enc_reset(e);
	return r;
}

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
	struct enc e;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-scrub-corpus DIR\n");
		return 2;
	}
	enc_init(&e);
	osd_scrub_req_encode(&rq, &e);
	r |= put(argv[1], "osd-scrub-req", 0, &e);
	osd_scrub_reply_encode(&rp, &e);
	r |= put(argv[1], "osd-scrub-reply", 1, &e);
	pg_scrub_req_encode(&prq, &e);
	r |= put(argv[1], "pg-scrub-req", 2, &e);
	pg_scrub_map_encode(&map, &e);
	r |= put(argv[1], "pg-scrub-map", 3, &e);
	enc_free(&e);
	return r ? 1 : 0;
}
