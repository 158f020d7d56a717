/*
 * test_proto.c - the message encodings of lib/proto.c: every message
 * round-trips, decoders refuse what does not fit their caps, and
 * randomly damaged fronts never crash a decoder.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osdmap.h"
#include "proto.h"
#include "cr_encode.h"

Test(proto, subscribe_round_trip)
{
	struct enc e;
	struct dec d;
	struct mon_subscribe s = { .have = 42 }, o;
	size_t n;
	void *p;

	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_subscribe_decode(&d, &o), 0);
	cr_assert_eq(o.have, 42);
	free(p);
}

Test(proto, trailing_bytes_refused)
{
	struct enc e;
	struct dec d;
	struct mon_subscribe s = { .have = 1 }, o;
	size_t n;
	void *p;

	enc_init(&e);
	mon_subscribe_encode(&s, &e);
	enc_u8(&e, 7);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_subscribe_decode(&d, &o), -EBADMSG);
	free(p);
}

Test(proto, command_reqid)
{
	struct mon_reqid id = { 0xfeedu, 42 }, got = { 1, 1 };
	struct enc e;
	struct dec d;
	char *json;
	size_t n;
	void *p;

	enc_init(&e);
	mon_command_encode("{}", &id, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_command_decode(&d, &json, &got), 0);
	cr_assert_eq(got.client, 0xfeedu);
	cr_assert_eq(got.seq, 42);
	free(json);
	free(p);
}

Test(proto, monmap_round_trip_and_checks)
{
	struct monmap_msg m, o;
	struct enc e;
	struct dec d;
	size_t n;
	void *p;

	memset(&m, 0, sizeof(m));
	m.incarnation = 3;
	m.epoch = 1;
	m.term = 9;
	m.leader = 2;
	m.self = -1;
	m.nmons = 3;
	for (int i = 0; i < 3; i++) {
		snprintf(m.mons[i].name, sizeof(m.mons[i].name), "m%d", i);
		snprintf(m.mons[i].addr, sizeof(m.mons[i].addr), "127.0.0.%d:1", i + 2);
		m.mons[i].id = (uint64_t)(10 + i);
		m.mons[i].voter = i != 1;
	}
	enc_init(&e);
	monmap_msg_encode(&m, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(monmap_msg_decode(&d, &o), 0);
	cr_assert_eq(memcmp(&m, &o, sizeof(m)), 0);
	free(p);

	/* a leader index out of range, a duplicate id, a bad name */
	m.leader = 3;
	monmap_msg_encode(&m, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(monmap_msg_decode(&d, &o), -EBADMSG);
	free(p);
	m.leader = 0;
	m.mons[2].id = 10;
	monmap_msg_encode(&m, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(monmap_msg_decode(&d, &o), -EBADMSG);
	free(p);
	m.mons[2].id = 12;
	strcpy(m.mons[1].name, "a b");
	monmap_msg_encode(&m, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(monmap_msg_decode(&d, &o), -EBADMSG);
	free(p);
	enc_free(&e);
}

Test(proto, command_round_trip)
{
	struct enc e;
	struct dec d;
	char *json, *status;
	struct mon_command_reply r = { .rc = -2, .status = "pool 'x' does not exist",
				       .out = "{}", .out_len = 2 }, o;
	size_t n;
	void *p;

	enc_init(&e);
	mon_command_encode("{\"prefix\":\"status\"}", NULL, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_command_decode(&d, &json, NULL), 0);
	cr_assert_str_eq(json, "{\"prefix\":\"status\"}");
	free(json);
	free(p);

	mon_command_reply_encode(&r, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_command_reply_decode(&d, &o, &status), 0);
	cr_assert_eq(o.rc, -2);
	cr_assert_str_eq(o.status, "pool 'x' does not exist");
	cr_assert_eq(o.out_len, 2);
	cr_assert_eq(memcmp(o.out, "{}", 2), 0);
	free(status);
	free(p);
}

Test(proto, boot_round_trip_and_long_host_refused)
{
	struct enc e;
	struct dec d;
	struct osd_boot_req b = { .id = 3, .weight = 0x10000, .features = 5,
				  .have_epoch = 9 }, o;
	char longhost[200];
	size_t n;
	void *p;

	memset(b.uuid, 0xab, 16);
	strcpy(b.addr, "127.0.0.2:6800");
	strcpy(b.host, "host1");
	enc_init(&e);
	osd_boot_req_encode(&b, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_boot_req_decode(&d, &o), 0);
	cr_assert_eq(o.id, 3);
	cr_assert_str_eq(o.addr, "127.0.0.2:6800");
	cr_assert_str_eq(o.host, "host1");
	cr_assert_eq(o.have_epoch, 9);
	cr_assert_eq(memcmp(o.uuid, b.uuid, 16), 0);
	free(p);

	/* a host name longer than the field is refused, not truncated */
	memset(longhost, 'h', sizeof(longhost) - 1);
	longhost[sizeof(longhost) - 1] = '\0';
	{
		size_t h = enc_begin(&e, 1, 1);

		enc_u32(&e, 3);
		enc_raw(&e, b.uuid, 16);
		enc_str(&e, "1.2.3.4:5");
		enc_str(&e, longhost);
		enc_u32(&e, 0);
		enc_u64(&e, 0);
		enc_u64(&e, 0);
		enc_end(&e, h);
	}
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_lt(osd_boot_req_decode(&d, &o), 0);
	free(p);
}

Test(proto, beacon_round_trip)
{
	struct enc e;
	struct dec d;
	struct pg_stat pgs[2] = {
		{ .pool = 1, .pg = 7, .state = PG_ST_ACTIVE | PG_ST_CLEAN, .objects = 3,
		  .bytes = 4096, .nacting = 3, .acting = { 0, 1, 2 } },
		{ .pool = 1, .pg = 8, .state = PG_ST_PEERING, .nacting = 1, .acting = { 2 } },
	};
	struct slow_op slow = { .pool = 1, .pg = 7, .age_ms = 31000 };
	struct osd_beacon b = { .id = 2, .epoch = 10, .total = 100, .used = 10,
				.avail = 90, .npg = 2, .pgs = pgs, .nslow = 1,
				.slow = &slow }, o;
	size_t n;
	void *p;

	strcpy(slow.desc, "write 'a' from client.1");
	enc_init(&e);
	osd_beacon_encode(&b, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_beacon_decode(&d, &o), 0);
	cr_assert_eq(o.id, 2);
	cr_assert_eq(o.npg, 2);
	cr_assert_eq(o.pgs[0].acting[2], 2);
	cr_assert_eq(o.pgs[1].state, PG_ST_PEERING);
	cr_assert_eq(o.nslow, 1);
	cr_assert_str_eq(o.slow[0].desc, "write 'a' from client.1");
	osd_beacon_clear(&o);
	free(p);
}

Test(proto, beacon_v2_recovery_and_scrub_figures)
{
	struct enc e;
	struct dec d;
	struct pg_stat pg = { .pool = 1, .pg = 3, .state = PG_ST_ACTIVE, .nacting = 1,
			      .degraded = 5, .misplaced = 6, .recovered = 7,
			      .last_epoch_started = 8, .last_scrub = 1796050089,
			      .last_deep_scrub = 1796050085, .scrub_errors = 3, .nbad = 2,
			      .bad = { { .osd = 1, .kind = 3, .oid = "obj-a" },
				       { .osd = 2, .kind = 4, .oid = "obj-b" } },
			      .last_epoch_clean = 9 };
	struct osd_beacon b = { .id = 1, .npg = 1, .pgs = &pg, .wall_ms = 1796050089123ull }, o;
	uint8_t *p;
	size_t n;

	enc_init(&e);
	osd_beacon_encode(&b, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_beacon_decode(&d, &o), 0);
	cr_assert_eq(o.pgs[0].degraded, 5);
	cr_assert_eq(o.pgs[0].misplaced, 6);
	cr_assert_eq(o.pgs[0].recovered, 7);
	cr_assert_eq(o.pgs[0].last_deep_scrub, 1796050085);
	cr_assert_eq(o.pgs[0].nbad, 2);
	cr_assert_str_eq(o.pgs[0].bad[1].oid, "obj-b");
	cr_assert_eq(o.pgs[0].bad[1].kind, 4);
	cr_assert_eq(o.pgs[0].last_epoch_clean, 9);
	cr_assert_eq(o.wall_ms, 1796050089123ull);
	osd_beacon_clear(&o);

	/* a version 3 section (an older OSD): no wall clock, zero */
	p[0] = 3;
	dec_init(&d, p, n);
	cr_assert_eq(osd_beacon_decode(&d, &o), 0);
	cr_assert_eq(o.pgs[0].last_epoch_clean, 9);
	cr_assert_eq(o.wall_ms, 0);
	osd_beacon_clear(&o);

	/* a version 2 section (an older OSD): no last_epoch_clean, zero */
	p[0] = 2;
	dec_init(&d, p, n);
	cr_assert_eq(osd_beacon_decode(&d, &o), 0);
	cr_assert_eq(o.pgs[0].nbad, 2);
	cr_assert_eq(o.pgs[0].last_epoch_clean, 0);
	osd_beacon_clear(&o);

	/* a version 1 section: the figures are not read, and are zero */
	p[0] = 1;
	dec_init(&d, p, n);
	cr_assert_eq(osd_beacon_decode(&d, &o), 0);
	cr_assert_eq(o.pgs[0].degraded, 0);
	cr_assert_eq(o.pgs[0].nbad, 0);
	osd_beacon_clear(&o);
	free(p);

	/* more bad copies than a PG may name: refused */
	pg.nbad = 2;
	enc_init(&e);
	osd_beacon_encode(&b, &e);
	p = cr_enc_take(&e, &n);
	for (size_t i = 0; i + 6 <= n; i++) {
		/* the nbad byte precedes the first bad entry's osd (1, LE), kind 3 */
		if (p[i] == 2 && p[i + 1] == 1 && p[i + 2] == 0 && p[i + 3] == 0 &&
		    p[i + 4] == 0 && p[i + 5] == 3) {
			p[i] = PG_STAT_BAD_MAX + 1;
			pg.nbad = 0;	/* found */
			break;
		}
	}
	cr_assert_eq(pg.nbad, 0, "the nbad byte was not found");
	dec_init(&d, p, n);
	cr_assert_lt(osd_beacon_decode(&d, &o), 0);
	free(p);
}

Test(proto, pg_state_names)
{
	char buf[128];

	cr_assert_str_eq(pg_state_str(PG_ST_ACTIVE | PG_ST_CLEAN, buf, sizeof(buf)),
			 "active+clean");
	cr_assert_str_eq(pg_state_str(PG_ST_ACTIVE | PG_ST_UNDERSIZED | PG_ST_DEGRADED,
				      buf, sizeof(buf)), "active+degraded+undersized");
	cr_assert_str_eq(pg_state_str(0, buf, sizeof(buf)), "unknown");
	cr_assert_str_eq(pg_state_str(PG_ST_ACTIVE | PG_ST_CLEAN, buf, 7), "active");
}

static void make_op(struct osd_op_req *req, struct osd_subop *ops, struct osd_kv *kv)
{
	memset(req, 0, sizeof(*req));
	memset(ops, 0, 3 * sizeof(*ops));
	req->reqid.client = 0x1122334455667788ull;
	req->reqid.tid = 99;
	req->epoch = 12;
	req->pool = 1;
	req->pg = 5;
	req->oid = "obj";
	req->oid_len = 3;
	req->nops = 3;
	req->ops = ops;
	ops[0].code = OSD_OP_CREATE;
	ops[0].flags = OSD_OPF_EXCL;
	ops[1].code = OSD_OP_WRITE;
	ops[1].off = 4096;
	ops[1].data = "hello";
	ops[1].data_len = 5;
	ops[2].code = OSD_OP_OMAP_SET;
	kv[0] = (struct osd_kv){ .key = "k1", .klen = 2, .val = "v1", .vlen = 2 };
	kv[1] = (struct osd_kv){ .key = "k2", .klen = 2, .val = "", .vlen = 0 };
	ops[2].nkv = 2;
	ops[2].kv = kv;
}

Test(proto, op_round_trip_single_data_not_copied)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2];
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n;
	bool owned;
	void *p;

	make_op(&req, ops, kv);
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	cr_assert_eq(owned, false);
	cr_assert_eq(data, ops[1].data);
	cr_assert_eq(dlen, 5);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, data, dlen, &o), 0);
	cr_assert_eq(o.reqid.client, req.reqid.client);
	cr_assert_eq(o.reqid.tid, 99);
	cr_assert_eq(o.oid_len, 3);
	cr_assert_eq(memcmp(o.oid, "obj", 3), 0);
	cr_assert_eq(o.nops, 3);
	cr_assert_eq(o.ops[0].flags, OSD_OPF_EXCL);
	cr_assert_eq(o.ops[1].off, 4096);
	cr_assert_eq(o.ops[1].data_len, 5);
	cr_assert_eq(memcmp(o.ops[1].data, "hello", 5), 0);
	cr_assert_eq(o.ops[2].nkv, 2);
	cr_assert_eq(memcmp(o.ops[2].kv[1].key, "k2", 2), 0);
	cr_assert_not_null(o.ops[2].kv[1].val);
	cr_assert_eq(o.ops[2].kv[1].vlen, 0);
	osd_op_req_clear(&o);
	free(p);
}

