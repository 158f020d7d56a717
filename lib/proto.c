/*
 * proto.c - encodings of the messages in proto.h.
 *
 * Each front is one versioned section (encode.h): version 1, compat 1.
 * Fields appended later go at the end of the section, where an older
 * decoder skips them.  Decoders take the message's buffer, check every
 * length against the caps of proto.h and point into the buffer rather
 * than copy, except where a field outlives the message by contract
 * (command text, beacon arrays, decoded maps).
 */
#include "proto.h"

#include "encode.h"
#include "osdmap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROTO_V 1
#define PROTO_COMPAT 1
#define BEACON_PGS_MAX (1u << 20)
#define BEACON_SLOW_MAX 1024u
#define BEACON_V 5	/* 2: the PGs' recovery and scrub figures; 3: last_epoch_clean;
			 * 4: the sender's wall clock; 5: its I/O counters */

/* A fixed-size string field: a blob of at most cap-1 bytes, no NUL. */
static void get_fixed_str(struct dec *d, char *buf, size_t cap)
{
	if (dec_str(d, buf, cap - 1) < 0)
		buf[0] = '\0';
}

/* ---- monitor ------------------------------------------------------- */

void mon_subscribe_encode(const struct mon_subscribe *s, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u64(e, s->have);
	enc_end(e, h);
}

int mon_subscribe_decode(struct dec *d, struct mon_subscribe *s)
{
	struct dec b;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	s->have = dec_u64(&b);
	return dec_msg_end(d, &b);
}

void mon_map_msg_encode(const struct osdmap *full, const struct osdmap_inc *incs,
			uint32_t ninc, uint64_t first, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u8(e, full != NULL);
	if (full)
		osdmap_encode(full, e);
	enc_u32(e, ninc);
	for (uint32_t i = 0; i < ninc; i++)
		osdmap_inc_encode(&incs[i], e);
	enc_u64(e, first);		/* appended in 0.3 */
	enc_end(e, h);
}

void mon_map_msg_clear(struct mon_map_msg *m)
{
	osdmap_free(m->full);
	for (uint32_t i = 0; i < m->ninc; i++)
		osdmap_inc_clear(&m->incs[i]);
	free(m->incs);
	memset(m, 0, sizeof(*m));
}

