/*
 * fuzz_encode.c - libFuzzer target for the lib/encode.h decoders.
 *
 * Decodes arbitrary bytes as the sample record (nested versioned sections,
 * capped blobs, strings and lists).  Whatever the input, decoding must
 * fail cleanly or succeed; the sanitizers catch any out-of-bounds read,
 * and a record that decodes must survive a re-encode/decode round trip
 * unchanged, and must respect every cap.
 */
#include <stdint.h>
#include <stdlib.h>

#include "encode_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sample s, again;
	struct enc e;
	void *buf;
	size_t len;
	int r;

	r = sample_decode(data, size, &s);
	if (r < 0)
		goto out_free_sample;
	if (s.data_len > SAMPLE_DATA_MAX || s.n_ext > SAMPLE_EXT_MAX ||
	    s.n_attr > SAMPLE_ATTR_MAX)
		abort();

	enc_init(&e);
	sample_encode(&e, &s, 2);
	buf = enc_take(&e, &len);
	if (!buf)
		abort();
	if (sample_decode(buf, len, &again) != 0 || !sample_equal(&s, &again, 0))
		abort();
	sample_free(&again);
	free(buf);
out_free_sample:
	sample_free(&s);
	return 0;
}
