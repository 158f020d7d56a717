/*
 * gen_decoders_corpus.c - writes the seed corpora of the targets added
 * with the decoder coverage test (decoders-covered.sh): osd_mon,
 * recovery, mds_journal, image_header, client_iter and osd_ops.
 *
 *   gen-decoders-corpus TARGET DIR
 *
 * Run by hand (the output is committed under corpus/TARGET/).  Valid
 * encodings made by the real encoders, each prefixed with the selector
 * byte its target reads, then cut and damaged copies of them, and for
 * osd_ops the valid but absurd ops of issue 35: a truncate to 2^63, a
 * write at 2^64 - 4096, ten thousand changes in one op.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "corpus_enc.h"
#include "encode.h"
#include "image-int.h"
#include "mds_proto.h"
#include "mds_store.h"
#include "mds_txn.h"
#include "osd_proto.h"
#include "proto.h"

/* DIR/NAME as sel, then the n bytes of buf. */
static int put(const char *dir, const char *name, uint8_t sel, const void *buf, size_t n)
{
	return corpus_write(dir, name, &sel, 1, buf, n);
}

static int put_str(const char *dir, const char *name, uint8_t sel, const char *s)
{
	return put(dir, name, sel, s, strlen(s));
}

/* e's bytes as NAME, NAME-cut (half of it) and NAME-flip (bytes
 * flipped), then empties e. */
static int put3(const char *dir, const char *name, uint8_t sel, struct enc *e)
{
	char n2[128];
	uint8_t *flip;
	int r;

	if (e->err) {
		fprintf(stderr, "cannot encode '%s': error %d\n", name, e->err);
		return -1;
	}
	r = put(dir, name, sel, e->buf, e->len);
	snprintf(n2, sizeof(n2), "%s-cut", name);
	r |= put(dir, n2, sel, e->buf, e->len / 2);
	flip = malloc(e->len ? e->len : 1);
	if (!flip)
		return -1;
	memcpy(flip, e->buf, e->len);
	for (size_t i = 3; i < e->len; i += 7)
		flip[i] ^= 0xa5;
	snprintf(n2, sizeof(n2), "%s-flip", name);
	r |= put(dir, n2, sel, flip, e->len);
	free(flip);
	enc_reset(e);
	return r;
}

/* sel, the data length byte, front, data: the layout of fuzz_split_data. */
static int put_with_data(const char *dir, const char *name, uint8_t sel, struct enc *e,
			 const void *data, size_t dlen)
{
	uint8_t *all;
	int r;

	if (e->err || dlen > 255)
		return -1;
	all = malloc(1 + e->len + dlen);
	if (!all)
		return -1;
	all[0] = (uint8_t)dlen;
	memcpy(all + 1, e->buf, e->len);
	if (dlen)
		memcpy(all + 1 + e->len, data, dlen);
	r = put(dir, name, sel, all, 1 + e->len + dlen);
	enc_reset(e);
	free(all);
	return r;
}

/* ---- osd_mon ---------------------------------------------------------- */

static int osd_mon(const char *dir)
{
	struct osd_new_req q = { .uuid = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 },
				 .want_id = -1 };
	struct osd_new_reply nr = { .rc = 0, .id = 3, .fsid = { 0xfe, 0xed } };
	struct osd_boot_reply br = { .rc = -EINVAL, .epoch = 12 };
	struct osd_stopping st = { .id = 2, .epoch = 40 };
	struct rc_reply rc = { .rc = -ESTALE, .epoch = UINT64_MAX };
	struct enc e;
	int r = 0;

	snprintf(br.status, sizeof(br.status), "osd.3: uuid does not match the map's");
	enc_init(&e);
	osd_new_req_encode(&q, &e);
	r |= put3(dir, "new-req", 0, &e);
	q.want_id = 7;
	osd_new_req_encode(&q, &e);
	r |= corpus_put_enc(dir, "new-req-want", 0, &e);
	osd_new_reply_encode(&nr, &e);
	r |= put3(dir, "new-reply", 1, &e);
	osd_boot_reply_encode(&br, &e);
	r |= put3(dir, "boot-reply", 2, &e);
	br.rc = 0;
	br.status[0] = 0;
	osd_boot_reply_encode(&br, &e);
	r |= corpus_put_enc(dir, "boot-reply-ok", 2, &e);
	osd_stopping_encode(&st, &e);
	r |= put3(dir, "stopping", 3, &e);
	rc_reply_encode(&rc, &e);
	r |= put3(dir, "rc-reply", 4, &e);
	r |= put(dir, "garbage", 4, "\xff\xff\xff\xff\x01\x02", 6);
	enc_free(&e);
	return r;
}

