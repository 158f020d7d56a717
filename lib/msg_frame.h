/*
 * msg_frame.h - the messenger's wire format: frame header, whole frames
 * and the hello handshake, as pure functions over byte buffers.
 *
 * The layout is described in msg.h.  Everything here takes a buffer and
 * its length and fails cleanly on short, long or absurd input; nothing
 * allocates a size read from the wire.  The messenger's receive path uses
 * msg_hdr_decode() and msg_hello_decode() on bytes as they arrive; the
 * fuzz target drives msg_frame_decode() (which uses both) over arbitrary
 * input.
 */
#ifndef ATOLL_MSG_FRAME_H
#define ATOLL_MSG_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "msg.h"

struct enc;

#define MSG_TRAILER_LEN		4u	/* crc32c of front then data */
/* The hello's authentication blob is at most this long. */
#define MSG_HELLO_AUTH_MAX	4096u
/* Before the handshake a peer may send only a hello; its frame is small,
 * so an unauthenticated peer cannot make us allocate frame_max bytes. */
#define MSG_HELLO_FRAME_MAX	(16u * 1024)
/* Version of the hello section we write and the newest compat we read. */
#define MSG_HELLO_VERSION	1
#define MSG_HELLO_COMPAT	1

struct msg_hdr {
	uint16_t type;
	uint16_t flags;
	uint64_t tid;
	uint32_t front_len;
	uint32_t data_len;
};

/* Writes the 32-byte header (magic, fields, reserved 0, header crc). */
void msg_hdr_encode(uint8_t out[MSG_HEADER_LEN], const struct msg_hdr *h);
/* Reads a 32-byte header.  -EPROTO for a bad magic, -EBADMSG for a bad
 * header crc, -EMSGSIZE when front_len + data_len exceeds frame_max. */
int msg_hdr_decode(const uint8_t in[MSG_HEADER_LEN], uint32_t frame_max,
		   struct msg_hdr *h);

/* The payload crc (the frame's trailer): crc32c over front then data. */
uint32_t msg_payload_crc(const void *front, size_t front_len,
			 const void *data, size_t data_len);

/* One whole frame from buf: header, front, data and trailer.  *front and
 * *data point into buf; *used is the frame's length.  -EAGAIN when buf
 * holds only part of a frame (nothing is wrong yet), -EBADMSG for a bad
 * payload crc, and msg_hdr_decode()'s errors. */
int msg_frame_decode(const void *buf, size_t len, uint32_t frame_max,
		     struct msg_hdr *h, const uint8_t **front,
		     const uint8_t **data, size_t *used);

struct msg_hello {
	uint8_t fsid[16];
	struct msg_identity who;
	uint64_t features;
	const void *auth;	/* decode: points into the input */
	size_t auth_len;	/* at most MSG_HELLO_AUTH_MAX */
};

/* Appends the hello's front (one versioned section) to e; errors are
 * sticky in e->err (-E2BIG for an auth blob over MSG_HELLO_AUTH_MAX). */
void msg_hello_encode(struct enc *e, const struct msg_hello *h);
/* Decodes a hello front.  -EBADMSG (short, malformed, trailing bytes or
 * an unknown entity type), -E2BIG (auth blob over the cap) or
 * -EPROTONOSUPPORT (a hello only newer peers understand). */
int msg_hello_decode(const void *buf, size_t len, struct msg_hello *h);

/* A whole hello frame (header, front, trailer) into e. */
void msg_hello_frame(struct enc *e, const struct msg_hello *h);

#endif
