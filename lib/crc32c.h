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

#endif
