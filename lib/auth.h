/*
 * auth.h - authentication: entity keys, tickets, authorizers and the
 * handshake's proofs (doc/security.md explains the design).
 *
 * auth_crypto.c wraps the OpenSSL 3 primitives atoll uses (HMAC-SHA256,
 * HKDF-SHA256, AES-256-GCM, SHA-256, RAND_bytes, CRYPTO_memcmp); nothing
 * here is home-made crypto.  auth_ticket.c builds and checks the records
 * on top of them; every decoder takes a buffer and its length and fails
 * cleanly (tests/fuzz/fuzz_auth.c).  keyring.c reads and writes keyring
 * files.  All functions are pure (no global state, no clock: callers pass
 * the time) and thread-safe.
 *
 * Errors: 0 or a negative errno.  -EACCES: a proof, MAC or tag does not
 * verify (wrong key, tampered bytes, a replayed authorizer);
 * -EKEYEXPIRED: a ticket outside its validity (skew included);
 * -EKEYREJECTED: a ticket for another service, or whose entity or client
 * id is not the one presented; -ENOKEY: no service secret of the
 * ticket's generation; -EBADMSG / -E2BIG: malformed input; -EIO: the
 * crypto library failed (out of memory inside OpenSSL).
 */
#ifndef ATOLL_AUTH_H
#define ATOLL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct enc;
struct dec;

#define AUTH_KEY_LEN		32u	/* entity keys, service secrets, session keys */
#define AUTH_MAC_LEN		32u	/* HMAC-SHA256 */
#define AUTH_HASH_LEN		32u	/* SHA-256 (the transcript) */
#define AUTH_NONCE_LEN		32u	/* the handshake's Nc and Ns */
#define AUTH_AEAD_NONCE_LEN	12u	/* AES-256-GCM */
#define AUTH_AEAD_TAG_LEN	16u
#define AUTH_AEAD_OVERHEAD	(AUTH_AEAD_NONCE_LEN + AUTH_AEAD_TAG_LEN)
#define AUTH_NAME_MAX		64u	/* "client.NAME" */
#define AUTH_CAPS_MAX		1024u	/* one service's caps string */
#define AUTH_TICKET_MAX		2048u	/* a sealed ticket */
#define AUTH_SECRETS_MAX	4u	/* service secrets kept per service */

/* The services a ticket is for (never 0). */
enum auth_service {
	AUTH_SVC_MON = 1,
	AUTH_SVC_OSD = 2,
	AUTH_SVC_MDS = 3,
};

/* Handshake methods and wire modes offered in the hello (bit masks). */
#define AUTH_METHOD_NONE	0x1u
#define AUTH_METHOD_KEY		0x2u	/* prove an entity key (to a monitor) */
#define AUTH_METHOD_TICKET	0x4u	/* present an authorizer (OSD, MDS) */
#define AUTH_MODE_CRC		0x1u
#define AUTH_MODE_SECURE	0x2u

/* ---- primitives (auth_crypto.c) ---- */

/* len bytes from the CSPRNG.  -EIO when it cannot give them. */
int auth_random(void *buf, size_t len);
/* Zeroes secret bytes in a way the compiler keeps. */
void auth_wipe(void *p, size_t len);
/* Constant-time equality of two n-byte strings (MACs, tags). */
bool auth_equal(const void *a, const void *b, size_t n);
/* SHA-256 of a then b (either may be empty). */
int auth_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		  uint8_t out[AUTH_HASH_LEN]);
/* HKDF-SHA256(key, salt, info = label ‖ ctx) -> outlen bytes. */
int auth_hkdf(const uint8_t key[AUTH_KEY_LEN], const void *salt, size_t saltlen,
	      const char *label, const void *ctx, size_t ctxlen,
	      void *out, size_t outlen);
/* HMAC-SHA256 under HKDF(key, label) over a then b. */
int auth_mac(const uint8_t key[AUTH_KEY_LEN], const char *label,
	     const void *a, size_t alen, const void *b, size_t blen,
	     uint8_t out[AUTH_MAC_LEN]);
