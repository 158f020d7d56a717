/*
 * fuzz_osd_ops.c - "beyond bytes": decoded ops run against a real store
 * in a temporary directory, the OSD's write path without a network.
 *
 * The first input byte picks what the rest is:
 *   0  an OSD_OP request (a client's compound op; the next byte says how
 *      many bytes from the end form the data segment), checked and
 *      translated by the OSD (osd_op_resolve, osd/ops.c) against the
 *      object's state in the store;
 *   1  a REP_OP (what a primary sends its replicas; data segment as in
 *      0), whose changes a replica applies as they come;
 *   2  a list of changes written plainly, 17 bytes each (kind, u64 off,
 *      u64 len, little-endian), so that the fuzzer reaches absurd offsets
 *      and lengths without an encoding around them.
 * Either way the changes go into one store transaction
 * (osd_muts_to_txn) applied synchronously.  Whatever the values (a
 * truncate to 2^63, a write at 2^64 - 4096, thousands of changes), every
 * step returns 0 or an error, nothing asserts, and no object ends larger
 * than the maximum object size.  The object is removed after each input.
 *
 * The store (256 MiB sparse block file and its kv) is made once per
 * process under $TMPDIR (or /tmp) and removed at exit.  With
 * FUZZ_OSD_OPS_VERBOSE set, each step's result goes to stderr (to see
 * which check refused a seed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encode.h"
#include "osd.h"
#include "osd_proto.h"
#include "pg.h"
#include "proto.h"
#include "roundtrip.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_COLL		1u
#define FUZZ_OBJECT_MAX		STORE_DEFAULT_OBJECT_MAX
#define FUZZ_BLOCK_SIZE		(256ull << 20)
#define FUZZ_PLAIN_MUT		17u	/* kind, off, len */
#define FUZZ_PLAIN_DATA_MAX	(64u << 10)	/* a plain write's bytes, at most */

static struct {
	char dir[256], block[300], kv[300];
	struct store *st;
	struct osd osd;
	struct pg pg;
} fz;

static const uint8_t zeros[FUZZ_PLAIN_DATA_MAX];

static void note(const char *what, int r)
{
	static int verbose = -1;

	if (verbose < 0)
		verbose = getenv("FUZZ_OSD_OPS_VERBOSE") != NULL;
	if (verbose)
		fprintf(stderr, "fuzz_osd_ops: %s: %d\n", what, r);
}

/* The daemon's main.c defines these two for osdmap_client.c, which the
 * op path links in; without a monitor no map arrives, so neither runs. */
void osd_dispatch(void *arg, struct msg_conn *c, struct msg *m)
{
	(void)arg;
	(void)c;
	(void)m;
	abort();
}

void osd_boot(struct osd *osd)
{
	(void)osd;
	abort();
}

static void fz_close(void)
{
	char cmd[400];

	store_close(fz.st);
	fz.st = NULL;
	/* the directory this process made, and only that */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz.dir);
	if (fz.dir[0] && system(cmd) != 0)
		fprintf(stderr, "fuzz_osd_ops: cannot remove '%s'\n", fz.dir);
}

/* Opens the store on first use; aborts when it cannot (not a finding,
 * but nothing to fuzz). */
static struct store *fz_store(void)
{
	struct store_options opt;
	struct store_txn *t;
	const char *tmp = getenv("TMPDIR");

	if (fz.st)
		return fz.st;
	snprintf(fz.dir, sizeof(fz.dir), "%s/atoll-fuzz-ops-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fz.dir)) {
		perror("fuzz_osd_ops: mkdtemp");
		abort();
	}
	atexit(fz_close);
	snprintf(fz.block, sizeof(fz.block), "%s/block", fz.dir);
	snprintf(fz.kv, sizeof(fz.kv), "%s/kv", fz.dir);
	memset(&opt, 0, sizeof(opt));
	opt.size_of = sizeof(opt);
	opt.block_path = fz.block;
	opt.kv_path = fz.kv;
	opt.block_size = FUZZ_BLOCK_SIZE;
	opt.object_max = FUZZ_OBJECT_MAX;
	/* crash safety is not what this tests: the flushes only slow it */
	opt.unsafe_skip_data_flush = true;
	opt.unsafe_skip_log_flush = true;
	t = store_txn_new();
	if (store_mkfs(&opt) || store_open(&opt, &fz.st) || !t ||
	    store_txn_coll_create(t, FUZZ_COLL, 0) || store_apply(fz.st, t)) {
		fprintf(stderr, "fuzz_osd_ops: cannot make a store in '%s'\n", fz.dir);
		abort();
	}
	fz.osd.object_max = FUZZ_OBJECT_MAX;
	fz.osd.store = fz.st;
	fz.pg.coll = FUZZ_COLL;
	return fz.st;
}

/* oid as the OSD keeps it: NUL-terminated, at most STORE_NAME_MAX bytes,
 * never empty ("" for a name it would refuse before the store). */
static void fz_oid(char out[STORE_NAME_MAX + 1], const char *oid, size_t len)
{
	if (!len || len > STORE_NAME_MAX || memchr(oid, 0, len))
		len = 0;
	memcpy(out, oid, len);
	out[len] = 0;
}

