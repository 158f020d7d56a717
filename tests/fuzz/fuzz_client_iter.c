/*
 * fuzz_client_iter.c - libFuzzer target for the two decoders of the
 * client library that read what is not its own: an OSD's kv list (the
 * omap and attribute listings' reply, client_kv_iter_decode in
 * lib/client/kviter.c) and a listing cursor a program hands back
 * (client_cursor_decode in lib/client/list.c).
 *
 * The first input byte picks the decoder, the rest is its input.  A kv
 * list that decodes is walked whole and encoded again as the OSD encodes
 * it (u32 count, key and value blobs, u8 more), which must decode to the
 * same entries; a cursor that decodes must encode and decode back to the
 * same PG and name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atoll/atoll.h>

#include "client.h"
#include "encode.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CURSOR_CAP	1024u	/* over list.c's CURSOR_MAX (512) */

static void check_kv(const uint8_t *p, size_t n)
{
	struct atoll_kv_iter *it, *again;
	const void *k, *v, *k2, *v2;
	size_t kl, vl, kl2, vl2;
	struct enc e;
	int more, more2;

	if (client_kv_iter_decode(p, n, &it, &more) < 0)
		return;
	enc_init(&e);
	enc_u32(&e, (uint32_t)atoll_kv_iter_count(it));
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		enc_blob(&e, k, kl);
		enc_blob(&e, v, vl);
	}
	enc_u8(&e, more ? 1 : 0);
	if (e.err || client_kv_iter_decode(e.buf, e.len, &again, &more2) < 0 ||
	    atoll_kv_iter_count(again) != atoll_kv_iter_count(it) || more2 != more)
		abort();
	atoll_kv_iter_free(it);
	/* the same entries, read from the first input again */
	if (client_kv_iter_decode(p, n, &it, NULL) < 0)
		abort();
	while (atoll_kv_iter_next(it, &k, &kl, &v, &vl) == 0) {
		if (atoll_kv_iter_next(again, &k2, &kl2, &v2, &vl2) < 0 || kl != kl2 ||
		    vl != vl2 || (kl && memcmp(k, k2, kl)) || (vl && memcmp(v, v2, vl)))
			abort();
	}
	atoll_kv_iter_free(again);
	atoll_kv_iter_free(it);
	enc_free(&e);
}

static void check_cursor(const uint8_t *p, size_t n)
{
	char in[FUZZ_CURSOR_CAP + 1], out[FUZZ_CURSOR_CAP];
	char name[PROTO_OID_MAX + 1], name2[PROTO_OID_MAX + 1];
	uint32_t pg, pg2;
	size_t len, len2;

	if (n > FUZZ_CURSOR_CAP)
		n = FUZZ_CURSOR_CAP;
	memcpy(in, p, n);
	in[n] = 0;
	if (client_cursor_decode(in, &pg, name, &len) < 0)
		return;
	if (len > PROTO_OID_MAX || name[len] != 0)
		abort();
	if (client_cursor_encode(pg, name, len, out, sizeof(out)) < 0 ||
	    client_cursor_decode(out, &pg2, name2, &len2) < 0 || pg != pg2 || len != len2 ||
	    memcmp(name, name2, len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] % 2 == 0)
		check_kv(data + 1, size - 1);
	else
		check_cursor(data + 1, size - 1);
	return 0;
}
