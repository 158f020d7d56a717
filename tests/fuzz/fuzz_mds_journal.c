/*
 * fuzz_mds_journal.c - libFuzzer target for what the MDS reads back from
 * its metadata pool and its journal, and the journal's safe-reply:
 * MT_MDS_SAFE's front (mds_safe_decode, posixfs/mds_proto.c), a
 * transaction's journal body (mds_txn_decode), a journal segment framed
 * entry by entry (mds_journal_entry_decode) and an inode record
 * (mds_store_record_decode), all in posixfs/mds_codec.c.
 *
 * The first input byte picks the decoder, the rest is its input.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode the same (roundtrip.h); a
 * segment's entries must lie inside the segment.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "mds_proto.h"
#include "mds_store.h"
#include "mds_txn.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* struct mds_txn is ~80 KiB: two of them, kept off the stack */
static struct mds_txn txn, txn2;

static void safe_enc(const struct mds_safe *s, struct enc *e)
{
	mds_safe_encode(e, s);
}

static void txn_enc(const struct mds_txn *t, struct enc *e)
{
	mds_txn_encode(e, t);
}

static void check_txn(const uint8_t *p, size_t n)
{
	struct dec d;

	dec_init(&d, p, n);
	if (mds_txn_decode(&d, &txn) < 0)
		return;
	if (txn.nu < 0 || txn.nu > MDS_TXN_UPDS || txn.xlen > MDS_XATTR_MAX ||
	    !memchr(txn.link, 0, sizeof(txn.link)) || !memchr(txn.link2, 0, sizeof(txn.link2)))
		abort();
	FUZZ_ROUND_TRIP_INTO(&txn, &txn2, txn_enc, mds_txn_decode, FUZZ_NO_CLEAR);
}

/* A segment as replay reads it: entries one after the other until the
 * first torn one, each body a txn. */
static void check_segment(const uint8_t *p, size_t n)
{
	size_t pos = 0;

	while (pos < n) {
		const uint8_t *body;
		size_t len;
		uint64_t seq;

		if (mds_journal_entry_decode(p + pos, n - pos, &body, &len, &seq) < 0)
			break;
		if (body != p + pos + MDS_JOURNAL_FRAME_HDR || len > n - pos - MDS_JOURNAL_FRAME_HDR)
			abort();
		check_txn(body, len);
		pos += MDS_JOURNAL_FRAME_HDR + len;
	}
}

/* An inode record: the inode, its symlink target, a parent. */
static void check_record(const uint8_t *p, size_t n)
{
	static char link[MDS_PATH_MAX + 1], link2[MDS_PATH_MAX + 1];
	struct mds_inode in, in2;
	struct enc e1, e2;

	if (mds_store_record_decode(p, n, &in, link) < 0)
		return;
	if (!memchr(link, 0, sizeof(link)))
		abort();
	enc_init(&e1);
	enc_init(&e2);
	mds_store_record_encode(&e1, &in, link);
	if (e1.err || mds_store_record_decode(e1.buf, e1.len, &in2, link2) < 0)
		abort();
	mds_store_record_encode(&e2, &in2, link2);
	fuzz_same_enc(&e1, &e2);
	enc_free(&e1);
	enc_free(&e2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	switch (data[0] % 4) {
	case 0: {
		struct mds_safe s;

		if (mds_safe_decode(&d, &s) == 0)
			FUZZ_ROUND_TRIP(struct mds_safe, &s, safe_enc, mds_safe_decode,
					FUZZ_NO_CLEAR);
		break;
	}
	case 1:
		check_txn(data + 1, size - 1);
		break;
	case 2:
		check_segment(data + 1, size - 1);
		break;
	case 3:
		check_record(data + 1, size - 1);
		break;
	}
	return 0;
}