/* AES-256-GCM.  seal writes nonce ‖ ciphertext ‖ tag, len +
 * AUTH_AEAD_OVERHEAD bytes, to out (a fresh random nonce).  open takes
 * that and writes inlen - AUTH_AEAD_OVERHEAD bytes to pt; -EACCES when
 * the tag (over aad too) does not verify, -EBADMSG when inlen is short. */
int auth_seal(const uint8_t key[AUTH_KEY_LEN], const void *aad, size_t aadlen,
	      const void *pt, size_t len, uint8_t *out);
int auth_open(const uint8_t key[AUTH_KEY_LEN], const void *aad, size_t aadlen,
	      const uint8_t *in, size_t inlen, uint8_t *pt);

/* ---- entity names ---- */

/* "mon.", "osd.N", "mds.NAME", "client.NAME": 0, or -EINVAL (unknown
 * type, bad characters, over AUTH_NAME_MAX, an osd id not a number).
 * *type gets MSG_ENTITY_* (msg.h) when type is not NULL. */
int auth_entity_check(const char *name, uint8_t *type);
/* Keys as 64 hex digits (out holds 65). */
void auth_key_to_hex(const uint8_t key[AUTH_KEY_LEN], char out[2 * AUTH_KEY_LEN + 1]);
/* -EINVAL unless s is exactly 64 hex digits. */
int auth_key_from_hex(const char *s, uint8_t key[AUTH_KEY_LEN]);

/* ---- the hello's auth section (auth_ticket.c) ---- */

/* The dialler's: what it offers, who it claims to be, its nonce. */
struct auth_hello_req {
	uint32_t methods;		/* AUTH_METHOD_* offered */
	uint32_t modes;			/* AUTH_MODE_* offered */
	char entity[AUTH_NAME_MAX + 1];
	uint8_t nonce[AUTH_NONCE_LEN];
	uint64_t want_id;		/* the client id it had (0: none yet) */
};
/* The acceptor's: its choice and its fresh challenge. */
struct auth_hello_rep {
	uint32_t method;		/* one AUTH_METHOD_* */
	uint32_t mode;			/* one AUTH_MODE_*; 0: none shared (refused) */
	uint8_t challenge[AUTH_NONCE_LEN];
};
void auth_hello_req_encode(const struct auth_hello_req *r, struct enc *e);
int auth_hello_req_decode(struct dec *d, struct auth_hello_req *r);
void auth_hello_rep_encode(const struct auth_hello_rep *r, struct enc *e);
int auth_hello_rep_decode(struct dec *d, struct auth_hello_rep *r);

/* The transcript: SHA-256 of the dialler's hello front, then the
 * acceptor's, as each side sent or received them. */
int auth_transcript(const void *dialler_hello, size_t dlen,
		    const void *acceptor_hello, size_t alen,
		    uint8_t out[AUTH_HASH_LEN]);
/* The dialler's proof of key (an entity key or a session key). */
int auth_client_proof(const uint8_t key[AUTH_KEY_LEN],
		      const uint8_t transcript[AUTH_HASH_LEN], uint8_t out[AUTH_MAC_LEN]);
/* The acceptor's proof, over the transcript and what the dialler sent. */
int auth_server_proof(const uint8_t key[AUTH_KEY_LEN],
		      const uint8_t transcript[AUTH_HASH_LEN],
		      const void *client_msg, size_t len, uint8_t out[AUTH_MAC_LEN]);
/* The two connection keys of the secure wire (dialler->acceptor first). */
int auth_conn_keys(const uint8_t key[AUTH_KEY_LEN],
		   const uint8_t nc[AUTH_NONCE_LEN], const uint8_t ns[AUTH_NONCE_LEN],
		   const uint8_t transcript[AUTH_HASH_LEN], uint8_t out[2 * AUTH_KEY_LEN]);

/* ---- tickets ---- */

struct auth_ticket {
	uint8_t service;		/* enum auth_service */
	char entity[AUTH_NAME_MAX + 1];
	uint64_t client_id;		/* assigned by the monitors, never 0 */
	char caps[AUTH_CAPS_MAX + 1];
	uint64_t issued, expires;	/* wall-clock seconds */
	uint8_t session_key[AUTH_KEY_LEN];
};
/* The plaintext (one versioned section). */
void auth_ticket_encode(const struct auth_ticket *t, struct enc *e);
int auth_ticket_decode(struct dec *d, struct auth_ticket *t);