int mon_map_msg_decode(struct dec *d, struct mon_map_msg *out)
{
	struct dec b;
	uint8_t has_full;
	uint32_t n;
	int r;

	memset(out, 0, sizeof(*out));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	has_full = dec_u8(&b);
	if (has_full > 1)
		dec_fail(&b, -EBADMSG);
	if (has_full && !b.err) {
		r = osdmap_decode(&b, &out->full);
		if (r < 0) {
			dec_fail(&b, r);
			goto out_fail;
		}
	}
	/* an incremental is at least a section header */
	n = dec_count(&b, PROTO_MAPS_MAX, 6);
	if (b.err)
		goto out_fail;
	if (n) {
		out->incs = calloc(n, sizeof(*out->incs));
		if (!out->incs) {
			dec_fail(&b, -ENOMEM);
			goto out_fail;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		out->ninc = i + 1;
		r = osdmap_inc_decode(&b, &out->incs[i]);
		if (r < 0) {
			dec_fail(&b, r);
			goto out_fail;
		}
	}
	if (dec_left(&b) > 0)		/* appended in 0.3: the oldest epoch kept */
		out->first = dec_u64(&b);
	r = dec_msg_end(d, &b);
	if (r < 0)
		goto out_clear;
	return 0;

out_fail:
	r = dec_end(d, &b);
	if (!r)
		r = -EBADMSG;
out_clear:
	mon_map_msg_clear(out);
	return r;
}

void mon_command_encode(const char *json, const struct mon_reqid *id, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_str(e, json);
	enc_u64(e, id ? id->client : 0);
	enc_u64(e, id ? id->seq : 0);
	enc_end(e, h);
}

int mon_command_decode(struct dec *d, char **json, struct mon_reqid *id)
{
	struct mon_reqid rid = { 0, 0 };
	struct dec b;
	const char *p;
	size_t n;
	int r;

	*json = NULL;
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	p = dec_blob(&b, &n, PROTO_COMMAND_MAX);
	if (p && memchr(p, '\0', n))
		dec_fail(&b, -EBADMSG);
	if (dec_left(&b) > 0) {		/* appended in 0.2: the request id */
		rid.client = dec_u64(&b);
		rid.seq = dec_u64(&b);
	}
	r = dec_msg_end(d, &b);
	if (r < 0)
		return r;
	*json = malloc(n + 1);
	if (!*json)
		return -ENOMEM;
	memcpy(*json, p ? p : "", n);
	(*json)[n] = '\0';
	if (id)
		*id = rid;
	return 0;
}

/* ---- MONMAP ---- */

static bool monmap_name_ok(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-'))
			return false;
	return true;
}

void monmap_msg_encode(const struct monmap_msg *m, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_raw(e, m->fsid, 16);
	enc_u64(e, m->incarnation);
	enc_u64(e, m->epoch);
	enc_u64(e, m->term);
	enc_u32(e, (uint32_t)m->leader);
	enc_u32(e, (uint32_t)m->self);
	enc_u32(e, m->nmons);
	for (uint32_t i = 0; i < m->nmons && i < MONMAP_MONS_MAX; i++) {
		enc_str(e, m->mons[i].name);
		enc_str(e, m->mons[i].addr);
		enc_u64(e, m->mons[i].id);
		enc_u8(e, m->mons[i].voter ? 1 : 0);
	}
	enc_end(e, h);
}

int monmap_msg_decode(struct dec *d, struct monmap_msg *m)
{
	const void *fsid;
	struct dec b;
	uint8_t voter;

	memset(m, 0, sizeof(*m));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	fsid = dec_raw(&b, 16);
	if (fsid)
		memcpy(m->fsid, fsid, 16);
	m->incarnation = dec_u64(&b);
	m->epoch = dec_u64(&b);
	m->term = dec_u64(&b);
	m->leader = (int32_t)dec_u32(&b);
	m->self = (int32_t)dec_u32(&b);
	m->nmons = dec_count(&b, MONMAP_MONS_MAX, 14);
	for (uint32_t i = 0; i < m->nmons && !b.err; i++) {
		struct monmap_member *mm = &m->mons[i];

		if (dec_str(&b, mm->name, MONMAP_NAME_MAX) < 0 ||
		    dec_str(&b, mm->addr, OSDMAP_ADDR_MAX) < 0)
			break;
		mm->id = dec_u64(&b);
		voter = dec_u8(&b);
		if (b.err)
			break;
		if (!monmap_name_ok(mm->name) || !mm->addr[0] || mm->id == 0 || voter > 1)
			dec_fail(&b, -EBADMSG);
		mm->voter = voter == 1;
		for (uint32_t j = 0; j < i; j++)
			if (m->mons[j].id == mm->id || strcmp(m->mons[j].name, mm->name) == 0)
				dec_fail(&b, -EBADMSG);
	}
	if (!b.err && (m->nmons == 0 || m->incarnation == 0 || m->epoch == 0 ||
		       m->leader < -1 || m->leader >= (int32_t)m->nmons ||
		       m->self < -1 || m->self >= (int32_t)m->nmons))
		dec_fail(&b, -EBADMSG);
	return dec_msg_end(d, &b);
}

void mon_command_reply_encode(const struct mon_command_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_str(e, r->status ? r->status : "");
	enc_blob(e, r->out, r->out ? r->out_len : 0);
	enc_end(e, h);
}

int mon_command_reply_decode(struct dec *d, struct mon_command_reply *r, char **status)
{
	struct dec b;
	const char *s;
	size_t n, outn = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	*status = NULL;
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	s = dec_blob(&b, &n, 64 * 1024);
	if (s && memchr(s, '\0', n))
		dec_fail(&b, -EBADMSG);
	r->out = dec_blob(&b, &outn, UINT32_MAX);
	r->out_len = (uint32_t)outn;
	rc = dec_msg_end(d, &b);
	if (rc < 0)
		return rc;
	*status = malloc(n + 1);
	if (!*status)
		return -ENOMEM;
	memcpy(*status, s ? s : "", n);
	(*status)[n] = '\0';
	r->status = *status;
	return 0;
}

void osd_new_req_encode(const struct osd_new_req *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_raw(e, r->uuid, 16);
	enc_u32(e, (uint32_t)r->want_id);
	enc_end(e, h);
}

int osd_new_req_decode(struct dec *d, struct osd_new_req *r)
{
	struct dec b;
	const void *p;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	p = dec_raw(&b, 16);
	if (p)
		memcpy(r->uuid, p, 16);
	r->want_id = (int32_t)dec_u32(&b);
	return dec_msg_end(d, &b);
}

void osd_new_reply_encode(const struct osd_new_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_u32(e, (uint32_t)r->id);
	enc_raw(e, r->fsid, 16);
	enc_end(e, h);
}

int osd_new_reply_decode(struct dec *d, struct osd_new_reply *r)
{
	struct dec b;
	const void *p;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	r->id = (int32_t)dec_u32(&b);
	p = dec_raw(&b, 16);
	if (p)
		memcpy(r->fsid, p, 16);
	return dec_msg_end(d, &b);
}

void osd_boot_req_encode(const struct osd_boot_req *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->id);
	enc_raw(e, r->uuid, 16);
	enc_str(e, r->addr);
	enc_str(e, r->host);
	enc_u32(e, r->weight);
	enc_u64(e, r->features);
	enc_u64(e, r->have_epoch);
	enc_end(e, h);
}

