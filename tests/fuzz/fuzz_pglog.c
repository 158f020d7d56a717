/*
 * fuzz_pglog.c - libFuzzer target for the PG log's decoders
 * (osd/pglog.c): a log entry, a dup record and a pg_info.  Entries travel
 * inside REP_OP, infos inside PG_NOTIFY, and all three are read back from
 * the store's omap, so each is untrusted input.
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode to the same bytes (roundtrip.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "pglog.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(struct dec *d)
{
	struct pglog_entry le;

	if (pglog_entry_decode(d, &le) < 0)
		return;
	if (!le.oid || !le.oid_len || memchr(le.oid, 0, le.oid_len))
		abort();	/* the decoder promises a name without NUL */
	FUZZ_ROUND_TRIP(struct pglog_entry, &le, pglog_entry_encode, pglog_entry_decode,
			FUZZ_NO_CLEAR);
}

static void check_dup(struct dec *d)
{
	struct pglog_dup du;

	if (pglog_dup_decode(d, &du) < 0)
		return;
	FUZZ_ROUND_TRIP(struct pglog_dup, &du, pglog_dup_encode, pglog_dup_decode,
			FUZZ_NO_CLEAR);
}

static void check_info(struct dec *d)
{
	struct pg_info in, cp;

	if (pg_info_decode(d, &in) < 0) {
		if (in.past || in.npast)
			abort();	/* a failed decode leaves nothing to free */
		return;
	}
	if (in.nacting > OSDMAP_SIZE_MAX || in.npast > PG_PAST_INTERVALS_MAX)
		abort();
	FUZZ_ROUND_TRIP(struct pg_info, &in, pg_info_encode, pg_info_decode, pg_info_clear);
	/* the helpers that work on a decoded info */
	if (pg_info_copy(&cp, &in) == 0) {
		if (in.npast)
			pg_info_prune_past(&cp, in.past[in.npast / 2].last);
		pg_info_clear(&cp);
	}
	pg_info_clear(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	switch (data[0] % 3) {
	case 0:
		check_entry(&d);
		break;
	case 1:
		check_dup(&d);
		break;
	case 2:
		check_info(&d);
		break;
	}
	return 0;
}
