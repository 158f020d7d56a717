/*
 * test_mds_proto.c - the MDS protocol's encoders and decoders: round
 * trips, and every truncation or corruption of a message is refused
 * without reading past the buffer (run it under ASan).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "mds_proto.h"

static void *encode_req(const struct mds_req *r, size_t *len)
{
	struct enc e;

	enc_init(&e);
	mds_req_encode(&e, r);
	cr_assert_eq(e.err, 0);
	return enc_take(&e, len);
}

static void *encode_reply(const struct mds_reply *r, size_t *len)
{
	struct enc e;

	enc_init(&e);
	mds_reply_encode(&e, r);
	cr_assert_eq(e.err, 0);
	return enc_take(&e, len);
}

Test(mds_proto, request_round_trip)
{
	struct mds_req *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct dec d;
	size_t len;

	a->op = MDS_OP_RENAME;
	a->uid = 1000;
	a->gid = 100;
	a->client = 77;
	a->ino = 1;
	a->ino2 = 4097;
	strcpy(a->name, "old");
	strcpy(a->name2, "new");
	a->flags = 2;
	a->setmask = MDS_SET_SIZE;
	a->s_size = 1ull << 40;
	a->size_hint = 12345;
	strcpy(a->cookie, "after");
	strcpy(a->target, "/some/where");
	a->reqid = 99;
	a->value = "val";
	a->vlen = 3;
	void *buf = encode_req(a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, b), 0);
	cr_assert_eq(b->op, MDS_OP_RENAME);
	cr_assert_eq(b->ino2, 4097);
	cr_assert_str_eq(b->name2, "new");
	cr_assert_eq(b->s_size, 1ull << 40);
	cr_assert_str_eq(b->target, "/some/where");
	cr_assert_eq(b->reqid, 99);
	cr_assert_eq(b->vlen, 3);
	cr_assert_eq(memcmp(b->value, "val", 3), 0);
	/* every truncation fails */
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_req_decode(&d, b), 0, "a request cut at %zu bytes decoded", n);
	}
	free(buf);
	free(a);
	free(b);
}

Test(mds_proto, unknown_op_refused)
{
	struct mds_req *a = calloc(1, sizeof(*a));
	struct dec d;
	size_t len;

	a->op = MDS_OP_MAX_;
	void *buf = encode_req(a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, a), -EBADMSG);
	free(buf);
	free(a);
}

Test(mds_proto, reply_round_trip_and_truncations)
{
	struct mds_reply a, b;
	struct mds_dirent ents[3];
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	memset(ents, 0, sizeof(ents));
	a.rc = -ENOTEMPTY;
	a.ninodes = 2;
	a.in[0].ino = 5;
	a.in[0].mode = 0100644;
	a.in[0].size = 1ull << 33;
	a.in[1].ino = 1;
	for (int i = 0; i < 3; i++) {
		snprintf(ents[i].name, sizeof(ents[i].name), "e%d", i);
		ents[i].ino = 100 + (uint64_t)i;
		ents[i].mode = 0040000;
	}
	a.ents = ents;
	a.nents = 3;
	a.more = 1;
	strcpy(a.target, "link");
	a.value = "xattr";
	a.vlen = 5;
	void *buf = encode_reply(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &b), 0);
	cr_assert_eq(b.rc, -ENOTEMPTY);
	cr_assert_eq(b.in[0].size, 1ull << 33);
	cr_assert_eq(b.nents, 3);
	cr_assert_str_eq(b.ents[2].name, "e2");
	cr_assert_eq(b.ents[2].ino, 102);
	cr_assert_str_eq(b.target, "link");
	cr_assert_eq(b.vlen, 5);
	cr_assert_eq(memcmp(b.value, "xattr", 5), 0);
	free(b.ents);
	free(b.value);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_reply_decode(&d, &b), 0, "a reply cut at %zu bytes decoded", n);
		cr_assert_null(b.ents);
		cr_assert_null(b.value);
	}
	/* corrupt every byte in turn: never a crash, and no leak on failure */
	uint8_t *c = malloc(len);
	for (size_t i = 0; i < len; i++) {
		memcpy(c, buf, len);
		c[i] ^= 0xff;
		dec_init(&d, c, len);
		if (mds_reply_decode(&d, &b) == 0) {
			free(b.ents);
			free(b.value);
		}
	}
	free(c);
	free(buf);
}

