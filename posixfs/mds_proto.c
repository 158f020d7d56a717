/*
 * mds_proto.c - encoders and bounds-checked decoders of the MDS messages
 * (mds_proto.h).  Every front is one versioned section; an older reader
 * skips what a newer writer appended.
 */
#include "mds_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

/* v2 appends leases: the request's lflags, the reply's lease fields,
 * readdir-plus records and change list, the status's lease numbers.
 * v3: replay_ino, jseq.  v4: the reply's dir_lease2.  v5: the request's
 * ogen (opens re-counted after a reconnect).  v6: LANDED and MDS_L_INFLIGHT
 * (a close that does not wait for its writes); the reply's version tells
 * the client whether the MDS knows them.  v7: no new field; the MDS takes
 * MT_MDS_FLUSH (it gathers journal entries, an fsync hurries them).  v8:
 * exclusive directory leases and asynchronous removals (MDS_L_EXCL_OK,
 * MDS_L_ASYNC, MDS_CHG_EXCL, the reply's lease_flags).  v9: INOS (the
 * reply's ino_first, ino_count) and asynchronous creates (MDS_L_ASYNC on
 * MKNOD and MKDIR).
 *
 * Times (an inode's atime, mtime, ctime; a request's s_atime, s_mtime,
 * s_ctime) are signed ns since the epoch, encoded as the 64 bits of their
 * two's complement.  Before issue 37 the type said unsigned, but every
 * writer already stored a time before 1970 as those bits (the unsigned
 * product wraps to them) and no time after 2262 could be stored: so an
 * old record decodes to the same time, and no version changed.  Only the
 * readers' conversion to a timespec was wrong (mds_time_ts). */
#define MDS_PROTO_V 9
#define MDS_PROTO_COMPAT 1

#define NS_PER_S 1000000000ll

int64_t mds_time_ns(int64_t sec, long nsec)
{
	if (nsec < 0 || nsec >= NS_PER_S)
		nsec = nsec < 0 ? 0 : NS_PER_S - 1;
	if (sec > INT64_MAX / NS_PER_S ||
	    (sec == INT64_MAX / NS_PER_S && nsec > INT64_MAX % NS_PER_S))
		return INT64_MAX;
	/* INT64_MIN / NS_PER_S rounds toward zero: one more second down
	 * still fits once nsec is added */
	if (sec < INT64_MIN / NS_PER_S - 1 ||
	    (sec == INT64_MIN / NS_PER_S - 1 && nsec < NS_PER_S + INT64_MIN % NS_PER_S))
		return INT64_MIN;
	if (sec < 0)
		return (sec + 1) * NS_PER_S + (nsec - NS_PER_S);
	return sec * NS_PER_S + nsec;
}

struct timespec mds_time_ts(int64_t ns)
{
	int64_t s = ns / NS_PER_S, r = ns % NS_PER_S;

	if (r < 0) {
		s--;
		r += NS_PER_S;
	}
	return (struct timespec){ .tv_sec = (time_t)s, .tv_nsec = (long)r };
}

static void chg_encode(struct enc *e, uint32_t n, const struct mds_chg *c)
{
	enc_u32(e, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u32(e, c[i].kind);
		enc_u64(e, c[i].ino);
		enc_str(e, c[i].name);
	}
}

static uint32_t chg_decode(struct dec *d, struct mds_chg *c)
{
	uint32_t n = dec_count(d, MDS_CHG_MAX, 4 + 8 + 4);

	for (uint32_t i = 0; !d->err && i < n; i++) {
		c[i].kind = dec_u32(d);
		c[i].ino = dec_u64(d);
		dec_str(d, c[i].name, MDS_NAME_MAX);
		if (!d->err && (!c[i].kind || (c[i].kind & ~(MDS_CHG_ATTR | MDS_CHG_DATA |
							      MDS_CHG_DENT | MDS_CHG_PERM |
							      MDS_CHG_EXCL))))
			dec_fail(d, -EBADMSG);
	}
	return d->err ? 0 : n;
}

