/*
 * auth_ticket.c - the records of authentication and the checks made on
 * them (doc/security.md): the hello's auth sections, the transcript and
 * the proofs over it, tickets (plaintext, sealed with a service secret),
 * authorizers (a ticket plus a MAC over this connection's transcript, so
 * a recorded one never verifies again: the server's fresh challenge is in
 * the transcript), and the monitor's reply sealed for an entity.
 *
 * Encoders and bounds-checked decoders sit beside the checks that use
 * them; the primitives are auth_crypto.c's.  Every decoder refuses
 * malformed or absurd input (tests/fuzz/fuzz_auth.c), and a failed check
 * wipes whatever secret it had decrypted before returning.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "encode.h"

#define AUTH_V		1
#define AUTH_COMPAT	1

/* HKDF labels: one per use, so no two uses share a derived key. */
#define L_CLIENT_PROOF	"atoll auth v1 client proof"
#define L_SERVER_PROOF	"atoll auth v1 server proof"
#define L_REPLY		"atoll auth v1 reply"
#define L_CONNECTION	"atoll auth v1 connection"

/* Sealed ticket header: u8 service, u64 secret generation (the AAD). */
#define SEALED_HDR_LEN	9u

static bool one_bit(uint32_t v)
{
	return v && !(v & (v - 1));
}

static bool service_ok(uint8_t s)
{
	return s >= AUTH_SVC_MON && s <= AUTH_SVC_MDS;
}

/* A decoded entity name: empty is allowed only when allow_empty. */
static void check_entity(struct dec *b, const char *name, bool allow_empty)
{
	if (!name[0] && allow_empty)
		return;
	if (auth_entity_check(name, NULL) < 0)
		dec_fail(b, -EBADMSG);
}

/* ---- hello sections ---- */

void auth_hello_req_encode(const struct auth_hello_req *r, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_u32(e, r->methods);
	enc_u32(e, r->modes);
	enc_str(e, r->entity);
	enc_raw(e, r->nonce, AUTH_NONCE_LEN);
	enc_u64(e, r->want_id);
	enc_end(e, h);
}

int auth_hello_req_decode(struct dec *d, struct auth_hello_req *r)
{
	struct dec b;
	const void *p;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	r->methods = dec_u32(&b);
	r->modes = dec_u32(&b);
	dec_str(&b, r->entity, AUTH_NAME_MAX);
	p = dec_raw(&b, AUTH_NONCE_LEN);
	if (p)
		memcpy(r->nonce, p, AUTH_NONCE_LEN);
	r->want_id = dec_u64(&b);
	if (!b.err) {
		if (!r->methods || !r->modes)
			dec_fail(&b, -EBADMSG);
		check_entity(&b, r->entity, true);
	}
	return dec_msg_end(d, &b);
}

void auth_hello_rep_encode(const struct auth_hello_rep *r, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_u32(e, r->method);
	enc_u32(e, r->mode);
	enc_raw(e, r->challenge, AUTH_NONCE_LEN);
	enc_end(e, h);
}

int auth_hello_rep_decode(struct dec *d, struct auth_hello_rep *r)
{
	struct dec b;
	const void *p;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	r->method = dec_u32(&b);
	r->mode = dec_u32(&b);
	p = dec_raw(&b, AUTH_NONCE_LEN);
	if (p)
		memcpy(r->challenge, p, AUTH_NONCE_LEN);
	/* mode 0: the acceptor shares no mode with the offer and closes */
	if (!b.err && (!one_bit(r->method) || (r->mode && !one_bit(r->mode))))
		dec_fail(&b, -EBADMSG);
	return dec_msg_end(d, &b);
}

/* ---- transcript and proofs ---- */

int auth_transcript(const void *dialler_hello, size_t dlen,
		    const void *acceptor_hello, size_t alen,
		    uint8_t out[AUTH_HASH_LEN])
{
	return auth_sha256_2(dialler_hello, dlen, acceptor_hello, alen, out);
}

