/*
 * fuzz_mds_ops.c - "beyond bytes" for the MDS: decoded requests with
 * valid but absurd values run through the MDS's request handler
 * (mds_handle, posixfs/mds_ops.c) against its in-memory namespace (the
 * metadata cache, mds_cache.c, and the transactions, mds_txn.c), as
 * fuzz_osd_ops.c does for the OSD's write path.
 *
 * No cluster: the seams to the objects and the journal are stubs below.
 * A commit's journal entry is encoded and decoded again (mds_txn_pack /
 * mds_txn_unpack: what a replay would read) and must round-trip; the
 * objects read as empty, writes to them are dropped.
 *
 * The first input byte picks what the rest is:
 *   0  a sequence of encoded MDS requests (mds_req_decode), each handled;
 *   1  plain records, 24 bytes each (op, setmask, name length, flags,
 *      u32 mode, u64 a, u64 b; little-endian): setattr sizes of 2^63,
 *      writes and truncates near 2^64, names of 255+ bytes, without an
 *      encoding around them;
 *   2  a generator: u16 count (at most 10,000) and a u32 seed: that many
 *      mixed requests drawn from the seed over the inodes made so far.
 * Every request must return 0 or a negative errno; nothing may assert,
 * and no file may end larger than MDS_FILE_SIZE_MAX.  The namespace
 * starts afresh for each input.  FUZZ_MDS_OPS_VERBOSE=1 prints each
 * input's count of answers (0 or an error), =2 each request's too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <atoll/atoll.h>

#include "encode.h"
#include "mds.h"
#include "mds_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_REQS_MAX	10000u
#define FZ_PLAIN_REC	24u

static struct mds fz;
static bool fz_ready;
static unsigned fz_ok, fz_err;	/* answers of this input (FUZZ_MDS_OPS_VERBOSE) */
static int fz_verbose = -1;	/* FUZZ_MDS_OPS_VERBOSE: 1 counts, 2 each request */

/* ---- the seams: journal, applier, objects, sessions (all stubs) ---- */

void mds_journal_write(struct mds *m, const struct mds_txn *t)
{
	static struct mds_txn back;
	struct mds_packed p;

	(void)m;
	/* what a replay would read: it must decode again */
	if (mds_txn_pack(t, &p) != 0)
		return;		/* -ENOMEM only */
	int r = mds_txn_unpack(&p, &back);

	if (r != 0 || back.nu != t->nu) {
		fprintf(stderr, "fuzz_mds_ops: a journal entry of %d updates does not decode "
			"again (%d, %d updates)\n", t->nu, r, back.nu);
		abort();
	}
	free(p.body);
}

