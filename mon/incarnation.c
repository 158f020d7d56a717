/*
 * incarnation.c - the replicated bytes of the monitor cluster's
 * incarnation (rebuild.c says what it is for): the incarnation entry in
 * the log and the trailer after the state blob in a snapshot.  Pure
 * encoders and bounds-checked decoders, beside entry.c in the mon_entry
 * library so that tests/fuzz links them alone.
 *
 *   entry:   "ATINCARN" u64 incarnation (> 0); a map-change entry starts
 *            with its section's version and compat bytes (1, 1), so the
 *            two never look alike
 *   trailer: u64 incarnation, u32 "ICN1", right after the state blob's
 *            section (libraft may pad a snapshot to 8 bytes after it)
 */
#include <errno.h>
#include <string.h>

#include "encode.h"
#include "entry.h"

#define INC_ENTRY_MAGIC		"ATINCARN"
#define INC_TRAILER_MAGIC	0x314e4349u	/* "ICN1" */

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void mon_incarnation_entry_encode(uint64_t inc, struct enc *out)
{
	enc_raw(out, INC_ENTRY_MAGIC, 8);
	enc_u64(out, inc);
}

int mon_incarnation_entry_decode(const void *buf, size_t len, uint64_t *inc)
{
	*inc = 0;
	if (len < 8 || memcmp(buf, INC_ENTRY_MAGIC, 8) != 0)
		return 0;
	/* trailing bytes: the log's padding to 8 bytes */
	if (len < 16)
		return -EBADMSG;
	*inc = le64((const uint8_t *)buf + 8);
	return *inc ? 1 : -EBADMSG;
}

void mon_incarnation_trailer_encode(uint64_t inc, struct enc *out)
{
	enc_u64(out, inc);
	enc_u32(out, INC_TRAILER_MAGIC);
}

size_t mon_incarnation_trailer_decode(const void *buf, size_t len, uint64_t *inc)
{
	const uint8_t *p = buf;
	uint64_t blob;

	*inc = 1;
	if (len < 6)
		return len;
	blob = 6 + (uint64_t)le32(p + 2);
	if (blob > len || len - blob < 12 || le32(p + blob + 8) != INC_TRAILER_MAGIC)
		return len;
	*inc = le64(p + blob);
	if (*inc < 1)
		*inc = 1;
	return (size_t)blob;
}
