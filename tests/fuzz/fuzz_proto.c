/*
 * fuzz_proto.c - libFuzzer target for every message decoder of
 * lib/proto.c and the map decoders of lib/osdmap.c.
 *
 * The first input byte picks the decoder, the rest is the front.  For
 * OSD_OP the second byte says how many bytes from the end form the data
 * segment.  A decoder must fail cleanly or succeed; a full map or an
 * incremental that decodes must survive re-encoding unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osdmap.h"
#include "proto.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_map(const uint8_t *p, size_t n)
{
	struct osdmap *m, *again;
	struct enc e;
	struct dec d;
	void *buf;
	size_t len;

	dec_init(&d, p, n);
	if (osdmap_decode(&d, &m) < 0)
		return;
	enc_init(&e);
	osdmap_encode(m, &e);
	buf = enc_take(&e, &len);
	if (!buf)
		abort();
	dec_init(&d, buf, len);
	if (osdmap_decode(&d, &again) < 0 || !osdmap_equal(m, again))
		abort();
	osdmap_free(again);
	osdmap_free(m);
	free(buf);
}

static void check_op(const uint8_t *p, size_t n)
{
	struct osd_op_req req;
	struct dec d;
	size_t dlen;

	if (!fuzz_split_data(&p, &n, &dlen))
		return;
	dec_init(&d, p, n - dlen);
	(void)osd_op_req_decode(&d, p + (n - dlen), dlen, &req);
	osd_op_req_clear(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;
	char *s;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	switch (data[0] % 12) {
	case 0:
		check_map(data + 1, size - 1);
		break;
	case 1: {
		struct osdmap_inc inc;

		memset(&inc, 0, sizeof(inc));
		(void)osdmap_inc_decode(&d, &inc);
		osdmap_inc_clear(&inc);
		break;
	}
	case 2: {
		struct mon_map_msg m;

		if (mon_map_msg_decode(&d, &m) == 0)
			mon_map_msg_clear(&m);
		break;
	}
	case 3:
		check_op(data + 1, size - 1);
		break;
	case 4: {
		struct osd_op_reply r;

		(void)osd_op_reply_decode(&d, size / 2, &r);
		osd_op_reply_clear(&r);
		break;
	}
	case 5: {
		struct osd_beacon b;

		if (osd_beacon_decode(&d, &b) == 0)
			osd_beacon_clear(&b);
		break;
	}
	case 6: {
		struct osd_boot_req b;

		(void)osd_boot_req_decode(&d, &b);
		break;
	}
	case 7:
		if (mon_command_decode(&d, &s, NULL) == 0)
			free(s);
		break;
	case 8: {
		struct mon_command_reply r;

		(void)mon_command_reply_decode(&d, &r, &s);
		free(s);
		break;
	}
	case 11: {
		struct mds_beacon b, again;
		struct enc e;
		struct dec d2;

		if (mds_beacon_decode(&d, &b) != 0)
			break;
		/* what decodes re-encodes to the same beacon */
		enc_init(&e);
		mds_beacon_encode(&b, &e);
		dec_init(&d2, e.buf, e.len);
		if (mds_beacon_decode(&d2, &again) != 0 || memcmp(&b, &again, sizeof(b)) != 0)
			abort();
		enc_free(&e);
		break;
	}
	case 10: {
		struct monmap_msg mm, again;
		struct enc e;
		struct dec d2;

		if (monmap_msg_decode(&d, &mm) != 0)
			break;
		/* what decodes re-encodes to the same monmap */
		enc_init(&e);
		monmap_msg_encode(&mm, &e);
		dec_init(&d2, e.buf, e.len);
		if (monmap_msg_decode(&d2, &again) != 0 ||
		    memcmp(&mm, &again, sizeof(mm)) != 0)
			abort();
		enc_free(&e);
		break;
	}
	default: {
		struct osd_failure f;
		struct mon_subscribe sub;

		struct osd_pg_temp_req pgt;
		struct osd_lease lease;

		(void)osd_failure_decode(&d, &f);
		dec_init(&d, data + 1, size - 1);
		(void)osd_lease_decode(&d, &lease);
		dec_init(&d, data + 1, size - 1);
		(void)mon_subscribe_decode(&d, &sub);
		dec_init(&d, data + 1, size - 1);
		(void)osd_pg_temp_req_decode(&d, &pgt);
		break;
	}
	}
	return 0;
}
