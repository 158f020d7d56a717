/*
 * test_encode.c - lib/encode.c: round trips, short and absurd input,
 * caps, versioned sections, and decoding randomly corrupted records.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "encode_sample.h"
#include "cr_encode.h"

/* Takes the writer's bytes into an exact-size heap buffer, so that a
 * read one byte past the end is caught by ASan. */
Test(encode, integers_round_trip_at_their_limits)
{
	struct enc e;
	struct dec d;
	uint8_t *buf;
	size_t len;

	enc_init(&e);
	enc_u8(&e, 0);
	enc_u8(&e, UINT8_MAX);
	enc_u16(&e, UINT16_MAX);
	enc_u32(&e, UINT32_MAX);
	enc_u64(&e, UINT64_MAX);
	enc_u64(&e, 0x0123456789abcdefull);
	buf = cr_enc_take(&e, &len);
	cr_assert_eq(len, 1 + 1 + 2 + 4 + 8 + 8);

	dec_init(&d, buf, len);
	cr_expect_eq(dec_u8(&d), 0);
	cr_expect_eq(dec_u8(&d), UINT8_MAX);
	cr_expect_eq(dec_u16(&d), UINT16_MAX);
	cr_expect_eq(dec_u32(&d), UINT32_MAX);
	cr_expect_eq(dec_u64(&d), UINT64_MAX);
	cr_expect_eq(dec_u64(&d), 0x0123456789abcdefull);
	cr_expect_eq(dec_finish(&d), 0);
	free(buf);
}

Test(encode, integers_are_little_endian)
{
	static const uint8_t want[] = {
		0x34, 0x12, 0x78, 0x56, 0x34, 0x12,
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01,
	};
	struct enc e;

	enc_init(&e);
	enc_u16(&e, 0x1234);
	enc_u32(&e, 0x12345678);
	enc_u64(&e, 0x0123456789abcdefull);
	cr_assert_eq(e.len, sizeof(want));
	cr_expect_eq(memcmp(e.buf, want, sizeof(want)), 0);
	enc_free(&e);
}

Test(encode, blob_str_and_raw_round_trip)
{
	char name[16];
	struct enc e;
	struct dec d;
	const void *p;
	uint8_t *buf;
	size_t len, n;

	enc_init(&e);
	enc_blob(&e, "\0\1\2", 3);
	enc_str(&e, "hello");
	enc_str(&e, "");
	enc_raw(&e, "xyz", 3);
	enc_blob(&e, NULL, 0);
	buf = cr_enc_take(&e, &len);

	dec_init(&d, buf, len);
	p = dec_blob(&d, &n, 3);
	cr_assert_not_null(p);
	cr_expect_eq(n, 3);
	cr_expect_eq(memcmp(p, "\0\1\2", 3), 0);
	cr_expect_eq(dec_str(&d, name, sizeof(name) - 1), 0);
	cr_expect_str_eq(name, "hello");
	cr_expect_eq(dec_str(&d, name, sizeof(name) - 1), 0);
	cr_expect_str_eq(name, "");
	p = dec_raw(&d, 3);
	cr_assert_not_null(p);
	cr_expect_eq(memcmp(p, "xyz", 3), 0);
	p = dec_blob(&d, &n, 0);
	cr_expect_not_null(p);
	cr_expect_eq(n, 0);
	cr_expect_eq(dec_finish(&d), 0);
	free(buf);
}

Test(encode, writer_grows_past_its_first_allocation)
{
	struct enc e;
	struct dec d;
	uint32_t i;

	enc_init(&e);
	for (i = 0; i < 100000; i++)
		enc_u32(&e, i);
	cr_assert_eq(e.err, 0);
	cr_assert_eq(e.len, 400000);
	dec_init(&d, e.buf, e.len);
	for (i = 0; i < 100000; i++)
		if (dec_u32(&d) != i)
			cr_assert_fail("value %u read back wrong", i);
	cr_expect_eq(dec_finish(&d), 0);
	enc_free(&e);
}

