/*
 * scrub_proto.c - encodings of the scrub and PG query messages
 * (scrub_proto.h).  Version 2 appends fields to version 1's: a version 1
 * reader skips them, and a version 1 message decodes with their defaults.
 */
#include "scrub_proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SCRUB_V		2
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

void osd_scrub_req_encode(const struct osd_scrub_req *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_u8(e, r->repair);
	enc_u8(e, r->deep);
	enc_end(e, h);
}

int osd_scrub_req_decode(struct dec *d, struct osd_scrub_req *r)
{
	struct dec b;
	uint8_t v;

	memset(r, 0, sizeof(*r));
	if (dec_begin(d, SCRUB_COMPAT, &b, &v))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->repair = dec_u8(&b);
	r->deep = v >= 2 ? dec_u8(&b) : 1;
	if (r->repair > 1 || r->deep > 1)
		dec_fail(&b, -EBADMSG);
	return dec_msg_end(d, &b);
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
	if (dec_msg_begin(d, SCRUB_COMPAT, &b))
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
	ret = dec_msg_end(d, &b);
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
	enc_u8(e, r->flags);
	enc_u64(e, r->last_scrub);
	enc_u64(e, r->last_deep);
	enc_end(e, h);
}

int pg_scrub_req_decode(struct dec *d, struct pg_scrub_req *r)
{
	struct dec b;
	uint8_t v;

	memset(r, 0, sizeof(*r));
	if (dec_begin(d, SCRUB_COMPAT, &b, &v))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->epoch = dec_u64(&b);
	if (v >= 2) {
		r->flags = dec_u8(&b);
		r->last_scrub = dec_u64(&b);
		r->last_deep = dec_u64(&b);
		if (r->flags & ~(PG_SCRUB_F_SHALLOW | PG_SCRUB_F_STAMP))
			dec_fail(&b, -EBADMSG);
	}
	return dec_msg_end(d, &b);
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
	if (dec_msg_begin(d, SCRUB_COMPAT, &b))
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
	ret = dec_msg_end(d, &b);
	if (ret < 0)
		pg_scrub_map_clear(m);
	return ret;
}

/* ---- scrub stamps (a PG meta object's value) ------------------------------ */

void scrub_stamps_encode(const struct scrub_stamps *s, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u64(e, s->last_scrub);
	enc_u64(e, s->last_deep);
	enc_end(e, h);
}

int scrub_stamps_decode(struct dec *d, struct scrub_stamps *s)
{
	struct dec b;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, SCRUB_COMPAT, &b))
		return d->err;
	s->last_scrub = dec_u64(&b);
	s->last_deep = dec_u64(&b);
	return dec_msg_end(d, &b);
}

/* ---- MT_OSD_PG_QUERY ------------------------------------------------------- */

void pg_query_req_encode(const struct pg_query_req *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);

	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_end(e, h);
}

int pg_query_req_decode(struct dec *d, struct pg_query_req *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, SCRUB_COMPAT, &b))
		return d->err;
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	return dec_msg_end(d, &b);
}

static void enc_ver(struct enc *e, struct pgq_version v)
{
	enc_u64(e, v.epoch);
	enc_u64(e, v.seq);
}

static struct pgq_version dec_ver(struct dec *d)
{
	struct pgq_version v;

	v.epoch = dec_u64(d);
	v.seq = dec_u64(d);
	return v;
}

static void enc_osds(struct enc *e, uint8_t n, const int32_t *v)
{
	enc_u8(e, n);
	for (uint8_t i = 0; i < n && i < OSDMAP_SIZE_MAX; i++)
		enc_u32(e, (uint32_t)v[i]);
}

static uint8_t dec_osds(struct dec *d, int32_t *v)
{
	uint8_t n = dec_u8(d);

	if (n > OSDMAP_SIZE_MAX) {
		dec_fail(d, -EBADMSG);
		return 0;
	}
	for (uint8_t i = 0; i < n; i++)
		v[i] = (int32_t)dec_u32(d);
	return d->err ? 0 : n;
}

