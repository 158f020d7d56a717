/*
 * crc32c.c - CRC-32C (Castagnoli) through isa-l.
 *
 * isa-l's crc32_iscsi() neither pre- nor post-inverts the register, so we
 * invert around it to get the standard CRC-32C (the check value of
 * "123456789" is 0xE3069283) and a CRC that chains by passing the
 * previous result back in.  isa-l takes an int length and a non-const
 * pointer (it does not write through it), so long buffers go in pieces.
 */
#include "crc32c.h"

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