void mds_notify_encode(struct enc *e, const struct mds_notify *n)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);

	chg_encode(e, n->n < MDS_CHG_MAX ? n->n : MDS_CHG_MAX, n->c);
	enc_end(e, h);
}

/* ---- data object names ---- */

void mds_data_oid(char *b, size_t n, uint64_t dns, uint64_t ino, uint64_t blk)
{
	if (dns)
		snprintf(b, n, "n%016" PRIx64 ".%016" PRIx64 ".%016" PRIx64, dns, ino, blk);
	else
		snprintf(b, n, "%016" PRIx64 ".%016" PRIx64, ino, blk);
}

size_t mds_data_prefix(char *b, size_t n, uint64_t dns, uint64_t ino)
{
	int r = dns ? snprintf(b, n, "n%016" PRIx64 ".%016" PRIx64 ".", dns, ino)
		    : snprintf(b, n, "%016" PRIx64 ".", ino);
	return r < 0 ? 0 : (size_t)r;
}

void mds_dns_prefix(char *b, size_t n, uint64_t dns)
{
	snprintf(b, n, "n%016" PRIx64 ".", dns);
}

/* ---- a client mounting a sub-tree ----
 *
 * atoll-fuse mounted on directory R shows R as FUSE's root (inode 1):
 * the numbers 1 and R are swapped in every request it encodes and every
 * reply and revoke it decodes, so nothing else of the client knows.
 * 0 (the MDS, and a client mounting the whole tree): no swap. */
static _Atomic uint64_t root_swap;

void mds_proto_set_root(uint64_t ino)
{
	root_swap = ino == MDS_ROOT_INO ? 0 : ino;
}

static uint64_t swap_ino(uint64_t ino)
{
	uint64_t r = root_swap;

	if (!r)
		return ino;
	return ino == r ? MDS_ROOT_INO : ino == MDS_ROOT_INO ? r : ino;
}

static void swap_chg(struct mds_chg *c, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < MDS_CHG_MAX; i++)
		c[i].ino = swap_ino(c[i].ino);
}

int mds_notify_decode(struct dec *d, struct mds_notify *n)
{
	struct dec b;

	memset(n, 0, sizeof(*n));
	if (dec_msg_begin(d, MDS_PROTO_COMPAT, &b))
		return d->err;
	n->n = chg_decode(&b, n->c);
	swap_chg(n->c, n->n);
	int ret = dec_end(d, &b);
	if (ret)
		n->n = 0;
	return ret;
}

void mds_safe_encode(struct enc *e, const struct mds_safe *s)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);

	enc_u64(e, s->seq);
	enc_end(e, h);
}

int mds_safe_decode(struct dec *d, struct mds_safe *s)
{
	struct dec b;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, MDS_PROTO_COMPAT, &b))
		return d->err;
	s->seq = dec_u64(&b);
	return dec_end(d, &b);
}

void mds_inode_encode(struct enc *e, const struct mds_inode *in)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);

	enc_u64(e, in->ino);
	enc_u32(e, in->mode);
	enc_u32(e, in->uid);
	enc_u32(e, in->gid);
	enc_u32(e, in->nlink);
	enc_u64(e, in->rdev);
	enc_u64(e, in->size);
	enc_u64(e, (uint64_t)in->atime);
	enc_u64(e, (uint64_t)in->mtime);
	enc_u64(e, (uint64_t)in->ctime);
	enc_u64(e, in->gen);
	enc_u32(e, in->flags);
	enc_u64(e, in->dns);
	enc_end(e, h);
}

