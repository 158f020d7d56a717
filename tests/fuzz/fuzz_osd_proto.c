/*
 * fuzz_osd_proto.c - libFuzzer target for the decoders of the messages
 * OSDs send each other (osd/osd_proto.c): REP_OP, PG_QUERY, PG_NOTIFY
 * (which carries a pg_info), OSD_PING and PG_SCAN.
 *
 * The first input byte picks the decoder, the rest is the front.  For
 * REP_OP the second byte says how many bytes from the end form the data
 * segment (the write bytes).  A decoder must fail cleanly or succeed; what
 * decodes must re-encode to bytes that decode again and re-encode to the
 * same bytes (encode and decode agree: roundtrip.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd_proto.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The data segment a REP_OP decodes with (its writes' bytes). */
static const uint8_t *rep_data;
static size_t rep_data_len;

static int rep_op_decode(struct dec *d, struct osd_rep_op *r)
{
	return osd_rep_op_decode(d, rep_data, rep_data_len, r);
}

static void check_rep_op(const uint8_t *p, size_t n)
{
	struct osd_rep_op r;
	struct dec d;
	size_t dlen;

	if (!fuzz_split_data(&p, &n, &dlen))
		return;
	rep_data = p + (n - dlen);
	rep_data_len = dlen;
	dec_init(&d, p, n - dlen);
	if (rep_op_decode(&d, &r) < 0)
		return;
	/* every write's bytes were taken from the data segment, in order */
	FUZZ_ROUND_TRIP(struct osd_rep_op, &r, osd_rep_op_encode, rep_op_decode,
			osd_rep_op_clear);
	osd_rep_op_clear(&r);
}

static void check_query(struct dec *d)
{
	struct osd_pg_query q;

	if (osd_pg_query_decode(d, &q) < 0)
		return;
	FUZZ_ROUND_TRIP(struct osd_pg_query, &q, osd_pg_query_encode, osd_pg_query_decode,
			FUZZ_NO_CLEAR);
}

static void notify_clear(struct osd_pg_notify *n)
{
	pg_info_clear(&n->info);
}

static void check_notify(struct dec *d)
{
	struct osd_pg_notify n;

	if (osd_pg_notify_decode(d, &n) < 0)
		return;
	FUZZ_ROUND_TRIP(struct osd_pg_notify, &n, osd_pg_notify_encode, osd_pg_notify_decode,
			notify_clear);
	notify_clear(&n);
}

static void check_ping(struct dec *d)
{
	struct osd_ping p;

	if (osd_ping_decode(d, &p) < 0)
		return;
	FUZZ_ROUND_TRIP(struct osd_ping, &p, osd_ping_encode, osd_ping_decode, FUZZ_NO_CLEAR);
}

static void check_scan(struct dec *d)
{
	struct osd_pg_scan s;

	if (osd_pg_scan_decode(d, &s) < 0)
		return;
	FUZZ_ROUND_TRIP(struct osd_pg_scan, &s, osd_pg_scan_encode, osd_pg_scan_decode,
			osd_pg_scan_clear);
	osd_pg_scan_clear(&s);
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