Test(proto, op_data_length_must_match)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2];
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n;
	bool owned;
	void *p;

	make_op(&req, ops, kv);
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, "hello!", 6, &o), -EBADMSG);
	osd_op_req_clear(&o);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, "hell", 4, &o), -EBADMSG);
	osd_op_req_clear(&o);
	free(p);
}

Test(proto, op_multiple_data_concatenated)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2];
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n;
	bool owned;
	void *p;

	make_op(&req, ops, kv);
	ops[0].code = OSD_OP_APPEND;
	ops[0].flags = 0;
	ops[0].data = "abc";
	ops[0].data_len = 3;
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	cr_assert(owned);
	cr_assert_eq(dlen, 8);
	cr_assert_eq(memcmp(data, "abchello", 8), 0);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, data, dlen, &o), 0);
	cr_assert_eq(memcmp(o.ops[0].data, "abc", 3), 0);
	cr_assert_eq(memcmp(o.ops[1].data, "hello", 5), 0);
	osd_op_req_clear(&o);
	free((void *)data);
	free(p);
}

Test(proto, op_unknown_code_refused)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2];
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n;
	bool owned;
	void *p;

	make_op(&req, ops, kv);
	ops[0].code = 200;
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, data, dlen, &o), -EOPNOTSUPP);
	osd_op_req_clear(&o);
	free(p);
}

