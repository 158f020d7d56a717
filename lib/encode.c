/*
 * encode.c - atoll's versioned little-endian binary encoding.
 *
 * Writers append to one growing heap buffer and keep the first error in
 * ->err, so a long run of enc_*() calls needs a single check at the end.
 * Readers work on a borrowed buffer: every getter first checks the sticky
 * error and the remaining length, so malformed input can only ever make a
 * decoder fail, never read outside its buffer.  Integers are assembled
 * byte by byte, which is correct on any host byte order and alignment.
 *
 * A versioned section is [u8 version][u8 compat][u32 body length][body].
 * dec_begin() moves the parent past the whole section at once and hands
 * the caller a child decoder limited to the body; whatever the child does
 * not read (fields a newer writer appended) is thereby skipped.
 */
#include "encode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SECTION_HDR_LEN 6	/* u8 version, u8 compat, u32 body length */

/* ---- writers ---- */

void enc_init(struct enc *e)
{
	e->buf = NULL;
	e->len = 0;
	e->cap = 0;
	e->err = 0;
}

void enc_free(struct enc *e)
{
	free(e->buf);
	enc_init(e);
}

void enc_reset(struct enc *e)
{
	e->len = 0;
	e->err = 0;
}

static void enc_fail(struct enc *e, int err)
{
	if (!e->err)
		e->err = err;
}

void enc_reserve(struct enc *e, size_t extra)
{
	size_t need, ncap;
	uint8_t *nbuf;

	if (e->err)
		return;
	if (extra > SIZE_MAX - e->len) {
		enc_fail(e, -E2BIG);
		return;
	}
	need = e->len + extra;
	if (need <= e->cap)
		return;
	ncap = e->cap ? e->cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ncap = need;
			break;
		}
		ncap *= 2;
	}
	nbuf = realloc(e->buf, ncap);
	if (!nbuf) {
		enc_fail(e, -ENOMEM);
		return;
	}
	e->buf = nbuf;
	e->cap = ncap;
}

/* Reserves n bytes and returns where to write them, or NULL (error set). */
static uint8_t *enc_space(struct enc *e, size_t n)
{
	uint8_t *p;

	enc_reserve(e, n);
	if (e->err)
		return NULL;
	p = e->buf + e->len;
	e->len += n;
	return p;
}

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void enc_int(struct enc *e, uint64_t v, unsigned int n)
{
	uint8_t *p = enc_space(e, n);

	if (p)
		put_le(p, v, n);
}

void enc_u8(struct enc *e, uint8_t v)
{
	enc_int(e, v, 1);
}

void enc_u16(struct enc *e, uint16_t v)
{
	enc_int(e, v, 2);
}

void enc_u32(struct enc *e, uint32_t v)
{
	enc_int(e, v, 4);
}

void enc_u64(struct enc *e, uint64_t v)
{
	enc_int(e, v, 8);
}

void enc_raw(struct enc *e, const void *p, size_t n)
{
	uint8_t *dst;

	if (n == 0)
		return;
	dst = enc_space(e, n);
	if (dst)
		memcpy(dst, p, n);
}

void enc_blob(struct enc *e, const void *p, size_t n)
{
	if (n > UINT32_MAX) {
		enc_fail(e, -E2BIG);
		return;
	}
	enc_u32(e, (uint32_t)n);
	enc_raw(e, p, n);
}

void enc_str(struct enc *e, const char *s)
{
	enc_blob(e, s, strlen(s));
}

size_t enc_begin(struct enc *e, uint8_t version, uint8_t compat)
{
	size_t handle = e->len;

	if (compat > version)
		enc_fail(e, -EINVAL);
	enc_u8(e, version);
	enc_u8(e, compat);
	enc_u32(e, 0);		/* body length, patched by enc_end() */
	return handle;
}

void enc_end(struct enc *e, size_t handle)
{
	size_t body;

	if (e->err)
		return;
	if (handle > e->len || e->len - handle < SECTION_HDR_LEN) {
		enc_fail(e, -EINVAL);
		return;
	}
	body = e->len - handle - SECTION_HDR_LEN;
	if (body > UINT32_MAX) {
		enc_fail(e, -E2BIG);
		return;
	}
	put_le(e->buf + handle + 2, body, 4);
}

void *enc_take(struct enc *e, size_t *len)
{
	void *buf;

	if (e->err)
		return NULL;	/* the writer keeps its buffer: enc_free() it */
	if (!e->buf) {
		/* Nothing written: still hand back a real, freeable pointer so
		 * that NULL keeps meaning "error". */
		e->buf = malloc(1);
		if (!e->buf) {
			enc_fail(e, -ENOMEM);
			return NULL;
		}
	}
	buf = e->buf;
	*len = e->len;
	enc_init(e);
	return buf;
}

