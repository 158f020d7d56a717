/*
 * gen_proto_corpus.c - writes the seed corpus for fuzz_proto.c.
 *
 *   gen-proto-corpus DIR
 *
 * Run by hand (the output is committed under corpus/proto/).  One valid
 * message per decoder, each prefixed with the selector byte that
 * fuzz_proto.c reads, so the fuzzer starts from well-formed input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_enc.h"
#include "encode.h"
#include "osdmap.h"
#include "proto.h"

int main(int argc, char **argv)
{
	uint8_t fsid[16] = { 0xa7, 1, 2, 3 };
	struct osdmap *m;
	struct osdmap_inc inc;
	struct osdmap_osd o = { .id = 0, .state = OSD_ST_EXISTS | OSD_ST_UP,
				.weight = OSD_WEIGHT_ONE, .reweight = OSD_WEIGHT_ONE };
	struct osdmap_pool p = { .id = 1, .size = 3, .min_size = 2, .pg_num = 8 };
	struct osd_subop ops[2] = {
		{ .code = OSD_OP_WRITE, .off = 0, .data = "data", .data_len = 4 },
		{ .code = OSD_OP_SETXATTR, .name = "a", .name_len = 1, .val = "v", .val_len = 1 },
	};
	struct osd_op_req req = { .reqid = { 7, 1 }, .epoch = 3, .pool = 1, .pg = 2,
				  .oid = "obj", .oid_len = 3, .nops = 2, .ops = ops };
	struct pg_stat pgs = { .pool = 1, .pg = 2, .state = PG_ST_ACTIVE, .nacting = 1,
			       .degraded = 3, .misplaced = 1, .recovered = 7,
			       .last_epoch_started = 4, .last_scrub = 1796050089,
			       .last_deep_scrub = 1796050085, .scrub_errors = 1, .nbad = 1,
			       .bad = { { .osd = 2, .kind = 3, .oid = "obj" } },
			       .last_epoch_clean = 6 };
	struct osd_beacon b = { .id = 0, .npg = 1, .pgs = &pgs };
	struct osd_boot_req boot = { .id = 0, .weight = OSD_WEIGHT_ONE };
	struct mon_command_reply cr = { .rc = 0, .status = "ok", .out = "{}", .out_len = 2 };
	struct osd_pg_temp_req pgt = { .from = 2, .epoch = 9, .pool = 1, .pg = 3, .n = 2,
				       .osds = { 2, 0 } };
	struct enc e;
	const void *data;
	size_t dlen;
	bool owned;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	enc_init(&e);
	m = osdmap_new(fsid);
	strcpy(o.host, "h0");
	strcpy(o.addr, "127.0.0.2:6800");
	strcpy(p.name, "pool");
	osdmap_inc_init(&inc, 1);
	osdmap_inc_set_osd(&inc, &o);
	osdmap_inc_set_pool(&inc, &p);
	{
		struct osdmap_mds mds[2] = {
			{ .instance = 11, .name = "a", .addr = "127.0.0.2:6800", .meta_pool = 1,
			  .data_pool = 1, .state = OSDMAP_MDS_ACTIVE },
			{ .instance = 12, .name = "b", .addr = "127.0.0.3:6800", .meta_pool = 1,
			  .data_pool = 1, .state = OSDMAP_MDS_STANDBY },
		};

		osdmap_inc_set_mds(&inc, mds, 2);
	}
	osdmap_inc_encode(&inc, &e);
	r |= corpus_put_enc(argv[1], "inc", 1, &e);
	osdmap_apply(m, &inc);
	osdmap_encode(m, &e);
	r |= corpus_put_enc(argv[1], "map", 0, &e);
	mon_map_msg_encode(m, &inc, 0, 1, &e);
	r |= corpus_put_enc(argv[1], "map-msg", 2, &e);
	{
		uint8_t sel = 3;
		size_t len;
		void *buf;

		osd_op_req_encode(&req, &e, &data, &dlen, &owned);
		buf = enc_take(&e, &len);
		/* selector, data length byte, front, data */
		{
			uint8_t *all = malloc(1 + len + dlen);

			all[0] = (uint8_t)dlen;
			memcpy(all + 1, buf, len);
			memcpy(all + 1 + len, data, dlen);
			r |= corpus_write(argv[1], "op", &sel, 1, all, 1 + len + dlen);
			free(all);
		}
		free(buf);
	}
	osd_beacon_encode(&b, &e);
	r |= corpus_put_enc(argv[1], "beacon", 5, &e);
	osd_pg_temp_req_encode(&pgt, &e);
	r |= corpus_put_enc(argv[1], "pg-temp", 9, &e);
	strcpy(boot.addr, "127.0.0.2:6800");
	strcpy(boot.host, "h0");
	osd_boot_req_encode(&boot, &e);
	r |= corpus_put_enc(argv[1], "boot", 6, &e);
	mon_command_encode("{\"prefix\":\"status\"}", NULL, &e);
	r |= corpus_put_enc(argv[1], "command", 7, &e);
	mon_command_reply_encode(&cr, &e);
	r |= corpus_put_enc(argv[1], "command-reply", 8, &e);
	{
		struct mon_reqid id = { 0x1234, 7 };

		mon_command_encode("{\"prefix\":\"osd out\",\"ids\":[1]}", &id, &e);
		r |= corpus_put_enc(argv[1], "command-reqid", 7, &e);
	}
	{
		struct monmap_msg mm;

		memset(&mm, 0, sizeof(mm));
		memset(mm.fsid, 0xab, 16);
		mm.incarnation = 1;
		mm.epoch = 2;
		mm.term = 5;
		mm.leader = 1;
		mm.self = 0;
		mm.nmons = 3;
		for (int i = 0; i < 3; i++) {
			snprintf(mm.mons[i].name, sizeof(mm.mons[i].name), "%c", 'a' + i);
			snprintf(mm.mons[i].addr, sizeof(mm.mons[i].addr), "127.0.0.%d:6789",
				 i + 2);
			mm.mons[i].id = (uint64_t)i + 1;
			mm.mons[i].voter = true;
		}
		monmap_msg_encode(&mm, &e);
		r |= corpus_put_enc(argv[1], "monmap", 10, &e);
	}
	{
		struct mds_beacon mb = { .instance = 0x77, .name = "a", .addr = "127.0.0.2:6800",
					 .meta_pool = 1, .data_pool = 2,
					 .state = MDS_BEACON_STANDBY, .epoch = 9 };

		mds_beacon_encode(&mb, &e);
		r |= corpus_put_enc(argv[1], "mds-beacon", 11, &e);
	}
	osdmap_inc_clear(&inc);
	osdmap_free(m);
	enc_free(&e);
	return r ? 1 : 0;
}