Test(mds_proto, too_many_inodes_refused)
{
	struct mds_reply a, b;
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	void *buf = encode_reply(&a, &len);
	/* the u32 inode count follows the section header (6 bytes) and rc */
	uint32_t three = 3;
	memcpy((uint8_t *)buf + 6 + 4, &three, 4);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_reply_decode(&d, &b), 0);
	free(buf);
}

Test(mds_proto, status_round_trip)
{
	struct mds_status *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct mds_client_info ci[2] = {
		{ .id = 11, .addr = "127.0.0.2:5000", .requests = 3, .connected_ms = 40 },
		{ .id = 12, .addr = "127.0.0.3:5001", .requests = 9, .connected_ms = 50 },
	};
	struct enc e;
	struct dec d;
	size_t len;

	a->state = MDS_STATE_ACTIVE;
	a->uptime_ms = 1234;
	strcpy(a->addr, "127.0.0.2:6800");
	strcpy(a->meta_pool, "fs_meta");
	strcpy(a->data_pool, "fs_data");
	a->inodes = 42;
	a->j_seg = 3;
	a->j_entries = 17;
	a->j_offset = 4096;
	a->j_seq = 273;
	a->j_durable = 270;
	a->sessions = 3;
	a->session_timeout_ms = 60000;
	a->requests = 100;
	a->nops = MDS_OP_MAX_;
	a->op_count[MDS_OP_LOOKUP] = 60;
	a->nclients = 2;
	a->clients = ci;
	a->inflight = 5;
	a->inflight_waits = 8;
	a->inflight_timeouts = 1;
	enc_init(&e);
	mds_status_encode(&e, a);
	cr_assert_eq(e.err, 0);
	void *buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_status_decode(&d, b), 0);
	cr_assert_eq(b->state, MDS_STATE_ACTIVE);
	cr_assert_str_eq(b->addr, "127.0.0.2:6800");
	cr_assert_eq(b->inodes, 42);
	cr_assert_eq(b->j_offset, 4096);
	cr_assert_eq(b->j_seq, 273);
	cr_assert_eq(b->j_durable, 270);
	cr_assert_eq(b->sessions, 3);
	cr_assert_eq(b->session_timeout_ms, 60000);
	cr_assert_eq(b->nops, MDS_OP_MAX_);
	cr_assert_eq(b->op_count[MDS_OP_LOOKUP], 60);
	cr_assert_eq(b->nclients, 2);
	cr_assert_eq(b->clients[1].id, 12);
	cr_assert_str_eq(b->clients[1].addr, "127.0.0.3:5001");
	cr_assert_str_eq(mds_state_name(b->state), "active");
	cr_assert_eq(b->inflight, 5);
	cr_assert_eq(b->inflight_waits, 8);
	cr_assert_eq(b->inflight_timeouts, 1);
	free(b->clients);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_status_decode(&d, b), 0, "a status cut at %zu bytes decoded", n);
		cr_assert_null(b->clients);
	}
	/* the reconnect window's state is one (`atoll fs status` says so) */
	a->state = MDS_STATE_RECONNECT;
	a->nclients = 0;
	free(buf);
	enc_init(&e);
	mds_status_encode(&e, a);
	buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_status_decode(&d, b), 0);
	cr_assert_str_eq(mds_state_name(b->state), "reconnect");
	/* an unknown state is refused */
	a->state = 9;
	free(buf);
	enc_init(&e);
	mds_status_encode(&e, a);
	buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_status_decode(&d, b), 0);
	free(buf);
	free(a);
	free(b);
}