int mds_inode_decode(struct dec *d, struct mds_inode *in)
{
	struct dec b;

	memset(in, 0, sizeof(*in));
	if (dec_msg_begin(d, MDS_PROTO_COMPAT, &b))
		return d->err;
	in->ino = dec_u64(&b);
	in->mode = dec_u32(&b);
	in->uid = dec_u32(&b);
	in->gid = dec_u32(&b);
	in->nlink = dec_u32(&b);
	in->rdev = dec_u64(&b);
	in->size = dec_u64(&b);
	in->atime = (int64_t)dec_u64(&b);
	in->mtime = (int64_t)dec_u64(&b);
	in->ctime = (int64_t)dec_u64(&b);
	in->gen = dec_u64(&b);
	in->flags = dec_u32(&b);
	if (dec_left(&b))
		in->dns = dec_u64(&b);
	return dec_end(d, &b);
}

void mds_req_encode(struct enc *e, const struct mds_req *r)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);

	enc_u32(e, r->op);
	enc_u32(e, r->uid);
	enc_u32(e, r->gid);
	enc_u64(e, r->client);
	enc_u64(e, swap_ino(r->ino));
	enc_u64(e, swap_ino(r->ino2));
	enc_str(e, r->name);
	enc_str(e, r->name2);
	enc_u32(e, r->mode);
	enc_u32(e, r->flags);
	enc_u64(e, r->rdev);
	enc_u32(e, r->setmask);
	enc_u32(e, r->s_mode);
	enc_u32(e, r->s_uid);
	enc_u32(e, r->s_gid);
	enc_u64(e, r->s_size);
	enc_u64(e, (uint64_t)r->s_atime);
	enc_u64(e, (uint64_t)r->s_mtime);
	enc_u64(e, (uint64_t)r->s_ctime);
	enc_u64(e, r->size_hint);
	enc_str(e, r->cookie);
	enc_u32(e, r->max);
	enc_str(e, r->target);
	enc_u64(e, r->reqid);
	enc_blob(e, r->value ? r->value : "", r->value ? r->vlen : 0);
	enc_u32(e, r->lflags);
	enc_u64(e, r->replay_ino);
	enc_u64(e, r->ogen);
	enc_end(e, h);
}

int mds_req_decode(struct dec *d, struct mds_req *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, MDS_PROTO_COMPAT, &b))
		return d->err;
	r->op = dec_u32(&b);
	r->uid = dec_u32(&b);
	r->gid = dec_u32(&b);
	r->client = dec_u64(&b);
	r->ino = dec_u64(&b);
	r->ino2 = dec_u64(&b);
	dec_str(&b, r->name, MDS_NAME_MAX);
	dec_str(&b, r->name2, MDS_NAME_MAX);
	r->mode = dec_u32(&b);
	r->flags = dec_u32(&b);
	r->rdev = dec_u64(&b);
	r->setmask = dec_u32(&b);
	r->s_mode = dec_u32(&b);
	r->s_uid = dec_u32(&b);
	r->s_gid = dec_u32(&b);
	r->s_size = dec_u64(&b);
	r->s_atime = (int64_t)dec_u64(&b);
	r->s_mtime = (int64_t)dec_u64(&b);
	r->s_ctime = (int64_t)dec_u64(&b);
	r->size_hint = dec_u64(&b);
	dec_str(&b, r->cookie, MDS_NAME_MAX);
	r->max = dec_u32(&b);
	dec_str(&b, r->target, MDS_PATH_MAX);
	r->reqid = dec_u64(&b);
	if (dec_left(&b)) {
		size_t n = 0;
		r->value = dec_blob(&b, &n, MDS_XATTR_MAX);
		r->vlen = (uint32_t)n;
	}
	if (dec_left(&b))
		r->lflags = dec_u32(&b);
	if (dec_left(&b))
		r->replay_ino = dec_u64(&b);
	if (dec_left(&b))
		r->ogen = dec_u64(&b);
	if (!b.err && (r->op == 0 || r->op >= MDS_OP_MAX_))
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

int mds_req_peek_op(const void *front, size_t len, uint32_t *op)
{
	struct dec d, b;

	dec_init(&d, front, len);
	if (dec_msg_begin(&d, MDS_PROTO_COMPAT, &b))
		return d.err;
	*op = dec_u32(&b);
	return b.err;
}