int osd_boot_req_decode(struct dec *d, struct osd_boot_req *r)
{
	struct dec b;
	const void *p;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->id = (int32_t)dec_u32(&b);
	p = dec_raw(&b, 16);
	if (p)
		memcpy(r->uuid, p, 16);
	get_fixed_str(&b, r->addr, sizeof(r->addr));
	get_fixed_str(&b, r->host, sizeof(r->host));
	r->weight = dec_u32(&b);
	r->features = dec_u64(&b);
	r->have_epoch = dec_u64(&b);
	return dec_msg_end(d, &b);
}

void osd_boot_reply_encode(const struct osd_boot_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_u64(e, r->epoch);
	enc_str(e, r->status);
	enc_end(e, h);
}

int osd_boot_reply_decode(struct dec *d, struct osd_boot_reply *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	r->epoch = dec_u64(&b);
	get_fixed_str(&b, r->status, sizeof(r->status));
	return dec_msg_end(d, &b);
}

/* ---- PG states ------------------------------------------------------ */

static const char *const pg_state_names[] = {
	"creating", "peering", "active", "clean", "degraded", "undersized",
	"remapped", "recovering", "backfilling", "down", "incomplete",
	"stale", "inconsistent", "inactive",
};

char *pg_state_str(uint32_t state, char *buf, size_t len)
{
	size_t pos = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(pg_state_names) / sizeof(pg_state_names[0]); i++) {
		int n;

		if (!(state & (1u << i)))
			continue;
		n = snprintf(buf + pos, len - pos, "%s%s", pos ? "+" : "",
			     pg_state_names[i]);
		if (n < 0 || (size_t)n >= len - pos)
			break;
		pos += (size_t)n;
	}
	if (!pos)
		snprintf(buf, len, "unknown");
	return buf;
}

/* ---- beacon, failure, stopping ------------------------------------- */

