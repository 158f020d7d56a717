/*
 * fuzz_pglog.c - libFuzzer target for the PG log's decoders
 * (osd/pglog.c): a log entry, a dup record and a pg_info.  Entries travel
 * inside REP_OP, infos inside PG_NOTIFY, and all three are read back from
 * the store's omap, so each is untrusted input.
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "pglog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *take(struct enc *e, size_t *len)
{
	void *buf = enc_take(e, len);

	if (!buf)
		abort();
	return buf;
}

static void same(const void *a, size_t alen, const void *b, size_t blen)
{
	if (alen != blen || memcmp(a, b, alen))
		abort();
}

static void check_entry(struct dec *d)
{
	struct pglog_entry le, le2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (pglog_entry_decode(d, &le) < 0)
		return;
	if (!le.oid || !le.oid_len || memchr(le.oid, 0, le.oid_len))
		abort();	/* the decoder promises a name without NUL */
	enc_init(&e);
	pglog_entry_encode(&le, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (pglog_entry_decode(&d2, &le2) < 0)
		abort();
	pglog_entry_encode(&le2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_dup(struct dec *d)
{
	struct pglog_dup du, du2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (pglog_dup_decode(d, &du) < 0)
		return;
	enc_init(&e);
	pglog_dup_encode(&du, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (pglog_dup_decode(&d2, &du2) < 0)
		abort();
	pglog_dup_encode(&du2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_info(struct dec *d)
{
	struct pg_info in, in2, cp;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (pg_info_decode(d, &in) < 0) {
		if (in.past || in.npast)
			abort();	/* a failed decode leaves nothing to free */
		return;
	}
	if (in.nacting > OSDMAP_SIZE_MAX || in.npast > PG_PAST_INTERVALS_MAX)
		abort();
	enc_init(&e);
	pg_info_encode(&in, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (pg_info_decode(&d2, &in2) < 0)
		abort();
	pg_info_encode(&in2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	/* the helpers that work on a decoded info */
	if (pg_info_copy(&cp, &in2) == 0) {
		if (in2.npast)
			pg_info_prune_past(&cp, in2.past[in2.npast / 2].last);
		pg_info_clear(&cp);
	}
	pg_info_clear(&in2);
	pg_info_clear(&in);
	free(b1);
	free(b2);
	enc_free(&e);
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
