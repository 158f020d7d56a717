/*
 * msg_frame.c - the messenger's wire format: frame header, whole frames
 * and the hello handshake.
 *
 * Kept apart from the event loop so that every decoder of untrusted bytes
 * is a pure function a fuzzer can drive.  The header carries its own crc
 * so that a receiver can trust the lengths (and allocate for them, within
 * frame_max) before a single payload byte arrives; the payload crc is
 * checked once the whole frame is in.  Integers are little-endian,
 * assembled byte by byte.
 */
#include "msg_frame.h"

#include <errno.h>
#include <string.h>

#include "crc32c.h"
#include "encode.h"

#define HDR_CRC_OFF	28	/* the header crc covers the bytes before it */

static void put_le(uint8_t *p, uint64_t v, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void msg_hdr_encode(uint8_t out[MSG_HEADER_LEN], const struct msg_hdr *h)
{
	put_le(out + 0, MSG_MAGIC, 4);
	put_le(out + 4, h->type, 2);
	put_le(out + 6, h->flags, 2);
	put_le(out + 8, h->tid, 8);
	put_le(out + 16, h->front_len, 4);
	put_le(out + 20, h->data_len, 4);
	put_le(out + 24, 0, 4);
	put_le(out + HDR_CRC_OFF, atoll__crc32c(0, out, HDR_CRC_OFF), 4);
}

int msg_hdr_decode(const uint8_t in[MSG_HEADER_LEN], uint32_t frame_max,
		   struct msg_hdr *h)
{
	if (get_le(in, 4) != MSG_MAGIC)
		return -EPROTO;
	if (get_le(in + HDR_CRC_OFF, 4) != atoll__crc32c(0, in, HDR_CRC_OFF))
		return -EBADMSG;
	h->type = (uint16_t)get_le(in + 4, 2);
	h->flags = (uint16_t)get_le(in + 6, 2);
	h->tid = get_le(in + 8, 8);
	h->front_len = (uint32_t)get_le(in + 16, 4);
	h->data_len = (uint32_t)get_le(in + 20, 4);
	/* The reserved word is covered by the crc and ignored: a later
	 * version may use it behind a feature bit. */
	if ((uint64_t)h->front_len + h->data_len > frame_max)
		return -EMSGSIZE;
	return 0;
}

uint32_t msg_payload_crc(const void *front, size_t front_len,
			 const void *data, size_t data_len)
{
	uint32_t crc = 0;

	if (front_len)
		crc = atoll__crc32c(crc, front, front_len);
	if (data_len)
		crc = atoll__crc32c(crc, data, data_len);
	return crc;
}

int msg_frame_decode(const void *buf, size_t len, uint32_t frame_max,
		     struct msg_hdr *h, const uint8_t **front,
		     const uint8_t **data, size_t *used)
{
	const uint8_t *p = buf;
	size_t total;
	int r;

	*front = NULL;
	*data = NULL;
	*used = 0;
	if (len < MSG_HEADER_LEN)
		return -EAGAIN;
	r = msg_hdr_decode(p, frame_max, h);
	if (r < 0)
		return r;
	total = MSG_HEADER_LEN + (size_t)h->front_len + h->data_len + MSG_TRAILER_LEN;
	if (len < total)
		return -EAGAIN;
	*front = p + MSG_HEADER_LEN;
	*data = *front + h->front_len;
	if (get_le(*data + h->data_len, 4) !=
	    msg_payload_crc(*front, h->front_len, *data, h->data_len))
		return -EBADMSG;
	*used = total;
	return 0;
}

void msg_hello_encode(struct enc *e, const struct msg_hello *h)
{
	size_t sec;

	if (h->auth_len > MSG_HELLO_AUTH_MAX) {
		if (!e->err)
			e->err = -E2BIG;
		return;
	}
	sec = enc_begin(e, MSG_HELLO_VERSION, MSG_HELLO_COMPAT);
	enc_raw(e, h->fsid, sizeof(h->fsid));
	enc_u8(e, h->who.type);
	enc_u64(e, h->who.id);
	enc_u64(e, h->features);
	enc_blob(e, h->auth, h->auth_len);
	enc_end(e, sec);
}

int msg_hello_decode(const void *buf, size_t len, struct msg_hello *h)
{
	struct dec d, body;
	const void *fsid;
	int r;

	memset(h, 0, sizeof(*h));
	dec_init(&d, buf, len);
	dec_msg_begin(&d, MSG_HELLO_COMPAT, &body);
	fsid = dec_raw(&body, sizeof(h->fsid));
	if (fsid)
		memcpy(h->fsid, fsid, sizeof(h->fsid));
	h->who.type = dec_u8(&body);
	h->who.id = dec_u64(&body);
	h->features = dec_u64(&body);
	h->auth = dec_blob(&body, &h->auth_len, MSG_HELLO_AUTH_MAX);
	if (!body.err && (h->who.type == MSG_ENTITY_NONE || h->who.type > MSG_ENTITY_MDS))
		dec_fail(&body, -EBADMSG);
	dec_end(&d, &body);
	r = dec_finish(&d);	/* the hello is exactly one section */
	if (r < 0)
		memset(h, 0, sizeof(*h));
	return r;
}

void msg_hello_frame(struct enc *e, const struct msg_hello *h)
{
	struct msg_hdr hdr = { .type = MSG_T_HELLO };
	uint8_t raw[MSG_HEADER_LEN] = { 0 }, tail[MSG_TRAILER_LEN];
	size_t start, front_len;

	if (e->err)
		return;
	start = e->len;
	enc_raw(e, raw, sizeof(raw));		/* room for the header */
	msg_hello_encode(e, h);
	if (e->err)
		return;
	front_len = e->len - start - MSG_HEADER_LEN;
	hdr.front_len = (uint32_t)front_len;
	msg_hdr_encode(e->buf + start, &hdr);
	put_le(tail, msg_payload_crc(e->buf + start + MSG_HEADER_LEN, front_len, NULL, 0),
	       MSG_TRAILER_LEN);
	enc_raw(e, tail, sizeof(tail));
}