int auth_client_proof(const uint8_t key[AUTH_KEY_LEN],
		      const uint8_t transcript[AUTH_HASH_LEN], uint8_t out[AUTH_MAC_LEN])
{
	return auth_mac(key, L_CLIENT_PROOF, transcript, AUTH_HASH_LEN, NULL, 0, out);
}

int auth_server_proof(const uint8_t key[AUTH_KEY_LEN],
		      const uint8_t transcript[AUTH_HASH_LEN],
		      const void *client_msg, size_t len, uint8_t out[AUTH_MAC_LEN])
{
	return auth_mac(key, L_SERVER_PROOF, transcript, AUTH_HASH_LEN, client_msg, len, out);
}

int auth_conn_keys(const uint8_t key[AUTH_KEY_LEN],
		   const uint8_t nc[AUTH_NONCE_LEN], const uint8_t ns[AUTH_NONCE_LEN],
		   const uint8_t transcript[AUTH_HASH_LEN], uint8_t out[2 * AUTH_KEY_LEN])
{
	uint8_t salt[2 * AUTH_NONCE_LEN];

	memcpy(salt, nc, AUTH_NONCE_LEN);
	memcpy(salt + AUTH_NONCE_LEN, ns, AUTH_NONCE_LEN);
	return auth_hkdf(key, salt, sizeof(salt), L_CONNECTION, transcript, AUTH_HASH_LEN,
			 out, 2 * AUTH_KEY_LEN);
}

/* ---- tickets ---- */

void auth_ticket_encode(const struct auth_ticket *t, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_u8(e, t->service);
	enc_str(e, t->entity);
	enc_u64(e, t->client_id);
	enc_str(e, t->caps);
	enc_u64(e, t->issued);
	enc_u64(e, t->expires);
	enc_raw(e, t->session_key, AUTH_KEY_LEN);
	enc_end(e, h);
}

int auth_ticket_decode(struct dec *d, struct auth_ticket *t)
{
	struct dec b;
	const void *p;

	memset(t, 0, sizeof(*t));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	t->service = dec_u8(&b);
	dec_str(&b, t->entity, AUTH_NAME_MAX);
	t->client_id = dec_u64(&b);
	dec_str(&b, t->caps, AUTH_CAPS_MAX);
	t->issued = dec_u64(&b);
	t->expires = dec_u64(&b);
	p = dec_raw(&b, AUTH_KEY_LEN);
	if (p)
		memcpy(t->session_key, p, AUTH_KEY_LEN);
	if (!b.err) {
		if (!service_ok(t->service) || !t->client_id || t->expires < t->issued)
			dec_fail(&b, -EBADMSG);
		check_entity(&b, t->entity, false);
	}
	return dec_msg_end(d, &b);
}

int auth_ticket_seal(const struct auth_ticket *t, const struct auth_secret *secret,
		     struct enc *e)
{
	struct enc pt;
	uint8_t hdr[SEALED_HDR_LEN];
	size_t off;
	int r;

	if (!service_ok(t->service) || !secret->gen)
		return -EINVAL;
	enc_init(&pt);
	auth_ticket_encode(t, &pt);
	r = pt.err;
	if (!r && pt.len + SEALED_HDR_LEN + AUTH_AEAD_OVERHEAD > AUTH_TICKET_MAX)
		r = -E2BIG;
	if (r)
		goto out_free_pt;
	hdr[0] = t->service;
	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)(secret->gen >> (8 * i));
	enc_raw(e, hdr, sizeof(hdr));
	off = e->len;
	enc_reserve(e, pt.len + AUTH_AEAD_OVERHEAD);
	if (e->err) {
		r = e->err;
		goto out_free_pt;
	}
	r = auth_seal(secret->key, hdr, sizeof(hdr), pt.buf, pt.len, e->buf + off);
	if (!r)
		e->len = off + pt.len + AUTH_AEAD_OVERHEAD;
out_free_pt:
	auth_wipe(pt.buf, pt.len);
	enc_free(&pt);
	return r;
}