void mds_journal_written(struct mds *m) { (void)m; }
uint64_t mds_journal_queue(struct mds *m, const struct mds_txn *t)
{
	mds_journal_write(m, t);
	return 0;
}
void mds_journal_wait(struct mds *m, uint64_t seq) { (void)m; (void)seq; }
void mds_journal_hurry(struct mds *m) { (void)m; }
uint64_t mds_journal_durable_seq(struct mds *m) { (void)m; return UINT64_MAX; }
void mds_applier_queue_txn(struct mds *m, const struct mds_txn *t) { (void)m; (void)t; }
void mds_applier_drain(struct mds *m) { (void)m; }
void mds_lease_note(struct mds *m, const struct mds_txn *t) { (void)m; (void)t; }
int mds_store_apply(struct mds *m, const struct mds_txn *t) { (void)m; (void)t; return 0; }
int mds_store_omap_each(struct mds *m, const char *oid,
			int (*fn)(struct mds *m, void *arg, const void *k, size_t kl,
				  const void *v, size_t vl), void *arg)
{
	(void)m; (void)oid; (void)fn; (void)arg;
	return 0;	/* every object is empty */
}
int mds_store_read(struct mds *m, const char *oid, uint8_t **buf, size_t *len)
{
	(void)m; (void)oid; (void)buf; (void)len;
	return -ENOENT;
}
void mds_store_oid_inodes(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.inodes.%02x", (unsigned)(ino % MDS_INODE_SHARDS));
}
void mds_store_oid_dir(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.dir.%llx", (unsigned long long)ino);
}
void mds_store_oid_xattr(char *b, size_t n, uint64_t ino)
{
	snprintf(b, n, "fs.xattr.%llx", (unsigned long long)ino);
}
int atoll_omap_get(struct atoll_ioctx *io, const char *oid, const struct atoll_kv *keys,
		   size_t n, struct atoll_kv_iter **out, unsigned flags)
{
	(void)io; (void)oid; (void)keys; (void)n; (void)flags;
	*out = NULL;
	return -ENOENT;		/* no object: what the cache has is all */
}
int atoll_kv_iter_next(struct atoll_kv_iter *it, const void **key, size_t *klen,
		       const void **val, size_t *vlen)
{
	(void)it; (void)key; (void)klen; (void)val; (void)vlen;
	return -ENOENT;
}
void atoll_kv_iter_free(struct atoll_kv_iter *it) { (void)it; }
/* the index of answered requests: none (every request is a first send) */
void mds_done_add(struct mds *m, uint64_t client, uint64_t reqid, int32_t rc, uint64_t ino,
		  uint64_t seq)
{
	(void)m; (void)client; (void)reqid; (void)rc; (void)ino; (void)seq;
}
const struct mds_done *mds_done_find(struct mds *m, uint64_t client, uint64_t reqid)
{
	(void)m; (void)client; (void)reqid;
	return NULL;
}
int mds_inflight_add(uint64_t ino, uint64_t client, uint64_t seq)
{
	(void)ino; (void)client; (void)seq;
	return 0;
}
void mds_inflight_landed(uint64_t ino, uint64_t client, uint64_t seq)
{
	(void)ino; (void)client; (void)seq;
}
bool mds_linger_add(uint64_t ino) { (void)ino; return false; }
bool mds_linger_holds(uint64_t ino) { (void)ino; return false; }
bool mds_open_orphan_defer(struct mds *m, uint64_t ino) { (void)m; (void)ino; return false; }
/* sessions and open counts: every client has a session, opens count 1 */
int mds_sess_open(uint64_t client, uint64_t ino, int delta, uint64_t gen)
{
	(void)client; (void)ino; (void)gen;
	return delta;
}
int mds_sess_open_check(uint64_t client, uint64_t ino, uint32_t max)
{
	(void)client; (void)ino; (void)max;
	return 0;
}
int mds_sess_reopen(uint64_t client, uint64_t ino, int count, uint64_t gen)
{
	(void)client; (void)ino; (void)gen;
	return count;
}
int mds_session_add(struct mds *m, uint64_t client) { (void)m; (void)client; return 0; }
int mds_session_drop(struct mds *m, uint64_t client) { (void)m; (void)client; return 0; }
void mds_statfs_get(uint64_t ninodes, struct mds_statfs *st)
{
	memset(st, 0, sizeof(*st));
	st->bsize = 4096;
	st->files = ninodes;
}

/* ---- the namespace ---- */

/* A fresh namespace: the root directory only. */
static void fz_reset(void)
{
	struct mds_inode root;

	if (fz_ready) {
		mds_cache_fini(&fz);
		mds_rings_fini(&fz.done);
	}
	memset(&fz, 0, sizeof(fz));
	pthread_mutex_init(&fz.lock, NULL);
	if (mds_cache_init(&fz) || mds_rings_init(&fz.done, sizeof(struct mds_done))) {
		fprintf(stderr, "fuzz_mds_ops: cannot make the cache\n");
		abort();
	}
	snprintf(fz.data_pool, sizeof(fz.data_pool), "fs_data");
	snprintf(fz.meta_pool, sizeof(fz.meta_pool), "fs_meta");
	fz.ino_hw = MDS_INO_RANGE;
	fz.next_ino = 2;
	fz.max_sessions = 64;
	fz.max_open_per_session = 1024;
	memset(&root, 0, sizeof(root));
	root.ino = MDS_ROOT_INO;
	root.mode = S_IFDIR | 0755;
	root.nlink = 2;
	mds_cache_preload(&fz, &root, "");
	fz.ninodes = 1;
	fz_ready = true;
}