void osd_beacon_encode(const struct osd_beacon *bc, struct enc *e)
{
	size_t h = enc_begin(e, BEACON_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)bc->id);
	enc_u64(e, bc->epoch);
	enc_u64(e, bc->total);
	enc_u64(e, bc->used);
	enc_u64(e, bc->avail);
	enc_u64(e, bc->store_errors);
	enc_u32(e, bc->npg);
	for (uint32_t i = 0; i < bc->npg; i++) {
		const struct pg_stat *s = &bc->pgs[i];

		enc_u32(e, s->pool);
		enc_u32(e, s->pg);
		enc_u32(e, s->state);
		enc_u64(e, s->objects);
		enc_u64(e, s->bytes);
		enc_u64(e, s->last_update_epoch);
		enc_u64(e, s->last_update_seq);
		enc_u8(e, s->nacting);
		for (uint8_t j = 0; j < s->nacting && j < 10; j++)
			enc_u32(e, (uint32_t)s->acting[j]);
	}
	enc_u32(e, bc->nslow);
	for (uint32_t i = 0; i < bc->nslow; i++) {
		const struct slow_op *s = &bc->slow[i];

		enc_u32(e, s->pool);
		enc_u32(e, s->pg);
		enc_u32(e, s->age_ms);
		enc_str(e, s->desc);
	}
	/* v2: each PG's recovery and scrub figures, in the same order */
	enc_u32(e, bc->npg);
	for (uint32_t i = 0; i < bc->npg; i++) {
		const struct pg_stat *s = &bc->pgs[i];
		uint8_t nbad = s->nbad < PG_STAT_BAD_MAX ? s->nbad : PG_STAT_BAD_MAX;

		enc_u64(e, s->degraded);
		enc_u64(e, s->misplaced);
		enc_u64(e, s->unfound);
		enc_u64(e, s->recovered);
		enc_u64(e, s->last_epoch_started);
		enc_u64(e, s->last_scrub);
		enc_u64(e, s->last_deep_scrub);
		enc_u32(e, s->scrub_errors);
		enc_u8(e, nbad);
		for (uint8_t j = 0; j < nbad; j++) {
			enc_u32(e, (uint32_t)s->bad[j].osd);
			enc_u8(e, s->bad[j].kind);
			enc_str(e, s->bad[j].oid);
		}
	}
	/* v3: each PG's last_epoch_clean, in the same order */
	enc_u32(e, bc->npg);
	for (uint32_t i = 0; i < bc->npg; i++)
		enc_u64(e, bc->pgs[i].last_epoch_clean);
	/* v4 */
	enc_u64(e, bc->wall_ms);
	/* v5 */
	enc_u64(e, bc->io.read_ops);
	enc_u64(e, bc->io.write_ops);
	enc_u64(e, bc->io.read_bytes);
	enc_u64(e, bc->io.write_bytes);
	enc_u64(e, bc->io.recovery_objects);
	enc_u64(e, bc->io.recovery_bytes);
	enc_end(e, h);
}

void osd_beacon_clear(struct osd_beacon *b)
{
	free(b->pgs);
	free(b->slow);
	b->pgs = NULL;
	b->slow = NULL;
	b->npg = 0;
	b->nslow = 0;
}

int osd_beacon_decode(struct dec *d, struct osd_beacon *bc)
{
	struct dec b;
	uint32_t n;
	uint8_t v;
	int r;

	memset(bc, 0, sizeof(*bc));
	if (dec_begin(d, PROTO_COMPAT, &b, &v))
		return d->err;
	bc->id = (int32_t)dec_u32(&b);
	bc->epoch = dec_u64(&b);
	bc->total = dec_u64(&b);
	bc->used = dec_u64(&b);
	bc->avail = dec_u64(&b);
	bc->store_errors = dec_u64(&b);
	n = dec_count(&b, BEACON_PGS_MAX, 45);
	if (n && !b.err) {
		bc->pgs = calloc(n, sizeof(*bc->pgs));
		if (!bc->pgs)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct pg_stat *s = &bc->pgs[i];

		s->pool = dec_u32(&b);
		s->pg = dec_u32(&b);
		s->state = dec_u32(&b);
		s->objects = dec_u64(&b);
		s->bytes = dec_u64(&b);
		s->last_update_epoch = dec_u64(&b);
		s->last_update_seq = dec_u64(&b);
		s->nacting = dec_u8(&b);
		if (s->nacting > 10)
			dec_fail(&b, -EBADMSG);
		for (uint8_t j = 0; j < s->nacting && !b.err; j++)
			s->acting[j] = (int32_t)dec_u32(&b);
		bc->npg = i + 1;
	}
	n = dec_count(&b, BEACON_SLOW_MAX, 16);
	if (n && !b.err) {
		bc->slow = calloc(n, sizeof(*bc->slow));
		if (!bc->slow)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; i < n && !b.err; i++) {
		struct slow_op *s = &bc->slow[i];

		s->pool = dec_u32(&b);
		s->pg = dec_u32(&b);
		s->age_ms = dec_u32(&b);
		get_fixed_str(&b, s->desc, sizeof(s->desc));
		bc->nslow = i + 1;
	}
	if (v >= 2 && !b.err) {
		n = dec_u32(&b);
		if (n != bc->npg)
			dec_fail(&b, -EBADMSG);
		for (uint32_t i = 0; i < bc->npg && !b.err; i++) {
			struct pg_stat *s = &bc->pgs[i];

			s->degraded = dec_u64(&b);
			s->misplaced = dec_u64(&b);
			s->unfound = dec_u64(&b);
			s->recovered = dec_u64(&b);
			s->last_epoch_started = dec_u64(&b);
			s->last_scrub = dec_u64(&b);
			s->last_deep_scrub = dec_u64(&b);
			s->scrub_errors = dec_u32(&b);
			s->nbad = dec_u8(&b);
			if (s->nbad > PG_STAT_BAD_MAX)
				dec_fail(&b, -EBADMSG);
			for (uint8_t j = 0; j < s->nbad && !b.err; j++) {
				s->bad[j].osd = (int32_t)dec_u32(&b);
				s->bad[j].kind = dec_u8(&b);
				if (dec_str(&b, s->bad[j].oid, sizeof(s->bad[j].oid) - 1) < 0 ||
				    s->bad[j].kind < 1 || s->bad[j].kind > 4)
					dec_fail(&b, -EBADMSG);
			}
		}
	}
	if (v >= 3 && !b.err) {
		n = dec_u32(&b);
		if (n != bc->npg)
			dec_fail(&b, -EBADMSG);
		for (uint32_t i = 0; i < bc->npg && !b.err; i++)
			bc->pgs[i].last_epoch_clean = dec_u64(&b);
	}
	if (v >= 4 && !b.err)
		bc->wall_ms = dec_u64(&b);
	if (v >= 5 && !b.err) {
		bc->io.read_ops = dec_u64(&b);
		bc->io.write_ops = dec_u64(&b);
		bc->io.read_bytes = dec_u64(&b);
		bc->io.write_bytes = dec_u64(&b);
		bc->io.recovery_objects = dec_u64(&b);
		bc->io.recovery_bytes = dec_u64(&b);
	}
	r = dec_msg_end(d, &b);
	if (r < 0)
		osd_beacon_clear(bc);
	return r;
}

