/*
 * fuzz_mds.c - the file system's protocol (posixfs/mds_proto.c): what
 * atoll-mds decodes from clients (requests, revoke acks) and what
 * atoll-fuse decodes from the MDS (replies with entries, attributes and
 * changes, revokes, status), and the dispatcher's peek at a request's op.
 * The first byte picks the decoder; whatever decodes is encoded again and
 * must decode again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "mds_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void reply_free(struct mds_reply *r)
{
	free(r->ents);
	free(r->value);
	free(r->plus);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dec d;
	struct enc e;

	if (size < 1)
		return 0;
	dec_init(&d, data + 1, size - 1);
	enc_init(&e);
	switch (data[0] % 5) {
	case 0: {
		struct mds_req r, r2;
		uint32_t op;
		/* the dispatcher's look at the op comes first, on any bytes */
		int peek = mds_req_peek_op(data + 1, size - 1, &op);

		if (mds_req_decode(&d, &r) == 0) {
			if (peek != 0 || op != r.op)
				abort();
			mds_req_encode(&e, &r);
			dec_init(&d, e.buf, e.len);
			if (mds_req_decode(&d, &r2) != 0)
				abort();
		}
		break;
	}
	case 1: {
		struct mds_reply r, r2;

		memset(&r, 0, sizeof(r));
		if (mds_reply_decode(&d, &r) == 0) {
			mds_reply_encode(&e, &r);
			dec_init(&d, e.buf, e.len);
			memset(&r2, 0, sizeof(r2));
			if (mds_reply_decode(&d, &r2) != 0)
				abort();
			reply_free(&r2);
			reply_free(&r);
		}
		break;
	}
	case 2: {
		struct mds_notify n, n2;

		if (mds_notify_decode(&d, &n) == 0) {
			mds_notify_encode(&e, &n);
			dec_init(&d, e.buf, e.len);
			if (mds_notify_decode(&d, &n2) != 0)
				abort();
		}
		break;
	}
	case 3: {
		struct mds_status s, s2;

		memset(&s, 0, sizeof(s));
		if (mds_status_decode(&d, &s) == 0) {
			mds_status_encode(&e, &s);
			dec_init(&d, e.buf, e.len);
			memset(&s2, 0, sizeof(s2));
			if (mds_status_decode(&d, &s2) != 0)
				abort();
			free(s2.clients);
			free(s.clients);
		}
		break;
	}
	default: {
		struct mds_inode in;

		(void)mds_inode_decode(&d, &in);
		break;
	}
	}
	enc_free(&e);
	return 0;
}
