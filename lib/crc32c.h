/*
 * crc32c.h - CRC-32C (Castagnoli) through isa-l.
 *
 * Standard CRC-32C: atoll__crc32c(0, "123456789", 9) == 0xE3069283.  It
 * chains: atoll__crc32c(atoll__crc32c(0, a, na), b, nb) equals the CRC of a
 * followed by b.
 */
#ifndef ATOLL_CRC32C_H
#define ATOLL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t atoll__crc32c(uint32_t crc, const void *buf, size_t len);

/* The CRC of a followed by b from crc1 = CRC(a), crc2 = CRC(b) and len2 =
 * the length of b (zlib's crc32_combine, for CRC-32C).  About a
 * microsecond: for joining a few big pieces. */
uint32_t atoll__crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* The same for many pieces of one fixed length (e.g. 4 KiB blocks whose
 * crcs are known): a table made once per length turns each combine into
 * four lookups. */
struct crc32c_shift {
	uint64_t len;
	uint32_t t[4][256];
};

void atoll__crc32c_shift_init(struct crc32c_shift *s, uint64_t len);

/* The table for 4 KiB blocks (the store's and the messenger's), made on
 * first use. */
const struct crc32c_shift *atoll__crc32c_shift_4k(void);

static inline uint32_t atoll__crc32c_shift_combine(const struct crc32c_shift *s,
						   uint32_t crc1, uint32_t crc2)
{
	return s->t[0][crc1 & 0xff] ^ s->t[1][(crc1 >> 8) & 0xff] ^
	       s->t[2][(crc1 >> 16) & 0xff] ^ s->t[3][crc1 >> 24] ^ crc2;
}

#endif
