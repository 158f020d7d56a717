/*
 * fuzz_auth.c - libFuzzer target for authentication's decoders
 * (lib/auth_ticket.c, lib/keyring.c): the hello's auth sections (from
 * anyone who connects), a ticket's plaintext, an authorizer, the
 * monitor's reply, the two MSG_T_AUTH frames, a keyring file, and the two checks a service runs on
 * a stranger's bytes: opening a sealed ticket and verifying an
 * authorizer (fuzz_auth.h's fixed secret opens the seeds' tickets).
 *
 * The first input byte picks the decoder, the rest is the bytes.  A
 * decoder must fail cleanly or succeed; what decodes must re-encode to
 * bytes that decode again and re-encode to the same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "encode.h"
#include "fuzz_auth.h"
#include "roundtrip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct auth_secrets secrets = fuzz_auth_secrets();
	uint8_t tr[AUTH_HASH_LEN];
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	struct dec d;

	if (size < 1)
		return 0;
	dec_init(&d, p, n);
	switch (data[0] % FZA_COUNT) {
	case FZA_HELLO_REQ: {
		struct auth_hello_req r;

		if (auth_hello_req_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct auth_hello_req, &r, auth_hello_req_encode,
					auth_hello_req_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_HELLO_REP: {
		struct auth_hello_rep r;

		if (auth_hello_rep_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct auth_hello_rep, &r, auth_hello_rep_encode,
					auth_hello_rep_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_TICKET: {
		struct auth_ticket t;

		if (auth_ticket_decode(&d, &t) == 0)
			FUZZ_ROUND_TRIP(struct auth_ticket, &t, auth_ticket_encode,
					auth_ticket_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_AUTHORIZER: {
		struct auth_authorizer a;

		if (auth_authorizer_decode(&d, &a) == 0)
			FUZZ_ROUND_TRIP(struct auth_authorizer, &a, auth_authorizer_encode,
					auth_authorizer_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_REPLY: {
		struct auth_reply r;

		if (auth_reply_decode(&d, &r) == 0)
			FUZZ_ROUND_TRIP(struct auth_reply, &r, auth_reply_encode,
					auth_reply_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_KEYRING: {
		struct keyring kr;
		char err[128];

		keyring_parse((const char *)p, n, &kr, err, sizeof(err));
		for (uint32_t i = 0; i < kr.n; i++)
			if (auth_entity_check(kr.e[i].name, NULL) < 0)
				abort();
		keyring_free(&kr);
		break;
	}
	case FZA_SEALED: {
		struct auth_ticket t;

		if (auth_ticket_open(&secrets, p, n, &t) == 0 && t.service != AUTH_SVC_OSD)
			abort();
		break;
	}
	case FZA_PROOF_MSG: {
		struct auth_proof_msg m;

		if (auth_proof_msg_decode(&d, &m) == 0)
			FUZZ_ROUND_TRIP(struct auth_proof_msg, &m, auth_proof_msg_encode,
					auth_proof_msg_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_DONE_MSG: {
		struct auth_done_msg m;

		if (auth_done_msg_decode(&d, &m) == 0)
			FUZZ_ROUND_TRIP(struct auth_done_msg, &m, auth_done_msg_encode,
					auth_done_msg_decode, FUZZ_NO_CLEAR);
		break;
	}
	case FZA_VERIFY: {
		struct auth_ticket t;

		fuzz_auth_transcript(tr);
		if (auth_authorizer_verify(&secrets, p, n, tr, 1800000000ull, 30, &t) == 0 &&
		    (t.service != AUTH_SVC_OSD || !t.client_id))
			abort();
		break;
	}
	}
	return 0;
}
