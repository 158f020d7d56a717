/*
 * crc32c.c - CRC-32C (Castagnoli) through isa-l.
 *
 * isa-l's crc32_iscsi() neither pre- nor post-inverts the register, so we
 * invert around it to get the standard CRC-32C (the check value of
 * "123456789" is 0xE3069283) and a CRC that chains by passing the
 * previous result back in.  isa-l takes an int length and a non-const
 * pointer (it does not write through it), so long buffers go in pieces.
 *
 * Combining: appending len2 bytes to a message multiplies its CRC register
 * by x^(8 len2) modulo the polynomial, which is linear over GF(2); the
 * inversions at both ends cancel out (zlib's crc32_combine argument).
 */
#include "crc32c.h"

#include <pthread.h>

#include <isa-l/crc.h>

/* A multiple of 64 keeps every piece but the last on isa-l's fast path. */
#define CRC_CHUNK ((size_t)1 << 30)

uint32_t atoll__crc32c(uint32_t crc, const void *buf, size_t len)
{
	unsigned char *p = (unsigned char *)buf;
	unsigned int reg = ~crc;

	while (len > 0) {
		size_t n = len < CRC_CHUNK ? len : CRC_CHUNK;

		reg = crc32_iscsi(p, (int)n, reg);
		p += n;
		len -= n;
	}
	return ~reg;
}

#define CRC32C_POLY_REFLECTED	0x82f63b78u

/* a * b modulo the CRC-32C polynomial, both reflected (bit 31 is x^0). */
static uint32_t crc_multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ CRC32C_POLY_REFLECTED : b >> 1;
	}
	return p;
}

/* x^(8 len) modulo the polynomial, reflected. */
static uint32_t crc_x8n(uint64_t len)
{
	uint32_t x2n = 1u << 30;	/* x^1, squared below to x^(2^k) */
	uint32_t p = 1u << 31;		/* x^0 */
	uint64_t n = len << 3;

	while (n) {
		if (n & 1)
			p = crc_multmodp(x2n, p);
		n >>= 1;
		if (n)
			x2n = crc_multmodp(x2n, x2n);
	}
	return p;
}

uint32_t atoll__crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	return crc_multmodp(crc_x8n(len2), crc1) ^ crc2;
}

void atoll__crc32c_shift_init(struct crc32c_shift *s, uint64_t len)
{
	uint32_t p = crc_x8n(len);

	s->len = len;
	for (unsigned k = 0; k < 4; k++)
		for (unsigned b = 0; b < 256; b++)
			s->t[k][b] = crc_multmodp(p, (uint32_t)b << (8 * k));
}

static struct crc32c_shift shift_4k;
static pthread_once_t shift_4k_once = PTHREAD_ONCE_INIT;

static void shift_4k_init(void)
{
	atoll__crc32c_shift_init(&shift_4k, 4096);
}

const struct crc32c_shift *atoll__crc32c_shift_4k(void)
{
	pthread_once(&shift_4k_once, shift_4k_init);
	return &shift_4k;
}
