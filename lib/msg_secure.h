/*
 * msg_secure.h - the messenger's secure wire mode (doc/messenger.md,
 * "Secure mode"): every frame after the handshake sealed with
 * AES-256-GCM under the connection key of its direction.
 *
 * A sealed frame is
 *
 *   sealed header   the 32-byte header of msg.h, encrypted, + 16-byte tag
 *   sealed payload  front ‖ data, encrypted, + 16-byte tag
 *
 * The header is sealed apart so that the receiver can trust the lengths
 * (and charge them to its budget) before the payload arrives, as with
 * the crc mode's header crc.  Nonces are never random: the 12 bytes are
 * the frame's sequence number in its direction (u64, little-endian,
 * counting from 0 on each connection) then a u32 part (0: header, 1:
 * payload).  The receiver expects the next number, so a frame replayed,
 * reordered, dropped or moved from another connection (other keys) fails
 * its tag.  The keys are fresh for every connection (auth_conn_keys: both
 * nonces of the handshake are in them), so no (key, nonce) pair repeats.
 * There is no crc in secure mode: the tags cover every byte.
 *
 * One struct msg_secure is one direction of one connection: its key
 * (expanded once, in an EVP_CIPHER_CTX) and its sequence number.  Not
 * thread-safe: the sender's is used under the connection's wlock, the
 * receiver's on the loop thread.
 */
#ifndef ATOLL_MSG_SECURE_H
#define ATOLL_MSG_SECURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "msg_frame.h"

#define MSG_SECURE_TAG_LEN	16u
#define MSG_SECURE_HDR_LEN	(MSG_HEADER_LEN + MSG_SECURE_TAG_LEN)

struct msg_secure;

/* One direction under key (AUTH_KEY_LEN bytes), sealing (seal true) or
 * opening.  NULL on ENOMEM or when the crypto library fails. */
struct msg_secure *msg_secure_new(const uint8_t key[AUTH_KEY_LEN], bool seal);
/* Wipes the key; NULL is fine. */
void msg_secure_free(struct msg_secure *s);
/* The sequence number of the next frame. */
uint64_t msg_secure_seq(const struct msg_secure *s);

/* The bytes a frame of front_len + data_len takes on the wire sealed. */
static inline size_t msg_secure_frame_len(size_t front_len, size_t data_len)
{
	return MSG_SECURE_HDR_LEN + front_len + data_len + MSG_SECURE_TAG_LEN;
}

/* Seals one frame (header h, front, data) as the next of s into out,
 * msg_secure_frame_len(h->front_len, h->data_len) bytes; h's lengths
 * must be those of front and data.  0 or -EIO; the sequence number moves
 * on only on success. */
int msg_secure_seal(struct msg_secure *s, const struct msg_hdr *h, const void *front,
		    const void *data, uint8_t *out);

/* Receiving, as the bytes arrive (the messenger reads the payload
 * straight into the message's buffers and opens it there).
 *
 * open_hdr: the sealed header of the next frame -> h.  -EACCES when its
 * tag does not verify (tampered, replayed, reordered, another key), then
 * msg_hdr_decode()'s errors (-EPROTO, -EBADMSG, -EMSGSIZE over
 * frame_max).  The sequence number does not move: the same header may be
 * opened again (a reader that paused at it).
 * body_begin: the payload of that frame starts (after open_hdr).
 * body_update: len more payload bytes, decrypted in place.  Unverified
 *   until body_end: nothing may act on them before.
 * body_end: the payload's tag.  0 (and the sequence number moves on), or
 *   -EACCES. */
int msg_secure_open_hdr(struct msg_secure *s, const uint8_t in[MSG_SECURE_HDR_LEN],
			uint32_t frame_max, struct msg_hdr *h);
int msg_secure_body_begin(struct msg_secure *s);
int msg_secure_body_update(struct msg_secure *s, uint8_t *buf, size_t len);
int msg_secure_body_end(struct msg_secure *s, const uint8_t tag[MSG_SECURE_TAG_LEN]);

/* One whole sealed frame at the start of buf (len bytes, opened in
 * place): 0 with the header in *h, the plaintext front at *front (data
 * follows it) and the frame's length in *used; -EAGAIN when buf holds
 * only part of a frame, or the errors above.  The fuzz target and the
 * tests drive the steps above through it. */
int msg_secure_frame_decode(struct msg_secure *s, uint8_t *buf, size_t len,
			    uint32_t frame_max, struct msg_hdr *h, uint8_t **front,
			    size_t *used);

#endif