static void reply_free(struct mds_reply *r)
{
	free(r->ents);
	free(r->value);
	free(r->plus);
	r->ents = NULL;
	r->value = NULL;
	r->plus = NULL;
}

/* One request through the handler, and the checks on its answer. */
static void fz_handle(const struct mds_req *rq)
{
	struct mds_reply rp;

	mds_handle(&fz, rq, &rp);
	if (rp.rc)
		fz_err++;
	else
		fz_ok++;
	if (fz_verbose > 1)
		fprintf(stderr, "fuzz_mds_ops: op %u ino %llu name %zu bytes mask %#x size "
			"%llu hint %llu: %d\n", rq->op, (unsigned long long)rq->ino,
			strlen(rq->name), rq->setmask, (unsigned long long)rq->s_size,
			(unsigned long long)rq->size_hint, rp.rc);
	if (rp.rc > 0) {
		fprintf(stderr, "fuzz_mds_ops: op %u answered %d\n", rq->op, rp.rc);
		abort();
	}
	for (uint32_t i = 0; i < rp.ninodes && i < 2; i++)
		if (rp.in[i].size > MDS_FILE_SIZE_MAX) {
			fprintf(stderr, "fuzz_mds_ops: op %u left inode %llu at size %llu\n",
				rq->op, (unsigned long long)rp.in[i].ino,
				(unsigned long long)rp.in[i].size);
			abort();
		}
	reply_free(&rp);
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Absurd values the plain records and the generator pick from. */
static const uint64_t absurd[] = {
	0, 1, 4095, 4096, (1ull << 32) - 1, 1ull << 32, (1ull << 63) - 1, 1ull << 63,
	UINT64_MAX - 4096, UINT64_MAX - 1, UINT64_MAX, MDS_FILE_SIZE_MAX,
	MDS_FILE_SIZE_MAX + 1, (uint64_t)INT64_MIN,
};
#define NABSURD	(sizeof(absurd) / sizeof(absurd[0]))

/* A name of len bytes (0 to 300: past MDS_NAME_MAX too, cut to the
 * buffer as a decoder would never let through; kept to the limit). */
static void fz_name(char *out, unsigned len, unsigned seed)
{
	if (len > MDS_NAME_MAX)
		len = MDS_NAME_MAX;	/* the most a decoded name holds */
	for (unsigned i = 0; i < len; i++)
		out[i] = (char)('a' + (seed + i) % 26);
	if (len && seed % 7 == 0)
		out[len / 2] = '/';	/* not a name */
	out[len] = 0;
}

/* Inodes made so far (for the generator and the plain records). */
static uint64_t fz_inos[64];
static unsigned fz_ninos;

static void fz_note(uint64_t ino)
{
	fz_inos[fz_ninos++ % 64] = ino;
}

static uint64_t fz_pick_ino(uint64_t v)
{
	if (v % 5 == 0 || !fz_ninos)
		return v % 3 ? MDS_ROOT_INO : absurd[v % NABSURD];
	return fz_inos[v % (fz_ninos < 64 ? fz_ninos : 64)];
}

/* Builds request rq from op, mask, name length, flags, mode, a, b. */
static void fz_build(struct mds_req *rq, uint32_t op, uint32_t mask, unsigned nlen,
		     uint32_t flags, uint32_t mode, uint64_t a, uint64_t b)
{
	memset(rq, 0, sizeof(*rq));
	rq->op = 1 + op % (MDS_OP_MAX_ - 1);
	rq->client = 1 + b % 3;
	rq->reqid = a ^ b;
	rq->ino = fz_pick_ino(a);
	rq->ino2 = fz_pick_ino(b >> 3);
	fz_name(rq->name, nlen, (unsigned)a);
	fz_name(rq->name2, nlen ? nlen - 1 : 0, (unsigned)b);
	rq->mode = mode;
	rq->flags = flags;
	rq->setmask = mask;
	rq->s_mode = mode;
	rq->s_uid = (uint32_t)a;
	rq->s_gid = (uint32_t)b;
	rq->s_size = absurd[a % NABSURD] ^ (a & 0xff00 ? a : 0);
	rq->s_atime = (int64_t)b;
	rq->s_mtime = (int64_t)absurd[b % NABSURD];
	rq->s_ctime = (int64_t)a;
	rq->size_hint = absurd[b % NABSURD];
	rq->max = (uint32_t)(a >> 32);
	fz_name(rq->cookie, nlen / 2, (unsigned)(a >> 8));
	fz_name(rq->target, nlen, (unsigned)(b >> 8));
	rq->lflags = flags & ~(uint32_t)MDS_L_MANY;	/* MANY needs a value */
	rq->replay_ino = absurd[(a >> 4) % NABSURD];
	rq->ogen = b;
}

static void fz_run(const struct mds_req *rq)
{
	struct mds_reply rp;

	fz_handle(rq);
	/* keep the inodes creates made, for later requests to use */
	if (rq->op == MDS_OP_MKNOD || rq->op == MDS_OP_MKDIR || rq->op == MDS_OP_SYMLINK) {
		struct mds_req lk = *rq;

		lk.op = MDS_OP_LOOKUP;
		mds_handle(&fz, &lk, &rp);
		if (!rp.rc && rp.ninodes)
			fz_note(rp.in[0].ino);
		reply_free(&rp);
	}
}

static void run_encoded(const uint8_t *p, size_t n)
{
	static struct mds_req rq;
	struct dec d;
	unsigned count = 0;

	dec_init(&d, p, n);
	while (dec_left(&d) && count++ < FZ_REQS_MAX) {
		if (mds_req_decode(&d, &rq) < 0)
			return;
		rq.lflags &= ~(uint32_t)MDS_L_MANY;	/* its value points into d */
		fz_run(&rq);
	}
}

static void run_plain(const uint8_t *p, size_t n)
{
	static struct mds_req rq;

	for (size_t i = 0; i + FZ_PLAIN_REC <= n && i / FZ_PLAIN_REC < FZ_REQS_MAX;
	     i += FZ_PLAIN_REC) {
		const uint8_t *r = p + i;

		fz_build(&rq, r[0], (uint32_t)get_le(r + 1, 1) | (r[3] & 0x80 ? 0x100 : 0),
			 r[2] + (r[3] & 0x40 ? 45u : 0u), r[3], (uint32_t)get_le(r + 4, 4),
			 get_le(r + 8, 8), get_le(r + 16, 8));
		fz_run(&rq);
	}
}

static void run_generated(const uint8_t *p, size_t n)
{
	static struct mds_req rq;
	uint32_t count, x;

	if (n < 6)
		return;
	count = (uint32_t)get_le(p, 2);
	if (count > FZ_REQS_MAX)
		count = FZ_REQS_MAX;
	x = (uint32_t)get_le(p + 2, 4) | 1;
	for (uint32_t i = 0; i < count; i++) {
		uint64_t a, b;

		/* xorshift32: the same input draws the same requests */
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		a = (uint64_t)x << 32;
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		a |= x;
		x ^= x << 13; x ^= x >> 17; x ^= x << 5;
		b = (uint64_t)x * 0x9e3779b97f4a7c15ull;
		/* creates first and often, so that the rest has inodes */
		uint32_t op = i % 4 == 0 ? (x % 2 ? MDS_OP_MKNOD : MDS_OP_MKDIR) - 1 : x >> 8;
		fz_build(&rq, op, x >> 4, (x >> 12) % 300, x >> 20, (x >> 3) | S_IFREG, a, b);
		fz_run(&rq);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	fz_reset();
	fz_ninos = 0;
	fz_ok = fz_err = 0;
	if (fz_verbose < 0)
		fz_verbose = getenv("FUZZ_MDS_OPS_VERBOSE") ? atoi(getenv("FUZZ_MDS_OPS_VERBOSE")) : 0;
	switch (data[0] % 3) {
	case 0:
		run_encoded(data + 1, size - 1);
		break;
	case 1:
		run_plain(data + 1, size - 1);
		break;
	default:
		run_generated(data + 1, size - 1);
		break;
	}
	if (fz_verbose)
		fprintf(stderr, "fuzz_mds_ops: %u requests answered 0, %u an error; %llu "
			"inodes\n", fz_ok, fz_err, (unsigned long long)fz.ninodes);
	return 0;
}