Test(mds_proto, reply_leases_plus_and_changes)
{
	struct mds_reply a, b;
	struct mds_dirent ents[2];
	struct mds_inode plus[2];
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	memset(ents, 0, sizeof(ents));
	memset(plus, 0, sizeof(plus));
	for (int i = 0; i < 2; i++) {
		snprintf(ents[i].name, sizeof(ents[i].name), "p%d", i);
		ents[i].ino = plus[i].ino = 200 + (uint64_t)i;
		plus[i].mode = 0100600;
		plus[i].size = 7 + (uint64_t)i;
	}
	a.ents = ents;
	a.nents = 2;
	a.plus = plus;
	a.nplus = 2;
	a.lease_ms = 30000;
	a.dir_lease = 9;
	a.nchg = 2;
	a.chg[0].kind = MDS_CHG_ATTR | MDS_CHG_DATA;
	a.chg[0].ino = 200;
	a.chg[1].kind = MDS_CHG_DENT;
	a.chg[1].ino = 9;
	strcpy(a.chg[1].name, "p1");
	void *buf = encode_reply(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &b), 0);
	cr_assert_eq(b.lease_ms, 30000);
	cr_assert_eq(b.dir_lease, 9);
	cr_assert_eq(b.nplus, 2);
	cr_assert_eq(b.plus[1].ino, 201);
	cr_assert_eq(b.plus[1].size, 8);
	cr_assert_eq(b.nchg, 2);
	cr_assert_eq(b.chg[0].kind, MDS_CHG_ATTR | MDS_CHG_DATA);
	cr_assert_str_eq(b.chg[1].name, "p1");
	free(b.ents);
	free(b.plus);
	free(b.value);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_reply_decode(&d, &b), 0, "a reply cut at %zu bytes decoded", n);
		cr_assert_null(b.plus);
		cr_assert_eq(b.nchg, 0);
	}
	uint8_t *c = malloc(len);
	for (size_t i = 0; i < len; i++) {
		memcpy(c, buf, len);
		c[i] ^= 0xff;
		dec_init(&d, c, len);
		if (mds_reply_decode(&d, &b) == 0) {
			cr_assert(b.nplus == 0 || b.nplus == b.nents);
			cr_assert_leq(b.nchg, MDS_CHG_MAX);
			free(b.ents);
			free(b.plus);
			free(b.value);
		}
	}
	free(c);
	free(buf);

	/* records for some entries only are not sent (the client indexes
	 * them by entry) */
	a.nplus = 1;
	buf = encode_reply(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &b), 0);
	cr_assert_eq(b.nplus, 0);
	cr_assert_null(b.plus);
	free(b.ents);
	free(b.value);
	free(buf);
}

Test(mds_proto, request_lflags_round_trip)
{
	struct mds_req a, b;
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_READDIR;
	a.lflags = MDS_L_WANT | MDS_L_PLUS;
	void *buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_WANT | MDS_L_PLUS);
	free(buf);
}

Test(mds_proto, notify_round_trip_and_truncations)
{
	struct mds_notify a, b;
	struct dec d;
	struct enc e;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.n = 3;
	a.c[0].kind = MDS_CHG_ATTR | MDS_CHG_PERM;	/* a chmod */
	a.c[0].ino = 12;
	a.c[1].kind = MDS_CHG_DENT;
	a.c[1].ino = 1;
	strcpy(a.c[1].name, "renamed");
	a.c[2].kind = MDS_CHG_ATTR | MDS_CHG_DATA;
	a.c[2].ino = 13;
	enc_init(&e);
	mds_notify_encode(&e, &a);
	cr_assert_eq(e.err, 0);
	uint8_t *buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_notify_decode(&d, &b), 0);
	cr_assert_eq(b.n, 3);
	cr_assert_eq(b.c[0].kind, MDS_CHG_ATTR | MDS_CHG_PERM);
	cr_assert_str_eq(b.c[1].name, "renamed");
	cr_assert_eq(b.c[2].kind, MDS_CHG_ATTR | MDS_CHG_DATA);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_notify_decode(&d, &b), 0, "a revoke cut at %zu bytes decoded", n);
		cr_assert_eq(b.n, 0);
	}
	/* an unknown kind is refused: the section header (6), the count (4),
	 * then the first item's kind */
	uint32_t bad = 0x80;
	memcpy(buf + 6 + 4, &bad, 4);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_notify_decode(&d, &b), 0);
	free(buf);

	/* more items than MDS_CHG_MAX: refused */
	enc_init(&e);
	a.n = 0;
	mds_notify_encode(&e, &a);
	buf = enc_take(&e, &len);
	cr_assert_eq(len, 6 + 4);
	uint32_t many = MDS_CHG_MAX + 1;
	memcpy(buf + 6, &many, 4);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_notify_decode(&d, &b), 0);
	free(buf);
}

/* v3, early replies: a resend's flag and inode number, the reply's
 * journal entry, MT_MDS_SAFE (and its truncations) */
