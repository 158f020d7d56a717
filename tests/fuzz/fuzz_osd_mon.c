/*
 * fuzz_osd_mon.c - libFuzzer target for the small messages between an
 * OSD and the monitors that fuzz_proto.c leaves out (lib/proto.c):
 * OSD_NEW's request and reply, OSD_BOOT's reply, OSD_STOPPING and the
 * plain {rc, epoch} reply (rc_reply) that answers it and many others.
 *
 * The first input byte picks the decoder, the rest is the front.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode the same (roundtrip.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "proto.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The boot reply's status is a NUL-terminated sentence in a fixed array:
 * what decoded must be terminated inside it. */
static void check_boot_reply(struct dec *d)
{
	struct osd_boot_reply r;

	if (osd_boot_reply_decode(d, &r) < 0)
		return;
	if (!memchr(r.status, 0, sizeof(r.status)))
		abort();
	FUZZ_ROUND_TRIP(struct osd_boot_reply, &r, osd_boot_reply_encode,
			osd_boot_reply_decode, FUZZ_NO_CLEAR);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	switch (data[0] % 5) {
	case 0: {
		struct osd_new_req q;

		if (osd_new_req_decode(&d, &q) == 0)
			FUZZ_ROUND_TRIP(struct osd_new_req, &q, osd_new_req_encode,
					osd_new_req_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 1: {
		struct osd_new_reply r;

		if (osd_new_reply_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct osd_new_reply, &r, osd_new_reply_encode,
					osd_new_reply_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 2:
		check_boot_reply(&d);
		break;
	case 3: {
		struct osd_stopping s;

		if (osd_stopping_decode(&d, &s) == 0)
			FUZZ_ROUND_TRIP(struct osd_stopping, &s, osd_stopping_encode,
					osd_stopping_decode, FUZZ_NO_CLEAR);
		break;
	}
	case 4: {
		struct rc_reply r;

		if (rc_reply_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct rc_reply, &r, rc_reply_encode, rc_reply_decode,
					FUZZ_NO_CLEAR);
		break;
	}
	}
	return 0;
}
