/*
 * fuzz_msg_frame.c - libFuzzer target for the messenger's wire decoders
 * (lib/msg_frame.h): frame headers, whole frames and the hello.
 *
 * The first byte chooses what the rest is: odd, a stream of frames
 * (decoded one after the other as the messenger does, every hello frame's
 * front decoded as a hello); even, a hello front by itself.  Whatever the
 * input, decoding fails cleanly or succeeds; a frame that decodes lies
 * inside the input and respects frame_max, and a hello that decodes
 * survives a re-encode/decode round trip unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "msg_frame.h"

#define FUZZ_FRAME_MAX	(1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_hello(const uint8_t *p, size_t len)
{
	struct msg_hello h, again;
	struct enc e;

	if (msg_hello_decode(p, len, &h) < 0)
		return;
	if (h.auth_len > MSG_HELLO_AUTH_MAX ||
	    (h.auth_len && ((const uint8_t *)h.auth < p ||
			    (const uint8_t *)h.auth + h.auth_len > p + len)))
		abort();
	enc_init(&e);
	msg_hello_encode(&e, &h);
	if (e.err || msg_hello_decode(e.buf, e.len, &again) < 0)
		abort();
	if (memcmp(h.fsid, again.fsid, sizeof(h.fsid)) || h.who.type != again.who.type ||
	    h.who.id != again.who.id || h.features != again.features ||
	    h.auth_len != again.auth_len ||
	    (h.auth_len && memcmp(h.auth, again.auth, h.auth_len)))
		abort();
	enc_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *front, *body;
	struct msg_hdr h;
	size_t used;

	if (size < 1)
		return 0;
	if (!(data[0] & 1)) {
		check_hello(data + 1, size - 1);
		return 0;
	}
	data++;
	size--;
	while (msg_frame_decode(data, size, FUZZ_FRAME_MAX, &h, &front, &body, &used) == 0) {
		if (used > size || (uint64_t)h.front_len + h.data_len > FUZZ_FRAME_MAX ||
		    used != MSG_HEADER_LEN + (size_t)h.front_len + h.data_len + MSG_TRAILER_LEN)
			abort();
		if (h.type == MSG_T_HELLO)
			check_hello(front, h.front_len);
		data += used;
		size -= used;
	}
	return 0;
}