/* ---- recovery --------------------------------------------------------- */

static int recovery(const char *dir)
{
	static const char chunk[] = "object bytes of the chunk";
	struct pglog_entry ents[3] = {
		{ .version = { 5, 40 }, .client = 7, .tid = 1, .op = PGLOG_MODIFY,
		  .prior = { 4, 2 }, .oid = "obj.a", .oid_len = 5 },
		{ .version = { 5, 41 }, .client = 7, .tid = 2, .op = PGLOG_DELETE, .result = -2,
		  .prior = { 5, 40 }, .oid = "obj.a", .oid_len = 5 },
		{ .version = { 6, 42 }, .client = 9, .tid = 1, .op = PGLOG_MODIFY,
		  .prior = { 0, 0 }, .oid = "rbd_data.1.0000", .oid_len = 15 },
	};
	struct osd_pg_log get = { .kind = PGL_GET, .pool = 1, .pg = 3, .epoch = 6,
				  .same_interval_since = 6, .from = { 5, 39 } };
	struct osd_pg_log rep = get;
	struct osd_rkv attrs[2] = { { "_", 1, "oi", 2 }, { "_user", 5, "v", 1 } };
	struct osd_rkv omap[1] = { { "key", 3, "value", 5 } };
	struct osd_pg_push push = { .kind = PGP_PUSH, .flags = PGP_FIRST | PGP_LAST, .pool = 1,
				    .pg = 3, .epoch = 6, .same_interval_since = 6,
				    .oid = "obj.a", .oid_len = 5, .size = 4096, .off = 0,
				    .nattrs = 2, .attrs = attrs, .nomap = 1, .omap = omap,
				    .data = chunk, .len = sizeof(chunk) - 1 };
	struct osd_pg_push pull = { .kind = PGP_PULL, .pool = 1, .pg = 3, .epoch = 6,
				    .same_interval_since = 6, .oid = "obj.a", .oid_len = 5,
				    .off = 1 << 20 };
	struct osd_pg_push wrap = push;
	struct enc e;
	int r = 0;

	enc_init(&e);
	osd_pg_log_encode(&get, &e);
	r |= put3(dir, "log-get", 0, &e);
	rep.kind = PGL_GET_REPLY;
	rep.log_tail = (struct pg_version){ 4, 1 };
	rep.nentries = 3;
	rep.entries = ents;
	osd_pg_log_encode(&rep, &e);
	r |= put3(dir, "log-get-reply", 0, &e);
	rep.kind = PGL_APPLY;
	rep.last_epoch_started = 6;
	osd_pg_log_encode(&rep, &e);
	r |= corpus_put_enc(dir, "log-apply", 0, &e);
	rep.kind = PGL_BACKFILL_DONE;
	osd_pg_log_encode(&rep, &e);
	r |= corpus_put_enc(dir, "log-backfill-done", 0, &e);
	get.kind = PGL_EXCLUDE;
	osd_pg_log_encode(&get, &e);
	r |= corpus_put_enc(dir, "log-exclude", 0, &e);
	/* entries out of order: refused */
	ents[2].version.seq = 41;
	osd_pg_log_encode(&rep, &e);
	r |= corpus_put_enc(dir, "log-unordered", 0, &e);

	osd_pg_push_encode(&push, &e);
	r |= put_with_data(dir, "push-first", 1, &e, chunk, push.len);
	push.flags = PGP_DELETE;
	push.nattrs = push.nomap = 0;
	push.len = 0;
	osd_pg_push_encode(&push, &e);
	r |= put_with_data(dir, "push-delete", 1, &e, NULL, 0);
	osd_pg_push_encode(&pull, &e);
	r |= put_with_data(dir, "pull", 1, &e, NULL, 0);
	pull.kind = PGP_PULL_REPLY;
	pull.size = (2 << 20);
	pull.data = chunk;
	pull.len = sizeof(chunk) - 1;
	osd_pg_push_encode(&pull, &e);
	r |= put_with_data(dir, "pull-reply", 1, &e, chunk, pull.len);
	/* off + len wraps past 2^64 to under size: refused (issue 35) */
	wrap.off = UINT64_MAX - 7;
	wrap.size = 4096;
	wrap.len = sizeof(chunk) - 1;
	osd_pg_push_encode(&wrap, &e);
	r |= put_with_data(dir, "push-off-wraps", 1, &e, chunk, wrap.len);
	{
		struct osd_oi oi = { .version = { 6, 42 }, .mtime_ns = 1700000000000000000ull };

		osd_oi_encode(&oi, &e);
		r |= put3(dir, "object-info", 2, &e);
	}
	enc_free(&e);
	return r;
}