/* Applies muts to oid, then checks and removes what it made. */
static void fz_apply(const char *oid, const struct osd_mut *muts, uint32_t n)
{
	struct store *st = fz_store();
	struct store_stat ss;
	struct store_txn *t;
	int r;

	if (!oid[0])
		return;
	t = store_txn_new();
	if (!t)
		return;
	/* store_apply owns t, also when it fails */
	r = osd_muts_to_txn(muts, n, t, FUZZ_COLL, oid);
	if (r)
		store_txn_free(t);
	else
		r = store_apply(st, t);
	note("apply", r);
	if (r > 0)
		abort();
	if (store_stat(st, FUZZ_COLL, oid, &ss) < 0)
		return;		/* nothing made: nothing to remove */
	if (ss.size > FUZZ_OBJECT_MAX)
		abort();
	t = store_txn_new();
	if (!t)
		return;
	if (store_txn_remove_if_exists(t, FUZZ_COLL, oid) < 0) {
		store_txn_free(t);
		return;
	}
	if (store_apply(st, t) < 0) {
		/* a store that cannot remove has stopped writing (-EIO):
		 * every later input would test nothing */
		fprintf(stderr, "fuzz_osd_ops: the store cannot remove '%s'\n", oid);
		abort();
	}
}

/* As osd_op_dispatch decides: any writing sub-op makes a write op. */
static bool fz_is_write(const struct osd_op_req *req)
{
	for (uint32_t i = 0; i < req->nops; i++)
		if (osd_op_is_write(req->ops[i].code))
			return true;
	return false;
}

/* A client's op: the OSD's checks, then its changes. */
static void run_client_op(const uint8_t *p, size_t n)
{
	static struct osd_op op;
	char oid[STORE_NAME_MAX + 1];
	struct store_stat ss;
	struct dec d;
	size_t dlen;
	bool exists;
	uint64_t size;
	int r;

	if (!fuzz_split_data(&p, &n, &dlen))
		return;
	memset(&op, 0, sizeof(op));
	dec_init(&d, p, n - dlen);
	r = osd_op_req_decode(&d, p + (n - dlen), dlen, &op.req);
	note("client op decode", r);
	if (r < 0 || !fz_is_write(&op.req))
		goto out_clear;
	fz_oid(oid, op.req.oid, op.req.oid_len);
	if (!oid[0])
		goto out_clear;
	memcpy(op.oid, oid, sizeof(oid));
	op.osd = &fz.osd;
	op.pg = &fz.pg;
	fz_store();
	exists = store_stat(fz.st, FUZZ_COLL, oid, &ss) == 0;
	size = exists ? ss.size : 0;
	r = osd_op_resolve(&op, &exists, &size);
	note("client op resolve", r);
	if (r > 0 || size > FUZZ_OBJECT_MAX)
		abort();
	/* exec_write adds the object info attribute after these */
	if (op.muts && op.nmuts >= op.muts_cap)
		abort();
	if (!r && op.nmuts)
		fz_apply(oid, op.muts, op.nmuts);
out_clear:
	free(op.muts);
	for (uint32_t i = 0; i < PROTO_OPS_MAX; i++)
		free(op.outs[i]);
	osd_op_req_clear(&op.req);
}

/* A replica's write: the changes as the primary sent them. */
static void run_rep_op(const uint8_t *p, size_t n)
{
	char oid[STORE_NAME_MAX + 1];
	struct osd_rep_op rep;
	struct dec d;
	size_t dlen;
	int r;

	if (!fuzz_split_data(&p, &n, &dlen))
		return;
	dec_init(&d, p, n - dlen);
	if (osd_rep_op_decode(&d, p + (n - dlen), dlen, &rep) < 0) {
		note("rep op decode", -1);
		return;
	}
	fz_oid(oid, rep.entry.oid, rep.entry.oid_len);
	/* as osd_rep_op_dispatch: absurd changes are refused before the store */
	r = osd_muts_check(rep.muts, rep.nmuts, FUZZ_OBJECT_MAX);
	note("rep op check", r);
	if (!r)
		fz_apply(oid, rep.muts, rep.nmuts);
	osd_rep_op_clear(&rep);
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Changes written plainly: the store and osd_muts_to_txn without the
 * decoder's checks in front of them. */
static void run_plain(const uint8_t *p, size_t n)
{
	static struct osd_mut muts[OSD_MUTS_MAX];
	uint32_t nm = 0;

	for (; n >= FUZZ_PLAIN_MUT && nm < OSD_MUTS_MAX; p += FUZZ_PLAIN_MUT, n -= FUZZ_PLAIN_MUT) {
		struct osd_mut *m = &muts[nm++];

		memset(m, 0, sizeof(*m));
		m->kind = (uint8_t)(p[0] % (MUT_OMAP_CLEAR + 1));
		m->off = get_le64(p + 1);
		m->len = get_le64(p + 9);
		switch (m->kind) {
		case MUT_WRITE:
			/* the bytes a message could carry, not len of them */
			if (m->len > FUZZ_PLAIN_DATA_MAX)
				m->len = m->len % (FUZZ_PLAIN_DATA_MAX + 1);
			m->data = zeros;
			break;
		case MUT_SETATTR:
		case MUT_RMATTR:
			m->name = "_x";
			m->name_len = 2;
			m->val = zeros;
			m->val_len = (uint32_t)(m->len % 256);
			break;
		case MUT_OMAP_SET:
		case MUT_OMAP_RM:
			m->name = &p[1];
			m->name_len = 1 + (uint32_t)(m->len % 8);
			m->val = zeros;
			m->val_len = (uint32_t)(m->off % 64);
			break;
		}
	}
	fz_apply("plain", muts, nm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		run_client_op(data + 1, size - 1);
		break;
	case 1:
		run_rep_op(data + 1, size - 1);
		break;
	case 2:
		run_plain(data + 1, size - 1);
		break;
	}
	return 0;
}