Test(encode, reset_empties_the_writer_and_keeps_its_buffer)
{
	struct enc e;
	uint8_t *before;

	enc_init(&e);
	enc_u64(&e, 1);
	before = e.buf;
	enc_reset(&e);
	cr_expect_eq(e.len, 0);
	cr_expect_eq(e.buf, before);
	enc_u8(&e, 7);
	cr_expect_eq(e.len, 1);
	cr_expect_eq(e.buf[0], 7);
	enc_free(&e);
	cr_expect_null(e.buf);
}

Test(encode, take_of_an_empty_writer_is_not_null)
{
	struct enc e;
	size_t len = 99;
	void *buf;

	enc_init(&e);
	buf = enc_take(&e, &len);
	cr_expect_not_null(buf);
	cr_expect_eq(len, 0);
	free(buf);
}

Test(encode, take_leaves_the_writer_empty)
{
	struct enc e;
	size_t len;
	void *buf;

	enc_init(&e);
	enc_u32(&e, 5);
	buf = enc_take(&e, &len);
	cr_expect_eq(len, 4);
	cr_expect_null(e.buf);
	cr_expect_eq(e.len, 0);
	free(buf);
}

Test(encode, blob_over_u32_length_is_a_sticky_e2big)
{
	struct enc e;
	size_t len;

	enc_init(&e);
	enc_u8(&e, 1);
	/* The length check comes before any read of the bytes. */
	enc_blob(&e, "x", (size_t)UINT32_MAX + 1);
	cr_expect_eq(e.err, -E2BIG);
	enc_u32(&e, 2);
	cr_expect_eq(e.len, 1, "a write after an error must be a no-op");
	cr_expect_null(enc_take(&e, &len));
	enc_free(&e);
}

Test(encode, reserve_overflow_is_e2big)
{
	struct enc e;

	enc_init(&e);
	enc_u8(&e, 1);
	enc_reserve(&e, SIZE_MAX);
	cr_expect_eq(e.err, -E2BIG);
	enc_free(&e);
}

Test(encode, section_with_compat_above_version_is_einval)
{
	struct enc e;

	enc_init(&e);
	enc_begin(&e, 1, 2);
	cr_expect_eq(e.err, -EINVAL);
	enc_free(&e);
}

Test(encode, end_with_a_bogus_handle_is_einval)
{
	struct enc e;

	enc_init(&e);
	enc_u8(&e, 1);
	enc_end(&e, 1000);
	cr_expect_eq(e.err, -EINVAL);
	enc_free(&e);
}

/* ---- short input: every getter ---- */

static const uint8_t seven[7] = { 1, 2, 3, 4, 5, 6, 7 };

Test(decode, u8_on_empty_input_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 0);
	cr_expect_eq(dec_u8(&d), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, u16_on_one_byte_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 1);
	cr_expect_eq(dec_u16(&d), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, u32_on_three_bytes_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 3);
	cr_expect_eq(dec_u32(&d), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, u64_on_seven_bytes_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 7);
	cr_expect_eq(dec_u64(&d), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, raw_beyond_the_end_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 7);
	cr_expect_null(dec_raw(&d, 8));
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, raw_of_size_max_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 7);
	dec_u8(&d);
	cr_expect_null(dec_raw(&d, SIZE_MAX));
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, raw_of_zero_bytes_succeeds_at_the_end)
{
	struct dec d;

	dec_init(&d, seven, 7);
	dec_raw(&d, 7);
	cr_expect_not_null(dec_raw(&d, 0));
	cr_expect_eq(dec_finish(&d), 0);
}

