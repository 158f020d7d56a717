/*
 * fuzz_mon_auth.c - libFuzzer target for the monitors' auth bytes
 * (mon/auth_entry.c): the auth log entries a member applies and the auth
 * section of a snapshot.  The first input byte picks the decoder.  A
 * decoder must fail cleanly or succeed; what decodes re-encodes to bytes
 * that decode again to the same encoding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth_entry.h"
#include "encode.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct enc e1, e2;

	if (size < 1)
		return 0;
	enc_init(&e1);
	enc_init(&e2);
	if (data[0] & 1) {
		struct mon_auth_entry a, b;

		if (mon_auth_entry_decode(data + 1, size - 1, &a) == 1) {
			mon_auth_entry_encode(&a, &e1);
			if (mon_auth_entry_decode(e1.buf, e1.len, &b) != 1)
				abort();
			mon_auth_entry_encode(&b, &e2);
			fuzz_same_enc(&e1, &e2);
			mon_auth_entry_clear(&b);
		}
		mon_auth_entry_clear(&a);
	} else {
		struct mon_auth_state a, b;

		if (mon_auth_state_decode(data + 1, size - 1, &a) == 1) {
			mon_auth_state_encode(&a, &e1);
			if (mon_auth_state_decode(e1.buf, e1.len, &b) != 1)
				abort();
			mon_auth_state_encode(&b, &e2);
			fuzz_same_enc(&e1, &e2);
			keyring_free(&b.ents);
		}
		keyring_free(&a.ents);
	}
	enc_free(&e1);
	enc_free(&e2);
	return 0;
}
