/*
 * osd_proto.c - encodings of the OSD-to-OSD messages (osd_proto.h) and
 * the one function that turns a resolved mutation list into store ops,
 * shared by the primary and its replicas so that both apply exactly the
 * same thing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd_proto.h"
#include "proto.h"
#include "store.h"

/* Attribute names and keys reach the store as C strings. */
static int cstr(char *buf, size_t cap, const void *p, uint32_t n)
{
	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(buf, p, n);
	buf[n] = 0;
	return 0;
}

int osd_muts_check(const struct osd_mut *muts, uint32_t n, uint64_t object_max)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct osd_mut *m = &muts[i];

		switch (m->kind) {
		case MUT_WRITE:
		case MUT_ZERO:
			if (m->off > object_max || m->len > object_max - m->off)
				return -EFBIG;
			break;
		case MUT_TRUNCATE:
			if (m->off > object_max)
				return -EFBIG;
			break;
		}
	}
	return 0;
}

int osd_muts_to_txn(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
		    uint64_t coll, const char *oid)
{
	return osd_muts_to_txn_ref(muts, n, txn, coll, oid, NULL, NULL, NULL, NULL);
}

bool osd_muts_any_ref(const struct osd_mut *muts, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (muts[i].kind == MUT_WRITE && store_write_ref_ok(muts[i].data, muts[i].off,
								      muts[i].len))
			return true;
	return false;
}

/* The crcs dc has for the len bytes at data, or NULL. */
static const uint32_t *data_crcs(const struct osd_data_crcs *dc, const void *data, uint64_t len)
{
	const uint8_t *p = data;
	size_t at;

	if (!dc || !dc->bcrc || p < dc->base || p >= dc->base + dc->len)
		return NULL;
	at = (size_t)(p - dc->base);
	if (at % STORE_BLOCK_SIZE || len % STORE_BLOCK_SIZE ||
	    len > dc->len / STORE_BLOCK_SIZE * STORE_BLOCK_SIZE - at)
		return NULL;
	return dc->bcrc + at / STORE_BLOCK_SIZE;
}

int osd_muts_to_txn_ref(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
			uint64_t coll, const char *oid, const struct osd_data_crcs *dc,
			void (*hold)(void *arg), void (*release)(void *arg), void *arg)
{
	char name[STORE_ATTR_NAME_MAX + 1];
	int r = 0;

	for (uint32_t i = 0; i < n && !r; i++) {
		const struct osd_mut *m = &muts[i];

		switch (m->kind) {
		case MUT_TOUCH:
			r = store_txn_touch(txn, coll, oid);
			break;
		case MUT_WRITE:
			if (hold && store_write_ref_ok(m->data, m->off, m->len)) {
				hold(arg);
				r = store_txn_write_ref(txn, coll, oid, m->off, m->data, m->len, 0,
							data_crcs(dc, m->data, m->len), release,
							arg);
			} else {
				r = store_txn_write(txn, coll, oid, m->off, m->data, m->len, 0);
			}
			break;
		case MUT_ZERO:
			r = store_txn_zero(txn, coll, oid, m->off, m->len);
			break;
		case MUT_TRUNCATE:
			r = store_txn_truncate(txn, coll, oid, m->off);
			break;
		case MUT_REMOVE:
			r = store_txn_remove(txn, coll, oid);
			break;
		case MUT_SETATTR:
			r = cstr(name, sizeof(name), m->name, m->name_len);
			if (!r)
				r = store_txn_setattr(txn, coll, oid, name, m->val ? m->val : "",
						      m->val_len);
			break;
		case MUT_RMATTR:
			r = cstr(name, sizeof(name), m->name, m->name_len);
			if (!r)
				r = store_txn_rmattr(txn, coll, oid, name);
			break;
		case MUT_OMAP_SET:
			r = store_txn_omap_set(txn, coll, oid, m->name, m->name_len,
					       m->val ? m->val : "", m->val_len);
			break;
		case MUT_OMAP_RM:
			r = store_txn_omap_rm(txn, coll, oid, m->name, m->name_len);
			break;
		case MUT_OMAP_CLEAR:
			r = store_txn_omap_clear(txn, coll, oid);
			break;
		default:
			r = -EINVAL;
		}
	}
	return r;
}

