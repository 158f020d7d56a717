/*
 * fuzz_auth.h - what fuzz_auth.c and gen_auth_corpus.c share: the
 * selector bytes of the target's decoders and the fixed service secret
 * with which the seeds' sealed tickets open (so that the fuzzer starts
 * from tickets that reach the plaintext decoder).
 */
#ifndef ATOLL_FUZZ_AUTH_H
#define ATOLL_FUZZ_AUTH_H

#include <string.h>

#include "auth.h"

enum {
	FZA_HELLO_REQ, FZA_HELLO_REP, FZA_TICKET, FZA_AUTHORIZER, FZA_REPLY,
	FZA_KEYRING, FZA_SEALED, FZA_VERIFY, FZA_PROOF_MSG, FZA_DONE_MSG, FZA_COUNT
};

static inline struct auth_secrets fuzz_auth_secrets(void)
{
	struct auth_secrets s = { .service = AUTH_SVC_OSD, .n = 1 };

	s.s[0].gen = 1;
	memset(s.s[0].key, 0x5a, AUTH_KEY_LEN);
	return s;
}

/* The transcript every seed authorizer is made over. */
static inline void fuzz_auth_transcript(uint8_t out[AUTH_HASH_LEN])
{
	memset(out, 0x17, AUTH_HASH_LEN);
}

#endif