int auth_ticket_open(const struct auth_secrets *secrets, const void *buf, size_t len,
		     struct auth_ticket *t)
{
	const uint8_t *in = buf;
	const struct auth_secret *sec = NULL;
	uint8_t pt[AUTH_TICKET_MAX];
	size_t ptlen;
	uint64_t gen = 0;
	struct dec d;
	int r;

	memset(t, 0, sizeof(*t));
	if (len > AUTH_TICKET_MAX)
		return -E2BIG;
	if (len < SEALED_HDR_LEN + AUTH_AEAD_OVERHEAD)
		return -EBADMSG;
	if (!service_ok(in[0]))
		return -EBADMSG;
	if (in[0] != secrets->service)
		return -EKEYREJECTED;
	for (int i = 0; i < 8; i++)
		gen |= (uint64_t)in[1 + i] << (8 * i);
	for (uint32_t i = 0; i < secrets->n && i < AUTH_SECRETS_MAX; i++)
		if (secrets->s[i].gen == gen)
			sec = &secrets->s[i];
	if (!sec)
		return -ENOKEY;
	ptlen = len - SEALED_HDR_LEN - AUTH_AEAD_OVERHEAD;
	r = auth_open(sec->key, in, SEALED_HDR_LEN, in + SEALED_HDR_LEN,
		      len - SEALED_HDR_LEN, pt);
	if (r < 0)
		goto out_wipe;
	dec_init(&d, pt, ptlen);
	r = auth_ticket_decode(&d, t);
	/* the header is authenticated; the plaintext must agree with it */
	if (!r && t->service != in[0])
		r = -EKEYREJECTED;
out_wipe:
	auth_wipe(pt, ptlen);
	if (r < 0)
		auth_wipe(t, sizeof(*t));
	return r;
}

int auth_ticket_check_time(const struct auth_ticket *t, uint64_t now, uint32_t skew)
{
	if (t->issued > skew && now < t->issued - skew)
		return -EKEYEXPIRED;	/* not yet valid: a clock is off */
	if (now > t->expires && now - t->expires > skew)
		return -EKEYEXPIRED;
	return 0;
}

/* ---- authorizers ---- */

void auth_authorizer_encode(const struct auth_authorizer *a, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_blob(e, a->ticket, a->ticket_len);
	enc_u64(e, a->client_id);
	enc_str(e, a->entity);
	enc_raw(e, a->mac, AUTH_MAC_LEN);
	enc_end(e, h);
}

int auth_authorizer_decode(struct dec *d, struct auth_authorizer *a)
{
	struct dec b;
	const void *p;

	memset(a, 0, sizeof(*a));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	a->ticket = dec_blob(&b, &a->ticket_len, AUTH_TICKET_MAX);
	a->client_id = dec_u64(&b);
	dec_str(&b, a->entity, AUTH_NAME_MAX);
	p = dec_raw(&b, AUTH_MAC_LEN);
	if (p)
		memcpy(a->mac, p, AUTH_MAC_LEN);
	if (!b.err) {
		if (!a->ticket_len || !a->client_id)
			dec_fail(&b, -EBADMSG);
		check_entity(&b, a->entity, false);
	}
	return dec_msg_end(d, &b);
}

int auth_authorizer_build(const void *ticket, size_t ticket_len,
			  const uint8_t session_key[AUTH_KEY_LEN], uint64_t client_id,
			  const char *entity, const uint8_t transcript[AUTH_HASH_LEN],
			  struct enc *e)
{
	struct auth_authorizer a = {
		.ticket = ticket, .ticket_len = ticket_len, .client_id = client_id,
	};
	int r;

	if (auth_entity_check(entity, NULL) < 0 || !ticket_len ||
	    ticket_len > AUTH_TICKET_MAX || !client_id)
		return -EINVAL;
	strcpy(a.entity, entity);
	r = auth_client_proof(session_key, transcript, a.mac);
	if (r < 0)
		return r;
	auth_authorizer_encode(&a, e);
	return e->err;
}

