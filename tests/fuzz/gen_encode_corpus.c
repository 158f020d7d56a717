/*
 * gen_encode_corpus.c - writes the seed corpus for fuzz_encode.c.
 *
 *   gen-encode-corpus DIR
 *
 * Run once by hand (the output is committed under corpus/encode/); kept so
 * the seeds can be regenerated when the sample record changes.  Writes
 * valid records of both versions, then a few truncated, bit-flipped and
 * garbage inputs so that the fuzzer starts next to the error paths too.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_file.h"
#include "encode_sample.h"

static int write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	return corpus_write(dir, name, NULL, 0, buf, len);
}

/* Encodes the sample for seed as version; caller frees. */
static uint8_t *make(uint32_t seed, uint8_t version, size_t *len)
{
	struct sample s;
	struct enc e;
	uint8_t *buf;

	if (sample_fill(&s, seed) < 0)
		return NULL;
	enc_init(&e);
	sample_encode(&e, &s, version);
	buf = enc_take(&e, len);
	enc_free(&e);
	sample_free(&s);
	return buf;
}

int main(int argc, char **argv)
{
	static const uint8_t garbage[] = "\x02\x01\xff\xff\xff\x7fnot a record at all";
	char name[64];
	uint8_t *buf;
	size_t len;
	uint32_t seed;
	int r = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (seed = 1; seed <= 8; seed++) {
		buf = make(seed, 2, &len);
		if (!buf)
			return 1;
		snprintf(name, sizeof(name), "valid-v2-%02u", seed);
		r |= write_file(argv[1], name, buf, len);
		if (seed == 3) {
			r |= write_file(argv[1], "truncated-half", buf, len / 2);
			r |= write_file(argv[1], "truncated-header", buf, 3);
		}
		if (seed == 4) {
			buf[len / 3] ^= 0x40;
			r |= write_file(argv[1], "bitflip", buf, len);
		}
		if (seed == 5) {
			buf[1] = 7;	/* compat from a much newer writer */
			r |= write_file(argv[1], "compat-too-new", buf, len);
		}
		free(buf);
	}
	for (seed = 20; seed <= 22; seed++) {
		buf = make(seed, 1, &len);
		if (!buf)
			return 1;
		snprintf(name, sizeof(name), "valid-v1-%02u", seed);
		r |= write_file(argv[1], name, buf, len);
		free(buf);
	}
	r |= write_file(argv[1], "garbage", garbage, sizeof(garbage) - 1);
	r |= write_file(argv[1], "empty", "", 0);
	return r ? 1 : 0;
}