Test(mds_proto, early_reply_fields)
{
	struct mds_req a, b;
	struct mds_reply ra, rb;
	struct mds_safe sa = { 0x1234567890ull }, sb;
	struct dec d;
	struct enc e;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_MKNOD;
	a.lflags = MDS_L_REPLAY;
	a.replay_ino = 4242;
	void *buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_REPLAY);
	cr_assert_eq(b.replay_ino, 4242);
	cr_assert_eq(b.ogen, 0);
	free(buf);

	/* v5: the re-count of opens after a reconnect */
	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_OPEN;
	a.lflags = MDS_L_REPLAY | MDS_L_REOPEN;
	a.max = 3;
	a.ogen = 0x1122334455ull;
	buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_REPLAY | MDS_L_REOPEN);
	cr_assert_eq(b.max, 3);
	cr_assert_eq(b.ogen, 0x1122334455ull);
	free(buf);

	memset(&ra, 0, sizeof(ra));
	ra.jseq = 77;
	ra.dir_lease2 = 0xabcdef;
	ra.lease_flags = MDS_LEASE_EXCL | MDS_LEASE_EXCL2;
	ra.nchg = 1;
	ra.chg[0].kind = MDS_CHG_EXCL;
	ra.chg[0].ino = 42;
	buf = encode_reply(&ra, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &rb), 0);
	cr_assert_eq(rb.jseq, 77);
	cr_assert_eq(rb.dir_lease2, 0xabcdef);
	cr_assert_eq(rb.lease_flags, MDS_LEASE_EXCL | MDS_LEASE_EXCL2);
	cr_assert_eq(rb.nchg, 1);
	cr_assert_eq(rb.chg[0].kind, MDS_CHG_EXCL);
	cr_assert_eq(rb.chg[0].ino, 42);
	free(buf);

	enc_init(&e);
	mds_safe_encode(&e, &sa);
	buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_safe_decode(&d, &sb), 0);
	cr_assert_eq(sb.seq, sa.seq);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_safe_decode(&d, &sb), 0, "a safe message cut at %zu bytes decoded", n);
	}
	free(buf);
}

/* v6: a close that does not wait (FSYNC with MDS_L_INFLIGHT and its
 * number), LANDED, and the reply's version telling the client so */
Test(mds_proto, inflight_and_landed)
{
	struct mds_req a, b;
	struct mds_reply rp, rb;
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_FSYNC;
	a.ino = 4100;
	a.ino2 = 77;
	a.lflags = MDS_L_INFLIGHT;
	void *buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_INFLIGHT);
	cr_assert_eq(b.ino2, 77);
	free(buf);
	a.op = MDS_OP_LANDED;
	a.lflags = 0;
	buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.op, MDS_OP_LANDED);
	cr_assert_eq(b.ino, 4100);
	cr_assert_eq(b.ino2, 77);
	cr_assert_str_eq(mds_op_name(MDS_OP_LANDED), "landed");
	free(buf);
	memset(&rp, 0, sizeof(rp));
	buf = encode_reply(&rp, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &rb), 0);
	cr_assert_geq(rb.version, 6);
	free(buf);
}

/* v9: INOS (a range of inode numbers for a client's own creates) and a
 * create answered by the client (MDS_L_ASYNC with its number and time) */
