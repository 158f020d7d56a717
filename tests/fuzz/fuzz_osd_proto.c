/*
 * fuzz_osd_proto.c - libFuzzer target for the decoders of the messages
 * OSDs send each other (osd/osd_proto.c): REP_OP, PG_QUERY, PG_NOTIFY
 * (which carries a pg_info), OSD_PING and PG_SCAN.
 *
 * The first input byte picks the decoder, the rest is the front.  For
 * REP_OP the second byte says how many bytes from the end form the data
 * segment (the write bytes).  A decoder must fail cleanly or succeed; what
 * decodes must re-encode to bytes that decode again and re-encode to the
 * same bytes (encode and decode agree).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Takes e's bytes; aborts when out of memory (not a finding). */
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

static void check_rep_op(const uint8_t *p, size_t n)
{
	struct osd_rep_op r, r2;
	struct enc e;
	struct dec d;
	const uint8_t *dp;
	size_t dlen, l1, l2;
	void *b1, *b2;

	if (!n)
		return;
	dlen = p[0] % n;
	p++;
	n--;
	if (dlen > n)
		dlen = n;
	dp = p + (n - dlen);
	dec_init(&d, p, n - dlen);
	if (osd_rep_op_decode(&d, dp, dlen, &r) < 0)
		return;
	enc_init(&e);
	osd_rep_op_encode(&r, &e);
	b1 = take(&e, &l1);
	/* every write's bytes were taken from the data segment, in order */
	dec_init(&d, b1, l1);
	if (osd_rep_op_decode(&d, dp, dlen, &r2) < 0)
		abort();
	osd_rep_op_encode(&r2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	osd_rep_op_clear(&r2);
	osd_rep_op_clear(&r);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_query(struct dec *d)
{
	struct osd_pg_query q, q2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (osd_pg_query_decode(d, &q) < 0)
		return;
	enc_init(&e);
	osd_pg_query_encode(&q, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (osd_pg_query_decode(&d2, &q2) < 0)
		abort();
	osd_pg_query_encode(&q2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_notify(struct dec *d)
{
	struct osd_pg_notify n, n2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (osd_pg_notify_decode(d, &n) < 0)
		return;
	enc_init(&e);
	osd_pg_notify_encode(&n, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (osd_pg_notify_decode(&d2, &n2) < 0)
		abort();
	osd_pg_notify_encode(&n2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	pg_info_clear(&n2.info);
	pg_info_clear(&n.info);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_ping(struct dec *d)
{
	struct osd_ping p, p2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (osd_ping_decode(d, &p) < 0)
		return;
	enc_init(&e);
	osd_ping_encode(&p, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (osd_ping_decode(&d2, &p2) < 0)
		abort();
	osd_ping_encode(&p2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	free(b1);
	free(b2);
	enc_free(&e);
}

static void check_scan(struct dec *d)
{
	struct osd_pg_scan s, s2;
	struct enc e;
	struct dec d2;
	size_t l1, l2;
	void *b1, *b2;

	if (osd_pg_scan_decode(d, &s) < 0)
		return;
	enc_init(&e);
	osd_pg_scan_encode(&s, &e);
	b1 = take(&e, &l1);
	dec_init(&d2, b1, l1);
	if (osd_pg_scan_decode(&d2, &s2) < 0)
		abort();
	osd_pg_scan_encode(&s2, &e);
	b2 = take(&e, &l2);
	same(b1, l1, b2, l2);
	osd_pg_scan_clear(&s2);
	osd_pg_scan_clear(&s);
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
	switch (data[0] % 5) {
	case 0:
		check_rep_op(data + 1, size - 1);
		break;
	case 1:
		check_query(&d);
		break;
	case 2:
		check_notify(&d);
		break;
	case 3:
		check_ping(&d);
		break;
	case 4:
		check_scan(&d);
		break;
	}
	return 0;
}