/* ---- mds_journal ------------------------------------------------------ */

static struct mds_txn txn;

static void sample_txn(void)
{
	struct mds_upd *u;

	mds_txn_init(&txn);
	txn.nu = 3;
	u = &txn.u[0];
	memset(u, 0, sizeof(*u));
	u->type = MDS_U_DENT_SET;
	u->dir = 1;
	snprintf(u->name, sizeof(u->name), "docs");
	u->ino = 0x1000;
	u->mode = S_IFDIR | 0755;
	u = &txn.u[1];
	memset(u, 0, sizeof(*u));
	u->type = MDS_U_INODE_PUT;
	u->in = (struct mds_inode){ .ino = 0x1000, .mode = S_IFDIR | 0755, .uid = 1000,
				    .gid = 1000, .nlink = 2, .mtime = 1700000000000000000ll,
				    .gen = 1, .parent = 1 };
	u = &txn.u[2];
	memset(u, 0, sizeof(*u));
	u->type = MDS_U_TRUNC;
	u->ino = 0x1001;
	u->size = 4096;
	u->old_size = 1ull << 40;
	txn.client = 77;
	txn.reqid = 12;
	txn.res_ino = 0x1000;
	txn.xlen = 5;
	memcpy(txn.xval, "value", 5);
}

static int mds_journal(const char *dir)
{
	struct mds_safe safe = { .seq = 99 };
	struct mds_inode file = { .ino = 0x1001, .mode = S_IFREG | 0644, .nlink = 1,
				  .size = 12345, .gen = 3 };
	struct mds_inode lnk = { .ino = 0x1002, .mode = S_IFLNK | 0777, .nlink = 1,
				 .size = 9, .gen = 1 };
	struct enc e, body;
	int r = 0;

	enc_init(&e);
	enc_init(&body);
	mds_safe_encode(&e, &safe);
	r |= put3(dir, "safe", 0, &e);
	sample_txn();
	mds_txn_encode(&e, &txn);
	r |= put3(dir, "txn", 1, &e);
	/* a segment: three entries, then a torn one */
	mds_txn_encode(&body, &txn);
	for (uint64_t seq = 10; seq < 13; seq++)
		mds_journal_frame(&e, body.buf, body.len, seq);
	mds_journal_frame(&e, body.buf, body.len / 2, 13);
	e.len -= 3;
	r |= put3(dir, "segment", 2, &e);
	mds_store_record_encode(&e, &file, NULL);
	r |= put3(dir, "record-file", 3, &e);
	mds_store_record_encode(&e, &lnk, "../target");
	r |= corpus_put_enc(dir, "record-symlink", 3, &e);
	enc_free(&body);
	enc_free(&e);
	return r;
}

/* ---- image_header ----------------------------------------------------- */