void mds_reply_encode(struct enc *e, const struct mds_reply *r)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_u32(e, r->ninodes);
	for (uint32_t i = 0; i < r->ninodes && i < 2; i++)
		mds_inode_encode(e, &r->in[i]);
	enc_u32(e, r->nents);
	for (uint32_t i = 0; i < r->nents; i++) {
		enc_str(e, r->ents[i].name);
		enc_u64(e, r->ents[i].ino);
		enc_u32(e, r->ents[i].mode);
	}
	enc_u32(e, r->more);
	enc_str(e, r->target);
	enc_u64(e, r->st.blocks);
	enc_u64(e, r->st.bfree);
	enc_u64(e, r->st.bavail);
	enc_u64(e, r->st.files);
	enc_u64(e, r->st.ffree);
	enc_u32(e, r->st.bsize);
	enc_blob(e, r->value ? r->value : "", r->value ? r->vlen : 0);
	enc_u32(e, r->lease_ms);
	enc_u64(e, r->dir_lease);
	uint32_t np = r->plus && r->nplus == r->nents ? r->nplus : 0;
	enc_u32(e, np);
	for (uint32_t i = 0; i < np; i++)
		mds_inode_encode(e, &r->plus[i]);
	chg_encode(e, r->nchg < MDS_CHG_MAX ? r->nchg : MDS_CHG_MAX, r->chg);
	enc_u64(e, r->jseq);
	enc_u64(e, r->dir_lease2);
	enc_u32(e, r->lease_flags);
	enc_u64(e, r->ino_first);
	enc_u32(e, r->ino_count);
	enc_end(e, h);
}

int mds_reply_decode(struct dec *d, struct mds_reply *r)
{
	struct dec b;
	uint8_t v;

	memset(r, 0, sizeof(*r));
	if (dec_begin(d, MDS_PROTO_COMPAT, &b, &v))
		return d->err;
	r->version = v;
	r->rc = (int32_t)dec_u32(&b);
	r->ninodes = dec_u32(&b);
	if (r->ninodes > 2)
		dec_fail(&b, -EBADMSG);
	for (uint32_t i = 0; !b.err && i < r->ninodes; i++)
		mds_inode_decode(&b, &r->in[i]);
	r->nents = dec_count(&b, MDS_READDIR_MAX, 4 + 8 + 4);
	if (!b.err && r->nents) {
		r->ents = calloc(r->nents, sizeof(*r->ents));
		if (!r->ents)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < r->nents; i++) {
		dec_str(&b, r->ents[i].name, MDS_NAME_MAX);
		r->ents[i].ino = dec_u64(&b);
		r->ents[i].mode = dec_u32(&b);
	}
	r->more = dec_u32(&b);
	dec_str(&b, r->target, MDS_PATH_MAX);
	r->st.blocks = dec_u64(&b);
	r->st.bfree = dec_u64(&b);
	r->st.bavail = dec_u64(&b);
	r->st.files = dec_u64(&b);
	r->st.ffree = dec_u64(&b);
	r->st.bsize = dec_u32(&b);
	if (dec_left(&b)) {
		size_t n = 0;
		const void *p = dec_blob(&b, &n, MDS_XATTR_MAX);
		if (p && n) {
			r->value = malloc(n);
			if (!r->value)
				dec_fail(&b, -ENOMEM);
			else
				memcpy(r->value, p, n);
			r->vlen = (uint32_t)n;
		}
	}
	if (dec_left(&b)) {
		r->lease_ms = dec_u32(&b);
		r->dir_lease = dec_u64(&b);
		/* an inode record is a section: 6 bytes of header at least */
		r->nplus = dec_count(&b, MDS_READDIR_MAX, 6);
		if (!b.err && r->nplus && r->nplus != r->nents)
			dec_fail(&b, -EBADMSG);
		if (!b.err && r->nplus) {
			r->plus = calloc(r->nplus, sizeof(*r->plus));
			if (!r->plus)
				dec_fail(&b, -ENOMEM);
		}
		for (uint32_t i = 0; !b.err && i < r->nplus; i++)
			mds_inode_decode(&b, &r->plus[i]);
		r->nchg = chg_decode(&b, r->chg);
	}
	if (dec_left(&b))
		r->jseq = dec_u64(&b);
	if (dec_left(&b))
		r->dir_lease2 = dec_u64(&b);
	if (dec_left(&b))
		r->lease_flags = dec_u32(&b);
	if (dec_left(&b)) {
		r->ino_first = dec_u64(&b);
		r->ino_count = dec_u32(&b);
		if (!b.err && (r->ino_count > MDS_INOS_MAX ||
			       r->ino_first > UINT64_MAX - r->ino_count))
			dec_fail(&b, -EBADMSG);
	}
	if (root_swap) {
		for (uint32_t i = 0; i < r->ninodes && i < 2; i++)
			r->in[i].ino = swap_ino(r->in[i].ino);
		for (uint32_t i = 0; r->ents && i < r->nents; i++)
			r->ents[i].ino = swap_ino(r->ents[i].ino);
		for (uint32_t i = 0; r->plus && i < r->nplus; i++)
			r->plus[i].ino = swap_ino(r->plus[i].ino);
		r->dir_lease = swap_ino(r->dir_lease);
		r->dir_lease2 = swap_ino(r->dir_lease2);
		swap_chg(r->chg, r->nchg);
	}
	int ret = dec_end(d, &b);
	if (ret) {
		free(r->plus);
		r->plus = NULL;
		r->nplus = 0;
		r->nchg = 0;
		free(r->ents);
		r->ents = NULL;
		r->nents = 0;
		free(r->value);
		r->value = NULL;
		r->vlen = 0;
	}
	return ret;
}

