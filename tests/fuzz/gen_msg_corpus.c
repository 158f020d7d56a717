/*
 * gen_msg_corpus.c - writes the seed corpus for fuzz_msg_frame.c.
 *
 *   gen-msg-corpus DIR
 *
 * Run once by hand (the output is committed under corpus/msg_frame/).
 * Each seed starts with the mode byte of fuzz_msg_frame.c: 0x01 for a
 * stream of frames, 0x00 for a hello front alone.  Writes valid hellos
 * and frames, then truncated, bit-flipped, oversized and garbage inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_file.h"
#include "encode.h"
#include "msg_frame.h"

static const uint8_t STREAM = 1, HELLO = 0;

static int put(const char *dir, const char *name, uint8_t mode, const struct enc *e)
{
	return corpus_write(dir, name, &mode, 1, e->buf, e->len);
}

/* A frame of type with front bytes, appended to e. */
static void frame(struct enc *e, uint16_t type, uint16_t flags, const void *front,
		  uint32_t len)
{
	struct msg_hdr h = { .type = type, .flags = flags, .tid = 9, .front_len = len };
	uint8_t hdr[MSG_HEADER_LEN];
	uint32_t crc = msg_payload_crc(front, len, NULL, 0);

	msg_hdr_encode(hdr, &h);
	enc_raw(e, hdr, sizeof(hdr));
	enc_raw(e, front, len);
	enc_u32(e, crc);
}

int main(int argc, char **argv)
{
	struct msg_hello h = { .fsid = { 0xa1, 2, 3 }, .who = { MSG_ENTITY_OSD, 3 },
			       .features = 0xff, .auth = "token", .auth_len = 5 };
	struct msg_hdr big = { .type = 20, .data_len = 2u << 20 };
	uint8_t hdr[MSG_HEADER_LEN];
	const char *dir;
	struct enc e;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	enc_init(&e);

	msg_hello_encode(&e, &h);
	r |= put(dir, "hello-front", HELLO, &e);
	e.len -= 3;
	r |= put(dir, "hello-front-truncated", HELLO, &e);
	enc_reset(&e);

	msg_hello_frame(&e, &h);
	r |= put(dir, "hello-frame", STREAM, &e);
	frame(&e, 20, 0, "request", 7);
	frame(&e, 20, MSG_F_REPLY, "reply", 5);
	frame(&e, 21, 0, NULL, 0);
	r |= put(dir, "hello-then-frames", STREAM, &e);
	e.len -= 6;
	r |= put(dir, "frames-truncated", STREAM, &e);
	e.buf[MSG_HEADER_LEN + 4] ^= 0x10;
	r |= put(dir, "hello-payload-bitflip", STREAM, &e);
	e.buf[MSG_HEADER_LEN + 4] ^= 0x10;
	e.buf[5] ^= 0x01;
	r |= put(dir, "hello-header-bitflip", STREAM, &e);
	enc_reset(&e);

	msg_hdr_encode(hdr, &big);
	enc_raw(&e, hdr, sizeof(hdr));
	r |= put(dir, "oversized-header", STREAM, &e);
	enc_reset(&e);

	enc_raw(&e, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
	r |= put(dir, "garbage", STREAM, &e);
	enc_reset(&e);
	r |= put(dir, "empty", STREAM, &e);
	enc_free(&e);
	return r ? 1 : 0;
}