static int image_header(const char *dir)
{
	static struct img_header h;
	struct enc e;
	char *s;
	int r = 0;

	memset(&h, 0, sizeof(h));
	snprintf(h.name, sizeof(h.name), "vm-disk-1");
	snprintf(h.id, sizeof(h.id), "0123456789abcdef");
	h.size = 10ull << 30;
	h.object_size = 4 << 20;
	h.created_ns = 1700000000000000000ull;
	h.snap_seq = 3;
	h.nsnaps = 2;
	h.snaps[0] = (struct img_snap){ .id = 1, .size = 10ull << 30, .name = "before" };
	h.snaps[1] = (struct img_snap){ .id = 3, .size = 5ull << 30, .name = "after" };
	s = img_header_encode(&h);
	if (!s)
		return -1;
	enc_init(&e);
	enc_raw(&e, s, strlen(s));
	free(s);
	r |= put3(dir, "header", 0, &e);
	enc_free(&e);
	r |= put_str(dir, "header-size-huge", 0,
		     "{\"name\":\"a\",\"id\":\"1\",\"size\":\"18446744073709551615\","
		     "\"object_size\":\"4194304\",\"features\":\"0\",\"created_ns\":\"0\","
		     "\"snap_seq\":\"0\",\"snaps\":[]}");
	r |= put_str(dir, "header-negative", 0,
		     "{\"name\":\"a\",\"id\":\"1\",\"size\":\"-1\","
		     "\"object_size\":\" 4194304\",\"features\":\"+0\",\"created_ns\":\"0\","
		     "\"snap_seq\":\"99999999999999999999999\",\"snaps\":[]}");
	r |= put_str(dir, "lock", 1, "client=4242 expires=1700000000000000000 cookie=00000000deadbeef");
	r |= put_str(dir, "lock-none", 1, "none");
	return r;
}

/* ---- client_iter ------------------------------------------------------ */

static int client_iter(const char *dir)
{
	char cur[1024], name[PROTO_OID_MAX];
	struct enc e;
	int r = 0;

	enc_init(&e);
	enc_u32(&e, 3);
	enc_blob(&e, "alpha", 5);
	enc_blob(&e, "1", 1);
	enc_blob(&e, "beta", 4);
	enc_blob(&e, "", 0);
	enc_blob(&e, "gamma", 5);
	enc_blob(&e, "3333", 4);
	enc_u8(&e, 1);
	r |= put3(dir, "kv-list", 0, &e);
	enc_u32(&e, 0);
	r |= corpus_put_enc(dir, "kv-empty", 0, &e);
	enc_u32(&e, UINT32_MAX);
	enc_blob(&e, "k", 1);
	r |= corpus_put_enc(dir, "kv-count-huge", 0, &e);
	enc_free(&e);
	if (client_cursor_encode(17, "rbd_data.1 x%", 13, cur, sizeof(cur)) < 0)
		return -1;
	r |= put(dir, "cursor", 1, cur, strlen(cur));
	memset(name, 'n', sizeof(name));
	name[5] = '\x01';
	if (client_cursor_encode(4095, name, sizeof(name), cur, sizeof(cur)) < 0)
		return -1;
	r |= put(dir, "cursor-long", 1, cur, strlen(cur));
	r |= put_str(dir, "cursor-bad", 1, "99999999999:%0");
	return r;
}

/* ---- osd_ops ---------------------------------------------------------- */

/* A client's op of n sub-ops; data as its data segment (<= 255 bytes). */
static int put_client_op(const char *dir, const char *name, struct osd_subop *ops,
			 uint32_t n)
{
	struct osd_op_req req = { .reqid = { 42, 1 }, .epoch = 5, .pool = 1, .pg = 0,
				  .oid = "obj", .oid_len = 3, .nops = n, .ops = ops };
	const void *data;
	size_t dlen;
	bool owned;
	struct enc e;
	int r;

	enc_init(&e);
	if (osd_op_req_encode(&req, &e, &data, &dlen, &owned) < 0)
		return -1;
	r = put_with_data(dir, name, 0, &e, data, dlen);
	if (owned)
		free((void *)data);
	enc_free(&e);
	return r;
}

static int put_plain(const char *dir, const char *name, const uint8_t (*m)[17], size_t n)
{
	return put(dir, name, 2, m, n * 17);
}

static void plain_mut(uint8_t out[17], uint8_t kind, uint64_t off, uint64_t len)
{
	out[0] = kind;
	for (int i = 0; i < 8; i++) {
		out[1 + i] = (uint8_t)(off >> (8 * i));
		out[9 + i] = (uint8_t)(len >> (8 * i));
	}
}