void osd_failure_encode(const struct osd_failure *f, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)f->reporter);
	enc_u32(e, (uint32_t)f->target);
	enc_u64(e, f->epoch);
	enc_u32(e, f->failed_for_ms);
	enc_u8(e, f->immediate);
	enc_end(e, h);
}

int osd_failure_decode(struct dec *d, struct osd_failure *f)
{
	struct dec b;

	memset(f, 0, sizeof(*f));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	f->reporter = (int32_t)dec_u32(&b);
	f->target = (int32_t)dec_u32(&b);
	f->epoch = dec_u64(&b);
	f->failed_for_ms = dec_u32(&b);
	f->immediate = dec_u8(&b);
	return dec_msg_end(d, &b);
}

void osd_stopping_encode(const struct osd_stopping *s, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)s->id);
	enc_u64(e, s->epoch);
	enc_end(e, h);
}

int osd_stopping_decode(struct dec *d, struct osd_stopping *s)
{
	struct dec b;

	memset(s, 0, sizeof(*s));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	s->id = (int32_t)dec_u32(&b);
	s->epoch = dec_u64(&b);
	return dec_msg_end(d, &b);
}

void osd_pg_temp_req_encode(const struct osd_pg_temp_req *q, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)q->from);
	enc_u64(e, q->epoch);
	enc_u32(e, q->pool);
	enc_u32(e, q->pg);
	enc_u8(e, q->n);
	for (uint8_t i = 0; i < q->n && i < OSDMAP_SIZE_MAX; i++)
		enc_u32(e, (uint32_t)q->osds[i]);
	enc_end(e, h);
}

int osd_pg_temp_req_decode(struct dec *d, struct osd_pg_temp_req *q)
{
	struct dec b;

	memset(q, 0, sizeof(*q));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	q->from = (int32_t)dec_u32(&b);
	q->epoch = dec_u64(&b);
	q->pool = dec_u32(&b);
	q->pg = dec_u32(&b);
	q->n = dec_u8(&b);
	if (!b.err && q->n > OSDMAP_SIZE_MAX)
		dec_fail(&b, -EBADMSG);
	for (uint8_t i = 0; !b.err && i < q->n; i++) {
		q->osds[i] = (int32_t)dec_u32(&b);
		if (!b.err && (q->osds[i] < 0 || q->osds[i] >= OSDMAP_OSD_MAX))
			dec_fail(&b, -EBADMSG);
	}
	return dec_msg_end(d, &b);
}

void rc_reply_encode(const struct rc_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)r->rc);
	enc_u64(e, r->epoch);
	enc_end(e, h);
}