Test(mds_proto, inos_and_async_create)
{
	struct mds_req a, b;
	struct mds_reply ra, rb;
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_INOS;
	a.max = 1024;
	void *buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.op, MDS_OP_INOS);
	cr_assert_eq(b.max, 1024);
	cr_assert_str_eq(mds_op_name(MDS_OP_INOS), "inos");
	free(buf);

	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_MKDIR;
	a.lflags = MDS_L_ASYNC | MDS_L_WANT | MDS_L_EXCL_OK;
	a.replay_ino = 0x10000;
	a.s_mtime = 1764800000123456789ull;
	buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_ASYNC | MDS_L_WANT | MDS_L_EXCL_OK);
	cr_assert_eq(b.replay_ino, 0x10000);
	cr_assert_eq(b.s_mtime, 1764800000123456789ull);
	free(buf);

	memset(&ra, 0, sizeof(ra));
	ra.ino_first = 0x20000;
	ra.ino_count = MDS_INOS_MAX;
	buf = encode_reply(&ra, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, &rb), 0);
	cr_assert_eq(rb.ino_first, 0x20000);
	cr_assert_eq(rb.ino_count, MDS_INOS_MAX);
	for (size_t n = 0; n < len; n++) {
		dec_init(&d, buf, n);
		cr_assert_neq(mds_reply_decode(&d, &rb), 0, "a reply cut at %zu bytes decoded", n);
	}
	free(buf);

	/* more numbers than a reply may carry, or a range past the last
	 * number: refused */
	ra.ino_count = MDS_INOS_MAX + 1;
	buf = encode_reply(&ra, &len);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_reply_decode(&d, &rb), 0);
	free(buf);
	ra.ino_first = UINT64_MAX - 5;
	ra.ino_count = 10;
	buf = encode_reply(&ra, &len);
	dec_init(&d, buf, len);
	cr_assert_neq(mds_reply_decode(&d, &rb), 0);
	free(buf);

	/* closes in a batch: the pairs travel in value */
	uint8_t pairs[32];
	for (size_t i = 0; i < sizeof(pairs); i++)
		pairs[i] = (uint8_t)(i * 7);
	memset(&a, 0, sizeof(a));
	a.op = MDS_OP_CLOSE;
	a.lflags = MDS_L_MANY;
	a.value = pairs;
	a.vlen = sizeof(pairs);
	buf = encode_req(&a, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, &b), 0);
	cr_assert_eq(b.lflags, MDS_L_MANY);
	cr_assert_eq(b.vlen, sizeof(pairs));
	cr_assert_eq(memcmp(b.value, pairs, sizeof(pairs)), 0);
	free(buf);
}

/* Times are signed ns (issue 37): before 1970 and after 2038 round-trip
 * through an inode record, and the 64 bits are what an old writer stored
 * (its unsigned arithmetic wrapped a time before 1970 to the same bits). */
Test(mds_proto, signed_times)
{
	struct mds_inode a, b;
	struct enc e;
	struct dec d;
	size_t len;

	memset(&a, 0, sizeof(a));
	a.ino = 4100;
	a.mtime = mds_time_ns(-315619200, 0);			/* 1960-01-01 */
	a.atime = mds_time_ns(4102444800ll, 123456789);		/* 2100-01-01 */
	a.ctime = mds_time_ns(-1, 500000000);			/* 1969-12-31 23:59:59.5 */
	cr_assert_eq(a.mtime, -315619200000000000ll);
	cr_assert_eq(a.atime, 4102444800123456789ll);
	cr_assert_eq(a.ctime, -500000000ll);
	/* what a writer before issue 37 computed for 1960-01-01 */
	uint64_t old_bits = (uint64_t)(int64_t)-315619200 * 1000000000ull;
	cr_assert_eq((uint64_t)a.mtime, old_bits);
	enc_init(&e);
	mds_inode_encode(&e, &a);
	cr_assert_eq(e.err, 0);
	void *buf = enc_take(&e, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_inode_decode(&d, &b), 0);
	free(buf);
	cr_assert_eq(b.mtime, a.mtime);
	cr_assert_eq(b.atime, a.atime);
	cr_assert_eq(b.ctime, a.ctime);
	struct timespec ts = mds_time_ts(b.mtime);
	cr_assert_eq(ts.tv_sec, -315619200);
	cr_assert_eq(ts.tv_nsec, 0);
	ts = mds_time_ts(b.ctime);
	cr_assert_eq(ts.tv_sec, -1);
	cr_assert_eq(ts.tv_nsec, 500000000);
	ts = mds_time_ts(b.atime);
	cr_assert_eq(ts.tv_sec, 4102444800ll);
	cr_assert_eq(ts.tv_nsec, 123456789);
	/* outside 1677..2262: clamped, never wrapped */
	cr_assert_eq(mds_time_ns(INT64_MAX / 1000, 0), INT64_MAX);
	cr_assert_eq(mds_time_ns(-(INT64_MAX / 1000), 0), INT64_MIN);
	cr_assert_eq(mds_time_ns(9223372036ll, 854775807), INT64_MAX);
	cr_assert_eq(mds_time_ns(-9223372037ll, 145224192), INT64_MIN);
	cr_assert_eq(mds_time_ns(-9223372037ll, 145224193), INT64_MIN + 1);
	ts = mds_time_ts(INT64_MIN);
	cr_assert_eq(ts.tv_sec, -9223372037ll);
	cr_assert_eq(ts.tv_nsec, 145224192);
}