Test(proto, op_too_many_kv_refused)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2], *many;
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n;
	bool owned;
	void *p;

	make_op(&req, ops, kv);
	many = calloc(PROTO_KV_MAX + 1, sizeof(*many));
	for (uint32_t i = 0; i <= PROTO_KV_MAX; i++)
		many[i] = (struct osd_kv){ .key = "k", .klen = 1 };
	/* exactly the limit is fine */
	ops[2].nkv = PROTO_KV_MAX;
	ops[2].kv = many;
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, data, dlen, &o), 0);
	osd_op_req_clear(&o);
	free(p);
	/* one more is -E2BIG */
	ops[2].nkv = PROTO_KV_MAX + 1;
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_req_decode(&d, data, dlen, &o), -E2BIG);
	osd_op_req_clear(&o);
	free(p);
	free(many);
}

Test(proto, reply_round_trip)
{
	struct enc e;
	struct dec d;
	int32_t rvals[2] = { 0, -ENODATA };
	uint32_t lens[2] = { 10, 0 };
	struct osd_op_reply r = { .reqid = { 1, 2 }, .result = -ENODATA, .version = 77,
				  .epoch = 5, .nops = 2, .rvals = rvals, .out_lens = lens }, o;
	size_t n;
	void *p;

	enc_init(&e);
	osd_op_reply_encode(&r, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_reply_decode(&d, 10, &o), 0);
	cr_assert_eq(o.result, -ENODATA);
	cr_assert_eq(o.version, 77);
	cr_assert_eq(o.rvals[1], -ENODATA);
	cr_assert_eq(o.out_lens[0], 10);
	osd_op_reply_clear(&o);
	dec_init(&d, p, n);
	cr_assert_eq(osd_op_reply_decode(&d, 9, &o), -EBADMSG);
	osd_op_reply_clear(&o);
	free(p);
}

