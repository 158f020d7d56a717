/*
 * gen_auth_corpus.c - writes the seed corpus of fuzz_auth.c: one valid
 * encoding of each auth record behind its selector byte, a keyring, a
 * ticket sealed with fuzz_auth.h's fixed secret and an authorizer over
 * its fixed transcript.
 *   gen-auth-corpus DIR
 */
#include <stdio.h>
#include <string.h>

#include "auth.h"
#include "corpus_enc.h"
#include "encode.h"
#include "fuzz_auth.h"

int main(int argc, char **argv)
{
	struct auth_secrets s = fuzz_auth_secrets();
	struct auth_hello_req rq = { .methods = AUTH_METHOD_KEY | AUTH_METHOD_TICKET,
				     .modes = AUTH_MODE_CRC | AUTH_MODE_SECURE,
				     .entity = "client.admin", .nonce = { 1, 2, 3 } };
	struct auth_hello_rep rp = { .method = AUTH_METHOD_TICKET, .mode = AUTH_MODE_CRC,
				     .challenge = { 9, 8, 7 } };
	struct auth_ticket t = { .service = AUTH_SVC_OSD, .entity = "client.admin",
				 .client_id = 4242, .caps = "allow rw pool=a",
				 .issued = 1800000000ull - 60, .expires = 1800000000ull + 3600,
				 .session_key = { 0x33 } };
	static const char keyring[] =
		"# a keyring\n[client.admin]\n\tkey = "
		"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
		"\tcaps mon = allow *\n\tcaps osd = allow rw pool=a\n[osd.0]\n\tkey = "
		"ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100\n";
	uint8_t tr[AUTH_HASH_LEN], sel = FZA_KEYRING;
	struct auth_reply reply = { .client_id = 4242, .n = 1 };
	struct auth_proof_msg pm = { .method = AUTH_METHOD_TICKET };
	struct auth_done_msg dm = { .proof = { 5 } };
	struct enc e, sealed;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-auth-corpus DIR\n");
		return 2;
	}
	enc_init(&e);
	enc_init(&sealed);
	auth_hello_req_encode(&rq, &e);
	r |= corpus_put_enc(argv[1], "hello-req", FZA_HELLO_REQ, &e);
	auth_hello_rep_encode(&rp, &e);
	r |= corpus_put_enc(argv[1], "hello-rep", FZA_HELLO_REP, &e);
	auth_ticket_encode(&t, &e);
	r |= corpus_put_enc(argv[1], "ticket", FZA_TICKET, &e);
	if (auth_ticket_seal(&t, &s.s[0], &sealed) < 0)
		return 1;
	enc_raw(&e, sealed.buf, sealed.len);
	r |= corpus_put_enc(argv[1], "sealed", FZA_SEALED, &e);
	fuzz_auth_transcript(tr);
	if (auth_authorizer_build(sealed.buf, sealed.len, t.session_key, t.client_id,
				  t.entity, tr, &e) < 0)
		return 1;
	r |= corpus_put_enc(argv[1], "verify", FZA_VERIFY, &e);
	if (auth_authorizer_build(sealed.buf, sealed.len, t.session_key, t.client_id,
				  t.entity, tr, &e) < 0)
		return 1;
	r |= corpus_put_enc(argv[1], "authorizer", FZA_AUTHORIZER, &e);
	reply.secrets = s;
	reply.g[0] = (struct auth_grant){ .service = AUTH_SVC_OSD, .expires = t.expires,
					  .ticket = sealed.buf, .ticket_len = sealed.len };
	auth_reply_encode(&reply, &e);
	r |= corpus_put_enc(argv[1], "reply", FZA_REPLY, &e);
	r |= corpus_write(argv[1], "keyring", &sel, 1, keyring, strlen(keyring));
	pm.body = sealed.buf;
	pm.body_len = sealed.len;
	auth_proof_msg_encode(&pm, &e);
	r |= corpus_put_enc(argv[1], "proof-msg", FZA_PROOF_MSG, &e);
	dm.reply = sealed.buf;
	dm.reply_len = sealed.len;
	auth_done_msg_encode(&dm, &e);
	r |= corpus_put_enc(argv[1], "done-msg", FZA_DONE_MSG, &e);
	enc_free(&e);
	enc_free(&sealed);
	return r ? 1 : 0;
}
