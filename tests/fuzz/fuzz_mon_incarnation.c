/*
 * fuzz_mon_incarnation.c - libFuzzer target for the monitor cluster's
 * incarnation bytes (mon/incarnation.c): the incarnation entry a member
 * applies from the log, and the trailer after the state blob in a
 * snapshot.  The first input byte picks the decoder.  A decoder must fail
 * cleanly or succeed; what decodes re-encodes to bytes that decode to the
 * same value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t v, w;
	size_t blob;
	struct enc e;

	if (size < 1)
		return 0;
	enc_init(&e);
	if (data[0] & 1) {
		if (mon_incarnation_entry_decode(data + 1, size - 1, &v) == 1) {
			mon_incarnation_entry_encode(v, &e);
			if (e.err || mon_incarnation_entry_decode(e.buf, e.len, &w) != 1 || w != v)
				abort();
		}
	} else {
		blob = mon_incarnation_trailer_decode(data + 1, size - 1, &v);
		if (blob > size - 1 || v < 1)
			abort();
		if (blob < size - 1) {
			/* the blob, then the trailer again: the same value */
			enc_raw(&e, data + 1, blob);
			mon_incarnation_trailer_encode(v, &e);
			if (e.err || mon_incarnation_trailer_decode(e.buf, e.len, &w) != blob ||
			    w != v)
				abort();
		}
	}
	enc_free(&e);
	return 0;
}
