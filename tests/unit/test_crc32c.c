/*
 * test_crc32c.c - lib/crc32c.c: the standard check value, chaining,
 * unaligned buffers and zero length.
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
