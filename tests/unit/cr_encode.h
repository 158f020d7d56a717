/*
 * cr_encode.h - what the Criterion tests of encoders share: taking an
 * encoder's buffer, asserting that nothing failed on the way.
 */
#ifndef ATOLL_TESTS_CR_ENCODE_H
#define ATOLL_TESTS_CR_ENCODE_H

#include <criterion/criterion.h>

#include "encode.h"

/* The buffer e holds (caller frees it), its length in *len; the test
 * fails when an encoding step failed or the buffer cannot be had. */
static inline void *cr_enc_take(struct enc *e, size_t *len)
{
	void *p;

	cr_assert_eq(e->err, 0);
	p = enc_take(e, len);
	cr_assert_not_null(p);
	return p;
}

#endif
