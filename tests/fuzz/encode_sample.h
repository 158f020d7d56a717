/*
 * encode_sample.h - a sample record exercising every part of lib/encode.h.
 *
 * The unit tests, the fuzz target and the seed-corpus generator share one
 * codec, so what the fuzzer learns from the corpus is exactly what the
 * round-trip tests check.  The record looks like something a store keeps
 * (an id, a name, inline data, a list of extents, a metadata section with
 * attributes), and its layout uses every feature: nested versioned
 * sections, a field added in version 2 that a version 1 reader skips,
 * blobs and strings with caps, and lists whose count is capped.
 */
#ifndef ATOLL_TESTS_ENCODE_SAMPLE_H
#define ATOLL_TESTS_ENCODE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "encode.h"

#define SAMPLE_NAME_MAX		64
#define SAMPLE_DATA_MAX		4096
#define SAMPLE_EXT_MAX		32
#define SAMPLE_ATTR_MAX		8
#define SAMPLE_ATTR_KEY_MAX	32
#define SAMPLE_ATTR_VAL_MAX	256

struct sample_extent {
	uint64_t off;
	uint32_t len;
	uint32_t crc;
};

struct sample_attr {
	char key[SAMPLE_ATTR_KEY_MAX + 1];
	uint8_t *val;			/* heap copy */
	size_t val_len;
};

struct sample {
	uint64_t id;
	uint16_t flags;
	char name[SAMPLE_NAME_MAX + 1];
	uint8_t *data;			/* heap copy, at most SAMPLE_DATA_MAX */
	size_t data_len;
	uint32_t n_ext;
	struct sample_extent *ext;	/* heap, at most SAMPLE_EXT_MAX */
	uint64_t epoch;			/* metadata section */
	uint32_t n_attr;
	struct sample_attr *attr;	/* heap, at most SAMPLE_ATTR_MAX */
	uint64_t mtime;			/* added in version 2 of the record */
};

/* Writes s as version `version` (1 or 2) of the record. */
void sample_encode(struct enc *e, const struct sample *s, uint8_t version);
/* Decodes buf into s (zeroed first; sample_free() it on success or
 * failure).  Returns 0 or the decoder's negative errno. */
int sample_decode(const void *buf, size_t len, struct sample *s);
void sample_free(struct sample *s);
/* Fills s with deterministic pseudo-random content from seed. */
int sample_fill(struct sample *s, uint32_t seed);
/* 1 when a and b hold the same content (mtime compared when both_v2). */
int sample_equal(const struct sample *a, const struct sample *b, int both_v2);

#endif