/* ---- readers ---- */

void dec_init(struct dec *d, const void *buf, size_t len)
{
	d->p = buf;
	d->len = buf ? len : 0;
	d->pos = 0;
	d->err = 0;
}

int dec_fail(struct dec *d, int err)
{
	if (!d->err)
		d->err = err;
	return d->err;
}

size_t dec_left(const struct dec *d)
{
	if (d->err || d->pos > d->len)
		return 0;
	return d->len - d->pos;
}

/* Consumes n bytes and returns them, or NULL with -EBADMSG set. */
static const uint8_t *dec_take(struct dec *d, size_t n)
{
	const uint8_t *p;

	if (d->err)
		return NULL;
	if (n > dec_left(d)) {
		dec_fail(d, -EBADMSG);
		return NULL;
	}
	p = d->p + d->pos;
	d->pos += n;
	return p;
}

static uint64_t dec_int(struct dec *d, unsigned int n)
{
	const uint8_t *p = dec_take(d, n);

	return p ? get_le(p, n) : 0;
}

uint8_t dec_u8(struct dec *d)
{
	return (uint8_t)dec_int(d, 1);
}

uint16_t dec_u16(struct dec *d)
{
	return (uint16_t)dec_int(d, 2);
}

uint32_t dec_u32(struct dec *d)
{
	return (uint32_t)dec_int(d, 4);
}

uint64_t dec_u64(struct dec *d)
{
	return dec_int(d, 8);
}

const void *dec_raw(struct dec *d, size_t n)
{
	static const uint8_t empty[1];
	const uint8_t *p;

	if (n == 0)
		return d->err ? NULL : (d->p ? d->p + d->pos : empty);
	p = dec_take(d, n);
	return p;
}

const void *dec_blob(struct dec *d, size_t *n, size_t max)
{
	uint32_t len;
	const void *p;

	*n = 0;
	len = dec_u32(d);
	if (d->err)
		return NULL;
	if (len > max) {
		dec_fail(d, -E2BIG);
		return NULL;
	}
	p = dec_raw(d, len);
	if (p)
		*n = len;
	return p;
}

int dec_str(struct dec *d, char *buf, size_t max)
{
	const void *p;
	size_t n;

	buf[0] = '\0';
	p = dec_blob(d, &n, max);
	if (!p)
		return d->err;
	if (memchr(p, '\0', n))
		return dec_fail(d, -EBADMSG);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

uint32_t dec_count(struct dec *d, uint32_t max, size_t min_each)
{
	uint32_t count = dec_u32(d);

	if (d->err)
		return 0;
	if (count > max) {
		dec_fail(d, -E2BIG);
		return 0;
	}
	/* Every element takes at least min_each bytes, so a count the rest
	 * of the buffer cannot hold is malformed: refuse it before the
	 * caller sizes an allocation by it. */
	if (min_each && count > dec_left(d) / min_each) {
		dec_fail(d, -EBADMSG);
		return 0;
	}
	return count;
}

int dec_begin(struct dec *d, uint8_t max_compat, struct dec *body, uint8_t *version)
{
	const uint8_t *hdr;
	uint32_t blen;
	uint8_t compat;

	*version = 0;
	dec_init(body, NULL, 0);
	hdr = dec_take(d, SECTION_HDR_LEN);
	if (!hdr)
		goto out_fail_body;
	compat = hdr[1];
	blen = (uint32_t)get_le(hdr + 2, 4);
	if (blen > dec_left(d)) {
		dec_fail(d, -EBADMSG);
		goto out_fail_body;
	}
	if (compat > hdr[0]) {
		/* No writer makes this (enc_begin refuses it): damaged input. */
		dec_fail(d, -EBADMSG);
		goto out_fail_body;
	}
	if (compat > max_compat) {
		dec_fail(d, -EPROTONOSUPPORT);
		goto out_fail_body;
	}
	dec_init(body, d->p + d->pos, blen);
	d->pos += blen;		/* the parent resumes after the section */
	*version = hdr[0];
	return 0;

out_fail_body:
	/* The child carries the error too, so a caller that decodes the body
	 * without checking dec_begin() only ever gets zeros. */
	body->err = d->err;
	return d->err;
}

int dec_end(struct dec *d, struct dec *body)
{
	if (body->err)
		dec_fail(d, body->err);
	return d->err;
}

int dec_finish(const struct dec *d)
{
	if (d->err)
		return d->err;
	return d->pos == d->len ? 0 : -EBADMSG;
}

int dec_msg_begin(struct dec *d, uint8_t max_compat, struct dec *body)
{
	uint8_t version;

	return dec_begin(d, max_compat, body, &version);
}

int dec_msg_end(struct dec *d, struct dec *body)
{
	int r = dec_end(d, body);

	return r ? r : dec_finish(d);
}
