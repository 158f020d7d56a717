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

int osd_muts_to_txn(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
		    uint64_t coll, const char *oid)
{
	return osd_muts_to_txn_ref(muts, n, txn, coll, oid, NULL, NULL, NULL);
}

bool osd_muts_any_ref(const struct osd_mut *muts, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (muts[i].kind == MUT_WRITE && store_write_ref_ok(muts[i].data, muts[i].off,
								      muts[i].len))
			return true;
	return false;
}

int osd_muts_to_txn_ref(const struct osd_mut *muts, uint32_t n, struct store_txn *txn,
			uint64_t coll, const char *oid, void (*hold)(void *arg),
			void (*release)(void *arg), void *arg)
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
				r = store_txn_write_ref(txn, coll, oid, m->off, m->data, m->len,
							0, release, arg);
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
	uint8_t v;

	memset(r, 0, sizeof(*r));
	if (dec_begin(d, 1, &b, &v))
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
	uint8_t v;

	if (dec_begin(d, 1, &b, &v))
		return d->err;
	q->kind = dec_u8(&b);
	q->pool = dec_u32(&b);
	q->pg = dec_u32(&b);
	q->epoch = dec_u64(&b);
	q->same_interval_since = dec_u64(&b);
	q->last_epoch_started = dec_u64(&b);
	if (!b.err && q->kind != PGQ_QUERY && q->kind != PGQ_ACTIVATE)
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
	uint8_t v;

	memset(n, 0, sizeof(*n));
	if (dec_begin(d, 1, &b, &v))
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
	size_t h = enc_begin(e, 1, 1);

	enc_u32(e, (uint32_t)p->from);
	enc_u64(e, p->epoch);
	enc_u64(e, p->stamp_ms);
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
	return dec_end(d, &b);
}
