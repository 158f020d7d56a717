/*
 * fuzz_mon_clog.c - libFuzzer target for the cluster log's replicated
 * bytes (mon/clog_entry.c): the entry a member applies from the log, the
 * snapshot section (InstallSnapshot and a member's own snapshot files),
 * and the walk over a snapshot's tagged sections.
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes re-encodes to bytes
 * that decode again and re-encode to the same bytes, and a decoded log
 * keeps its invariants (consecutive seqs, at most keep lines).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "encode.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_log(const struct mon_clog *c)
{
	if (c->n > c->keep || c->next_seq < 1 + (uint64_t)c->n)
		abort();
	for (uint32_t k = 0; k < c->n; k++)
		if (mon_clog_at(c, k)->seq != mon_clog_first_seq(c) + k)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mon_clog_entry a, b;
	struct enc e1, e2;

	if (size < 1)
		return 0;
	enc_init(&e1);
	enc_init(&e2);
	switch (data[0] % 3) {
	case 0:
		if (mon_clog_entry_decode(data + 1, size - 1, &a) == 1) {
			if (a.n > MON_CLOG_ENTRY_LINES_MAX)
				abort();
			mon_clog_entry_encode(&a, &e1);
			if (e1.err || mon_clog_entry_decode(e1.buf, e1.len, &b) != 1)
				abort();
			mon_clog_entry_encode(&b, &e2);
			fuzz_same_enc(&e1, &e2);
		}
		break;
	case 1: {
		struct mon_clog c, d;

		if (mon_clog_state_decode(data + 1, size - 1, &c) == 1) {
			check_log(&c);
			mon_clog_state_encode(&c, &e1);
			if (e1.err || mon_clog_state_decode(e1.buf, e1.len, &d) != 1)
				abort();
			check_log(&d);
			mon_clog_state_encode(&d, &e2);
			fuzz_same_enc(&e1, &e2);
			/* a line more past the bound drops the oldest */
			mon_clog_add(&d, 1, MON_CLOG_WRN, "osd.0 down");
			check_log(&d);
			mon_clog_free(&d);
			mon_clog_free(&c);
		}
		break;
	}
	default: {
		size_t l = mon_state_section_len(data + 1, size - 1);

		if (l > size - 1 || (l && l < 14))
			abort();
		break;
	}
	}
	enc_free(&e1);
	enc_free(&e2);
	return 0;
}
