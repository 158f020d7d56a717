/*
 * test_msg_secure.c - sealing and opening the frames of the secure wire
 * mode (lib/msg_secure.c) as pure functions: a sealed frame opens under
 * the same key and sequence number, and fails its tag when one byte is
 * flipped, when it is replayed or reordered, when one is dropped, or
 * under the other direction's key; the payload opens in any split of
 * reads, in place.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg_secure.h"

static const uint8_t KEY_A[AUTH_KEY_LEN] = { 1, 2, 3 };
static const uint8_t KEY_B[AUTH_KEY_LEN] = { 4, 5, 6 };

/* One sealed frame of type, front "f<n>" and data_len bytes of n. */
static uint8_t *seal_one(struct msg_secure *tx, uint16_t type, int n, uint32_t data_len,
			 size_t *len)
{
	char front[16];
	uint8_t *data = malloc(data_len + 1), *out;
	struct msg_hdr h = { .type = type, .tid = (uint64_t)n };

	cr_assert_not_null(data);
	snprintf(front, sizeof(front), "f%d", n);
	memset(data, n, data_len);
	h.front_len = (uint32_t)strlen(front);
	h.data_len = data_len;
	*len = msg_secure_frame_len(h.front_len, data_len);
	out = malloc(*len);
	cr_assert_not_null(out);
	cr_assert_eq(msg_secure_seal(tx, &h, front, data, out), 0);
	free(data);
	return out;
}

static void expect_frame(struct msg_secure *rx, uint8_t *buf, size_t len, int n,
			 uint32_t data_len)
{
	struct msg_hdr h;
	uint8_t *front;
	size_t used;
	char want[16];

	snprintf(want, sizeof(want), "f%d", n);
	cr_assert_eq(msg_secure_frame_decode(rx, buf, len, 1u << 30, &h, &front, &used), 0);
	cr_expect_eq(used, len);
	cr_expect_eq(h.tid, (uint64_t)n);
	cr_expect_eq(h.front_len, strlen(want));
	cr_expect_eq(h.data_len, data_len);
	cr_expect_eq(memcmp(front, want, h.front_len), 0);
	for (uint32_t i = 0; i < data_len; i++)
		if (front[h.front_len + i] != (uint8_t)n)
			cr_assert_fail("data byte %u is %u", i, front[h.front_len + i]);
}

Test(msg_secure, frames_open_in_order_under_the_same_key)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_A, false);

	for (int n = 0; n < 5; n++) {
		size_t len;
		uint8_t *f = seal_one(tx, 100, n, n == 3 ? 70000 : (uint32_t)n * 10, &len);

		expect_frame(rx, f, len, n, n == 3 ? 70000 : (uint32_t)n * 10);
		free(f);
	}
	cr_expect_eq(msg_secure_seq(tx), 5);
	cr_expect_eq(msg_secure_seq(rx), 5);
	msg_secure_free(tx);
	msg_secure_free(rx);
}

Test(msg_secure, every_flipped_byte_fails_the_tag)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true);
	size_t len;
	uint8_t *f = seal_one(tx, 100, 7, 64, &len);

	for (size_t i = 0; i < len; i++) {
		struct msg_secure *rx = msg_secure_new(KEY_A, false);
		uint8_t *copy = malloc(len), *front;
		struct msg_hdr h;
		size_t used;
		int r;

		memcpy(copy, f, len);
		copy[i] ^= 0x01;
		r = msg_secure_frame_decode(rx, copy, len, 1u << 30, &h, &front, &used);
		/* a flipped header may announce a longer frame (-EAGAIN)
		 * only if its tag passed, which it cannot */
		cr_expect_eq(r, -EACCES, "byte %zu flipped: %d", i, r);
		cr_expect_eq(msg_secure_seq(rx), 0);
		free(copy);
		msg_secure_free(rx);
	}
	free(f);
	msg_secure_free(tx);
}