/* One generation of a service's secret. */
struct auth_secret {
	uint64_t gen;			/* > 0, grows by one per rotation */
	uint8_t key[AUTH_KEY_LEN];
};
/* What a service's daemon holds: up to AUTH_SECRETS_MAX generations. */
struct auth_secrets {
	uint8_t service;
	uint32_t n;
	struct auth_secret s[AUTH_SECRETS_MAX];
};

/* Seals t with secret (the current generation of t->service's secret):
 * appends the sealed ticket to e. */
int auth_ticket_seal(const struct auth_ticket *t, const struct auth_secret *secret,
		     struct enc *e);
/* Opens a sealed ticket of len bytes with the matching generation of
 * secrets.  -ENOKEY (no such generation), -EKEYREJECTED (sealed for
 * another service than secrets->service), -EACCES (tampered or another
 * key), -EBADMSG/-E2BIG (malformed).  t is wiped on failure. */
int auth_ticket_open(const struct auth_secrets *secrets, const void *buf, size_t len,
		     struct auth_ticket *t);
/* 0 when issued - skew <= now <= expires + skew; -EKEYEXPIRED otherwise. */
int auth_ticket_check_time(const struct auth_ticket *t, uint64_t now, uint32_t skew);

/* ---- authorizers: a ticket presented to an OSD/MDS ---- */

struct auth_authorizer {
	const void *ticket;		/* the sealed ticket (points into the input) */
	size_t ticket_len;
	uint64_t client_id;
	char entity[AUTH_NAME_MAX + 1];
	uint8_t mac[AUTH_MAC_LEN];
};
void auth_authorizer_encode(const struct auth_authorizer *a, struct enc *e);
int auth_authorizer_decode(struct dec *d, struct auth_authorizer *a);

/* The client side: appends an authorizer for ticket (sealed, as the
 * monitors gave it) to e, proving session_key over the transcript of
 * this connection (which holds the server's fresh challenge). */
int auth_authorizer_build(const void *ticket, size_t ticket_len,
			  const uint8_t session_key[AUTH_KEY_LEN], uint64_t client_id,
			  const char *entity, const uint8_t transcript[AUTH_HASH_LEN],
			  struct enc *e);
/* The server side: opens the ticket with secrets, checks that it is for
 * this service, within its validity (now, skew), that the entity and
 * client id match it, and the MAC over this connection's transcript.
 * 0 and the ticket in *t (its session key for the server's proof), or
 * the error of the first check that failed (t wiped). */
int auth_authorizer_verify(const struct auth_secrets *secrets, const void *buf, size_t len,
			   const uint8_t transcript[AUTH_HASH_LEN], uint64_t now,
			   uint32_t skew, struct auth_ticket *t);

/* ---- the monitor's reply to a key proof, sealed for the entity ---- */

/* What the entity learns (sealed with HKDF(entity key, "reply")). */
struct auth_grant {
	uint8_t service;
	uint64_t expires;
	uint8_t session_key[AUTH_KEY_LEN];
	const void *ticket;		/* sealed; points into the input */
	size_t ticket_len;
};
#define AUTH_GRANTS_MAX	4u
struct auth_reply {
	uint64_t client_id;
	uint32_t n;
	struct auth_grant g[AUTH_GRANTS_MAX];
	/* A service daemon's service secrets (secrets.n == 0: none): only
	 * osd.* receive the OSD ones, only mds.* the MDS ones. */
	struct auth_secrets secrets;
};
/* Appends the sealed reply to e. */
int auth_reply_seal(const uint8_t entity_key[AUTH_KEY_LEN], const struct auth_reply *r,
		    struct enc *e);
/* Opens it into r; the grants' tickets point into *plain, which the
 * caller frees (free(), after wiping with auth_wipe(*plain, *plain_len)). */