Test(decode, blob_longer_than_the_input_is_ebadmsg)
{
	static const uint8_t in[] = { 5, 0, 0, 0, 'a', 'b' };
	struct dec d;
	size_t n = 1;

	dec_init(&d, in, sizeof(in));
	cr_expect_null(dec_blob(&d, &n, 100));
	cr_expect_eq(n, 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, blob_with_a_truncated_length_is_ebadmsg)
{
	static const uint8_t in[] = { 5, 0 };
	struct dec d;
	size_t n;

	dec_init(&d, in, sizeof(in));
	cr_expect_null(dec_blob(&d, &n, 100));
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, blob_over_its_cap_is_e2big)
{
	static const uint8_t in[] = { 3, 0, 0, 0, 'a', 'b', 'c' };
	struct dec d;
	size_t n;

	dec_init(&d, in, sizeof(in));
	cr_expect_null(dec_blob(&d, &n, 2));
	cr_expect_eq(d.err, -E2BIG);
}

Test(decode, huge_blob_length_is_e2big_before_any_read)
{
	static const uint8_t in[] = { 0xff, 0xff, 0xff, 0xff };
	struct dec d;
	size_t n;

	dec_init(&d, in, sizeof(in));
	cr_expect_null(dec_blob(&d, &n, 1024));
	cr_expect_eq(d.err, -E2BIG);
}

Test(decode, blob_exactly_at_its_cap_succeeds)
{
	static const uint8_t in[] = { 3, 0, 0, 0, 'a', 'b', 'c' };
	struct dec d;
	size_t n;

	dec_init(&d, in, sizeof(in));
	cr_expect_not_null(dec_blob(&d, &n, 3));
	cr_expect_eq(dec_finish(&d), 0);
}

Test(decode, str_over_its_cap_is_e2big_and_leaves_an_empty_string)
{
	static const uint8_t in[] = { 4, 0, 0, 0, 'a', 'b', 'c', 'd' };
	char buf[4] = "zzz";
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_str(&d, buf, 3), -E2BIG);
	cr_expect_str_eq(buf, "");
}

Test(decode, str_with_an_embedded_nul_is_ebadmsg)
{
	static const uint8_t in[] = { 3, 0, 0, 0, 'a', 0, 'c' };
	char buf[8];
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_str(&d, buf, 7), -EBADMSG);
	cr_expect_str_eq(buf, "");
}

Test(decode, str_on_short_input_is_ebadmsg)
{
	static const uint8_t in[] = { 9, 0, 0, 0, 'a' };
	char buf[16];
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_str(&d, buf, 15), -EBADMSG);
}

Test(decode, errors_are_sticky)
{
	struct dec d;

	dec_init(&d, seven, 7);
	dec_u64(&d);
	cr_expect_eq(d.err, -EBADMSG);
	cr_expect_eq(dec_u8(&d), 0, "bytes are left but the decoder failed");
	cr_expect_null(dec_raw(&d, 1));
	cr_expect_eq(dec_left(&d), 0);
	cr_expect_eq(dec_finish(&d), -EBADMSG);
}

Test(decode, null_buffer_is_empty_input)
{
	struct dec d;

	dec_init(&d, NULL, 100);
	cr_expect_eq(dec_left(&d), 0);
	cr_expect_eq(dec_u8(&d), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, finish_with_bytes_left_is_ebadmsg)
{
	struct dec d;

	dec_init(&d, seven, 7);
	dec_u32(&d);
	cr_expect_eq(dec_left(&d), 3);
	cr_expect_eq(dec_finish(&d), -EBADMSG);
	cr_expect_eq(d.err, 0, "dec_finish() only reports");
}

Test(decode, count_over_its_cap_is_e2big)
{
	static const uint8_t in[] = { 9, 0, 0, 0 };
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_count(&d, 8, 0), 0);
	cr_expect_eq(d.err, -E2BIG);
}

Test(decode, count_that_cannot_fit_the_input_is_ebadmsg)
{
	static const uint8_t in[] = { 3, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_count(&d, 100, 4), 0);
	cr_expect_eq(d.err, -EBADMSG);
}

