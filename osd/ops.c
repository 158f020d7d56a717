/*
 * ops.c - client ops (MT_OSD_OP): checks, ordering, reads, and writes
 * turned into one store transaction with their PG log entry.
 *
 * An op is checked against our map first: a client with an older epoch,
 * or one that sent to an OSD that is not the PG's primary, gets -ESTALE
 * with our epoch ("refresh your map to at least this epoch and resend");
 * a client with a newer epoch waits until our map catches up.  Then the
 * op joins its PG's queue, which runs ops in arrival order once the PG is
 * active; an op on an object waits while an earlier write to that object
 * is in flight (the store's reads see only committed state, and a write's
 * translation depends on the object's size and version).
 *
 * A write is resolved against the object's current state into a list of
 * plain changes (osd_proto.h: append becomes a write at the size,
 * write_full a truncate and a write, guards are checked here), so that
 * replicas apply the very same list.  Its transaction carries the data,
 * the object info attribute (version + mtime), the log entry and the PG
 * info.  The client is answered once the local commit and every replica
 * have it durable.  A resent request id that is in the log or the dup
 * index gets its first result and is not applied again.
 *
 * Reads run from the store: attributes and omap synchronously (LMDB reads
 * from the page cache), data with store_read_async; the reply to a read
 * is sent from the store's read thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atoll_assert.h"
#include "encode.h"
#include "log.h"
#include "osd_metrics.h"
#include "pg.h"
#include "placement.h"
#include "store.h"

#define OMAP_GET_DEFAULT 1000u
#define LIST_DEFAULT 1000u

/* ---- lifetime ---------------------------------------------------------- */

static void op_free(struct osd_op *op)
{
	struct osd *osd = op->osd;

	pthread_mutex_lock(&osd->ops_lock);
	if (op->gprev)
		op->gprev->gnext = op->gnext;
	else if (osd->ops_head == op)
		osd->ops_head = op->gnext;
	if (op->gnext)
		op->gnext->gprev = op->gprev;
	pthread_mutex_unlock(&osd->ops_lock);
	atomic_fetch_sub(&osd->ops_in_flight, 1);
	for (uint32_t i = 0; i < PROTO_OPS_MAX; i++)
		free(op->outs[i]);
	free(op->muts);
	osd_op_req_clear(&op->req);
	msg_free(op->m);
	msg_conn_put(op->conn);
	free(op);
}

static void op_free_loop(void *arg)
{
	op_free(arg);
}

void osd_op_put(struct osd_op *op)
{
	if (atomic_fetch_sub(&op->refs, 1) != 1)
		return;
	if (msgr_on_loop(op->osd->msgr))
		op_free(op);
	else
		osd_post(op->osd, op_free_loop, op);
}

/* ---- replies ------------------------------------------------------------ */

static void free_buf(void *arg)
{
	free(arg);
}

/* Sends the reply (any thread). */
static void op_reply(struct osd_op *op, int result, uint64_t epoch)
{
	uint32_t nops = op->req.nops;
	struct osd_op_reply rep = {
		.reqid = op->req.reqid,
		.result = result,
		.version = op->obj_version,
		.epoch = epoch,
		.nops = nops,
		.rvals = op->rvals,
		.out_lens = op->out_lens,
	};
	struct enc e;
	struct msg *m;
	size_t total = 0;
	uint32_t nout = 0, last = 0;

	if (op->replied)
		return;
	op->replied = true;
	if (result == -ESTALE || nops > PROTO_OPS_MAX) {
		rep.nops = 0;
		nops = 0;
	}
	for (uint32_t i = 0; i < nops; i++) {
		if (!op->outs[i])
			op->out_lens[i] = 0;
		if (op->out_lens[i]) {
			total += op->out_lens[i];
			nout++;
			last = i;
		}
	}
	osd_metrics_op_done(op, result, total);
	enc_init(&e);
	osd_op_reply_encode(&rep, &e);
	m = msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (!m) {
		log_error("ops", "cannot build the reply to client.%llu tid %llu: out of memory",
			  (unsigned long long)op->req.reqid.client,
			  (unsigned long long)op->req.reqid.tid);
		return;
	}
	if (nout == 1) {
		/* one output (a read): hand its buffer over without a copy */
		msg_set_data_ref(m, op->outs[last], op->out_lens[last], free_buf, op->outs[last]);
		if (op->out_crc_known & (1ull << last))
			msg_set_data_crc(m, op->out_crcs[last]);	/* no pass over the data */
		op->outs[last] = NULL;
	} else if (nout > 1) {
		uint8_t *buf = malloc(total), *p = buf;

		if (!buf) {
			msg_free(m);
			return;
		}
		for (uint32_t i = 0; i < nops; i++) {
			if (op->out_lens[i]) {
				memcpy(p, op->outs[i], op->out_lens[i]);
				p += op->out_lens[i];
			}
		}
		msg_set_data_ref(m, buf, total, free_buf, buf);
	}
	msg_reply(op->conn, op->m, m);
}

/* A reply that needs no op (decode errors, refusals before an op exists). */
void osd_op_reply_bare(struct osd *osd, struct msg_conn *c, struct msg *req,
		       const struct osd_reqid *reqid, int result)
{
	struct osd_op_reply rep = {
		.result = result,
		.epoch = osd->map ? osd->map->epoch : 0,
	};
	struct enc e;
	struct msg *m;

	if (reqid)
		rep.reqid = *reqid;
	enc_init(&e);
	osd_op_reply_encode(&rep, &e);
	m = msg_new(MT_OSD_OP, &e);
	enc_free(&e);
	if (m)
		msg_reply(c, req, m);
}

/* ---- object state ----------------------------------------------------- */

struct obj_state {
	bool exists;
	uint64_t size;
	struct pg_version version;
	uint64_t mtime_ns;
};

static void oi_encode(uint8_t *buf, uint32_t *len, struct pg_version v, uint64_t mtime)
{
	struct osd_oi oi = { v, mtime };
	struct enc e;

	enc_init(&e);
	osd_oi_encode(&oi, &e);
	ATOLL_ASSERT(!e.err && e.len <= OSD_OI_MAX, "object info does not encode");
	memcpy(buf, e.buf, e.len);
	*len = (uint32_t)e.len;
	enc_free(&e);
}