const char *mds_op_name(uint32_t op)
{
	static const char *names[] = {
		"?", "session", "lookup", "getattr", "setattr", "mknod", "mkdir",
		"unlink", "rmdir", "rename", "link", "symlink", "readlink",
		"readdir", "statfs", "open", "close", "fsync", "setxattr",
		"getxattr", "listxattr", "removexattr", "session_end", "landed",
		"inos",
	};
	return op < MDS_OP_MAX_ ? names[op] : "?";
}

void mds_status_encode(struct enc *e, const struct mds_status *s)
{
	size_t h = enc_begin(e, MDS_PROTO_V, MDS_PROTO_COMPAT);
	uint32_t nops = s->nops < MDS_STATUS_OPS_MAX ? s->nops : MDS_STATUS_OPS_MAX;

	enc_u32(e, s->state);
	enc_u64(e, s->uptime_ms);
	enc_str(e, s->addr);
	enc_str(e, s->meta_pool);
	enc_str(e, s->data_pool);
	enc_u64(e, s->inodes);
	enc_u64(e, s->next_ino);
	enc_u64(e, s->ino_hw);
	enc_u64(e, s->j_seg);
	enc_u64(e, s->j_entries);
	enc_u64(e, s->j_offset);
	enc_u64(e, s->j_seq);
	enc_u64(e, s->requests);
	enc_u64(e, s->malformed);
	enc_u64(e, s->status_requests);
	enc_u32(e, nops);
	for (uint32_t i = 0; i < nops; i++)
		enc_u64(e, s->op_count[i]);
	enc_u32(e, s->nclients);
	for (uint32_t i = 0; i < s->nclients; i++) {
		enc_u64(e, s->clients[i].id);
		enc_str(e, s->clients[i].addr);
		enc_u64(e, s->clients[i].requests);
		enc_u64(e, s->clients[i].connected_ms);
	}
	enc_u32(e, s->lease_ms);
	enc_u64(e, s->leases);
	enc_u64(e, s->leases_max);
	enc_u64(e, s->grants);
	enc_u64(e, s->revokes);
	enc_u64(e, s->revoke_timeouts);
	enc_u64(e, s->j_durable);
	enc_u64(e, s->sessions);
	enc_u32(e, s->session_timeout_ms);
	enc_u64(e, s->cache_bytes);
	enc_u64(e, s->cache_max);
	enc_u64(e, s->cache_nodes);
	enc_u64(e, s->cache_hits);
	enc_u64(e, s->cache_misses);
	enc_u64(e, s->cache_evictions);
	enc_u64(e, s->inflight);
	enc_u64(e, s->inflight_waits);
	enc_u64(e, s->inflight_timeouts);
	enc_end(e, h);
}