int auth_authorizer_verify(const struct auth_secrets *secrets, const void *buf, size_t len,
			   const uint8_t transcript[AUTH_HASH_LEN], uint64_t now,
			   uint32_t skew, struct auth_ticket *t)
{
	struct auth_authorizer a;
	uint8_t want[AUTH_MAC_LEN];
	struct dec d;
	int r;

	memset(t, 0, sizeof(*t));
	dec_init(&d, buf, len);
	r = auth_authorizer_decode(&d, &a);
	if (r < 0)
		return r;
	r = auth_ticket_open(secrets, a.ticket, a.ticket_len, t);
	if (r < 0)
		return r;
	/* the MAC first: only a holder of the session key learns anything
	 * more specific than "refused" */
	r = auth_client_proof(t->session_key, transcript, want);
	if (!r && !auth_equal(want, a.mac, AUTH_MAC_LEN))
		r = -EACCES;
	if (!r && (a.client_id != t->client_id || strcmp(a.entity, t->entity)))
		r = -EKEYREJECTED;
	if (!r)
		r = auth_ticket_check_time(t, now, skew);
	auth_wipe(want, sizeof(want));
	if (r < 0)
		auth_wipe(t, sizeof(*t));
	return r;
}

/* ---- the monitor's reply ---- */

void auth_reply_encode(const struct auth_reply *r, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);
	uint32_t n = r->n < AUTH_GRANTS_MAX ? r->n : AUTH_GRANTS_MAX;

	uint32_t ns = r->secrets.n < AUTH_SECRETS_MAX ? r->secrets.n : AUTH_SECRETS_MAX;

	enc_u64(e, r->client_id);
	enc_u32(e, n);
	for (uint32_t i = 0; i < n; i++) {
		enc_u8(e, r->g[i].service);
		enc_u64(e, r->g[i].expires);
		enc_raw(e, r->g[i].session_key, AUTH_KEY_LEN);
		enc_blob(e, r->g[i].ticket, r->g[i].ticket_len);
	}
	enc_u8(e, ns ? r->secrets.service : 0);
	enc_u32(e, ns);
	for (uint32_t i = 0; i < ns; i++) {
		enc_u64(e, r->secrets.s[i].gen);
		enc_raw(e, r->secrets.s[i].key, AUTH_KEY_LEN);
	}
	enc_end(e, h);
}

int auth_reply_decode(struct dec *d, struct auth_reply *r)
{
	struct dec b;

	memset(r, 0, sizeof(*r));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	r->client_id = dec_u64(&b);
	r->n = dec_count(&b, AUTH_GRANTS_MAX, 1 + 8 + AUTH_KEY_LEN + 4);
	for (uint32_t i = 0; i < r->n && !b.err; i++) {
		struct auth_grant *g = &r->g[i];
		const void *p;

		g->service = dec_u8(&b);
		g->expires = dec_u64(&b);
		p = dec_raw(&b, AUTH_KEY_LEN);
		if (p)
			memcpy(g->session_key, p, AUTH_KEY_LEN);
		g->ticket = dec_blob(&b, &g->ticket_len, AUTH_TICKET_MAX);
		if (!b.err && (!service_ok(g->service) || !g->ticket_len))
			dec_fail(&b, -EBADMSG);
	}
	r->secrets.service = dec_u8(&b);
	r->secrets.n = dec_count(&b, AUTH_SECRETS_MAX, 8 + AUTH_KEY_LEN);
	for (uint32_t i = 0; i < r->secrets.n && !b.err; i++) {
		const void *p;

		r->secrets.s[i].gen = dec_u64(&b);
		p = dec_raw(&b, AUTH_KEY_LEN);
		if (p)
			memcpy(r->secrets.s[i].key, p, AUTH_KEY_LEN);
		if (!b.err && !r->secrets.s[i].gen)
			dec_fail(&b, -EBADMSG);
	}
	if (!b.err && (!r->client_id ||
		       (r->secrets.n ? !service_ok(r->secrets.service) : r->secrets.service)))
		dec_fail(&b, -EBADMSG);
	if (b.err) {
		r->n = 0;
		auth_wipe(&r->secrets, sizeof(r->secrets));
	}
	return dec_msg_end(d, &b);
}