static int osd_ops(const char *dir)
{
	static uint8_t bytes[255];
	static struct osd_kv kvs[PROTO_KV_MAX];
	static char keys[PROTO_KV_MAX][8];
	static struct osd_subop ops[PROTO_OPS_MAX];
	static struct osd_mut muts[10000];
	static uint8_t plain[10000][17];
	struct osd_rep_op rep = { .pool = 1, .pg = 0, .epoch = 5, .same_interval_since = 5,
				  .entry = { .version = { 5, 1 }, .client = 42, .tid = 1,
					     .op = PGLOG_MODIFY, .oid = "obj", .oid_len = 3 } };
	struct enc e;
	int r = 0;

	memset(bytes, 0x5a, sizeof(bytes));
	/* a truncate to 2^63; a write at 2^64 - 4096; a zero there */
	ops[0] = (struct osd_subop){ .code = OSD_OP_TRUNCATE, .off = 1ull << 63 };
	r |= put_client_op(dir, "op-truncate-2p63", ops, 1);
	ops[0] = (struct osd_subop){ .code = OSD_OP_WRITE, .off = UINT64_MAX - 4095,
				     .data = bytes, .data_len = 255 };
	r |= put_client_op(dir, "op-write-2p64-4096", ops, 1);
	ops[0] = (struct osd_subop){ .code = OSD_OP_ZERO, .off = UINT64_MAX - 4095, .len = 8192 };
	r |= put_client_op(dir, "op-zero-wraps", ops, 1);
	ops[0] = (struct osd_subop){ .code = OSD_OP_WRITE, .off = (128ull << 20) - 100,
				     .data = bytes, .data_len = 200 };
	r |= put_client_op(dir, "op-write-past-max", ops, 1);
	ops[0] = (struct osd_subop){ .code = OSD_OP_WRITE, .data = bytes, .data_len = 10 };
	ops[1] = (struct osd_subop){ .code = OSD_OP_ZERO, .off = UINT64_MAX - 4095, .len = 8192 };
	r |= put_client_op(dir, "op-write-then-zero-wraps", ops, 2);
	ops[1] = (struct osd_subop){ .code = OSD_OP_TRUNCATE, .off = UINT64_MAX };
	r |= put_client_op(dir, "op-write-then-truncate-max", ops, 2);
	/* a plain op that works */
	ops[0] = (struct osd_subop){ .code = OSD_OP_WRITE_FULL, .data = bytes, .data_len = 100 };
	ops[1] = (struct osd_subop){ .code = OSD_OP_SETXATTR, .name = "user.a", .name_len = 6,
				     .val = "v", .val_len = 1 };
	ops[2] = (struct osd_subop){ .code = OSD_OP_APPEND, .data = bytes, .data_len = 50 };
	r |= put_client_op(dir, "op-write-full-setxattr-append", ops, 3);
	/* 64 mixed sub-ops, 10,000 omap entries among them */
	for (uint32_t i = 0; i < PROTO_KV_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%05u", i);
		kvs[i] = (struct osd_kv){ .key = keys[i], .klen = 6, .val = "v", .vlen = 1 };
	}
	for (uint32_t i = 0; i < PROTO_OPS_MAX; i++) {
		switch (i % 8) {
		case 0: ops[i] = (struct osd_subop){ .code = OSD_OP_WRITE, .off = i * 4096ull,
						     .data = bytes, .data_len = 3 }; break;
		case 1: ops[i] = (struct osd_subop){ .code = OSD_OP_TRUNCATE,
						     .off = i & 8 ? 1ull << 63 : 10 }; break;
		case 2: ops[i] = (struct osd_subop){ .code = OSD_OP_ZERO, .off = 1, .len = 2 }; break;
		case 3: ops[i] = (struct osd_subop){ .code = OSD_OP_SETXATTR, .name = "a",
						     .name_len = 1, .val = "b", .val_len = 1 }; break;
		case 4: ops[i] = (struct osd_subop){ .code = OSD_OP_OMAP_SET,
						     .nkv = i == 4 ? PROTO_KV_MAX - 16 : 1,
						     .kv = kvs }; break;
		case 5: ops[i] = (struct osd_subop){ .code = OSD_OP_OMAP_RM, .nkv = 1,
						     .kv = kvs }; break;
		case 6: ops[i] = (struct osd_subop){ .code = OSD_OP_APPEND, .data = bytes,
						     .data_len = 2 }; break;
		case 7: ops[i] = (struct osd_subop){ .code = OSD_OP_CREATE }; break;
		}
	}
	r |= put_client_op(dir, "op-64-mixed-10000-kv", ops, PROTO_OPS_MAX);

	/* a replica's 10,000 mixed changes, absurd ones among them */
	for (uint32_t i = 0; i < 10000; i++) {
		struct osd_mut *m = &muts[i];

		memset(m, 0, sizeof(*m));
		switch (i % 6) {
		case 0: m->kind = MUT_WRITE; m->off = i; m->len = 0; break;
		case 1: m->kind = MUT_TRUNCATE; m->off = i % 12 == 1 ? 1ull << 63 : i; break;
		case 2: m->kind = MUT_ZERO; m->off = UINT64_MAX - 4095; m->len = 4096; break;
		case 3: m->kind = MUT_OMAP_SET; m->name = keys[i]; m->name_len = 6;
			m->val = "v"; m->val_len = 1; break;
		case 4: m->kind = MUT_SETATTR; m->name = "_a"; m->name_len = 2; break;
		case 5: m->kind = MUT_TOUCH; break;
		}
	}
	rep.nmuts = 10000;
	rep.muts = muts;
	enc_init(&e);
	osd_rep_op_encode(&rep, &e);
	r |= put_with_data(dir, "rep-10000-mixed", 1, &e, NULL, 0);
	/* the same without the absurd ones, so all ten thousand apply */
	for (uint32_t i = 0; i < 10000; i++)
		if (muts[i].kind == MUT_ZERO)
			muts[i].off = i;
		else if (muts[i].kind == MUT_TRUNCATE)
			muts[i].off = i;
	osd_rep_op_encode(&rep, &e);
	r |= put_with_data(dir, "rep-10000-mixed-valid", 1, &e, NULL, 0);
	muts[0] = (struct osd_mut){ .kind = MUT_WRITE, .off = UINT64_MAX - 4095, .len = 255 };
	rep.nmuts = 1;
	osd_rep_op_encode(&rep, &e);
	r |= put_with_data(dir, "rep-write-2p64-4096", 1, &e, bytes, 255);
	muts[0] = (struct osd_mut){ .kind = MUT_TRUNCATE, .off = 1ull << 63 };
	osd_rep_op_encode(&rep, &e);
	r |= put_with_data(dir, "rep-truncate-2p63", 1, &e, NULL, 0);
	enc_free(&e);

	plain_mut(plain[0], MUT_TRUNCATE, 1ull << 63, 0);
	r |= put_plain(dir, "plain-truncate-2p63", plain, 1);
	plain_mut(plain[0], MUT_WRITE, UINT64_MAX - 4095, 4096);
	r |= put_plain(dir, "plain-write-2p64-4096", plain, 1);
	plain_mut(plain[0], MUT_ZERO, UINT64_MAX - 4095, 8192);
	r |= put_plain(dir, "plain-zero-wraps", plain, 1);
	for (uint32_t i = 0; i < 10000; i++)
		plain_mut(plain[i], (uint8_t)(1 + i % MUT_OMAP_CLEAR),
			  i % 3 ? i * 4096ull : UINT64_MAX - 4095, i % 5 ? 512 : UINT64_MAX);
	r |= put_plain(dir, "plain-10000-mixed", plain, 10000);
	for (uint32_t i = 0; i < 10000; i++)
		plain_mut(plain[i], (uint8_t)(1 + i % MUT_OMAP_CLEAR), i * 4096ull, 512);
	r |= put_plain(dir, "plain-10000-mixed-valid", plain, 10000);
	return r;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const char *dir);
	} gens[] = {
		{ "osd_mon", osd_mon }, { "recovery", recovery },
		{ "mds_journal", mds_journal }, { "image_header", image_header },
		{ "client_iter", client_iter }, { "osd_ops", osd_ops },
	};

	for (size_t i = 0; argc == 3 && i < sizeof(gens) / sizeof(gens[0]); i++)
		if (!strcmp(argv[1], gens[i].name))
			return gens[i].fn(argv[2]) ? 1 : 0;
	fprintf(stderr, "usage: %s osd_mon|recovery|mds_journal|image_header|client_iter|"
		"osd_ops DIR\n", argv[0]);
	return 2;
}