int rc_reply_decode(struct dec *d, struct rc_reply *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->rc = (int32_t)dec_u32(&b);
	r->epoch = dec_u64(&b);
	return dec_msg_end(d, &b);
}

void mds_beacon_encode(const struct mds_beacon *b, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u64(e, b->instance);
	enc_str(e, b->name);
	enc_str(e, b->addr);
	enc_u32(e, b->meta_pool);
	enc_u32(e, b->data_pool);
	enc_u32(e, b->flags);
	enc_u8(e, b->state);
	enc_u64(e, b->epoch);
	enc_u64(e, b->jseg);
	enc_u64(e, b->jseq);
	enc_u64(e, b->wall_ms);
	enc_end(e, h);
}

int mds_beacon_decode(struct dec *d, struct mds_beacon *b)
{
	struct dec body;
	size_t n;

	memset(b, 0, sizeof(*b));
	if (dec_msg_begin(d, PROTO_COMPAT, &body))
		return d->err;
	b->instance = dec_u64(&body);
	dec_str(&body, b->name, OSDMAP_MDS_NAME_MAX);
	dec_str(&body, b->addr, OSDMAP_ADDR_MAX);
	b->meta_pool = dec_u32(&body);
	b->data_pool = dec_u32(&body);
	b->flags = dec_u32(&body);
	b->state = dec_u8(&body);
	b->epoch = dec_u64(&body);
	if (dec_left(&body)) {	/* absent from an older MDS's beacon */
		b->jseg = dec_u64(&body);
		b->jseq = dec_u64(&body);
	}
	if (dec_left(&body))	/* absent from an older MDS's beacon */
		b->wall_ms = dec_u64(&body);
	n = strlen(b->name);
	if (!body.err) {
		bool ok = b->instance && n && *b->addr && b->state >= MDS_BEACON_STANDBY &&
			  b->state <= MDS_BEACON_ACTIVE;

		for (size_t i = 0; ok && i < n; i++) {
			char c = b->name[i];

			ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '_' || c == '-';
		}
		if (!ok)
			dec_fail(&body, -EBADMSG);
	}
	return dec_msg_end(d, &body);
}

void osd_lease_encode(const struct osd_lease *l, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u32(e, (uint32_t)l->rc);
	enc_u64(e, l->epoch);
	enc_u32(e, l->lease_ms);
	enc_end(e, h);
}

int osd_lease_decode(struct dec *d, struct osd_lease *l)
{
	struct dec b;

	memset(l, 0, sizeof(*l));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	l->rc = (int32_t)dec_u32(&b);
	l->epoch = dec_u64(&b);
	l->lease_ms = dec_u32(&b);
	return dec_msg_end(d, &b);
}

/* ---- OSD_OP ------------------------------------------------------------ */

bool osd_op_is_write(uint16_t code)
{
	switch (code) {
	case OSD_OP_WRITE:
	case OSD_OP_WRITE_FULL:
	case OSD_OP_APPEND:
	case OSD_OP_TRUNCATE:
	case OSD_OP_ZERO:
	case OSD_OP_REMOVE:
	case OSD_OP_CREATE:
	case OSD_OP_SETXATTR:
	case OSD_OP_RMXATTR:
	case OSD_OP_OMAP_SET:
	case OSD_OP_OMAP_RM:
	case OSD_OP_OMAP_CLEAR:
		return true;
	default:
		return false;
	}
}

static bool opcode_known(uint16_t code)
{
	return code >= OSD_OP_READ && code <= OSD_OP_LIST;
}

