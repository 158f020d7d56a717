/*
 * fuzz_msg_secure.c - libFuzzer target for the secure wire mode's frame
 * decoder (lib/msg_secure.h), under a fixed key.
 *
 * The first byte chooses what the rest is.  Odd: a stream of sealed
 * frames, opened one after the other as the messenger does (arbitrary
 * bytes must fail cleanly: -EACCES, -EAGAIN, never a frame).  Even: bytes
 * 1-2 name a byte to flip (little-endian; past the frame: none) and the
 * rest is sealed as a frame (front and data split at byte 3), then
 * flipped and opened: it opens, unchanged, exactly when nothing was
 * flipped, and fails its tag otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "msg_secure.h"

#define FUZZ_FRAME_MAX	(1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t KEY[AUTH_KEY_LEN] = { 0x61, 0x74, 0x6f, 0x6c, 0x6c };

static void stream(const uint8_t *data, size_t size)
{
	struct msg_secure *rx = msg_secure_new(KEY, false);
	uint8_t *buf = malloc(size ? size : 1), *p, *front;
	struct msg_hdr h;
	size_t used;

	if (!rx || !buf)
		abort();
	memcpy(buf, data, size);
	p = buf;
	while (msg_secure_frame_decode(rx, p, size, FUZZ_FRAME_MAX, &h, &front, &used) == 0) {
		if (used > size || front != p + MSG_SECURE_HDR_LEN ||
		    (uint64_t)h.front_len + h.data_len > FUZZ_FRAME_MAX)
			abort();
		p += used;
		size -= used;
	}
	free(buf);
	msg_secure_free(rx);
}

static void roundtrip(const uint8_t *data, size_t size)
{
	struct msg_secure *tx = msg_secure_new(KEY, true), *rx = msg_secure_new(KEY, false);
	struct msg_hdr h = { .type = 100, .tid = 7 }, got;
	size_t flip, len, used, body;
	uint8_t *out, *front;
	int r;

	if (!tx || !rx || size < 3)
		goto out;
	flip = data[0] | (size_t)data[1] << 8;
	body = size - 2;
	h.front_len = (uint32_t)(body < data[2] ? body : data[2]);
	h.data_len = (uint32_t)(body - h.front_len);
	len = msg_secure_frame_len(h.front_len, h.data_len);
	out = malloc(len);
	if (!out || msg_secure_seal(tx, &h, data + 2, data + 2 + h.front_len, out) < 0)
		abort();
	if (flip < len)
		out[flip] ^= 0x80;
	r = msg_secure_frame_decode(rx, out, len, FUZZ_FRAME_MAX, &got, &front, &used);
	if (flip < len ? r != -EACCES : (r != 0 || used != len || got.tid != 7 ||
					 got.front_len != h.front_len ||
					 got.data_len != h.data_len || memcmp(front, data + 2, body)))
		abort();
	free(out);
out:
	msg_secure_free(tx);
	msg_secure_free(rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		stream(data + 1, size - 1);
	else
		roundtrip(data + 1, size - 1);
	return 0;
}