int auth_reply_open(const uint8_t entity_key[AUTH_KEY_LEN], const void *buf, size_t len,
		    struct auth_reply *r, uint8_t **plain, size_t *plain_len);
/* The plaintext alone (the fuzz target reaches the decoder this way). */
void auth_reply_encode(const struct auth_reply *r, struct enc *e);
int auth_reply_decode(struct dec *d, struct auth_reply *r);

/* ---- the MSG_T_AUTH frames of the handshake ---- */

/* Dialler -> acceptor: the method's proof (KEY: the 32-byte client
 * proof; TICKET: an authorizer). */
struct auth_proof_msg {
	uint32_t method;		/* AUTH_METHOD_KEY or AUTH_METHOD_TICKET */
	const void *body;		/* points into the input */
	size_t body_len;		/* at most AUTH_TICKET_MAX + 256 */
};
/* Acceptor -> dialler: its proof, and (KEY) the sealed reply. */
struct auth_done_msg {
	uint8_t proof[AUTH_MAC_LEN];
	const void *reply;		/* points into the input; may be empty */
	size_t reply_len;
};
#define AUTH_PROOF_BODY_MAX	(AUTH_TICKET_MAX + 256u)
#define AUTH_REPLY_MAX		(AUTH_GRANTS_MAX * (AUTH_TICKET_MAX + 64u) + \
				 AUTH_SECRETS_MAX * (AUTH_KEY_LEN + 8u) + 256u)
void auth_proof_msg_encode(const struct auth_proof_msg *m, struct enc *e);
int auth_proof_msg_decode(struct dec *d, struct auth_proof_msg *m);
void auth_done_msg_encode(const struct auth_done_msg *m, struct enc *e);
int auth_done_msg_decode(struct dec *d, struct auth_done_msg *m);

/* ---- keyring files (keyring.c) ---- */

#define KEYRING_CAPS_MAX	4u	/* one per service: mon, osd, mds, other */
struct keyring_caps {
	char service[16];
	char caps[AUTH_CAPS_MAX + 1];
};
struct keyring_entry {
	char name[AUTH_NAME_MAX + 1];
	uint8_t key[AUTH_KEY_LEN];
	uint32_t ncaps;
	struct keyring_caps caps[KEYRING_CAPS_MAX];
};
struct keyring {
	uint32_t n;
	struct keyring_entry *e;	/* n entries, malloc'ed */
};
#define KEYRING_ENTRIES_MAX	4096u
#define KEYRING_FILE_MAX	(4u << 20)

/* Parses keyring text (len bytes, not NUL-terminated).  0, or -EINVAL
 * with a message naming the line in err (errlen bytes).  kr is the
 * caller's to keyring_free(), also on failure. */
int keyring_parse(const char *text, size_t len, struct keyring *kr,
		  char *err, size_t errlen);
/* Reads path.  Refuses (-EPERM) a file that group or others may read or
 * write, with the chmod that fixes it in err. */
int keyring_load(const char *path, struct keyring *kr, char *err, size_t errlen);
/* Writes kr to path, mode 0600, through path.tmp and a rename. */
int keyring_save(const char *path, const struct keyring *kr);
const struct keyring_entry *keyring_find(const struct keyring *kr, const char *name);
/* Adds name with key (or replaces its key); -EINVAL for a bad name,
 * -ENOSPC over KEYRING_ENTRIES_MAX, -ENOMEM. */
int keyring_set(struct keyring *kr, const char *name, const uint8_t key[AUTH_KEY_LEN]);
/* Sets one service's caps of an existing entry (-ENOENT, -E2BIG). */
int keyring_set_caps(struct keyring *kr, const char *name, const char *service,
		     const char *caps);
/* Drops name's entry (-ENOENT: none), keeping the order of the others. */
int keyring_remove(struct keyring *kr, const char *name);
/* Writes one entry as keyring text ("[NAME]", its key unless !with_key,
 * its caps) to f. */
void keyring_entry_write(FILE *f, const struct keyring_entry *en, bool with_key);
/* Wipes the keys and frees; kr is empty after (NULL-safe). */
void keyring_free(struct keyring *kr);

#endif