int osd_op_req_encode(const struct osd_op_req *req, struct enc *e,
		      const void **data, size_t *data_len, bool *data_owned)
{
	size_t h, total = 0;
	uint32_t with_data = 0, last = 0;

	*data = NULL;
	*data_len = 0;
	*data_owned = false;
	if (req->nops > PROTO_OPS_MAX || req->nsnaps > PROTO_SNAPS_MAX)
		return -E2BIG;
	h = enc_begin(e, PROTO_V, PROTO_COMPAT);
	enc_u64(e, req->reqid.client);
	enc_u64(e, req->reqid.tid);
	enc_u64(e, req->epoch);
	enc_u32(e, req->pool);
	enc_u32(e, req->pg);
	enc_u32(e, req->flags);
	enc_blob(e, req->oid, req->oid_len);
	enc_u64(e, req->snap_seq);
	enc_u32(e, req->nsnaps);
	for (uint32_t i = 0; i < req->nsnaps; i++)
		enc_u64(e, req->snaps[i]);
	enc_u32(e, req->nops);
	for (uint32_t i = 0; i < req->nops; i++) {
		const struct osd_subop *op = &req->ops[i];
		size_t oh = enc_begin(e, PROTO_V, PROTO_COMPAT);

		enc_u16(e, op->code);
		enc_u16(e, op->flags);
		enc_u64(e, op->off);
		enc_u64(e, op->len);
		enc_blob(e, op->name, op->name ? op->name_len : 0);
		enc_blob(e, op->val, op->val ? op->val_len : 0);
		enc_u32(e, op->nkv);
		for (uint32_t k = 0; k < op->nkv; k++) {
			enc_blob(e, op->kv[k].key, op->kv[k].klen);
			enc_u8(e, op->kv[k].val != NULL);
			if (op->kv[k].val)
				enc_blob(e, op->kv[k].val, op->kv[k].vlen);
		}
		enc_u32(e, op->data_len);
		enc_end(e, oh);
		if (op->data_len) {
			with_data++;
			last = i;
			total += op->data_len;
		}
	}
	enc_end(e, h);
	if (e->err)
		return e->err;
	if (with_data == 1) {
		*data = req->ops[last].data;
		*data_len = total;
	} else if (with_data > 1) {
		uint8_t *buf = malloc(total);
		size_t pos = 0;

		if (!buf)
			return -ENOMEM;
		for (uint32_t i = 0; i < req->nops; i++) {
			if (!req->ops[i].data_len)
				continue;
			memcpy(buf + pos, req->ops[i].data, req->ops[i].data_len);
			pos += req->ops[i].data_len;
		}
		*data = buf;
		*data_len = total;
		*data_owned = true;
	}
	return 0;
}

void osd_op_req_clear(struct osd_op_req *req)
{
	if (req->ops) {
		for (uint32_t i = 0; i < req->nops; i++)
			free(req->ops[i].kv);
	}
	free(req->ops);
	free((void *)req->snaps);
	memset(req, 0, sizeof(*req));
}

/* One sub-op's section; *kv_total counts entries across the whole op. */
static void subop_decode(struct dec *d, struct osd_subop *op, uint32_t *kv_total)
{
	struct dec b;
	size_t n;
	uint32_t nkv;

	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return;
	op->code = dec_u16(&b);
	op->flags = dec_u16(&b);
	op->off = dec_u64(&b);
	op->len = dec_u64(&b);
	op->name = dec_blob(&b, &n, PROTO_OMAP_KEY_MAX);
	op->name_len = (uint32_t)n;
	if (!n)
		op->name = NULL;
	op->val = dec_blob(&b, &n, UINT32_MAX);
	op->val_len = (uint32_t)n;
	nkv = dec_count(&b, PROTO_KV_MAX, 5);
	if (!b.err && *kv_total + nkv > PROTO_KV_MAX)
		dec_fail(&b, -E2BIG);
	if (nkv && !b.err) {
		op->kv = calloc(nkv, sizeof(*op->kv));
		if (!op->kv)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t k = 0; k < nkv && !b.err; k++) {
		struct osd_kv *kv = &op->kv[k];
		uint8_t has;

		kv->key = dec_blob(&b, &n, PROTO_OMAP_KEY_MAX);
		kv->klen = (uint32_t)n;
		has = dec_u8(&b);
		if (has > 1)
			dec_fail(&b, -EBADMSG);
		if (has) {
			kv->val = dec_blob(&b, &n, UINT32_MAX);
			kv->vlen = (uint32_t)n;
			if (!kv->val && !b.err)
				kv->val = "";	/* present but empty */
		}
		op->nkv = k + 1;
	}
	*kv_total += op->nkv;
	op->data_len = dec_u32(&b);
	if (!b.err && !opcode_known(op->code))
		dec_fail(&b, -EOPNOTSUPP);
	dec_end(d, &b);
}

int osd_op_req_decode(struct dec *d, const void *data, size_t data_len,
		      struct osd_op_req *req)
{
	struct dec b;
	size_t n, pos = 0;
	uint32_t kv_total = 0;
	uint64_t *snaps = NULL;