/* doc/fs-design.md, "Data namespaces": dns travels in the inode's wire
 * form; a record without it (an older writer) reads as none. */
Test(mds_proto, inode_data_namespace)
{
	struct mds_inode a = { .ino = 4242, .mode = 0100644, .dns = 4096 }, b;
	struct enc e;
	struct dec d;

	enc_init(&e);
	mds_inode_encode(&e, &a);
	dec_init(&d, e.buf, e.len);
	cr_assert_eq(mds_inode_decode(&d, &b), 0);
	cr_assert_eq(b.dns, 4096);
	/* the same record as a writer before dns made it: no dns */
	struct enc e2;
	enc_init(&e2);
	size_t h = enc_begin(&e2, 9, 1);	/* mds_proto.c's version 9, compat 1 */
	enc_u64(&e2, a.ino);
	for (int i = 0; i < 4; i++)
		enc_u32(&e2, i == 0 ? a.mode : 0);	/* mode, uid, gid, nlink */
	for (int i = 0; i < 6; i++)
		enc_u64(&e2, 0);	/* rdev, size, atime, mtime, ctime, gen */
	enc_u32(&e2, 0);		/* flags */
	enc_end(&e2, h);
	cr_assert_eq(e2.len + 8, e.len);
	dec_init(&d, e2.buf, e2.len);
	cr_assert_eq(mds_inode_decode(&d, &b), 0);
	cr_assert_eq(b.ino, 4242);
	cr_assert_eq(b.dns, 0);
	enc_free(&e2);

	char oid[MDS_DATA_OID_MAX], pfx[MDS_DATA_OID_MAX];
	mds_data_oid(oid, sizeof(oid), 0, 0x1092, 3);
	cr_assert_str_eq(oid, "0000000000001092.0000000000000003");
	mds_data_oid(oid, sizeof(oid), 0x1000, 0x1092, 3);
	cr_assert_str_eq(oid, "n0000000000001000.0000000000001092.0000000000000003");
	size_t pl = mds_data_prefix(pfx, sizeof(pfx), 0x1000, 0x1092);
	cr_assert_eq(pl, strlen(pfx));
	cr_assert_eq(strncmp(oid, pfx, pl), 0);
	cr_assert_eq(strlen(oid), pl + 16);
	mds_dns_prefix(pfx, sizeof(pfx), 0x1000);
	cr_assert_str_eq(pfx, "n0000000000001000.");
	enc_free(&e);
}

/* A client mounting a sub-tree swaps its root's number and 1 in what it
 * encodes and decodes (mds_proto_set_root). */
Test(mds_proto, sub_tree_root_swap)
{
	struct mds_req *rq = calloc(1, sizeof(*rq)), *back = calloc(1, sizeof(*back));
	struct mds_reply *rp = calloc(1, sizeof(*rp)), *rb = calloc(1, sizeof(*rb));
	struct dec d;
	size_t len;
	void *buf;

	mds_proto_set_root(4096);
	rq->op = MDS_OP_RENAME;
	rq->ino = 1;
	rq->ino2 = 4096;
	buf = encode_req(rq, &len);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_req_decode(&d, back), 0);	/* as the MDS reads it */
	cr_assert_eq(back->ino, 4096);
	cr_assert_eq(back->ino2, 1);
	free(buf);
	mds_proto_set_root(1);	/* the MDS's side encodes without a swap */
	rp->ninodes = 1;
	rp->in[0].ino = 4096;
	rp->dir_lease = 4096;
	rp->nchg = 1;
	rp->chg[0].kind = MDS_CHG_ATTR;
	rp->chg[0].ino = 4096;
	buf = encode_reply(rp, &len);
	mds_proto_set_root(4096);
	dec_init(&d, buf, len);
	cr_assert_eq(mds_reply_decode(&d, rb), 0);
	cr_assert_eq(rb->in[0].ino, 1);
	cr_assert_eq(rb->dir_lease, 1);
	cr_assert_eq(rb->chg[0].ino, 1);
	mds_proto_set_root(0);
	free(buf);
	free(rb->ents);
	free(rb->plus);
	free(rb->value);
	free(rq);
	free(back);
	free(rp);
	free(rb);
}
