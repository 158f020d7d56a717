/*
 * encode.h - atoll's versioned little-endian binary encoding.
 *
 * Every on-wire payload and every on-disk metadata value is written with
 * these helpers.  Integers are little-endian and fixed width; byte strings
 * ("blobs") carry a u32 length.  A versioned section starts with a header
 *   [u8 version][u8 compat][u32 body length]
 * so that an older reader can skip fields appended by a newer writer (it
 * decodes what it knows and skips the rest of the body), and refuses a
 * section whose compat version is newer than what it understands.
 *
 * Writers grow a heap buffer; the first failure (ENOMEM, or a length that
 * does not fit) is sticky in ->err and makes every later call a no-op, so a
 * caller checks once at the end.  Readers never read past their buffer:
 * every getter checks the remaining length, a failure is sticky in ->err
 * (-EBADMSG for short or malformed input, -E2BIG for a length over the
 * caller's cap) and getters then return 0/NULL.  No decoder allocates a
 * size taken from the input without a cap supplied by the caller.
 */
#ifndef ATOLL_ENCODE_H
#define ATOLL_ENCODE_H

#include <stddef.h>
#include <stdint.h>

struct enc {
	uint8_t *buf;
	size_t len;
	size_t cap;
	int err;		/* 0 or first negative errno */
};

/* Writers.  enc_init() starts empty; enc_free() releases the buffer. */
void enc_init(struct enc *e);
void enc_free(struct enc *e);
void enc_reset(struct enc *e);			/* len = 0, err = 0, keeps buffer */
void enc_reserve(struct enc *e, size_t extra);
void enc_u8(struct enc *e, uint8_t v);
void enc_u16(struct enc *e, uint16_t v);
void enc_u32(struct enc *e, uint32_t v);
void enc_u64(struct enc *e, uint64_t v);
void enc_raw(struct enc *e, const void *p, size_t n);	/* bytes, no length */
void enc_blob(struct enc *e, const void *p, size_t n);	/* u32 length + bytes */
void enc_str(struct enc *e, const char *s);		/* blob of strlen(s) */
/* Versioned section: enc_begin() writes the header and returns a handle
 * that enc_end() uses to patch in the body length.  compat names the
 * oldest reader version that can decode the section (compat > version is
 * -EINVAL); a body over UINT32_MAX bytes is -E2BIG. */
size_t enc_begin(struct enc *e, uint8_t version, uint8_t compat);
void enc_end(struct enc *e, size_t handle);
/* Takes the buffer away from the writer (caller frees) and leaves the
 * writer empty; never NULL on success, even for zero bytes.  NULL on
 * error, and then the writer still owns its buffer (enc_free() it). */
void *enc_take(struct enc *e, size_t *len);

struct dec {
	const uint8_t *p;
	size_t len;
	size_t pos;
	int err;		/* 0, -EBADMSG, -E2BIG or -EPROTONOSUPPORT */
};

void dec_init(struct dec *d, const void *buf, size_t len);
uint8_t dec_u8(struct dec *d);
uint16_t dec_u16(struct dec *d);
uint32_t dec_u32(struct dec *d);
uint64_t dec_u64(struct dec *d);
/* n raw bytes; returns a pointer into the buffer or NULL. */
const void *dec_raw(struct dec *d, size_t n);
/* A blob of at most max bytes: pointer into the buffer, length in *n.
 * A length over max sets -E2BIG. */
const void *dec_blob(struct dec *d, size_t *n, size_t max);
/* A blob copied into a NUL-terminated string of at most max bytes
 * (buf must hold max + 1); an embedded NUL is -EBADMSG. */
int dec_str(struct dec *d, char *buf, size_t max);
/* Opens a versioned section.  *body is limited to the section; *version
 * gets the writer's version.  A compat above max_compat is
 * -EPROTONOSUPPORT; a compat above the section's own version (which no
 * writer produces) is -EBADMSG.  Returns 0 or the (sticky) error. */
int dec_begin(struct dec *d, uint8_t max_compat, struct dec *body, uint8_t *version);
/* Closes a section: the parent skips whatever the body did not read.
 * Returns the body's error (copied into the parent) or 0. */
int dec_end(struct dec *d, struct dec *body);
/* The pair every message decoder uses.  dec_msg_begin() opens a section
 * whose writer's version the reader does not need (dec_begin() without
 * it; a nested section too).  dec_msg_end() closes a message's one
 * section and insists nothing follows it: dec_end(), then dec_finish().
 * Both return 0 or the (sticky) error. */
int dec_msg_begin(struct dec *d, uint8_t max_compat, struct dec *body);
int dec_msg_end(struct dec *d, struct dec *body);
/* Remaining unread bytes. */
size_t dec_left(const struct dec *d);
/* 0 when everything was read without error; -EBADMSG if bytes are left. */
int dec_finish(const struct dec *d);
/* A u32 element count for a list: over max is -E2BIG, and a count whose
 * elements (each at least min_each bytes; 0 = no check) cannot fit in
 * what is left is -EBADMSG.  Returns 0 on error, so a caller may size an
 * allocation by the result once it has checked ->err. */
uint32_t dec_count(struct dec *d, uint32_t max, size_t min_each);
/* Marks the decoder failed with err (a caller's own validation, e.g. an
 * unknown enum value) unless it already failed; returns the sticky error. */
int dec_fail(struct dec *d, int err);

#endif