Test(decode, count_that_fits_is_returned)
{
	static const uint8_t in[] = { 2, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct dec d;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_count(&d, 2, 4), 2);
	cr_expect_eq(d.err, 0);
}

Test(decode, fail_keeps_the_first_error)
{
	struct dec d;

	dec_init(&d, seven, 7);
	cr_expect_eq(dec_fail(&d, -EINVAL), -EINVAL);
	cr_expect_eq(dec_fail(&d, -EBADMSG), -EINVAL);
	cr_expect_eq(dec_u8(&d), 0);
}

/* ---- versioned sections ---- */

/* Version 2 of a section: a v1 reader knows a and b; v2 appended c. */
static uint8_t *write_v2(size_t *len, uint8_t compat)
{
	struct enc e;
	size_t h;

	enc_init(&e);
	h = enc_begin(&e, 2, compat);
	enc_u32(&e, 11);
	enc_str(&e, "b");
	enc_u64(&e, 33);	/* field added in version 2 */
	enc_end(&e, h);
	enc_u16(&e, 0xbeef);	/* after the section */
	return cr_enc_take(&e, len);
}

Test(section, old_reader_skips_fields_a_newer_writer_appended)
{
	struct dec d, body;
	uint8_t version;
	char b[8];
	uint8_t *buf;
	size_t len;

	buf = write_v2(&len, 1);
	dec_init(&d, buf, len);
	cr_assert_eq(dec_begin(&d, 1, &body, &version), 0);
	cr_expect_eq(version, 2);
	cr_expect_eq(dec_u32(&body), 11);
	cr_expect_eq(dec_str(&body, b, 7), 0);
	cr_expect_str_eq(b, "b");
	cr_expect_eq(dec_end(&d, &body), 0);
	cr_expect_eq(dec_u16(&d), 0xbeef, "the parent resumes after the whole section");
	cr_expect_eq(dec_finish(&d), 0);
	free(buf);
}

Test(section, new_reader_reads_every_field)
{
	struct dec d, body;
	uint8_t version;
	char b[8];
	uint8_t *buf;
	size_t len;

	buf = write_v2(&len, 1);
	dec_init(&d, buf, len);
	cr_assert_eq(dec_begin(&d, 2, &body, &version), 0);
	dec_u32(&body);
	dec_str(&body, b, 7);
	cr_expect_eq(dec_u64(&body), 33);
	cr_expect_eq(dec_finish(&body), 0);
	cr_expect_eq(dec_end(&d, &body), 0);
	free(buf);
}

Test(section, compat_too_new_is_eprotonosupport)
{
	struct dec d, body;
	uint8_t version = 9;
	uint8_t *buf;
	size_t len;

	buf = write_v2(&len, 2);
	dec_init(&d, buf, len);
	cr_expect_eq(dec_begin(&d, 1, &body, &version), -EPROTONOSUPPORT);
	cr_expect_eq(d.err, -EPROTONOSUPPORT);
	cr_expect_eq(version, 0);
	cr_expect_eq(dec_u32(&body), 0, "the body of a refused section reads as zeros");
	cr_expect_eq(body.err, -EPROTONOSUPPORT);
	free(buf);
}

Test(section, compat_above_its_own_version_is_ebadmsg)
{
	/* version 1, compat 2: no writer produces it (enc_begin refuses it). */
	static const uint8_t in[] = { 1, 2, 1, 0, 0, 0, 7 };
	struct dec d, body;
	uint8_t version;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_begin(&d, 5, &body, &version), -EBADMSG);
	cr_expect_eq(body.err, -EBADMSG);
}

Test(section, length_beyond_the_input_is_ebadmsg)
{
	static const uint8_t in[] = { 1, 1, 10, 0, 0, 0, 1, 2, 3 };
	struct dec d, body;
	uint8_t version;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_begin(&d, 1, &body, &version), -EBADMSG);
	cr_expect_eq(body.err, -EBADMSG);
}

