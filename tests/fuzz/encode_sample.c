/*
 * encode_sample.c - the sample record's codec (see encode_sample.h).
 *
 * The decoder is written the way production decoders should be: it lets
 * the sticky error carry it to the end of a section, allocates only after
 * a count or length has passed its cap, and frees everything on failure
 * through sample_free().
 */
#include "encode_sample.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_VERSION		2
#define SAMPLE_COMPAT		1
#define EXT_VERSION		1
#define META_VERSION		1
/* Smallest encoded sizes, for dec_count()'s sanity check. */
#define EXT_MIN_BYTES		(6 + 16)
#define ATTR_MIN_BYTES		(4 + 4)

void sample_encode(struct enc *e, const struct sample *s, uint8_t version)
{
	size_t rec, sec;
	uint32_t i;

	rec = enc_begin(e, version, SAMPLE_COMPAT);
	enc_u64(e, s->id);
	enc_u16(e, s->flags);
	enc_str(e, s->name);
	enc_blob(e, s->data, s->data_len);
	enc_u32(e, s->n_ext);
	for (i = 0; i < s->n_ext; i++) {
		sec = enc_begin(e, EXT_VERSION, 1);
		enc_u64(e, s->ext[i].off);
		enc_u32(e, s->ext[i].len);
		enc_u32(e, s->ext[i].crc);
		enc_end(e, sec);
	}
	sec = enc_begin(e, META_VERSION, 1);
	enc_u64(e, s->epoch);
	enc_u32(e, s->n_attr);
	for (i = 0; i < s->n_attr; i++) {
		enc_str(e, s->attr[i].key);
		enc_blob(e, s->attr[i].val, s->attr[i].val_len);
	}
	enc_end(e, sec);
	if (version >= 2)
		enc_u64(e, s->mtime);
	enc_end(e, rec);
}

static void *dup_bytes(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, p, n);
	return c;
}

static void decode_meta(struct dec *rec, struct sample *s)
{
	struct dec meta;
	uint8_t version;
	uint32_t i;

	if (dec_begin(rec, META_VERSION, &meta, &version) < 0)
		return;
	s->epoch = dec_u64(&meta);
	s->n_attr = dec_count(&meta, SAMPLE_ATTR_MAX, ATTR_MIN_BYTES);
	if (s->n_attr) {
		s->attr = calloc(s->n_attr, sizeof(*s->attr));
		if (!s->attr) {
			s->n_attr = 0;
			dec_fail(&meta, -ENOMEM);
		}
	}
	for (i = 0; i < s->n_attr && !meta.err; i++) {
		struct sample_attr *a = &s->attr[i];
		const void *val;

		dec_str(&meta, a->key, SAMPLE_ATTR_KEY_MAX);
		val = dec_blob(&meta, &a->val_len, SAMPLE_ATTR_VAL_MAX);
		if (!val)
			break;
		a->val = dup_bytes(val, a->val_len);
		if (!a->val)
			dec_fail(&meta, -ENOMEM);
	}
	dec_end(rec, &meta);
}

int sample_decode(const void *buf, size_t len, struct sample *s)
{
	struct dec d, rec, sec;
	uint8_t version, ev;
	const void *data;
	uint32_t i;

	memset(s, 0, sizeof(*s));
	dec_init(&d, buf, len);
	if (dec_begin(&d, SAMPLE_VERSION, &rec, &version) < 0)
		return d.err;
	s->id = dec_u64(&rec);
	s->flags = dec_u16(&rec);
	dec_str(&rec, s->name, SAMPLE_NAME_MAX);
	data = dec_blob(&rec, &s->data_len, SAMPLE_DATA_MAX);
	if (data) {
		s->data = dup_bytes(data, s->data_len);
		if (!s->data)
			dec_fail(&rec, -ENOMEM);
	}
	s->n_ext = dec_count(&rec, SAMPLE_EXT_MAX, EXT_MIN_BYTES);
	if (s->n_ext) {
		s->ext = calloc(s->n_ext, sizeof(*s->ext));
		if (!s->ext) {
			s->n_ext = 0;
			dec_fail(&rec, -ENOMEM);
		}
	}
	for (i = 0; i < s->n_ext && !rec.err; i++) {
		if (dec_begin(&rec, EXT_VERSION, &sec, &ev) < 0)
			break;
		s->ext[i].off = dec_u64(&sec);
		s->ext[i].len = dec_u32(&sec);
		s->ext[i].crc = dec_u32(&sec);
		dec_end(&rec, &sec);
	}
	decode_meta(&rec, s);
	if (version >= 2)
		s->mtime = dec_u64(&rec);
	dec_end(&d, &rec);
	return dec_finish(&d);
}