int auth_reply_seal(const uint8_t entity_key[AUTH_KEY_LEN], const struct auth_reply *r,
		    struct enc *e)
{
	uint8_t k[AUTH_KEY_LEN];
	struct enc pt;
	size_t off;
	int err;

	err = auth_hkdf(entity_key, NULL, 0, L_REPLY, NULL, 0, k, sizeof(k));
	if (err < 0)
		return err;
	enc_init(&pt);
	auth_reply_encode(r, &pt);
	err = pt.err;
	if (err)
		goto out_free;
	off = e->len;
	enc_reserve(e, pt.len + AUTH_AEAD_OVERHEAD);
	err = e->err;
	if (err)
		goto out_free;
	err = auth_seal(k, NULL, 0, pt.buf, pt.len, e->buf + off);
	if (!err)
		e->len = off + pt.len + AUTH_AEAD_OVERHEAD;
out_free:
	auth_wipe(pt.buf, pt.len);
	enc_free(&pt);
	auth_wipe(k, sizeof(k));
	return err;
}

int auth_reply_open(const uint8_t entity_key[AUTH_KEY_LEN], const void *buf, size_t len,
		    struct auth_reply *r, uint8_t **plain, size_t *plain_len)
{
	uint8_t k[AUTH_KEY_LEN];
	uint8_t *pt;
	size_t ptlen;
	struct dec d;
	int err;

	memset(r, 0, sizeof(*r));
	*plain = NULL;
	*plain_len = 0;
	if (len < AUTH_AEAD_OVERHEAD)
		return -EBADMSG;
	if (len > AUTH_REPLY_MAX)
		return -E2BIG;
	ptlen = len - AUTH_AEAD_OVERHEAD;
	pt = malloc(ptlen ? ptlen : 1);
	if (!pt)
		return -ENOMEM;
	err = auth_hkdf(entity_key, NULL, 0, L_REPLY, NULL, 0, k, sizeof(k));
	if (!err)
		err = auth_open(k, NULL, 0, buf, len, pt);
	auth_wipe(k, sizeof(k));
	if (!err) {
		dec_init(&d, pt, ptlen);
		err = auth_reply_decode(&d, r);
	}
	if (err < 0) {
		auth_wipe(pt, ptlen);
		free(pt);
		memset(r, 0, sizeof(*r));
		return err;
	}
	*plain = pt;
	*plain_len = ptlen;
	return 0;
}

/* ---- the MSG_T_AUTH frames ---- */

void auth_proof_msg_encode(const struct auth_proof_msg *m, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_u32(e, m->method);
	enc_blob(e, m->body, m->body_len);
	enc_end(e, h);
}

int auth_proof_msg_decode(struct dec *d, struct auth_proof_msg *m)
{
	struct dec b;

	memset(m, 0, sizeof(*m));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	m->method = dec_u32(&b);
	m->body = dec_blob(&b, &m->body_len, AUTH_PROOF_BODY_MAX);
	if (!b.err && ((m->method != AUTH_METHOD_KEY && m->method != AUTH_METHOD_TICKET) ||
		       !m->body_len))
		dec_fail(&b, -EBADMSG);
	return dec_msg_end(d, &b);
}

void auth_done_msg_encode(const struct auth_done_msg *m, struct enc *e)
{
	size_t h = enc_begin(e, AUTH_V, AUTH_COMPAT);

	enc_raw(e, m->proof, AUTH_MAC_LEN);
	enc_blob(e, m->reply, m->reply_len);
	enc_end(e, h);
}

int auth_done_msg_decode(struct dec *d, struct auth_done_msg *m)
{
	struct dec b;
	const void *p;

	memset(m, 0, sizeof(*m));
	if (dec_msg_begin(d, AUTH_COMPAT, &b))
		return d->err;
	p = dec_raw(&b, AUTH_MAC_LEN);
	if (p)
		memcpy(m->proof, p, AUTH_MAC_LEN);
	m->reply = dec_blob(&b, &m->reply_len, AUTH_REPLY_MAX);
	return dec_msg_end(d, &b);
}