int mds_status_decode(struct dec *d, struct mds_status *s)
{
	struct dec b;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, MDS_PROTO_COMPAT, &b))
		return d->err;
	s->state = dec_u32(&b);
	s->uptime_ms = dec_u64(&b);
	dec_str(&b, s->addr, sizeof(s->addr) - 1);
	dec_str(&b, s->meta_pool, sizeof(s->meta_pool) - 1);
	dec_str(&b, s->data_pool, sizeof(s->data_pool) - 1);
	s->inodes = dec_u64(&b);
	s->next_ino = dec_u64(&b);
	s->ino_hw = dec_u64(&b);
	s->j_seg = dec_u64(&b);
	s->j_entries = dec_u64(&b);
	s->j_offset = dec_u64(&b);
	s->j_seq = dec_u64(&b);
	s->requests = dec_u64(&b);
	s->malformed = dec_u64(&b);
	s->status_requests = dec_u64(&b);
	s->nops = dec_count(&b, MDS_STATUS_OPS_MAX, 8);
	for (uint32_t i = 0; !b.err && i < s->nops; i++)
		s->op_count[i] = dec_u64(&b);
	s->nclients = dec_count(&b, MDS_STATUS_CLIENTS_MAX, 8 + 4 + 8 + 8);
	if (!b.err && s->nclients) {
		s->clients = calloc(s->nclients, sizeof(*s->clients));
		if (!s->clients)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < s->nclients; i++) {
		s->clients[i].id = dec_u64(&b);
		dec_str(&b, s->clients[i].addr, sizeof(s->clients[i].addr) - 1);
		s->clients[i].requests = dec_u64(&b);
		s->clients[i].connected_ms = dec_u64(&b);
	}
	if (dec_left(&b)) {
		s->lease_ms = dec_u32(&b);
		s->leases = dec_u64(&b);
		s->leases_max = dec_u64(&b);
		s->grants = dec_u64(&b);
		s->revokes = dec_u64(&b);
		s->revoke_timeouts = dec_u64(&b);
	}
	if (dec_left(&b))
		s->j_durable = dec_u64(&b);
	if (dec_left(&b)) {
		s->sessions = dec_u64(&b);
		s->session_timeout_ms = dec_u32(&b);
	}
	if (dec_left(&b)) {
		s->cache_bytes = dec_u64(&b);
		s->cache_max = dec_u64(&b);
		s->cache_nodes = dec_u64(&b);
		s->cache_hits = dec_u64(&b);
		s->cache_misses = dec_u64(&b);
		s->cache_evictions = dec_u64(&b);
	}
	if (dec_left(&b)) {
		s->inflight = dec_u64(&b);
		s->inflight_waits = dec_u64(&b);
		s->inflight_timeouts = dec_u64(&b);
	}
	if (!b.err && s->state != MDS_STATE_REPLAYING && s->state != MDS_STATE_ACTIVE &&
	    s->state != MDS_STATE_RECONNECT)
		dec_fail(&b, -EBADMSG);
	int ret = dec_end(d, &b);
	if (ret) {
		free(s->clients);
		s->clients = NULL;
		s->nclients = 0;
	}
	return ret;
}

const char *mds_state_name(uint32_t state)
{
	switch (state) {
	case MDS_STATE_REPLAYING: return "replaying";
	case MDS_STATE_ACTIVE: return "active";
	case MDS_STATE_RECONNECT: return "reconnect";
	default: return "unknown";
	}
}