void sample_free(struct sample *s)
{
	uint32_t i;

	free(s->data);
	free(s->ext);
	for (i = 0; s->attr && i < s->n_attr; i++)
		free(s->attr[i].val);
	free(s->attr);
	memset(s, 0, sizeof(*s));
}

/* xorshift32: deterministic, so a failing seed can be replayed. */
static uint32_t next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int sample_fill(struct sample *s, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1, i;
	size_t j, n;

	memset(s, 0, sizeof(*s));
	s->id = ((uint64_t)next(&x) << 32) | next(&x);
	s->flags = (uint16_t)next(&x);
	n = next(&x) % (SAMPLE_NAME_MAX + 1);
	for (j = 0; j < n; j++)
		s->name[j] = (char)('a' + next(&x) % 26);
	s->data_len = next(&x) % 200;
	s->data = malloc(s->data_len + 1);
	if (!s->data)
		goto out_free;
	for (j = 0; j < s->data_len; j++)
		s->data[j] = (uint8_t)next(&x);
	s->n_ext = next(&x) % 6;
	s->ext = calloc(s->n_ext + 1, sizeof(*s->ext));
	if (!s->ext)
		goto out_free;
	for (i = 0; i < s->n_ext; i++) {
		s->ext[i].off = (uint64_t)next(&x) << 12;
		s->ext[i].len = next(&x) % (1u << 20);
		s->ext[i].crc = next(&x);
	}
	s->epoch = next(&x);
	s->n_attr = next(&x) % 4;
	s->attr = calloc(s->n_attr + 1, sizeof(*s->attr));
	if (!s->attr)
		goto out_free;
	for (i = 0; i < s->n_attr; i++) {
		struct sample_attr *a = &s->attr[i];

		n = 1 + next(&x) % 8;
		for (j = 0; j < n; j++)
			a->key[j] = (char)('a' + next(&x) % 26);
		a->val_len = next(&x) % 16;
		a->val = malloc(a->val_len + 1);
		if (!a->val)
			goto out_free;
		for (j = 0; j < a->val_len; j++)
			a->val[j] = (uint8_t)next(&x);
	}
	s->mtime = ((uint64_t)next(&x) << 32) | next(&x);
	return 0;

out_free:
	sample_free(s);
	return -ENOMEM;
}

int sample_equal(const struct sample *a, const struct sample *b, int both_v2)
{
	uint32_t i;

	if (a->id != b->id || a->flags != b->flags || strcmp(a->name, b->name) ||
	    a->data_len != b->data_len || memcmp(a->data, b->data, a->data_len) ||
	    a->n_ext != b->n_ext || a->epoch != b->epoch || a->n_attr != b->n_attr)
		return 0;
	for (i = 0; i < a->n_ext; i++)
		if (a->ext[i].off != b->ext[i].off || a->ext[i].len != b->ext[i].len ||
		    a->ext[i].crc != b->ext[i].crc)
			return 0;
	for (i = 0; i < a->n_attr; i++)
		if (strcmp(a->attr[i].key, b->attr[i].key) ||
		    a->attr[i].val_len != b->attr[i].val_len ||
		    memcmp(a->attr[i].val, b->attr[i].val, a->attr[i].val_len))
			return 0;
	return !both_v2 || a->mtime == b->mtime;
}