	memset(req, 0, sizeof(*req));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	req->reqid.client = dec_u64(&b);
	req->reqid.tid = dec_u64(&b);
	req->epoch = dec_u64(&b);
	req->pool = dec_u32(&b);
	req->pg = dec_u32(&b);
	req->flags = dec_u32(&b);
	req->oid = dec_blob(&b, &n, PROTO_OID_MAX);
	req->oid_len = (uint32_t)n;
	if (req->oid && memchr(req->oid, '\0', n))
		dec_fail(&b, -EBADMSG);
	req->snap_seq = dec_u64(&b);
	req->nsnaps = dec_count(&b, PROTO_SNAPS_MAX, 8);
	if (req->nsnaps && !b.err) {
		snaps = malloc(req->nsnaps * sizeof(*snaps));
		if (!snaps)
			dec_fail(&b, -ENOMEM);
		for (uint32_t i = 0; i < req->nsnaps && !b.err; i++)
			snaps[i] = dec_u64(&b);
	}
	req->snaps = snaps;
	req->nops = dec_count(&b, PROTO_OPS_MAX, 6);
	if (req->nops && !b.err) {
		req->ops = calloc(req->nops, sizeof(*req->ops));
		if (!req->ops) {
			req->nops = 0;
			dec_fail(&b, -ENOMEM);
		}
	}
	for (uint32_t i = 0; i < req->nops && !b.err; i++) {
		struct osd_subop *op = &req->ops[i];

		subop_decode(&b, op, &kv_total);
		if (b.err)
			break;
		if (op->data_len > data_len - pos) {
			dec_fail(&b, -EBADMSG);
			break;
		}
		op->data = op->data_len ? (const uint8_t *)data + pos : NULL;
		pos += op->data_len;
	}
	if (!b.err && pos != data_len)
		dec_fail(&b, -EBADMSG);
	return dec_msg_end(d, &b);
}

void osd_op_reply_encode(const struct osd_op_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, PROTO_V, PROTO_COMPAT);

	enc_u64(e, r->reqid.client);
	enc_u64(e, r->reqid.tid);
	enc_u32(e, (uint32_t)r->result);
	enc_u64(e, r->version);
	enc_u64(e, r->epoch);
	enc_u32(e, r->nops);
	for (uint32_t i = 0; i < r->nops; i++) {
		enc_u32(e, (uint32_t)(r->rvals ? r->rvals[i] : 0));
		enc_u32(e, r->out_lens ? r->out_lens[i] : 0);
	}
	enc_end(e, h);
}

void osd_op_reply_clear(struct osd_op_reply *r)
{
	free(r->rvals);
	free(r->out_lens);
	memset(r, 0, sizeof(*r));
}

int osd_op_reply_decode(struct dec *d, size_t data_len, struct osd_op_reply *r)
{
	struct dec b;
	uint64_t total = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, PROTO_COMPAT, &b))
		return d->err;
	r->reqid.client = dec_u64(&b);
	r->reqid.tid = dec_u64(&b);
	r->result = (int32_t)dec_u32(&b);
	r->version = dec_u64(&b);
	r->epoch = dec_u64(&b);
	r->nops = dec_count(&b, PROTO_OPS_MAX, 8);
	if (r->nops && !b.err) {
		r->rvals = calloc(r->nops, sizeof(*r->rvals));
		r->out_lens = calloc(r->nops, sizeof(*r->out_lens));
		if (!r->rvals || !r->out_lens)
			dec_fail(&b, -ENOMEM);
	}
	for (uint32_t i = 0; i < r->nops && !b.err; i++) {
		r->rvals[i] = (int32_t)dec_u32(&b);
		r->out_lens[i] = dec_u32(&b);
		total += r->out_lens[i];
	}
	if (!b.err && total != data_len)
		dec_fail(&b, -EBADMSG);
	rc = dec_msg_end(d, &b);
	if (rc < 0)
		osd_op_reply_clear(r);
	return rc;
}

void osd_kvlist_encode_begin(struct enc *e, uint32_t n)
{
	enc_u32(e, n);
}

void osd_kvlist_encode_one(struct enc *e, const void *k, uint32_t klen,
			   const void *v, uint32_t vlen)
{
	enc_blob(e, k, klen);
	enc_blob(e, v, v ? vlen : 0);
}