void pg_query_reply_encode(const struct pg_query_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, SCRUB_V, SCRUB_COMPAT);
	uint32_t np = r->npeers < PGQ_PEERS_MAX ? r->npeers : PGQ_PEERS_MAX;
	uint32_t nt = r->ntargets < PGQ_TARGETS_MAX ? r->ntargets : PGQ_TARGETS_MAX;
	uint32_t nb = r->nbad < PGQ_BAD_MAX ? r->nbad : PGQ_BAD_MAX;

	enc_u32(e, (uint32_t)r->rc);
	enc_u64(e, r->epoch);
	enc_u32(e, r->pool);
	enc_u32(e, r->pg);
	enc_u32(e, r->state);
	enc_str(e, r->state_name);
	enc_u32(e, (uint32_t)r->primary);
	enc_osds(e, r->nup, r->up);
	enc_osds(e, r->nacting, r->acting);
	enc_u64(e, r->last_epoch_started);
	enc_u64(e, r->same_interval_since);
	enc_ver(e, r->last_update);
	enc_ver(e, r->last_complete);
	enc_ver(e, r->log_tail);
	enc_u32(e, r->log_entries);
	enc_u64(e, r->objects);
	enc_u64(e, r->bytes);
	enc_u32(e, np);
	for (uint32_t i = 0; i < np; i++) {
		const struct pgq_peer *p = &r->peers[i];

		enc_u32(e, (uint32_t)p->osd);
		enc_u8(e, p->flags);
		enc_ver(e, p->last_update);
		enc_ver(e, p->last_complete);
		enc_u64(e, p->last_epoch_started);
	}
	enc_u32(e, nt);
	for (uint32_t i = 0; i < nt; i++) {
		const struct pgq_target *t = &r->targets[i];

		enc_u32(e, (uint32_t)t->osd);
		enc_u8(e, t->kind);
		enc_u8(e, t->complete);
		enc_u64(e, t->todo);
		enc_u64(e, t->done);
		enc_str(e, t->pos);
	}
	enc_u64(e, r->missing);
	enc_u64(e, r->stamps.last_scrub);
	enc_u64(e, r->stamps.last_deep);
	enc_u8(e, r->scrubbing);
	enc_u32(e, r->scrub_errors);
	enc_u32(e, nb);
	for (uint32_t i = 0; i < nb; i++) {
		enc_str(e, r->bad[i].oid);
		enc_u32(e, (uint32_t)r->bad[i].osd);
		enc_u8(e, r->bad[i].kind);
	}
	enc_end(e, h);
}

int pg_query_reply_decode(struct dec *d, struct pg_query_reply *r)
{
	struct dec b;
	uint32_t n;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, SCRUB_COMPAT, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	r->epoch = dec_u64(&b);
	r->pool = dec_u32(&b);
	r->pg = dec_u32(&b);
	r->state = dec_u32(&b);
	dec_str(&b, r->state_name, sizeof(r->state_name) - 1);
	r->primary = (int32_t)dec_u32(&b);
	r->nup = dec_osds(&b, r->up);
	r->nacting = dec_osds(&b, r->acting);
	r->last_epoch_started = dec_u64(&b);
	r->same_interval_since = dec_u64(&b);
	r->last_update = dec_ver(&b);
	r->last_complete = dec_ver(&b);
	r->log_tail = dec_ver(&b);
	r->log_entries = dec_u32(&b);
	r->objects = dec_u64(&b);
	r->bytes = dec_u64(&b);
	n = dec_count(&b, PGQ_PEERS_MAX, 4 + 1 + 32 + 8);
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct pgq_peer *p = &r->peers[i];

		p->osd = (int32_t)dec_u32(&b);
		p->flags = dec_u8(&b);
		p->last_update = dec_ver(&b);
		p->last_complete = dec_ver(&b);
		p->last_epoch_started = dec_u64(&b);
		if (p->flags & ~(PGQ_PEER_REPLIED | PGQ_PEER_HAS_PG))
			dec_fail(&b, -EBADMSG);
		r->npeers = i + 1;
	}
	n = dec_count(&b, PGQ_TARGETS_MAX, 4 + 1 + 1 + 16 + 4);
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct pgq_target *t = &r->targets[i];

		t->osd = (int32_t)dec_u32(&b);
		t->kind = dec_u8(&b);
		t->complete = dec_u8(&b);
		t->todo = dec_u64(&b);
		t->done = dec_u64(&b);
		dec_str(&b, t->pos, sizeof(t->pos) - 1);
		if (t->kind < PGQ_RECOVERY || t->kind > PGQ_BACKFILL || t->complete > 1)
			dec_fail(&b, -EBADMSG);
		r->ntargets = i + 1;
	}
	r->missing = dec_u64(&b);
	r->stamps.last_scrub = dec_u64(&b);
	r->stamps.last_deep = dec_u64(&b);
	r->scrubbing = dec_u8(&b);
	r->scrub_errors = dec_u32(&b);
	if (r->scrubbing > 2)
		dec_fail(&b, -EBADMSG);
	n = dec_count(&b, PGQ_BAD_MAX, 4 + 4 + 1);
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct scrub_error *s = &r->bad[i];

		dec_str(&b, s->oid, sizeof(s->oid) - 1);
		s->osd = (int32_t)dec_u32(&b);
		s->kind = dec_u8(&b);
		if (s->kind < SCRUB_MISSING || s->kind > SCRUB_MISMATCH)
			dec_fail(&b, -EBADMSG);
		r->nbad = i + 1;
	}
	if (b.err) {
		r->npeers = r->ntargets = r->nbad = 0;
	}
	return dec_msg_end(d, &b);
}
