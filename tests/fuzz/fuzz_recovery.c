/*
 * fuzz_recovery.c - libFuzzer target for the recovery messages OSDs send
 * each other (osd/osd_proto.c): PG_LOG (a member's log entries, the
 * entries to apply) and PG_PUSH (one chunk of an object, its attributes
 * and omap), which any OSD peer reaches, and the object info attribute
 * that recovery, backfill and ops read back from the store (any REP_OP
 * or PG_PUSH can have written it).
 *
 * The first input byte picks the decoder, the rest is the front.  For
 * PG_PUSH the second byte says how many bytes from the end form the data
 * segment (the chunk).  A decoder must fail cleanly or succeed; what
 * decodes must hold what the OSD relies on (a chunk inside its object,
 * entries in order) and survive the round trip of roundtrip.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd_proto.h"
#include "roundtrip.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_log(struct dec *d)
{
	struct osd_pg_log l;

	if (osd_pg_log_decode(d, &l) < 0)
		return;
	if (l.nentries > OSD_PG_LOG_ENTRIES_MAX)
		abort();
	for (uint32_t i = 1; i < l.nentries; i++)
		if (l.entries[i].version.seq <= l.entries[i - 1].version.seq)
			abort();
	FUZZ_ROUND_TRIP(struct osd_pg_log, &l, osd_pg_log_encode, osd_pg_log_decode,
			osd_pg_log_clear);
	osd_pg_log_clear(&l);
}

/* The chunk a PG_PUSH decodes with. */
static const uint8_t *push_data;
static size_t push_data_len;

static int push_decode(struct dec *d, struct osd_pg_push *p)
{
	return osd_pg_push_decode(d, push_data, push_data_len, p);
}

static void check_push(const uint8_t *p, size_t n)
{
	struct osd_pg_push push;
	struct dec d;
	size_t dlen;

	if (!fuzz_split_data(&p, &n, &dlen))
		return;
	push_data = p + (n - dlen);
	push_data_len = dlen;
	dec_init(&d, p, n - dlen);
	if (push_decode(&d, &push) < 0)
		return;
	/* the receiver writes [off, off + len) of an object of size bytes */
	if (push.kind != PGP_PULL &&
	    (push.len != dlen || push.off > push.size || push.len > push.size - push.off))
		abort();
	if (!push.oid_len || push.oid_len > STORE_NAME_MAX ||
	    memchr(push.oid, 0, push.oid_len))
		abort();
	FUZZ_ROUND_TRIP(struct osd_pg_push, &push, osd_pg_push_encode, push_decode,
			osd_pg_push_clear);
	osd_pg_push_clear(&push);
}

static void check_oi(const uint8_t *p, size_t n)
{
	struct osd_oi oi, again;
	struct enc e;

	if (osd_oi_decode(p, n, &oi) < 0)
		return;
	enc_init(&e);
	osd_oi_encode(&oi, &e);
	if (e.err || e.len > OSD_OI_MAX || osd_oi_decode(e.buf, e.len, &again) < 0 ||
	    memcmp(&oi, &again, sizeof(oi)))
		abort();
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
		check_log(&d);
		break;
	case 1:
		check_push(data + 1, size - 1);
		break;
	case 2:
		check_oi(data + 1, size - 1);
		break;
	}
	return 0;
}