void osd_rep_op_encode(const struct osd_rep_op *r, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_u64(e, r->epoch);
	enc_u64(e, r->same_interval_since);
	pglog_entry_encode(&r->entry, e);
	enc_u32(e, r->nmuts);
	for (uint32_t i = 0; i < r->nmuts; i++) {
		const struct osd_mut *m = &r->muts[i];

		enc_u8(e, m->kind);
		enc_u64(e, m->off);
		enc_u64(e, m->len);
		enc_blob(e, m->name, m->name_len);
		enc_blob(e, m->val, m->val_len);
	}
	enc_end(e, h);
}

int osd_rep_op_decode(struct dec *d, const void *data, size_t data_len,
		      struct osd_rep_op *r)
{
	const uint8_t *dp = data;
	size_t dleft = data_len;
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->epoch = dec_u64(&b);
	r->same_interval_since = dec_u64(&b);
	if (pglog_entry_decode(&b, &r->entry))
		goto out;
	r->nmuts = dec_count(&b, OSD_MUTS_MAX, 25);
	if (!b.err && r->nmuts) {
		r->muts = calloc(r->nmuts, sizeof(*r->muts));
		if (!r->muts)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < r->nmuts; i++) {
		struct osd_mut *m = &r->muts[i];
		size_t n = 0;

		m->kind = dec_u8(&b);
		m->off = dec_u64(&b);
		m->len = dec_u64(&b);
		m->name = dec_blob(&b, &n, PROTO_OMAP_KEY_MAX);
		m->name_len = (uint32_t)n;
		m->val = dec_blob(&b, &n, STORE_VALUE_MAX);
		m->val_len = (uint32_t)n;
		if (b.err)
			break;
		if (m->kind < MUT_TOUCH || m->kind > MUT_OMAP_CLEAR) {
			dec_fail(&b, -EBADMSG);
			break;
		}
		if (m->kind == MUT_WRITE) {
			if (m->len > dleft) {
				dec_fail(&b, -EBADMSG);
				break;
			}
			m->data = dp;
			dp += m->len;
			dleft -= m->len;
		}
	}
	if (!b.err && dleft)
		dec_fail(&b, -EBADMSG);
out:
	{
		int rc = dec_end(d, &b);

		if (rc)
			osd_rep_op_clear(r);
		return rc;
	}
}

void osd_rep_op_clear(struct osd_rep_op *r)
{
	free(r->muts);
	r->muts = NULL;
	r->nmuts = 0;
}

void osd_pg_query_encode(const struct osd_pg_query *q, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u8(e, q->kind);
	enc_u32(e, q->pool);
	enc_u32(e, q->pg);
	enc_u64(e, q->epoch);
	enc_u64(e, q->same_interval_since);
	enc_u64(e, q->last_epoch_started);
	enc_end(e, h);
}