static int obj_load(struct osd *osd, uint64_t coll, const char *oid, struct obj_state *os)
{
	uint64_t size;
	void *val = NULL;
	size_t vlen = 0;
	int r;

	memset(os, 0, sizeof(*os));
	r = store_size(osd->store, coll, oid, &size);
	if (r == -ENOENT)
		return 0;
	if (r)
		return r;
	os->exists = true;
	os->size = size;
	r = store_getattr(osd->store, coll, oid, OSD_OI_ATTR, &val, &vlen);
	if (r == 0) {
		struct osd_oi oi;

		r = osd_oi_decode(val, vlen, &oi);
		free(val);
		os->version = oi.version;
		os->mtime_ns = oi.mtime_ns;
		if (r)
			log_warn("ops", "object '%s' in collection 0x%llx: its info attribute "
				 "is malformed", oid, (unsigned long long)coll);
	} else if (r != -ENODATA) {
		return r;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "_" + name as a C string; -ENAMETOOLONG / -EINVAL. */
static int xattr_name(char out[STORE_ATTR_NAME_MAX + 1], const void *name, uint32_t len)
{
	if (len == 0 || memchr(name, 0, len))
		return -EINVAL;
	if (len + 1 > STORE_ATTR_NAME_MAX)
		return -ENAMETOOLONG;
	out[0] = OSD_XATTR_PREFIX;
	memcpy(out + 1, name, len);
	out[len + 1] = 0;
	return 0;
}

/* CMPXATTR: 0 when the attribute compares as asked, -ECANCELED when not,
 * -ENODATA when it is missing. */
static int cmp_xattr(struct osd *osd, struct pg *pg, const char *oid,
		     const struct osd_subop *so)
{
	char name[STORE_ATTR_NAME_MAX + 1];
	void *val = NULL;
	size_t vlen = 0;
	int r, c;

	r = xattr_name(name, so->name, so->name_len);
	if (!r)
		r = store_getattr(osd->store, pg->coll, oid, name, &val, &vlen);
	if (r)
		return r;
	size_t n = vlen < so->val_len ? vlen : so->val_len;

	c = n ? memcmp(val, so->val, n) : 0;
	if (!c)
		c = vlen < so->val_len ? -1 : vlen > so->val_len ? 1 : 0;
	free(val);
	switch (so->off) {
	case OSD_CMP_EQ: return c == 0 ? 0 : -ECANCELED;
	case OSD_CMP_NE: return c != 0 ? 0 : -ECANCELED;
	case OSD_CMP_GT: return c > 0 ? 0 : -ECANCELED;
	case OSD_CMP_GE: return c >= 0 ? 0 : -ECANCELED;
	case OSD_CMP_LT: return c < 0 ? 0 : -ECANCELED;
	case OSD_CMP_LE: return c <= 0 ? 0 : -ECANCELED;
	default: return -EINVAL;
	}
}

/* ---- reads --------------------------------------------------------------- */

struct kv_collect {
	struct enc e;
	uint32_t n;
	uint32_t max;
	bool more;
	bool xattrs;
};

static int collect_attr(void *arg, const char *name, const void *val, size_t len)
{
	struct kv_collect *c = arg;

	if (name[0] != OSD_XATTR_PREFIX)
		return 0;
	osd_kvlist_encode_one(&c->e, name + 1, (uint32_t)strlen(name + 1), val, (uint32_t)len);
	c->n++;
	return 0;
}

static int collect_kv(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct kv_collect *c = arg;

	if (c->n == c->max) {
		c->more = true;
		return 1;
	}
	osd_kvlist_encode_one(&c->e, key, (uint32_t)klen, val, (uint32_t)vlen);
	c->n++;
	return 0;
}

static int collect_name(void *arg, const char *oid)
{
	struct kv_collect *c = arg;

	if (oid[0] == PG_RESERVED_PREFIX)
		return 0;
	if (c->n == c->max) {
		c->more = true;
		return 1;
	}
	osd_kvlist_encode_one(&c->e, oid, (uint32_t)strlen(oid), NULL, 0);
	c->n++;
	return 0;
}

/* Moves a collected list into op output i. */
static int kv_output(struct osd_op *op, uint32_t i, struct kv_collect *c)
{
	struct enc e;
	size_t len;

	if (c->e.err)
		return c->e.err;
	enc_init(&e);
	osd_kvlist_encode_begin(&e, c->n);
	enc_raw(&e, c->e.buf, c->e.len);
	enc_u8(&e, c->more);
	enc_free(&c->e);
	op->outs[i] = enc_take(&e, &len);
	if (!op->outs[i]) {
		enc_free(&e);
		return -ENOMEM;
	}
	op->out_lens[i] = (uint32_t)len;
	return 0;
}

static void read_done(void *arg, int64_t r);

struct read_cb {
	struct osd_op *op;
	uint32_t i;
	uint32_t crc;		/* the store's crc of what it read */
};

/* Sends the reply of a read and drops its reference, on whichever thread
 * finished it (the store's read thread, mostly): a read op holds nothing
 * of the loop's, so it is freed right here rather than posted to the
 * loop, which would cost a second wakeup of the loop per read. */
static void read_finish(struct osd_op *op)
{
	int result = 0;

	for (uint32_t i = 0; i < op->req.nops; i++) {
		if (op->rvals[i] < 0) {
			result = op->rvals[i];
			break;
		}
	}
	op_reply(op, result, op->epoch);
	if (atomic_fetch_sub(&op->refs, 1) == 1)
		op_free(op);
}

/* Store read thread (or the loop thread on a submission error). */
static void read_done(void *arg, int64_t r)
{
	struct read_cb *rc = arg;
	struct osd_op *op = rc->op;

	if (r < 0) {
		op->rvals[rc->i] = (int32_t)r;
		if (r == -EIO)
			atomic_fetch_add(&op->osd->store_errors, 1);
	} else {
		op->out_lens[rc->i] = (uint32_t)r;
		op->out_crcs[rc->i] = rc->crc;
		__atomic_fetch_or(&op->out_crc_known, 1ull << rc->i, __ATOMIC_RELAXED);
	}
	free(rc);
	if (atomic_fetch_sub(&op->reads_pending, 1) == 1)
		read_finish(op);
}

static int do_read(struct osd_op *op, uint32_t i, const struct obj_state *os)
{
	struct osd_subop *so = &op->req.ops[i];
	struct read_cb *rc;
	uint64_t len = so->len;
	void *buf;
	int r;

	if (!os->exists)
		return -ENOENT;
	if (so->off >= os->size)
		return 0;
	if (len == 0 || len > os->size - so->off)
		len = os->size - so->off;
	if (len > MSG_DEFAULT_FRAME_MAX - (1u << 20))
		return -E2BIG;
	if (posix_memalign(&buf, STORE_BLOCK_SIZE, (len + STORE_BLOCK_SIZE - 1) &
			   ~(uint64_t)(STORE_BLOCK_SIZE - 1)))
		return -ENOMEM;
	rc = malloc(sizeof(*rc));
	if (!rc) {
		free(buf);
		return -ENOMEM;
	}
	rc->op = op;
	rc->i = i;
	op->outs[i] = buf;
	atomic_fetch_add(&op->reads_pending, 1);
	r = store_read_async_crc(op->osd->store, op->pg->coll, op->oid, so->off, len, buf,
				 &rc->crc, read_done, rc);
	if (r < 0) {
		atomic_fetch_sub(&op->reads_pending, 1);
		free(rc);
		return r;
	}
	return 0;
}

/* Runs the sub-ops of a read op; the last reference sends the reply. */
static void exec_read(struct osd_op *op)
{
	struct osd *osd = op->osd;
	struct pg *pg = op->pg;
	struct obj_state os;
	char name[STORE_ATTR_NAME_MAX + 1];
	int r = 0;

	if (op->oid[0]) {
		r = obj_load(osd, pg->coll, op->oid, &os);
		if (r) {
			op_reply(op, r, op->epoch);
			osd_op_put(op);
			return;
		}
		op->obj_version = os.version.seq;
	} else {
		memset(&os, 0, sizeof(os));
	}
	atomic_store(&op->reads_pending, 1);	/* ours, dropped below */
	for (uint32_t i = 0; i < op->req.nops && r == 0; i++) {
		struct osd_subop *so = &op->req.ops[i];
		struct kv_collect c = { 0 };

		enc_init(&c.e);
		switch (so->code) {
		case OSD_OP_READ:
			r = do_read(op, i, &os);
			break;
		case OSD_OP_STAT: {
			struct enc e;
			size_t len;

			if (!os.exists) {
				r = -ENOENT;
				break;
			}
			enc_init(&e);
			enc_u64(&e, os.size);
			enc_u64(&e, os.mtime_ns);
			enc_u64(&e, os.version.seq);
			op->outs[i] = enc_take(&e, &len);
			op->out_lens[i] = (uint32_t)len;
			if (!op->outs[i]) {
				enc_free(&e);
				r = -ENOMEM;
			}
			break;
		}
		case OSD_OP_GETXATTR: {
			void *val = NULL;
			size_t vlen = 0;

			r = os.exists ? xattr_name(name, so->name, so->name_len) : -ENOENT;
			if (!r)
				r = store_getattr(osd->store, pg->coll, op->oid, name, &val, &vlen);
			if (!r) {
				op->outs[i] = val;
				op->out_lens[i] = (uint32_t)vlen;
			}
			break;
		}
		case OSD_OP_GETXATTRS:
			r = os.exists ? 0 : -ENOENT;
			if (!r)
				r = store_attrs(osd->store, pg->coll, op->oid, collect_attr, &c);
			if (!r)
				r = kv_output(op, i, &c);
			break;
		case OSD_OP_OMAP_GET:
			r = os.exists ? 0 : -ENOENT;
			c.max = so->len && so->len < PROTO_KV_MAX ? (uint32_t)so->len :
				(so->len ? PROTO_KV_MAX : OMAP_GET_DEFAULT);
			if (!r)
				r = store_omap_list(osd->store, pg->coll, op->oid,
						    so->name_len ? so->name : NULL, so->name_len,
						    0, collect_kv, &c);
			if (r >= 0)
				r = kv_output(op, i, &c);
			break;
		case OSD_OP_OMAP_GET_KEYS:
			r = os.exists ? 0 : -ENOENT;
			for (uint32_t k = 0; !r && k < so->nkv; k++) {
				void *val = NULL;
				size_t vlen = 0;
				int g = store_omap_get(osd->store, pg->coll, op->oid, so->kv[k].key,
						       so->kv[k].klen, &val, &vlen);

				if (g == -ENODATA)
					continue;
				if (g) {
					r = g;
					break;
				}
				osd_kvlist_encode_one(&c.e, so->kv[k].key, so->kv[k].klen, val,
						      (uint32_t)vlen);
				c.n++;
				free(val);
			}
			if (!r)
				r = kv_output(op, i, &c);
			break;
		case OSD_OP_LIST: {
			char after[STORE_NAME_MAX + 1];

			if (so->name_len > STORE_NAME_MAX) {
				r = -ENAMETOOLONG;
				break;
			}
			if (so->name_len)
				memcpy(after, so->name, so->name_len);
			after[so->name_len] = 0;
			c.max = so->len && so->len < PROTO_KV_MAX ? (uint32_t)so->len :
				(so->len ? PROTO_KV_MAX : LIST_DEFAULT);
			r = store_list(osd->store, pg->coll, so->name_len ? after : NULL, 0,
				       collect_name, &c);
			if (r >= 0)
				r = kv_output(op, i, &c);
			break;
		}
		case OSD_OP_ASSERT_EXISTS:
			r = os.exists ? 0 : -ENOENT;
			break;
		case OSD_OP_ASSERT_VERSION:
			r = os.version.seq == so->off ? 0 : -ERANGE;
			break;
		case OSD_OP_CMPXATTR:
			r = os.exists ? cmp_xattr(osd, pg, op->oid, so) : -ENOENT;
			break;
		default:
			r = -EOPNOTSUPP;
		}
		enc_free(&c.e);
		if (r > 0)
			r = 0;
		op->rvals[i] = r;
	}
	/* drop our own count; the last read completion replies */
	if (atomic_fetch_sub(&op->reads_pending, 1) == 1)
		read_finish(op);
}

/* ---- writes ---------------------------------------------------------------- */

static struct osd_mut *mut_add(struct osd_op *op, uint8_t kind)
{
	if (op->nmuts == op->muts_cap)
		return NULL;
	struct osd_mut *m = &op->muts[op->nmuts++];

	memset(m, 0, sizeof(*m));
	m->kind = kind;
	return m;
}

/* Is any acting member flagged full in the map (the monitor's decision,
 * at mon_osd_full_ratio, from the beacons), or this OSD's store past
 * osd_failsafe_full_ratio at its last beacon?  The bytes of each write
 * are checked against the room each member has left before (space.c,
 * osd_space_take in pg_kick_ops), so that a burst between two beacons
 * never fills a store. */
static bool any_full(struct osd *osd, const struct pg *pg)
{
	if (atomic_load(&osd->local_full))
		return true;
	for (uint8_t i = 0; i < pg->info.nacting; i++) {
		const struct osdmap_osd *o = osdmap_osd(osd->map, pg->info.acting[i]);

		if (o && (o->state & OSD_ST_FULL))
			return true;
	}
	return false;
}

/* Resolves the sub-ops against the object's state into op->muts.
 * Returns 0, or the first failing sub-op's error (with its rval set). */
static int resolve_write(struct osd_op *op, struct obj_state *os, bool full)
{
	struct osd *osd = op->osd;
	struct pg *pg = op->pg;
	uint32_t cap = 8;

	for (uint32_t i = 0; i < op->req.nops; i++)
		cap += 2 + op->req.ops[i].nkv;
	op->muts = calloc(cap, sizeof(*op->muts));
	if (!op->muts)
		return -ENOMEM;
	op->muts_cap = cap;

	for (uint32_t i = 0; i < op->req.nops; i++) {
		struct osd_subop *so = &op->req.ops[i];
		struct osd_mut *m;
		char name[STORE_ATTR_NAME_MAX + 1];
		int r = 0;
		bool shrinks = so->code == OSD_OP_REMOVE || so->code == OSD_OP_RMXATTR ||
			       so->code == OSD_OP_OMAP_RM || so->code == OSD_OP_OMAP_CLEAR ||
			       so->code == OSD_OP_ASSERT_EXISTS ||
			       so->code == OSD_OP_ASSERT_VERSION || so->code == OSD_OP_CMPXATTR ||
			       (so->code == OSD_OP_TRUNCATE && so->off <= os->size);

		if (full && !shrinks)
			r = -ENOSPC;
		else switch (so->code) {
		case OSD_OP_WRITE:
		case OSD_OP_APPEND:
		case OSD_OP_WRITE_FULL: {
			uint64_t off = so->code == OSD_OP_WRITE ? so->off :
				       so->code == OSD_OP_APPEND ? os->size : 0;

			if (off + so->data_len > osd->object_max || off + so->data_len < off) {
				r = -EFBIG;
				break;
			}
			if (!os->exists) {
				mut_add(op, MUT_TOUCH);
				os->exists = true;
				os->size = 0;
			}
			if (so->code == OSD_OP_WRITE_FULL) {
				m = mut_add(op, MUT_TRUNCATE);
				m->off = 0;
				os->size = 0;
			}
			if (so->data_len) {
				m = mut_add(op, MUT_WRITE);
				m->off = off;
				m->len = so->data_len;
				m->data = so->data;
				if (off + so->data_len > os->size)
					os->size = off + so->data_len;
			}
			break;
		}
		case OSD_OP_TRUNCATE:
			if (so->off > osd->object_max) {
				r = -EFBIG;
				break;
			}
			if (!os->exists) {
				mut_add(op, MUT_TOUCH);
				os->exists = true;
			}
			m = mut_add(op, MUT_TRUNCATE);
			m->off = so->off;
			os->size = so->off;
			break;
		case OSD_OP_ZERO:
			if (!os->exists) {
				r = -ENOENT;
				break;
			}
			if (so->off + so->len > osd->object_max || so->off + so->len < so->off) {
				r = -EFBIG;
				break;
			}
			if (so->off >= os->size || !so->len)
				break;	/* nothing to zero; never grows the object */
			m = mut_add(op, MUT_ZERO);
			m->off = so->off;
			m->len = so->off + so->len > os->size ? os->size - so->off : so->len;
			break;
		case OSD_OP_REMOVE:
			if (!os->exists) {
				r = -ENOENT;
				break;
			}
			mut_add(op, MUT_REMOVE);
			os->exists = false;
			os->size = 0;
			break;
		case OSD_OP_CREATE:
			if (os->exists && (so->flags & OSD_OPF_EXCL)) {
				r = -EEXIST;
				break;
			}
			if (!os->exists) {
				mut_add(op, MUT_TOUCH);
				os->exists = true;
				os->size = 0;
			}
			break;
		case OSD_OP_SETXATTR:
			r = xattr_name(name, so->name, so->name_len);
			if (r)
				break;
			if (!os->exists) {
				mut_add(op, MUT_TOUCH);
				os->exists = true;
				os->size = 0;
			}
			m = mut_add(op, MUT_SETATTR);
			/* the prefixed name must outlive this frame: keep it in
			 * the op's scratch (the name blob's byte before it is
			 * ours to use only if we copy), so encode it as "_"+name
			 * in a small allocation owned by outs[] of this slot */
			op->outs[i] = malloc(so->name_len + 1);
			if (!op->outs[i]) {
				r = -ENOMEM;
				break;
			}
			memcpy(op->outs[i], name, so->name_len + 1);
			m->name = op->outs[i];
			m->name_len = so->name_len + 1;
			m->val = so->val;
			m->val_len = so->val_len;
			break;
		case OSD_OP_RMXATTR: {
			void *val = NULL;
			size_t vlen;

			r = os->exists ? xattr_name(name, so->name, so->name_len) : -ENOENT;
			if (!r)
				r = store_getattr(osd->store, pg->coll, op->oid, name, &val, &vlen);
			free(val);
			if (r)
				break;
			m = mut_add(op, MUT_RMATTR);
			op->outs[i] = malloc(so->name_len + 1);
			if (!op->outs[i]) {
				r = -ENOMEM;
				break;
			}
			memcpy(op->outs[i], name, so->name_len + 1);
			m->name = op->outs[i];
			m->name_len = so->name_len + 1;
			break;
		}
		case OSD_OP_CMPXATTR:
			r = os->exists ? cmp_xattr(osd, pg, op->oid, so) : -ENOENT;
			break;
		case OSD_OP_ASSERT_VERSION:
			r = os->version.seq == so->off ? 0 : -ERANGE;
			break;
		case OSD_OP_ASSERT_EXISTS:
			r = os->exists ? 0 : -ENOENT;
			break;
		case OSD_OP_OMAP_SET:
			if (!os->exists) {
				mut_add(op, MUT_TOUCH);
				os->exists = true;
				os->size = 0;
			}
			for (uint32_t k = 0; k < so->nkv; k++) {
				if (!so->kv[k].klen) {
					r = -EINVAL;
					break;
				}
				m = mut_add(op, MUT_OMAP_SET);
				m->name = so->kv[k].key;
				m->name_len = so->kv[k].klen;
				m->val = so->kv[k].val;
				m->val_len = so->kv[k].vlen;
			}
			break;
		case OSD_OP_OMAP_RM:
			if (!os->exists) {
				r = -ENOENT;
				break;
			}
			for (uint32_t k = 0; k < so->nkv; k++) {
				m = mut_add(op, MUT_OMAP_RM);
				m->name = so->kv[k].key;
				m->name_len = so->kv[k].klen;
			}
			break;
		case OSD_OP_OMAP_CLEAR:
			if (!os->exists) {
				r = -ENOENT;
				break;
			}
			mut_add(op, MUT_OMAP_CLEAR);
			break;
		default:
			r = -EINVAL;	/* a read inside a write op */
		}
		if (r) {
			op->rvals[i] = r;
			return r;
		}
	}
	return 0;
}

int osd_op_resolve(struct osd_op *op, bool *exists, uint64_t *size)
{
	struct obj_state os = { .exists = *exists, .size = *size };
	int r = resolve_write(op, &os, false);

	*exists = os.exists;
	*size = os.size;
	return r;
}

/* The write profile: where the primary's writes spend their time, summed
 * over writes (ns), logged at close: received -> executed (waiting for the
 * PG or an earlier write), executed -> local commit in (the store and the
 * hand-off back to the loop), executed -> last replica answer, and
 * executed -> answered.  Loop thread only. */
static struct {
	uint64_t n, wait, prep, local, reps, total, local_last;
} wprof;

static void wprof_add(const struct osd_op *op)
{
	uint64_t now = mono_now_ns();

	if (!op->t_recv || !op->t_exec || !op->t_local)
		return;
	wprof.n++;
	wprof.wait += op->t_start - op->t_recv;
	wprof.prep += op->t_exec - op->t_start;
	wprof.local += op->t_local - op->t_exec;
	if (op->t_reps)
		wprof.reps += op->t_reps - op->t_exec;
	wprof.total += now - op->t_exec;
	if (op->t_local >= op->t_reps)
		wprof.local_last++;
}

void osd_write_profile_log(void)
{
	if (!wprof.n)
		return;
	log_info("ops", "write profile: %llu replicated writes; per write us: waiting %.1f, "
		 "prepared in %.1f, local commit %.1f, last replica %.1f, answered %.1f after it ran; "
		 "the local commit came last in %llu",
		 (unsigned long long)wprof.n, wprof.wait / 1e3 / wprof.n, wprof.prep / 1e3 / wprof.n,
		 wprof.local / 1e3 / wprof.n, wprof.reps / 1e3 / wprof.n,
		 wprof.total / 1e3 / wprof.n, (unsigned long long)wprof.local_last);
}

static void local_done(void *arg, int r)
{
	struct osd_op *op = arg;

	op->t_local = mono_now_ns();
	atomic_fetch_sub(&op->osd->inflight_bytes, op->data_bytes);
	if (r < 0)
		pg_fail(op->pg, r);
	osd_op_write_done(op, r);
}

static void inflight_remove(struct pg *pg, struct osd_op *op)
{
	for (struct osd_op **pp = &pg->inflight; *pp; pp = &(*pp)->next) {
		if (*pp == op) {
			*pp = op->next;
			op->next = NULL;
			return;
		}
	}
}

/* Loop thread: one of the local commit / replica replies is in. */
void osd_op_write_done(struct osd_op *op, int r)
{
	struct pg *pg = op->pg;

	if (r < 0 && !op->result)
		op->result = r;
	ATOLL_ASSERT(op->pending > 0, "write op of pg %u.%x completed too often",
		     pg->pool, pg->pgid);
	if (--op->pending == 0) {
		if (!op->aborted) {
			inflight_remove(pg, op);
			if (op->result) {
				log_error("ops", "pg %u.%x: write to '%s' failed after it was "
					  "logged: %s", pg->pool, pg->pgid, op->oid,
					  strerror(-op->result));
				op_reply(op, op->result == -ESTALE ? -ESTALE : -EIO,
					 op->osd->map->epoch);
			} else {
				op_reply(op, 0, op->osd->map->epoch);
				wprof_add(op);
			}
			pg_kick_ops(pg);
			if (pg->rec)	/* a push may have waited for this write */
				pg_recovery_kick_pg(pg);
			osd_op_put(op);		/* the in-flight list's reference */
		}
	}
	osd_op_put(op);
}

static struct osd_op *inflight_last(const struct pg *pg, const char *oid);

bool pg_write_in_flight(const struct pg *pg, const char *oid)
{
	return inflight_last(pg, oid) != NULL;
}

static void op_data_hold(void *arg)
{
	struct osd_op *op = arg;

	atomic_fetch_add(&op->refs, 1);
}

static void op_data_release(void *arg)
{
	osd_op_put(arg);
}

static void exec_write(struct osd_op *op)
{
	struct osd *osd = op->osd;
	struct pg *pg = op->pg;
	struct obj_state os;
	struct pg_version ver;
	int32_t dup_result;
	struct store_txn *txn;
	bool existed;
	uint64_t old_size;
	int r;

	op->t_start = mono_now_ns();
	/* a resend of an op already applied: its first result */
	if (pglog_find(&pg->log, op->req.reqid.client, op->req.reqid.tid, &ver, &dup_result)) {
		log_debug("ops", "pg %u.%x: client.%llu tid %llu is a resend of version %llu",
			  pg->pool, pg->pgid, (unsigned long long)op->req.reqid.client,
			  (unsigned long long)op->req.reqid.tid, (unsigned long long)ver.seq);
		op->obj_version = ver.seq;
		op_reply(op, dup_result, osd->map->epoch);
		osd_op_put(op);
		return;
	}
	struct osd_op *prev = inflight_last(pg, op->oid);

	if (prev) {
		memset(&os, 0, sizeof(os));
		os.exists = prev->after_exists;
		os.size = prev->after_size;
		os.version = prev->after_version;
	} else {
		r = obj_load(osd, pg->coll, op->oid, &os);
		if (r)
			goto reply;
	}
	existed = os.exists;
	old_size = os.size;
	op->obj_version = os.version.seq;
	/* op->data_bytes: set by pg_kick_ops, which ran the space check */
	r = resolve_write(op, &os, op->no_space ||
			  (!(op->req.flags & OSD_REQF_FULL_TRY) && any_full(osd, pg)));
	if (r)
		goto reply;
	if (op->nmuts == 0)
		goto reply;	/* guards only: nothing changes */

	op->entry.version.epoch = osd->map->epoch;
	op->entry.version.seq = pg->info.last_update.seq + 1;
	op->entry.client = op->req.reqid.client;
	op->entry.tid = op->req.reqid.tid;
	op->entry.op = os.exists ? PGLOG_MODIFY : PGLOG_DELETE;
	op->entry.result = 0;
	op->entry.prior = os.version;
	op->entry.oid = op->oid;
	op->entry.oid_len = (uint32_t)strlen(op->oid);
	if (os.exists) {
		struct osd_mut *m = mut_add(op, MUT_SETATTR);

		ATOLL_ASSERT(m, "pg %u.%x: mutation list of '%s' overflows", pg->pool, pg->pgid,
			     op->oid);
		oi_encode(op->oi, &op->oi_len, op->entry.version, now_ns());
		m->name = OSD_OI_ATTR;
		m->name_len = 2;
		m->val = op->oi;
		m->val_len = op->oi_len;
	}
	txn = store_txn_new();
	if (!txn) {
		r = -ENOMEM;
		goto reply;
	}
	/* the write bytes stay in the client's message (no copy) while the
	 * store needs them: each such write holds a reference on op */
	{
		const struct osd_data_crcs dc = { op->m->data, op->m->data_len,
						  op->m->data_bcrc };

		r = osd_muts_to_txn_ref(op->muts, op->nmuts, txn, pg->coll, op->oid, &dc,
					op_data_hold, op_data_release, op);
	}
	if (!r)
		r = pglog_append(&pg->log, &pg->info, &op->entry, txn, pg->coll);
	if (r) {
		store_txn_free(txn);
		goto reply;
	}
	op->version = op->entry.version;
	op->obj_version = op->entry.version.seq;
	op->after_exists = os.exists;
	op->after_size = os.size;
	op->after_version = os.exists ? op->entry.version : (struct pg_version){ 0, 0 };
	if (!existed && os.exists)
		pg->objects++;
	if (existed && !os.exists && pg->objects)
		pg->objects--;
	if (os.size >= old_size || pg->bytes >= old_size - os.size)
		pg->bytes += os.size - old_size;
	else
		pg->bytes = 0;

	/* in flight: local commit + one reply per replica */
	op->next = NULL;
	struct osd_op **pp = &pg->inflight;

	while (*pp)
		pp = &(*pp)->next;
	*pp = op;
	/* The list holds a reference of its own: a replica that cannot take
	 * the write drops its call's reference without completing the op,
	 * which then waits in the list for the interval to end
	 * (pg_abort_ops) and must stay alive until it is unlinked. */
	atomic_fetch_add(&op->refs, 1);
	op->sis = pg->info.same_interval_since;
	op->t_exec = mono_now_ns();
	op->pending = 1;
	atomic_fetch_add(&op->refs, 1);
	atomic_fetch_add(&osd->inflight_bytes, op->data_bytes);
	pg_queue_txn(pg, txn, local_done, op);
	pg_replicate(pg, op);
	osd_op_put(op);		/* the reference of the queue */
	return;
reply:
	op_reply(op, r, osd->map->epoch);
	osd_op_put(op);
}

static void exec_op(struct osd_op *op)
{
	op->epoch = op->osd->map->epoch;
	if (op->is_write)
		exec_write(op);
	else
		exec_read(op);
}

/* ---- queueing -------------------------------------------------------------- */

/* The newest write in flight on oid, or NULL. */
static struct osd_op *inflight_last(const struct pg *pg, const char *oid)
{
	struct osd_op *last = NULL;

	if (!oid[0])
		return NULL;
	for (struct osd_op *o = pg->inflight; o; o = o->next)
		if (!strcmp(o->oid, oid))
			last = o;
	return last;
}

/* A write whose translation needs only the object's existence, size and
 * version (no store reads) may be resolved against the state an earlier
 * write in flight will leave, and queued behind it at once: the store
 * applies transactions in queue order and replicas apply REP_OPs in
 * arrival order.  This keeps many small writes to one object in flight
 * (sequential 4 KiB writes into one 4 MiB block-image object). */
static bool pipelineable(const struct osd_op *op)
{
	bool changes = false;

	if (!op->is_write)
		return false;
	for (uint32_t i = 0; i < op->req.nops; i++) {
		switch (op->req.ops[i].code) {
		case OSD_OP_WRITE:
		case OSD_OP_WRITE_FULL:
		case OSD_OP_APPEND:
		case OSD_OP_TRUNCATE:
		case OSD_OP_ZERO:
		case OSD_OP_REMOVE:
		case OSD_OP_CREATE:
		case OSD_OP_SETXATTR:
		case OSD_OP_OMAP_SET:
		case OSD_OP_OMAP_RM:
		case OSD_OP_OMAP_CLEAR:
		case OSD_OP_ASSERT_EXISTS:
		case OSD_OP_ASSERT_VERSION:
			break;
		default:
			return false;
		}
		changes |= osd_op_is_write(op->req.ops[i].code);
	}
	return changes;	/* guards alone wait, so they see committed state */
}

/* Must op wait for the writes in flight? */
static bool must_wait(const struct pg *pg, const struct osd_op *op)
{
	if (!inflight_last(pg, op->oid))
		return false;
	if (!pipelineable(op))
		return true;
	/* a resend of an op still in flight waits for its first result */
	for (const struct osd_op *o = pg->inflight; o; o = o->next)
		if (o->req.reqid.client == op->req.reqid.client &&
		    o->req.reqid.tid == op->req.reqid.tid)
			return true;
	return false;
}

/* What op costs a store (space.c grants it): the data it writes, and the
 * attributes and omap entries it sets; what it removes costs nothing. */
static struct space_need op_space_need(const struct osd_op *op)
{
	struct space_need n = { 0, 0 };

	for (uint32_t i = 0; i < op->req.nops; i++) {
		const struct osd_subop *so = &op->req.ops[i];
		uint64_t kv = 0;

		switch (so->code) {
		case OSD_OP_WRITE:
		case OSD_OP_WRITE_FULL:
		case OSD_OP_APPEND:
			osd_space_need_add(op->osd, &n, so->data_len, 0);
			break;
		case OSD_OP_SETXATTR:
			osd_space_need_add(op->osd, &n, 0, (uint64_t)so->name_len + so->val_len);
			break;
		case OSD_OP_OMAP_SET:
			for (uint32_t k = 0; so->kv && k < so->nkv; k++)
				kv += (uint64_t)so->kv[k].klen + so->kv[k].vlen;
			osd_space_need_add(op->osd, &n, 0, kv);
			break;
		default:
			break;
		}
	}
	return n;
}

void pg_kick_ops(struct pg *pg)
{
	struct osd_op *blocked = NULL, **btail = &blocked;

	if (!(pg->state & PG_ST_ACTIVE) || atomic_load(&pg->osd->closing))
		return;
	/* without a lease the ops wait: for its renewal, or for the map in
	 * which another OSD serves the PG (heartbeat.c) */
	if (pg->waiting && !osd_lease_valid(pg->osd))
		return;
	while (pg->waiting && (pg->state & PG_ST_ACTIVE)) {
		struct osd_op *op = pg->waiting;
		/* writes wait while the PG is deep scrubbed, and while a
		 * member is recovered unless the others can take them
		 * without it (recovery.c, doc/recovery.md) */
		bool wait = must_wait(pg, op) ||
			    (op->is_write && (pg_recovery_blocks_writes(pg) || pg->scrub));

		pg->waiting = op->next;
		op->next = NULL;
		for (struct osd_op *b = blocked; b && !wait && op->oid[0]; b = b->next)
			wait = !strcmp(b->oid, op->oid);
		/* room for its bytes on every member, or a grant asked */
		if (!wait && op->is_write) {
			struct space_need need = op_space_need(op);
			int r;

			op->data_bytes = need.data;
			if (op->req.flags & OSD_REQF_FULL_TRY) {
				r = osd_space_take_reserve(pg->osd, pg, &need);
			} else {
				if (!op->space_since_ns)
					op->space_since_ns = op->t_recv;
				r = osd_space_take(pg->osd, pg, &need, &op->space_since_ns,
						   &op->space_tries);
			}

			wait = r == -EAGAIN;
			op->no_space = r == -ENOSPC;
		}
		if (wait) {
			*btail = op;
			btail = &op->next;
			continue;
		}
		exec_op(op);
	}
	/* the blocked ones go back in front, in order */
	*btail = pg->waiting;
	pg->waiting = blocked;
	pg->waiting_tail = &pg->waiting;
	pg->nwaiting = 0;
	while (*pg->waiting_tail) {
		pg->waiting_tail = &(*pg->waiting_tail)->next;
		pg->nwaiting++;
	}
}

void pg_note_waiting_full(struct pg *pg, const struct msg_conn *c)
{
	uint64_t now = mono_now_ms();

	pg->waiting_refused++;
	if (pg->waiting_refused_ms && now - pg->waiting_refused_ms < 10000)
		return;
	log_warn("ops", "pg %u.%x: %u ops wait already; refusing more with -EAGAIN (last from "
		 "%s; %llu so far; the limit is osd_pg_max_waiting_ops)", pg->pool, pg->pgid,
		 pg->nwaiting, msg_conn_addr(c), (unsigned long long)pg->waiting_refused);
	pg->waiting_refused_ms = now;
}

void pg_abort_ops(struct pg *pg)
{
	struct osd *osd = pg->osd;
	uint64_t epoch = osd->map ? osd->map->epoch : 0;

	while (pg->inflight) {
		struct osd_op *op = pg->inflight;

		pg->inflight = op->next;
		op->next = NULL;
		op->aborted = true;
		op_reply(op, -ESTALE, epoch);
		/* the pending completions hold their own references */
		osd_op_put(op);		/* the in-flight list's */
	}
	while (pg->waiting) {
		struct osd_op *op = pg->waiting;

		pg->waiting = op->next;
		op->next = NULL;
		op_reply(op, -ESTALE, epoch);
		osd_op_put(op);
	}
	pg->waiting_tail = &pg->waiting;
	pg->nwaiting = 0;
}

/* ---- dispatch -------------------------------------------------------------- */

static bool op_is_pg_level(const struct osd_op_req *req)
{
	return req->nops == 1 && req->ops[0].code == OSD_OP_LIST;
}

void osd_op_dispatch(struct osd *osd, struct msg_conn *c, struct msg *m)
{
	struct osd_op_req req;
	struct osd_op *op;
	struct dec d;
	const struct osdmap_pool *pool;
	struct pg *pg;
	int r;

	dec_init(&d, m->front, m->front_len);
	memset(&req, 0, sizeof(req));
	r = osd_op_req_decode(&d, m->data, m->data_len, &req);
	if (r) {
		log_warn("ops", "malformed op from %s: %s", msg_conn_addr(c), strerror(-r));
		osd_op_reply_bare(osd, c, m, NULL, r == -E2BIG ? -E2BIG : -EINVAL);
		goto out_free;
	}
	if (!osd->map || req.epoch > osd->map->epoch) {
		struct osd_reqid reqid = req.reqid;
		struct osd_mapwait_key k = { .epoch = req.epoch, .pool = req.pool, .pg = req.pg,
					     .is_op = true, .reqid = &reqid,
					     .reply_type = MT_OSD_OP };

		osd_op_req_clear(&req);
		osd_map_wait(osd, &k, c, m);
		return;
	}
	if (req.epoch < osd->map->epoch || !osd_is_up(osd)) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -ESTALE);
		goto out_free;
	}
	/* an MDS's data I/O carries its client id too (its cluster handle) */
	if (osd->auth_on && (msg_conn_peer(c).type == MSG_ENTITY_CLIENT ||
			     msg_conn_peer(c).type == MSG_ENTITY_MDS) &&
	    req.reqid.client != msg_conn_peer(c).id) {
		log_warn("ops", "op from %s refused: its request id names client %llu, its "
			 "ticket client %llu", msg_conn_addr(c),
			 (unsigned long long)req.reqid.client,
			 (unsigned long long)msg_conn_peer(c).id);
		osd_op_reply_bare(osd, c, m, &req.reqid, -EPERM);
		goto out_free;
	}
	if (osdmap_blocklisted(osd->map, req.reqid.client, (uint64_t)time(NULL) * 1000)) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -EPERM);
		goto out_free;
	}
	pool = osdmap_pool(osd->map, req.pool);
	if (!pool) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -ENOENT);
		goto out_free;
	}
	if (req.nops == 0 || req.nops > PROTO_OPS_MAX) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -EINVAL);
		goto out_free;
	}
	r = osd_access_op(osd, c, &req, pool->name);
	if (r == -ECONNRESET)
		goto out_free;	/* the client redials with its fresh ticket */
	if (r < 0) {
		osd_op_reply_bare(osd, c, m, &req.reqid, r);
		goto out_free;
	}
	if (!op_is_pg_level(&req)) {
		if (req.oid_len == 0 || memchr(req.oid, 0, req.oid_len) ||
		    req.oid[0] == PG_RESERVED_PREFIX) {
			osd_op_reply_bare(osd, c, m, &req.reqid, -EINVAL);
			goto out_free;
		}
		if (req.oid_len > STORE_NAME_MAX) {
			osd_op_reply_bare(osd, c, m, &req.reqid, -ENAMETOOLONG);
			goto out_free;
		}
		if (placement_object_pg(pool, req.oid, req.oid_len) != req.pg) {
			osd_op_reply_bare(osd, c, m, &req.reqid, -EINVAL);
			goto out_free;
		}
	} else if (req.pg >= pool->pg_num) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -EINVAL);
		goto out_free;
	}
	pg = osd_pg_find(osd, req.pool, req.pg);
	if (!pg || !pg->is_primary) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -ESTALE);
		goto out_free;
	}
	/* ops wait in the PG for peering, the lease, space or an earlier op
	 * on the same object: bounded, the client retries -EAGAIN shortly */
	if (pg->nwaiting >= osd->pg_waiting_max) {
		pg_note_waiting_full(pg, c);
		osd_op_reply_bare(osd, c, m, &req.reqid, -EAGAIN);
		goto out_free;
	}

	op = calloc(1, sizeof(*op));
	if (!op) {
		osd_op_reply_bare(osd, c, m, &req.reqid, -ENOMEM);
		goto out_free;
	}
	op->osd = osd;
	op->pg = pg;
	op->conn = c;
	msg_conn_get(c);
	op->m = m;
	op->req = req;
	if (!op_is_pg_level(&req)) {
		memcpy(op->oid, req.oid, req.oid_len);
		op->oid[req.oid_len] = 0;
	}
	op->start_ms = mono_now_ms();
	op->t_recv = mono_now_ns();
	atomic_init(&op->refs, 1);
	for (uint32_t i = 0; i < req.nops; i++)
		if (osd_op_is_write(req.ops[i].code))
			op->is_write = true;
	atomic_fetch_add(&osd->ops_in_flight, 1);
	pthread_mutex_lock(&osd->ops_lock);
	op->gnext = osd->ops_head;
	if (osd->ops_head)
		osd->ops_head->gprev = op;
	osd->ops_head = op;
	pthread_mutex_unlock(&osd->ops_lock);

	*pg->waiting_tail = op;
	pg->waiting_tail = &op->next;
	pg->nwaiting++;
	pg_kick_ops(pg);
	return;

out_free:
	osd_op_req_clear(&req);
	msg_free(m);
}

uint32_t osd_slow_ops(struct osd *osd, struct slow_op **out)
{
	uint64_t now = mono_now_ms();
	uint32_t n = 0, cap = 16;
	struct slow_op *s = calloc(cap, sizeof(*s));

	*out = NULL;
	if (!s)
		return 0;
	pthread_mutex_lock(&osd->ops_lock);
	for (struct osd_op *op = osd->ops_head; op && n < cap; op = op->gnext) {
		if (now - op->start_ms < osd->complaint_ms)
			continue;
		s[n].pool = op->req.pool;
		s[n].pg = op->req.pg;
		s[n].age_ms = (uint32_t)(now - op->start_ms);
		snprintf(s[n].desc, sizeof(s[n].desc), "%s '%.60s' from client.%llu",
			 op->is_write ? "write" : "read", op->oid,
			 (unsigned long long)op->req.reqid.client);
		n++;
	}
	pthread_mutex_unlock(&osd->ops_lock);
	if (!n) {
		free(s);
		return 0;
	}
	*out = s;
	return n;
}