Test(section, truncated_header_is_ebadmsg)
{
	static const uint8_t in[] = { 1, 1, 0 };
	struct dec d, body;
	uint8_t version;

	dec_init(&d, in, sizeof(in));
	cr_expect_eq(dec_begin(&d, 1, &body, &version), -EBADMSG);
}

Test(section, reading_past_the_body_fails_even_with_bytes_after_it)
{
	static const uint8_t in[] = { 1, 1, 2, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd };
	struct dec d, body;
	uint8_t version;

	dec_init(&d, in, sizeof(in));
	cr_assert_eq(dec_begin(&d, 1, &body, &version), 0);
	cr_expect_eq(dec_u32(&body), 0);
	cr_expect_eq(body.err, -EBADMSG);
	cr_expect_eq(dec_end(&d, &body), -EBADMSG, "the body's error reaches the parent");
	cr_expect_eq(d.err, -EBADMSG);
}

Test(section, empty_section_round_trips)
{
	struct dec d, body;
	uint8_t version;
	struct enc e;
	uint8_t *buf;
	size_t len;

	enc_init(&e);
	enc_end(&e, enc_begin(&e, 3, 3));
	buf = cr_enc_take(&e, &len);
	cr_expect_eq(len, 6);
	dec_init(&d, buf, len);
	cr_expect_eq(dec_begin(&d, 3, &body, &version), 0);
	cr_expect_eq(version, 3);
	cr_expect_eq(dec_left(&body), 0);
	cr_expect_eq(dec_end(&d, &body), 0);
	cr_expect_eq(dec_finish(&d), 0);
	free(buf);
}

Test(section, nested_sections_skip_independently)
{
	struct dec d, outer, inner;
	uint8_t version;
	struct enc e;
	size_t ho, hi;
	uint8_t *buf;
	size_t len;

	enc_init(&e);
	ho = enc_begin(&e, 1, 1);
	hi = enc_begin(&e, 5, 1);
	enc_u32(&e, 1);
	enc_u32(&e, 2);		/* unknown to the reader */
	enc_end(&e, hi);
	enc_u8(&e, 3);
	enc_u64(&e, 4);		/* unknown to the reader */
	enc_end(&e, ho);
	enc_u8(&e, 5);
	buf = cr_enc_take(&e, &len);

	dec_init(&d, buf, len);
	cr_assert_eq(dec_begin(&d, 1, &outer, &version), 0);
	cr_assert_eq(dec_begin(&outer, 1, &inner, &version), 0);
	cr_expect_eq(version, 5);
	cr_expect_eq(dec_u32(&inner), 1);
	cr_expect_eq(dec_end(&outer, &inner), 0);
	cr_expect_eq(dec_u8(&outer), 3);
	cr_expect_eq(dec_end(&d, &outer), 0);
	cr_expect_eq(dec_u8(&d), 5);
	cr_expect_eq(dec_finish(&d), 0);
	free(buf);
}

/* ---- the sample record ---- */

static void check_sample_round_trip(uint32_t seed, uint8_t version)
{
	struct sample a, b;
	struct enc e;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(sample_fill(&a, seed), 0);
	enc_init(&e);
	sample_encode(&e, &a, version);
	buf = cr_enc_take(&e, &len);
	cr_assert_eq(sample_decode(buf, len, &b), 0, "seed %u", seed);
	cr_expect(sample_equal(&a, &b, version >= 2), "seed %u", seed);
	if (version < 2)
		cr_expect_eq(b.mtime, 0);
	sample_free(&a);
	sample_free(&b);
	free(buf);
}

Test(sample, version_2_records_round_trip)
{
	uint32_t seed;

	for (seed = 1; seed <= 200; seed++)
		check_sample_round_trip(seed, 2);
}

Test(sample, version_1_records_decode_without_the_new_field)
{
	uint32_t seed;

	for (seed = 1; seed <= 50; seed++)
		check_sample_round_trip(seed, 1);
}