/* Damaged fronts: flip random bytes and truncate; the decoders may fail
 * but never crash, over-read (ASan) or leak (LSan). */
Test(proto, random_damage_never_crashes)
{
	struct osd_op_req req, o;
	struct osd_subop ops[3];
	struct osd_kv kv[2];
	struct pg_stat pgs[1] = { { .pool = 1, .nacting = 2, .acting = { 1, 2 } } };
	struct osd_beacon b = { .id = 1, .npg = 1, .pgs = pgs }, ob;
	struct enc e;
	struct dec d;
	const void *data;
	size_t dlen, n1, n2;
	bool owned;
	uint8_t *p1, *p2, *m;
	unsigned seed = 12345;

	make_op(&req, ops, kv);
	enc_init(&e);
	cr_assert_eq(osd_op_req_encode(&req, &e, &data, &dlen, &owned), 0);
	p1 = cr_enc_take(&e, &n1);
	osd_beacon_encode(&b, &e);
	p2 = cr_enc_take(&e, &n2);
	m = malloc(n1 > n2 ? n1 : n2);
	for (int i = 0; i < 10000; i++) {
		size_t n = (i & 1) ? n1 : n2;
		const uint8_t *src = (i & 1) ? p1 : p2;
		int flips = 1 + rand_r(&seed) % 4;

		memcpy(m, src, n);
		for (int f = 0; f < flips; f++)
			m[rand_r(&seed) % n] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		if (rand_r(&seed) % 4 == 0)
			n = rand_r(&seed) % n;
		dec_init(&d, m, n);
		if (i & 1) {
			(void)osd_op_req_decode(&d, data, dlen, &o);
			osd_op_req_clear(&o);
		} else {
			if (osd_beacon_decode(&d, &ob) == 0)
				osd_beacon_clear(&ob);
		}
	}
	free(m);
	free(p1);
	free(p2);
}

