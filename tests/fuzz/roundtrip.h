/*
 * roundtrip.h - the check every fuzz target makes of a value its decoder
 * accepted: encode it, decode those bytes into a second value, encode
 * that; the two encodings must be the same bytes, and the second decode
 * must succeed (encode and decode agree).  Anything else is abort(), a
 * finding for libFuzzer and a failure for the corpus runner.
 *
 * A macro rather than a function so that each codec keeps its own types
 * (no casts of function pointers): ENC(value_ptr, struct enc *),
 * DEC(struct dec *, value_ptr) returning < 0 on failure, and
 * CLEAR(value_ptr) freeing what DEC allocated (FUZZ_NO_CLEAR when
 * nothing).  A codec whose functions take other arguments is given as a
 * small macro or function in the target.
 *
 * Also here: fuzz_split_data(), how the targets of messages that carry a
 * data segment after their front (OSD_OP, REP_OP) cut their input.
 */
#ifndef ATOLL_FUZZ_ROUNDTRIP_H
#define ATOLL_FUZZ_ROUNDTRIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"

/* Aborts unless a and b hold the same bytes; running out of memory while
 * encoding aborts too (not a finding, but nothing to compare). */
static inline void fuzz_same_enc(const struct enc *a, const struct enc *b)
{
	if (a->err || b->err || a->len != b->len ||
	    (a->len && memcmp(a->buf, b->buf, a->len)))
		abort();
}

#define FUZZ_NO_CLEAR(v) ((void)(v))

/* *p, *n: an input whose first byte says how long the data segment is
 * (that byte modulo *n, at most what follows it); the segment is the last
 * *dlen bytes.  Steps *p and *n past that byte; false when *n is 0. */
static inline bool fuzz_split_data(const uint8_t **p, size_t *n, size_t *dlen)
{
	if (!*n)
		return false;
	*dlen = (*p)[0] % *n;
	(*p)++;
	(*n)--;
	if (*dlen > *n)
		*dlen = *n;
	return true;
}

/* v points to a value that decoded; it is only read.  v2 points to
 * storage of the same type for the second decode (for a type too large
 * for the stack); FUZZ_ROUND_TRIP below provides it. */
#define FUZZ_ROUND_TRIP_INTO(v, v2, ENC, DEC, CLEAR) do {		\
	struct enc fz_e1_, fz_e2_;					\
	struct dec fz_d_;						\
									\
	memset((v2), 0, sizeof(*(v2)));					\
	enc_init(&fz_e1_);						\
	enc_init(&fz_e2_);						\
	ENC((v), &fz_e1_);						\
	if (fz_e1_.err)							\
		abort();						\
	dec_init(&fz_d_, fz_e1_.buf, fz_e1_.len);			\
	if (DEC(&fz_d_, (v2)) < 0)					\
		abort();						\
	ENC((v2), &fz_e2_);						\
	fuzz_same_enc(&fz_e1_, &fz_e2_);				\
	CLEAR((v2));							\
	enc_free(&fz_e1_);						\
	enc_free(&fz_e2_);						\
} while (0)

#define FUZZ_ROUND_TRIP(type, v, ENC, DEC, CLEAR) do {			\
	type fz_v2_;							\
									\
	FUZZ_ROUND_TRIP_INTO((v), &fz_v2_, ENC, DEC, CLEAR);		\
} while (0)

#endif