Test(sample, record_with_too_many_extents_is_e2big)
{
	struct sample a, b;
	struct enc e;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(sample_fill(&a, 7), 0);
	free(a.ext);
	a.n_ext = SAMPLE_EXT_MAX + 1;
	a.ext = calloc(a.n_ext, sizeof(*a.ext));
	cr_assert_not_null(a.ext);
	enc_init(&e);
	sample_encode(&e, &a, 2);
	buf = cr_enc_take(&e, &len);
	cr_expect_eq(sample_decode(buf, len, &b), -E2BIG);
	sample_free(&b);
	sample_free(&a);
	free(buf);
}

/* ---- random corruption ---- */

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* One damaged copy of good[0..len): bit flips, overwritten lengths,
 * truncation or extension.  Returns an exact-size heap buffer. */
static uint8_t *corrupt(const uint8_t *good, size_t len, uint32_t *x, size_t *outlen)
{
	size_t n = len, i, k;
	uint8_t *buf;

	switch (rnd(x) % 5) {
	case 0:		/* truncate */
		n = len ? rnd(x) % len : 0;
		break;
	case 1:		/* extend with random bytes */
		n = len + 1 + rnd(x) % 64;
		break;
	default:
		break;
	}
	buf = malloc(n ? n : 1);
	cr_assert_not_null(buf);
	memcpy(buf, good, n < len ? n : len);
	for (i = len; i < n; i++)
		buf[i] = (uint8_t)rnd(x);
	if (n == 0)
		goto out;
	k = 1 + rnd(x) % 4;
	for (i = 0; i < k; i++) {
		size_t at = rnd(x) % n;

		switch (rnd(x) % 3) {
		case 0:
			buf[at] ^= (uint8_t)(1u << (rnd(x) % 8));
			break;
		case 1:
			buf[at] = (uint8_t)rnd(x);
			break;
		default:	/* a huge or off-by-one length */
			if (at + 4 <= n) {
				static const uint32_t evil[] = {
					0xffffffffu, 0x7fffffffu, 0x80000000u, 0x10000u, 0,
				};
				uint32_t v = evil[rnd(x) % 5];

				buf[at] = (uint8_t)v;
				buf[at + 1] = (uint8_t)(v >> 8);
				buf[at + 2] = (uint8_t)(v >> 16);
				buf[at + 3] = (uint8_t)(v >> 24);
			}
			break;
		}
	}
out:
	*outlen = n;
	return buf;
}

Test(sample, randomly_corrupted_records_fail_cleanly, .timeout = 60)
{
	uint32_t x = 0x9e3779b9u, seed, round;
	unsigned int ok = 0, failed = 0;

	for (seed = 1; seed <= 40; seed++) {
		struct sample a, b;
		struct enc e;
		uint8_t *good;
		size_t len;

		cr_assert_eq(sample_fill(&a, seed), 0);
		enc_init(&e);
		sample_encode(&e, &a, (uint8_t)(1 + seed % 2));
		good = cr_enc_take(&e, &len);
		for (round = 0; round < 250; round++) {
			uint8_t *bad;
			size_t blen;
			int r;

			bad = corrupt(good, len, &x, &blen);
			r = sample_decode(bad, blen, &b);
			if (r == 0) {
				ok++;
			} else {
				failed++;
				cr_expect(r == -EBADMSG || r == -E2BIG || r == -EPROTONOSUPPORT,
					  "unexpected error %d", r);
			}
			cr_expect_leq(b.data_len, SAMPLE_DATA_MAX);
			cr_expect_leq(b.n_ext, SAMPLE_EXT_MAX);
			cr_expect_leq(b.n_attr, SAMPLE_ATTR_MAX);
			cr_expect_leq(strlen(b.name), SAMPLE_NAME_MAX);
			sample_free(&b);
			free(bad);
		}
		sample_free(&a);
		free(good);
	}
	cr_expect_eq(ok + failed, 40 * 250);
	cr_expect_gt(failed, 0);
}