Test(proto, map_message_round_trip)
{
	uint8_t fsid[16] = { 1, 2, 3 };
	struct osdmap *m = osdmap_new(fsid);
	struct osdmap_inc inc[2];
	struct osdmap_pool pool = { .id = 1, .size = 3, .min_size = 2, .pg_num = 8 };
	struct mon_map_msg out;
	struct enc e;
	struct dec d;
	size_t n;
	void *p;

	cr_assert_not_null(m);
	strcpy(pool.name, "p");
	osdmap_inc_init(&inc[0], 1);
	osdmap_inc_init(&inc[1], 2);
	cr_assert_eq(osdmap_inc_set_pool(&inc[1], &pool), 0);
	enc_init(&e);
	mon_map_msg_encode(m, inc, 2, 7, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mon_map_msg_decode(&d, &out), 0);
	cr_assert_not_null(out.full);
	cr_assert(osdmap_equal(out.full, m));
	cr_assert_eq(out.ninc, 2);
	cr_assert_eq(out.first, 7);	/* the oldest epoch the monitor keeps */
	cr_assert_eq(osdmap_apply(out.full, &out.incs[0]), 0);
	cr_assert_eq(osdmap_apply(out.full, &out.incs[1]), 0);
	cr_assert_not_null(osdmap_pool_by_name(out.full, "p"));
	mon_map_msg_clear(&out);
	/* damaged: every truncation fails cleanly */
	for (size_t cut = 0; cut < n; cut++) {
		dec_init(&d, p, cut);
		cr_assert_lt(mon_map_msg_decode(&d, &out), 0);
	}
	free(p);
	osdmap_inc_clear(&inc[0]);
	osdmap_inc_clear(&inc[1]);
	osdmap_free(m);
}

Test(proto, mds_beacon_round_trip_and_checks)
{
	struct mds_beacon b = { .instance = 0x1234, .name = "a", .addr = "127.0.0.2:6800",
				.meta_pool = 3, .data_pool = 4, .flags = MDS_BEACON_F_STOPPING,
				.state = MDS_BEACON_REPLAYING, .epoch = 17, .jseg = 5,
				.jseq = 1234, .wall_ms = 1796050089123ull }, o;
	struct enc e;
	struct dec d;
	size_t n;
	void *p;

	enc_init(&e);
	mds_beacon_encode(&b, &e);
	p = cr_enc_take(&e, &n);
	dec_init(&d, p, n);
	cr_assert_eq(mds_beacon_decode(&d, &o), 0);
	cr_expect_eq(o.instance, b.instance);
	cr_expect_str_eq(o.name, "a");
	cr_expect_str_eq(o.addr, "127.0.0.2:6800");
	cr_expect(o.meta_pool == 3 && o.data_pool == 4 && o.flags == MDS_BEACON_F_STOPPING);
	cr_expect(o.state == MDS_BEACON_REPLAYING && o.epoch == 17);
	cr_expect(o.jseg == 5 && o.jseq == 1234);
	cr_expect_eq(o.wall_ms, 1796050089123ull);
	for (size_t cut = 0; cut < n; cut++) {
		dec_init(&d, p, cut);
		cr_expect_eq(mds_beacon_decode(&d, &o), -EBADMSG, "cut at %zu", cut);
	}
	free(p);
	struct mds_beacon bad[4] = { b, b, b, b };
	bad[0].instance = 0;
	strcpy(bad[1].name, "a b");
	bad[2].addr[0] = '\0';
	bad[3].state = 9;
	for (int i = 0; i < 4; i++) {
		enc_init(&e);
		mds_beacon_encode(&bad[i], &e);
		p = cr_enc_take(&e, &n);
		dec_init(&d, p, n);
		cr_expect_eq(mds_beacon_decode(&d, &o), -EBADMSG, "bad beacon %d", i);
		free(p);
	}
}