Test(msg_secure, replayed_reordered_or_dropped_frame_fails)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_A, false);
	size_t l0, l1, l2;
	uint8_t *f0 = seal_one(tx, 100, 0, 10, &l0), *f1 = seal_one(tx, 100, 1, 10, &l1);
	uint8_t *f2 = seal_one(tx, 100, 2, 10, &l2), *copy = malloc(l0), *front;
	struct msg_hdr h;
	size_t used;

	memcpy(copy, f0, l0);
	/* reordered: frame 1 first */
	cr_expect_eq(msg_secure_frame_decode(rx, f1, l1, 1u << 30, &h, &front, &used), -EACCES);
	expect_frame(rx, f0, l0, 0, 10);
	/* replayed: frame 0 again */
	cr_expect_eq(msg_secure_frame_decode(rx, copy, l0, 1u << 30, &h, &front, &used),
		     -EACCES);
	/* dropped: frame 1 never comes, frame 2 does */
	cr_expect_eq(msg_secure_frame_decode(rx, f2, l2, 1u << 30, &h, &front, &used), -EACCES);
	free(f0);
	free(f1);
	free(f2);
	free(copy);
	msg_secure_free(tx);
	msg_secure_free(rx);
}

Test(msg_secure, other_direction_key_fails)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_B, false);
	size_t len;
	uint8_t *f = seal_one(tx, 100, 0, 10, &len), *front;
	struct msg_hdr h;
	size_t used;

	cr_expect_eq(msg_secure_frame_decode(rx, f, len, 1u << 30, &h, &front, &used), -EACCES);
	free(f);
	msg_secure_free(tx);
	msg_secure_free(rx);
}

Test(msg_secure, payload_opens_in_place_in_any_split)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_A, false);
	uint32_t dlen = 1u << 20;
	size_t len;
	uint8_t *f = seal_one(tx, 100, 9, dlen, &len), *body = f + MSG_SECURE_HDR_LEN;
	size_t blen = len - MSG_SECURE_HDR_LEN - MSG_SECURE_TAG_LEN, off = 0, step = 1;
	struct msg_hdr h;

	cr_assert_eq(msg_secure_open_hdr(rx, f, 1u << 30, &h), 0);
	/* the header may be opened again (a reader paused at it) */
	cr_assert_eq(msg_secure_open_hdr(rx, f, 1u << 30, &h), 0);
	cr_assert_eq(h.data_len, dlen);
	cr_assert_eq(msg_secure_body_begin(rx), 0);
	while (off < blen) {
		size_t n = blen - off < step ? blen - off : step;

		cr_assert_eq(msg_secure_body_update(rx, body + off, n), 0);
		off += n;
		step = step * 3 + 1;
	}
	cr_assert_eq(msg_secure_body_end(rx, body + blen), 0);
	cr_expect_eq(memcmp(body, "f9", 2), 0);
	cr_expect_eq(body[2], 9);
	cr_expect_eq(body[blen - 1], 9);
	free(f);
	msg_secure_free(tx);
	msg_secure_free(rx);
}

Test(msg_secure, partial_frame_is_eagain_and_oversized_refused)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_A, false);
	size_t len;
	uint8_t *f = seal_one(tx, 100, 1, 100, &len), *front;
	struct msg_hdr h;
	size_t used;

	cr_expect_eq(msg_secure_frame_decode(rx, f, 10, 1u << 30, &h, &front, &used), -EAGAIN);
	cr_expect_eq(msg_secure_frame_decode(rx, f, len - 1, 1u << 30, &h, &front, &used),
		     -EAGAIN);
	cr_expect_eq(msg_secure_frame_decode(rx, f, len, 50, &h, &front, &used), -EMSGSIZE);
	expect_frame(rx, f, len, 1, 100);
	free(f);
	msg_secure_free(tx);
	msg_secure_free(rx);
}

Test(msg_secure, sealing_and_opening_sides_do_not_mix)
{
	struct msg_secure *tx = msg_secure_new(KEY_A, true), *rx = msg_secure_new(KEY_A, false);
	struct msg_hdr h = { .type = 100 };
	uint8_t out[MSG_SECURE_HDR_LEN + MSG_SECURE_TAG_LEN] = { 0 };

	cr_expect_eq(msg_secure_seal(rx, &h, NULL, NULL, out), -EINVAL);
	cr_expect_eq(msg_secure_open_hdr(tx, out, 1u << 30, &h), -EINVAL);
	msg_secure_free(tx);
	msg_secure_free(rx);
	msg_secure_free(NULL);
}
