/*
 * fuzz_mon.c - libFuzzer target for the monitors' replicated bytes
 * (mon/entry.c): a log entry (what a follower applies from the leader),
 * a snapshot of the state (InstallSnapshot, and a member's own snapshot
 * files), and the MT_MON_RAFT frame (from any monitor connection).
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "roundtrip.h"
#include "entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mon_reqent ents[MON_REQIDS_MAX], ents2[MON_REQIDS_MAX];
	struct enc e1, e2;

	if (size < 1)
		return 0;
	enc_init(&e1);
	enc_init(&e2);
	switch (data[0] % 3) {
	case 0: {
		struct mon_entry a, b;

		if (mon_entry_decode(data + 1, size - 1, &a) == 0) {
			mon_entry_encode(&a, &e1);
			if (e1.err || mon_entry_decode(e1.buf, e1.len, &b) != 0)
				abort();
			mon_entry_encode(&b, &e2);
			fuzz_same_enc(&e1, &e2);
			mon_entry_clear(&b);
		}
		mon_entry_clear(&a);
		break;
	}
	case 1: {
		struct osdmap *m = NULL, *m2 = NULL;
		uint32_t n = 0, n2 = 0;

		if (mon_state_blob_decode(data + 1, size - 1, &m, ents, &n) == 0) {
			if (n > MON_REQIDS_MAX)
				abort();
			mon_state_blob_encode(m, ents, n, &e1);
			if (e1.err || mon_state_blob_decode(e1.buf, e1.len, &m2, ents2, &n2) != 0)
				abort();
			mon_state_blob_encode(m2, ents2, n2, &e2);
			fuzz_same_enc(&e1, &e2);
			osdmap_free(m2);
		}
		osdmap_free(m);
		break;
	}
	case 2: {
		struct mon_rt_frame f, g;

		if (mon_rt_frame_decode(data + 1, size - 1, &f) == 0) {
			if (memchr(f.addr, 0, sizeof(f.addr)) == NULL)
				abort();
			mon_rt_frame_encode(&f, &e1);
			if (e1.err || mon_rt_frame_decode(e1.buf, e1.len, &g) != 0)
				abort();
			mon_rt_frame_encode(&g, &e2);
			fuzz_same_enc(&e1, &e2);
		}
		break;
	}
	}
	enc_free(&e1);
	enc_free(&e2);
	return 0;
}