int osd_pg_query_decode(struct dec *d, struct osd_pg_query *q)
{
	struct dec b;

	if (dec_msg_begin(d, 1, &b))
		return d->err;
	q->kind = dec_u8(&b);
	q->pool = dec_u32(&b);
	q->pg = dec_u32(&b);
	q->epoch = dec_u64(&b);
	q->same_interval_since = dec_u64(&b);
	q->last_epoch_started = dec_u64(&b);
	if (!b.err && (q->kind < PGQ_QUERY || q->kind > PGQ_STRAY))
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

void osd_pg_notify_encode(const struct osd_pg_notify *n, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u32(e, (uint32_t)n->rc);
	enc_u64(e, n->epoch);
	enc_u8(e, n->rc == 0);
	if (n->rc == 0)
		pg_info_encode(&n->info, e);
	enc_end(e, h);
}

int osd_pg_notify_decode(struct dec *d, struct osd_pg_notify *n)
{
	struct dec b;

	memset(n, 0, sizeof(*n));
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	n->rc = (int32_t)dec_u32(&b);
	n->epoch = dec_u64(&b);
	if (dec_u8(&b))
		pg_info_decode(&b, &n->info);
	int r = dec_end(d, &b);

	if (r)
		pg_info_clear(&n->info);
	return r;
}

void osd_ping_encode(const struct osd_ping *p, struct enc *e)
{
	size_t h = enc_begin(e, 3, 1);

	enc_u32(e, (uint32_t)p->from);
	enc_u64(e, p->epoch);
	enc_u64(e, p->stamp_ms);
	enc_u64(e, p->grant);
	enc_u64(e, p->grant_seq);
	enc_u32(e, p->kv_scale);
	enc_end(e, h);
}

int osd_ping_decode(struct dec *d, struct osd_ping *p)
{
	struct dec b;
	uint8_t v;

	if (dec_begin(d, 1, &b, &v))
		return d->err;
	p->from = (int32_t)dec_u32(&b);
	p->epoch = dec_u64(&b);
	p->stamp_ms = dec_u64(&b);
	p->grant = v >= 2 ? dec_u64(&b) : UINT64_MAX;	/* grants unknown: no limit */
	p->grant_seq = v >= 2 ? dec_u64(&b) : 0;
	p->kv_scale = v >= 3 ? dec_u32(&b) : 0;	/* 0: data bytes only */
	return dec_end(d, &b);
}

static void enc_pgv(struct enc *e, struct pg_version v)
{
	enc_u64(e, v.epoch);
	enc_u64(e, v.seq);
}

static struct pg_version dec_pgv(struct dec *d)
{
	struct pg_version v;

	v.epoch = dec_u64(d);
	v.seq = dec_u64(d);
	return v;
}

void osd_oi_encode(const struct osd_oi *oi, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u64(e, oi->version.epoch);
	enc_u64(e, oi->version.seq);
	enc_u64(e, oi->mtime_ns);
	enc_end(e, h);
}

int osd_oi_decode(const void *buf, size_t len, struct osd_oi *oi)
{
	struct dec d, b;
	int r;

	memset(oi, 0, sizeof(*oi));
	dec_init(&d, buf, len);
	if (dec_msg_begin(&d, 1, &b))
		return d.err;
	oi->version.epoch = dec_u64(&b);
	oi->version.seq = dec_u64(&b);
	if (dec_left(&b))
		oi->mtime_ns = dec_u64(&b);
	r = dec_end(&d, &b);
	if (r)
		memset(oi, 0, sizeof(*oi));
	return r;
}

void osd_pg_log_encode(const struct osd_pg_log *l, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u8(e, l->kind);
	enc_u32(e, (uint32_t)l->rc);
	enc_u32(e, l->pool);
	enc_u32(e, l->pg);
	enc_u64(e, l->epoch);
	enc_u64(e, l->same_interval_since);
	enc_pgv(e, l->from);
	enc_pgv(e, l->log_tail);
	enc_u64(e, l->last_epoch_started);
	enc_u32(e, l->nentries);
	for (uint32_t i = 0; i < l->nentries; i++)
		pglog_entry_encode(&l->entries[i], e);
	enc_end(e, h);
}

int osd_pg_log_decode(struct dec *d, struct osd_pg_log *l)
{
	struct dec b;
	int r;

	memset(l, 0, sizeof(*l));
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	l->kind = dec_u8(&b);
	l->rc = (int32_t)dec_u32(&b);
	l->pool = dec_u32(&b);
	l->pg = dec_u32(&b);
	l->epoch = dec_u64(&b);
	l->same_interval_since = dec_u64(&b);
	l->from = dec_pgv(&b);
	l->log_tail = dec_pgv(&b);
	l->last_epoch_started = dec_u64(&b);
	l->nentries = dec_count(&b, OSD_PG_LOG_ENTRIES_MAX, 40);
	if (!b.err && (l->kind < PGL_GET || l->kind > PGL_EXCLUDE))
		dec_fail(&b, -EBADMSG);
	if (!b.err && l->nentries) {
		l->entries = calloc(l->nentries, sizeof(*l->entries));
		if (!l->entries)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < l->nentries; i++) {
		if (pglog_entry_decode(&b, &l->entries[i]))
			break;
		if (i && l->entries[i].version.seq <= l->entries[i - 1].version.seq)
			dec_fail(&b, -EBADMSG);
	}
	r = dec_end(d, &b);
	if (r)
		osd_pg_log_clear(l);
	return r;
}

void osd_pg_log_clear(struct osd_pg_log *l)
{
	free(l->entries);
	l->entries = NULL;
	l->nentries = 0;
}

static void enc_kvs(struct enc *e, uint32_t n, const struct osd_rkv *kv)
{
	enc_u32(e, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_blob(e, kv[i].key, kv[i].klen);
		enc_blob(e, kv[i].val, kv[i].vlen);
	}
}

static struct osd_rkv *dec_kvs(struct dec *d, uint32_t *n, size_t kmax)
{
	struct osd_rkv *kv = NULL;

	*n = dec_count(d, OSD_PUSH_KV_MAX, 8);
	if (d->err || !*n)
		return NULL;
	kv = calloc(*n, sizeof(*kv));
	if (!kv) {
		dec_fail(d, -ENOMEM);
		return NULL;
	}
	for (uint32_t i = 0; i < *n && !d->err; i++) {
		size_t len = 0;

		kv[i].key = dec_blob(d, &len, kmax);
		kv[i].klen = (uint32_t)len;
		kv[i].val = dec_blob(d, &len, STORE_VALUE_MAX);
		kv[i].vlen = (uint32_t)len;
		if (!d->err && kv[i].klen == 0)
			dec_fail(d, -EBADMSG);
	}
	return kv;
}

void osd_pg_push_encode(const struct osd_pg_push *p, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u8(e, p->kind);
	enc_u8(e, p->flags);
	enc_u32(e, (uint32_t)p->rc);
	enc_u32(e, p->pool);
	enc_u32(e, p->pg);
	enc_u64(e, p->epoch);
	enc_u64(e, p->same_interval_since);
	enc_blob(e, p->oid, p->oid_len);
	enc_u64(e, p->size);
	enc_u64(e, p->off);
	enc_u64(e, p->len);
	enc_kvs(e, p->nattrs, p->attrs);
	enc_kvs(e, p->nomap, p->omap);
	enc_end(e, h);
}

int osd_pg_push_decode(struct dec *d, const void *data, size_t data_len,
		       struct osd_pg_push *p)
{
	struct dec b;
	size_t n = 0;
	int r;

	memset(p, 0, sizeof(*p));
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	p->kind = dec_u8(&b);
	p->flags = dec_u8(&b);
	p->rc = (int32_t)dec_u32(&b);
	p->pool = dec_u32(&b);
	p->pg = dec_u32(&b);
	p->epoch = dec_u64(&b);
	p->same_interval_since = dec_u64(&b);
	p->oid = dec_blob(&b, &n, STORE_NAME_MAX);
	p->oid_len = (uint32_t)n;
	p->size = dec_u64(&b);
	p->off = dec_u64(&b);
	p->len = dec_u64(&b);
	p->attrs = dec_kvs(&b, &p->nattrs, STORE_ATTR_NAME_MAX);
	p->omap = dec_kvs(&b, &p->nomap, STORE_OMAP_KEY_MAX);
	if (!b.err && (p->kind < PGP_PUSH || p->kind > PGP_PULL_REPLY || n == 0 ||
		       memchr(p->oid, 0, n)))
		dec_fail(&b, -EBADMSG);
	/* the chunk lies inside the object: off + len <= size, written so
	 * that a peer's off near 2^64 cannot wrap the sum */
	if (!b.err && p->kind != PGP_PULL &&
	    (p->len != data_len || p->off > p->size || p->len > p->size - p->off))
		dec_fail(&b, -EBADMSG);
	p->data = data;
	r = dec_end(d, &b);
	if (r)
		osd_pg_push_clear(p);
	return r;
}

void osd_pg_push_clear(struct osd_pg_push *p)
{
	free(p->attrs);
	free(p->omap);
	p->attrs = NULL;
	p->omap = NULL;
	p->nattrs = 0;
	p->nomap = 0;
}

void osd_pg_scan_encode(const struct osd_pg_scan *s, struct enc *e)
{
	size_t h = enc_begin(e, 1, 1);

	enc_u8(e, s->kind);
	enc_u8(e, s->end);
	enc_u32(e, (uint32_t)s->rc);
	enc_u32(e, s->pool);
	enc_u32(e, s->pg);
	enc_u64(e, s->epoch);
	enc_u64(e, s->same_interval_since);
	enc_blob(e, s->after, s->after_len);
	enc_u32(e, s->max);
	enc_u32(e, s->nobjs);
	for (uint32_t i = 0; i < s->nobjs; i++) {
		enc_blob(e, s->objs[i].oid, s->objs[i].oid_len);
		enc_pgv(e, s->objs[i].version);
	}
	enc_end(e, h);
}

/* Names are compared as the store orders them: memcmp, shorter first. */
static int name_cmp(const char *a, uint32_t alen, const char *b, uint32_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

int osd_pg_scan_decode(struct dec *d, struct osd_pg_scan *s)
{
	struct dec b;
	size_t n = 0;
	int r;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, 1, &b))
		return d->err;
	s->kind = dec_u8(&b);
	s->end = dec_u8(&b);
	s->rc = (int32_t)dec_u32(&b);
	s->pool = dec_u32(&b);
	s->pg = dec_u32(&b);
	s->epoch = dec_u64(&b);
	s->same_interval_since = dec_u64(&b);
	s->after = dec_blob(&b, &n, STORE_NAME_MAX);
	s->after_len = (uint32_t)n;
	s->max = dec_u32(&b);
	s->nobjs = dec_count(&b, OSD_PG_SCAN_MAX, 20);
	if (!b.err && (s->kind < PGS_SCAN || s->kind > PGS_SCAN_REPLY || s->end > 1 ||
		       (s->after_len && memchr(s->after, 0, s->after_len)) ||
		       (s->kind == PGS_SCAN && (s->max == 0 || s->max > OSD_PG_SCAN_MAX ||
						s->nobjs))))
		dec_fail(&b, -EBADMSG);
	if (!b.err && s->nobjs) {
		s->objs = calloc(s->nobjs, sizeof(*s->objs));
		if (!s->objs)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; !b.err && i < s->nobjs; i++) {
		struct osd_scan_obj *o = &s->objs[i];

		o->oid = dec_blob(&b, &n, STORE_NAME_MAX);
		o->oid_len = (uint32_t)n;
		o->version = dec_pgv(&b);
		if (b.err)
			break;
		if (!n || memchr(o->oid, 0, n) ||
		    (i && name_cmp(s->objs[i - 1].oid, s->objs[i - 1].oid_len, o->oid, n) >= 0))
			dec_fail(&b, -EBADMSG);
	}
	r = dec_end(d, &b);
	if (r)
		osd_pg_scan_clear(s);
	return r;
}

void osd_pg_scan_clear(struct osd_pg_scan *s)
{
	free(s->objs);
	s->objs = NULL;
	s->nobjs = 0;
}
