/*
 * scrub_proto.c - encodings of the deep scrub messages (scrub_proto.h).
 */
#include "scrub_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCRUB_V		1
#define SCRUB_COMPAT	1

const char *scrub_kind_name(uint8_t kind)
{
	switch (kind) {
	case SCRUB_MISSING: return "missing";
	case SCRUB_EXTRA: return "extra";
	case SCRUB_READ_ERROR: return "read error";
	case SCRUB_MISMATCH: return "differs";
	}
	return "unknown";
}

static int sc_begin(struct dec *d, struct dec *body)
{
	uint8_t v;

	return dec_begin(d, SCRUB_COMPAT, body, &v);
}

static int sc_end(struct dec *d, struct dec *body)
{
	int r = dec_end(d, body);

	return r ? r : dec_finish(d);
}

void osd_scrub_req_encode(const struct osd_scrub_req *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_u8(e, r->repair);
	enc_end(e, h);
}

int osd_scrub_req_decode(struct dec *d, struct osd_scrub_req *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (sc_begin(d, &b))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->repair = dec_u8(&b);
	if (r->repair > 1)
		dec_fail(&b, -EBADMSG);
	return sc_end(d, &b);
}

void osd_scrub_reply_encode(const struct osd_scrub_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_u64(e, r->epoch);
	enc_u32(e, r->objects);
	enc_u8(e, r->nmembers);
	for (uint8_t i = 0; i < r->nmembers && i < OSDMAP_SIZE_MAX; i++)
		enc_u32(e, (uint32_t)r->members[i]);
	enc_u32(e, r->nerrors);
	for (uint32_t i = 0; i < r->nerrors; i++) {
		enc_str(e, r->errors[i].oid);
		enc_u32(e, (uint32_t)r->errors[i].osd);
		enc_u8(e, r->errors[i].kind);
		enc_u8(e, r->errors[i].repaired);
	}
	enc_end(e, h);
}

void osd_scrub_reply_clear(struct osd_scrub_reply *r)
{
	free(r->errors);
	r->errors = NULL;
	r->nerrors = 0;
}

int osd_scrub_reply_decode(struct dec *d, struct osd_scrub_reply *r)
{
	struct dec b;
	uint32_t n;
	int ret;

	memset(r, 0, sizeof(*r));
	if (sc_begin(d, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	r->epoch = dec_u64(&b);
	r->objects = dec_u32(&b);
	r->nmembers = dec_u8(&b);
	if (r->nmembers > OSDMAP_SIZE_MAX)
		dec_fail(&b, -EBADMSG);
	for (uint8_t i = 0; i < r->nmembers && !b.err; i++)
		r->members[i] = (int32_t)dec_u32(&b);
	n = dec_count(&b, SCRUB_ERRORS_MAX, 4 + 4 + 1 + 1);
	if (n && !b.err) {
		r->errors = calloc(n, sizeof(*r->errors));
		if (!r->errors)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct scrub_error *s = &r->errors[i];

		dec_str(&b, s->oid, sizeof(s->oid) - 1);
		s->osd = (int32_t)dec_u32(&b);
		s->kind = dec_u8(&b);
		s->repaired = dec_u8(&b);
		if (s->kind < SCRUB_MISSING || s->kind > SCRUB_MISMATCH || s->repaired > 1)
			dec_fail(&b, -EBADMSG);
		r->nerrors = i + 1;
	}
	ret = sc_end(d, &b);
	if (ret < 0)
		osd_scrub_reply_clear(r);
	return ret;
}

void pg_scrub_req_encode(const struct pg_scrub_req *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_u64(e, r->epoch);
	enc_end(e, h);
}

int pg_scrub_req_decode(struct dec *d, struct pg_scrub_req *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (sc_begin(d, &b))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->epoch = dec_u64(&b);
	return sc_end(d, &b);
}

void pg_scrub_map_encode(const struct pg_scrub_map *m, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, (uint32_t)m->rc);
	enc_u32(e, m->n);
	for (uint32_t i = 0; i < m->n; i++) {
		const struct scrub_obj *o = &m->objs[i];

		enc_str(e, o->oid);
		enc_u64(e, o->size);
		enc_u32(e, o->data_crc);
		enc_u32(e, o->attr_crc);
		enc_u32(e, o->omap_crc);
		enc_u32(e, (uint32_t)o->err);
	}
	enc_end(e, h);
}

void pg_scrub_map_clear(struct pg_scrub_map *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		free(m->objs[i].oid);
	free(m->objs);
	m->objs = NULL;
	m->n = 0;
}

int pg_scrub_map_decode(struct dec *d, struct pg_scrub_map *m)
{
	struct dec b;
	uint32_t n;
	int ret;

	memset(m, 0, sizeof(*m));
	if (sc_begin(d, &b))
		return d->err;
	m->rc = (int32_t)dec_u32(&b);
	n = dec_count(&b, SCRUB_MAP_MAX, 4 + 1 + 8 + 16);
	if (n && !b.err) {
		m->objs = calloc(n, sizeof(*m->objs));
		if (!m->objs)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct scrub_obj *o = &m->objs[i];
		char name[PROTO_OID_MAX + 1];

		if (dec_str(&b, name, sizeof(name) - 1) < 0 || !name[0]) {
			dec_fail(&b, -EBADMSG);
			break;
		}
		o->oid = strdup(name);
		if (!o->oid) {
			dec_fail(&b, -ENOMEM);
			break;
		}
		m->n = i + 1;
		o->size = dec_u64(&b);
		o->data_crc = dec_u32(&b);
		o->attr_crc = dec_u32(&b);
		o->omap_crc = dec_u32(&b);
		o->err = (int32_t)dec_u32(&b);
		/* names in strictly increasing order: the merge relies on it */
		if (i && strcmp(m->objs[i - 1].oid, o->oid) >= 0)
			dec_fail(&b, -EBADMSG);
	}
	ret = sc_end(d, &b);
	if (ret < 0)
		pg_scrub_map_clear(m);
	return ret;
}
