/*
 * test_crc32c.c - lib/crc32c.c: the standard check value, chaining,
 * unaligned buffers, zero length, and combining crcs of pieces.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

/* A bit-at-a-time reference implementation (reflected, poly 0x82F63B78),
 * to compare isa-l's result against on arbitrary data. */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, size_t n)
{
	size_t i;
	int b;

	crc = ~crc;
	for (i = 0; i < n; i++) {
		crc ^= p[i];
		for (b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void fill(uint8_t *p, size_t n)
{
	uint32_t x = 12345;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

Test(crc32c, check_value_of_123456789)
{
	cr_expect_eq(atoll__crc32c(0, "123456789", 9), 0xE3069283u);
}

Test(crc32c, zero_length_returns_the_seed)
{
	cr_expect_eq(atoll__crc32c(0, "", 0), 0);
	cr_expect_eq(atoll__crc32c(0xE3069283u, "x", 0), 0xE3069283u);
	cr_expect_eq(atoll__crc32c(0, NULL, 0), 0);
}

Test(crc32c, chaining_equals_one_pass)
{
	uint8_t buf[1000];
	uint32_t whole;
	size_t cut;

	fill(buf, sizeof(buf));
	whole = atoll__crc32c(0, buf, sizeof(buf));
	for (cut = 0; cut <= sizeof(buf); cut += 37)
		cr_expect_eq(atoll__crc32c(atoll__crc32c(0, buf, cut), buf + cut,
					  sizeof(buf) - cut), whole, "cut at %zu", cut);
}

Test(crc32c, chaining_byte_by_byte)
{
	const char *s = "123456789";
	uint32_t crc = 0;
	size_t i;

	for (i = 0; i < 9; i++)
		crc = atoll__crc32c(crc, s + i, 1);
	cr_expect_eq(crc, 0xE3069283u);
}

Test(crc32c, unaligned_buffers_and_odd_lengths_match_the_reference)
{
	uint8_t *buf = malloc(4096 + 64);
	size_t off, len;

	cr_assert_not_null(buf);
	fill(buf, 4096 + 64);
	for (off = 0; off < 16; off++)
		for (len = 0; len < 300; len += 7)
			cr_expect_eq(atoll__crc32c(0, buf + off, len),
				     crc32c_ref(0, buf + off, len),
				     "offset %zu length %zu", off, len);
	cr_expect_eq(atoll__crc32c(0, buf + 3, 4096), crc32c_ref(0, buf + 3, 4096));
	free(buf);
}

Test(crc32c, different_data_gives_a_different_crc)
{
	cr_expect_neq(atoll__crc32c(0, "123456789", 9), atoll__crc32c(0, "123456788", 9));
}

Test(crc32c, combine_equals_the_crc_of_the_concatenation)
{
	static uint8_t buf[300000];
	const size_t cuts[] = { 0, 1, 3, 4096, 65536, 100001, sizeof(buf) };

	fill(buf, sizeof(buf));
	for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
		size_t a = cuts[k];
		uint32_t ca = atoll__crc32c(0, buf, a);
		uint32_t cb = atoll__crc32c(0, buf + a, sizeof(buf) - a);

		cr_expect_eq(atoll__crc32c_combine(ca, cb, sizeof(buf) - a),
			     atoll__crc32c(0, buf, sizeof(buf)), "cut at %zu", a);
	}
}

/* Blocks of a fixed length joined through one table, as the store joins
 * the known crcs of 4 KiB blocks into the crc of a read. */
Test(crc32c, shift_table_joins_fixed_length_pieces)
{
	static uint8_t buf[64 * 4096];
	static struct crc32c_shift s4k, s1;
	uint32_t crc = 0;

	fill(buf, sizeof(buf));
	atoll__crc32c_shift_init(&s4k, 4096);
	atoll__crc32c_shift_init(&s1, 1);
	cr_expect_eq(s4k.len, 4096);
	for (size_t i = 0; i < 64; i++)
		crc = atoll__crc32c_shift_combine(&s4k, crc, atoll__crc32c(0, buf + i * 4096, 4096));
	cr_expect_eq(crc, atoll__crc32c(0, buf, sizeof(buf)));
	crc = atoll__crc32c(0, buf, 10);
	crc = atoll__crc32c_shift_combine(&s1, crc, atoll__crc32c(0, buf + 10, 1));
	cr_expect_eq(crc, atoll__crc32c(0, buf, 11));
	cr_expect_eq(atoll__crc32c_shift_combine(&s4k, 0, 0x12345678u), 0x12345678u,
		     "the crc of nothing joined to b is b's");
}
